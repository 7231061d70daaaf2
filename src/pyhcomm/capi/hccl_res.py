"""``hccl_res.h``: threads and the HCCL buffer, in the flat C tier."""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.hccl_res import HcclDedicatedThreadType  # noqa: F401
from ..defs.res_defs import ThreadConfig, ThreadType  # noqa: F401
from ..enums import ThreadResType  # noqa: F401
from ..errors import HcclResult
from ..hccl import comm as _comm
from ..sim import current_sim as _sim
from ..hcomm.resources import engine_ctx as _ectx
from ..hcomm.resources import thread as _thread
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


# -- thread export and resources, engine contexts ----------------------------------------------


__all__ += ["HcclThreadExportToCommEngine", "HcclThreadResGetInfo", "HcclEngineCtxCreate", "HcclEngineCtxGet",
            "HcclEngineCtxCopy", "HcclEngineCtxDestroy"]


@c_api([])
def HcclThreadExportToCommEngine(comm, threadNum, threads, dstCommEngine):
    """``ret, exported = HcclThreadExportToCommEngine(comm, threadNum, threads, dstCommEngine)``:
    handles for code on ``dstCommEngine`` that share the threads' streams and notifies."""
    return [t.handle for t in _thread.export_to_comm_engine(comm, threadNum, threads, dstCommEngine)]


@c_api(0)
def HcclThreadResGetInfo(comm, thread, resType, infoLen):
    """``ret, info = HcclThreadResGetInfo(comm, thread, THREAD_RES_TYPE_STREAM, 8)``: the
    ``aclrtStream`` (int handle) behind the thread."""
    return _thread.res_get_info(comm, thread, resType, infoLen)


@c_api(0)
def HcclEngineCtxCreate(comm, ctxTag, engine, size):
    """``ret, ctx = HcclEngineCtxCreate(comm, ctxTag, engine, size)``: a zero-filled block (host
    memory for CPU / CPU_TS / CCU, device memory for AICPU / AICPU_TS / AIV), owned by HCCL."""
    return _ectx.create(comm, ctxTag, engine, size).addr


@c_api(0, 0, quiet=(HcclResult.HCCL_E_NOT_FOUND,))
def HcclEngineCtxGet(comm, ctxTag, engine):
    """``ret, ctx, size = HcclEngineCtxGet(comm, ctxTag, engine)``; ``HCCL_E_NOT_FOUND`` if absent,
    logged at INFO only (Get, then Create when absent, is the normal flow)."""
    c = _ectx.get(comm, ctxTag, engine)
    return c.addr, c.size


@c_api()
def HcclEngineCtxCopy(comm, engine, ctxTag, srcCtx, size, dstCtxOffset):
    """``ret = HcclEngineCtxCopy(comm, engine, ctxTag, srcCtx, size, dstCtxOffset)``: copy ``size``
    bytes from host pointer or bytes-like ``srcCtx`` into the context now (synchronous)."""
    _ectx.copy(comm, engine, ctxTag, srcCtx, size, dstCtxOffset)


@c_api()
def HcclEngineCtxDestroy(comm, ctxTag, engine):
    """``ret = HcclEngineCtxDestroy(comm, ctxTag, engine)``: release one engine context."""
    _ectx.destroy(comm, ctxTag, engine)


# -- the cleared buffer, threads with configs, dedicated threads -------------------------------

__all__ += ["HcclGetHcclBufferCleared", "HcclThreadAcquireWithConfig", "ThreadConfigInit", "HcclDedicatedThreadAcquire",
            "ThreadConfig", "ThreadType", "ThreadResType", "HcclDedicatedThreadType"]


@c_api(0, 0)
def HcclGetHcclBufferCleared(comm):
    """``ret, addr, size``: the rank's HCCL buffer, zero-filled now (the same buffer as
    ``HcclGetHcclBuffer``; synchronous: do not call it while tasks use the buffer)."""
    api = "HcclGetHcclBufferCleared"
    c = _comm.get_comm(comm, api)
    fresh = c.hccl_buffer is None
    buf = _comm.hccl_buffer(c, api)
    if not fresh and _sim().data:
        _sim().backend.memset(buf.storage, 0, 0, buf.size)
    return buf.addr, buf.size


@c_api([])
def HcclThreadAcquireWithConfig(comm, engine, threadNum, type, config):  # noqa: A002,N803
    """``ret, threads``: threads with one ``ThreadConfig`` each (see
    :func:`pyhcomm.hcomm.resources.thread.acquire_with_config`)."""
    return [t.handle for t in _thread.acquire_with_config(comm, engine, threadNum, type, config)]


@c_api()
def ThreadConfigInit(config):
    """Initialise a ``ThreadConfig`` (its ABI header; ``notifyNumPerThread`` 0)."""
    _thread.thread_config_init(struct_arg(config, ThreadConfig, "ThreadConfigInit", "config"))


@c_api(0)
def HcclDedicatedThreadAcquire(comm, useType, notifyNumPerThread):  # noqa: N803
    """``ret, thread``: the communicator's dedicated AICPU_TS thread for ``useType``."""
    return _thread.dedicated(comm, useType, notifyNumPerThread).handle
