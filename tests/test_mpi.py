"""Ranks in many processes over MPI give what one process gives (``mpiexec -n 2..4``).

The same rank bodies (tests/mpi_cases.py) run in one process and as one MPI process per rank
(``pyhcomm.launch(..., mpi=True)`` starts ``mpiexec``); every output buffer must hold the same
bytes. One-sided writes, reads and reduces, registered memory, 1-bit remote notifies, NBI transfers and
fences give the same bytes (tests/mpi_cases.py ``one_sided``, ``nbi_fence``); the processes'
records merge into one that the verifier and the timing replay read as one process's.
HCCL's example ports run as HCCL's MPI examples do (root info broadcast with
``comm.bcast``, tests/mpi_worker.py), also with ``pyhcomm.launch`` starting the ranks and the root
info made before it; a root info that names no process of the job is HCCL_E_PARA; the seed examples under ``mpiexec`` print what they print
alone, a join another process refuses fails at once with HCCL_E_PARA. Failures: a rank that raises, a process that dies and a hang across processes are each
reported, naming the rank, in every process, and leave no shared memory behind.

The matrix runs in the threaded pass of CI only (``PYHCOMM_SCHEDULER=coop`` skips it: its ranks
run the cooperative scheduler anyway, it would add the same CPU time twice).
"""
import json
import os
import runpy
import subprocess
import sys
import contextlib
import io
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the MPI tests need mpi4py and MPICH: pip install 'pyhcomm[mpi]'")

import pyhcomm  # noqa: E402
from pyhcomm.transport.mpi_link import mpiexec  # noqa: E402

import mpi_cases  # noqa: E402   (mpi_worker is not imported here: it initialises MPI)
from pyhcomm.analysis import analyze, happens_before as hb  # noqa: E402
from pyhcomm.timing.replay import replay  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "hccl_examples"))   # the example ports, compared in one process
A2, A3 = "Atlas 800T A2", "Atlas A3"

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(os.environ.get("PYHCOMM_SCHEDULER", "").strip().lower() == "coop",
                       reason="the MPI matrix runs in the threaded pass only (its ranks run the cooperative "
                              "scheduler in both)"),
]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYHCOMM_", "HCCL_"))}
    src = str(Path(pyhcomm.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([src, str(HERE)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYHCOMM_LOG_LEVEL"] = "OFF"
    env.update(extra)
    return env


def _job(n, args, timeout=150, cleanup=True, **env):
    """Run ``mpiexec -n n python args...``; returns (exit code, JSON lines, output)."""
    before = _segments()
    cmd = mpiexec() + ([] if cleanup else ["-disable-auto-cleanup"]) + ["-n", str(n), sys.executable] + args
    proc = subprocess.run(cmd, env=_env(**env), capture_output=True, text=True, timeout=timeout, cwd=HERE)
    lines = _objects(proc.stdout)
    left = _left_behind(before)
    assert not left, f"shared memory left behind: {left}"
    return proc.returncode, lines, proc.stdout + proc.stderr


def _objects(text):
    """The JSON objects the processes printed (mpiexec may put two processes' lines on one)."""
    out, dec, i = [], json.JSONDecoder(), text.find("{")
    while i >= 0:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            end = i + 1
        else:
            out.append(obj)
        i = text.find("{", end)
    return [o for o in out if isinstance(o, dict)]


def _segments():
    shm = Path("/dev/shm")
    return {p.name for p in shm.glob("mpich_shm_*")} if shm.is_dir() else set()


def _held(names) -> set:
    """The segments of ``names`` that a live process maps or holds open (another MPI job on this
    machine still running: not ours to count)."""
    held = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            maps = (proc / "maps").read_text()
            fds = list((proc / "fd").iterdir())
        except OSError:             # it ended meanwhile, or is not ours to read
            continue
        targets = []
        for fd in fds:
            try:
                targets.append(os.readlink(fd))
            except OSError:         # closed meanwhile (the listing's own descriptor among them)
                pass
        held.update(n for n in names if n in maps or any(f.endswith("/" + n) for f in targets))
    return held


def _left_behind(before) -> list:
    """Segments that appeared since ``before`` and that no live process holds: what the job left."""
    new = _segments() - before
    return sorted(new - _held(new)) if new else []


def _sim(product):
    return pyhcomm.Sim(scheduler="coop", product=product)


def _calls(timeline):
    return sorted((c.name, c.ranks, c.begin, c.end, len(c.entries)) for c in timeline.calls)


@pytest.mark.parametrize("n, product, shm", [(2, A2, "1"), (3, A3, "1"), (4, A2, "1"), (3, A2, "0")],
                         ids=["2-A2", "3-A3", "4-A2", "3-A2-messages"])
def test_every_collective_gives_the_same_bytes_and_record_in_one_process_per_rank(n, product, shm, monkeypatch):
    for var in ("PYHCOMM_SCHEDULER", "PYHCOMM_TRANSPORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYHCOMM_MPI_SHM", shm)
    one, many = _sim(product), _sim(product)
    got_one = pyhcomm.launch(mpi_cases.every_collective, n, mpi=False, sim=one)
    got_many = pyhcomm.launch(mpi_cases.every_collective, n, mpi=True, sim=many, timeout=150)
    assert [[list(c) for c in r] for r in got_one] == [[list(c) for c in r] for r in got_many]
    assert len(got_one) == n and all(len(r) == len(got_one[0]) > 15 for r in got_one)
    # the merged record of the processes reads as the one process's (docs/record.md)
    merged = many.record
    assert merged.processes == tuple(range(n)) and merged.whole()
    records = [e for e in merged.events() if e.kind == "ChannelNotifyRecord"]
    assert records and all(e.gen is not None for e in records)     # remote records got their generation
    g = hb.build(merged)
    where = {seq: k for k, seq in enumerate(g.order())}
    assert all(where[a] < where[b] for a, b, _kind in g.edges() if a in where and b in where)
    edges = Counter(kind for _a, _b, kind in g.edges())
    one_edges = Counter(kind for _a, _b, kind in hb.build(one).edges())
    assert edges["notify"] == one_edges["notify"] > 0 and edges["stream"] == one_edges["stream"]
    assert edges["rendezvous"] == n - 1 and one_edges["rendezvous"] == 0   # + the job's closing barrier
    assert analyze(many) == [] and analyze(one) == []
    t_one, t_many = replay(one), replay(many)
    assert t_many.makespan == t_one.makespan > 0
    assert _calls(t_many) == _calls(t_one)


@pytest.mark.parametrize("shm", ["1", "0"], ids=["shared-memory", "messages"])
@pytest.mark.parametrize("case, product", [("one_sided", A2), ("nbi_fence", "Atlas 350")])
def test_one_sided_transfers_notifies_and_fences_across_processes(case, product, shm, monkeypatch):
    """Writes, reads and reduces into a peer's HCCL buffer and registered memory, a 1-bit remote
    notify recorded twice before one wait (the verifier's lost record, in both), NBI transfers and
    a fence: the same bytes, findings and modeled time as in one process, through shared memory
    and through messages (``PYHCOMM_MPI_SHM=0``)."""
    monkeypatch.delenv("PYHCOMM_SCHEDULER", raising=False)
    monkeypatch.setenv("PYHCOMM_MPI_SHM", shm)
    one, many = _sim(product), _sim(product)
    got_one = pyhcomm.launch(getattr(mpi_cases, case), 2, sim=one)
    got_many = pyhcomm.launch(getattr(mpi_cases, case), 2, sim=many, mpi=True, timeout=150)
    assert got_many == got_one and len(set(sum(got_one, []))) >= 3
    found = sorted(f.key for f in analyze(many))
    assert found == sorted(f.key for f in analyze(one))
    assert [k[0] for k in found] == (["lost-record"] if case == "one_sided" else [])
    assert replay(many).makespan == replay(one).makespan


def test_the_merged_record_of_an_mpi_run_shows_a_race_across_processes(monkeypatch):
    """One round: with two, a rank that skips the DATA wait may record round 2's ACK before its
    peer consumed round 1's (the 1-bit register keeps one) and the peer then hangs, as the
    processes' schedule has it."""
    monkeypatch.delenv("PYHCOMM_SCHEDULER", raising=False)
    one, many = _sim(A2), _sim(A2)
    pyhcomm.launch(mpi_cases.custom_allgather, 3, "missing_wait", 1, sim=one)
    pyhcomm.launch(mpi_cases.custom_allgather, 3, "missing_wait", 1, sim=many, mpi=True, timeout=150)
    races = sorted(f.key for f in analyze(many) if f.kind == "race")
    assert races == sorted(f.key for f in analyze(one) if f.kind == "race") and races
    race = next(f for f in analyze(many) if f.kind == "race")
    assert "Write task" in race.text() and "LocalCopy task" in race.text()
    assert replay(many).makespan == replay(one).makespan


@pytest.mark.parametrize("mode", ["shared-memory", "messages", "unmappable"])
def test_transfers_go_through_shared_memory_on_one_machine_and_leak_nothing(mode):
    """On one machine the processes find each other (``near``): writes, reads and reduces land in
    the peer's memory directly and remote notifies ring its doorbell; ``PYHCOMM_MPI_SHM=0`` sends
    messages instead, and memory that cannot be mapped goes by messages while notifies still ring.
    The bytes are the one process's either way; a second launch opens no descriptor more and
    nothing stays mapped."""
    env = {"shared-memory": {}, "messages": {"PYHCOMM_MPI_SHM": "0"},
           "unmappable": {"MPI_WORKER_NO_ATTACH": "1"}}[mode]
    code, lines, out = _job(2, ["mpi_worker.py", "paths", "one_sided", "2"], **env)
    assert code == 0, out
    expected = pyhcomm.launch(mpi_cases.one_sided, 2, sim=_sim(A2))
    assert sorted(line["proc"] for line in lines) == [0, 1], out
    for line in lines:
        assert line["text"] == expected and line["same"], line
        assert line["fds"][0] == line["fds"][1] and line["mapped"] == 0, line
        assert line["near"] == ([] if mode == "messages" else [1 - line["proc"]]), line
        assert (line["rings"] > 0) == (mode != "messages"), line
    # one_sided: rank 0 writes, reads and reduces (twice: two launches)
    direct = {line["proc"]: line["direct"] for line in lines}
    assert direct == ({0: 8, 1: 0} if mode == "shared-memory" else {0: 0, 1: 0}), direct


def test_a_full_doorbell_sends_messages_in_order_and_never_waits_for_room():
    """Rank 0 records more notifies of rank 1 than its doorbell holds while rank 1 handles
    nothing (it is in an MPI barrier of its own): the ring fills, the rest are messages, rank 0
    goes on (waiting for room would deadlock the two barriers), and rank 1 gets every record."""
    from pyhcomm.transport.mpi_shm import RING
    code, lines, out = _job(2, ["mpi_worker.py", "launch", "ring_overflow", "2"])
    assert code == 0, out
    assert sorted(line["proc"] for line in lines) == [0, 1], out
    for line in lines:
        assert line["ok"], line
        sender, receiver = line["text"]
        assert sender[0] == RING and receiver[0] == 0, line      # RING rings, then messages
        assert receiver[1:] == [RING + 300, [1]], line           # every record arrived


def test_the_two_process_benchmark_reports_every_figure():
    """``benchmarks/mpi.py``'s two-process job, small: a bandwidth row per window size, and the
    four latencies (ping-pong, mpi4py's, data plane, transport alone) each a time a trip took (a
    notify lost fails the job: the hang report in the task ping-pongs, a 30 s timeout in the
    transport's)."""
    bench = HERE.parent / "benchmarks" / "mpi.py"
    code, lines, out = _job(2, [str(bench), "--job", "pair", "4096,65536", "2", "20", "1"])
    assert code == 0, out
    (got,) = lines
    assert [row[:2] for row in got["bw"]] == [[4096, 2], [65536, 2]], got
    assert all(gbps > 0 for row in got["bw"] for gbps in row[2:]), got
    assert len(got["lat"]) == 4 and all(0 < s < 1 for s in got["lat"]), got


def test_hccl_example_ports_and_seed_examples_give_the_same_bytes_over_mpi(monkeypatch):
    code, lines, out = _job(2, [str(HERE / "mpi_worker.py")], PYHCOMM_DEVICE_COUNT="2")
    assert code == 0, out
    (got,) = lines
    pyhcomm.set_product(A2, device_count=2)
    for key, digests in got["ports"].items():
        module, name = key.split(":")
        expected = [mpi_cases.digest(o) for o in __import__(module).run(name)]
        assert digests == expected, key
        assert got["launched"][key] == expected, key   # pyhcomm.launch in place of the threads
    for script, text in got["seeds"].items():
        monkeypatch.setenv("PYHCOMM_PRODUCT", "")   # recorded: what the script sets is undone after
        monkeypatch.delenv("PYHCOMM_PRODUCT")
        buf = io.StringIO()
        pyhcomm.reset(product=None)   # the script chooses (as alone, where nothing chose one before)
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(HERE.parent / "examples" / script), run_name="__main__")
        assert text == buf.getvalue(), script
    assert "output == input: True" in got["seeds"]["seed_host_a2.py"]
    first, second = got["refused"]
    assert first == [0]
    assert second[0] == 1 and second[2] == 0, second      # HCCL_E_PARA, then joined as rank 1
    assert "rank 0 already joined" in second[1], second
    assert got["early"] == [[0, 2], [0, 2]], got["early"]
    alone, beyond = got["foreign"]
    assert alone[0] == beyond[0] == 1, got["foreign"]                  # HCCL_E_PARA
    assert alone[1].startswith("HcclCommInitRootInfo: rootInfo names no communicator here: it was made without "
                               "MPI (in process "), alone
    assert alone[1].endswith("): ranks of other processes cannot join it"), alone
    assert beyond[1:] == ["HcclCommInitRootInfo: rootInfo names no communicator here: it names MPI process 5, "
                          "and this job has 2 (0..1)"], beyond


def test_a_rank_that_raises_fails_every_process_naming_it():
    code, lines, out = _job(3, ["mpi_worker.py", "launch", "fails_on", "3", "1"])
    assert sorted(line["proc"] for line in lines) == [0, 1, 2], out
    for line in lines:
        assert not line["ok"] and line["rank"] == 1, line
        assert "rank 1 gives up" in line["text"], line


def test_a_process_that_dies_is_named_by_the_others_within_the_liveness_bound():
    code, lines, out = _job(3, ["mpi_worker.py", "launch", "dies_on", "3", "1"], cleanup=False,
                            PYHCOMM_MPI_LIVENESS="2")
    assert code != 0
    assert sorted(line["proc"] for line in lines) == [0, 2], out
    for line in lines:
        assert not line["ok"] and line["rank"] == 1, line
        assert "rank 1 (MPI process 1) died: no sign of life for 2 s" in line["text"], line


def test_a_hang_across_processes_is_one_report_with_the_wait_for_cycle():
    code, lines, out = _job(3, ["mpi_worker.py", "merged", "two_receivers", "3"])
    assert code == 0, out
    assert len(lines) == 3
    # the verifier on the merged record: the same cycle, across processes
    (found,) = next(line["findings"] for line in lines if line["proc"] == 0)
    assert found.startswith("hang: 2 wait(s) can never be satisfied"), found
    cycle = next(line for line in found.splitlines() if "wait-for cycle" in line)
    assert "rank 1 thread" in cycle and "-> rank 0 thread" in cycle and "back to rank 1 thread" in cycle, cycle
    reports = {line["proc"]: line["text"] for line in lines}
    assert all(r == reports[0] for r in reports.values())          # every process got every rank's result
    first = reports[0][0]
    assert first.startswith("107020: aclrtSynchronizeStream: deadlock"), first
    assert "rank 0 thread" in first and "rank 1 thread" in first
    cycle = next(line for line in first.splitlines() if "wait-for cycle" in line)
    assert "rank 0 thread" in cycle and "-> rank 1 thread" in cycle and "back to rank 0" in cycle
    assert reports[0][2] == "0: "                                   # rank 2 waited for nothing


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_the_leak_check_counts_orphaned_segments_only():
    """A new segment nobody holds is left behind; one another live job maps is not ours to count."""
    before = _segments()
    orphan = Path(f"/dev/shm/mpich_shm_leakcheck_{os.getpid()}_a")
    held = Path(f"/dev/shm/mpich_shm_leakcheck_{os.getpid()}_b")
    orphan.write_bytes(b"x")
    held.write_bytes(b"x")
    try:
        with open(held, "rb"):
            assert _left_behind(before) == [orphan.name]
    finally:
        orphan.unlink()
        held.unlink()
    assert _left_behind(before) == []
