"""The happens-before graph of a record, edge by edge, on small hand-written programs; and, on the
collectives, that every edge goes forward in execution order and every wait that ran has the
record it consumed."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import (HcommBatchModeEnd, HcommBatchModeStart, HcommLocalCopyOnThread, HcommThreadJoin,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, acl)
from pyhcomm.analysis import happens_before as hb
from pyhcomm.analysis.happens_before import Edge
from hcomm_testutil import D2D, device_thread_setup, host_setup, malloc, pattern, read, two_rank_channels, write

E = pyhcomm.CommEngine
P = pyhcomm.CommProtocol

pytestmark = pytest.mark.timeout(120)


def _graph():
    return hb.build(pyhcomm.current_sim().record)


def _preds(g, entry):
    return set(g.preds(entry.seq))


def _kinds(entries):
    return [e.kind for e in entries]


def test_one_thread_gives_stream_program_and_sync_edges():
    _comm, stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    write(src, pattern(64))
    assert HcommLocalCopyOnThread(thread, dst, src, 64) == 0
    assert HcommLocalCopyOnThread(thread, src, dst, 64) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    read(dst, 64)
    g = _graph()
    memcpy, c1, c2, sync, back = pyhcomm.record.entries()
    assert _kinds([memcpy, c1, c2, sync, back]) == ["Memcpy", "LocalCopy", "LocalCopy", "Synchronize", "Memcpy"]
    assert _preds(g, memcpy) == set()
    assert _preds(g, c1) == {Edge(memcpy.seq, "program")}
    assert _preds(g, c2) == {Edge(memcpy.seq, "program"), Edge(c1.seq, "stream")}
    assert _preds(g, sync) == {Edge(memcpy.seq, "program"), Edge(c2.seq, "sync")}
    assert _preds(g, back) == {Edge(sync.seq, "program")}
    assert g.happens_before(c1.seq, back.seq) and not g.happens_before(back.seq, c1.seq)
    assert set(g.succs(c1.seq)) == {Edge(c2.seq, "stream")}
    assert g.order() == [e.seq for e in (memcpy, c1, c2, sync, back)]
    assert all(g.ran(e.seq) for e in (memcpy, c1, c2, sync, back))
    assert g.program(c1.seq) == g.program(back.seq) and g.stream(c1.seq) == stream and g.stream(sync.seq) is None
    assert g.complete and len(g) == 5
    assert g.event(c2.seq).kind == "LocalCopy"


def test_a_thread_notify_orders_two_streams():
    comm, _stream, _ = host_setup()
    _, (a, b) = pyhcomm.HcclThreadAcquire(comm, E.COMM_ENGINE_CPU_TS, 2, 1)
    src, mid, dst = malloc(64), malloc(64), malloc(64)
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(a, mid, src, 64) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommLocalCopyOnThread(b, dst, mid, 64) == 0
    assert HcommLocalCopyOnThread(a, src, dst, 64) == 0      # after the record: not ordered with b's copy
    assert acl.rt.synchronize_device() == 0
    g = _graph()
    wait, c1, rec, c2, c3, sync = pyhcomm.record.entries()
    assert _preds(g, wait) == {Edge(rec.seq, "notify")}
    assert _preds(g, c1) == set()
    assert _preds(g, rec) == {Edge(c1.seq, "stream")}
    assert _preds(g, c2) == {Edge(wait.seq, "stream")}
    assert _preds(g, c3) == {Edge(rec.seq, "stream")}
    assert _preds(g, sync) == {Edge(c2.seq, "sync"), Edge(c3.seq, "sync")}
    assert g.happens_before(c1.seq, c2.seq)
    assert not g.happens_before(c2.seq, c3.seq) and not g.happens_before(c3.seq, c2.seq)


def test_two_records_before_one_wait_both_precede_it():
    comm, _stream, _ = host_setup()
    _, (a, b) = pyhcomm.HcclThreadAcquire(comm, E.COMM_ENGINE_CPU_TS, 2, 1)
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert acl.rt.synchronize_device() == 0
    g = _graph()
    r1, r2, wait, _sync = pyhcomm.record.entries()
    assert (r1.gen, r2.gen, wait.gen) == (1, 2, 2)      # the notify holds one bit: r1 was lost
    assert _preds(g, wait) == {Edge(r1.seq, "notify"), Edge(r2.seq, "notify")}


def test_a_kernel_gives_launch_join_and_kernel_end_edges(product):
    product("Atlas 350")
    _comm, stream, u = device_thread_setup()
    src, dst, out = malloc(64), malloc(64), malloc(64)

    def kernel():
        assert HcommLocalCopyOnThread(u, dst, src, 64) == 0
        assert HcommThreadJoin(u, 10) == 0
        assert HcommLocalCopyOnThread(u, src, dst, 64) == 0     # nobody waits for this one

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.memcpy_async(out, 64, dst, 64, D2D, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    g = _graph()
    by_kind = {}
    for e in pyhcomm.record.entries():
        by_kind.setdefault(e.kind, []).append(e)
    (launch,), (copy, late), (join,), (after,), (sync,) = (by_kind[k] for k in (
        "KernelLaunch", "LocalCopy", "ThreadJoin", "MemcpyAsync", "Synchronize"))
    assert _preds(g, launch) == set()
    assert _preds(g, copy) == {Edge(launch.seq, "launch")}
    assert _preds(g, join) == {Edge(launch.seq, "launch"), Edge(copy.seq, "join")}
    assert _preds(g, late) == {Edge(join.seq, "program"), Edge(copy.seq, "stream")}
    assert _preds(g, after) == {Edge(launch.seq, "stream"), Edge(join.seq, "kernel_end")}
    assert _preds(g, sync) == {Edge(after.seq, "sync")}
    assert g.happens_before(copy.seq, sync.seq)
    assert not g.happens_before(late.seq, sync.seq)      # the host synchronized the launch stream only
    prog = g.programs[g.program(copy.seq)]
    assert prog.kernel == launch.seq and prog.label == f"kernel kernel of rank 0 (launch #{launch.seq})"
    _kernels_are_the_tasks(g)
    assert g.programs[g.program(launch.seq)].label == "rank 0's host program"     # its acl calls, on rank 0's device


def test_tasks_of_a_batch_follow_the_last_host_effect_before_its_end(product):
    product("Atlas 350")
    _comm, stream, u = device_thread_setup()
    a, b = malloc(64), malloc(64)

    def kernel():
        assert HcommLocalCopyOnThread(u, b, a, 64) == 0     # eager
        assert HcommBatchModeStart("t") == 0
        assert HcommLocalCopyOnThread(u, a, b, 64) == 0     # kept until the end
        assert HcommThreadJoin(u, 10) == 0                  # waits for the eager copy only
        assert HcommLocalCopyOnThread(u, b, a, 64) == 0
        assert HcommBatchModeEnd("t") == 0

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.synchronize_device() == 0
    g = _graph()
    launch, eager, join, first, second, _sync = pyhcomm.record.entries()
    assert _kinds([launch, eager, join, first, second]) == ["KernelLaunch", "LocalCopy", "ThreadJoin", "LocalCopy",
                                                            "LocalCopy"]
    assert first.batch is not None and getattr(eager, "batch", None) is None
    assert _preds(g, join) == {Edge(launch.seq, "launch"), Edge(eager.seq, "join")}
    assert _preds(g, first) == {Edge(join.seq, "batch"), Edge(eager.seq, "stream")}
    assert _preds(g, second) == {Edge(join.seq, "batch"), Edge(first.seq, "stream")}


def _pair(comm, protocol=P.COMM_PROTOCOL_HCCS, engine=E.COMM_ENGINE_CPU_TS, notifies=1):
    from pyhcomm import HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer
    d = HcclChannelDesc()
    HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, protocol, notifies
    _, (ch,) = HcclChannelAcquire(comm.handle, engine, [d])
    _, remote, _ = HcclChannelGetHcclBuffer(comm.handle, ch)
    return ch, remote


def test_a_channel_notify_orders_a_write_before_the_peers_read_and_comm_init_is_a_rendezvous():
    from pyhcomm import (HcclThreadAcquireWithStream, HcommChannelNotifyRecordOnThread,
                         HcommChannelNotifyWaitOnThread, HcommWriteOnThread)

    def body(comm):
        ch, remote = _pair(comm)
        stream, _ = acl.rt.create_stream()
        _, t = HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
        own = comm.hccl_buffer().addr
        if comm.rank == 0:
            src = malloc(64)
            write(src, pattern(64))
            assert HcommWriteOnThread(t, ch, remote, src, 64) == 0
            assert HcommChannelNotifyRecordOnThread(t, ch, 0) == 0
        else:
            dst = malloc(64)
            assert HcommChannelNotifyWaitOnThread(t, ch, 0, 0) == 0
            assert HcommLocalCopyOnThread(t, dst, own, 64) == 0
        assert acl.rt.synchronize_stream(stream) == 0

    sim = pyhcomm.current_sim()
    pyhcomm.launch(body, 2, sim=sim, timeout=60)
    g = hb.build(sim)
    ents = {e.kind: e for e in sim.record.entries()}
    rdv, memcpy, wr, rec, wait, copy = (ents[k] for k in ("Rendezvous", "Memcpy", "Write", "ChannelNotifyRecord",
                                                          "ChannelNotifyWait", "LocalCopy"))
    syncs = {e.rank if e.rank is not None else e.device: e for e in sim.record.entries() if e.kind == "Synchronize"}
    assert rdv.extra["programs"] == (g.program(wr.seq), g.program(copy.seq)) and rdv.extra["ranks"] == (0, 1)
    assert _preds(g, memcpy) == {Edge(rdv.seq, "program")}
    assert _preds(g, wr) == {Edge(memcpy.seq, "program")}
    assert _preds(g, rec) == {Edge(memcpy.seq, "program"), Edge(wr.seq, "stream")}
    assert _preds(g, wait) == {Edge(rdv.seq, "program"), Edge(rec.seq, "notify")}
    assert _preds(g, copy) == {Edge(rdv.seq, "program"), Edge(wait.seq, "stream")}
    assert _preds(g, syncs[1]) == {Edge(rdv.seq, "program"), Edge(copy.seq, "sync")}
    assert g.happens_before(wr.seq, copy.seq) and g.happens_before(memcpy.seq, syncs[1].seq)
    assert not g.happens_before(copy.seq, syncs[0].seq)
    assert {p.label for p in g.programs.values()} == {"rank 0's host program", "rank 1's host program"}


def test_a_host_barrier_orders_what_came_before_it_on_every_rank():
    def body(comm):
        buf = malloc(64)
        if comm.rank == 0:
            write(buf, pattern(64))
        comm.barrier()
        if comm.rank == 1:
            read(buf, 64)

    sim = pyhcomm.current_sim()
    pyhcomm.launch(body, 2, sim=sim, timeout=60)
    g = hb.build(sim)
    init, put, barrier, get = sim.record.entries()
    assert _kinds([init, put, barrier, get]) == ["Rendezvous", "Memcpy", "Rendezvous", "Memcpy"]
    assert barrier.api == "Comm.barrier"
    # whoever recorded the barrier, the other member's last host effect precedes it
    assert Edge(put.seq, "program" if g.program(barrier.seq) == g.program(put.seq) else "rendezvous") in _preds(
        g, barrier)
    assert _preds(g, get) == {Edge(barrier.seq, "program")}
    assert g.happens_before(put.seq, get.seq)


def test_nbi_transfers_complete_at_the_fence(product):
    product("Atlas 350")
    from pyhcomm import HcommChannelFence, HcommWriteNbi
    _comms, chans, remote = two_rank_channels(E.COMM_ENGINE_CPU, P.COMM_PROTOCOL_ROCE)
    src = malloc(64)
    write(src, pattern(64))
    assert HcommWriteNbi(chans[0], remote, src, 64) == 0
    write(src, pattern(64, 2))                     # reuses src before the fence: not ordered after the write
    assert HcommChannelFence(chans[0]) == 0
    read(src, 64)
    g = _graph()
    put, nbi, put2, fence, get = pyhcomm.record.entries()
    assert _kinds([put, nbi, put2, fence, get]) == ["Memcpy", "WriteNbi", "Memcpy", "Fence", "Memcpy"]
    assert _preds(g, nbi) == {Edge(put.seq, "program")}
    assert _preds(g, put2) == {Edge(put.seq, "program")}
    assert _preds(g, fence) == {Edge(put2.seq, "program"), Edge(nbi.seq, "fence")}
    assert not g.happens_before(nbi.seq, put2.seq) and g.happens_before(nbi.seq, get.seq)
    assert fence.api == "HcommChannelFence" and fence.extra["channel"] == chans[0]


@pytest.mark.parametrize("product_name", ["Atlas 800T A2", "Atlas A3", "Atlas 350"])
def test_on_the_collectives_edges_go_forward_and_every_wait_has_its_record(product_name):
    fp32, total = pyhcomm.HcclDataType.HCCL_DATA_TYPE_FP32, pyhcomm.HcclReduceOp.HCCL_REDUCE_SUM

    def body(comm):
        n = comm.size
        send, recv = malloc(4 * 64), malloc(4 * 64 * n)
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllGather(send, recv, 64, fp32, comm.handle, stream) == 0
        assert pyhcomm.HcclAllReduce(recv, recv, 64 * n, fp32, total, comm.handle, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0

    sim = pyhcomm.Sim(scheduler="coop", seed=3, product=product_name)
    pyhcomm.launch(body, 4, sim=sim, timeout=60)
    g = hb.build(sim)
    order = {s: k for k, s in enumerate(g.order())}
    assert len(order) == len(g)
    for src, dst, kind in g.edges():
        assert order[src] < order[dst], (src, dst, kind)
    waits = [e for e in sim.record.entries() if getattr(e, "waits", False)]
    assert waits and all(any(p.kind == "notify" for p in g.preds(w.seq)) for w in waits)
    _notify_waits_are_the_tasks(g)
    _kernels_are_the_tasks(g, some=product_name != "Atlas 800T A2")
    kinds = {k for _s, _d, k in g.edges()}
    assert {"stream", "notify", "program", "sync"} <= kinds
    if product_name != "Atlas 800T A2":
        assert "batch" in kinds     # the collectives run their kernels in batch mode


def test_a_write_with_notify_orders_the_peers_wait_and_a_drain_waits_for_the_thread(product):
    """Atlas 350 kernels on AICPU_TS threads: rank 0 writes into rank 1's HCCL buffer with
    WriteWithNotify and drains its thread; rank 1 waits for the notify, copies out, drains."""
    product("Atlas 350")
    from pyhcomm import (HcclThreadAcquire, HcommChannelDrainOnThread, HcommChannelNotifyWaitOnThread,
                         HcommWriteWithNotifyOnThread)
    from pyhcomm.analysis import analyze

    def body(comm):
        ch, remote = _pair(comm, P.COMM_PROTOCOL_UB_CTP, E.COMM_ENGINE_AICPU_TS)
        stream, _ = acl.rt.create_stream()
        _, (t,) = HcclThreadAcquire(comm.handle, E.COMM_ENGINE_AICPU_TS, 1, 1)
        own, buf = comm.hccl_buffer().addr, malloc(64)

        def kernel():
            if comm.rank == 0:
                assert HcommWriteWithNotifyOnThread(t, ch, remote, buf, 64, 0) == 0
            else:
                assert HcommChannelNotifyWaitOnThread(t, ch, 0, 0) == 0
                assert HcommLocalCopyOnThread(t, buf, own, 64) == 0
            assert HcommChannelDrainOnThread(t, ch) == 0

        pyhcomm.Stream(stream, owned=False).launch(kernel)
        assert acl.rt.synchronize_stream(stream) == 0

    sim = pyhcomm.current_sim()
    pyhcomm.launch(body, 2, sim=sim, timeout=60)
    g = hb.build(sim)
    ents = sim.record.entries()
    wwn, wait, copy = (next(e for e in ents if e.kind == k) for k in ("WriteWithNotify", "ChannelNotifyWait",
                                                                        "LocalCopy"))
    drains = {e.rank: e for e in ents if e.kind == "ChannelDrain"}
    assert Edge(wwn.seq, "notify") in _preds(g, wait)
    assert Edge(wwn.seq, "drain") in _preds(g, drains[0]) and Edge(copy.seq, "drain") in _preds(g, drains[1])
    assert g.happens_before(wwn.seq, copy.seq) and not g.happens_before(copy.seq, drains[0].seq)
    assert analyze(sim) == []
    _notify_waits_are_the_tasks(g)
    _kernels_are_the_tasks(g)


def _kernels_are_the_tasks(g, some=True):
    """The graph reads a device-side task's kernel from one task of its program (a kernel's
    tasks are its own program's): the same as every task's own ``kernel``."""
    cols = g.columns
    tasks = cols.task_entries
    got = cols.kernel[cols.tasks].tolist()
    want = [(t.kernel or 0) if t.side == "device" else 0 for t in tasks]
    assert got == want and (any(want) or not some)


def _notify_waits_are_the_tasks(g):
    """The graph tells a notify task's waiting from its kind (its ``notify`` use): the same as
    the task's own ``waits`` for every record and wait that ran."""
    cols = g.notify_columns
    at = cols.at[:cols.tasks]
    flags = [g.entry(int(s)).waits for s in g.columns.seq[at]]
    assert True in flags and False in flags
    assert cols.waits[:cols.tasks].tolist() == flags


@pytest.mark.parametrize("product_name", ["Atlas A3", "Atlas 350"])
def test_batch_edges_are_exactly_the_tasks_their_program_batched(product_name):
    """Many ranks' AI CPU kernels keep batches open at once (a small queue budget makes them yield
    mid-batch, so their seqs interleave), several calls each: a task's program-order edge is
    ``batch`` exactly when one of its own program's batches holds its seq (checked against every
    batch, one by one), ``program`` / ``launch`` otherwise."""
    from verify_programs import collective
    from pyhcomm.config import Config
    config = Config.from_env().with_values(queue_budget=4)
    sim = pyhcomm.Sim(config, scheduler="coop", seed=5, product=product_name, data=False)
    pyhcomm.launch(collective("allreduce", 64, calls=2), 6, sim=sim, timeout=120)
    rec = sim.record
    by_program: dict = {}
    for _bid, p, lo, hi in rec.batches:
        by_program.setdefault(p, []).append((lo, hi))
    assert len(rec.batches) >= 12 and len(by_program) >= 6
    spans = sorted((lo, hi) for _b, _p, lo, hi in rec.batches)
    assert max(sum(lo <= a <= hi for lo, hi in spans) for a, _ in spans) >= 3     # batches interleave
    g = hb.build(sim)
    order_kinds = {"program", "batch", "launch"}
    checked = 0
    for e in rec.entries():
        if e.entry != "task":
            continue
        kinds = {k for _s, k in g.preds(e.seq)} & order_kinds
        if not kinds:
            continue
        want = any(lo <= e.seq <= hi for lo, hi in by_program.get(e.program, ()))
        assert ("batch" in kinds) == want and len(kinds) == 1, (e.seq, e.kind, kinds)
        checked += want
    assert checked > 0


@pytest.mark.parametrize("logged", [[3, 1, 2, 5, 4], [3, 1, 5], [3, 1, 3, 2, 5, 4], [2, 2], [7, 1, 9, 4]])
def test_the_first_step_of_each_logged_seq_is_numpys_unique(logged):
    """Every entry once (no sort), some of them, one twice (a task that ran, then failed), a seq
    that is no entry's: the same as ``np.unique(logged, return_index=True)``."""
    seq = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    logged = np.array(logged, dtype=np.int64)
    got, want = hb._first_steps(logged, hb.locator(seq), seq), np.unique(logged, return_index=True)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


def test_a_kernel_s_launch_is_found_by_its_seq_and_anything_else_is_a_key_error(product):
    product("Atlas 350")
    _comm, stream, u = device_thread_setup()
    src, dst = malloc(64), malloc(64)

    def kernel():
        assert HcommLocalCopyOnThread(u, dst, src, 64) == 0

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.synchronize_stream(stream) == 0
    c = hb._Columns(pyhcomm.record)
    entries = pyhcomm.record.entries()
    launch = next(i for i, e in enumerate(entries) if e.kind == "KernelLaunch")
    copy = next(i for i, e in enumerate(entries) if e.kind == "LocalCopy")
    assert c.launch_at(np.array([entries[launch].seq] * 3)).tolist() == [launch] * 3
    for bad in (entries[copy].seq, 10 ** 9):
        with pytest.raises(KeyError, match=str(bad)):
            c.launch_at(np.array([entries[launch].seq, bad]))
