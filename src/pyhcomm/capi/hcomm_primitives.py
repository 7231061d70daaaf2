"""``hcomm_primitives.h``: the data-plane primitives, in the flat C tier.

Each call enqueues a task and returns 0 at once, or a nonzero ``HcclResult`` (and a log line
naming the call and the argument). Hot paths are written out by hand (no generic wrapper).
"""
from __future__ import annotations

from ..errors import HcclError
from ..hcomm.local import local_copy
from ._wrap import SUCCESS, failed

__all__ = ["HcommLocalCopyOnThread"]


def HcommLocalCopyOnThread(thread, dst, src, len):  # noqa: A002 - the C parameter name
    """Enqueue a device-to-device copy of ``len`` bytes on ``thread``; ``ret`` (0 on success)."""
    try:
        local_copy(thread, dst, src, len)
    except HcclError as exc:
        return failed(exc)
    return SUCCESS


HcommLocalCopyOnThread.raising = local_copy
