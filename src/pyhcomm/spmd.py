"""Launch N ranks in this process: one host OS thread and one simulated device per rank.

    def body(comm, n):
        ...                      # rank comm.rank of comm.size, its device is current
        return result

    results = pyhcomm.launch(body, 4, 1024, product="Atlas A3")

Contract: rank ``r`` runs on device ``r`` with its own communicator (``HcclCommInitRootInfo``);
``launch`` blocks until every rank returned and gives their results in rank order. Before the
communicators are destroyed every rank waits for the others (so one-sided reads of a rank that
finished early still find its memory). An exception on one rank aborts the others' blocking
calls and is re-raised as :class:`RankError` (``.rank``, cause = the original); a world that can
never progress fails through the scheduler's hang report instead of hanging; ``timeout`` bounds
the whole run.
"""
from __future__ import annotations

import itertools
import json
import os
import tempfile
import threading
import time

from .aclrt.device import aclrtResetDevice, aclrtSetDevice
from .core.runtime import runtime
from .core.scheduler import scheduler
from .hccl import comm as comm_mod


class RankError(RuntimeError):
    """A rank of :func:`launch` raised; ``.rank`` says which, ``__cause__`` is the exception."""

    def __init__(self, rank: int, exc: BaseException):
        self.rank = rank
        super().__init__(f"rank {rank} failed: {exc}")


class LaunchTimeout(RuntimeError):
    """Ranks still ran when :func:`launch`'s timeout passed."""


def launch(fn, nranks: int, *args, product=None, devices=None, timeout: float | None = None, rank_table=None,
           **kwargs) -> list:
    """Run ``fn(comm, *args, **kwargs)`` on ``nranks`` ranks; return their results. Blocks.

    Args:
        fn: the rank body; ``comm`` is a :class:`pyhcomm.Comm`.
        nranks: number of ranks (each on its own device: ``devices`` or ``0..nranks-1``).
        product: select this product first (no device may be open).
        timeout: seconds for the whole run (None: no limit beyond the hang detection).
        rank_table: a rank-table file path (or :class:`pyhcomm.topology.RankTable`): the ranks
            join with ``HcclCommInitClusterInfo`` and sit where it says; default: root info.
    """
    if not isinstance(nranks, int) or nranks < 1:
        raise ValueError(f"launch: nranks {nranks!r} must be a positive int")
    if product is not None:
        runtime.set_product(product, max(nranks, runtime.device_count))
    devices = list(devices) if devices is not None else list(range(nranks))
    if len(devices) != nranks:
        raise ValueError(f"launch: {nranks} ranks but {len(devices)} devices")
    if len(set(devices)) != nranks:
        raise ValueError(f"launch: devices {devices} repeat a device (one device per rank)")
    if max(devices) >= runtime.device_count:
        runtime.device_count = max(devices) + 1
    root = comm_mod.get_root_info() if rank_table is None else None
    written = None
    if rank_table is not None and not isinstance(rank_table, (str, os.PathLike)):
        fd, written = tempfile.mkstemp(prefix="pyhcomm_rank_table_", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(rank_table.to_json(), f)
        rank_table = written
    try:
        return _run(fn, nranks, args, kwargs, devices, timeout, root, rank_table)
    finally:
        if written:
            os.unlink(written)


def _run(fn, nranks, args, kwargs, devices, timeout, root, rank_table) -> list:
    from .pythonic import Comm

    results = [None] * nranks
    errors: dict[int, tuple] = {}
    order = itertools.count()
    done = threading.Barrier(nranks)
    scheduler.abort_reason = None

    def body(rank: int) -> None:
        comm = None
        opened = False
        try:
            aclrtSetDevice(devices[rank])
            opened = True
            comm = Comm(nranks, root, rank) if root is not None else Comm.from_cluster_info(rank_table, rank)
            results[rank] = fn(comm, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller with its rank
            errors[rank] = (next(order), exc)
            scheduler.abort(f"rank {rank} failed: {exc!r}")
            done.abort()
        finally:
            # A rank that returned enqueues nothing more: stop counting it as a host thread that
            # may, or the other ranks' hang detection would wait for it until the timeout.
            scheduler.unregister_host()
            try:
                done.wait(timeout=None if timeout is None else timeout)
            except threading.BrokenBarrierError:
                pass
            try:
                if comm is not None:
                    comm.close()
            finally:
                if opened:
                    aclrtResetDevice(devices[rank])
                scheduler.unregister_host()

    threads = [threading.Thread(target=body, args=(r,), name=f"pyhcomm-rank{r}", daemon=True)
               for r in range(nranks)]
    for t in threads:
        t.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    for t in threads:  # the timeout bounds the whole run, not each join
        t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    alive = [r for r, t in enumerate(threads) if t.is_alive()]
    if alive:
        scheduler.abort(f"launch timed out after {timeout} s")
        done.abort()
        for t in threads:
            t.join(5.0)
        scheduler.abort_reason = None
        raise LaunchTimeout(f"ranks {alive} still ran after {timeout} s")
    scheduler.abort_reason = None
    if errors:
        rank, (_, exc) = min(errors.items(), key=lambda kv: kv[1][0])
        raise RankError(rank, exc) from exc
    return results
