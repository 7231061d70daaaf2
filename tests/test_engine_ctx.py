"""Engine contexts: HcclEngineCtxCreate / Get / Copy / Destroy, and their Pythonic form."""
import numpy as np
import pytest

from pyhcomm import *  # noqa: F403
from pyhcomm import Comm, acl
import pyhcomm
from pyhcomm.enums import HCCL_RES_TAG_MAX_LEN
from pyhcomm.errors import HcclUsageError
from pyhcomm.pythonic import EngineCtx

HOST_ENGINES = [COMM_ENGINE_CPU, COMM_ENGINE_CPU_TS, COMM_ENGINE_CCU]
DEVICE_ENGINES = [COMM_ENGINE_AICPU, COMM_ENGINE_AICPU_TS, COMM_ENGINE_AIV]
TAG = "hccl_custom_allgather"


def _device_bytes(addr, n):
    out = np.zeros(n, dtype=np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, addr, n, ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out.tobytes()


def _host_bytes(addr, n):
    return acl.util.ptr_to_numpy(addr, (n,), np.uint8).tobytes()


# -- placement -------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", HOST_ENGINES)
def test_host_engines_get_zeroed_host_memory(comm, engine):
    ret, ctx = HcclEngineCtxCreate(comm, TAG, engine, 1000)
    assert ret == HCCL_SUCCESS and ctx
    alloc = pyhcomm.current_sim().memory.host_map.find(ctx)
    assert alloc is not None and alloc.addr == ctx and alloc.size == 1000
    assert alloc.owner == "engine_ctx"
    assert pyhcomm.current_sim().memory.device_map.find(ctx) is None
    assert _host_bytes(ctx, 1000) == bytes(1000)


@pytest.mark.parametrize("engine", DEVICE_ENGINES)
def test_device_engines_get_zeroed_device_memory_of_the_comm_device(comm, engine):
    ret, ctx = HcclEngineCtxCreate(comm, TAG, engine, 1000)
    assert ret == HCCL_SUCCESS
    alloc = pyhcomm.current_sim().memory.device_map.find(ctx)
    assert alloc is not None and alloc.addr == ctx and alloc.size == 1000
    assert alloc.device == 0 and alloc.owner == "engine_ctx"
    assert pyhcomm.current_sim().memory.host_map.find(ctx) is None
    assert _device_bytes(ctx, 1000) == bytes(1000)


def test_device_ctx_lives_on_each_rank_device():
    ret, comms = HcclCommInitAll([2, 5])
    assert ret == HCCL_SUCCESS
    for comm, device in zip(comms, (2, 5)):
        ret, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
        assert ret == HCCL_SUCCESS
        assert pyhcomm.current_sim().memory.device_map.find(ctx).device == device
    for comm in comms:
        assert HcclCommDestroy(comm) == HCCL_SUCCESS


def test_ctx_memory_is_library_owned(comm):
    _, dctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    _, hctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 64)
    assert acl.rt.free(dctx) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.free_host(hctx) == ACL_ERROR_RT_PARAM_INVALID
    assert pyhcomm.current_sim().memory.device_map.find(dctx) is not None and pyhcomm.current_sim().memory.host_map.find(hctx) is not None


# -- create ----------------------------------------------------------------------------------------

def test_get_returns_the_created_block(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 4096)
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_SUCCESS, ctx, 4096)


def test_same_tag_on_another_engine_or_comm_is_a_different_block(dev):
    _, (c0, c1) = HcclCommInitAll([0, 1])
    _, a = HcclEngineCtxCreate(c0, TAG, COMM_ENGINE_AICPU_TS, 64)
    _, b = HcclEngineCtxCreate(c0, TAG, COMM_ENGINE_CPU_TS, 64)
    _, c = HcclEngineCtxCreate(c1, TAG, COMM_ENGINE_AICPU_TS, 64)
    _, d = HcclEngineCtxCreate(c0, TAG + "_2", COMM_ENGINE_AICPU_TS, 64)
    assert len({a, b, c, d}) == 4 and 0 not in {a, b, c, d}


def test_duplicate_tag_and_engine_is_para(comm):
    _, first = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    assert HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 128) == (HCCL_E_PARA, 0)
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_SUCCESS, first, 64)


def test_create_tag_rules(comm):
    assert HcclEngineCtxCreate(comm, None, COMM_ENGINE_CPU_TS, 8) == (HCCL_E_PTR, 0)
    assert HcclEngineCtxCreate(comm, "", COMM_ENGINE_CPU_TS, 8) == (HCCL_E_PARA, 0)
    too_long = "t" * (HCCL_RES_TAG_MAX_LEN + 1)
    assert HcclEngineCtxCreate(comm, too_long, COMM_ENGINE_CPU_TS, 8) == (HCCL_E_PARA, 0)
    longest = "t" * HCCL_RES_TAG_MAX_LEN
    ret, ctx = HcclEngineCtxCreate(comm, longest, COMM_ENGINE_CPU_TS, 8)
    assert ret == HCCL_SUCCESS and ctx
    with pytest.raises(TypeError):
        HcclEngineCtxCreate(comm, 42, COMM_ENGINE_CPU_TS, 8)


@pytest.mark.parametrize("engine", [COMM_ENGINE_RESERVED, 6, 100])
def test_create_invalid_engine_is_para(comm, engine):
    assert HcclEngineCtxCreate(comm, TAG, engine, 8) == (HCCL_E_PARA, 0)


@pytest.mark.parametrize("size", [0, -1, 1 << 64])
def test_create_invalid_size_is_para(comm, size):
    assert HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, size) == (HCCL_E_PARA, 0)


def test_create_null_and_unknown_comm(dev):
    assert HcclEngineCtxCreate(0, TAG, COMM_ENGINE_CPU_TS, 8) == (HCCL_E_PTR, 0)
    assert HcclEngineCtxCreate(0x1234, TAG, COMM_ENGINE_CPU_TS, 8) == (HCCL_E_NOT_FOUND, 0)


def test_create_beyond_device_capacity_is_memory(comm):
    assert HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 65 << 30) == (HCCL_E_MEMORY, 0)
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_E_NOT_FOUND, 0, 0)


# -- get -------------------------------------------------------------------------------------------

def test_get_missing_is_not_found(comm):
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_E_NOT_FOUND, 0, 0)
    HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 8)
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_CPU_TS) == (HCCL_E_NOT_FOUND, 0, 0)
    assert HcclEngineCtxGet(comm, "other", COMM_ENGINE_AICPU_TS) == (HCCL_E_NOT_FOUND, 0, 0)


def test_get_argument_errors(comm):
    assert HcclEngineCtxGet(0, TAG, COMM_ENGINE_CPU_TS) == (HCCL_E_PTR, 0, 0)
    assert HcclEngineCtxGet(comm, None, COMM_ENGINE_CPU_TS) == (HCCL_E_PTR, 0, 0)
    assert HcclEngineCtxGet(comm, "", COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, 0, 0)
    assert HcclEngineCtxGet(comm, "x" * 256, COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, 0, 0)
    assert HcclEngineCtxGet(comm, TAG, 7) == (HCCL_E_PARA, 0, 0)


# -- copy ------------------------------------------------------------------------------------------

def test_copy_bytes_into_a_host_ctx_at_an_offset(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 16)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_CPU_TS, TAG, b"abcd", 4, 6) == HCCL_SUCCESS
    assert _host_bytes(ctx, 16) == bytes(6) + b"abcd" + bytes(6)


def test_copy_into_a_device_ctx_writes_device_memory(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 32)
    payload = np.arange(8, dtype=np.uint32)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, payload, 32, 0) == HCCL_SUCCESS
    assert _device_bytes(ctx, 32) == payload.tobytes()


def test_copy_from_a_host_pointer(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    host, ret = acl.rt.malloc_host(16)
    assert ret == 0
    acl.util.ptr_to_numpy(host, (16,), np.uint8)[:] = np.arange(16, dtype=np.uint8) + 1
    src = np.full(8, 0xEE, dtype=np.uint8)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, host + 4, 12, 50) == HCCL_SUCCESS
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, acl.util.numpy_to_ptr(src), 8, 0) == HCCL_SUCCESS
    assert _device_bytes(ctx, 64) == b"\xee" * 8 + bytes(42) + bytes(range(5, 17)) + bytes(2)
    acl.rt.free_host(host)


def test_copy_only_a_prefix_of_a_longer_source(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU, 8)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_CPU, TAG, b"0123456789", 3, 5) == HCCL_SUCCESS
    assert _host_bytes(ctx, 8) == bytes(5) + b"012"


def test_copy_bounds_are_checked(comm):
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 16)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, bytes(16), 16, 0) == HCCL_SUCCESS
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"x", 1, 15) == HCCL_SUCCESS
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, bytes(17), 17, 0) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"xy", 2, 15) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"x", 1, 16) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"x", 1, 1 << 64) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"x", 0, 0) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, b"abc", 4, 0) == HCCL_E_PARA
    assert _device_bytes(ctx, 16) == bytes(15) + b"x"  # the refused copies wrote nothing


def test_copy_source_errors(comm):
    _, dctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 16)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, None, 4, 0) == HCCL_E_PTR
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, 0, 4, 0) == HCCL_E_PTR
    # device memory is not a host source; unknown addresses are refused, never read
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, dctx, 4, 0) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, 0x1000, 4, 0) == HCCL_E_PARA
    host, _ = acl.rt.malloc_host(8)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, host + 4, 8, 0) == HCCL_E_PARA
    acl.rt.free_host(host)
    with pytest.raises(TypeError):
        HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, 1.5, 4, 0)


def test_copy_argument_errors(comm):
    HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 16)
    assert HcclEngineCtxCopy(0, COMM_ENGINE_AICPU_TS, TAG, b"x", 1, 0) == HCCL_E_PTR
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, None, b"x", 1, 0) == HCCL_E_PTR
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, "", b"x", 1, 0) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, 9, TAG, b"x", 1, 0) == HCCL_E_PARA
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AIV, TAG, b"x", 1, 0) == HCCL_E_NOT_FOUND
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, "missing", b"x", 1, 0) == HCCL_E_NOT_FOUND


# -- destroy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [COMM_ENGINE_CPU_TS, COMM_ENGINE_AICPU_TS])
def test_destroy_then_get_is_not_found(comm, engine):
    _, ctx = HcclEngineCtxCreate(comm, TAG, engine, 64)
    assert HcclEngineCtxDestroy(comm, TAG, engine) == HCCL_SUCCESS
    assert HcclEngineCtxGet(comm, TAG, engine) == (HCCL_E_NOT_FOUND, 0, 0)
    assert HcclEngineCtxCopy(comm, engine, TAG, b"x", 1, 0) == HCCL_E_NOT_FOUND
    assert HcclEngineCtxDestroy(comm, TAG, engine) == HCCL_E_NOT_FOUND
    assert pyhcomm.current_sim().memory.device_map.find(ctx) is None and pyhcomm.current_sim().memory.host_map.find(ctx) is None


def test_destroy_frees_device_memory_and_allows_a_new_create(comm):
    _, old = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    HcclEngineCtxDestroy(comm, TAG, COMM_ENGINE_AICPU_TS)
    assert pyhcomm.current_sim().memory.freed_map.find(old) is not None
    ret, new = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 32)
    assert ret == HCCL_SUCCESS and new != old
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_SUCCESS, new, 32)


def test_destroy_leaves_other_contexts(comm):
    _, keep = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 8)
    HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 8)
    assert HcclEngineCtxDestroy(comm, TAG, COMM_ENGINE_AICPU_TS) == HCCL_SUCCESS
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_CPU_TS) == (HCCL_SUCCESS, keep, 8)


def test_destroy_argument_errors(comm):
    assert HcclEngineCtxDestroy(0, TAG, COMM_ENGINE_CPU_TS) == HCCL_E_PTR
    assert HcclEngineCtxDestroy(comm, None, COMM_ENGINE_CPU_TS) == HCCL_E_PTR
    assert HcclEngineCtxDestroy(comm, "", COMM_ENGINE_CPU_TS) == HCCL_E_PARA
    assert HcclEngineCtxDestroy(comm, TAG, -1) == HCCL_E_PARA
    assert HcclEngineCtxDestroy(comm, TAG, COMM_ENGINE_CPU_TS) == HCCL_E_NOT_FOUND


def test_comm_destroy_releases_every_context(comm):
    _, d = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    _, h = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 64)
    _, c = HcclEngineCtxCreate(comm, "ccu", COMM_ENGINE_CCU, 64)
    assert HcclCommDestroy(comm) == HCCL_SUCCESS
    assert pyhcomm.current_sim().memory.device_map.find(d) is None
    assert pyhcomm.current_sim().memory.host_map.find(h) is None and pyhcomm.current_sim().memory.host_map.find(c) is None
    assert HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS) == (HCCL_E_NOT_FOUND, 0, 0)


def test_finalize_releases_contexts():
    acl.init()
    acl.rt.set_device(0)
    _, (comm,) = HcclCommInitAll([0])
    _, h = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 64)
    _, d = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 64)
    acl.finalize()
    assert pyhcomm.current_sim().memory.host_map.find(h) is None and pyhcomm.current_sim().memory.device_map.find(d) is None


# -- the data plane reads a device context ---------------------------------------------------------

def test_a_kernel_copies_out_of_a_device_ctx(dev, comm):
    """The EX05 pattern: the host serialises parameters into an AICPU_TS context; a kernel uses it."""
    _, (thread,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1)
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, 256)
    payload = (np.arange(256) * 3 % 251).astype(np.uint8)
    assert HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, payload, 256, 0) == HCCL_SUCCESS
    out = dev.malloc(256)
    rets = []

    def kernel(thread, dst, src):
        HcommBatchModeStart("ctx")  # Atlas A2 device-side code must use batch mode
        rets.append(HcommLocalCopyOnThread(thread, dst, src, 256))
        HcommBatchModeEnd("ctx")

    dev.stream().launch(kernel, thread, out.addr, ctx)
    dev.synchronize()
    assert rets == [HCCL_SUCCESS]
    assert out.read().tobytes() == payload.tobytes()


def test_a_host_ctx_is_not_device_memory_for_primitives(dev, comm):
    _, thread = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, dev.default_stream.handle, 0)
    _, ctx = HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, 64)
    out = dev.malloc(64)
    assert HcommLocalCopyOnThread(thread, out.addr, ctx, 64) == HCCL_E_PARA


# -- Pythonic tier ---------------------------------------------------------------------------------

def test_pythonic_engine_ctx(dev):
    comm = Comm.init_all([0])[0]
    ctx = comm.engine_ctx_create(TAG, COMM_ENGINE_AICPU_TS, 16)
    assert isinstance(ctx, EngineCtx) and ctx.on_device and ctx.size == 16
    ctx.write(b"\x01\x02", offset=3)
    assert ctx.read() == bytes(3) + b"\x01\x02" + bytes(11)
    comm.engine_ctx_copy(TAG, COMM_ENGINE_AICPU_TS, np.array([7, 8], dtype=np.uint8), offset=14)
    assert ctx.numpy()[14:].tolist() == [7, 8]
    again = comm.engine_ctx_get(TAG, COMM_ENGINE_AICPU_TS)
    assert (again.addr, again.size) == (ctx.addr, ctx.size)

    host = comm.engine_ctx_create("host", COMM_ENGINE_CPU_TS, 8)
    assert not host.on_device and pyhcomm.current_sim().memory.host_map.find(host.addr) is not None
    with host:
        host.write(b"abc")
        assert host.read() == b"abc" + bytes(5)
    assert not host.alive
    host.close()  # idempotent

    with pytest.raises(HcclUsageError) as err:
        comm.engine_ctx_create(TAG, COMM_ENGINE_AICPU_TS, 16)
    assert err.value.code == HCCL_E_PARA and err.value.api == "HcclEngineCtxCreate"
    with pytest.raises(HcclUsageError) as err:
        ctx.write(bytes(17))
    assert err.value.code == HCCL_E_PARA
    comm.engine_ctx_destroy(TAG, COMM_ENGINE_AICPU_TS)
    with pytest.raises(HcclUsageError) as err:
        comm.engine_ctx_get(TAG, COMM_ENGINE_AICPU_TS)
    assert err.value.code == HCCL_E_NOT_FOUND and err.value.api == "HcclEngineCtxGet"
    with pytest.raises(HcclUsageError):
        ctx.numpy()
    ctx.close()  # already destroyed: nothing
    keep = comm.engine_ctx_create("kept", COMM_ENGINE_AIV, 8)
    comm.close()
    assert pyhcomm.current_sim().memory.device_map.find(keep.addr) is None
    keep.close()  # after the communicator: nothing


def test_pythonic_copy_from_a_host_pointer(dev):
    comm = Comm.init_all([0])[0]
    ctx = comm.engine_ctx_create(TAG, COMM_ENGINE_CPU_TS, 8)
    src = np.arange(1, 5, dtype=np.uint8)
    comm.engine_ctx_copy(TAG, COMM_ENGINE_CPU_TS, acl.util.numpy_to_ptr(src), offset=4, nbytes=4)
    assert ctx.read() == bytes(4) + bytes([1, 2, 3, 4])
    with pytest.raises(TypeError):
        comm.engine_ctx_copy(TAG, COMM_ENGINE_CPU_TS, acl.util.numpy_to_ptr(src))
    comm.close()
