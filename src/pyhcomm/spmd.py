"""Launch N ranks in this process, each on its own simulated device.

    def body(comm, n):
        ...                      # rank comm.rank of comm.size, its device is current
        return result

    results = pyhcomm.launch(body, 4, 1024, product="Atlas A3")

Contract: every launch runs in a Sim of its own (:class:`pyhcomm.sim.Sim`: fresh handles,
addresses and record, so the same program gives the same record every time); rank ``r`` runs on
device ``r`` with its own communicator (``HcclCommInitRootInfo``); ``launch`` blocks until every
rank returned and gives their results in rank order. A root info made outside the launch (as
HCCL's examples make it in ``main()`` before starting one host thread per device) names a further
communicator the ranks may join: the launch's Sim makes its world on first use. Before the
communicators are destroyed every rank waits for the others (so one-sided reads of a rank that
finished early still find its memory). An exception on one rank aborts the others' blocking calls
and is re-raised as :class:`RankError` (``.rank``, cause = the original); a world that can never
progress fails through the scheduler's hang report instead of hanging; ``timeout`` bounds the
whole run.

Schedulers: ``"coop"`` (default) runs every rank as a greenlet on the calling OS thread, choices
made by a seeded policy (``seed``); ``"threaded"`` runs one OS thread per rank.

One rank per process (``mpi``; the MPI transport, :mod:`pyhcomm.transport.mpi`): inside an MPI job
(``mpiexec -n P python script.py``; the default there) every process calls ``launch`` with the same
arguments and runs ranks ``r`` with ``r % P`` its MPI rank, in a Sim of its own; the ranks of all
processes form one world; every process gets every rank's result (pickled across). Outside a job,
``mpi=True`` starts ``mpiexec -n nranks`` itself (``fn`` must be importable by module and name,
arguments and results picklable) and returns the results here. A rank that raises, anywhere, is
the :class:`RankError` of every process; a process that dies is named by the others within
``PYHCOMM_MPI_LIVENESS`` seconds. Each process's record is its launch Sim's; with ``sim=`` given,
``mpi=True`` outside a job leaves the merged record of every process in ``sim.record``
(:mod:`pyhcomm.sim.merge`; inside a job, :func:`pyhcomm.sim.merge.gather` merges them).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import tempfile

from . import sim as sim_mod
from .aclrt.device import aclrtResetDevice, aclrtSetDevice
from .config import Config
from .hccl import comm as comm_mod
from .sim.runtime import program_ctx
from .sched.base import Waitable
from .sched.os_waits import in_stdlib


class LaunchObserver:
    """Watches the launches made while a Sim is current (an entry of its ``launch_observers``):
    :meth:`started` gets the launch's Sim before its ranks start, :meth:`ended` the same Sim and
    the exception the launch is about to raise (:class:`RankError`, :class:`LaunchTimeout`) or
    None, after the ranks ended; either may raise instead. The verifier is one."""

    def started(self, sim) -> None:
        """A launch in ``sim`` is about to start its ranks."""

    def ended(self, sim, error) -> None:
        """The launch in ``sim`` ended; ``error``: what it is about to raise, or None."""


class RankError(RuntimeError):
    """A rank of :func:`launch` raised; ``.rank`` says which, ``__cause__`` is the exception.

    The message says what failed, the same in every process of an MPI job::

        rank 2 failed: AssertionError
          at prog.py:12
          last error logged by rank 2: HcommLocalCopyOnThread: dst is NULL

    ``.cause`` is its first line after ``rank R failed: `` (the exception's type and message),
    ``.where`` the ``file:line`` where it was raised (the innermost frame outside pyhcomm; None:
    unknown), ``.last_error`` the last error pyhcomm logged for the rank's host program ("": none),
    ``.failed_at`` the seq the launch record's next entry had when the rank failed (what came from
    there on may follow from the failure; None: unknown, a rank of another process).
    """

    def __init__(self, rank: int, exc: BaseException, last_error: str = "", where=None, failed_at=None):
        self.rank = rank
        self.failed_at = failed_at
        self.cause = failure_text(exc)
        self.where = where if where is not None else user_frame(exc)
        self.last_error = last_error
        super().__init__(f"rank {rank} failed: {self.details()}")

    def details(self) -> str:
        """The message after ``rank R failed: ``: the cause, where it was raised, the last error."""
        text = self.cause + (f"\n  at {self.where}" if self.where else "")
        if self.last_error and self.last_error not in self.cause:
            text += f"\n  last error logged by rank {self.rank}: {self.last_error}"
        return text


def failure_text(exc: BaseException) -> str:
    """``Type: message`` of a rank's exception (``Type`` alone when the message is empty, as a
    bare ``assert``'s); the text itself for a failure that came from another process."""
    message = str(exc).strip()
    if isinstance(exc, RemoteRankFailure):
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def user_frame(exc: BaseException):
    """``file:line`` of the innermost frame of ``exc``'s traceback outside pyhcomm and Python's
    standard library: the program's line that raised it, or called what raised it (None: none)."""
    pkg = os.path.dirname(os.path.abspath(__file__))
    tb, where = exc.__traceback__, None
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not os.path.abspath(f).startswith(pkg + os.sep) and not in_stdlib(f):
            where = f"{f}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


class LaunchTimeout(RuntimeError):
    """Ranks still ran when :func:`launch`'s timeout passed."""


class _OnStart(LaunchObserver):
    def __init__(self, observer):
        self.observer = observer

    def started(self, sim) -> None:
        self.observer(sim)


@contextlib.contextmanager
def observe_launches(observer):
    """Call ``observer(sim)`` with the Sim of every ``launch`` started inside the block (from the
    calling context's Sim: ``python -m pyhcomm trace``)."""
    watcher = _OnStart(observer)
    observers = sim_mod.current_sim().launch_observers
    observers.append(watcher)
    try:
        yield
    finally:
        observers.remove(watcher)


def launch(fn, nranks: int, *args, product=None, devices=None, timeout: float | None = None, rank_table=None,
           scheduler: str | None = None, data: bool | None = None, seed: int | None = None, sim=None,
           mpi: bool | None = None, **kwargs) -> list:
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
        mpi: one rank per process over MPI (see the module docstring); default: inside an MPI
            job of several processes (``PYHCOMM_TRANSPORT``), else False.
    """
    if not isinstance(nranks, int) or isinstance(nranks, bool) or nranks < 1:
        raise ValueError(f"launch: nranks {nranks!r} must be a positive int")
    caller = sim_mod.current_sim() if sim is None else sim_mod.existing_sim()   # (makes no Sim for nothing)
    spawn = dict(product=product, devices=devices, timeout=timeout, scheduler=scheduler, data=data, seed=seed)
    if sim is None:
        config = _launch_config(mpi)
        if config is None:      # mpi=True outside an MPI job: mpiexec starts the processes
            return _spawn(fn, nranks, args, kwargs, spawn)
        sim = _new_sim(caller, config, product, scheduler, data, seed)
    else:
        if product is not None:
            sim.runtime.set_product(product)
        if mpi and sim.transport.name != "mpi" and Config.from_env().launcher_size == 1:
            return _spawn(fn, nranks, args, kwargs, dict(spawn, product=sim.runtime.product.name), into=sim)
        sim.scheduler.clear_abort()
    observers = list((caller if caller is not None else sim).launch_observers)
    for observer in observers:
        observer.started(sim)
    world = _World(sim, fn, nranks, args, kwargs, _devices(devices, nranks))
    return _run(sim, world, timeout, rank_table, observers)


def _devices(devices, nranks: int) -> list:
    """The device of each rank: ``devices`` (one each, none twice), else ``0 .. nranks - 1``."""
    devices = list(devices) if devices is not None else list(range(nranks))
    if len(devices) != nranks:
        raise ValueError(f"launch: {nranks} ranks but {len(devices)} devices")
    if len(set(devices)) != nranks:
        raise ValueError(f"launch: devices {devices} repeat a device (one device per rank)")
    return devices


def _launch_config(mpi):
    """The configuration of a launch's own Sim; None when ``mpi=True`` outside an MPI job (the
    launch is spawned under ``mpiexec``). Raises ``ValueError`` for a bad ``PYHCOMM_*`` value."""
    config = Config.from_env()
    config.check_pyhcomm("launch")
    if mpi or (mpi is None and config.use_mpi):
        if config.launcher_size == 1 and mpi:
            return None
        return config.with_values(transport="mpi")
    if config.use_mpi:
        return config.with_values(transport="local")
    return config


def _new_sim(caller, config, product, scheduler, data, seed):
    """The Sim of a launch made in ``caller``'s context: the caller's product unless ``product``
    names one, the cooperative scheduler unless told otherwise, the caller's launch observers."""
    chosen = caller.runtime.product_chosen
    sim = sim_mod.Sim(config, product=product or (caller.runtime.product if chosen else None),
                      scheduler=scheduler or config.scheduler or "coop", data=data, seed=seed,
                      product_chosen=product is not None or chosen)
    sim.launch_observers = caller.launch_observers     # (a launch inside a rank is watched too)
    return sim


def _run(sim, world, timeout, rank_table, observers) -> list:
    """Run ``world``'s ranks in ``sim`` and give their results (see :func:`launch`); the
    observers hear of the end, in ``sim``'s context."""
    sim.runtime.device_count = max(sim.runtime.device_count, max(world.devices) + 1)
    token = sim_mod.enter(sim)
    written = None
    try:
        if rank_table is not None and not isinstance(rank_table, (str, os.PathLike)):
            rank_table = written = _write_rank_table(rank_table)
        job_world = world.join(rank_table)
        try:
            results = world.run(timeout)
            if job_world is not None:
                results = _job_results(sim, job_world.id, world.nranks, world.ranks, results)
        except (RankError, LaunchTimeout) as exc:
            for observer in observers:
                observer.ended(sim, exc)
            raise
        for observer in observers:
            observer.ended(sim, None)
        return results
    finally:
        sim.scheduler.clear_abort()     # the abort of this launch ends with it
        sim_mod.leave(token)
        if written:
            os.unlink(written)


def _write_rank_table(table) -> str:
    """A temporary rank-table file holding ``table`` (a :class:`pyhcomm.topology.RankTable`)."""
    fd, path = tempfile.mkstemp(prefix="pyhcomm_rank_table_", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(table.to_json(), f)
    return path


class _World:
    """One launch: the rank bodies and what they report."""

    def __init__(self, sim, fn, nranks, args, kwargs, devices):
        self.sim = sim
        self.fn, self.nranks, self.args, self.kwargs = fn, nranks, args, kwargs
        self.devices = devices
        self.job = False                    # ranks of other processes too (MPI): only ``ranks`` here
        self.ranks = list(range(nranks))
        self.root = self.rank_table = None
        self.results = [None] * nranks
        self.errors: dict[int, tuple] = {}
        self.order = itertools.count()
        self.finished = 0       # ranks that returned (or failed)
        self.barrier = None

    def join(self, rank_table):
        """How the ranks will find each other: ``rank_table`` (a file), else a root info (an MPI
        job's named world, whose ranks here are those of this process: returned)."""
        sim = self.sim
        if rank_table is not None:
            self.rank_table = rank_table
            return None
        if sim.transport.name != "mpi":
            self.root = comm_mod.get_root_info()
            return None
        self.job, self.ranks = True, _job_ranks(sim, self.nranks)
        with sim.lock:   # every process names the same world: no root info to broadcast
            job_world = comm_mod.named_world(sim.transport.launch_world(), self.nranks)
        self.root = job_world.root_info()
        return job_world

    def run(self, timeout) -> list:
        """Run this process's ranks as host programs of the Sim's scheduler; their results, in
        rank order (:meth:`outcome`)."""
        self.barrier = _Barrier(self, timeout)
        unfinished = self.sim.scheduler.run_programs(
            [(f"rank {r}", functools.partial(self.body, r)) for r in self.ranks], timeout)
        if unfinished and not self.errors:
            what = ", ".join(unfinished)
            raise LaunchTimeout(f"{what} still ran after {timeout} s" if timeout is not None
                                else f"{what} can never finish")
        return self.outcome()

    def body(self, rank: int) -> None:
        from .pythonic import Comm
        sched = self.sim.scheduler
        barrier = self.barrier
        comm = None
        opened = False
        try:
            aclrtSetDevice(self.devices[rank])
            opened = True
            comm = (Comm(self.nranks, self.root, rank) if self.root is not None
                    else Comm.from_cluster_info(self.rank_table, rank))
            self.results[rank] = self.fn(comm, *self.args, **self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller with its rank
            error = RankError(rank, exc, program_ctx().last_error, failed_at=self.sim.record.next_seq())
            self.errors[rank] = (next(self.order), exc, error)
            reason = f"rank {rank} failed: {error.cause}" + (f" at {error.where}" if error.where else "")
            sched.abort(reason)
            if self.job:
                self.sim.transport.abort_all(reason, rank)
            barrier.abort()
        finally:
            # A rank that returned enqueues nothing more: stop counting it as a host program that
            # may, or the other ranks' hang detection would wait for it until the timeout.
            sched.unregister_host()
            self.finished += 1
            barrier.wait()
            if self.job and comm is not None and sched.abort_reason is None:
                try:
                    comm.barrier()   # every rank of every process is done: memory may go now
                except Exception:  # noqa: BLE001 - an abort meanwhile: reported by outcome()
                    pass
            try:
                if comm is not None:
                    comm.close()
            finally:
                if opened:
                    aclrtResetDevice(self.devices[rank])
                sched.unregister_host()

    def outcome(self) -> list:
        if self.job:
            origin = self.sim.transport.abort_origin()
            if origin is not None and origin[1] not in self.errors:   # it began in another process
                cause = RemoteRankFailure.of(*origin)
                raise RankError(origin[1], cause) from cause
        if self.errors:
            _order, exc, error = min(self.errors.values(), key=lambda e: e[0])
            raise error from exc
        return self.results


class _Barrier:
    """Every rank of this process waits here once it returned, before closing its communicator,
    until every one returned (so one-sided reads of a rank that finished early still find its
    memory): a blocking call of the scheduler, on a :class:`~pyhcomm.sched.base.Waitable`
    settled at each arrival; an abort breaks it."""

    def __init__(self, world, timeout):
        self.world, self.timeout = world, timeout
        self.broken = False
        self.arrivals = Waitable("launch barrier")

    def wait(self) -> None:
        w = self.world
        sched = w.sim.scheduler
        if self.broken or w.finished == len(w.ranks):
            sched.settle(self.arrivals)      # (only the last arrival opens it: one scan of the waiters, not one per rank)
        sched.run_until(lambda: self.broken or w.finished == len(w.ranks), self.timeout, "launch barrier",
                        (self.arrivals,), detect_stuck=False)

    def abort(self) -> None:
        self.broken = True
        self.world.sim.scheduler.settle(self.arrivals)


# -- one rank per process (MPI) ------------------------------------------------------------------
class RemoteRankFailure(RuntimeError):
    """The cause of a :class:`RankError` whose rank ran in another process (its message as it
    reached this one)."""

    @classmethod
    def of(cls, reason: str, rank) -> "RemoteRankFailure":
        prefix = f"rank {rank} failed: "
        return cls(reason[len(prefix):] if reason.startswith(prefix) else reason)


def _job_ranks(sim, nranks: int) -> list:
    """The ranks of an MPI job's launch that run in this process: ``r % processes == this one``."""
    procs, me = sim.transport.processes()
    if nranks < procs:
        raise ValueError(f"launch: {nranks} ranks on {procs} MPI processes: every process needs a rank")
    return [r for r in range(nranks) if r % procs == me]


def _job_results(sim, root: int, nranks, ranks, results) -> list:
    """Every rank's result, in rank order, in every process of the job (exchanged over MPI)."""
    mine = {r: results[r] for r in ranks}
    try:
        return sim.transport.gather_results(root, nranks, mine)
    except RuntimeError as exc:
        origin = sim.transport.abort_origin()
        rank = origin[1] if origin is not None and origin[1] is not None else -1
        cause = RemoteRankFailure.of(str(exc), rank)
        raise RankError(rank, cause) from cause


def _spawn(fn, nranks, args, kwargs, options, into=None) -> list:
    """``launch(..., mpi=True)`` outside an MPI job: run it under ``mpiexec -n nranks`` (one rank
    per process) and return the results; a temporary folder carries the call and the outcome and
    is removed before returning. ``into``: a Sim that gets the merged record of the processes
    (:mod:`pyhcomm.sim.merge`), also when a rank failed."""
    import pickle
    import shutil
    import subprocess
    import sys

    from .transport.mpi_link import mpiexec
    if getattr(fn, "__module__", None) == "__main__" or "<locals>" in getattr(fn, "__qualname__", ""):
        raise ValueError(f"launch(mpi=True): {fn!r} must be importable by module and name in another "
                         "process (define it at the top level of a module other than __main__)")
    timeout = options.pop("timeout")
    folder = tempfile.mkdtemp(prefix="pyhcomm_mpi_launch_")
    try:
        with open(os.path.join(folder, "call.pkl"), "wb") as f:
            pickle.dump((fn, nranks, args, kwargs, options, into is not None), f)
        env = Config.child_environment(PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        cmd = mpiexec() + ["-disable-auto-cleanup", "-n", str(nranks), sys.executable, "-m", "pyhcomm.spmd_child",
                           folder]
        try:
            proc = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            raise LaunchTimeout(f"mpiexec -n {nranks} still ran after {timeout} s") from None
        if into is not None:
            parts = [os.path.join(folder, f"record.{p}.pkl") for p in range(nranks)]
            if all(os.path.exists(p) for p in parts):
                from .sim.merge import merge
                into.record = merge(parts)
        outcome = os.path.join(folder, "outcome.pkl")
        if os.path.exists(outcome):
            with open(outcome, "rb") as f:
                ok, value = pickle.load(f)
            if ok:
                return value
            rank, text = value
            cause = RemoteRankFailure(text)
            raise RankError(rank, cause) from cause
        raise RuntimeError(f"launch(mpi=True): mpiexec exited {proc.returncode} without an outcome\n"
                           f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
