"""Launch N ranks in this process, each on its own simulated device.

    def body(comm, n):
        ...                      # rank comm.rank of comm.size, its device is current
        return result

    results = pyhcomm.launch(body, 4, 1024, product="Atlas A3")

Contract: every launch runs in a Sim of its own (:class:`pyhcomm.sim.Sim`: fresh handles,
addresses and record, so the same program gives the same record every time); rank ``r`` runs on
device ``r`` with its own communicator (``HcclCommInitRootInfo``); ``launch`` blocks until every
rank returned and gives their results in rank order. Before the communicators are destroyed every
rank waits for the others (so one-sided reads of a rank that finished early still find its
memory). An exception on one rank aborts the others' blocking calls and is re-raised as
:class:`RankError` (``.rank``, cause = the original); a world that can never progress fails through
the scheduler's hang report instead of hanging; ``timeout`` bounds the whole run.

Schedulers: ``"coop"`` (default) runs every rank as a greenlet on the calling OS thread, choices
made by a seeded policy (``seed``); ``"threaded"`` runs one OS thread per rank.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
import threading
import time

from . import sim as sim_mod
from .aclrt.device import aclrtResetDevice, aclrtSetDevice
from .config import Config
from .hccl import comm as comm_mod
from .sched import ABORTED, DONE_OK


#: Tools that watch launches (the verifier installs them; the core never imports them):
#: ``start_hooks`` are called with the launch's Sim before its ranks start, ``end_hooks`` with the
#: Sim and the exception the launch is about to raise (``RankError``, ``LaunchTimeout``) or None,
#: after the ranks ended; a hook may raise instead.
start_hooks: list = []
end_hooks: list = []


class RankError(RuntimeError):
    """A rank of :func:`launch` raised; ``.rank`` says which, ``__cause__`` is the exception."""

    def __init__(self, rank: int, exc: BaseException):
        self.rank = rank
        super().__init__(f"rank {rank} failed: {exc}")


class LaunchTimeout(RuntimeError):
    """Ranks still ran when :func:`launch`'s timeout passed."""


@contextlib.contextmanager
def observe_launches(observer):
    """Call ``observer(sim)`` with the Sim of every ``launch`` started inside the block (a start
    hook for its time: ``python -m pyhcomm trace``)."""
    start_hooks.append(observer)
    try:
        yield
    finally:
        start_hooks.remove(observer)


def launch(fn, nranks: int, *args, product=None, devices=None, timeout: float | None = None, rank_table=None,
           scheduler: str | None = None, data: bool | None = None, seed: int | None = None, sim=None,
           **kwargs) -> list:
    """Run ``fn(comm, *args, **kwargs)`` on ``nranks`` ranks; return their results. Blocks.

    Args:
        fn: the rank body; ``comm`` is a :class:`pyhcomm.Comm`.
        nranks: number of ranks (each on its own device: ``devices`` or ``0..nranks-1``).
        product: the product to simulate (default: the current Sim's).
        timeout: seconds for the whole run (None: no limit beyond the hang detection).
        rank_table: a rank-table file path (or :class:`pyhcomm.topology.RankTable`): the ranks
            join with ``HcclCommInitClusterInfo`` and sit where it says; default: root info.
        scheduler: ``"coop"`` (default) or ``"threaded"``.
        data: False: data-less mode (every range checked and recorded, no byte moves);
            default ``PYHCOMM_DATA``.
        seed: the cooperative scheduler's policy seed (default ``PYHCOMM_SEED``, 0: first come,
            first served).
        sim: run in this :class:`pyhcomm.sim.Sim` (``pyhcomm.current_sim()``, to read its record
            after) instead of a new one; its scheduler is used.
    """
    if not isinstance(nranks, int) or isinstance(nranks, bool) or nranks < 1:
        raise ValueError(f"launch: nranks {nranks!r} must be a positive int")
    if sim is None:
        parent = sim_mod.current_sim()
        config = Config.from_env()
        config.check_pyhcomm("launch")
        sched = scheduler or config.scheduler or "coop"
        chosen = parent.runtime.product_chosen
        sim = sim_mod.Sim(config, product=product or (parent.runtime.product if chosen else None),
                          scheduler=sched, data=data, seed=seed, product_chosen=product is not None or chosen)
    else:
        if product is not None:
            sim.runtime.set_product(product)
        sim.scheduler.abort_reason = None
    for hook in list(start_hooks):
        hook(sim)
    devices = list(devices) if devices is not None else list(range(nranks))
    if len(devices) != nranks:
        raise ValueError(f"launch: {nranks} ranks but {len(devices)} devices")
    if len(set(devices)) != nranks:
        raise ValueError(f"launch: devices {devices} repeat a device (one device per rank)")
    sim.runtime.device_count = max(sim.runtime.device_count, max(devices) + 1)
    token = sim_mod.enter(sim)
    written = None
    try:
        root = comm_mod.get_root_info() if rank_table is None else None
        if rank_table is not None and not isinstance(rank_table, (str, os.PathLike)):
            fd, written = tempfile.mkstemp(prefix="pyhcomm_rank_table_", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(rank_table.to_json(), f)
            rank_table = written
        world = _World(sim, fn, nranks, args, kwargs, devices, root, rank_table)
        try:
            results = world.run_coop(timeout) if sim.scheduler.name == "coop" else world.run_threads(timeout)
        except (RankError, LaunchTimeout) as exc:
            for hook in list(end_hooks):
                hook(sim, exc)
            raise
        for hook in list(end_hooks):
            hook(sim, None)
        return results
    finally:
        sim.scheduler.abort_reason = None   # the abort of this launch ends with it
        sim_mod.leave(token)
        if written:
            os.unlink(written)


class _World:
    """One launch: the rank bodies and what they report."""

    def __init__(self, sim, fn, nranks, args, kwargs, devices, root, rank_table):
        self.sim = sim
        self.fn, self.nranks, self.args, self.kwargs = fn, nranks, args, kwargs
        self.devices, self.root, self.rank_table = devices, root, rank_table
        self.results = [None] * nranks
        self.errors: dict[int, tuple] = {}
        self.order = itertools.count()
        self.finished = 0       # ranks that returned (or failed)
        self.closed = 0         # ranks that closed their communicator

    def body(self, rank: int, barrier) -> None:
        from .pythonic import Comm
        sched = self.sim.scheduler
        comm = None
        opened = False
        try:
            aclrtSetDevice(self.devices[rank])
            opened = True
            comm = (Comm(self.nranks, self.root, rank) if self.root is not None
                    else Comm.from_cluster_info(self.rank_table, rank))
            self.results[rank] = self.fn(comm, *self.args, **self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller with its rank
            self.errors[rank] = (next(self.order), exc)
            sched.abort(f"rank {rank} failed: {exc!r}")
            barrier.abort()
        finally:
            # A rank that returned enqueues nothing more: stop counting it as a host program that
            # may, or the other ranks' hang detection would wait for it until the timeout.
            sched.unregister_host()
            self.finished += 1
            barrier.wait()
            try:
                if comm is not None:
                    comm.close()
            finally:
                if opened:
                    aclrtResetDevice(self.devices[rank])
                sched.unregister_host()
                self.closed += 1

    def outcome(self) -> list:
        if self.errors:
            rank, (_, exc) = min(self.errors.items(), key=lambda kv: kv[1][0])
            raise RankError(rank, exc) from exc
        return self.results

    # -- greenlets -----------------------------------------------------------------------------
    def run_coop(self, timeout) -> list:
        sched = self.sim.scheduler
        barrier = _CoopBarrier(self)
        for r in range(self.nranks):
            sched.spawn(f"rank {r}", self.body, r, barrier)
        deadline = None if timeout is None else time.monotonic() + timeout
        status = sched.drive(lambda: self.closed == self.nranks, deadline)
        if status != DONE_OK and self.closed < self.nranks:
            alive = [a.name for a in sched.actors.values()]
            if status != ABORTED:
                sched.abort(f"launch timed out after {timeout} s")
            sched.drive(lambda: self.closed == self.nranks or not sched.actors)
            if not self.errors:
                raise LaunchTimeout(f"{', '.join(alive)} still ran after {timeout} s" if timeout is not None
                                    else f"{', '.join(alive)} can never finish")
        return self.outcome()

    # -- OS threads ----------------------------------------------------------------------------
    def run_threads(self, timeout) -> list:
        sched = self.sim.scheduler
        barrier = _ThreadBarrier(self.nranks, timeout)
        threads = [threading.Thread(target=sim_mod.context_for(self.sim).run, args=(self.body, r, barrier),
                                    name=f"pyhcomm-rank{r}", daemon=True) for r in range(self.nranks)]
        for t in threads:
            t.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:  # the timeout bounds the whole run, not each join
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        alive = [r for r, t in enumerate(threads) if t.is_alive()]
        if alive:
            sched.abort(f"launch timed out after {timeout} s")
            barrier.abort()
            for t in threads:
                t.join(5.0)
            raise LaunchTimeout(f"ranks {alive} still ran after {timeout} s")
        return self.outcome()


class _ThreadBarrier:
    """Every rank waits here before closing its communicator (OS threads)."""

    def __init__(self, n, timeout):
        self._b = threading.Barrier(n)
        self._timeout = timeout

    def wait(self) -> None:
        try:
            self._b.wait(timeout=self._timeout)
        except threading.BrokenBarrierError:
            pass

    def abort(self) -> None:
        self._b.abort()


class _CoopBarrier:
    """The same for greenlets: a blocking call of the cooperative scheduler."""

    def __init__(self, world):
        self.world = world
        self.broken = False

    def wait(self) -> None:
        w = self.world
        w.sim.scheduler.poke()
        w.sim.scheduler.run_until(lambda: self.broken or w.finished == w.nranks, None, "launch barrier",
                                  detect_stuck=False)

    def abort(self) -> None:
        self.broken = True
