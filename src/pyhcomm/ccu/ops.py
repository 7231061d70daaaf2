"""The DSL's instructions: ``LoadArg``, the data moves and the synchronisation (``AscendC::ccu``'s names).

Each records one instruction and returns ``CCU_SUCCESS``; a misuse raises
:class:`~pyhcomm.hcomm.resources.ccu_pool.CcuError` (``HcommCcuKernelRegister`` returns its code).

* ``LoadArg(var, argId)``: ``var`` = ``taskArgs[argId]`` of each launch; before every other
  instruction; ``argId`` below 13 (a task descriptor's 13 arguments).
* Moves, asynchronous: each sets the bits of ``mask`` in ``event`` when its bytes landed. ``LocalCopy``
  (memory or CCU buffer to memory or CCU buffer, not buffer to buffer), ``LocalReduce`` (memory into
  memory; or CCU buffers into the first of them), ``Read`` / ``ReadReduce`` (the peer's memory into
  local memory or a buffer), ``Write`` / ``WriteReduce`` (local memory or a buffer into the peer's
  memory). A length is a Variable or an int; a move of 0 bytes, a remote move of 256 MB or more, and
  a buffer move past the slices of its buffer's block (4096 bytes a slice) fail (at registration for
  an int length, when the mission runs otherwise).
* ``EventRecord(event, mask)`` sets bits of one of the kernel's events; ``EventWait(event, mask)``
  waits until every bit of ``mask`` is set, then clears them (``CKE`` semantics; the clearing is
  pyhcomm's inference: see docs/ccu.md). ``NotifyRecord(channel, remoteIdx, mask)`` sets bits of the
  peer's sync register ``remoteIdx`` of the channel, ``NotifyWait(channel, localIdx, mask)`` waits
  for (and clears) bits of this end's; ``WriteVariableWithNotify(channel, var, remoteVarIdx,
  remoteNotifyIdx, mask)`` writes ``var``'s value into the peer's variable slot, then sets the bits.
  A mask is at most 16 bits (``uint16_t``: a bit per rank of at most 16); an ``EventRecord`` (and
  any instruction but a move or a wait) inside a loop body is ``CCU_E_PARA``.
"""
from __future__ import annotations

from ..defs.ccu import (CCU_CHANNEL_CKES, CCU_CHANNEL_VARIABLES, CCU_MS_SIZE, CCU_REMOTE_MAX, CCU_TASK_ARGS_MAX,
                        CcuResult as C)
from ..enums import HcclDataType as D
from ..enums import HcclReduceOp as O
from ..hcomm.resources.ccu_pool import ccu_error
from .program import Buf, Mem
from .recorder import current
from .resources import CcuBuffer, Event, LocalAddr, RemoteAddr, Variable, channel_end, operand

OK = C.CCU_SUCCESS
MASK_MAX = 0xFFFF
#: What the CCU reduces (``CCU_models_concepts.md``, "CcuBuffer").
REDUCE_TYPES = frozenset((D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_FP16, D.HCCL_DATA_TYPE_BFP16, D.HCCL_DATA_TYPE_INT32,
                          D.HCCL_DATA_TYPE_INT16, D.HCCL_DATA_TYPE_INT8, D.HCCL_DATA_TYPE_UINT8))
REDUCE_OPS = frozenset((O.HCCL_REDUCE_SUM, O.HCCL_REDUCE_MAX, O.HCCL_REDUCE_MIN))
#: CCU buffers one ``LocalReduce`` of buffers reduces at most.
REDUCE_BUFFERS_MAX = 8


def _para(name: str, message: str):
    return ccu_error(C.CCU_E_PARA, name, message)


def _mask(mask, name: str) -> int:
    if isinstance(mask, bool) or not isinstance(mask, int) or not 0 <= mask <= MASK_MAX:
        raise _para(name, f"mask {mask!r} is wider than a sync register's 16 bits (a bit per rank, 16 ranks at most)"
                    if isinstance(mask, int) and mask > MASK_MAX else f"mask {mask!r} is not a 16-bit mask")
    return mask


def _index(value, top: int, name: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < top:
        raise _para(name, f"{what} {value!r} is outside [0, {top})")
    return value


def _event(event, name: str):
    if not isinstance(event, Event):
        raise _para(name, f"event must be a ccu.Event, not {type(event).__name__}")
    return event.ref


def LoadArg(var, argId):  # noqa: N802,N803
    """``var`` takes ``taskArgs[argId]`` when the kernel is launched."""
    name = "ccu.LoadArg"
    rec = current(name)
    if not isinstance(var, Variable):
        raise _para(name, f"LoadArg loads a ccu.Variable, not {type(var).__name__}")
    arg = _index(argId, CCU_TASK_ARGS_MAX, name, f"argId (a task descriptor has {CCU_TASK_ARGS_MAX} arguments):")
    rec.emit("load_arg", name, dst=var.ref, arg=arg)
    rec.arg_ids.add(arg)
    return OK


# -- moves ----------------------------------------------------------------------------------------------------
def _mem(x, name: str, what: str, remote: bool = False, buffer: bool = True):
    """A move operand: a LocalAddr / RemoteAddr (``remote``) or, where allowed, a CcuBuffer."""
    if buffer and not remote and isinstance(x, CcuBuffer):
        return Buf(x.ref)
    want = RemoteAddr if remote else LocalAddr
    if not isinstance(x, want):
        allowed = want.__name__ + (" or CcuBuffer" if buffer and not remote else "")
        raise _para(name, f"{what} must be a ccu.{allowed}, not {type(x).__name__}")
    return Mem(x.addr.ref, x.token.ref, remote)


def _length(length, name: str, remote: bool, buffers) -> object:
    value = operand(length, name)
    if isinstance(value, int):
        check_length(value, remote, buffers, name)
    return value


def check_length(n: int, remote: bool, buffers, name: str) -> None:
    """The limits of a move of ``n`` bytes (``buffers``: its CCU buffer operands' registers)."""
    if n == 0:
        raise _para(name, "a data move of 0 bytes (its hardware behaviour is undefined)")
    if remote and n >= CCU_REMOTE_MAX:
        raise _para(name, f"a remote move of {n} bytes: it must be shorter than 256 MB")
    for reg in buffers:
        slices = reg.end - reg.id
        if n > slices * CCU_MS_SIZE:
            raise _para(name, f"a CCU buffer move of {n} bytes runs past its buffer ({slices} slice(s) of "
                              f"{CCU_MS_SIZE} bytes from ms[{reg.id}] to the end of its block)")


def _reduce_args(dtype, op, name: str) -> tuple:
    if dtype not in REDUCE_TYPES:
        raise _para(name, f"dataType {dtype!r}: the CCU reduces FP32, FP16, BF16, INT32, INT16, INT8 and UINT8")
    if op not in REDUCE_OPS:
        raise _para(name, f"opType {op!r}: the CCU reduces with SUM, MAX and MIN")
    return int(dtype), int(op)


def _move(name: str, kind: str, channel, dst, src, length, event, mask, dtype=None, op=None):
    rec = current(name)
    end = channel_end(channel, name) if channel is not None else None
    buffers = [x.reg for x in (dst, src) if isinstance(x, Buf)]
    if len(buffers) == 2:
        raise _para(name, "a move between two CCU buffers does not exist")
    if dtype is not None:
        dtype, op = _reduce_args(dtype, op, name)
    rec.emit("move", name, move=kind, channel=end, dst=dst, src=src,
             length=_length(length, name, channel is not None, buffers), dtype=dtype, op=op,
             event=_event(event, name), mask=_mask(mask, name))
    return OK


def LocalCopy(dst, src, len, event, mask=1):  # noqa: N802,A002
    """``len`` bytes of local memory or a CCU buffer into local memory or a CCU buffer."""
    name = "ccu.LocalCopy"
    return _move(name, "local_copy", None, _mem(dst, name, "dst"), _mem(src, name, "src"), len, event, mask)


def LocalReduce(dst, src, *args):  # noqa: N802
    """``LocalReduce(dst, src, len, dataType, opType, event, mask=1)``: ``src`` reduced into ``dst``
    (local memory); ``LocalReduce(buffers, count, dataType, outputDataType, opType, len, event,
    mask=1)``: CCU buffers ``buffers[1:count]`` reduced, in order, into ``buffers[0]``."""
    name = "ccu.LocalReduce"
    if isinstance(dst, (list, tuple)):
        return _buffer_reduce(name, dst, src, *args)
    length, dtype, op, event, *rest = args
    return _move(name, "local_reduce", None, _mem(dst, name, "dst", buffer=False), _mem(src, name, "src", buffer=False),
                 length, event, rest[0] if rest else 1, dtype, op)


def _buffer_reduce(name, buffers, count, dtype, out_dtype, op, length, event, mask=1):
    rec = current(name)
    n = _index(count, REDUCE_BUFFERS_MAX + 1, name, "count")
    if n < 2 or len(buffers) < n or not all(isinstance(b, CcuBuffer) for b in buffers[:n]):
        raise _para(name, f"count {count!r}: 2 to {REDUCE_BUFFERS_MAX} ccu.CcuBuffer values are reduced")
    if out_dtype != dtype:
        raise _para(name, "outputDataType must be the input's (CCU_models_concepts.md)")
    dtype, op = _reduce_args(dtype, op, name)
    regs = [b.ref for b in buffers[:n]]
    rec.emit("move", name, move="buffer_reduce", channel=None, dst=Buf(regs[0]), src=[Buf(r) for r in regs[1:]],
             length=_length(length, name, False, regs), dtype=dtype, op=op, event=_event(event, name),
             mask=_mask(mask, name))
    return OK


def Read(ch, local, remote, len, event, mask=1):  # noqa: N802,A002
    """``len`` bytes of the peer's memory into local memory or a CCU buffer."""
    name = "ccu.Read"
    return _move(name, "read", ch, _mem(local, name, "local"), _mem(remote, name, "remote", remote=True), len, event,
                 mask)


def ReadReduce(ch, local, remote, len, dataType, opType, event, mask=1):  # noqa: N802,N803,A002
    name = "ccu.ReadReduce"
    return _move(name, "read_reduce", ch, _mem(local, name, "local", buffer=False),
                 _mem(remote, name, "remote", remote=True), len, event, mask, dataType, opType)


def Write(ch, remote, local, len, event, mask=1):  # noqa: N802,A002
    """``len`` bytes of local memory or a CCU buffer into the peer's memory."""
    name = "ccu.Write"
    return _move(name, "write", ch, _mem(remote, name, "remote", remote=True), _mem(local, name, "local"), len, event,
                 mask)


def WriteReduce(ch, remote, local, len, dataType, opType, event, mask=1):  # noqa: N802,N803,A002
    name = "ccu.WriteReduce"
    return _move(name, "write_reduce", ch, _mem(remote, name, "remote", remote=True),
                 _mem(local, name, "local", buffer=False), len, event, mask, dataType, opType)


# -- synchronisation ------------------------------------------------------------------------------------------
def EventRecord(event, mask=1):  # noqa: N802
    name = "ccu.EventRecord"
    rec = current(name)
    if rec.loop_depth:
        raise _para(name, "an EventRecord inside a loop body (a loop holds data moves and waits only)")
    rec.emit("event_record", name, event=_event(event, name), mask=_mask(mask, name))
    return OK


def EventWait(event, mask=1):  # noqa: N802
    name = "ccu.EventWait"
    current(name).emit("event_wait", name, event=_event(event, name), mask=_mask(mask, name))
    return OK


def _channel_notify(op: str, name: str, channel, index, what: str, mask):
    rec = current(name)
    end = channel_end(channel, name)
    idx = _index(index, CCU_CHANNEL_CKES, name, what)
    rec.emit(op, name, channel=end, cke=idx, mask=_mask(mask, name))
    return OK


def NotifyRecord(channel, remoteNotifyIdx, mask=1):  # noqa: N802,N803
    return _channel_notify("notify_record", "ccu.NotifyRecord", channel, remoteNotifyIdx, "remoteNotifyIdx", mask)


def NotifyWait(channel, localNotifyIdx, mask=1):  # noqa: N802,N803
    return _channel_notify("notify_wait", "ccu.NotifyWait", channel, localNotifyIdx, "localNotifyIdx", mask)


def WriteVariableWithNotify(channel, var, remoteVarIdx, remoteNotifyIdx, mask=1):  # noqa: N802,N803
    name = "ccu.WriteVariableWithNotify"
    rec = current(name)
    end = channel_end(channel, name)
    if not isinstance(var, Variable):
        raise _para(name, f"var must be a ccu.Variable, not {type(var).__name__}")
    slot = _index(remoteVarIdx, CCU_CHANNEL_VARIABLES, name, "remoteVarIdx")
    idx = _index(remoteNotifyIdx, CCU_CHANNEL_CKES, name, "remoteNotifyIdx")
    rec.emit("write_variable", name, channel=end, value=var.ref, slot=slot, cke=idx, mask=_mask(mask, name))
    return OK


#: (the names from the functions: "Write", "LocalCopy" ... are also task kinds' names, declared in sim/kinds.py only)
__all__ = [f.__name__ for f in (LoadArg, LocalCopy, LocalReduce, Read, ReadReduce, Write, WriteReduce, EventRecord,
                                EventWait, NotifyRecord, NotifyWait, WriteVariableWithNotify)]
