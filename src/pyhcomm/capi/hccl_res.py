"""``hccl_res.h``: threads and the HCCL buffer, in the flat C tier."""
from __future__ import annotations

from ..hccl import comm as _comm
from ..hccl import thread as _thread
from ._wrap import c_api

__all__ = ["HcclThreadAcquire", "HcclThreadAcquireWithStream", "HcclGetHcclBuffer"]


@c_api([])
def HcclThreadAcquire(comm, engine, threadNum, notifyNumPerThread):
    """``ret, threads = HcclThreadAcquire(comm, engine, threadNum, notifyNumPerThread)``."""
    return [t.handle for t in _thread.acquire(comm, engine, threadNum, notifyNumPerThread)]


@c_api(0)
def HcclThreadAcquireWithStream(comm, engine, stream, notifyNum):
    """``ret, thread = HcclThreadAcquireWithStream(comm, engine, stream, notifyNum)``."""
    return _thread.acquire_with_stream(comm, engine, stream, notifyNum).handle


@c_api(0, 0)
def HcclGetHcclBuffer(comm):
    """``ret, addr, size = HcclGetHcclBuffer(comm)``: the rank's HCCL buffer (library-owned)."""
    c = _comm.get_comm(comm, "HcclGetHcclBuffer")
    buf = _comm.hccl_buffer(c, "HcclGetHcclBuffer")
    return buf.addr, buf.size
