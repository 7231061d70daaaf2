"""Ranks of the cooperative scheduler that wait in the OS (pyhcomm.sched.os_waits): ``time.sleep``
in a rank blocks only that rank, and a rank blocked in an OS primitive is reported, with its
``file:line`` and the remedy, and fails the launch instead of hanging it."""
import logging
import threading
import time

import pytest

import pyhcomm
from pyhcomm.sched.os_waits import BlockedInOsError

pytestmark = pytest.mark.timeout(60)
THIS = __file__


def _line(marker: str) -> int:
    with open(THIS, encoding="utf-8") as f:
        (line,) = [k for k, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    return line


def test_sleeping_ranks_sleep_at_the_same_time():
    """The issue's program: 8 ranks, each sleeps rank * 50 ms (about 0.35 s in all; one after the
    other they would take 1.4 s)."""
    sleep = time.sleep

    def body(comm):
        time.sleep(comm.rank * 0.05)
        comm.barrier()
        return comm.rank

    t0 = time.perf_counter()
    assert pyhcomm.launch(body, 8, scheduler="coop") == list(range(8))
    assert time.perf_counter() - t0 < 1.0
    assert time.sleep is sleep          # put back


def test_a_shorter_sleep_ends_first():
    woke = []

    def body(comm):
        time.sleep((comm.size - 1 - comm.rank) * 0.02)
        woke.append(comm.rank)

    pyhcomm.launch(body, 6, scheduler="coop")
    assert woke == [5, 4, 3, 2, 1, 0]


def test_a_sleep_is_only_the_ranks_own():
    seen = {}

    def body(comm):
        seen[comm.rank] = time.sleep is not pyhcomm_sleep     # a rank runs: time.sleep is its own
        time.sleep(0)
        return comm.rank

    pyhcomm_sleep = time.sleep
    assert pyhcomm.launch(body, 2, scheduler="coop") == [0, 1]
    assert seen == {0: True, 1: True} and time.sleep is pyhcomm_sleep
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(lambda comm: time.sleep(-1), 1, scheduler="coop")
    assert isinstance(info.value.__cause__, ValueError) and time.sleep is pyhcomm_sleep


def test_an_abort_ends_a_sleep():
    def body(comm):
        if comm.rank == 1:
            raise RuntimeError("no need to wait")
        time.sleep(30)

    t0 = time.perf_counter()
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 2, scheduler="coop")
    assert info.value.rank == 1 and time.perf_counter() - t0 < 10


def test_a_rank_blocked_in_an_os_primitive_is_reported_and_fails_the_launch(caplog):
    barrier = threading.Barrier(4)

    def body(comm):
        barrier.wait()  # an OS barrier
        return comm.rank

    t0 = time.perf_counter()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        with pytest.raises(pyhcomm.RankError) as info:
            pyhcomm.launch(body, 4, scheduler="coop")
    assert time.perf_counter() - t0 < 20        # the first report comes after about 2 s
    err = info.value
    cause = err.__cause__
    assert isinstance(cause, BlockedInOsError)
    where = f"{THIS}:{_line('an OS barrier')}"
    report = (f"rank {err.rank} is blocked in threading.Barrier.wait at {where}, outside pyhcomm, for 2 s: on the "
              "cooperative scheduler every rank runs on this one OS thread, so no other rank can run until it "
              "returns. Wait for the other ranks with pyhcomm's calls (comm.barrier(), HcclBarrier, a notify), or "
              "give each rank an OS thread: pyhcomm.launch(..., scheduler=\"threaded\")")
    assert str(cause) == report and err.where == where
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [report]   # the others: INFO
    assert pyhcomm.launch(lambda comm: comm.rank, 2, scheduler="coop") == [0, 1]              # and the next runs


def test_the_threaded_scheduler_runs_the_same_program():
    barrier = threading.Barrier(3)

    def body(comm):
        barrier.wait(timeout=30)
        time.sleep(0.01)
        return comm.rank

    assert pyhcomm.launch(body, 3, scheduler="threaded") == [0, 1, 2]
