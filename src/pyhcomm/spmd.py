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
    if sim is None:
        parent = sim_mod.current_sim()
        config = Config.from_env()
        config.check_pyhcomm("launch")
        if mpi or (mpi is None and config.use_mpi):
            if config.launcher_size == 1 and mpi:
                return _spawn(fn, nranks, args, kwargs, dict(product=product, devices=devices, timeout=timeout,
                                                             scheduler=scheduler, data=data, seed=seed))
            config = config.with_values(transport="mpi")
        elif config.use_mpi:
            config = config.with_values(transport="local")
        sched = scheduler or config.scheduler or "coop"
        chosen = parent.runtime.product_chosen
        sim = sim_mod.Sim(config, product=product or (parent.runtime.product if chosen else None),
                          scheduler=sched, data=data, seed=seed, product_chosen=product is not None or chosen)
    else:
        if product is not None:
            sim.runtime.set_product(product)
        if mpi and sim.transport.name != "mpi" and Config.from_env().launcher_size == 1:
            return _spawn(fn, nranks, args, kwargs, dict(product=sim.runtime.product.name, devices=devices,
                                                         timeout=timeout, scheduler=scheduler, data=data, seed=seed),
                          into=sim)
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
    ranks = None
    try:
        if sim.transport.name == "mpi" and rank_table is None:
            ranks = _job_ranks(sim, nranks)
            with sim.lock:   # every process names the same world: no root info to broadcast
                job_world = comm_mod.named_world(f"pyhcomm.launch#{next(_job_launches)}", nranks)
            root = job_world.root_info()
        else:
            root = comm_mod.get_root_info() if rank_table is None else None
        if rank_table is not None and not isinstance(rank_table, (str, os.PathLike)):
            fd, written = tempfile.mkstemp(prefix="pyhcomm_rank_table_", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(rank_table.to_json(), f)
            rank_table = written
        world = _World(sim, fn, nranks, args, kwargs, devices, root, rank_table, ranks)
        try:
            results = world.run_coop(timeout) if sim.scheduler.name == "coop" else world.run_threads(timeout)
        except (RankError, LaunchTimeout) as exc:
            for hook in list(end_hooks):
                hook(sim, exc)
            raise
        for hook in list(end_hooks):
            hook(sim, None)
        return results if ranks is None else _job_results(sim, job_world.id, nranks, ranks, results)
    finally:
        sim.scheduler.abort_reason = None   # the abort of this launch ends with it
        sim_mod.leave(token)
        if written:
            os.unlink(written)


class _World:
    """One launch: the rank bodies and what they report."""

    def __init__(self, sim, fn, nranks, args, kwargs, devices, root, rank_table, ranks=None):
        self.sim = sim
        self.fn, self.nranks, self.args, self.kwargs = fn, nranks, args, kwargs
        self.job = ranks is not None        # ranks of other processes too (MPI): only ``ranks`` here
        self.ranks = list(range(nranks)) if ranks is None else ranks
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
            if self.job:
                self.sim.transport.abort_all(f"rank {rank} failed: {exc!r}", rank)
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
                self.closed += 1

    def outcome(self) -> list:
        if self.job:
            origin = self.sim.transport.abort_origin()
            if origin is not None and origin[1] not in self.errors:   # it began in another process
                cause = RemoteRankFailure.of(*origin)
                raise RankError(origin[1], cause) from cause
        if self.errors:
            rank, (_, exc) = min(self.errors.items(), key=lambda kv: kv[1][0])
            raise RankError(rank, exc) from exc
        return self.results

    # -- greenlets -----------------------------------------------------------------------------
    def run_coop(self, timeout) -> list:
        sched = self.sim.scheduler
        barrier = _CoopBarrier(self)
        for r in self.ranks:
            sched.spawn(f"rank {r}", self.body, r, barrier)
        deadline = None if timeout is None else time.monotonic() + timeout
        mine = len(self.ranks)
        status = sched.drive(lambda: self.closed == mine, deadline)
        if status != DONE_OK and self.closed < mine:
            alive = [a.name for a in sched.actors.values()]
            if status != ABORTED:
                sched.abort(f"launch timed out after {timeout} s")
            sched.drive(lambda: self.closed == mine or not sched.actors)
            if not self.errors:
                raise LaunchTimeout(f"{', '.join(alive)} still ran after {timeout} s" if timeout is not None
                                    else f"{', '.join(alive)} can never finish")
        return self.outcome()

    # -- OS threads ----------------------------------------------------------------------------
    def run_threads(self, timeout) -> list:
        sched = self.sim.scheduler
        barrier = _ThreadBarrier(len(self.ranks), timeout)
        threads = [threading.Thread(target=sim_mod.context_for(self.sim).run, args=(self.body, r, barrier),
                                    name=f"pyhcomm-rank{r}", daemon=True) for r in self.ranks]
        for t in threads:
            t.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:  # the timeout bounds the whole run, not each join
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        alive = [r for r, t in zip(self.ranks, threads) if t.is_alive()]
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
        w.sim.scheduler.run_until(lambda: self.broken or w.finished == len(w.ranks), None, "launch barrier",
                                  detect_stuck=False)

    def abort(self) -> None:
        self.broken = True


# -- one rank per process (MPI) ------------------------------------------------------------------
class RemoteRankFailure(RuntimeError):
    """The cause of a :class:`RankError` whose rank ran in another process (its message as it
    reached this one)."""

    @classmethod
    def of(cls, reason: str, rank) -> "RemoteRankFailure":
        prefix = f"rank {rank} failed: "
        return cls(reason[len(prefix):] if reason.startswith(prefix) else reason)


_job_launches = itertools.count()


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
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
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
