"""Regression tests of the defects a hostile fuzzer found in the C and acl tiers (issue 8; round 2:
issue 31, the R2 sections), one or more per defect, in its numbering. Each asserts the code (or the documented ``TypeError``) and that
no byte changed that should not have. docs/errors.md states the rules they pin down."""
import array
import gc
import logging
import struct
import threading
import weakref

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (HcclChannelDescInit, HcclCommInitAll, HcclCommInitRootInfo, HcclEngineCtxCopy,
                     HcclEngineCtxCreate, HcclEngineCtxDestroy, HcclThreadAcquire, HcclThreadAcquireWithStream,
                     HcommBatchModeEnd, HcommBatchModeStart, HcommLocalCopyOnThread, HcommLocalReduceOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, acl)
from pyhcomm.sim import memory
from hcomm_testutil import D2D, D2H, H2D, KERNELS_PY, host_setup, malloc, pattern, read, run_threads, write

R = pyhcomm.HcclResult
E = pyhcomm.AclError
CPU_TS, AICPU_TS = pyhcomm.COMM_ENGINE_CPU_TS, pyhcomm.COMM_ENGINE_AICPU_TS
FP32, SUM = pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCOMM_REDUCE_SUM

pytestmark = pytest.mark.timeout(60)


def on_device(fn, device):
    """Run ``fn()`` inside an AI CPU kernel launched on ``device``; return what it returned."""
    assert acl.rt.set_device(device) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    out = []
    pyhcomm.Stream(stream, owned=False).launch(lambda: out.append(fn()))
    assert acl.rt.synchronize_device() == 0
    return out[0]


# -- 1. host registrations pin or refuse ------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: bytearray(64), lambda: array.array("B", bytes(64))],
                         ids=["bytearray", "array.array"])
def test_bytes_to_ptr_pins_its_object(make):
    comm, stream, thread = host_setup()
    buf = make()
    p = acl.util.bytes_to_ptr(buf)
    with pytest.raises(BufferError):   # it can no longer move
        buf.extend(bytes(1 << 16))
    d = malloc(64)
    write(d, pattern(64))
    assert acl.rt.memcpy(p, 64, d, 64, D2H) == 0
    assert bytes(buf) == pattern(64).tobytes()


def test_numpy_to_ptr_array_cannot_be_resized_while_registered():
    host_setup()
    arr = np.zeros(64, np.uint8)
    acl.util.numpy_to_ptr(arr)
    with pytest.raises(ValueError):
        arr.resize(1 << 20, refcheck=False)


def test_a_numpy_view_of_a_registration_keeps_the_memory_alive():
    host_setup()
    arr = np.arange(64, dtype=np.uint8)
    alive = weakref.ref(arr)
    view = acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(arr), (64,), np.uint8)
    del arr
    gc.collect()
    assert alive() is not None
    assert view.tolist() == list(range(64))
    del view
    gc.collect()
    assert alive() is None


# -- 2. read-only host memory is never written -------------------------------------------------------------
def test_memset_refuses_read_only_host_memory():
    comm, stream, thread = host_setup()
    data = b"constant bytes that must not change" + bytes(29)
    p = acl.util.bytes_to_ptr(data)
    assert acl.rt.memset(p, 64, 0x55, 64) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.memset_async(p, 64, 0x55, 64, stream) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.synchronize_stream(stream) == 0
    assert data.startswith(b"constant bytes")
    view = acl.util.ptr_to_numpy(p, (64,), np.uint8)
    assert not view.flags.writeable


# -- 3. device ownership of threads, wherever the call is issued --------------------------------------------
def _two_ranks():
    pyhcomm.set_product("Atlas 800T A2")
    assert acl.init() == 0
    ret, comms = HcclCommInitAll([0, 1])
    assert ret == 0
    ret, (t0, u0) = HcclThreadAcquire(comms[0], AICPU_TS, 2, 1)
    assert ret == 0
    assert acl.rt.set_device(0) == 0
    a, b = malloc(64), malloc(64)
    write(a, pattern(64, 1))
    write(b, pattern(64, 2))
    return comms, t0, u0, a, b


def test_a_kernel_cannot_issue_on_a_thread_of_another_device():
    comms, t0, u0, a, b = _two_ranks()

    def kernel():
        assert HcommBatchModeStart("k") == 0
        codes = [HcommLocalCopyOnThread(t0, a, b, 64),
                 HcommLocalReduceOnThread(t0, a, b, 16, FP32, SUM),
                 HcommThreadNotifyRecordOnThread(t0, u0, 0),
                 HcommThreadNotifyWaitOnThread(u0, 0, 1)]
        assert HcommBatchModeEnd("k") == 0
        return codes

    assert on_device(kernel, 1) == [R.HCCL_E_PARA] * 4
    assert acl.rt.set_device(0) == 0
    assert (read(a, 64) == pattern(64, 1)).all()
    assert on_device(kernel, 0) == [R.HCCL_SUCCESS] * 4  # its own device's kernel may


@pytest.mark.parametrize("product", ["Atlas A3", "Atlas 350"])
def test_a_kernel_cannot_use_a_channel_or_thread_of_another_device(product):
    """Channel writes, reads, reduces, notifies and fences from a kernel on device 1 with rank 0's
    thread and channel end: refused, nothing lands; the same calls from device 0's kernel work."""
    from hcomm_testutil import two_rank_channels
    pyhcomm.set_product(product)
    protocol = pyhcomm.COMM_PROTOCOL_UBC_TP if product == "Atlas 350" else pyhcomm.COMM_PROTOCOL_HCCS
    comms, (ch0, _ch1), remote = two_rank_channels(pyhcomm.COMM_ENGINE_AICPU_TS, protocol, 2)
    ret, (t0,) = HcclThreadAcquire(comms[0], AICPU_TS, 1, 1)
    assert ret == 0
    a = malloc(64)
    write(a, pattern(64, 1))
    assert acl.rt.set_device(1) == 0
    write(remote, pattern(64, 2))

    def kernel():
        assert HcommBatchModeStart("k") == 0
        codes = [pyhcomm.HcommWriteOnThread(t0, ch0, remote, a, 64),
                 pyhcomm.HcommReadOnThread(t0, ch0, a, remote, 64),
                 pyhcomm.HcommWriteReduceOnThread(t0, ch0, remote, a, 16, FP32, SUM),
                 pyhcomm.HcommChannelNotifyRecordOnThread(t0, ch0, 0),
                 pyhcomm.HcommChannelFenceOnThread(t0, ch0)]
        assert HcommBatchModeEnd("k") == 0
        return codes

    assert on_device(kernel, 1) == [R.HCCL_E_PARA] * 5
    assert acl.rt.set_device(1) == 0
    assert (read(remote, 64) == pattern(64, 2)).all()
    assert acl.rt.set_device(0) == 0
    assert (read(a, 64) == pattern(64, 1)).all()
    assert on_device(kernel, 0) == [R.HCCL_SUCCESS] * 5     # its own device's kernel may


# -- 4. a batch cannot outlive the streams and threads of its tasks -------------------------------------------
def test_batch_end_after_its_stream_was_destroyed_launches_nothing():
    comm, stream, thread = host_setup()
    other, _ = acl.rt.create_stream()
    ret, t2 = HcclThreadAcquireWithStream(comm, CPU_TS, other, 1)
    a, b = malloc(64, 1), malloc(64, 2)
    assert HcommBatchModeStart("b") == 0
    assert HcommLocalCopyOnThread(thread, a, b, 32) == 0
    assert HcommLocalCopyOnThread(t2, a + 32, b, 32) == 0
    assert acl.rt.destroy_stream(other) == 0
    assert HcommBatchModeEnd("b") == R.HCCL_E_NOT_FOUND
    assert HcommBatchModeStart("next") == 0 and HcommBatchModeEnd("next") == 0  # the batch is closed
    assert acl.rt.synchronize_device() == 0
    assert (read(a, 64) == 1).all()


def test_a_task_reaching_a_stream_destroyed_meanwhile_is_skipped_never_run(monkeypatch):
    """Another host thread destroys the stream between End's check and its launch."""
    from pyhcomm.hcomm import enqueue as launch
    comm, stream, thread = host_setup()
    other, _ = acl.rt.create_stream()
    ret, t2 = HcclThreadAcquireWithStream(comm, CPU_TS, other, 1)
    a, b = malloc(64, 1), malloc(64, 2)
    assert HcommBatchModeStart("b") == 0
    assert HcommLocalCopyOnThread(t2, a, b, 64) == 0
    real = launch._dead_owner

    def checked_then_destroyed(tasks):
        why = real(tasks)
        assert acl.rt.destroy_stream(other) == 0
        return why

    monkeypatch.setattr(launch, "_dead_owner", checked_then_destroyed)
    assert HcommBatchModeEnd("b") == 0
    c, d = malloc(64, 3), malloc(64, 4)
    assert HcommLocalCopyOnThread(thread, c, d, 64) == 0      # work elsewhere: the scheduler runs
    assert acl.rt.synchronize_stream(stream) == 0             # every stream it can
    assert (read(c, 64) == 4).all()
    assert (read(a, 64) == 1).all()
    assert [t.state for t in pyhcomm.record.tasks() if t.kind == "LocalCopy"] == ["skipped", "done"]


def test_batch_end_after_its_communicator_was_destroyed_launches_nothing():
    comm, stream, thread = host_setup()
    a, b = malloc(64, 1), malloc(64, 2)
    assert HcommBatchModeStart("b") == 0
    assert HcommLocalCopyOnThread(thread, a, b, 64) == 0
    assert pyhcomm.HcclCommDestroy(comm) == 0
    assert HcommBatchModeEnd("b") == R.HCCL_E_NOT_FOUND
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(a, 64) == 1).all()


# -- 5, 15, 16. pointers and handles are ints: a numpy integer is one, a float is a TypeError ----------------
def test_float_pointers_and_handles_are_type_errors_not_value_errors():
    comm, stream, thread = host_setup()
    d = malloc(64)
    h, _ = acl.rt.malloc_host(64)
    calls = [lambda: acl.rt.free(float(d)), lambda: acl.rt.free_host(1.5),
             lambda: acl.rt.memcpy(1.5, 64, d, 64, D2D), lambda: acl.rt.memcpy_async(float(d), 64, d, 64, D2D, stream),
             lambda: acl.rt.memset(2.5, 64, 0, 64), lambda: acl.rt.memset_async(float(d), 64, 0, 64, stream),
             lambda: HcclThreadAcquireWithStream(comm, CPU_TS, 1.5, 1),
             lambda: HcommLocalCopyOnThread(float(thread), d, d, 8),
             lambda: pyhcomm.HcclAllReduce(1.5, d, 4, FP32, SUM, comm, stream),
             lambda: pyhcomm.HcclBroadcast(d, 4, FP32, 0, comm, 2.5)]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    assert acl.rt.synchronize_stream(stream) == 0  # nothing reached the stream (16)


@pytest.mark.parametrize("bad", ["0x10", b"\x01", np.float64(64.0), [1], object()],
                         ids=["str", "bytes", "numpy float", "list", "object"])
def test_pointers_and_handles_of_any_other_type_are_type_errors(bad):
    """Defect 5 and 15: whatever the object, its message is built without ``:x`` on it and it
    never reaches ctypes; the collectives as well."""
    comm, stream, thread = host_setup()
    d = malloc(256)
    calls = [lambda: acl.rt.free(bad), lambda: acl.rt.free_host(bad),
             lambda: acl.rt.memcpy(bad, 64, d, 64, D2D), lambda: acl.rt.memcpy(d, 64, bad, 64, D2D),
             lambda: acl.rt.memcpy_async(d, 64, bad, 64, D2D, stream), lambda: acl.rt.memcpy_async(d, 64, d, 64, D2D, bad),
             lambda: acl.rt.memset(bad, 64, 0, 64), lambda: acl.rt.memset_async(d, 64, 0, 64, bad),
             lambda: HcclThreadAcquireWithStream(comm, CPU_TS, bad, 1),
             lambda: pyhcomm.HcclAllReduce(bad, d, 4, FP32, SUM, comm, stream),
             lambda: pyhcomm.HcclBroadcast(d, 4, FP32, 0, comm, bad),
             lambda: pyhcomm.HcclAllGather(d, bad, 4, FP32, comm, stream),
             lambda: pyhcomm.HcclReduceScatter(d, bad, 4, FP32, SUM, comm, stream),
             lambda: pyhcomm.HcclReduce(d, bad, 4, FP32, SUM, 0, comm, stream),
             lambda: pyhcomm.HcclScatter(d, bad, 4, FP32, 0, comm, stream),
             lambda: pyhcomm.HcclAlltoAll(bad, 4, FP32, d, 4, FP32, comm, stream),
             lambda: pyhcomm.HcclBarrier(comm, bad)]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    assert acl.rt.synchronize_stream(stream) == 0


def test_numpy_integer_pointers_and_counts_are_accepted():
    comm, stream, thread = host_setup()
    d = malloc(64)
    src = pattern(64)
    out = np.zeros(64, np.uint8)
    i64 = np.int64
    assert acl.rt.memset(np.uint64(d), i64(64), i64(7), i64(64)) == 0
    assert (read(d, 64) == 7).all()
    assert acl.rt.memcpy(i64(d), 64, i64(acl.util.numpy_to_ptr(src)), np.int32(64), H2D) == 0
    assert HcommLocalCopyOnThread(i64(thread), i64(d), i64(d), i64(64)) == 0
    assert acl.rt.memcpy_async(i64(acl.util.numpy_to_ptr(out)), 64, i64(d), 64, D2H, i64(stream)) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (out == src).all()


def test_numpy_integer_ranks_counts_and_enums_are_accepted_bools_and_floats_are_not():
    """Every scalar integer argument goes through one conversion (docs/errors.md §1)."""
    comm, stream, thread = host_setup()
    d = malloc(64, 3)
    i64 = np.int64
    assert pyhcomm.HcclBroadcast(d, i64(4), i64(FP32), i64(0), comm, stream) == 0
    assert pyhcomm.HcclAllReduce(d, d, np.uint32(4), FP32, SUM, comm, stream) == 0
    ret, threads = HcclThreadAcquire(comm, CPU_TS, i64(1), np.int32(1))
    assert ret == 0 and len(threads) == 1
    ret, info = pyhcomm.HcclThreadResGetInfo(comm, thread, i64(pyhcomm.THREAD_RES_TYPE_STREAM), i64(8))
    assert (ret, info) == (0, stream)
    assert acl.rt.synchronize_stream(stream) == 0
    for call in (lambda: pyhcomm.HcclBroadcast(d, 4, FP32, True, comm, stream),
                 lambda: pyhcomm.HcclBroadcast(d, 4, FP32, 0.0, comm, stream),
                 lambda: pyhcomm.HcclAllReduce(d, d, 4.0, FP32, SUM, comm, stream),
                 lambda: HcclThreadAcquire(comm, CPU_TS, 1.0, 1),
                 lambda: HcclThreadAcquire(comm, CPU_TS, 1, True),
                 lambda: pyhcomm.HcclThreadResGetInfo(comm, thread, pyhcomm.THREAD_RES_TYPE_STREAM, 8.0)):
        with pytest.raises(TypeError):
            call()


# -- 6. root info: whatever comes in gets a code --------------------------------------------------------------
@pytest.mark.parametrize("root", [-1, 2 ** 62, 7, 1.5, "root", [1, 2], object()])
def test_root_info_of_the_wrong_kind_is_para(root):
    acl.init()
    acl.rt.set_device(0)
    assert HcclCommInitRootInfo(1, root, 0) == (R.HCCL_E_PARA, 0)


def test_root_info_null_is_ptr():
    acl.init()
    acl.rt.set_device(0)
    assert HcclCommInitRootInfo(1, None, 0) == (R.HCCL_E_PTR, 0)
    assert HcclCommInitRootInfo(1, 0, 0) == (R.HCCL_E_PTR, 0)


# -- 7, 8. frees racing a synchronous copy ------------------------------------------------------------------
def test_free_between_the_checks_and_the_copy_of_memcpy_is_harmless(monkeypatch):
    host_setup()
    dst, src = malloc(64), malloc(64)
    write(src, pattern(64))
    real = memory.resolve

    def resolve_then_free_dst(addr, n, space=memory.DEVICE, device=None, writable=False):
        alloc = real(addr, n, space, device, writable)
        if addr == src:  # dst was checked: another host thread frees it now
            assert acl.rt.free(dst) == 0
        return alloc

    monkeypatch.setattr(memory, "resolve", resolve_then_free_dst)
    assert acl.rt.memcpy(dst, 64, src, 64, D2D) == 0   # the copy lands in memory being released
    monkeypatch.setattr(memory, "resolve", real)
    assert acl.rt.memcpy(dst, 64, src, 64, D2D) == E.ACL_ERROR_RT_PARAM_INVALID


@pytest.mark.threads
def test_engine_ctx_copy_and_destroy_are_serialised(monkeypatch):
    from pyhcomm.hcomm.resources import engine_ctx
    comm, stream, thread = host_setup()
    ret, ctx = HcclEngineCtxCreate(comm, "t", AICPU_TS, 64)
    assert ret == 0
    real = engine_ctx._source_bytes
    done = []

    def source_then_destroy(src, size, api):
        # another host thread destroys the context now: it must wait for this copy
        t = threading.Thread(target=lambda: done.append(HcclEngineCtxDestroy(comm, "t", AICPU_TS)))
        t.start()
        t.join(0.2)
        assert not done  # blocked behind the copy
        source_then_destroy.thread = t
        return real(src, size, api)

    monkeypatch.setattr(engine_ctx, "_source_bytes", source_then_destroy)
    assert HcclEngineCtxCopy(comm, AICPU_TS, "t", b"x" * 64, 64, 0) == 0
    source_then_destroy.thread.join(10)
    assert done == [0]
    monkeypatch.setattr(engine_ctx, "_source_bytes", real)
    assert HcclEngineCtxCopy(comm, AICPU_TS, "t", b"x" * 64, 64, 0) == R.HCCL_E_NOT_FOUND


# -- 9. a collective is not kept by the caller's open batch ----------------------------------------------
def test_collective_issued_inside_an_open_batch_completes_with_its_stream():
    comm, stream, thread = host_setup()
    src, dst = malloc(64), malloc(64, 0)
    values = np.arange(16, dtype=np.float32)
    write(src, values.view(np.uint8))
    a, b = malloc(64, 1), malloc(64, 2)
    assert HcommBatchModeStart("user") == 0
    assert HcommLocalCopyOnThread(thread, a, b, 64) == 0
    assert pyhcomm.HcclAllReduce(src, dst, 16, FP32, SUM, comm, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(dst, 64).view(np.float32) == values).all()
    assert (read(a, 64) == 1).all()                      # the batch still keeps its own copy
    assert HcommBatchModeEnd("user") == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(a, 64) == 2).all()


# -- 10. "no notify" is never a caller's value ---------------------------------------------------------------
def _nbi_pair():
    """Atlas 350, two ranks joined by host CPU RoCE channels: (comms, channel ends, a 64-byte
    source on device 0, rank 1's HCCL buffer)."""
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    ret, comms = HcclCommInitAll([0, 1])
    assert ret == 0
    ends = []
    for r in (0, 1):
        d = pyhcomm.HcclChannelDesc()
        assert HcclChannelDescInit(d) == 0
        d.remoteRank, d.channelProtocol, d.notifyNum = 1 - r, pyhcomm.COMM_PROTOCOL_ROCE, 1
        ret, chans = pyhcomm.HcclChannelAcquire(comms[r], pyhcomm.COMM_ENGINE_CPU, [d])
        assert ret == 0
        ends.append(chans[0])
    assert acl.rt.set_device(0) == 0
    _, peer, _ = pyhcomm.HcclGetHcclBuffer(comms[1])
    return comms, ends, malloc(64), peer


def test_write_with_notify_index_none_is_a_type_error():
    from pyhcomm.hcomm import channel_ops
    comms, ends, src, peer = _nbi_pair()
    with pytest.raises(TypeError):
        pyhcomm.HcommWriteWithNotifyNbi(ends[0], peer, src, 64, None)
    assert pyhcomm.HcommWriteWithNotifyNbi(ends[0], peer, src, 64, 0) == 0
    assert channel_ops.NO_NOTIFY is not None


def test_notify_wait_timeout_none_is_a_type_error():
    comm, stream, thread = host_setup()
    with pytest.raises(TypeError):
        HcommThreadNotifyWaitOnThread(thread, 0, None)
    assert acl.rt.synchronize_stream(stream) == 0


# -- 11, 12. descriptors and configurations of the wrong shape ---------------------------------------------
@pytest.mark.parametrize("descs", ["abc", 5, [1, 2], [pyhcomm.HcclChannelDesc(), "x"]])
def test_channel_desc_init_of_non_descriptors_is_para(descs):
    assert HcclChannelDescInit(descs) == R.HCCL_E_PARA


def test_channel_desc_init_checks_every_element_before_changing_any():
    good = pyhcomm.HcclChannelDesc()
    assert HcclChannelDescInit([good, "x"]) == R.HCCL_E_PARA
    assert good.header.magicWord == 0


@pytest.mark.parametrize("cfg", [{"attrs": [1]}, {"attrs": ["moduleId"]}, {"attrs": 3},
                                 {"numAttrs": 1, "attrs": [None]}])
def test_malloc_with_cfg_attrs_of_the_wrong_type_are_type_errors(cfg):
    host_setup()
    with pytest.raises(TypeError):
        acl.rt.malloc_with_cfg(64, 0, cfg)


# -- 13. collectives check their stream even when nothing is to be sent --------------------------------------
def test_collectives_refuse_a_dead_stream_with_nothing_to_send():
    comm, stream, thread = host_setup()
    d = malloc(64)
    dead, _ = acl.rt.create_stream()
    assert acl.rt.destroy_stream(dead) == 0
    assert pyhcomm.HcclAllReduce(d, d, 0, FP32, SUM, comm, dead) == R.HCCL_E_PARA
    assert pyhcomm.HcclBroadcast(d, 4, FP32, 0, comm, dead) == R.HCCL_E_PARA      # one rank: nothing to do
    assert pyhcomm.HcclBroadcast(d, 4, FP32, 0, comm, 0x5710_DEAD) == R.HCCL_E_PARA
    for s in (dead, 0x5710_DEAD):   # every collective, with nothing to send
        assert pyhcomm.HcclAllGather(d, d, 0, FP32, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclReduceScatter(d, d, 0, FP32, SUM, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclReduce(d, d, 0, FP32, SUM, 0, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclScatter(d, d, 0, FP32, 0, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclAlltoAll(d, 0, FP32, d, 0, FP32, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclAllGatherV(d, 0, d, [0], [0], FP32, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclReduceScatterV(d, [0], [0], d, 0, FP32, SUM, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclAlltoAllV(d, [0], [0], FP32, d, [0], [0], FP32, comm, s) == R.HCCL_E_PARA
        assert pyhcomm.HcclBarrier(comm, s) == R.HCCL_E_PARA
    assert pyhcomm.HcclBroadcast(d, 4, FP32, 0, comm, stream) == 0
    assert pyhcomm.HcclAllGather(d, d, 0, FP32, comm, stream) == 0


# -- 14. a zero-length range at one past the end gets one answer ----------------------------------------------
def test_zero_length_copy_at_the_end_of_an_allocation_is_para_always():
    comm, stream, thread = host_setup()
    a, b = malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(thread, a + 64, b, 0) == R.HCCL_E_PARA     # fresh thread
    assert HcommLocalCopyOnThread(thread, a, b, 64) == 0                       # the thread used a and b
    assert HcommLocalCopyOnThread(thread, a + 64, b, 0) == R.HCCL_E_PARA
    assert HcommLocalCopyOnThread(thread, a, b + 64, 0) == R.HCCL_E_PARA
    assert HcommLocalCopyOnThread(thread, a + 63, b, 0) == 0
    assert HcommLocalReduceOnThread(thread, a + 64, b, 0, FP32, SUM) == R.HCCL_E_PARA
    assert HcommLocalReduceOnThread(thread, a, b, 16, FP32, SUM) == 0
    assert HcommLocalReduceOnThread(thread, a + 64, b, 0, FP32, SUM) == R.HCCL_E_PARA
    assert HcommLocalReduceOnThread(thread, a, b + 64, 0, FP32, SUM) == R.HCCL_E_PARA
    assert acl.rt.memset(a + 64, 0, 0, 0) == E.ACL_ERROR_RT_PARAM_INVALID      # the acl tier agrees
    assert acl.rt.synchronize_stream(stream) == 0


# == Round 2 (issue 31), in its numbering ====================================================================

# -- R2.1. op=None is a wrong type for the reducing collectives, never "no reduction" ---------------------------
@pytest.mark.parametrize("nranks", [1, 2])
def test_reducing_collectives_refuse_op_none_before_issuing_anything(nranks):
    assert acl.init() == 0
    ret, comms = HcclCommInitAll(list(range(nranks)))
    assert ret == 0
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    send, recv = malloc(64 * nranks), malloc(64 * nranks)
    write(send, pattern(64 * nranks))
    write(recv, np.zeros(64 * nranks, np.uint8))
    calls = {"HcclAllReduce": lambda op: pyhcomm.HcclAllReduce(send, recv, 16, FP32, op, comms[0], stream),
             "HcclReduceScatter": lambda op: pyhcomm.HcclReduceScatter(send, recv, 16, FP32, op, comms[0], stream),
             "HcclReduce": lambda op: pyhcomm.HcclReduce(send, recv, 16, FP32, op, 0, comms[0], stream),
             "HcclReduceScatterV": lambda op: pyhcomm.HcclReduceScatterV(
                 send, [16] * nranks, [16 * r for r in range(nranks)], recv, 16, FP32, op, comms[0], stream)}
    for api, fn in calls.items():
        with pytest.raises(TypeError, match=f"{api}: op must be an int, not NoneType"):
            fn(None)
    st = pyhcomm.current_sim().handles.streams.get(stream)
    assert not st.queue and st.idle                         # nothing was issued
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(recv, 64 * nranks) == 0).all()
    if nranks == 1:                                         # a numpy op is the op it holds
        assert calls["HcclAllReduce"](np.int32(SUM)) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        assert (read(recv, 64) == pattern(64)).all()


# -- R2.3. numpy numbers are the numbers they hold, for float arguments too -------------------------------------
def test_float_timeouts_take_numpy_integers_and_floats():
    comm, stream, thread = host_setup()
    seen = []

    def body():
        for value in (np.int64(2), np.uint8(3), np.float32(4.5), np.float64(5.0), 6):
            assert pyhcomm.HcommSetNotifyWaitTimeOut(value) == 0
            pyhcomm.record.clear()
            assert HcommThreadNotifyRecordOnThread(thread, thread, 0) == 0
            assert pyhcomm.HcommThreadNotifyWaitOnThreadWithDefaultTimeout(thread, 0) == 0
            seen.append(pyhcomm.record.tasks(kind="ThreadNotifyWait")[-1].timeout)
        for value in (None, True, np.bool_(True), "2", np.complex64(1)):
            with pytest.raises(TypeError, match="HcommSetNotifyWaitTimeOut: timeOut must be a number of seconds"):
                pyhcomm.HcommSetNotifyWaitTimeOut(value)
        assert pyhcomm.HcommSetNotifyWaitTimeOut(np.float64("nan")) == R.HCCL_E_PARA
        assert pyhcomm.HcommSetNotifyWaitTimeOut(np.uint64(1 << 40)) == R.HCCL_E_PARA

    run_threads([body])                                     # (the setting is per OS thread)
    assert seen == [2, 3, 4, 5, 6]
    assert acl.rt.synchronize_stream(stream) == 0


def test_thread_res_acquire_timeout_takes_numpy_numbers_inside_a_kernel():
    host_setup()

    def kernel():
        out = [pyhcomm.HcommThreadResAcquireTimeOut(v) for v in (np.int64(2), np.float32(1.5), 3)]
        try:
            pyhcomm.HcommThreadResAcquireTimeOut(None)
        except TypeError as exc:
            out.append(str(exc))
        return out

    assert on_device(kernel, 0) == [0, 0, 0, "HcommThreadResAcquireTimeOut: timeOut must be a number of seconds, "
                                               "not NoneType"]


def test_numpy_notify_counts_of_hcomm_thread_alloc_count_towards_the_limit():
    """The per-communicator notify limit (65536) counts numpy counts as the numbers they hold."""
    host_setup()
    ret, first = pyhcomm.HcommThreadAlloc(AICPU_TS, [64] * 1000)          # 64000 notifies
    assert ret == 0
    assert pyhcomm.HcommThreadAlloc(AICPU_TS, [np.int64(64)] * 100)[0] == R.HCCL_E_PARA   # 6400 more: too many
    assert pyhcomm.HcommThreadAlloc(AICPU_TS, [np.uint8(1)] * 100)[0] == 0                # 100 more fit
    assert pyhcomm.HcommThreadFree(first) == 0


def test_numpy_integers_in_the_remaining_integer_arguments_and_lists():
    """numBlocks / argsSize of aclrtLaunchKernelWithHostArgs and its place holders, the ids of
    launch attributes and load options, the ranks of HcclCommWorkingDevNicSet: a numpy integer is
    the number it holds, a bool a wrong type."""
    comm, stream, thread = host_setup()
    source = b"seen = []\n\n\ndef record(data):\n    seen.append(data)\n"
    binary, _ = acl.rt.binary_load(acl.rt.create_binary(source, len(source)))
    func, _ = acl.rt.binary_get_function(binary, "record")
    blob = struct.pack("<Q", 0) + b"payload!"
    assert acl.rt.launch_kernel_with_host_args(func, np.uint32(1), stream, [], blob, np.int64(16), [], 0) == 0
    assert acl.rt.launch_kernel_with_host_args(func, 1, stream, [], blob, 16,
                                               [{"addrOffset": np.int64(0), "dataOffset": np.uint8(8)}], 1) == 0
    with pytest.raises(TypeError, match="aclrtLaunchKernelWithHostArgs: numBlocks must be an int, not bool"):
        acl.rt.launch_kernel_with_host_args(func, True, stream, [], blob, 16, [], 0)
    assert acl.rt.synchronize_stream(stream) == 0
    seen = pyhcomm.current_sim().handles.kernels.get(binary).module.seen
    assert len(seen) == 2 and seen[0] == blob and seen[1][8:] == b"payload!" and seen[1][:8] != bytes(8)
    schem_mode = np.int32(pyhcomm.aclrtLaunchKernelAttrId.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE)
    args, _ = acl.rt.kernel_args_init(func)
    assert acl.rt.kernel_args_append(args, b"x")[1] == 0 and acl.rt.kernel_args_finalize(args) == 0
    assert acl.rt.launch_kernel_with_config(func, 1, stream, [{"id": schem_mode, "value": 0}], args) == 0
    lazy = np.uint8(pyhcomm.aclrtBinaryLoadOptionType.ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD)
    assert acl.rt.binary_load_from_file(KERNELS_PY, [{"type": lazy, "value": 1}])[1] == 0
    assert acl.rt.synchronize_stream(stream) == 0 and seen[2] == b"x"
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, [np.int64(0)], [True]) == 0
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, [np.int64(1)], [True]) == R.HCCL_E_PARA   # not a rank


def test_counts_compared_with_an_answer_are_integers_first():
    """descNum of HcommEndpointGetDescs / HcclRankGraphGetEndpointDesc, placeHolderNum of
    aclrtLaunchKernelWithHostArgs: a float or a bool equal to the answer is a wrong type, not it."""
    comm, stream, thread = host_setup()
    _, n = pyhcomm.HcommEndpointGetDescNum(0)
    assert pyhcomm.HcommEndpointGetDescs(0, np.uint16(n))[0] == 0
    with pytest.raises(TypeError, match="HcommEndpointGetDescs: descNum must be an int, not float"):
        pyhcomm.HcommEndpointGetDescs(0, float(n))
    _, m = pyhcomm.HcclRankGraphGetEndpointNum(comm, 0, 0)
    assert pyhcomm.HcclRankGraphGetEndpointDesc(comm, 0, 0, np.int64(m))[0] == 0
    with pytest.raises(TypeError, match="HcclRankGraphGetEndpointDesc: descNum must be an int, not float64"):
        pyhcomm.HcclRankGraphGetEndpointDesc(comm, 0, 0, np.float64(m))
    binary, _ = acl.rt.binary_load_from_file(KERNELS_PY)
    func, _ = acl.rt.binary_get_function(binary, "record_kernel")
    with pytest.raises(TypeError, match="aclrtLaunchKernelWithHostArgs: placeHolderNum must be an int, not bool"):
        acl.rt.launch_kernel_with_host_args(func, 1, stream, [], bytes(8), 8, [], False)
    assert acl.rt.synchronize_stream(stream) == 0                    # nothing was launched


def test_nbi_len_and_task_cache_sizes_and_sub_comm_ranks_take_numpy_integers():
    comms, ends, src, peer = _nbi_pair()
    assert pyhcomm.HcommWriteNbi(ends[0], peer, src, 0) == R.HCCL_E_PARA
    assert pyhcomm.HcommWriteNbi(ends[0], peer, src, np.uint64(0)) == R.HCCL_E_PARA     # as 0: nothing posted
    assert pyhcomm.HcommWriteNbi(ends[0], peer, src, np.int16(64)) == 0

    def cached():
        assert pyhcomm.HcommAicpuTsTaskCacheLookup("t") == (0, False)
        return (pyhcomm.HcommAicpuTsTaskCacheStart("t", [np.uint64(src)], [np.int32(64)]),
                pyhcomm.HcommAicpuTsTaskCacheEnd("t"))

    assert on_device(cached, 0) == (0, 0)
    ret, parent, sub = pyhcomm.HcclCreateSubCommConfig(comms[0], [np.int64(0)], np.uint8(5), np.int8(0), None)
    assert ret == 0 and sub


# -- R2.2. a kernel blocked for ever fails its wait (and ends); a timed wait is progress --------------------------
def _two_kernels_waiting_for_each_other(wait_a, wait_b):
    """Atlas 350: kernel A on thread a's stream runs ``wait_a(b)``, kernel B on thread b's stream
    ``wait_b(a)``: each waits for the stream the other runs on. Returns (what each returned, in the
    order they returned; the host's first synchronize; its second)."""
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    ret, (comm,) = HcclCommInitAll([0])
    _, (a, b) = HcclThreadAcquire(comm, AICPU_TS, 2, 1)
    out = []
    for me, other, wait in ((a, b, wait_a), (b, a, wait_b)):
        _, stream = pyhcomm.HcclThreadResGetInfo(comm, me, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
        pyhcomm.Stream(stream, owned=False).launch(lambda w=wait, o=other, n="AB"[me == b]: out.append((n, w(o))))
    first = acl.rt.synchronize_device()
    return out, first, acl.rt.synchronize_device()


def test_kernels_joining_each_other_fail_one_join_and_both_end():
    out, first, second = _two_kernels_waiting_for_each_other(lambda t: pyhcomm.HcommThreadJoin(t, 0),
                                                             lambda t: pyhcomm.HcommThreadJoin(t, 0))
    assert (first, second) == (0, 0)                   # the first synchronize already returns
    assert sorted(code for _, code in out) == [R.HCCL_SUCCESS, R.HCCL_E_TIMEOUT]
    assert out[0][1] == R.HCCL_E_TIMEOUT                # the failed wait ended its kernel, then the other joined


def test_a_timed_join_in_a_kernel_is_waited_for_not_a_hang(caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        out, first, second = _two_kernels_waiting_for_each_other(lambda t: pyhcomm.HcommThreadJoin(t, 1),
                                                                 lambda t: pyhcomm.HcommThreadJoin(t, 0))
    assert (first, second) == (0, 0)
    assert out == [("A", R.HCCL_E_TIMEOUT), ("B", R.HCCL_SUCCESS)]   # A's 1 s expired: B's join then completed
    assert "was not idle after 1 s (0 task(s) queued, a kernel running on its stream)" in caplog.text
    assert "can never be idle" not in caplog.text


def test_kernels_draining_each_other_fail_one_drain_and_both_end():
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    ret, comms = HcclCommInitAll([0, 1])
    ends = []
    for r in (0, 1):
        d = pyhcomm.HcclChannelDesc()
        assert HcclChannelDescInit(d) == 0
        d.remoteRank, d.channelProtocol, d.notifyNum = 1 - r, pyhcomm.COMM_PROTOCOL_UBC_TP, 1
        ret, chans = pyhcomm.HcclChannelAcquire(comms[r], AICPU_TS, [d])
        assert ret == 0
        ends.append(chans[0])
    assert acl.rt.set_device(0) == 0
    _, (a, b) = HcclThreadAcquire(comms[0], AICPU_TS, 2, 1)
    out = []
    for me, other in ((a, b), (b, a)):
        _, stream = pyhcomm.HcclThreadResGetInfo(comms[0], me, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
        pyhcomm.Stream(stream, owned=False).launch(
            lambda o=other: out.append(pyhcomm.HcommChannelDrainOnThread(o, ends[0])))
    assert acl.rt.synchronize_device() == 0
    assert out == [R.HCCL_E_TIMEOUT, R.HCCL_SUCCESS]


# -- R2.4. host-only runtime calls inside a kernel are refused; synchronize_device leaves no stream busy ---------------
FEATURE = E.ACL_ERROR_RT_FEATURE_NOT_SUPPORT


def test_host_only_runtime_calls_inside_a_kernel_are_refused_and_change_nothing():
    comm, stream, thread = host_setup()
    other, _ = acl.rt.create_stream()
    d = malloc(64, fill=0x11)
    n, _ = acl.rt.create_notify(0)
    binary, _ = acl.rt.binary_load_from_file(KERNELS_PY)
    func, _ = acl.rt.binary_get_function(binary, "record_kernel")
    args, _ = acl.rt.kernel_args_init(func)
    ran = []
    assert acl.rt.kernel_args_append(args, ran)[1] == 0
    assert acl.rt.kernel_args_append(args, "launched")[1] == 0
    assert acl.rt.kernel_args_finalize(args) == 0

    def kernel():
        codes = [acl.rt.create_stream()[1], acl.rt.destroy_stream(stream), acl.rt.destroy_stream(other),
                 acl.rt.synchronize_stream(stream), acl.rt.synchronize_stream_with_timeout(stream, 1000),
                 acl.rt.synchronize_stream(other), acl.rt.synchronize_device(),
                 acl.rt.synchronize_device_with_timeout(1000),
                 acl.rt.memset_async(d, 64, 0x22, 64, other), acl.rt.memcpy_async(d, 64, d + 32, 32, D2D, other),
                 acl.rt.malloc(64, 0)[1], acl.rt.free(d), acl.rt.malloc_host(64)[1],
                 acl.rt.set_device(0), acl.rt.reset_device(0), acl.rt.create_notify(0)[1], acl.rt.destroy_notify(n),
                 acl.rt.record_notify(n, other), acl.rt.wait_and_reset_notify(n, other, 1),
                 acl.rt.binary_load_from_file(KERNELS_PY)[1], acl.rt.binary_get_function(binary, "x")[1],
                 acl.rt.kernel_args_init(func)[1], acl.rt.launch_kernel_with_config(func, 1, other, None, args),
                 acl.rt.binary_unload(binary), acl.init(), acl.finalize()]
        for call in (lambda: pyhcomm.Stream(other, owned=False).launch(ran.append, "pythonic"),
                     lambda: pyhcomm.Stream(other, owned=False).synchronize(), lambda: pyhcomm.Device(0)):
            try:
                call()
            except pyhcomm.HcclError as exc:
                codes.append(exc.code)
        # the kernel's own memory accesses and the getters are no host calls
        codes += [acl.rt.memset(d, 8, 0x33, 8), acl.rt.get_device()[1], acl.rt.get_device_count()[1]]
        return codes

    codes = on_device(kernel, 0)
    assert codes[:-3] == [FEATURE] * (len(codes) - 3)
    assert codes[-3:] == [0, 0, 0]
    assert acl.rt.synchronize_stream(other) == 0        # nothing was queued on it, it still exists
    assert (read(d, 64) == np.array([0x33] * 8 + [0x11] * 56, np.uint8)).all()   # the memory was not freed
    assert ran == []                                    # no kernel was launched
    assert acl.rt.get_device() == (0, 0) and acl.rt.destroy_notify(n) == 0
    assert acl.rt.launch_kernel_with_config(func, 1, other, None, args) == 0   # all still usable here
    assert acl.rt.synchronize_stream(other) == 0 and ran == ["launched"]


@pytest.mark.parametrize("how", ["acl", "acl with timeout", "pythonic"])
def test_synchronize_device_waits_for_streams_created_while_it_runs(how):
    """The kernel the synchronize runs acquires an HCCL thread (a new stream) and copies on it: when
    the synchronize returns 0, that stream has run too."""
    comm, stream, thread = host_setup()
    src, dst = malloc(256), malloc(256, fill=0)
    data = write(src, pattern(256))

    def kernel():
        _, (t,) = HcclThreadAcquire(comm, AICPU_TS, 1, 1)
        assert HcommBatchModeStart("k") == 0                 # (Atlas A2's device side)
        assert HcommLocalCopyOnThread(t, dst, src, 256) == 0
        assert HcommBatchModeEnd("k") == 0

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    if how == "acl":
        assert acl.rt.synchronize_device() == 0
    elif how == "acl with timeout":
        assert acl.rt.synchronize_device_with_timeout(30_000) == 0
    else:
        pyhcomm.Device(0).synchronize()
    assert (read(dst, 256) == data).all()
    assert all(st.idle for st in pyhcomm.current_sim().runtime.devices[0].streams.values())


def test_synchronize_device_is_not_failed_by_a_stream_destroyed_while_it_waits(monkeypatch):
    """Another host thread destroys a stream after synchronize_device listed the device's streams
    (made deterministic here: the destroy runs just after the list was taken)."""
    from pyhcomm.aclrt import stream as stream_mod
    comm, stream, thread = host_setup()
    doomed, _ = acl.rt.create_stream()
    d = malloc(64, fill=0)
    assert acl.rt.memset_async(d, 64, 7, 64, doomed) == 0
    real, seen = stream_mod.sync_streams, []

    def destroy_after_the_list(streams, *args, **kwargs):
        streams = list(streams)
        if not seen:
            seen.append([s.handle for s in streams])
            assert acl.rt.destroy_stream(doomed) == 0         # waits for the fill, then destroys
        return real(streams, *args, **kwargs)

    monkeypatch.setattr(stream_mod, "sync_streams", destroy_after_the_list)
    assert acl.rt.synchronize_device() == 0
    assert doomed in seen[0]
    assert (read(d, 64) == 7).all()
    assert acl.rt.synchronize_stream(doomed) == E.ACL_ERROR_RT_PARAM_INVALID   # it is gone
