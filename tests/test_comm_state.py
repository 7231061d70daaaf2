"""Communicator state: names, status, suspend / resume with state callbacks, asynchronous errors,
the working NIC choice."""
import logging

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

from hcomm_testutil import host_setup

P = pyhcomm.HcclCommStatePhase


def test_status_suspend_and_resume(caplog):
    comm, stream, thread = host_setup(notify=2)
    _, name = pyhcomm.HcclGetCommName(comm)
    assert pyhcomm.HcclCommGetStatus(name) == (0, pyhcomm.HCCL_COMM_STATUS_READY)
    assert pyhcomm.HcclCommSuspend(comm) == 0
    assert pyhcomm.HcclCommGetStatus(name) == (0, pyhcomm.HCCL_COMM_STATUS_SUSPENDING)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_CPU_TS, 1, 1) == (R.HCCL_E_SUSPENDING, [])
        assert pyhcomm.HcclGetHcclBuffer(comm)[0] == R.HCCL_E_SUSPENDING
    assert "HcclThreadAcquire" in caplog.text and "is suspended" in caplog.text
    assert pyhcomm.HcclGetRankSize(comm) == (0, 1)                  # queries still answer
    # a notify left recorded before the fault is cleared by the resume
    assert pyhcomm.HcommThreadNotifyRecordOnThread(thread, thread, 1) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    t = pyhcomm.current_sim().handles.threads.get(thread)
    assert t.notifies[1].value == 1
    assert pyhcomm.HcclCommResume(comm) == 0
    assert t.notifies[1].value == 0
    assert pyhcomm.HcclCommGetStatus(name) == (0, pyhcomm.HCCL_COMM_STATUS_READY)
    assert pyhcomm.HcclCommResume(comm) == R.HCCL_E_PARA             # not suspended
    assert pyhcomm.HcclCommGetStatus("no such comm") == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclCommGetHandleWithName(None) == (R.HCCL_E_PTR, 0)


def test_state_callbacks_run_around_resume_and_destroy():
    comm, _stream, _thread = host_setup()
    seen = []

    def cb(c, phase, args):
        seen.append((c, P(phase).name, args))
        return 0

    assert pyhcomm.HcclCommRegCommStateCallback("HCCL", cb, "hccl-args") == 0
    assert pyhcomm.HcclCommRegCommStateCallback("MC2", lambda c, p, a: seen.append(("mc2", P(p).name)), None) == 0
    pyhcomm.HcclCommSuspend(comm)
    assert pyhcomm.HcclCommResume(comm) == 0
    assert pyhcomm.HcclCommDestroy(comm) == 0
    assert seen == [(comm, "HCCL_COMM_STATE_PHASE_RESUME_PRE", "hccl-args"), ("mc2", "HCCL_COMM_STATE_PHASE_RESUME_PRE"),
                    (comm, "HCCL_COMM_STATE_PHASE_RESUME_POST", "hccl-args"), ("mc2", "HCCL_COMM_STATE_PHASE_RESUME_POST"),
                    (comm, "HCCL_COMM_STATE_PHASE_DESTROY_PRE", "hccl-args"), ("mc2", "HCCL_COMM_STATE_PHASE_DESTROY_PRE"),
                    (comm, "HCCL_COMM_STATE_PHASE_DESTROY_POST", "hccl-args"),
                    ("mc2", "HCCL_COMM_STATE_PHASE_DESTROY_POST")]
    assert pyhcomm.HcclCommRegCommStateCallback("MC2", 0, None) == 0        # unregistered
    assert pyhcomm.HcclCommRegCommStateCallback("X", 0x1234, None) == R.HCCL_E_NOT_SUPPORT   # a C address
    assert pyhcomm.HcclCommRegCommStateCallback("X", "cb", None) == R.HCCL_E_PARA
    assert pyhcomm.HcclCommRegCommStateCallback(None, cb, None) == R.HCCL_E_PTR


def test_a_failing_pre_callback_stops_the_destroy():
    comm, _stream, _thread = host_setup()
    assert pyhcomm.HcclCommRegCommStateCallback("veto", lambda c, p, a: int(R.HCCL_E_AGAIN), None) == 0
    assert pyhcomm.HcclCommDestroy(comm) == R.HCCL_E_AGAIN
    assert pyhcomm.HcclGetRankSize(comm) == (0, 1)                  # still alive
    assert pyhcomm.HcclCommRegCommStateCallback("veto", None, None) == 0
    assert pyhcomm.HcclCommDestroy(comm) == 0


def test_async_error_reports_a_timed_out_wait():
    comm, stream, thread = host_setup()
    assert pyhcomm.HcclGetCommAsyncError(comm) == (0, R.HCCL_SUCCESS)
    assert pyhcomm.HcommThreadNotifyWaitOnThread(thread, 0, 1) == 0        # nobody records it
    assert acl.rt.synchronize_stream(stream) != 0
    assert pyhcomm.HcclGetCommAsyncError(comm) == (0, R.HCCL_E_TIMEOUT)
    pyhcomm.HcclCommSuspend(comm)
    assert pyhcomm.HcclCommResume(comm) == 0
    assert pyhcomm.HcclGetCommAsyncError(comm) == (0, R.HCCL_SUCCESS)    # forgotten by the resume


def test_working_nic_choice_is_checked_and_kept():
    comm, _stream, _thread = host_setup()
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, [0], [True]) == 0
    assert pyhcomm.current_sim().handles.comms.get(comm).nic_backup == {0: True}
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, [0, 0], [True]) == R.HCCL_E_PARA
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, [1], [False]) == R.HCCL_E_PARA
    assert pyhcomm.HcclCommWorkingDevNicSet(comm, None, [False]) == R.HCCL_E_PTR
