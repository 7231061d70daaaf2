"""``hcomm_primitives.h``: the data-plane primitives, in the flat C tier.

Each call enqueues a task and returns 0 at once, or a nonzero ``HcclResult`` (and a log line
naming the call and the argument). Hot paths are written out by hand (no generic wrapper); the
data-plane calls attribute their tasks to the caller's line at once (``c_api(attributed=True)``).
The AI CPU task cache records the calls made inside a kernel below this tier, in
:mod:`pyhcomm.hcomm` (so a call through any tier is recorded).
"""
from __future__ import annotations

from ..errors import HcclError
from ..hcomm import task_cache as _cache
from ..hcomm import channel_ops as _chops
from ..hcomm import enqueue as _enqueue
from ..hcomm import notify as _notify
from ..hcomm import thread_ops as _thread_ops
from ..hcomm.comm_lock import acquire_comm, release_comm
from ..hcomm.local import local_copy
from ..hcomm.reduce import local_reduce
from ._wrap import SUCCESS, c_api, failed

__all__ = ["HcommLocalCopyOnThread", "HcommLocalReduceOnThread"]


def HcommLocalCopyOnThread(thread, dst, src, len):  # noqa: A002 - the C parameter name
    """Enqueue a device-to-device copy of ``len`` bytes on ``thread``; ``ret`` (0 on success)."""
    try:
        local_copy(thread, dst, src, len)
    except HcclError as exc:
        return failed(exc)
    return SUCCESS


HcommLocalCopyOnThread.raising = local_copy


def HcommLocalReduceOnThread(thread, dst, src, count, dataType, reduceOp):  # noqa: N803 - C names
    """Enqueue ``dst[i] = reduceOp(dst[i], src[i])`` for ``count`` elements on ``thread``; ``ret``."""
    try:
        local_reduce(thread, dst, src, count, dataType, reduceOp)
    except HcclError as exc:
        return failed(exc)
    return SUCCESS


HcommLocalReduceOnThread.raising = local_reduce


# -- communicator lock (device side) -----------------------------------------------------------


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

__all__ += ["HcommThreadNotifyRecordOnThread", "HcommThreadNotifyWaitOnThread",
            "HcommThreadNotifyWaitOnThreadWithDefaultTimeout", "HcommSetNotifyWaitTimeOut",
            "HcommThreadResAcquireTimeOut", "HcommAclrtNotifyRecordOnThread", "HcommAclrtNotifyWaitOnThread",
            "HcommBatchModeStart", "HcommBatchModeEnd", "HcommThreadJoin", "HcommFenceOnThread"]


@c_api(attributed=True)
def HcommThreadNotifyRecordOnThread(thread, dstThread, dstNotifyIdx):  # noqa: N803
    """Enqueue on ``thread`` a record of notify ``dstNotifyIdx`` of ``dstThread``."""
    _notify.record(thread, dstThread, dstNotifyIdx)


@c_api(attributed=True)
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


@c_api(attributed=True)
def HcommAclrtNotifyRecordOnThread(thread, dstNotifyId):  # noqa: N803
    _notify.aclrt_record(thread, dstNotifyId)


@c_api(attributed=True)
def HcommAclrtNotifyWaitOnThread(thread, notifyId, timeOut):  # noqa: N803
    _notify.aclrt_wait(thread, notifyId, timeOut)


@c_api()
def HcommBatchModeStart(batchTag):  # noqa: N803
    """Keep this OS thread's tasks until ``HcommBatchModeEnd``."""
    _enqueue.batch_start(batchTag)


@c_api()
def HcommBatchModeEnd(batchTag):  # noqa: N803
    """Launch the tasks kept since ``HcommBatchModeStart``."""
    _enqueue.batch_end(batchTag)


@c_api()
def HcommThreadJoin(thread, timeout):
    """Block (device side, Atlas 350) until ``thread``'s tasks ran."""
    _thread_ops.thread_join(thread, timeout)


@c_api(attributed=True)
def HcommFenceOnThread(thread):
    _thread_ops.fence(thread)


# -- channel data plane ---------------------------------------------------------------------------------

HcommTransferType = _chops.HcommTransferType
HcommBatchTransferDesc = _chops.HcommBatchTransferDesc

__all__ += ["HcommWriteOnThread", "HcommReadOnThread", "HcommWriteReduceOnThread", "HcommReadReduceOnThread",
            "HcommWriteWithNotifyOnThread", "HcommWriteReduceWithNotifyOnThread", "HcommWriteNbiOnThread",
            "HcommWriteNbi", "HcommWriteWithNotifyNbiOnThread", "HcommWriteWithNotifyNbi", "HcommReadNbiOnThread",
            "HcommReadNbi", "HcommBatchTransferOnThread", "HcommChannelNotifyRecordOnThread",
            "HcommChannelNotifyWaitOnThread", "HcommChannelNotifyWaitOnThreadWithDefaultTimeout",
            "HcommChannelNotifyRecord", "HcommChannelNotifyWait", "HcommChannelFenceOnThread",
            "HcommChannelDrainOnThread", "HcommChannelFence", "HcommTransferType", "HcommBatchTransferDesc"]


@c_api(attributed=True)
def HcommWriteOnThread(thread, channel, dst, src, len):  # noqa: A002
    """Enqueue a one-sided write of local ``src`` to the peer's ``dst``."""
    _chops.write(thread, channel, dst, src, len)


@c_api(attributed=True)
def HcommReadOnThread(thread, channel, dst, src, len):  # noqa: A002
    """Enqueue a one-sided read of the peer's ``src`` into local ``dst``."""
    _chops.read(thread, channel, dst, src, len)


@c_api(attributed=True)
def HcommWriteReduceOnThread(thread, channel, dst, src, count, dataType, reduceOp):  # noqa: N803
    _chops.write_reduce(thread, channel, dst, src, count, dataType, reduceOp)


@c_api(attributed=True)
def HcommReadReduceOnThread(thread, channel, dst, src, count, dataType, reduceOp):  # noqa: N803
    _chops.read_reduce(thread, channel, dst, src, count, dataType, reduceOp)


@c_api(attributed=True)
def HcommWriteWithNotifyOnThread(thread, channel, dst, src, len, remoteNotifyIdx):  # noqa: A002,N803
    _chops.write_with_notify(thread, channel, dst, src, len, remoteNotifyIdx)


@c_api(attributed=True)
def HcommWriteReduceWithNotifyOnThread(thread, channel, dst, src, count, dataType, reduceOp,  # noqa: N803
                                       remoteNotifyIdx):
    _chops.write_reduce_with_notify(thread, channel, dst, src, count, dataType, reduceOp, remoteNotifyIdx)


@c_api(attributed=True)
def HcommWriteNbiOnThread(thread, channel, dst, src, len):  # noqa: A002
    _chops.nbi("HcommWriteNbiOnThread", channel, dst, src, len, True)


@c_api(attributed=True)
def HcommWriteNbi(channel, dst, src, len):  # noqa: A002
    _chops.nbi("HcommWriteNbi", channel, dst, src, len, True)


@c_api(attributed=True)
def HcommWriteWithNotifyNbiOnThread(thread, channel, dst, src, len, remoteNotifyIdx):  # noqa: A002,N803
    _chops.nbi("HcommWriteWithNotifyNbiOnThread", channel, dst, src, len, True, remoteNotifyIdx)


@c_api(attributed=True)
def HcommWriteWithNotifyNbi(channel, dst, src, len, remoteNotifyIdx):  # noqa: A002,N803
    _chops.nbi("HcommWriteWithNotifyNbi", channel, dst, src, len, True, remoteNotifyIdx)


@c_api(attributed=True)
def HcommReadNbiOnThread(thread, channel, dst, src, len):  # noqa: A002
    _chops.nbi("HcommReadNbiOnThread", channel, dst, src, len, False)


@c_api(attributed=True)
def HcommReadNbi(channel, dst, src, len):  # noqa: A002
    _chops.nbi("HcommReadNbi", channel, dst, src, len, False)


@c_api(attributed=True)
def HcommBatchTransferOnThread(thread, channel, transferDescs):  # noqa: N803
    """Issue every descriptor of the list ``transferDescs`` in order (device side)."""
    _chops.batch_transfer(thread, channel, transferDescs)


@c_api(attributed=True)
def HcommChannelNotifyRecordOnThread(thread, channel, remoteNotifyIdx):  # noqa: N803
    """Enqueue a record of the peer's channel notify ``remoteNotifyIdx``."""
    _chops.notify_record(thread, channel, remoteNotifyIdx)


@c_api(attributed=True)
def HcommChannelNotifyWaitOnThread(thread, channel, localNotifyIdx, timeOut):  # noqa: N803
    """Enqueue a wait for this end's channel notify ``localNotifyIdx`` (s, 0 = forever)."""
    _chops.notify_wait(thread, channel, localNotifyIdx, timeOut)


@c_api()
def HcommChannelNotifyWaitOnThreadWithDefaultTimeout(thread, channel, localNotifyIdx):  # noqa: N803
    _chops.notify_wait_default(thread, channel, localNotifyIdx)


@c_api(attributed=True)
def HcommChannelNotifyRecord(channel, remoteNotifyIdx):  # noqa: N803
    _chops.notify_record_now(channel, remoteNotifyIdx)


@c_api(attributed=True)
def HcommChannelNotifyWait(channel, localNotifyIdx, timeOut):  # noqa: N803
    _chops.notify_wait_now(channel, localNotifyIdx, timeOut)


@c_api(attributed=True)
def HcommChannelFenceOnThread(thread, channel):
    _chops.channel_fence_on_thread(thread, channel)


@c_api(attributed=True)
def HcommChannelDrainOnThread(thread, channel):
    _chops.channel_drain(thread, channel)


@c_api(attributed=True)
def HcommChannelFence(channel):
    _chops.channel_fence(channel)


# -- the AI CPU task cache ----------------------------------------------------------------------

__all__ += ["HcommAicpuTsTaskCacheLookup", "HcommAicpuTsTaskCacheStart", "HcommAicpuTsTaskCacheEnd",
            "HcommAicpuTsTaskCacheExecute", "HcommAicpuTsTaskCacheClear"]


@c_api(False)
def HcommAicpuTsTaskCacheLookup(tag):
    """``ret, isHit``: whether ``tag``'s expansion is cached (Atlas 350, inside a kernel)."""
    return _cache.lookup(tag)


@c_api()
def HcommAicpuTsTaskCacheStart(tag, addrs, sizes):
    """Start recording the data-plane calls of ``tag`` (addresses in ``addrs``/``sizes`` are the
    ones a later Execute moves)."""
    _cache.start(tag, addrs, sizes)


@c_api()
def HcommAicpuTsTaskCacheEnd(tag):
    _cache.end(tag)


@c_api()
def HcommAicpuTsTaskCacheExecute(tag, addrs, sizes):
    """Issue ``tag``'s recorded calls again with the addresses moved to ``addrs``."""
    _cache.execute(tag, addrs, sizes)


@c_api()
def HcommAicpuTsTaskCacheClear(tag):
    _cache.clear(tag)
