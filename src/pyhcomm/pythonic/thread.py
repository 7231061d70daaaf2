"""HCOMM threads as objects (``ThreadHandle``): local copies and reduces, thread notifies, fences,
joins; and batch mode (``with batch_mode(tag):``) for the calling host program or kernel."""
from __future__ import annotations

import contextlib

from ..hcomm import enqueue as _enqueue
from ..hcomm import notify as _notify
from ..hcomm import thread_ops as _thread_ops
from ..hcomm.local import local_copy as _local_copy
from ..hcomm.reduce import local_reduce as _local_reduce
from ..hcomm.resources import thread as _thread
from ..enums import CommEngine
from ._common import addr, common_size, element_count, public_engine, reduce_dtype, reduce_op
from .device import Stream


class Thread:
    """An HCOMM thread (``ThreadHandle``); primitives enqueue on it and return at once.

    Owned by its communicator: released when the communicator is destroyed (no ``close``)."""

    def __init__(self, handle: int):
        self.handle = handle
        self._t = _thread.get_thread(handle, "Thread")

    @property
    def engine(self) -> CommEngine:
        """The thread's ``CommEngine`` (an engine registered beyond them: its description)."""
        return public_engine(self._t.engine)

    @property
    def rank(self) -> int:
        """The rank of the communicator the thread belongs to."""
        return self._t.rank

    @property
    def stream(self) -> Stream:
        return Stream(self._t.stream.handle, owned=False)

    @property
    def notify_num(self) -> int:
        return len(self._t.notifies)

    def local_copy(self, dst, src, nbytes: int | None = None) -> None:
        """Enqueue ``HcommLocalCopyOnThread``; ``nbytes`` defaults to the size of both buffers."""
        if nbytes is None:
            nbytes = common_size("HcommLocalCopyOnThread", "nbytes", dst, src)
        _local_copy(self.handle, addr(dst), addr(src), nbytes)

    def local_reduce(self, dst, src, count: int | None = None, dtype=None, op="sum") -> None:
        """Enqueue ``HcommLocalReduceOnThread``: ``dst[i] = op(dst[i], src[i])`` for ``count`` elements.

        Args:
            dst, src: Buffers or device addresses.
            count: elements; defaults to the size of both buffers over the element size.
            dtype: an ``HcommDataType`` (or int), or a numpy dtype (``np.float32``, ``ml_dtypes.bfloat16``).
            op: an ``HcommReduceOp`` (or int), or ``"sum"``, ``"prod"``, ``"max"``, ``"min"``.
        """
        api = "HcommLocalReduceOnThread"
        dt, rop = reduce_dtype(dtype, api), reduce_op(op, api)
        if count is None:
            count = element_count(api, dt, dst, src)
        _local_reduce(self.handle, addr(dst), addr(src), count, dt, rop)

    def export(self, engine) -> "Thread":
        """This thread's handle for code running on ``engine`` (``HcclThreadExportToCommEngine``):
        the same stream and notifies; exporting again to the same engine gives the same handle."""
        return Thread(_thread.export_to_comm_engine(self._t.comm.handle, 1, [self.handle], engine)[0].handle)

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until this thread's stream is idle."""
        self.stream.synchronize(timeout_ms)

    def record(self, dst_thread: "Thread", idx: int) -> None:
        """Enqueue ``HcommThreadNotifyRecordOnThread``: when this thread's queue reaches the task,
        set notify ``idx`` of ``dst_thread`` (a :class:`Thread` or a handle). Returns at once."""
        dst = dst_thread.handle if isinstance(dst_thread, Thread) else dst_thread
        _notify.record(self.handle, dst, idx)

    def wait(self, idx: int, timeout: int | None = None) -> None:
        """Enqueue a wait for this thread's own notify ``idx``, which the wait clears.

        ``timeout`` in seconds (0 = forever); ``None`` uses the default of the calling OS thread
        (``HcommThreadNotifyWaitOnThreadWithDefaultTimeout``). Returns at once; a wait that
        times out or can never be satisfied fails the stream, reported by ``synchronize()``.
        """
        if timeout is None:
            _notify.wait_default(self.handle, idx)
        else:
            _notify.wait(self.handle, idx, timeout)

    def fence(self) -> None:
        """``HcommFenceOnThread``: the NBI transfers this host program posted are complete when it
        returns (``COMM_ENGINE_CPU`` threads on the host, Atlas 350)."""
        _thread_ops.fence(self.handle)

    def join(self, timeout: int = 0) -> None:
        """``HcommThreadJoin``: inside an AI CPU kernel (Atlas 350), block until this thread's
        queue is empty; ``timeout`` seconds (0 = forever)."""
        _thread_ops.thread_join(self.handle, timeout)

    def __repr__(self):
        return f"<Thread 0x{self.handle:x} {self.engine.name}>"


@contextlib.contextmanager
def batch_mode(tag: str | None = None):
    """``with batch_mode(tag):`` keeps the tasks the calling host program (or kernel) issues in
    the block and launches them, in issue order, when it ends (``HcommBatchModeStart`` /
    ``HcommBatchModeEnd``; device-side code on Atlas A2 / A3 must use it). When the block raises,
    the kept tasks are dropped, never launched (recorded as skipped), and the exception propagates."""
    _enqueue.batch_start(tag)
    try:
        yield
    except BaseException:
        _enqueue.batch_drop(tag)
        raise
    _enqueue.batch_end(tag)
