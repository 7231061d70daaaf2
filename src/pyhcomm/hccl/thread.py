"""HCOMM threads: an ordered task queue (a stream) plus its notify registers (``ThreadHandle``).

``HcclThreadAcquire`` creates threads with library-owned streams; ``HcclThreadAcquireWithStream``
wraps a user stream. An exported handle (``HcclThreadExportToCommEngine``) is another handle on the
same stream and notifies, for code running on another engine.

Engines and sides (pyhcomm's rule, documented): a handle of a host engine (CPU, CPU_TS, CCU) is
used by host code, a handle of a device engine (AICPU, AICPU_TS, AIV) by code inside an AI CPU
kernel; the other side gets ``HCCL_E_NOT_SUPPORT`` and is told to export the thread.
"""
from __future__ import annotations

from ..core import handles
from ..core.notify import Notify
from ..core.runtime import runtime
from ..core.scheduler import scheduler
from ..enums import HOST_ENGINES, CommEngine
from ..errors import not_found, not_support, para, ptr
from . import comm as comm_mod

HCOMM_NOTIFY_MAX_NUM = 64
HCOMM_THREADNUM_MAX_NUM = 1000
HCCL_THREAD_NOTIFY_MAX_NUM = 65536

#: Engines each acquire call accepts, per product family ("*" = every family).
ACQUIRE_ENGINES = {
    "*": {CommEngine.COMM_ENGINE_CPU_TS, CommEngine.COMM_ENGINE_AICPU_TS},
    "950": {CommEngine.COMM_ENGINE_CPU},
}
WITH_STREAM_ENGINES = {
    "*": {CommEngine.COMM_ENGINE_CPU_TS},
    "950": {CommEngine.COMM_ENGINE_CPU, CommEngine.COMM_ENGINE_CCU},
}


class HcommThread:
    """One HCOMM thread handle (see the module docstring)."""

    __slots__ = ("handle", "comm", "engine", "stream", "notifies", "owns_stream", "rank", "device",
                 "origin", "exports")

    def __init__(self, comm, engine, stream, notifies, owns_stream, origin=None):
        self.comm = comm
        self.engine = CommEngine(engine)
        self.stream = stream
        self.notifies = notifies
        self.owns_stream = owns_stream
        self.rank = comm.rank
        self.device = comm.device
        self.origin = origin
        self.exports = {}
        self.handle = handles.threads.add(self)

    @property
    def host_side(self) -> bool:
        return self.engine in HOST_ENGINES

    def __repr__(self):
        return (f"<HcommThread 0x{self.handle:x} {self.engine.name} rank {self.rank} "
                f"stream 0x{self.stream.handle:x} notifies={len(self.notifies)}>")


def check_engine(engine, api: str) -> CommEngine:
    """Validate a ``CommEngine`` value (``HCCL_E_PARA`` outside 0..5)."""
    if isinstance(engine, bool) or not isinstance(engine, int):
        raise TypeError(f"{api}: engine must be a CommEngine int, not {type(engine).__name__}")
    if not 0 <= engine <= 5:
        raise para(api, f"engine {int(engine)} is not a valid CommEngine (0..5)")
    return CommEngine(engine)


def _allowed(table, engine: CommEngine, api: str) -> None:
    family = runtime.product.family
    ok = table["*"] | table.get(family, set())
    if engine not in ok:
        names = ", ".join(sorted(e.name for e in ok))
        raise not_support(api, f"engine {engine.name} is not supported on {runtime.product.name} "
                               f"(supported: {names})")


def _check_notify_num(comm, num, total, api: str) -> None:
    if not isinstance(num, int) or num < 0:
        raise para(api, f"notify count {num} must be a non-negative integer")
    if num > HCOMM_NOTIFY_MAX_NUM:
        raise para(api, f"notify count {num} exceeds {HCOMM_NOTIFY_MAX_NUM} per thread")
    if comm.notify_total + total > HCCL_THREAD_NOTIFY_MAX_NUM:
        raise para(api, f"{total} more notifies would exceed {HCCL_THREAD_NOTIFY_MAX_NUM} per communicator "
                        f"({comm.notify_total} in use)")


def _new_thread(comm, engine, stream, notify_num, owns_stream) -> HcommThread:
    t = HcommThread(comm, engine, stream, [], owns_stream)
    t.notifies = [Notify(f"rank {comm.rank} thread 0x{t.handle:x}", i) for i in range(notify_num)]
    comm.threads.append(t)
    comm.notify_total += notify_num
    return t


def acquire(comm_handle, engine, thread_num, notify_num_per_thread) -> list[HcommThread]:
    """``HcclThreadAcquire``: ``thread_num`` new threads with library-owned streams."""
    api = "HcclThreadAcquire"
    comm = comm_mod.get_comm(comm_handle, api)
    engine = check_engine(engine, api)
    _allowed(ACQUIRE_ENGINES, engine, api)
    if not isinstance(thread_num, int) or not 0 < thread_num <= HCOMM_THREADNUM_MAX_NUM:
        raise para(api, f"threadNum {thread_num} is outside (0, {HCOMM_THREADNUM_MAX_NUM}]")
    _check_notify_num(comm, notify_num_per_thread, thread_num * max(0, notify_num_per_thread), api)
    dev = runtime.devices[comm.device]
    out = []
    for _ in range(thread_num):
        stream = dev.new_stream(f"{engine.name} thread stream")
        out.append(_new_thread(comm, engine, stream, notify_num_per_thread, True))
    return out


def acquire_with_stream(comm_handle, engine, stream_handle, notify_num) -> HcommThread:
    """``HcclThreadAcquireWithStream``: wrap the user's stream as a thread."""
    api = "HcclThreadAcquireWithStream"
    comm = comm_mod.get_comm(comm_handle, api)
    engine = check_engine(engine, api)
    if not stream_handle:
        raise ptr(api, "stream is NULL")
    stream = handles.streams.get(stream_handle)
    if stream is None:
        raise para(api, f"stream 0x{stream_handle:x} is not a live stream")
    if stream.device != comm.device:
        raise para(api, f"stream 0x{stream_handle:x} is on device {stream.device}, "
                        f"the communicator's rank {comm.rank} on device {comm.device}")
    _allowed(WITH_STREAM_ENGINES, engine, api)
    _check_notify_num(comm, notify_num, notify_num if isinstance(notify_num, int) else 0, api)
    return _new_thread(comm, engine, stream, notify_num, False)


def get_thread(handle, api: str, name: str = "thread") -> HcommThread:
    """Look a thread handle up: 0 is ``HCCL_E_PTR``, unknown ``HCCL_E_NOT_FOUND``."""
    if not handle:
        raise ptr(api, f"{name} is 0 (NULL)")
    t = handles.threads.get(handle)
    if t is None:
        raise not_found(api, f"{name} 0x{handle:x} is not a live thread handle "
                             "(from HcclThreadAcquire / HcclThreadAcquireWithStream)"
                        if isinstance(handle, int) else f"{name} {handle!r} is not a thread handle")
    return t


def release_comm_threads(comm) -> None:
    """Forget the threads of a destroyed communicator; library-owned streams go with them."""
    dev = runtime.devices.get(comm.device)
    for t in comm.threads:
        handles.threads.remove(t.handle)
        if t.owns_stream and dev is not None and t.origin is None:
            dev.streams.pop(t.stream.handle, None)
            handles.streams.remove(t.stream.handle)
            scheduler.drop_stream(t.stream)
    comm.threads.clear()


comm_mod._destroy_hooks.append(release_comm_threads)
