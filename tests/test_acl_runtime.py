"""The acl facade (pyACL conventions ``value, ret = ...``): init, devices, memory, copies, streams,
stream order and stream errors."""
import logging

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl

from hcomm_testutil import D2D, D2H, H2D, H2H, HBW_HUGE, HCCL_CFG, malloc, pattern, read, write

E = pyhcomm.AclError
DEVICE_VA_BASE = 0x12C0_0000_0000
DEVICE_VA_STRIDE = 1 << 40


@pytest.fixture
def dev0():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield 0


# -- init / finalize ---------------------------------------------------------------------------------
def test_init_twice_is_repeat_initialize():
    assert acl.init() == E.ACL_SUCCESS
    assert acl.init() == E.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize() == E.ACL_SUCCESS
    assert acl.init() == E.ACL_SUCCESS


def test_finalize_closes_devices_and_allows_switching_product():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    ptr, ret = acl.rt.malloc(64, 0)
    assert ret == 0
    assert acl.finalize() == 0
    assert acl.rt.free(ptr) != 0          # the memory went with the device
    assert pyhcomm.set_product("Atlas A3").name == "Atlas A3"


def test_finalize_without_init_fails():
    assert acl.finalize() == E.ACL_ERROR_REPEAT_FINALIZE


# -- devices -----------------------------------------------------------------------------------------
def test_device_count_default_and_set_get_reset(dev0):
    count, ret = acl.rt.get_device_count()
    assert ret == 0 and count == 16
    dev, ret = acl.rt.get_device()
    assert (dev, ret) == (0, 0)
    assert acl.rt.set_device(3) == 0
    assert acl.rt.get_device() == (3, 0)
    assert acl.rt.reset_device(3) == 0
    assert acl.rt.reset_device(0) == 0


@pytest.mark.parametrize("bad", [-1, 16, 1000])
def test_bad_device_id(dev0, bad):
    assert acl.rt.set_device(bad) == E.ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.rt.reset_device(bad) == E.ACL_ERROR_RT_INVALID_DEVICEID


def test_reset_of_unopened_device_is_invalid_deviceid(dev0):
    assert acl.rt.reset_device(5) == E.ACL_ERROR_RT_INVALID_DEVICEID


def test_device_count_from_env(monkeypatch, env, product):
    env("PYHCOMM_DEVICE_COUNT", "4")
    product("Atlas 800T A2")
    assert acl.rt.get_device_count() == (4, 0)
    assert acl.rt.set_device(3) == 0
    assert acl.rt.set_device(4) == E.ACL_ERROR_RT_INVALID_DEVICEID


def test_error_is_logged_and_kept_for_get_recent_err_msg(caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.set_device(99) == E.ACL_ERROR_RT_INVALID_DEVICEID
    assert "aclrtSetDevice" in caplog.text and "99" in caplog.text
    assert acl.get_recent_err_msg().startswith("aclrtSetDevice")


# -- malloc / free -----------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 3, 63, 64, 65, 256, 1000, 4097])
def test_malloc_is_64_byte_aligned_zero_filled_and_on_the_device(dev0, size):
    ptrs = []
    for policy in (0, HBW_HUGE, int(pyhcomm.ACL_MEM_MALLOC_NORMAL_ONLY)):
        ptr, ret = acl.rt.malloc(size, policy)
        assert ret == 0 and ptr
        assert ptr % 64 == 0
        assert DEVICE_VA_BASE <= ptr < DEVICE_VA_BASE + DEVICE_VA_STRIDE
        assert (read(ptr, size) == 0).all()
        ptrs.append(ptr)
    assert len(set(ptrs)) == 3
    for p in ptrs:
        assert acl.rt.free(p) == 0


def test_allocations_never_overlap(dev0):
    spans = []
    for size in (1, 100, 64, 511, 512, 513, 4096):
        ptr, ret = acl.rt.malloc(size, 0)
        assert ret == 0
        spans.append((ptr, ptr + size))
    spans.sort()
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start


def test_malloc_with_cfg_seed_policy_and_module_id(dev0):
    policy = pyhcomm.ACL_MEM_TYPE_HIGH_BAND_WIDTH | pyhcomm.ACL_MEM_MALLOC_HUGE_FIRST
    ptr, ret = acl.rt.malloc_with_cfg(256, int(policy), HCCL_CFG)
    assert ret == 0 and ptr % 64 == 0
    alloc = pyhcomm.current_sim().memory.device_map.find(ptr)
    assert alloc.module_id == pyhcomm.HCCL == 3
    assert alloc.size == 256
    for cfg in (None, {}):
        p, ret = acl.rt.malloc_with_cfg(64, 0, cfg)
        assert ret == 0 and p


def test_malloc_with_cfg_device_id_attr(dev0):
    assert acl.rt.set_device(1) == 0
    assert acl.rt.set_device(0) == 0
    cfg = {"numAttrs": 1, "attrs": [{"attr": pyhcomm.ACL_RT_MEM_ATTR_DEVICE_ID, "value": {"deviceId": 1}}]}
    ptr, ret = acl.rt.malloc_with_cfg(128, 0, cfg)
    assert ret == 0
    base1 = DEVICE_VA_BASE + DEVICE_VA_STRIDE
    assert base1 <= ptr < base1 + DEVICE_VA_STRIDE


@pytest.mark.parametrize("cfg", [
    {"numAttrs": 2, "attrs": [{"attr": 1, "value": {"moduleId": 3}}]},          # count mismatch
    {"numAttrs": 1, "attrs": [{"attr": 99, "value": {"moduleId": 3}}]},         # unknown attr
    {"numAttrs": 1, "attrs": [{"attr": 1, "value": {"moduleId": 1 << 20}}]},    # not a uint16
])
def test_malloc_with_cfg_bad_cfg(dev0, cfg):
    ptr, ret = acl.rt.malloc_with_cfg(64, 0, cfg)
    assert ptr == 0
    assert ret == E.ACL_ERROR_INVALID_PARAM


@pytest.mark.parametrize("size", [0, -1])
def test_malloc_size_zero_or_negative_rejected(dev0, size):
    assert acl.rt.malloc(size, 0) == (0, E.ACL_ERROR_INVALID_PARAM)
    assert acl.rt.malloc_with_cfg(size, HBW_HUGE, HCCL_CFG) == (0, E.ACL_ERROR_INVALID_PARAM)
    assert acl.rt.malloc_host(size)[1] == E.ACL_ERROR_INVALID_PARAM


def test_malloc_policy_with_unknown_bits_rejected(dev0):
    assert acl.rt.malloc(64, 0x4000_0000) == (0, E.ACL_ERROR_INVALID_PARAM)


def test_malloc_without_current_device():
    assert acl.init() == 0
    ptr, ret = acl.rt.malloc(64, 0)
    assert ptr == 0 and ret == E.ACL_ERROR_RT_CONTEXT_NULL


def test_free_detects_double_free(dev0):
    ptr, ret = acl.rt.malloc(256, 0)
    assert ret == 0
    assert acl.rt.free(ptr) == 0
    assert acl.rt.free(ptr) == E.ACL_ERROR_RT_MEMORY_FREE


def test_free_of_bad_pointers(dev0):
    ptr, _ = acl.rt.malloc(256, 0)
    assert acl.rt.free(0) == E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.free(ptr + 64) == E.ACL_ERROR_RT_PARAM_INVALID   # inside, not the start
    assert acl.rt.free(0xDEAD_BEEF) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.free(ptr) == 0


def test_freed_memory_cannot_be_copied(dev0):
    ptr = malloc(64)
    assert acl.rt.free(ptr) == 0
    out = np.zeros(64, dtype=np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 64, ptr, 64, D2H) == E.ACL_ERROR_RT_PARAM_INVALID


def test_malloc_host_free_host(dev0):
    h, ret = acl.rt.malloc_host(128)
    assert ret == 0 and h
    view = acl.util.ptr_to_numpy(h, (128,), np.uint8)
    view[:] = pattern(128)
    d = malloc(128)
    assert acl.rt.memcpy(d, 128, h, 128, H2D) == 0
    assert (read(d, 128) == pattern(128)).all()
    assert acl.rt.free_host(h) == 0
    assert acl.rt.free_host(h) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.free_host(0) == E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.free(d) == 0


def test_ptr_to_numpy_takes_numpy_type_numbers_as_pyacl(dev0):
    h, ret = acl.rt.malloc_host(64)
    assert ret == 0
    acl.util.ptr_to_numpy(h, (16,), 11)[:] = np.arange(16)          # NPY_FLOAT32
    assert acl.util.ptr_to_numpy(h, (16,), np.float32).tolist() == list(range(16))
    assert acl.util.ptr_to_numpy(h, (32,), 23).dtype == np.float16   # NPY_HALF
    assert acl.util.ptr_to_numpy(h, (64,), 2).dtype == np.uint8      # NPY_UBYTE
    with pytest.raises(ValueError, match="not a numpy type number"):
        acl.util.ptr_to_numpy(h, (4,), 99)
    assert acl.rt.free_host(h) == 0


# -- memcpy / memset ---------------------------------------------------------------------------------
def test_memcpy_every_kind(dev0):
    n = 96
    data = pattern(n, 3)
    host_src = data.copy()
    host_mid = np.zeros(n, dtype=np.uint8)
    host_out = np.zeros(n, dtype=np.uint8)
    hs, hm, ho = (acl.util.numpy_to_ptr(a) for a in (host_src, host_mid, host_out))
    d1, d2, d3 = malloc(n), malloc(n), malloc(n)
    assert acl.rt.memcpy(hm, n, hs, n, H2H) == 0
    assert (host_mid == data).all()
    assert acl.rt.memcpy(d1, n, hm, n, H2D) == 0
    assert acl.rt.memcpy(d2, n, d1, n, D2D) == 0
    assert acl.rt.memcpy(d3, n, d2, n, pyhcomm.ACL_MEMCPY_DEFAULT) == 0
    assert acl.rt.memcpy(ho, n, d3, n, D2H) == 0
    assert (host_out == data).all()
    host_out[:] = 0
    assert acl.rt.memcpy(ho, n, d1, n, pyhcomm.ACL_MEMCPY_DEFAULT) == 0
    assert (host_out == data).all()
    for kind in (pyhcomm.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE,):
        d4 = malloc(n)
        assert acl.rt.memcpy(d4, n, hs, n, kind) == 0
        assert (read(d4, n) == data).all()
    for kind in (pyhcomm.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, pyhcomm.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE):
        d5 = malloc(n)
        assert acl.rt.memcpy(d5, n, d1, n, kind) == 0
        assert (read(d5, n) == data).all()


def test_memcpy_kind_must_match_the_memory(dev0):
    d, h = malloc(64), np.zeros(64, dtype=np.uint8)
    hp = acl.util.numpy_to_ptr(h)
    assert acl.rt.memcpy(d, 64, malloc(64), 64, H2D) == E.ACL_ERROR_RT_PARAM_INVALID   # src is device
    assert acl.rt.memcpy(hp, 64, d, 64, D2D) == E.ACL_ERROR_RT_PARAM_INVALID           # dst is host
    assert acl.rt.memcpy(d, 64, hp, 64, 42) == E.ACL_ERROR_RT_PARAM_INVALID            # no such kind


def test_memcpy_count_above_dest_max_rejected_and_nothing_written(dev0):
    d = malloc(256, fill=0x11)
    src = pattern(256)
    sp = acl.util.numpy_to_ptr(src)
    assert acl.rt.memcpy(d, 128, sp, 129, H2D) == E.ACL_ERROR_RT_PARAM_INVALID
    assert (read(d, 256) == 0x11).all()
    assert acl.rt.memcpy(d, 128, sp, 128, H2D) == 0
    got = read(d, 256)
    assert (got[:128] == src[:128]).all() and (got[128:] == 0x11).all()


def test_memcpy_dest_max_past_allocation_or_count_past_src_rejected(dev0):
    d = malloc(64)
    src = malloc(32)
    assert acl.rt.memcpy(d, 65, src, 32, D2D) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.memcpy(d, 64, src, 33, D2D) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.memcpy(0, 64, src, 32, D2D) == E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.memcpy(d, 64, 0, 32, D2D) == E.ACL_ERROR_INVALID_PARAM


def test_memcpy_into_read_only_host_memory_rejected(dev0):
    d = malloc(16, fill=1)
    frozen = np.zeros(16, dtype=np.uint8)
    frozen.flags.writeable = False
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(frozen), 16, d, 16, D2H) == E.ACL_ERROR_RT_PARAM_INVALID
    assert (frozen == 0).all()


def test_memset_and_max_count(dev0):
    d = malloc(100)
    assert acl.rt.memset(d + 10, 50, 0x1AB, 50) == 0          # low byte of value
    got = read(d, 100)
    assert (got[10:60] == 0xAB).all() and (got[:10] == 0).all() and (got[60:] == 0).all()
    assert acl.rt.memset(d, 10, 0xFF, 11) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.memset(d + 90, 20, 0xFF, 20) == E.ACL_ERROR_RT_PARAM_INVALID   # past the allocation
    assert (read(d, 100) == got).all()


# -- streams and asynchrony --------------------------------------------------------------------------
def test_stream_create_destroy(dev0):
    s, ret = acl.rt.create_stream()
    assert ret == 0 and s
    s2, _ = acl.rt.create_stream()
    assert s2 != s
    assert acl.rt.synchronize_stream(s) == 0
    assert acl.rt.destroy_stream(s) == 0
    d = malloc(16)
    assert acl.rt.memcpy_async(d, 16, malloc(16), 16, D2D, s) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.synchronize_stream(s) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.destroy_stream(0) == E.ACL_ERROR_INVALID_PARAM


def test_destroy_stream_waits_for_its_tasks(dev0):
    s, _ = acl.rt.create_stream()
    src, dst = malloc(128), malloc(128)
    data = write(src, pattern(128))
    assert acl.rt.memcpy_async(dst, 128, src, 128, D2D, s) == 0
    assert acl.rt.destroy_stream(s) == 0
    assert (read(dst, 128) == data).all()


def test_create_stream_without_device():
    assert acl.init() == 0
    s, ret = acl.rt.create_stream()
    assert s == 0 and ret == E.ACL_ERROR_RT_CONTEXT_NULL


def test_memcpy_async_not_visible_before_synchronize(dev0):
    s, _ = acl.rt.create_stream()
    src, dst = malloc(256), malloc(256, fill=0x33)
    data = write(src, pattern(256))
    assert acl.rt.memcpy_async(dst, 256, src, 256, D2D, s) == 0
    assert (read(dst, 256) == 0x33).all()          # enqueued, not run
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(dst, 256) == data).all()


def test_memcpy_async_host_to_device_and_back(dev0):
    s, _ = acl.rt.create_stream()
    host_in = pattern(512, 9)
    host_out = np.zeros(512, dtype=np.uint8)
    d = malloc(512)
    assert acl.rt.memcpy_async(d, 512, acl.util.numpy_to_ptr(host_in), 512, H2D, s) == 0
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(host_out), 512, d, 512, D2H, s) == 0
    assert (host_out == 0).all()
    assert acl.rt.synchronize_stream(s) == 0
    assert (host_out == host_in).all()


def test_memcpy_async_dest_max_checked(dev0):
    s, _ = acl.rt.create_stream()
    assert acl.rt.memcpy_async(malloc(64), 32, malloc(64), 64, D2D, s) == E.ACL_ERROR_RT_PARAM_INVALID
    assert not pyhcomm.record.tasks(kind="MemcpyAsync")


def test_memset_async_runs_in_stream_order(dev0):
    s, _ = acl.rt.create_stream()
    d = malloc(64)
    assert acl.rt.memset_async(d, 64, 0x77, 64, s) == 0
    assert (read(d, 64) == 0).all()
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(d, 64) == 0x77).all()


def test_tasks_on_one_stream_run_in_fifo_order(dev0):
    s, _ = acl.rt.create_stream()
    a, b, c = malloc(128), malloc(128), malloc(128)
    data = write(a, pattern(128))
    assert acl.rt.memcpy_async(b, 128, a, 128, D2D, s) == 0   # b <- a (original)
    assert acl.rt.memset_async(a, 128, 0x55, 128, s) == 0     # a <- 0x55
    assert acl.rt.memcpy_async(c, 128, a, 128, D2D, s) == 0   # c <- a (0x55)
    assert acl.rt.memset_async(b, 64, 0x66, 64, s) == 0       # first half of b <- 0x66
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(b, 128)[:64] == 0x66).all()
    assert (read(b, 128)[64:] == data[64:]).all()
    assert (read(c, 128) == 0x55).all()


def test_default_stream_is_stream_zero(dev0):
    src, dst = malloc(32), malloc(32)
    data = write(src, pattern(32))
    assert acl.rt.memcpy_async(dst, 32, src, 32, D2D, 0) == 0
    assert (read(dst, 32) == 0).all()
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 32) == data).all()


def test_synchronize_device_waits_for_every_stream(dev0):
    streams = [acl.rt.create_stream()[0] for _ in range(3)]
    src = malloc(64)
    data = write(src, pattern(64))
    dsts = [malloc(64) for _ in streams]
    for s, d in zip(streams, dsts):
        assert acl.rt.memcpy_async(d, 64, src, 64, D2D, s) == 0
    assert acl.rt.synchronize_device() == 0
    for d in dsts:
        assert (read(d, 64) == data).all()


def test_synchronize_stream_with_timeout(dev0):
    s, _ = acl.rt.create_stream()
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert acl.rt.memcpy_async(dst, 64, src, 64, D2D, s) == 0
    assert acl.rt.synchronize_stream_with_timeout(s, -1) == 0
    assert (read(dst, 64) == data).all()
    assert acl.rt.memset_async(dst, 64, 0, 64, s) == 0
    assert acl.rt.synchronize_stream_with_timeout(s, 10_000) == 0
    assert (read(dst, 64) == 0).all()
    assert acl.rt.synchronize_stream_with_timeout(s, 0) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.synchronize_stream_with_timeout(s, -2) == E.ACL_ERROR_RT_PARAM_INVALID


def test_synchronize_returns_first_execution_error_once(dev0, caplog):
    s, _ = acl.rt.create_stream()
    src, gone, dst, dst2 = malloc(64), malloc(64), malloc(64, fill=0x21), malloc(64, fill=0x22)
    write(src, pattern(64))
    assert acl.rt.memcpy_async(dst, 64, gone, 64, D2D, s) == 0
    assert acl.rt.memcpy_async(dst2, 64, src, 64, D2D, s) == 0
    assert acl.rt.free(gone) == 0                   # freed before its task runs
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = acl.rt.synchronize_stream(s)
    assert ret == E.ACL_ERROR_RT_DEVICE_MEM_ERROR
    assert "aclrtSynchronizeStream" in caplog.text and "freed" in caplog.text
    assert (read(dst, 64) == 0x21).all()            # the freed memory was never touched
    assert (read(dst2, 64) == 0x22).all()           # the stream stopped at its first error
    # the error is reported once; the stream is usable again
    assert acl.rt.synchronize_stream(s) == 0
    assert acl.rt.memcpy_async(dst2, 64, src, 64, D2D, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(dst2, 64) == pattern(64)).all()


def test_error_on_one_stream_does_not_fail_another(dev0):
    bad, good = acl.rt.create_stream()[0], acl.rt.create_stream()[0]
    src, gone, dst = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert acl.rt.memcpy_async(dst, 64, gone, 64, D2D, bad) == 0
    assert acl.rt.free(gone) == 0
    assert acl.rt.memcpy_async(dst, 64, src, 64, D2D, good) == 0
    assert acl.rt.synchronize_stream(good) == 0
    assert (read(dst, 64) == data).all()
    assert acl.rt.synchronize_stream(bad) == E.ACL_ERROR_RT_DEVICE_MEM_ERROR


def test_numpy_array_kept_alive_until_async_copy_runs(dev0):
    s, _ = acl.rt.create_stream()
    d = malloc(64)
    assert acl.rt.memcpy_async(d, 64, acl.util.numpy_to_ptr(pattern(64, 5)), 64, H2D, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(d, 64) == pattern(64, 5)).all()
