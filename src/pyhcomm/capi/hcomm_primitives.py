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


# -- thread-to-thread synchronisation, batch mode, timeouts ------------------------------------
from ..hcomm import launch as _launch  # noqa: E402
from ..hcomm import notify as _notify  # noqa: E402
from ..hcomm import thread_ops as _thread_ops  # noqa: E402
from ._wrap import c_api  # noqa: E402

__all__ += ["HcommThreadNotifyRecordOnThread", "HcommThreadNotifyWaitOnThread",
            "HcommThreadNotifyWaitOnThreadWithDefaultTimeout", "HcommSetNotifyWaitTimeOut",
            "HcommThreadResAcquireTimeOut", "HcommAclrtNotifyRecordOnThread", "HcommAclrtNotifyWaitOnThread",
            "HcommBatchModeStart", "HcommBatchModeEnd", "HcommThreadJoin", "HcommFenceOnThread"]


@c_api()
def HcommThreadNotifyRecordOnThread(thread, dstThread, dstNotifyIdx):  # noqa: N803
    """Enqueue on ``thread`` a record of notify ``dstNotifyIdx`` of ``dstThread``."""
    _notify.record(thread, dstThread, dstNotifyIdx)


@c_api()
def HcommThreadNotifyWaitOnThread(thread, notifyIdx, timeOut):  # noqa: N803
    """Enqueue on ``thread`` a wait for its notify ``notifyIdx`` (``timeOut`` s, 0 = forever)."""
    _notify.wait(thread, notifyIdx, timeOut)


@c_api()
def HcommThreadNotifyWaitOnThreadWithDefaultTimeout(thread, notifyIdx):  # noqa: N803
    _notify.wait_default(thread, notifyIdx)


@c_api()
def HcommSetNotifyWaitTimeOut(timeOut):  # noqa: N803
    """Set the default timeout (s) of this OS thread's ``*WithDefaultTimeout`` waits."""
    _notify.set_wait_timeout(timeOut)


@c_api()
def HcommThreadResAcquireTimeOut(timeOut):  # noqa: N803
    _notify.thread_res_acquire_timeout(timeOut)


@c_api()
def HcommAclrtNotifyRecordOnThread(thread, dstNotifyId):  # noqa: N803
    _notify.aclrt_record(thread, dstNotifyId)


@c_api()
def HcommAclrtNotifyWaitOnThread(thread, notifyId, timeOut):  # noqa: N803
    _notify.aclrt_wait(thread, notifyId, timeOut)


@c_api()
def HcommBatchModeStart(batchTag):  # noqa: N803
    """Keep this OS thread's tasks until ``HcommBatchModeEnd``."""
    _launch.batch_start(batchTag)


@c_api()
def HcommBatchModeEnd(batchTag):  # noqa: N803
    """Launch the tasks kept since ``HcommBatchModeStart``."""
    _launch.batch_end(batchTag)


@c_api()
def HcommThreadJoin(thread, timeout):
    """Block (device side, Atlas 350) until ``thread``'s tasks ran."""
    _thread_ops.thread_join(thread, timeout)


@c_api()
def HcommFenceOnThread(thread):
    _thread_ops.fence(thread)
