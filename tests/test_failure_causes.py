"""Every failure says its cause: a failing rank's ``RankError`` and the verifier's ``error`` finding
carry the exception's type, its message, where it was raised and the last error pyhcomm logged for
that rank; the calls of other ranks that an abort makes fail are logged in one line; nothing that
follows from the failure is reported as a finding of its own; ``acl.get_recent_err_msg()`` gives
the calling program's last error."""
import logging
import os

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.verify import check
import failing_ranks

E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol
THIS = os.path.abspath(__file__)
HELPER = os.path.abspath(failing_ranks.__file__)
pytestmark = pytest.mark.timeout(120)


def _line(marker: str, path: str = THIS) -> int:
    """The line of ``path`` that holds ``marker`` (in a comment), for exact ``file:line`` texts."""
    with open(path, encoding="utf-8") as f:
        (line,) = [k for k, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    return line


def _cpu_ts_channel_on_a3(comm):
    """Asks for a COMM_ENGINE_CPU_TS channel, which Atlas A3 refuses (logged); returns the list it got."""
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol = 1 - comm.rank, P.COMM_PROTOCOL_HCCS
    _ret, channels = pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, [d])
    return channels


def _unpacks_a_refused_channel(comm):
    if comm.rank == 1:
        ch, = _cpu_ts_channel_on_a3(comm)  # unpack
    comm.barrier()


A3_REFUSAL = "HcclChannelAcquire: COMM_ENGINE_CPU_TS channels are not supported on Atlas A3"


# -- RankError --------------------------------------------------------------------------------------------
def test_a_bare_assert_names_its_type_and_line():
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(failing_ranks.rank_2_asserts, 4)
    err = info.value
    where = f"{HELPER}:{_line('bare assert', HELPER)}"
    assert str(err) == f"rank 2 failed: AssertionError\n  at {where}"
    assert (err.rank, err.cause, err.where, err.last_error) == (2, "AssertionError", where, "")
    assert isinstance(err.__cause__, AssertionError)


def test_rank_error_quotes_the_last_error_the_rank_logged():
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(_unpacks_a_refused_channel, 2, product="Atlas A3")
    assert str(info.value) == ("rank 1 failed: ValueError: not enough values to unpack (expected 1, got 0)\n"
                               f"  at {THIS}:{_line('unpack')}\n"
                               f"  last error logged by rank 1: {A3_REFUSAL}")
    assert info.value.last_error == A3_REFUSAL


def test_an_hccl_error_raised_is_not_quoted_twice():
    def body(comm):
        if comm.rank == 0:
            pyhcomm.Device(comm.device).malloc(0)

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 2)
    assert str(info.value).startswith("rank 0 failed: AclRuntimeError: aclrtMallocWithCfg: size 0 must be greater "
                                      "than 0\n  at ")
    assert "last error" not in str(info.value)


def test_the_calls_an_abort_makes_fail_are_logged_in_one_line(caplog):
    def body(comm):
        stream, _ = acl.rt.create_stream()
        if comm.rank == 15:
            raise RuntimeError("boom")  # boom
        pyhcomm.HcclBarrier(comm.handle, stream)
        acl.rt.synchronize_stream(stream)

    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        with pytest.raises(pyhcomm.RankError):
            pyhcomm.launch(body, 16)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"aborted (rank 15 failed: RuntimeError: boom at {THIS}:{_line('boom')}): the calls that fail "
                      "because of it are logged at INFO"]


def test_an_abort_is_logged_once_per_launch(caplog):
    def body(comm):
        stream, _ = acl.rt.create_stream()
        if comm.rank == 1:
            raise RuntimeError("again")
        pyhcomm.HcclBarrier(comm.handle, stream)

    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        for _ in range(2):
            with pytest.raises(pyhcomm.RankError):
                pyhcomm.launch(body, 3)
    assert sum("aborted (rank 1 failed" in r.getMessage() for r in caplog.records) == 2


# -- acl.get_recent_err_msg ------------------------------------------------------------------------------
def test_get_recent_err_msg_gives_the_last_failed_call_of_the_calling_program():
    assert pyhcomm.HcommLocalCopyOnThread(0, 0, 0, 0) == pyhcomm.HCCL_E_PTR
    assert acl.get_recent_err_msg() == "HcommLocalCopyOnThread: dst is NULL"
    assert acl.get_recent_err_msg() == ""           # read once


def test_get_recent_err_msg_is_per_rank():
    def body(comm):
        if comm.rank == 1:
            _cpu_ts_channel_on_a3(comm)
        comm.barrier()
        return acl.get_recent_err_msg()

    assert pyhcomm.launch(body, 2, product="Atlas A3") == ["", A3_REFUSAL]


# -- the verifier's findings -----------------------------------------------------------------------------
def test_the_error_finding_quotes_the_last_error_the_rank_logged():
    report = check(_unpacks_a_refused_channel, 2, product="Atlas A3", schedules=2)
    (f,) = report.findings
    assert (f.kind, f.title) == ("error", "rank 1 failed: ValueError: not enough values to unpack (expected 1, got 0)")
    assert f.lines == [f"at {THIS}:{_line('unpack')}", f"last error logged by rank 1: {A3_REFUSAL}"]


def test_a_bare_assert_finding_names_the_type_once():
    (f,) = check(failing_ranks.rank_1_asserts, 2, schedules=1).findings
    assert (f.title, f.lines) == ("rank 1 failed: AssertionError", [f"at {HELPER}:{_line('assert in verify', HELPER)}"])


def test_nothing_that_follows_a_failure_is_a_finding():
    """Rank 1 fails after both ranks queued an AllGather: rank 0's synchronize gives up, its read
    after it races with the AllGather's tasks, the AllGather's work is never waited for and its
    waits are never satisfied. All of it follows from the failure: one finding."""
    def body(comm):
        send, _ = acl.rt.malloc(256, 0)
        recv, _ = acl.rt.malloc(256 * comm.size, 0)
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllGather(send, recv, 64, pyhcomm.HCCL_DATA_TYPE_FP32, comm.handle, stream) == 0
        if comm.rank == 1:
            raise ValueError("wrong result on rank 1")  # rank 1 fails
        acl.rt.synchronize_stream(stream)
        out, _ = acl.rt.malloc_host(256 * comm.size)
        acl.rt.memcpy(out, 256 * comm.size, recv, 256 * comm.size, pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST)

    report = check(body, 2, schedules=4)
    assert [(f.kind, f.title) for f in report.findings] == [("error", "rank 1 failed: ValueError: wrong result on rank 1")]


def test_a_defect_before_the_failure_is_still_found():
    """A race between two tasks that ran before the rank failed is a finding of its own."""
    def body(comm):
        dev = pyhcomm.Device(comm.device)
        one, two = dev.stream(), dev.stream()
        a = comm.thread(E.COMM_ENGINE_CPU_TS, stream=one)
        b = comm.thread(E.COMM_ENGINE_CPU_TS, stream=two)
        src, dst = dev.malloc(256), dev.malloc(256)
        a.local_copy(dst, src)
        b.local_copy(dst, src)                          # nothing orders the two copies
        one.synchronize()
        two.synchronize()
        raise RuntimeError("then fails")

    report = check(body, 1, schedules=1)
    assert sorted(f.kind for f in report.findings) == ["error", "race"]
