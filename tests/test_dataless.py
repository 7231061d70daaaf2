"""Data-less mode (``launch(..., data=False)``, ``PYHCOMM_DATA=0``): every range is still checked
and recorded, no byte moves, no device storage is committed."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.backend import NoDataError, NullBackend, NullStorage

FP32 = pyhcomm.HCCL_DATA_TYPE_FP32


def allgather(comm, nbytes):
    send, _ = acl.rt.malloc(nbytes, 0)
    recv, _ = acl.rt.malloc(nbytes * comm.size, 0)
    stream, _ = acl.rt.create_stream()
    ret = pyhcomm.HcclAllGather(send, recv, nbytes // 4, FP32, comm.handle, stream)
    assert ret == 0 and acl.rt.synchronize_stream(stream) == 0
    sim = pyhcomm.current_sim()
    alloc = sim.memory.device_map.find(recv)
    _, ccl, _ = pyhcomm.HcclGetHcclBuffer(comm.handle)
    return type(alloc.storage), type(sim.memory.device_map.find(ccl).storage)


def test_a_data_less_collective_runs_checks_and_records_without_storage():
    sim = pyhcomm.Sim(scheduler="coop", data=False)
    kinds = pyhcomm.launch(allgather, 8, 4096, sim=sim)       # one server of Atlas 800T A2: the mesh
    assert isinstance(sim.backend, NullBackend)
    assert kinds == [(NullStorage, NullStorage)] * 8            # user buffers and HCCL buffers alike
    writes = sim.record.tasks(kind="Write")
    assert len(writes) == 8 * 7 and all(w.state == "done" for w in writes)
    assert {w.writes[0][1] for w in writes} == {4096}            # the ranges are still recorded


def test_a_bad_range_is_refused_in_data_less_mode_too():
    pyhcomm.reset(data=False)
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 0)
    a, _ = acl.rt.malloc(256, 0)
    b, _ = acl.rt.malloc(256, 0)
    assert pyhcomm.HcommLocalCopyOnThread(t, a + 128, b, 256) == pyhcomm.HCCL_E_PARA    # runs past
    assert pyhcomm.HcommLocalCopyOnThread(t, a, b, 256) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert [x.kind for x in pyhcomm.record.tasks()] == ["LocalCopy"]


def test_reading_device_memory_without_data_is_a_clear_error():
    pyhcomm.reset(data=False)
    with pyhcomm.Device(0) as dev:
        buf = dev.malloc(64)
        buf.write(np.arange(64, dtype=np.uint8))          # accepted: nothing moves
        with pytest.raises(NoDataError, match="without data"):
            buf.numpy()


def test_pyhcomm_data_0_selects_data_less_mode(env):
    env("PYHCOMM_DATA", "0")
    assert pyhcomm.reset().data is False
    env("PYHCOMM_DATA", "1")
    assert pyhcomm.reset().data is True


def test_launch_data_false_wins_over_the_environment(env):
    env("PYHCOMM_DATA", "1")

    def body(comm):
        return pyhcomm.current_sim().data

    assert pyhcomm.launch(body, 2, data=False) == [False, False]
    assert pyhcomm.launch(body, 2) == [True, True]
