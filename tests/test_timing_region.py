"""A call's collective and data size in its marker, algbw and busbw, and ``timing.region``: a
caller's own collective timed, traced and reported as the library's calls are."""
import textwrap

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl, timing
from pyhcomm.capi import hccl_ops as ops
from pyhcomm.cli import main
from pyhcomm.collectives import allgather_ring, run
from pyhcomm.timing.bandwidth import busbw_factor
from pyhcomm.timing.replay import replay

FP32 = int(pyhcomm.HCCL_DATA_TYPE_FP32)
N, PER = 4, 64 << 10


def _timeline(body, nranks=N, product="Atlas 800T A2"):
    sim = pyhcomm.Sim(product=product, data=False)
    pyhcomm.launch(body, nranks, sim=sim)
    return sim, replay(sim)


def test_the_library_marks_its_calls_with_the_collective_and_hccl_tests_data_size():
    def body(comm):
        send, _ = acl.rt.malloc(N * PER, 0)
        recv, _ = acl.rt.malloc(N * PER, 0)
        stream, _ = acl.rt.create_stream()
        assert ops.HcclAllGather(send, recv, PER // 4, FP32, comm.handle, stream) == 0
        assert ops.HcclAllReduce(send, recv, PER // 4, FP32, 0, comm.handle, stream) == 0
        assert ops.HcclReduceScatter(send, recv, PER // 4, FP32, 0, comm.handle, stream) == 0
        assert ops.HcclBroadcast(send, PER // 4, FP32, 0, comm.handle, stream) == 0
        acl.rt.synchronize_stream(stream)

    _sim, tl = _timeline(body)
    got = {c.name: (c.op, c.nbytes) for c in tl.calls}
    assert got == {"HcclAllGather": ("allgather", N * PER), "HcclAllReduce": ("allreduce", PER),
                   "HcclReduceScatter": ("reduce_scatter", N * PER), "HcclBroadcast": ("broadcast", PER)}
    for c in tl.calls:
        assert c.algbw == pytest.approx(c.nbytes / c.seconds)
        assert c.busbw == pytest.approx(c.algbw * busbw_factor(c.op, N))


def test_busbw_factors_are_nccl_tests():
    assert busbw_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    for op in ("allgather", "reduce_scatter", "alltoall", "scatter", "allgather_v"):
        assert busbw_factor(op, 8) == pytest.approx(7 / 8)
    for op in ("broadcast", "reduce", "send", None, "unheard-of"):
        assert busbw_factor(op, 8) == 1.0


def _ring_region(comm, name="my_allgather", **kw):
    send, _ = acl.rt.malloc(PER, 0)
    recv, _ = acl.rt.malloc(PER * comm.size, 0)
    stream, _ = acl.rt.create_stream()
    with timing.region(name, bytes=PER * comm.size, op="allgather", comm=comm, **kw):
        run(comm.handle, stream, 0, allgather_ring, send, recv, PER, tag="ring_inside")
        acl.rt.synchronize_stream(stream)
    return stream


def test_a_region_is_one_call_of_every_rank_with_its_entries_bandwidth_and_no_algorithm():
    sim, tl = _timeline(_ring_region)
    calls = {c.name: c for c in tl.calls}
    mine, inner = calls["my_allgather"], calls["ring_inside"]
    assert mine.ranks == tuple(range(N)) and mine.algorithm is None
    assert (mine.op, mine.nbytes) == ("allgather", N * PER)
    assert mine.busbw == pytest.approx(N * PER / mine.seconds * (N - 1) / N)
    entries = set(np.frombuffer(mine.entries, np.int64).tolist())
    assert set(np.frombuffer(inner.entries, np.int64).tolist()) <= entries     # the ring call inside it
    # the region also holds the synchronize, which ends after the ring: a longer span
    assert mine.begin <= inner.begin and mine.end > inner.end


def test_a_region_left_by_an_exception_records_nothing_and_bad_arguments_are_refused():
    def body(comm):
        with pytest.raises(RuntimeError):
            with timing.region("broken", bytes=8, comm=comm):
                raise RuntimeError("inside")
        with pytest.raises(ValueError, match="bytes must be an int >= 0"):
            with timing.region("x", bytes=-1):
                pass
        with pytest.raises(ValueError, match="op 'allgathr' is not a collective"):
            with timing.region("x", op="allgathr"):
                pass
        with pytest.raises(TypeError, match="name must be a non-empty str"):
            with timing.region(""):
                pass

    sim, _tl = _timeline(body, 2)
    assert [e for e in sim.record.events() if e.kind == "Collective"] == []


def test_trace_reports_a_region_like_a_library_call(tmp_path, capsys):
    script = tmp_path / "mine.py"
    script.write_text(textwrap.dedent("""
        import pyhcomm
        from pyhcomm import acl
        from pyhcomm.collectives import allgather_ring, run

        def body(comm):
            send, _ = acl.rt.malloc(4096, 0)
            recv, _ = acl.rt.malloc(4 * 4096, 0)
            stream, _ = acl.rt.create_stream()
            with pyhcomm.timing.region("my_allgather", bytes=4 * 4096, op="allgather", comm=comm):
                run(comm.handle, stream, 0, allgather_ring, send, recv, 4096)
                acl.rt.synchronize_stream(stream)

        pyhcomm.launch(body, 4, data=False)
    """))
    assert main(["trace", str(script), "-o", str(tmp_path / "t.json")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "my_allgather" in x)
    assert line.startswith("  my_allgather on ranks 0..3: ") and ", 16384 bytes, algbw " in line
    assert "GB/s, busbw " in line
