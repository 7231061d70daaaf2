"""AI CPU kernels: Python functions that run on the device side, in stream order.

A launch enqueues a ``KernelLaunch`` task. When the stream reaches it, the scheduler starts the
kernel as an actor of its own (:meth:`pyhcomm.sched.base.Scheduler.spawn_kernel`) with a
:class:`KernelContext`, so that HCOMM primitives it calls are device-side calls. Until it returns,
the rest of its stream waits (``stream.busy``); other streams keep running, other kernels too, and
the kernel may wait for them (``HcommThreadJoin``). A kernel that raises, or returns a nonzero
value, fails its stream with ``ACL_ERROR_RT_AICPU_EXCEPTION``.
"""
from __future__ import annotations

import traceback

from ..errors import AclError, AclRuntimeError
from . import current_sim, memory
from .kinds import KERNEL_LAUNCH
from .runtime import ProgramContext, program_ctx, set_program_ctx


class KernelContext:
    """What device-side code knows about the kernel it runs in. What a layer above gives a kernel
    while it runs (a communicator lock, a task-cache context) it takes back at the kernel's end:
    :meth:`at_end`."""

    __slots__ = ("name", "stream", "device", "block_idx", "num_blocks", "timeout", "locked", "seq", "_ends")
    #: HCOMM's data-plane primitives may be called here (an AI CPU kernel; not an AIV kernel's block)
    hcomm_calls = True

    def __init__(self, name, stream, num_blocks, timeout, seq=0):
        self.name = name
        self.stream = stream
        self.device = stream.device
        self.num_blocks = num_blocks
        self.block_idx = 0
        self.timeout = timeout
        self.locked = []        # communicators locked with HcommAcquireComm
        self.seq = seq          # the launch task's record number (the kernel id)
        self._ends = None       # callables for the kernel's end (at_end)

    def at_end(self, release) -> None:
        """Call ``release(self)`` when this kernel ends (returns or fails), after what was
        registered before it had its turn (registering the same callable again adds nothing)."""
        if self._ends is None:
            self._ends = []
        if release not in self._ends:
            self._ends.append(release)

    def end(self) -> None:
        """The kernel ended: call what :meth:`at_end` registered, in order."""
        ends, self._ends = self._ends, None
        for release in ends or ():
            release(self)


def current_kernel() -> KernelContext | None:
    kernels = program_ctx().kernels
    return kernels[-1] if kernels else None


def start_kernel(task, name, fn, args, stream, num_blocks, timeout):
    """Task body of a kernel launch: start the kernel actor (see the module docstring)."""
    sim = current_sim()
    kctx = KernelContext(name, stream, num_blocks, timeout, task.seq)

    def body():
        ctx = ProgramContext(sim)
        ctx.device = stream.device
        ctx.kernels.append(kctx)
        set_program_ctx(ctx)
        try:
            _run_blocks(ctx, kctx, fn, args)
        except AclRuntimeError as exc:
            sim.scheduler.fail_stream(stream, exc)
        finally:
            if ctx.batch is not None:  # the kernel raised inside a batch: its tasks are never launched
                ctx.batch.abandon()
            kctx.end()

    sim.scheduler.spawn_kernel(stream, body)


def _run_blocks(ctx, kctx, fn, args) -> None:
    name = kctx.name
    for block in range(kctx.num_blocks):
        kctx.block_idx = block
        try:
            ret = fn(*args)
        except Exception as exc:  # the kernel's own failure, reported on its stream
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
            raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, str(KERNEL_LAUNCH),
                                  f"AI CPU kernel {name} (block {block}) raised {exc!r}\n{tb}") from exc
        if ret not in (None, 0):
            raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, str(KERNEL_LAUNCH),
                                  f"AI CPU kernel {name} (block {block}) returned {ret!r}")
    if ctx.batch is not None:
        batch, ctx.batch = ctx.batch, None
        batch.abandon()
        raise AclRuntimeError(AclError.ACL_ERROR_RT_AICPU_EXCEPTION, str(KERNEL_LAUNCH),
                              f"AI CPU kernel {name} ended inside batch mode {batch.tag!r}: "
                              f"HcommBatchModeEnd was never called, {len(batch.tasks)} task(s) were never launched")


def device_load(addr: int, n: int) -> bytes:
    """A copy of ``n`` bytes of device memory at ``addr``, read now by the running AI CPU kernel:
    what compiled kernel code does when it dereferences a device pointer (an engine context its
    host filled before the launch, say). Not ordered with the streams: the bytes must be there.

    Raises:
        AclRuntimeError: ``ACL_ERROR_INVALID_PARAM`` outside a kernel, for a range that is not
            device memory of the kernel's device, or in data-less mode (no bytes to read).
    """
    kctx = current_kernel()
    if kctx is None:
        raise AclRuntimeError(AclError.ACL_ERROR_INVALID_PARAM, "device_load", "called outside an AI CPU kernel")
    try:
        alloc = memory.resolve(addr, n, memory.DEVICE, kctx.device)
    except memory.BadRange as why:
        raise AclRuntimeError(AclError.ACL_ERROR_INVALID_PARAM, "device_load", str(why)) from None
    if alloc.storage is None:
        raise AclRuntimeError(AclError.ACL_ERROR_INVALID_PARAM, "device_load",
                              f"0x{addr:x}: device memory holds no bytes (data-less mode, or freed)")
    return current_sim().backend.to_host(alloc.storage, addr - alloc.addr, n)
