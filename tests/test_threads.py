"""Threads: CommEngine, HcclThreadAcquire and HcclThreadAcquireWithStream (engine and product rules,
limits, handles)."""
import logging

import pytest

import pyhcomm
from pyhcomm import CommEngine, acl
from hcomm_testutil import malloc, pattern, read, write

R = pyhcomm.HcclResult
CPU, CPU_TS, AICPU, AICPU_TS, AIV, CCU = (pyhcomm.COMM_ENGINE_CPU, pyhcomm.COMM_ENGINE_CPU_TS,
                                          pyhcomm.COMM_ENGINE_AICPU, pyhcomm.COMM_ENGINE_AICPU_TS,
                                          pyhcomm.COMM_ENGINE_AIV, pyhcomm.COMM_ENGINE_CCU)


def _comm(device=0, product=None):
    if product:
        pyhcomm.set_product(product)
    assert acl.init() == 0
    assert acl.rt.set_device(device) == 0
    ret, comms = pyhcomm.HcclCommInitAll([device])
    assert ret == 0
    return comms[0]


def test_comm_engine_values():
    assert [int(e) for e in CommEngine] == [-1, 0, 1, 2, 3, 4, 5]
    assert CommEngine.COMM_ENGINE_RESERVED == pyhcomm.COMM_ENGINE_RESERVED == -1
    assert CommEngine.COMM_ENGINE_CPU == pyhcomm.COMM_ENGINE_CPU == 0
    assert CommEngine.COMM_ENGINE_CPU_TS == pyhcomm.COMM_ENGINE_CPU_TS == 1
    assert CommEngine.COMM_ENGINE_AICPU == pyhcomm.COMM_ENGINE_AICPU == 2
    assert CommEngine.COMM_ENGINE_AICPU_TS == pyhcomm.COMM_ENGINE_AICPU_TS == 3
    assert CommEngine.COMM_ENGINE_AIV == pyhcomm.COMM_ENGINE_AIV == 4
    assert CommEngine.COMM_ENGINE_CCU == pyhcomm.COMM_ENGINE_CCU == 5


# -- HcclThreadAcquire -------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", [CPU_TS, AICPU_TS])
def test_acquire_returns_distinct_nonzero_int_handles(engine):
    comm = _comm()
    ret, threads = pyhcomm.HcclThreadAcquire(comm, engine, 4, 2)
    assert ret == R.HCCL_SUCCESS
    assert isinstance(threads, list) and len(threads) == 4
    assert all(type(t) is int and t != 0 for t in threads)
    assert len(set(threads)) == 4
    ret, more = pyhcomm.HcclThreadAcquire(comm, engine, 1, 0)
    assert ret == 0 and len(more) == 1 and more[0] not in threads


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3", "Atlas 350"])
@pytest.mark.parametrize("engine", [CPU_TS, AICPU_TS])
def test_acquire_cpu_ts_and_aicpu_ts_on_every_supported_product(product, engine):
    comm = _comm(product=product)
    ret, threads = pyhcomm.HcclThreadAcquire(comm, engine, 1, 1)
    assert ret == 0 and threads[0]


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
@pytest.mark.parametrize("engine", [CPU, AICPU, AIV, CCU])
def test_acquire_unsupported_engines_on_a2_a3(product, engine, caplog):
    comm = _comm(product=product)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclThreadAcquire(comm, engine, 1, 1) == (R.HCCL_E_NOT_SUPPORT, [])
    assert "HcclThreadAcquire" in caplog.text and CommEngine(engine).name in caplog.text


def test_acquire_cpu_engine_on_atlas_350():
    comm = _comm(product="Atlas 350")
    ret, threads = pyhcomm.HcclThreadAcquire(comm, CPU, 2, 1)
    assert ret == 0 and len(threads) == 2


@pytest.mark.parametrize("engine", [-1, 6, 100])
def test_acquire_invalid_engine_is_para(engine, caplog):
    comm = _comm()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclThreadAcquire(comm, engine, 1, 1) == (R.HCCL_E_PARA, [])
    assert "engine" in caplog.text


@pytest.mark.parametrize("n", [0, -1, 1001])
def test_acquire_thread_num_outside_range_is_para(n):
    comm = _comm()
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, n, 1) == (R.HCCL_E_PARA, [])


def test_acquire_thread_num_limits_inclusive():
    comm = _comm()
    ret, threads = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1000, 0)
    assert ret == 0 and len(threads) == 1000 and len(set(threads)) == 1000


def test_acquire_notify_per_thread_limit():
    comm = _comm()
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1, 64)[0] == 0
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1, 65) == (R.HCCL_E_PARA, [])
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1, -1) == (R.HCCL_E_PARA, [])


def test_notifies_per_communicator_limit():
    comm = _comm()
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1000, 64)[0] == 0      # 64000
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 24, 64)[0] == 0        # 65536 exactly
    assert pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1, 1) == (R.HCCL_E_PARA, [])
    stream, _ = acl.rt.create_stream()
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 1) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 0)[0] == 0
    # the limit is per communicator: another one starts from zero
    ret, other = pyhcomm.HcclCommInitAll([1])
    assert pyhcomm.HcclThreadAcquire(other[0], CPU_TS, 1, 64)[0] == 0


def test_acquire_null_and_unknown_comm():
    _comm()
    assert pyhcomm.HcclThreadAcquire(0, CPU_TS, 1, 1) == (R.HCCL_E_PTR, [])
    assert pyhcomm.HcclThreadAcquire(0xABCDEF, CPU_TS, 1, 1) == (R.HCCL_E_NOT_FOUND, [])


# -- HcclThreadAcquireWithStream ---------------------------------------------------------------------
def test_acquire_with_stream_seed_example():
    comm = _comm()
    stream, _ = acl.rt.create_stream()
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 2)
    assert ret == 0 and type(thread) is int and thread != 0
    ret, thread2 = pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 2)
    assert ret == 0 and thread2 not in (0, thread)


def test_acquire_with_stream_thread_runs_on_that_stream():
    comm = _comm()
    stream, _ = acl.rt.create_stream()
    other, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 1)
    src, dst = malloc(128), malloc(128)
    data = write(src, pattern(128))
    assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 128) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(dst, 128) == data).all()
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.stream.handle == stream and task.stream.handle != other


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
@pytest.mark.parametrize("engine", [CPU, AICPU, AICPU_TS, AIV, CCU])
def test_acquire_with_stream_engines_on_a2_a3(product, engine):
    comm = _comm(product=product)
    stream, _ = acl.rt.create_stream()
    assert pyhcomm.HcclThreadAcquireWithStream(comm, engine, stream, 1) == (R.HCCL_E_NOT_SUPPORT, 0)


@pytest.mark.parametrize("engine", [CPU, CPU_TS, CCU])
def test_acquire_with_stream_engines_on_atlas_350(engine):
    comm = _comm(product="Atlas 350")
    stream, _ = acl.rt.create_stream()
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, engine, stream, 1)
    assert ret == 0 and thread


@pytest.mark.parametrize("engine", [AICPU, AICPU_TS, AIV])
def test_acquire_with_stream_device_engines_refused_on_atlas_350(engine):
    comm = _comm(product="Atlas 350")
    stream, _ = acl.rt.create_stream()
    assert pyhcomm.HcclThreadAcquireWithStream(comm, engine, stream, 1) == (R.HCCL_E_NOT_SUPPORT, 0)


def test_acquire_with_stream_argument_errors(caplog):
    comm = _comm()
    stream, _ = acl.rt.create_stream()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, 0, 1) == (R.HCCL_E_PTR, 0)
    assert "HcclThreadAcquireWithStream" in caplog.text and "stream" in caplog.text
    assert pyhcomm.HcclThreadAcquireWithStream(0, CPU_TS, stream, 1) == (R.HCCL_E_PTR, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(0x999, CPU_TS, stream, 1) == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, 0x7777, 1) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 65) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(comm, 9, stream, 1) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclThreadAcquireWithStream(comm, -1, stream, 1) == (R.HCCL_E_PARA, 0)


def test_acquire_with_stream_of_another_device_is_para():
    comm = _comm(device=0)
    assert acl.rt.set_device(1) == 0
    stream1, _ = acl.rt.create_stream()
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream1, 1) == (R.HCCL_E_PARA, 0)


def test_acquire_with_destroyed_stream_is_para():
    comm = _comm()
    stream, _ = acl.rt.create_stream()
    assert acl.rt.destroy_stream(stream) == 0
    assert pyhcomm.HcclThreadAcquireWithStream(comm, CPU_TS, stream, 1) == (R.HCCL_E_PARA, 0)


def test_thread_handles_of_every_rank_are_distinct():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    seen = set()
    for c in comms:
        ret, threads = pyhcomm.HcclThreadAcquire(c, AICPU_TS, 3, 1)
        assert ret == 0
        seen.update(threads)
    assert len(seen) == 6 and 0 not in seen


@pytest.mark.parametrize("engine", [AICPU, AIV, CCU])
def test_acquire_unsupported_engines_on_atlas_350(engine):
    comm = _comm(product="Atlas 350")
    assert pyhcomm.HcclThreadAcquire(comm, engine, 1, 1) == (R.HCCL_E_NOT_SUPPORT, [])
