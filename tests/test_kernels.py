"""Device side: kernels loaded with acl.rt.binary_load_from_file, launched with
launch_kernel_with_config, run in stream order, make primitive calls device-side calls, and fail
their stream with ACL_ERROR_RT_AICPU_EXCEPTION."""
import logging
import struct

import numpy as np
import pytest

import pyhcomm
from pyhcomm import HcommLocalCopyOnThread, acl
from hcomm_testutil import D2D, KERNEL_DIR, KERNELS_PY, malloc, pattern, read, write

E = pyhcomm.AclError
R = pyhcomm.HcclResult
TIMEOUT_CFG = [{"id": int(pyhcomm.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT), "value": 1836}]
OP_PARAM = struct.Struct("<QQQQ")


@pytest.fixture
def dev0():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield 0


def _function(name, binary_path=KERNELS_PY):
    binary, ret = acl.rt.binary_load_from_file(binary_path, [])
    assert ret == 0 and binary
    func, ret = acl.rt.binary_get_function(binary, name)
    assert ret == 0 and func
    return func


def _launch(name, stream, *args, num_blocks=1, cfg=TIMEOUT_CFG, binary_path=KERNELS_PY):
    func = _function(name, binary_path)
    handle, ret = acl.rt.kernel_args_init(func)
    assert ret == 0
    for a in args:
        _, ret = acl.rt.kernel_args_append(handle, a)
        assert ret == 0
    assert acl.rt.kernel_args_finalize(handle) == 0
    return acl.rt.launch_kernel_with_config(func, num_blocks, stream, cfg, handle, 0)


# -- loading -----------------------------------------------------------------------------------------
def test_kernel_runs_when_the_stream_reaches_its_launch(dev0):
    stream, _ = acl.rt.create_stream()
    log = []
    assert _launch("record_kernel", stream, log, "ran") == 0
    assert log == []                               # launched, not run
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == ["ran"]
    assert acl.rt.synchronize_stream(stream) == 0  # runs once
    assert log == ["ran"]


def test_load_by_module_name(dev0, monkeypatch):
    monkeypatch.syspath_prepend(KERNEL_DIR)
    stream, _ = acl.rt.create_stream()
    log = []
    assert _launch("record_kernel", stream, log, "by-name", binary_path="foundation_kernels") == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == ["by-name"]


def test_load_errors(dev0, tmp_path):
    assert acl.rt.binary_load_from_file(str(tmp_path / "missing.py"), []) == (0, E.ACL_ERROR_INVALID_FILE)
    assert acl.rt.binary_load_from_file("no_such_kernel_module_xyz", []) == (0, E.ACL_ERROR_INVALID_FILE)
    blob = tmp_path / "kernel.o"
    blob.write_bytes(b"\x7fELF")
    assert acl.rt.binary_load_from_file(str(blob), []) == (0, E.ACL_ERROR_INVALID_FILE)
    broken = tmp_path / "broken_kernels.py"
    broken.write_text("raise ImportError('cannot build')\n")
    assert acl.rt.binary_load_from_file(str(broken), []) == (0, E.ACL_ERROR_INVALID_FILE)
    binary, ret = acl.rt.binary_load_from_file(KERNELS_PY, [])
    assert ret == 0
    assert acl.rt.binary_get_function(binary, "no_such_kernel") == (0, E.ACL_ERROR_KERNEL_NOT_FOUND)
    assert acl.rt.binary_get_function(0x1234, "record_kernel") == (0, E.ACL_ERROR_INVALID_PARAM)
    cpu_mode = [{"type": pyhcomm.ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, "value": 0}]
    assert acl.rt.binary_load_from_file(KERNELS_PY, cpu_mode)[1] == 0
    assert acl.rt.binary_load_from_file(KERNELS_PY, [{"type": 9, "value": 0}]) == (0, E.ACL_ERROR_INVALID_PARAM)
    with pytest.raises(TypeError, match="options must be a list"):
        acl.rt.binary_load_from_file(KERNELS_PY, 3)


def test_launch_argument_errors(dev0):
    stream, _ = acl.rt.create_stream()
    f1 = _function("record_kernel")
    f2 = _function("block_kernel")
    args2, _ = acl.rt.kernel_args_init(f2)
    assert acl.rt.launch_kernel_with_config(f1, 1, stream, None, args2, 0) == E.ACL_ERROR_INVALID_PARAM
    args1, _ = acl.rt.kernel_args_init(f1)
    acl.rt.kernel_args_append(args1, [])
    acl.rt.kernel_args_append(args1, "x")
    assert acl.rt.launch_kernel_with_config(f1, 0, stream, None, args1, 0) == E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.launch_kernel_with_config(f1, 1, stream, [{"id": 999, "value": 1}], args1, 0) == \
        E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.launch_kernel_with_config(f1, 1, 0xBAD, None, args1, 0) == E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.kernel_args_finalize(args1) == 0
    assert acl.rt.kernel_args_append(args1, 1)[1] == E.ACL_ERROR_INVALID_PARAM
    assert not pyhcomm.record.tasks(kind="KernelLaunch")


def test_args_from_host_pointer_arrive_as_bytes(dev0):
    stream, _ = acl.rt.create_stream()
    func = _function("record_kernel")
    handle, _ = acl.rt.kernel_args_init(func)
    log = []
    first, ret = acl.rt.kernel_args_append(handle, log)
    assert ret == 0 and first                        # a parameter handle is never NULL
    payload = np.frombuffer(b"opparam!", dtype=np.uint8).copy()
    second, ret = acl.rt.kernel_args_append(handle, acl.util.numpy_to_ptr(payload), payload.nbytes)
    assert ret == 0 and second not in (0, first)
    payload[:] = 0                                   # the bytes were copied at append time
    acl.rt.kernel_args_finalize(handle)
    assert acl.rt.launch_kernel_with_config(func, 1, stream, None, handle, 0) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == [b"opparam!"]


def test_num_blocks_runs_the_kernel_per_block(dev0):
    stream, _ = acl.rt.create_stream()
    log = []
    assert _launch("block_kernel", stream, log, num_blocks=3) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == ["block"] * 3


# -- stream order ------------------------------------------------------------------------------------
def test_kernel_sees_tasks_enqueued_before_it(dev0):
    stream, _ = acl.rt.create_stream()
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert acl.rt.memcpy_async(dst, 64, src, 64, D2D, stream) == 0
    seen = []
    assert _launch("read_kernel", stream, seen, dst, 64) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert len(seen) == 1 and (seen[0] == data).all()


def test_tasks_behind_a_kernel_run_after_its_effects(dev0):
    stream, _ = acl.rt.create_stream()
    a, b = malloc(128), malloc(128)
    assert _launch("memset_kernel", stream, a, 128, 0x5B) == 0
    assert acl.rt.memcpy_async(b, 128, a, 128, D2D, stream) == 0
    assert (read(a, 128) == 0).all()                  # nothing ran yet
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(a, 128) == 0x5B).all()
    assert (read(b, 128) == 0x5B).all()               # the copy ran after the kernel


def test_kernels_on_one_stream_run_in_order(dev0):
    stream, _ = acl.rt.create_stream()
    log = []
    for tag in ("k1", "k2", "k3"):
        assert _launch("record_kernel", stream, log, tag) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == ["k1", "k2", "k3"]


# -- kernel failures ---------------------------------------------------------------------------------
def test_raising_kernel_fails_the_stream_with_aicpu_exception(dev0, caplog):
    stream, _ = acl.rt.create_stream()
    log = []
    a, b = malloc(64), malloc(64, fill=0x10)
    write(a, pattern(64))
    assert _launch("raising_kernel", stream, log) == 0      # the launch itself succeeds
    assert acl.rt.memcpy_async(b, 64, a, 64, D2D, stream) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_stream(stream) == E.ACL_ERROR_RT_AICPU_EXCEPTION == 507018
    assert log == ["raising"]
    assert "raising_kernel" in caplog.text and "kernel exploded on purpose" in caplog.text
    assert (read(b, 64) == 0x10).all()                      # tasks behind the failure did not run
    assert acl.rt.synchronize_stream(stream) == 0           # reported once; the stream works again
    assert _launch("record_kernel", stream, log, "after") == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert log == ["raising", "after"]


def test_kernel_returning_nonzero_fails_the_stream(dev0, caplog):
    stream, _ = acl.rt.create_stream()
    log = []
    assert _launch("nonzero_kernel", stream, log) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_stream(stream) == E.ACL_ERROR_RT_AICPU_EXCEPTION
    assert "nonzero_kernel" in caplog.text and "7" in caplog.text
    assert log == ["nonzero"]


def test_kernel_failure_reported_by_synchronize_device(dev0):
    stream, _ = acl.rt.create_stream()
    assert _launch("nonzero_kernel", stream, []) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_AICPU_EXCEPTION
    assert acl.rt.synchronize_device() == 0


def test_synchronize_returns_the_first_error_of_the_stream(dev0):
    stream, _ = acl.rt.create_stream()
    log = []
    dst, gone = malloc(64), malloc(64)
    assert acl.rt.memcpy_async(dst, 64, gone, 64, D2D, stream) == 0
    assert _launch("raising_kernel", stream, log) == 0
    assert acl.rt.free(gone) == 0
    assert acl.rt.synchronize_stream(stream) == E.ACL_ERROR_RT_DEVICE_MEM_ERROR
    assert log == []                                       # the kernel behind the failure never ran
    assert _launch("raising_kernel", stream, log) == 0
    assert _launch("nonzero_kernel", stream, log) == 0
    assert acl.rt.synchronize_stream(stream) == E.ACL_ERROR_RT_AICPU_EXCEPTION
    assert log == ["raising"]


# -- primitives inside kernels are device-side calls ----------------------------------------------------
def _comm_and_threads(engine, n=1):
    _, comms = pyhcomm.HcclCommInitAll([0])
    ret, threads = pyhcomm.HcclThreadAcquire(comms[0], engine, n, 1)
    assert ret == 0
    return comms[0], threads


def _atlas_350():
    pyhcomm.set_product("Atlas 350")   # device-side primitives outside batch mode: Atlas 350 only
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0


def test_aicpu_ts_thread_copies_inside_a_kernel():
    _atlas_350()
    comm, (thread,) = _comm_and_threads(pyhcomm.COMM_ENGINE_AICPU_TS)
    stream, _ = acl.rt.create_stream()
    src, dst = malloc(256), malloc(256)
    data = write(src, pattern(256))
    codes = []
    assert _launch("copy_ret_kernel", stream, codes, thread, dst, src, 256) == 0
    assert codes == [] and not pyhcomm.record.tasks(kind="LocalCopy")
    assert acl.rt.synchronize_device() == 0
    assert codes == [0]
    assert (read(dst, 256) == data).all()
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.side == "device" and task.thread == thread


def test_host_engine_thread_inside_a_kernel_is_not_supported(dev0, caplog):
    stream, _ = acl.rt.create_stream()
    comm, (thread,) = _comm_and_threads(pyhcomm.COMM_ENGINE_CPU_TS)
    src, dst = malloc(64), malloc(64)
    codes = []
    assert _launch("copy_ret_kernel", stream, codes, thread, dst, src, 64) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == 0
    assert codes == [R.HCCL_E_NOT_SUPPORT]
    assert "HcommLocalCopyOnThread" in caplog.text


def test_device_side_errors_are_codes_inside_the_kernel():
    _atlas_350()
    stream, _ = acl.rt.create_stream()
    comm, (thread,) = _comm_and_threads(pyhcomm.COMM_ENGINE_AICPU_TS)
    src, dst = malloc(64), malloc(64)
    codes = []
    assert _launch("copy_ret_kernel", stream, codes, thread, 0, src, 64) == 0
    assert _launch("copy_ret_kernel", stream, codes, 0x4242, dst, src, 64) == 0
    assert _launch("copy_ret_kernel", stream, codes, thread, dst + 32, src, 64) == 0
    assert _launch("copy_ret_kernel", stream, codes, thread, dst, src, 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert codes == [R.HCCL_E_PTR, R.HCCL_E_NOT_FOUND, R.HCCL_E_PARA, R.HCCL_SUCCESS]


def test_atlas_350_seed_device_example():
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.get_soc_name().startswith("Ascend950PR_")
    _, comms = pyhcomm.HcclCommInitAll([0])
    comm = comms[0]
    ret, ccl, ccl_size = pyhcomm.HcclGetHcclBuffer(comm)
    assert ret == 0 and ccl_size == 400 << 20
    ret, threads = pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    assert ret == 0
    user_in, ret = acl.rt.malloc(256, pyhcomm.ACL_MEM_MALLOC_HUGE_FIRST)
    data = write(user_in, (np.arange(256) * 7 % 256).astype(np.uint8))
    assert HcommLocalCopyOnThread(threads[0], ccl, user_in, 256) == R.HCCL_E_NOT_SUPPORT
    stream, _ = acl.rt.create_stream()
    func = _function("copy_kernel")
    args, _ = acl.rt.kernel_args_init(func)
    param = np.frombuffer(OP_PARAM.pack(threads[0], ccl, user_in, 256), dtype=np.uint8).copy()
    assert acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(param), param.nbytes)[1] == 0
    assert acl.rt.kernel_args_finalize(args) == 0
    assert acl.rt.launch_kernel_with_config(func, 1, stream, TIMEOUT_CFG, args, 0) == 0
    assert (read(ccl, 256) == 0).all()
    assert acl.rt.synchronize_device() == 0
    assert (read(ccl, 256) == data).all()
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.side == "device"
    assert pyhcomm.HcclCommDestroy(comm) == 0
    assert acl.rt.free(user_in) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


@pytest.mark.parametrize("engine", [pyhcomm.COMM_ENGINE_CPU, pyhcomm.COMM_ENGINE_CPU_TS])
def test_atlas_350_kernel_needs_an_aicpu_ts_thread(engine, caplog):
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, (thread,) = _comm_and_threads(engine)
    src, dst = malloc(64), malloc(64, fill=0x31)
    stream, _ = acl.rt.create_stream()
    codes = []
    assert _launch("copy_ret_kernel", stream, codes, thread, dst, src, 64) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == 0
    assert codes == [R.HCCL_E_NOT_SUPPORT]
    assert "AICPU_TS" in caplog.text
    assert (read(dst, 64) == 0x31).all()


def test_atlas_350_seed_kernel_failing_primitive_fails_the_kernel():
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, (thread,) = _comm_and_threads(pyhcomm.COMM_ENGINE_AICPU_TS)
    src, dst = malloc(64), malloc(64)
    stream, _ = acl.rt.create_stream()
    param = OP_PARAM.pack(thread, dst + 8, src, 64)           # out of bounds: the kernel returns 1
    assert _launch("copy_kernel", stream, param) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_AICPU_EXCEPTION


def test_unsupported_product_inside_a_kernel():
    pyhcomm.set_product("Atlas 800I A2")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, (thread,) = _comm_and_threads(pyhcomm.COMM_ENGINE_AICPU_TS)
    src, dst = malloc(64), malloc(64)
    stream, _ = acl.rt.create_stream()
    codes = []
    assert _launch("copy_ret_kernel", stream, codes, thread, dst, src, 64) == 0
    assert acl.rt.synchronize_device() == 0
    assert codes == [R.HCCL_E_NOT_SUPPORT]


def test_each_call_checks_its_side():
    """Whatever the previous call on the same thread did, each call checks its own side: on Atlas
    350 an AICPU_TS thread works inside a kernel and is refused from the host; a CPU_TS thread is
    refused on both sides."""
    _atlas_350()
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, (host_t,) = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, 1, 1)
    _, (dev_t,) = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    src, dst = malloc(64), malloc(64)
    stream, _ = acl.rt.create_stream()
    codes = []
    assert HcommLocalCopyOnThread(host_t, dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommLocalCopyOnThread(dev_t, dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    for t in (dev_t, host_t, dev_t, dev_t, host_t):
        assert _launch("copy_ret_kernel", stream, codes, t, dst, src, 64) == 0
    assert acl.rt.synchronize_device() == 0
    assert codes == [0, R.HCCL_E_NOT_SUPPORT, 0, 0, R.HCCL_E_NOT_SUPPORT]
    assert HcommLocalCopyOnThread(dev_t, dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommLocalCopyOnThread(host_t, dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    assert [t.side for t in pyhcomm.record.tasks(kind="LocalCopy")] == ["device"] * 3


# -- device_load: a kernel dereferences a device pointer -------------------------------------------------
def test_device_load_reads_device_memory_inside_a_kernel_only(dev0):
    import types

    from pyhcomm.sim.kernel import device_load
    seen = []
    module = types.ModuleType("device_load_kernels")
    module.Peek = lambda addr: seen.append(device_load(addr, 8))
    module.PeekTooFar = lambda addr: seen.append(device_load(addr, 4096))
    d = malloc(64)
    write(d, pattern(64))
    s, ret = acl.rt.create_stream()
    assert ret == 0
    binary, _ = acl.rt.binary_load_from_file(module, [])
    for name in ("Peek", "PeekTooFar"):
        func, _ = acl.rt.binary_get_function(binary, name)
        args, _ = acl.rt.kernel_args_init(func)
        acl.rt.kernel_args_append(args, d)
        acl.rt.kernel_args_finalize(args)
        assert acl.rt.launch_kernel_with_config(func, 1, s, TIMEOUT_CFG, args, 0) == 0
    assert acl.rt.synchronize_stream(s) == pyhcomm.AclError.ACL_ERROR_RT_AICPU_EXCEPTION
    assert seen == [bytes(pattern(64)[:8])]
    with pytest.raises(pyhcomm.AclRuntimeError, match="outside an AI CPU kernel"):
        device_load(d, 8)
