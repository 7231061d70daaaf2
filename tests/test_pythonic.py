"""The three tiers: flat C constants and conventions, and the Pythonic tier (Device, Stream, Comm,
Thread, Buffer, Kernel) with the HcclError hierarchy."""
import threading

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (AclRuntimeError, Buffer, Comm, CommEngine, Device, HcclError, HcclNotSupportedError,
                     HcclResult, HcclRuntimeError, HcclUsageError, Kernel, Stream, Thread)
from hcomm_testutil import JOIN_TIMEOUT, run_threads

API = "HcommLocalCopyOnThread"


# -- flat C tier -------------------------------------------------------------------------------------
def test_enum_members_are_module_constants():
    assert pyhcomm.COMM_ENGINE_CPU_TS == 1 and isinstance(pyhcomm.COMM_ENGINE_CPU_TS, CommEngine)
    assert pyhcomm.COMM_ENGINE_AICPU_TS == CommEngine.COMM_ENGINE_AICPU_TS == 3
    assert pyhcomm.HCCL_SUCCESS == 0 and pyhcomm.HCCL_E_PARA == 1 and pyhcomm.HCCL_E_PTR == 2
    assert pyhcomm.HCCL_E_NOT_SUPPORT == 5 and pyhcomm.HCCL_E_NOT_FOUND == 6
    assert isinstance(pyhcomm.HCCL_E_PTR, HcclResult)
    assert pyhcomm.ACL_MEMCPY_DEVICE_TO_DEVICE == 3
    assert pyhcomm.ACL_MEM_TYPE_HIGH_BAND_WIDTH == 0x1000 and pyhcomm.ACL_MEM_MALLOC_HUGE_FIRST == 0
    assert pyhcomm.ACL_RT_MEM_ATTR_MODULE_ID == 1
    assert pyhcomm.ACL_ERROR_RT_AICPU_EXCEPTION == 507018
    for enum in (CommEngine, HcclResult):
        for name, member in enum.__members__.items():
            assert getattr(pyhcomm, name) is member


def test_star_import_gives_the_c_names():
    ns = {}
    exec("from pyhcomm import *", ns)
    for name in ("HcommLocalCopyOnThread", "HcclThreadAcquire", "HcclThreadAcquireWithStream",
                 "HcclGetHcclBuffer", "HcclCommInitAll", "HcclCommInitRootInfo", "HcclGetRootInfo",
                 "HcclCommDestroy", "HcclGetRankSize", "HcclGetRankId", "HcclGetCommName",
                 "COMM_ENGINE_CPU_TS", "HCCL_SUCCESS", "ACL_MEMCPY_HOST_TO_DEVICE"):
        assert name in ns, name


def test_c_tier_outputs_follow_the_code():
    from pyhcomm import acl
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == 0 and isinstance(comms, list) and type(comms[0]) is int
    out = pyhcomm.HcclGetHcclBuffer(comms[0])
    assert len(out) == 3 and out[0] == 0
    assert pyhcomm.HcclCommDestroy(comms[0]) == 0       # no outputs: ret alone


def test_wrong_python_types_may_raise_type_error():
    from pyhcomm import acl
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    with pytest.raises(TypeError):
        pyhcomm.HcommLocalCopyOnThread(1, "dst", 0x10, 1)


# -- exception hierarchy -----------------------------------------------------------------------------
def test_exception_hierarchy():
    assert issubclass(HcclUsageError, HcclError)
    assert issubclass(HcclNotSupportedError, HcclUsageError)
    assert issubclass(HcclRuntimeError, HcclError)
    assert issubclass(pyhcomm.HcclTimeoutError, HcclRuntimeError)
    assert issubclass(pyhcomm.HcclDeadlockError, HcclRuntimeError)
    assert issubclass(AclRuntimeError, HcclError)
    e = HcclUsageError(HcclResult.HCCL_E_PARA, API, "dst is bad")
    assert e.code == 1 and e.api == API and str(e) == f"{API}: dst is bad"


# -- Pythonic tier -----------------------------------------------------------------------------------
def test_pythonic_seed_example():
    with Device(0) as dev:
        assert dev.soc_name == "Ascend910B1"
        comm = Comm.init_all([0])[0]
        assert (comm.rank, comm.size, comm.device) == (0, 1, 0)
        assert isinstance(comm.name, str) and comm.name
        stream = dev.stream()
        t = comm.thread(pyhcomm.COMM_ENGINE_CPU_TS, stream=stream, notify_num=2)
        assert isinstance(t, Thread) and t.engine == CommEngine.COMM_ENGINE_CPU_TS and t.notify_num == 2
        assert t.stream.handle == stream.handle
        src, dst = dev.malloc(256), dev.malloc(256, module_id=pyhcomm.HCCL)
        assert isinstance(src, Buffer) and len(src) == 256 and src.addr % 64 == 0
        data = np.arange(64, dtype=np.float32)
        src.write(data)
        assert t.local_copy(dst, src) is None
        assert (dst.read(np.float32) == 0).all()          # enqueued only
        stream.synchronize()
        assert (dst.read(np.float32) == data).all()
        assert (dst.numpy(np.float32) == data).all()
        comm.close()
        comm.close()                                       # idempotent
        src.close()
        src.close()
        stream.close()
        stream.close()
    dev.close()                                            # idempotent


def test_buffer_slices_and_fill():
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.threads(pyhcomm.COMM_ENGINE_CPU_TS, 1, 1)[0]
        buf = dev.malloc(512)
        buf.fill(0xEE)
        buf[:128].write(np.arange(128, dtype=np.uint8))
        t.local_copy(buf[256:384], buf[:128])
        t.synchronize()
        got = buf.read()
        assert (got[:128] == np.arange(128)).all()
        assert (got[128:256] == 0xEE).all()
        assert (got[256:384] == np.arange(128)).all()
        assert (got[384:] == 0xEE).all()
        with pytest.raises(ValueError):
            buf[::2]


def test_pythonic_errors_carry_code_api_and_message():
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.thread(pyhcomm.COMM_ENGINE_CPU_TS, stream=dev.stream())
        small, big = dev.malloc(256), dev.malloc(512)
        with pytest.raises(HcclUsageError) as info:
            t.local_copy(small, big, 512)
        err = info.value
        assert err.code == HcclResult.HCCL_E_PARA and err.api == API
        assert str(err).startswith(f"{API}: dst ") and "runs past" in str(err) and "256" in str(err)
        with pytest.raises(HcclUsageError) as info:
            t.local_copy(small, big)                       # sizes differ and nbytes is missing
        assert info.value.api == API
        with pytest.raises(HcclUsageError) as info:
            t.local_copy(0, small, 16)
        assert info.value.code == HcclResult.HCCL_E_PTR and str(info.value).startswith(f"{API}: dst")
        with pytest.raises(HcclUsageError) as info:
            t.local_copy(big[0:256], big[128:384])
        assert "overlap" in str(info.value)


def test_pythonic_not_supported_error():
    pyhcomm.set_product("Atlas 800I A2")
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.thread(stream=dev.stream())
        a, b = dev.malloc(64), dev.malloc(64)
        with pytest.raises(HcclNotSupportedError) as info:
            t.local_copy(a, b)
        assert info.value.code == HcclResult.HCCL_E_NOT_SUPPORT == 5
        assert info.value.api == API and str(info.value).startswith(API)
        assert "Atlas 800I A2" in str(info.value)


def test_pythonic_thread_lookup_and_acquire_errors():
    with Device(0):
        comm = Comm.init_all([0])[0]
        with pytest.raises(HcclUsageError) as info:
            Thread(0x1234)
        assert info.value.code == HcclResult.HCCL_E_NOT_FOUND
        with pytest.raises(HcclNotSupportedError) as info:
            comm.threads(pyhcomm.COMM_ENGINE_AIV, 1)
        assert info.value.api == "HcclThreadAcquire" and str(info.value).startswith("HcclThreadAcquire:")
        with pytest.raises(HcclUsageError) as info:
            comm.threads(pyhcomm.COMM_ENGINE_CPU_TS, 0)
        assert info.value.code == HcclResult.HCCL_E_PARA


def test_device_errors_are_acl_runtime_errors():
    with pytest.raises(AclRuntimeError) as info:
        Device(999)
    assert info.value.code == pyhcomm.ACL_ERROR_RT_INVALID_DEVICEID
    assert info.value.api == "aclrtSetDevice" and str(info.value).startswith("aclrtSetDevice:")


def test_hccl_buffer_object():
    with Device(0):
        comm = Comm.init_all([0])[0]
        buf = comm.hccl_buffer()
        assert buf.size == 400 << 20
        assert comm.hccl_buffer().addr == buf.addr
        buf.close()                                        # library-owned: nothing happens
        buf[:16].write(np.ones(16, dtype=np.uint8))
        assert (comm.hccl_buffer()[:16].read() == 1).all()


def test_kernel_object_runs_in_stream_order_and_raises_on_failure():
    with Device(0) as dev:
        stream = dev.stream()
        log = []

        def good(tag):
            log.append(tag)

        def bad():
            log.append("bad")
            raise ValueError("nope")

        Kernel(good).launch(stream, "first")
        stream.launch(good, "second")
        assert log == []
        stream.synchronize()
        assert log == ["first", "second"]
        Kernel(bad).launch(stream)
        Kernel(good).launch(stream, "skipped")
        with pytest.raises(AclRuntimeError) as info:
            stream.synchronize()
        assert info.value.code == pyhcomm.ACL_ERROR_RT_AICPU_EXCEPTION
        assert "nope" in str(info.value)
        assert log == ["first", "second", "bad"]
        stream.synchronize()                               # error reported once


def test_kernel_object_is_device_side():
    pyhcomm.set_product("Atlas 350")
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.threads(pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)[0]
        src, dst = dev.malloc(128), dev.malloc(128)
        src.write(np.arange(128, dtype=np.uint8))
        with pytest.raises(HcclNotSupportedError):
            t.local_copy(dst, src)                         # not from the host on Atlas 350

        @Kernel
        def copy(thread, d, s):
            thread.local_copy(d, s)

        copy.launch(dev.stream(), t, dst, src)
        dev.synchronize()
        assert (dst.read() == np.arange(128)).all()


def test_pythonic_comm_ranks_on_host_threads():
    root = Comm.root_info()
    nranks = 3
    seen = {}
    all_joined = threading.Barrier(nranks, timeout=JOIN_TIMEOUT)

    def rank_main(rank):
        def body():
            with Device(rank) as dev, Comm(nranks, root, rank) as comm:
                t = comm.thread(stream=dev.stream())
                buf = comm.hccl_buffer()
                src = dev.malloc(64)
                src.write(np.full(64, rank + 1, dtype=np.uint8))
                t.local_copy(buf[:64], src)
                t.synchronize()
                seen[rank] = (comm.rank, comm.size, comm.name, int(buf[:64].read()[0]))
                all_joined.wait()
        return body

    run_threads([rank_main(r) for r in range(nranks)])
    assert sorted(seen) == [0, 1, 2]
    assert {v[2] for v in seen.values()} == {seen[0][2]}
    for r, (rank, size, _name, first) in seen.items():
        assert (rank, size, first) == (r, nranks, r + 1)


def test_stream_object_wraps_the_c_handle():
    from pyhcomm import acl
    with Device(0) as dev:
        s = dev.stream()
        assert isinstance(s, Stream) and acl.rt.synchronize_stream(s.handle) == 0
        s.close()
        assert acl.rt.synchronize_stream(s.handle) == pyhcomm.ACL_ERROR_RT_PARAM_INVALID
