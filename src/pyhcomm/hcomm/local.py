"""Local operations: ``HcommLocalCopyOnThread``.

A2/A3 realise the copy as an SDMA memcpy task on the thread's stream; Atlas 350 as an SDMA SQE
written by the AI CPU. Here the task copies with the backend when the stream reaches it.

Deliberate differences from the hardware (which faults later, or corrupts): a range outside one
live allocation of the thread's device, or partially overlapping ``src``/``dst``, is refused at the
call with ``HCCL_E_PARA``. ``src == dst`` is accepted (a no-op copy). Memory freed between the call
and the task fails the stream instead of touching freed memory.
"""
from __future__ import annotations

from ..backend import get_backend
from ..core.runtime import on_device_side
from ..core.task import Task, call_site
from ..errors import HcclResult, HcclRuntimeError
from ..hccl.thread import get_thread
from . import validate as v
from .launch import enqueue

_backend = get_backend()


def _run_copy(dst_alloc, dst_off, src_alloc, src_off, n):
    dst, src = dst_alloc.storage, src_alloc.storage
    if dst is None or src is None:
        which = "dst" if dst is None else "src"
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, "HcommLocalCopyOnThread",
                               f"{which} memory was freed before the copy ran")
    _backend.copy(dst, dst_off, src, src_off, n)


def local_copy(thread: int, dst: int, src: int, n: int) -> None:
    """Enqueue a copy of ``n`` bytes from ``src`` to ``dst`` on ``thread``; returns at once.

    Raises:
        HcclUsageError: NULL pointers or thread (``HCCL_E_PTR``), unknown thread
            (``HCCL_E_NOT_FOUND``), a range outside device memory the thread can access or a
            partial overlap (``HCCL_E_PARA``).
        HcclNotSupportedError: product, side or engine rules (``HCCL_E_NOT_SUPPORT``).
    """
    api = "HcommLocalCopyOnThread"
    v.nonnull(dst, api, "dst")
    v.nonnull(src, api, "src")
    t = get_thread(thread, api)
    v.product_supports_hcomm(api)
    v.thread_side(t, api)
    v.length(n, api)
    dst_alloc, dst_off = v.device_range(dst, n, t.device, api, "dst")
    src_alloc, src_off = v.device_range(src, n, t.device, api, "src")
    v.no_partial_overlap(dst, src, n, api)
    enqueue(Task("LocalCopy", t.stream, _run_copy, (dst_alloc, dst_off, src_alloc, src_off, n),
                 reads=((src, n),), writes=((dst, n),), thread=t.handle, rank=t.rank,
                 site=call_site(), side="device" if on_device_side() else "host"))
