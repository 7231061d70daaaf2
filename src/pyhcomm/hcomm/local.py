"""Local operations: ``HcommLocalCopyOnThread``.

A2/A3 realise the copy as an SDMA memcpy task on the thread's stream; Atlas 350 as an SDMA SQE
written by the AI CPU. Here the task copies with the backend when the stream reaches it.

Deliberate differences from the hardware (which faults later, or corrupts): a range outside one
live allocation of the thread's device, or partially overlapping ``src``/``dst``, is refused at the
call with ``HCCL_E_PARA``. ``src == dst`` is accepted (a no-op copy). Memory freed between the call
and the task fails the stream instead of touching freed memory.
"""
from __future__ import annotations

from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..sim import kinds
from ..sim.task import SiteTask
from ..errors import HcclResult, HcclRuntimeError
from .resources.thread import get_thread
from . import validate as v
from .enqueue import enqueue
from .task_cache import capture
from .validate import UINT64_MAX

API = "HcommLocalCopyOnThread"


class LocalCopyTask(SiteTask):
    """A ``LocalCopy`` task: ``n`` bytes from ``src_alloc + src_off`` to ``dst_alloc + dst_off``."""

    __slots__ = ("dst_alloc", "dst_off", "src_alloc", "src_off", "n")

    kind = kinds.LOCAL_COPY

    def __init__(self, t, side, d, d_off, s, s_off, n):
        self.on_thread(t, side)
        self.dst_alloc, self.dst_off, self.src_alloc, self.src_off, self.n = d, d_off, s, s_off, n
        self.set_site(4)  # set_site <- __init__ <- local_copy <- C tier / Pythonic method <- user

    @property
    def reads(self):
        return ((self.src_alloc.addr + self.src_off, self.n),)

    @property
    def writes(self):
        return ((self.dst_alloc.addr + self.dst_off, self.n),)

    def run(self) -> None:
        dst, src = self.dst_alloc.storage, self.src_alloc.storage
        if dst is None or src is None:
            which = "dst" if dst is None else "src"
            raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, API, f"{which} memory was freed before the copy ran")
        _sim().backend.copy(dst, self.dst_off, src, self.src_off, self.n)


def local_copy(thread: int, dst: int, src: int, n: int) -> None:
    """Enqueue a copy of ``n`` bytes from ``src`` to ``dst`` on ``thread``; returns at once.

    Raises:
        HcclUsageError: NULL pointers or thread (``HCCL_E_PTR``), unknown thread
            (``HCCL_E_NOT_FOUND``), a range outside device memory the thread can access or a
            partial overlap (``HCCL_E_PARA``).
        HcclNotSupportedError: product, side or engine rules (``HCCL_E_NOT_SUPPORT``).
    """
    # Checks in the documented order; each has a cheap test for the common case and falls back
    # to the validate helpers, which produce the error (or convert a numpy integer).
    if not dst or type(dst) is not int:
        dst = v.nonnull(dst, API, "dst")
    if not src or type(src) is not int:
        src = v.nonnull(src, API, "src")
    ctx = program_ctx()
    t = ctx.sim.handles.threads.by_handle.get(thread) if type(thread) is int else None
    if t is None or t.stream.destroyed:
        t = get_thread(thread, API)
    kernels = ctx.kernels
    side = "device" if kernels else "host"
    if t.local_side != side:
        v.product_supports_hcomm(API)
        v.thread_side(t, API)
    if kernels and kernels[-1].device != t.device:
        v.kernel_device(t, kernels[-1], API)
    if type(n) is not int or n < 0 or n > UINT64_MAX:
        n = v.length(n, API)
    # The thread's last allocations (v.thread_dst / thread_src; their test inline here, the
    # hottest primitive: the helpers resolve a miss).
    d = t.last_dst
    if d is None or dst < d.addr or dst + n > d.end or dst == d.end or d.storage is None:
        d = v.thread_dst(t, dst, n, API)[0]
    s = t.last_src
    if s is None or src < s.addr or src + n > s.end or src == s.end or s.storage is None:
        s = v.thread_src(t, src, n, API)[0]
    if dst != src and dst < src + n and src < dst + n:
        v.no_partial_overlap(dst, src, n, API)
    task = LocalCopyTask(t, side, d, dst - d.addr, s, src - s.addr, n)
    if not kernels and ctx.batch is None:
        task.program = ctx.program
        ctx.sim.scheduler.submit(task)
    else:
        enqueue(task, API, ctx)
        if kernels:
            capture(ctx, local_copy, (thread, dst, src, n))
