"""The Pythonic tier across ranks: channels (the protocol picked from the rank graph), one-sided
transfers and their reduce, WithNotify and NBI variants, channel notifies, fences, drain, batch
transfers and batch mode, a peer's HCCL buffer and registered memory; errors as HcclError with
``.code`` and ``.api``; and the tier's layering (the raising implementations, never the C tier).

Most tests build both ranks in this host thread (``Comm.init_all``: acquiring does not block);
the ring AllGather runs one rank per program with ``pyhcomm.launch``.
"""
import importlib.util
import pathlib

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (Channel, Comm, CommEngine, Device, HcclNotSupportedError, HcclResult, HcclUsageError,
                     HcommBatchTransferDesc, HcommTransferType, Kernel)
from pyhcomm.pythonic import RemoteBuffer, batch_mode

E, P, R = CommEngine, pyhcomm.CommProtocol, HcclResult
CPU, CPU_TS, AICPU_TS = E.COMM_ENGINE_CPU, E.COMM_ENGINE_CPU_TS, E.COMM_ENGINE_AICPU_TS
ACK, DATA = 0, 1

pytestmark = pytest.mark.timeout(60)


class Pair:
    """Ranks 0 and 1 of one communicator, both in this host thread (devices ``devices``), with a
    channel between them: ``ch[r]`` is rank ``r``'s end."""

    def __init__(self, product, engine=CPU_TS, devices=(0, 1), notify_num=2, **channel):
        pyhcomm.set_product(product)
        self.devs = [Device(d) for d in devices]
        self.comms = Comm.init_all(list(devices))
        self.ch = [self.comms[r].channel(1 - r, engine, notify_num=notify_num, **channel) for r in (0, 1)]

    def thread(self, rank, engine=CPU_TS):
        if engine == CPU_TS:
            return self.comms[rank].thread(engine, stream=self.devs[rank].stream())
        return self.comms[rank].threads(engine, 1, 1)[0]

    def buffer(self, rank, data):
        arr = np.ascontiguousarray(data)
        buf = self.devs[rank].malloc(arr.nbytes)
        buf.write(arr)
        return buf


def in_kernel(dev, fn, *args):
    """Launch ``fn(*args)`` as an AI CPU kernel on a new stream of ``dev`` (returns at once)."""
    Kernel(fn).launch(dev.stream(), *args)


# -- channels and the rank graph ---------------------------------------------------------------------
def test_a_channel_pairs_with_the_peers_end_and_exposes_its_hccl_buffer():
    p = Pair("Atlas 800T A2")
    assert isinstance(p.ch[0], Channel) and (p.ch[0].peer, p.ch[1].peer) == (1, 0)
    assert p.ch[0].engine == CPU_TS and p.ch[0].notify_num == 2
    theirs = p.ch[0].peer_hccl_buffer()
    assert isinstance(theirs, RemoteBuffer) and theirs.rank == 1 and theirs.tag is None
    assert (theirs.addr, theirs.size) == (p.comms[1].hccl_buffer().addr, p.comms[1].hccl_buffer().size)
    part = theirs[256:512]
    assert (part.addr, part.size, part.rank) == (theirs.addr + 256, 256, 1)
    with pytest.raises(ValueError):
        theirs[::2]
    assert p.comms[0].channel(1, notify_num=2).handle == p.ch[0].handle        # get or create
    assert repr(p.ch[0]) == f"<Channel 0x{p.ch[0].handle:x} rank 0 -> rank 1 COMM_ENGINE_CPU_TS COMM_PROTOCOL_HCCS>"


@pytest.mark.parametrize("product,engine,devices,links,picked", [
    ("Atlas 800T A2", CPU_TS, (0, 1), [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE],
     P.COMM_PROTOCOL_HCCS),
    ("Atlas 800T A2", CPU_TS, (0, 8), [P.COMM_PROTOCOL_ROCE], P.COMM_PROTOCOL_ROCE),     # two servers
    ("Atlas A3", AICPU_TS, (0, 1), [P.COMM_PROTOCOL_SIO, P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY,
                                    P.COMM_PROTOCOL_ROCE], P.COMM_PROTOCOL_HCCS),        # no SIO channels
    ("Atlas 350", AICPU_TS, (0, 1), [P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM,
                                     P.COMM_PROTOCOL_UBOE, P.COMM_PROTOCOL_ROCE], P.COMM_PROTOCOL_UB_CTP),
    ("Atlas 350", CPU, (0, 1), [P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM,
                                P.COMM_PROTOCOL_UBOE, P.COMM_PROTOCOL_ROCE], P.COMM_PROTOCOL_ROCE),  # host: RoCE
])
def test_the_protocol_is_the_rank_graphs_best_link_the_engine_speaks(product, engine, devices, links, picked):
    p = Pair(product, engine, devices)
    assert p.comms[0].links(1) == links and p.comms[1].links(0) == links
    assert p.ch[0].protocol == p.ch[1].protocol == picked


def test_an_explicit_protocol_is_taken_as_given():
    p = Pair("Atlas 800T A2", protocol=P.COMM_PROTOCOL_ROCE)
    assert p.ch[0].protocol == P.COMM_PROTOCOL_ROCE
    assert p.comms[0].channel(1, protocol=P.COMM_PROTOCOL_HCCS).handle != p.ch[0].handle


def test_an_explicit_protocol_without_a_link_is_not_found():
    with pytest.raises(HcclUsageError) as info:           # no HCCS between two servers
        Pair("Atlas 800T A2", devices=(0, 8), protocol=P.COMM_PROTOCOL_HCCS)
    assert info.value.code == R.HCCL_E_NOT_FOUND and info.value.api == "HcclChannelAcquire"
    assert str(info.value) == ("HcclChannelAcquire: channelDescs[0]: no COMM_PROTOCOL_HCCS link between rank 0 "
                               "(server 0) and rank 1 (server 1)")


def test_channel_errors_name_the_call():
    pyhcomm.set_product("Atlas A3")
    Device(0), Device(1)
    comms = Comm.init_all([0, 1])
    with pytest.raises(HcclNotSupportedError) as info:    # CPU_TS channels are Atlas A2's
        comms[0].channel(1)
    assert (info.value.code, info.value.api) == (R.HCCL_E_NOT_SUPPORT, "HcclChannelAcquire")
    assert str(info.value) == "HcclChannelAcquire: COMM_ENGINE_CPU_TS channels are not supported on Atlas A3"
    for peer, message in ((0, "channelDescs[0].remoteRank 0 is this rank"),
                          (2, "channelDescs[0].remoteRank 2 is outside [0, 2)")):
        with pytest.raises(HcclUsageError) as info:
            comms[0].channel(peer, AICPU_TS)
        assert info.value.code == R.HCCL_E_PARA and str(info.value) == f"HcclChannelAcquire: {message}"
    with pytest.raises(HcclUsageError) as info:
        comms[0].channel(1, AICPU_TS, notify_num=65)
    assert str(info.value) == "HcclChannelAcquire: channelDescs[0].notifyNum 65 is outside [0, 64]"


def test_no_link_the_engine_speaks_is_not_found(monkeypatch):
    """Atlas A2 CPU_TS channels speak HCCS, HCCS_ONLY and RoCE; with only PCIe between the two
    ranks (a rank graph changed for the test) there is nothing to pick."""
    from pyhcomm import topology
    monkeypatch.setattr(topology, "protocols_between", lambda a, b: [] if a == b else [P.COMM_PROTOCOL_PCIE])
    pyhcomm.set_product("Atlas 800T A2")
    Device(0), Device(1)
    comms = Comm.init_all([0, 1])
    with pytest.raises(HcclUsageError) as info:
        comms[0].channel(1)
    assert info.value.code == R.HCCL_E_NOT_FOUND
    assert str(info.value) == ("HcclChannelAcquire: no link of the rank graph from rank 0 to rank 1 speaks a protocol "
                               "of COMM_ENGINE_CPU_TS channels on Atlas 800T A2 (COMM_PROTOCOL_HCCS, "
                               "COMM_PROTOCOL_HCCS_ONLY, COMM_PROTOCOL_ROCE); the links: COMM_PROTOCOL_PCIE")


# -- one-sided transfers (Atlas A2, host) ---------------------------------------------------------------
def test_write_and_read_move_bytes_through_the_peers_hccl_buffer():
    p = Pair("Atlas 800T A2")
    t = p.thread(0)
    data = np.arange(256, dtype=np.uint8)
    src, back = p.buffer(0, data), p.devs[0].malloc(256)
    theirs = p.ch[0].peer_hccl_buffer()
    p.ch[0].write(t, theirs[512:768], src)                 # nbytes from both sizes
    p.ch[0].read(t, back[:128], theirs[512:640])
    p.ch[0].read(t, back.addr + 128, theirs.addr + 640, 128)   # addresses and a length, as in C
    t.synchronize()
    assert (p.comms[1].hccl_buffer()[512:768].read() == data).all()
    assert (back.read() == data).all()


@pytest.mark.parametrize("dtype,op,fn", [(np.float32, "sum", np.add), (np.int32, "max", np.maximum),
                                         (np.int8, "min", np.minimum)])
def test_write_reduce_and_read_reduce(dtype, op, fn):
    p = Pair("Atlas 800T A2")
    t = p.thread(0)
    a, b = (np.arange(64) % 7 + 1).astype(dtype), (np.arange(64)[::-1] % 5 + 1).astype(dtype)
    mine, local = p.buffer(0, a), p.buffer(0, b)
    ccl1 = p.comms[1].hccl_buffer()[:a.nbytes]
    ccl1.write(b)
    theirs = p.ch[0].peer_hccl_buffer()[:a.nbytes]
    p.ch[0].write_reduce(t, theirs, mine, dtype=dtype, op=op)       # count from the sizes
    p.ch[0].read_reduce(t, local, theirs, count=64, dtype=dtype, op=op)
    t.synchronize()
    assert (ccl1.read(dtype) == fn(a, b)).all()
    assert (local.read(dtype) == fn(b, fn(a, b))).all()


def test_transfer_argument_errors_are_hccl_errors_with_the_c_name():
    p = Pair("Atlas 800T A2")
    t = p.thread(0)
    src = p.buffer(0, np.zeros(64, np.uint8))
    theirs = p.ch[0].peer_hccl_buffer()
    with pytest.raises(HcclUsageError) as info:
        p.ch[0].write(t, theirs[:128], src)                 # sizes differ
    assert (info.value.api, str(info.value)) == ("HcommWriteOnThread", "HcommWriteOnThread: give nbytes: buffer "
                                                 "sizes [64, 128] differ or are unknown")
    with pytest.raises(HcclUsageError) as info:
        p.ch[0].write(t, theirs.addr + theirs.size - 32, src)    # runs past the exposed buffer
    assert info.value.code == R.HCCL_E_PARA and str(info.value).startswith(
        f"HcommWriteOnThread: dst 0x{theirs.addr + theirs.size - 32:x} + 64 is not memory rank 1 exposed on this "
        "channel (its HCCL buffer ")
    with pytest.raises(HcclUsageError) as info:
        p.ch[0].write_reduce(t, theirs[:6], src[:6], dtype=np.float32)
    assert str(info.value) == ("HcommWriteReduceOnThread: give count: 6 bytes is not a whole number of dataType 4 "
                               "elements")
    with pytest.raises(HcclUsageError) as info:
        p.ch[0].record(t, 2)
    assert str(info.value) == ("HcommChannelNotifyRecordOnThread: remoteNotifyIdx 2 is out of range: the channel end "
                               "of rank 1 has 2 notifies")


def test_registered_memory_listed_on_the_channel_is_reachable_by_the_peer():
    pyhcomm.set_product("Atlas 800T A2")
    devs = [Device(0), Device(1)]
    comms = Comm.init_all([0, 1])
    recv = devs[1].malloc(4096)
    reg = comms[1].register(recv, "recv")
    assert (reg.tag, reg.buffer) == ("recv", recv) and isinstance(reg.handle, int)
    ch0 = comms[0].channel(1, notify_num=1)
    comms[1].channel(0, notify_num=1, mems=[reg])
    remote = ch0.remote_mems()
    assert list(remote) == ["recv"] and (remote["recv"].addr, remote["recv"].size) == (recv.addr, 4096)
    assert repr(remote["recv"]) == f"<RemoteBuffer 0x{recv.addr:x} 4096 B: rank 1's memory 'recv'>"
    t = comms[0].thread(stream=devs[0].stream())
    data = (np.arange(4096) * 3 % 256).astype(np.uint8)
    src = devs[0].malloc(4096)
    src.write(data)
    ch0.write(t, remote["recv"], src)
    t.synchronize()
    assert (recv.read() == data).all()


# -- channel notifies, the ring AllGather across ranks ---------------------------------------------------
def test_record_sets_the_peers_notify_and_wait_clears_its_own():
    p = Pair("Atlas 800T A2")
    t0, t1 = p.thread(0), p.thread(1)
    theirs = p.ch[0].peer_hccl_buffer()
    src, out = p.buffer(0, np.full(64, 9, np.uint8)), p.devs[1].malloc(64)
    p.ch[1].wait(t1, DATA, 30)                              # rank 1: wait for the data, then copy it out
    t1.local_copy(out, p.comms[1].hccl_buffer()[:64])
    p.ch[0].write(t0, theirs[:64], src)                      # rank 0: write, then tell rank 1
    p.ch[0].record(t0, DATA)
    t0.synchronize()
    t1.synchronize()
    assert (out.read() == 9).all()
    assert [e.kind for e in pyhcomm.record.tasks()] == ["ChannelNotifyWait", "LocalCopy", "Write",
                                                        "ChannelNotifyRecord"]


def _ring_body(comm, count):
    spec = importlib.util.spec_from_file_location("ring_allgather_example", RING)
    ring = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ring)
    return ring.pythonic(comm, count), ring.flat_c(comm.handle, count)


RING = pathlib.Path(__file__).resolve().parent.parent / "examples" / "ring_allgather.py"


@pytest.mark.parametrize("nranks,devices", [(1, None), (2, None), (3, None), (4, None), (3, [0, 8, 16])])
def test_the_ring_allgather_example_in_both_tiers(nranks, devices):
    count = 300
    out = pyhcomm.launch(_ring_body, nranks, count, devices=devices, product="Atlas 800T A2", timeout=60)
    expected = np.concatenate([np.arange(count, dtype=np.float32) + 1000 * r for r in range(nranks)])
    for pythonic, flat_c in out:
        assert np.array_equal(pythonic, expected) and np.array_equal(flat_c, expected)


def test_the_ring_example_is_verified_clean_on_three_ranks():
    import runpy
    fn = runpy.run_path(str(RING), run_name="ring")["main"]
    report = pyhcomm.verify.check(fn, 3, 64, product="Atlas 800T A2", schedules=4)
    assert report.findings == [], report.text()


# -- Atlas 350 and A3, inside kernels -------------------------------------------------------------------
def test_write_with_notify_inside_kernels_on_atlas_350():
    p = Pair("Atlas 350", AICPU_TS)
    t0, t1 = p.thread(0, AICPU_TS), p.thread(1, AICPU_TS)
    data = np.arange(512, dtype=np.uint8) % 251
    src, out = p.buffer(0, data), p.devs[1].malloc(512)
    ccl1 = p.comms[1].hccl_buffer()[:512]
    theirs = p.ch[0].peer_hccl_buffer()[:512]

    def receiver():
        p.ch[1].wait(t1, DATA, 0)
        t1.local_copy(out, ccl1)

    def sender():
        p.ch[0].write_with_notify(t0, theirs, src, DATA)

    in_kernel(p.devs[1], receiver)
    in_kernel(p.devs[0], sender)
    p.devs[0].synchronize()
    p.devs[1].synchronize()
    assert (out.read() == data).all()
    assert [e.kind for e in pyhcomm.record.tasks() if e.kind != "KernelLaunch"] == \
        ["ChannelNotifyWait", "LocalCopy", "WriteWithNotify"]


def test_write_reduce_with_notify_and_drain_inside_a_kernel_on_atlas_350():
    p = Pair("Atlas 350", AICPU_TS)
    t0 = p.thread(0, AICPU_TS)
    a, b = np.arange(32, dtype=np.float32), np.full(32, 0.5, np.float32)
    src = p.buffer(0, a)
    ccl1 = p.comms[1].hccl_buffer()[:128]
    ccl1.write(b)
    theirs = p.ch[0].peer_hccl_buffer()[:128]
    seen = []

    def kernel():
        p.ch[0].write_reduce_with_notify(t0, theirs, src, DATA, dtype=np.float32)
        p.ch[0].drain(t0)                                    # blocks this kernel until t0 ran
        seen.append(pyhcomm.record.tasks()[-1].kind)

    in_kernel(p.devs[0], kernel)
    p.devs[0].synchronize()
    assert (ccl1.read(np.float32) == a + b).all()
    assert seen == ["WriteReduceWithNotify"]


def test_with_notify_is_atlas_350_only():
    p = Pair("Atlas 800T A2")
    t = p.thread(0)
    src = p.buffer(0, np.zeros(16, np.uint8))
    with pytest.raises(HcclNotSupportedError) as info:
        p.ch[0].write_with_notify(t, p.ch[0].peer_hccl_buffer()[:16], src, DATA)
    assert str(info.value) == "HcommWriteWithNotifyOnThread: not supported on Atlas 800T A2 (Atlas 350 only)"


def test_batch_mode_and_batch_transfer_inside_a_kernel_on_atlas_a3():
    p = Pair("Atlas A3", AICPU_TS, protocol=P.COMM_PROTOCOL_ROCE)    # A2 / A3 batch transfers: RoCE
    t0 = p.thread(0, AICPU_TS)
    data = np.arange(256, dtype=np.uint8)
    src = p.buffer(0, data)
    theirs = p.ch[0].peer_hccl_buffer()
    refused, kept = [], []

    def kernel():
        try:
            p.ch[0].write(t0, theirs[:64], src[:64])          # A2/A3 device side: batch mode only
        except HcclNotSupportedError as exc:
            refused.append(str(exc))
        with batch_mode("pythonic"):
            p.ch[0].write(t0, theirs[:128], src[:128])
            descs = [HcommBatchTransferDesc(transType=HcommTransferType.HCOMM_TRANSFER_TYPE_WRITE, dst=theirs.addr + 128,
                                            src=src.addr + 128, len=128)]
            p.ch[0].batch_transfer(t0, descs)
            kept.append(len([e for e in pyhcomm.record.tasks() if e.kind == "Write" and e.state != "queued"]))

    in_kernel(p.devs[0], kernel)
    p.devs[0].synchronize()
    assert refused == ["HcommWriteOnThread: on Atlas A3 device-side primitives must be issued between "
                       "HcommBatchModeStart and HcommBatchModeEnd"]
    assert kept == [0]                                       # nothing ran before the batch ended
    assert (p.comms[1].hccl_buffer()[:256].read() == data).all()


def test_batch_mode_drops_its_tasks_when_the_block_raises():
    p = Pair("Atlas 350", AICPU_TS)
    t0 = p.thread(0, AICPU_TS)
    src = p.buffer(0, np.full(64, 5, np.uint8))
    theirs = p.ch[0].peer_hccl_buffer()
    caught = []

    def kernel():
        try:
            with batch_mode("b"):
                p.ch[0].write(t0, theirs[:64], src)
                raise KeyError("stop")
        except KeyError as exc:
            caught.append(exc)
        with batch_mode("b"):                                 # the tag is free again
            pass

    in_kernel(p.devs[0], kernel)
    p.devs[0].synchronize()
    assert len(caught) == 1
    assert not p.comms[1].hccl_buffer()[:64].read().any()    # never launched
    assert [e.kind for e in pyhcomm.record.tasks() if e.kind == "Write"] == []


def test_thread_join_inside_a_kernel_on_atlas_350():
    pyhcomm.set_product("Atlas 350")
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        main, worker = comm.threads(AICPU_TS, 2, 1)
        src, dst = dev.malloc(64), dev.malloc(64)
        src.write(np.full(64, 3, np.uint8))
        joined = []

        def kernel():
            worker.local_copy(dst, src)
            worker.join(30)
            joined.append(pyhcomm.record.tasks()[-1].state)

        in_kernel(dev, kernel)
        dev.synchronize()
        assert joined == ["done"] and (dst.read() == 3).all()
        with pytest.raises(HcclNotSupportedError) as info:
            main.join()
        assert str(info.value) == "HcommThreadJoin: supported on the device side only (inside an AI CPU kernel)"


# -- NBI and thread-less notifies: Atlas 350 host, COMM_ENGINE_CPU RoCE ---------------------------------
def test_nbi_transfers_fences_and_threadless_notifies_on_atlas_350():
    p = Pair("Atlas 350", CPU, notify_num=2)
    assert p.ch[0].protocol == P.COMM_PROTOCOL_ROCE
    data = (np.arange(1024) * 5 % 256).astype(np.uint8)
    src, back = p.buffer(0, data), p.devs[0].malloc(1024)
    theirs = p.ch[0].peer_hccl_buffer()
    p.ch[0].write_nbi(theirs[:1024], src)
    p.ch[0].fence()
    assert (p.comms[1].hccl_buffer()[:1024].read() == data).all()
    p.ch[0].read_nbi(back, theirs[:1024])
    cpu = p.comms[0].thread(CPU, stream=p.devs[0].stream())
    p.ch[0].fence(cpu)
    cpu.fence()
    assert (back.read() == data).all()
    p.ch[0].write_nbi(theirs[2048:2112], src[:64], notify=DATA)
    p.ch[1].wait_now(DATA, 5)
    p.ch[0].record_now(ACK)
    p.ch[1].wait_now(ACK, 5)
    assert (p.comms[1].hccl_buffer()[2048:2112].read() == data[:64]).all()
    kinds = [e.kind for e in pyhcomm.record.events() if e.entry == "host" and "Nbi" in e.kind or e.kind == "Fence"]
    assert kinds == ["WriteNbi", "Fence", "ReadNbi", "Fence", "Fence", "WriteWithNotifyNbi"]


def test_nbi_is_not_supported_on_atlas_a2():
    p = Pair("Atlas 800T A2")
    src = p.buffer(0, np.zeros(16, np.uint8))
    with pytest.raises(HcclNotSupportedError) as info:
        p.ch[0].write_nbi(p.ch[0].peer_hccl_buffer()[:16], src)
    assert str(info.value) == ("HcommWriteNbi: non-blocking calls are supported on Atlas 350 only, from the host, "
                               "on COMM_ENGINE_CPU RoCE channels")


# -- the tier's layering ---------------------------------------------------------------------------------
def test_the_pythonic_tier_calls_the_raising_implementations_never_the_c_tier():
    import test_layers
    edges = [(me, target) for me, target, _line in test_layers.import_edges()
             if me.startswith("pyhcomm.pythonic")]
    assert edges, "the check must see the tier's imports"
    upward = [f"{me} -> {target}" for me, target in edges
              if ".".join(target.split(".")[:2]) in ("pyhcomm.capi", "pyhcomm.acl", "pyhcomm.spmd", "pyhcomm.verify",
                                                     "pyhcomm.timing", "pyhcomm.analysis")]
    assert upward == []


def test_from_pyhcomm_import_device_comm_still_works():
    ns = {}
    exec("from pyhcomm import Device, Comm, Channel, Thread, Buffer", ns)
    from pyhcomm import pythonic
    assert ns["Comm"] is pythonic.Comm and ns["Channel"] is pythonic.Channel
