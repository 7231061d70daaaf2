"""``hcomm_primitives.h``: the data-plane primitives, in the flat C tier.

Each call enqueues a task and returns 0 at once, or a nonzero ``HcclResult`` (and a log line
naming the call and the argument). Hot paths are written out by hand (no generic wrapper).
"""
from __future__ import annotations

from ..errors import HcclError
from ..hcomm.local import local_copy
from ._wrap import SUCCESS, failed

__all__ = ["HcommLocalCopyOnThread", "HcommLocalReduceOnThread"]


def HcommLocalCopyOnThread(thread, dst, src, len):  # noqa: A002 - the C parameter name
    """Enqueue a device-to-device copy of ``len`` bytes on ``thread``; ``ret`` (0 on success)."""
    try:
        local_copy(thread, dst, src, len)
    except HcclError as exc:
        return failed(exc)
    return SUCCESS


HcommLocalCopyOnThread.raising = local_copy


from ..hcomm.reduce import local_reduce  # noqa: E402


def HcommLocalReduceOnThread(thread, dst, src, count, dataType, reduceOp):  # noqa: N803 - C names
    """Enqueue ``dst[i] = reduceOp(dst[i], src[i])`` for ``count`` elements on ``thread``; ``ret``."""
    try:
        local_reduce(thread, dst, src, count, dataType, reduceOp)
    except HcclError as exc:
        return failed(exc)
    return SUCCESS


HcommLocalReduceOnThread.raising = local_reduce


# -- communicator lock (device side) -----------------------------------------------------------

from ..hcomm.comm_lock import acquire_comm, release_comm  # noqa: E402
from ._wrap import c_api  # noqa: E402

__all__ += ["HcommAcquireComm", "HcommReleaseComm"]


@c_api()
def HcommAcquireComm(commId):  # noqa: N803 - the C parameter name
    """Inside an AI CPU kernel, lock communicator ``commId`` (``HcclGetCommName``); ``ret``."""
    acquire_comm(commId)


@c_api()
def HcommReleaseComm(commId):  # noqa: N803 - the C parameter name
    """Inside an AI CPU kernel, unlock communicator ``commId``; ``ret``."""
    release_comm(commId)
