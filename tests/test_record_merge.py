"""Merging records (pyhcomm.sim.merge) without MPI: a snapshot crosses a pickle whole, the merge of
one process's record is that record, and records that cannot come from one MPI job are refused.
(Merging the records of an MPI job's processes: tests/test_mpi.py.)"""
import io
import pickle

import pytest

import pyhcomm
from pyhcomm.analysis import analyze
from pyhcomm.sim import merge as M
from pyhcomm.timing import cost_model
from pyhcomm.timing.replay import replay

import mpi_cases
from mutation_suite import custom_allgather


def _run(fn, n, product, *args):
    sim = pyhcomm.Sim(scheduler="coop", product=product)
    pyhcomm.launch(fn, n, *args, sim=sim)
    return sim


def _jsonl(record):
    out = io.StringIO()
    record.export_jsonl(out)
    return out.getvalue()


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
def test_the_merge_of_one_process_is_its_record(product):
    sim = _run(mpi_cases.every_collective, 3, product)
    part = pickle.loads(pickle.dumps(M.snapshot(sim)))      # values only: it crosses processes
    assert part.process == 0 and part.processes == 1 and part.facts is None and part.whole
    merged = M.merge([part])
    assert merged.whole() and merged.processes == (0,)
    assert _jsonl(merged) == _jsonl(sim.record)              # same entries, numbers, handles, steps
    model = cost_model(sim.runtime.product)           # a bare record: the product is the caller's to say
    assert replay(merged, model).makespan == replay(sim).makespan
    assert analyze(merged) == []


def test_a_merged_record_finds_what_its_record_finds(tmp_path):
    sim = _run(custom_allgather("missing_wait"), 2, "Atlas 800T A2")
    path = tmp_path / "part.pkl"
    M.snapshot(sim).save(path)
    found = [f.key for f in analyze(M.merge([path]))]
    assert found == [f.key for f in analyze(sim)] and "race" in {k[0] for k in found}


def test_a_file_that_is_not_a_snapshot_is_refused(tmp_path):
    path = tmp_path / "other.pkl"
    path.write_bytes(pickle.dumps({"not": "a record"}))
    with pytest.raises(ValueError, match="not a pyhcomm process record"):
        M.ProcessRecord.load(path)


def _small(comm):
    """One AllReduce of 16 floats."""
    s, _ = pyhcomm.acl.rt.create_stream()
    buf = mpi_cases._malloc(64)
    assert pyhcomm.HcclAllReduce(buf, buf, 16, mpi_cases.F32, mpi_cases.SUM, comm.handle, s) == 0
    assert pyhcomm.acl.rt.synchronize_stream(s) == 0


def _parts(*processes, devices=None):
    """Snapshots of one-rank runs, dressed as the processes of a job of ``len(processes)``."""
    out = []
    for k, p in enumerate(processes):
        sim = _run(_small, 1, "Atlas 800T A2")
        part = M.snapshot(sim)
        part.process, part.processes = p, len(processes)
        part.facts = {"process": p, "processes": len(processes), "sent": {}, "arrivals": {}, "meetings": []}
        if devices is None or devices[k] != 0:
            for e in part.entries:
                e.device = None if e.device is None else p
        out.append(part)
    return out


def test_records_that_cannot_come_from_one_job_are_refused():
    with pytest.raises(ValueError, match="no record given"):
        M.merge([])
    a = _run(_small, 1, "Atlas 800T A2")
    b = _run(_small, 1, "Atlas 800T A2")
    with pytest.raises(ValueError, match="must come from the processes of one MPI job"):
        M.merge([a, M.snapshot(b)])
    with pytest.raises(ValueError, match="two records of MPI process 1"):
        M.merge(_parts(0, 1, 1))
    with pytest.raises(ValueError, match=r"the records of MPI process\(es\) \[1\] are missing"):
        M.merge(_parts(0, 2))
    with pytest.raises(ValueError, match="MPI processes 0 and 1 both use device 0"):
        M.merge(_parts(0, 1, devices=[0, 0]))
    assert len(M.merge(_parts(1, 0)).entries()) == 2 * len(a.record.entries())


def test_snapshot_takes_a_sim_or_a_record():
    sim = _run(_small, 1, "Atlas 800T A2")
    assert len(M.snapshot(sim.record).entries) == len(sim.record.entries())
    with pytest.raises(TypeError, match="neither a Sim nor a Record"):
        M.snapshot(object())
