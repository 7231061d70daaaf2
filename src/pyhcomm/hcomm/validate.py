"""Argument checks shared by every data-plane primitive (validate first, then act).

Pointers, handles and integers are first made plain ``int`` by :mod:`pyhcomm.args`; a call issued
inside an AI CPU kernel may use only threads (and so channels) of the kernel's own device.
"""
from __future__ import annotations

from .. import args
from ..sim import current_sim as _sim
from ..sim import memory
from ..sim.runtime import program_ctx, in_library, on_device_side
from ..errors import not_support, para, ptr
from .enqueue import refuse_aiv
from .resources import engines
from .resources.thread import get_thread

UINT64_MAX = args.UINT64_MAX


def nonnull(value, api: str, name: str) -> int:
    """Check a pointer argument and return it as an int: NULL (0 / None) is ``HCCL_E_PTR``."""
    if type(value) is not int:
        value = args.pointer(value, api, name)
    if not value:
        raise ptr(api, f"{name} is NULL")
    return value


def length(value, api: str, name: str = "len") -> int:
    """Check a byte or element count and return it as an int in [0, 2**64)."""
    return args.integer(value, api, name)


def product_supports_hcomm(api: str) -> None:
    """``HCCL_E_NOT_SUPPORT`` on products outside the seed's support table (except for HCCL's own
    collectives, :class:`pyhcomm.sim.runtime.library_calls`)."""
    product = _sim().runtime.product
    if not product.hcomm and not in_library():
        raise not_support(api, f"not supported on {product.name}: {product.why_not}")


def thread_side(thread, api: str, kinds=engines.LOCAL_OPS) -> None:
    """Check that ``thread`` may run ``kinds`` (task kinds: by default the local operations): the
    Atlas 350 device-side-only rule, the engine running them on this product, and the thread
    used from its side."""
    device_side = on_device_side()
    product = _sim().runtime.product
    if product.device_side_only and not device_side:
        raise not_support(api, f"on {product.name} this call is supported only on the device side "
                               "(inside an AI CPU kernel), not from the host")
    if not kinds <= thread.engine.runs:
        able = " or ".join(sorted(e.name for e in engines.engines() if kinds <= e.runs)) or "no"
        raise not_support(api, f"on {product.name} this call needs a {able} thread; "
                               f"thread 0x{thread.handle:x} is {thread.engine.name}")
    engine_side(thread, api)


def issuing_thread(handle, api: str):
    """The thread a primitive is issued on, checked (handle, product, side); returns
    ``(thread, the caller's program context, whether the caller is on the device side)``."""
    ctx = program_ctx()
    t = ctx.sim.handles.threads.by_handle.get(handle) if type(handle) is int else None
    if t is None or t.stream.destroyed:
        t = get_thread(handle, api)
    if not ctx.sim.runtime.product.hcomm and not ctx.library:
        product_supports_hcomm(api)
    kernels = ctx.kernels
    device_side = bool(kernels)
    if device_side and not kernels[-1].hcomm_calls:
        refuse_aiv(kernels[-1], api)
    if t.host_side == device_side:
        engine_side(t, api)
    if device_side and kernels[-1].device != t.device:
        kernel_device(t, kernels[-1], api)
    return t, ctx, device_side


def kernel_device(thread, kernel, api: str) -> None:
    """``HCCL_E_PARA`` when a kernel issues on a thread of another device: device-side code
    reaches only its own device's threads, channels and memory (another rank's memory only
    through a channel, where the peer exposed it)."""
    if kernel.device != thread.device:
        raise para(api, f"thread 0x{thread.handle:x} belongs to rank {thread.rank} on device {thread.device}; "
                        f"the AI CPU kernel {kernel.name} runs on device {kernel.device} and cannot use it")


def engine_side(thread, api: str) -> None:
    """Check only that ``thread`` is used from its own side (host engines on the host, device
    engines inside a kernel): synchronisation calls have no Atlas 350 device-only rule."""
    device_side = on_device_side()
    if thread.host_side and device_side:
        raise not_support(api, f"thread 0x{thread.handle:x} is a {thread.engine.name} (host) thread: export "
                               "it to COMM_ENGINE_AICPU_TS with HcclThreadExportToCommEngine to use it in a kernel")
    if not thread.host_side and not device_side:
        raise not_support(api, f"thread 0x{thread.handle:x} is a {thread.engine.name} (device) thread: call this "
                               "inside an AI CPU kernel, or export the thread to COMM_ENGINE_CPU_TS")


def device_range(addr: int, n: int, device: int, api: str, name: str):
    """Resolve ``[addr, addr + n)`` to ``(allocation, offset)`` on ``device``, or ``HCCL_E_PARA``.

    The range must lie wholly inside one live device allocation of ``device``.
    """
    try:
        alloc = memory.resolve(addr, n, memory.DEVICE, device)
    except memory.BadRange as why:
        raise para(api, f"{name} {why}") from None
    return alloc, addr - alloc.addr


def thread_dst(t, addr: int, n: int, api: str, name: str = "dst"):
    """:func:`device_range` of a range ``t`` writes: ``(allocation, offset)`` on ``t``'s device.
    The allocation the thread's last destination was in answers when it holds the range (a
    zero-length range needs an address inside, as :func:`pyhcomm.sim.memory.resolve` decides)."""
    a = t.last_dst
    if a is None or addr < a.addr or addr + n > a.end or addr == a.end or a.storage is None:
        a = t.last_dst = device_range(addr, n, t.device, api, name)[0]
    return a, addr - a.addr


def thread_src(t, addr: int, n: int, api: str, name: str = "src"):
    """The same as :func:`thread_dst` for a range ``t`` reads (its own cache)."""
    a = t.last_src
    if a is None or addr < a.addr or addr + n > a.end or addr == a.end or a.storage is None:
        a = t.last_src = device_range(addr, n, t.device, api, name)[0]
    return a, addr - a.addr


def no_partial_overlap(dst: int, src: int, n: int, api: str) -> None:
    """``HCCL_E_PARA`` when ``[dst, dst+n)`` and ``[src, src+n)`` overlap but are not the same range."""
    if dst != src and dst < src + n and src < dst + n:
        raise para(api, f"dst 0x{dst:x} and src 0x{src:x} overlap by {n - abs(dst - src)} of {n} bytes")
