"""AI CPU kernels: Python functions that run on the device side, in stream order.

A launch enqueues a ``KernelLaunch`` task. When the stream reaches it, the kernel function runs on
the thread that executes tasks, with a :class:`KernelContext` pushed so that HCOMM primitives it
calls are device-side calls. Until it returns, the rest of its stream waits (``stream.busy``);
other streams keep running, and the kernel may wait for them (``HcommThreadJoin``).
A kernel that raises, or returns a nonzero value, fails its stream with
``ACL_ERROR_RT_AICPU_EXCEPTION``.
"""
from __future__ import annotations

import traceback

from ..errors import AclError, AclRuntimeError
from .runtime import runtime
from .scheduler import scheduler


class KernelContext:
    """What device-side code knows about the kernel it runs in."""

    __slots__ = ("name", "stream", "device", "block_idx", "num_blocks", "timeout", "locked")

    def __init__(self, name, stream, num_blocks, timeout):
        self.name = name
        self.stream = stream
        self.device = stream.device
        self.num_blocks = num_blocks
        self.block_idx = 0
        self.timeout = timeout
        self.locked = []        # communicators locked with HcommAcquireComm


def current_kernel() -> KernelContext | None:
    kernels = runtime.ctx.kernels
    return kernels[-1] if kernels else None


#: Called with the KernelContext when any kernel ends, also one that failed (``hcomm.comm_lock``
#: releases the communicators a kernel still holds).
end_hooks: list = []


def run_kernel(name, fn, args, stream, num_blocks, timeout):
    """Task body of a kernel launch (see the module docstring)."""
    ctx = runtime.ctx
    kctx = KernelContext(name, stream, num_blocks, timeout)
    saved = ctx.device, ctx.batch, ctx.wait_timeout
    stream.busy = True
    ctx.kernels.append(kctx)
    ctx.device, ctx.batch, ctx.wait_timeout = stream.device, None, None  # the AI CPU's own state
    try:
        for block in range(num_blocks):
            kctx.block_idx = block
            try:
                ret = fn(*args)
            except Exception as exc:  # the kernel's own failure, reported on its stream
                tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
                raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, "KernelLaunch",
                                      f"AI CPU kernel {name} (block {block}) raised {exc!r}\n{tb}") from exc
            if ret not in (None, 0):
                raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, "KernelLaunch",
                                      f"AI CPU kernel {name} (block {block}) returned {ret!r}")
        if ctx.batch is not None:
            batch, ctx.batch = ctx.batch, None
            batch.abandon()
            raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, "KernelLaunch",
                                  f"AI CPU kernel {name} ended inside batch mode {batch.tag!r}: "
                                  f"HcommBatchModeEnd was never called, {len(batch.tasks)} task(s) were never launched")
    finally:
        if ctx.batch is not None:  # the kernel raised inside a batch: its tasks are never launched
            ctx.batch.abandon()
        ctx.kernels.pop()
        ctx.device, ctx.batch, ctx.wait_timeout = saved
        stream.busy = False
        scheduler.hint(stream)  # the tasks behind the kernel may run now
        for hook in end_hooks:
            hook(kctx)
