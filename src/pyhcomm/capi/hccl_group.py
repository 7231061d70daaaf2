"""Group calls of ``hccl_comm.h`` (``HcclGroupStart``, ``HcclGroupEnd``, ``HcclGroupStatusGet``,
``HcclGroupEnqueueOp``); semantics in :mod:`pyhcomm.collectives.group`."""
from __future__ import annotations

from ..collectives import dispatch, group
from ..collectives.support import check_product
from ..errors import not_support, para
from ..hccl import comm as _comm
from ._wrap import c_api

__all__ = ["HcclGroupStart", "HcclGroupEnd", "HcclGroupStatusGet", "HcclGroupEnqueueOp"]


@c_api()
def HcclGroupStart():  # noqa: N802
    """Open a group (nested starts need as many ends)."""
    group.start("HcclGroupStart")


@c_api()
def HcclGroupEnd():  # noqa: N802
    """Close the group; the outermost end issues the calls kept since the start."""
    dispatch.end_group("HcclGroupEnd")


@c_api(False)
def HcclGroupStatusGet():  # noqa: N802
    """``(ret, isGroupEnabled)``: whether the calling thread is inside a group (Atlas 350 only,
    as HCCL documents)."""
    check_product("HcclGroupStatusGet")
    return group.active()


@c_api()
def HcclGroupEnqueueOp(comm, opDesc, stream, func):  # noqa: N802,N803
    """Run ``func(comm, opDesc, stream)`` (an operator's launch function) now, or at the end of the
    open group. pyhcomm calls Python callables; a C function address (an int) cannot be called
    here and is ``HCCL_E_NOT_SUPPORT``. A code other than 0 from ``func`` fails the call (or the
    group's end)."""
    api = "HcclGroupEnqueueOp"
    _comm.get_comm(comm, api)
    if isinstance(func, int) and not isinstance(func, bool):
        raise not_support(api, "func is a C function address; pyhcomm can only call a Python callable")
    if not callable(func):
        raise para(api, f"func {func!r} is not callable")

    def go():
        ret = func(comm, opDesc, stream)
        if ret:
            raise para(api, f"the enqueued operator returned {ret}")
    if group.active():
        group.keep_operator(go)
    else:
        go()
