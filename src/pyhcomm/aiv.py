"""Writing AIV kernels in Python: Ascend C's names for what a communication kernel uses.

An AIV kernel is a function of a kernel module (what ``aclrtBinaryLoad`` loads; see
:mod:`pyhcomm.aclrt.kernel`) marked with :func:`EXPORT_AIV_META_INFO`, as the Ascend C macro marks
its binary. Each of its blocks runs the function (:mod:`pyhcomm.sim.aiv`: concurrently, each knowing
:func:`GetBlockIdx` and :func:`GetBlockNum`). The names follow ``AscendC::`` and HCCL's AIV helpers
(``sync_interface.h``)::

    from pyhcomm.aiv import (EXPORT_AIV_META_INFO, DataCopy, GetBlockIdx, GlobalTensor, LocalTensor,
                             SetSignalValue, SyncAll, WaitSignalValue)

    def MyKernel(param: bytes):
        src, dst, flag = struct.unpack_from("<QQQ", param)
        ub = LocalTensor(np.float32, 1024)              # the block's local buffer (UB)
        DataCopy(ub, GlobalTensor(np.float32, src), 1024)   # global -> local: a load
        DataCopy(GlobalTensor(np.float32, dst), ub, 1024)   # local -> global: a store
        SetSignalValue(flag, LocalTensor(np.int32, 32), 1)  # a flag for a peer (a release)

    EXPORT_AIV_META_INFO(MyKernel)

Global memory is a device address (an int) or a :class:`GlobalTensor` over one: the kernel's own
device's memory, or a peer's that an AIV channel of its device exposes. Local tensors are numpy
arrays of the block (``TPipe`` / ``TQue`` / ``TBuf`` hand them out as Ascend C does; here they are
plain buffers). Copies are synchronous, so ``PipeBarrier`` / ``pipe_barrier`` order nothing more.

Flags are what synchronises blocks and ranks: :func:`SetSignalValue` stores one (a release),
:func:`WaitSignalValue` (and the ``GE`` / ``NotEq`` variants) waits for one and then reads it (an
acquire, ordered after the store whose value it read: :mod:`pyhcomm.sim.aiv`). A flag spun on with
plain ``DataCopy`` loads works too (the repeated load waits for a change), but the verifier sees
those loads as data, not synchronisation. ``count`` (pyhcomm's): how many ``int32`` the flag copy
moves (HCCL's helpers move 32; a kernel with 32-byte flag slots passes 8).
"""
from __future__ import annotations

import numpy as np

from .sim import aiv as _aiv

#: ``PIPE_ALL`` (pipe barriers order nothing here: every copy is synchronous).
PIPE_ALL = "PIPE_ALL"
#: ``UB_FLAG_PAD_COUNT`` of HCCL's ``sync_interface.h``.
UB_FLAG_PAD_COUNT = 8
#: How many ``int32`` HCCL's signal helpers copy.
SIGNAL_COUNT = 32

int8_t, int16_t, int32_t, int64_t = np.int8, np.int16, np.int32, np.int64
uint8_t, uint16_t, uint32_t, uint64_t = np.uint8, np.uint16, np.uint32, np.uint64
half, float32_t = np.float16, np.float32


def EXPORT_AIV_META_INFO(kernel):  # noqa: N802 - Ascend C's name
    """Mark ``kernel`` an AIV kernel (``K_TYPE_AIV`` in its binary's ``.ascend.meta`` section);
    returns it (usable as a decorator too)."""
    setattr(kernel, _aiv.META, _aiv.K_TYPE_AIV)
    return kernel


def GetBlockIdx() -> int:  # noqa: N802
    """The calling block's index (``block_idx``)."""
    return _aiv.block("GetBlockIdx").block_idx


def GetBlockNum() -> int:  # noqa: N802
    """How many blocks the kernel was launched with (``block_num``, the launch's ``numBlocks``)."""
    return _aiv.block("GetBlockNum").num_blocks


def SyncAll(*_template) -> None:  # noqa: N802
    """The barrier of the kernel's blocks (``SyncAll<true>()``): returns when every block called it."""
    _aiv.sync_all()


def PipeBarrier(*_pipe) -> None:  # noqa: N802
    """``PipeBarrier<PIPE_ALL>()``: nothing to wait for (copies are synchronous here)."""


pipe_barrier = PipeBarrier


class LocalTensor:
    """A tensor in the block's local buffer (UB): ``ub``, a numpy array of its elements."""

    __slots__ = ("ub",)

    def __init__(self, dtype, count: int | None = None, ub=None):
        self.ub = np.zeros(count or 0, dtype=dtype) if ub is None else ub

    @property
    def dtype(self):
        return self.ub.dtype

    def GetValue(self, i: int):  # noqa: N802
        return self.ub[i].item()

    def SetValue(self, i: int, value) -> None:  # noqa: N802
        self.ub[i] = value

    def GetSize(self) -> int:  # noqa: N802
        return self.ub.size

    def ReinterpretCast(self, dtype) -> "LocalTensor":  # noqa: N802
        return LocalTensor(dtype, ub=self.ub.view(dtype))

    def __getitem__(self, offset: int) -> "LocalTensor":
        return LocalTensor(self.ub.dtype, ub=self.ub[offset:])

    def __repr__(self):
        return f"<LocalTensor {self.ub.dtype} x{self.ub.size}>"


class GlobalTensor:
    """A tensor in global memory: ``dtype`` elements from device address ``addr`` (``SetGlobalBuffer``)."""

    __slots__ = ("dtype", "addr", "size")

    def __init__(self, dtype=np.uint8, addr: int = 0, size: int | None = None):
        self.dtype = np.dtype(dtype)
        self.addr = int(addr)
        self.size = size

    def SetGlobalBuffer(self, addr, size: int | None = None) -> None:  # noqa: N802
        self.addr = _address(addr)
        self.size = size

    def GetPhyAddr(self, offset: int = 0) -> int:  # noqa: N802
        return self.addr + offset * self.dtype.itemsize

    def GetSize(self) -> int:  # noqa: N802
        return self.size or 0

    def GetValue(self, i: int):  # noqa: N802
        """Element ``i``, read from global memory now (a scalar load)."""
        n = self.dtype.itemsize
        return np.frombuffer(_aiv.load(self.addr + i * n, n, "GlobalTensor::GetValue", True), self.dtype)[0].item()

    def SetValue(self, i: int, value) -> None:  # noqa: N802
        """Write element ``i`` to global memory now (a scalar store)."""
        n = self.dtype.itemsize
        _aiv.store(self.addr + i * n, np.array([value], dtype=self.dtype).tobytes(), "GlobalTensor::SetValue", True)

    def __getitem__(self, offset: int) -> "GlobalTensor":
        size = None if self.size is None else self.size - offset
        return GlobalTensor(self.dtype, self.addr + offset * self.dtype.itemsize, size)

    def __repr__(self):
        return f"<GlobalTensor {self.dtype} at 0x{self.addr:x}>"


def _address(gm) -> int:
    if isinstance(gm, GlobalTensor):
        return gm.addr
    if isinstance(gm, (int, np.integer)) and not isinstance(gm, bool):
        return int(gm)
    raise TypeError(f"a global memory address is an int or a GlobalTensor, not {type(gm).__name__}")


def DataCopy(dst, src, count: int) -> None:  # noqa: N802
    """Copy ``count`` elements: global -> local (a load), local -> global (a store) or local ->
    local (``src``'s element type)."""
    if isinstance(src, GlobalTensor) and isinstance(dst, LocalTensor):
        _to_local(dst, src, count * src.dtype.itemsize, "DataCopy")
    elif isinstance(src, LocalTensor) and isinstance(dst, GlobalTensor):
        _to_global(dst, src, count * src.dtype.itemsize, "DataCopy")
    elif isinstance(src, LocalTensor) and isinstance(dst, LocalTensor):
        nbytes = count * src.dtype.itemsize
        dst.ub.view(np.uint8)[:nbytes] = src.ub.view(np.uint8)[:nbytes]
    else:
        raise TypeError(f"DataCopy copies between a GlobalTensor and a LocalTensor (or two LocalTensors), not "
                        f"{type(src).__name__} -> {type(dst).__name__}")


class DataCopyExtParams:
    """``DataCopyExtParams``: ``blockCount`` blocks of ``blockLen`` bytes (strides: 0 only here)."""

    __slots__ = ("blockCount", "blockLen", "srcStride", "dstStride", "rsv")

    def __init__(self, blockCount=1, blockLen=0, srcStride=0, dstStride=0, rsv=0):  # noqa: N803
        self.blockCount, self.blockLen, self.srcStride, self.dstStride, self.rsv = (
            blockCount, blockLen, srcStride, dstStride, rsv)


class DataCopyPadExtParams:
    """``DataCopyPadExtParams``: padding of a global -> local copy (its padding is not written here)."""

    __slots__ = ("isPad", "leftPadding", "rightPadding", "paddingValue")

    def __init__(self, isPad=False, leftPadding=0, rightPadding=0, paddingValue=0):  # noqa: N803
        self.isPad, self.leftPadding, self.rightPadding, self.paddingValue = (
            isPad, leftPadding, rightPadding, paddingValue)


def DataCopyPad(dst, src, params: DataCopyExtParams, pad=None) -> None:  # noqa: N802
    """``DataCopyPad``: ``params.blockCount * params.blockLen`` bytes between global and local
    memory (any length, not only multiples of 32 bytes)."""
    if params.srcStride or params.dstStride:
        raise NotImplementedError("pyhcomm: DataCopyPad with strides is not modelled")
    nbytes = params.blockCount * params.blockLen
    if isinstance(src, GlobalTensor) and isinstance(dst, LocalTensor):
        _to_local(dst, src, nbytes, "DataCopyPad")
    elif isinstance(src, LocalTensor) and isinstance(dst, GlobalTensor):
        _to_global(dst, src, nbytes, "DataCopyPad")
    else:
        raise TypeError(f"DataCopyPad copies between a GlobalTensor and a LocalTensor, not "
                        f"{type(src).__name__} -> {type(dst).__name__}")


def _to_local(dst: LocalTensor, src: GlobalTensor, nbytes: int, api: str) -> None:
    data = _aiv.load(src.addr, nbytes, api)
    _bytes_of(dst, nbytes, api)[:] = np.frombuffer(data, np.uint8)


def _to_global(dst: GlobalTensor, src: LocalTensor, nbytes: int, api: str) -> None:
    _aiv.store(dst.addr, _bytes_of(src, nbytes, api).tobytes(), api)


def _bytes_of(t: LocalTensor, nbytes: int, api: str):
    raw = t.ub.view(np.uint8)
    if nbytes > raw.size:
        raise ValueError(f"{api}: {nbytes} bytes do not fit the local tensor ({raw.size} bytes)")
    return raw[:nbytes]


# -- the UB's bookkeeping: queues and buffers hand out local tensors -------------------------------------------
class TBuf:
    """``TBuf<>``: a buffer of the UB (``TPipe.InitBuffer(buf, size)``)."""

    __slots__ = ("raw",)

    def __init__(self):
        self.raw = np.zeros(0, dtype=np.uint8)

    def Get(self, dtype) -> LocalTensor:  # noqa: N802
        return LocalTensor(dtype, ub=self.raw.view(dtype))

    def GetWithOffset(self, dtype, count: int, offset: int) -> LocalTensor:  # noqa: N802
        """``count`` elements from byte ``offset`` of the buffer."""
        n = np.dtype(dtype).itemsize
        return LocalTensor(dtype, ub=self.raw[offset:offset + count * n].view(dtype))


class TQue:
    """``TQue`` / ``TQueBind``: ``num`` buffers of ``size`` bytes (``TPipe.InitBuffer(que, num,
    size)``); allocation and the queue order change nothing here (copies are synchronous)."""

    __slots__ = ("raw", "queued")

    def __init__(self, *_positions):
        self.raw = np.zeros(0, dtype=np.uint8)
        self.queued: list = []

    def AllocTensor(self, dtype=np.uint8) -> LocalTensor:  # noqa: N802
        return LocalTensor(dtype, ub=self.raw.view(dtype))

    def EnQue(self, tensor: LocalTensor) -> None:  # noqa: N802
        self.queued.append(tensor)

    def DeQue(self, dtype=None) -> LocalTensor:  # noqa: N802
        t = self.queued.pop(0)
        return t if dtype is None else t.ReinterpretCast(dtype)

    def FreeTensor(self, tensor: LocalTensor) -> None:  # noqa: N802
        pass


TQueBind = TQue


class TPipe:
    """``TPipe``: gives queues and buffers their UB memory."""

    def InitBuffer(self, buf, num_or_size: int, size: int | None = None) -> None:  # noqa: N802
        nbytes = num_or_size if size is None else num_or_size * size
        buf.raw = np.zeros(nbytes, dtype=np.uint8)


# -- HCCL's AIV synchronisation helpers (sync_interface.h) -----------------------------------------------------
def _flag_bytes(local: LocalTensor, count: int) -> bytes:
    raw = local.ub.view(np.int32)
    if count > raw.size:
        raise ValueError(f"a flag of {count} int32 does not fit the local tensor ({raw.size} int32)")
    return raw[:count].tobytes()


def SetSignalValue(gmSignalAddr, localTensor: LocalTensor, value: int, count: int = SIGNAL_COUNT) -> None:  # noqa: N802,N803
    """Store flag ``value`` at ``gmSignalAddr`` (``localTensor``'s first ``count`` int32, its first
    set to ``value``): a release."""
    localTensor.ub.view(np.int32)[0] = value
    _aiv.flag_store(_address(gmSignalAddr), _flag_bytes(localTensor, count), int(value), "SetSignalValue")


def AddSignalValue(gmSignalAddr, localTensor: LocalTensor, value: int, count: int = UB_FLAG_PAD_COUNT) -> None:  # noqa: N802,N803
    """Add ``value`` to the flag at ``gmSignalAddr`` at once (an atomic add; a release)."""
    addr = _address(gmSignalAddr)
    now = np.frombuffer(_aiv.flag_load(addr, 4, api="AddSignalValue"), np.int32)[0]
    localTensor.ub.view(np.int32)[:count] = now + value
    _aiv.flag_store(addr, _flag_bytes(localTensor, 1), int(now + value), "AddSignalValue")


def _wait(api, gm, local, count, test, expect):
    addr = _address(gm)
    data = _aiv.flag_load(addr, count * 4, lambda b: test(int(np.frombuffer(b[:4], np.int32)[0])), expect, api)
    local.ub.view(np.int32)[:count] = np.frombuffer(data, np.int32)


def WaitSignalValue(gmSignalAddr, localTensor: LocalTensor, expectedValue: int, count: int = SIGNAL_COUNT) -> None:  # noqa: N802,N803
    """Wait until the flag at ``gmSignalAddr`` holds ``expectedValue``, then read it into
    ``localTensor`` (an acquire)."""
    _wait("WaitSignalValue", gmSignalAddr, localTensor, count, lambda v: v == expectedValue, expectedValue)


def WaitSignalGEValue(gmSignalAddr, localTensor: LocalTensor, value: int, count: int = SIGNAL_COUNT) -> None:  # noqa: N802,N803
    """Wait until the flag at ``gmSignalAddr`` is at least ``value`` (an acquire)."""
    _wait("WaitSignalGEValue", gmSignalAddr, localTensor, count, lambda v: v >= value, f">= {value}")


def WaitSignalNotEqValue(gmSignalAddr, localTensor: LocalTensor, value: int, count: int = UB_FLAG_PAD_COUNT) -> None:  # noqa: N802,N803
    """Wait until the flag at ``gmSignalAddr`` differs from ``value`` (an acquire)."""
    _wait("WaitSignalNotEqValue", gmSignalAddr, localTensor, count, lambda v: v != value, f"!= {value}")


def GetSignalValue(gmSignalAddr, localTensor: LocalTensor, count: int = UB_FLAG_PAD_COUNT) -> int:  # noqa: N802,N803
    """The flag at ``gmSignalAddr`` now (an acquire of whatever store it read)."""
    data = _aiv.flag_load(_address(gmSignalAddr), count * 4, api="GetSignalValue")
    localTensor.ub.view(np.int32)[:count] = np.frombuffer(data, np.int32)
    return int(localTensor.ub.view(np.int32)[0])


__all__ = ["EXPORT_AIV_META_INFO", "GetBlockIdx", "GetBlockNum", "SyncAll", "PipeBarrier", "pipe_barrier", "PIPE_ALL",
           "LocalTensor", "GlobalTensor", "DataCopy", "DataCopyPad", "DataCopyExtParams", "DataCopyPadExtParams",
           "TPipe", "TQue", "TQueBind", "TBuf", "SetSignalValue", "AddSignalValue", "WaitSignalValue",
           "WaitSignalGEValue", "WaitSignalNotEqValue", "GetSignalValue", "UB_FLAG_PAD_COUNT", "SIGNAL_COUNT",
           "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "half",
           "float32_t"]
