"""The fuzzer's model of memory: every buffer's expected bytes, canaries around each, and which
stream's queued work may still change it.

A :class:`Buffer` is a window the fuzzer uses inside a block it owns: a device allocation with a
guard zone inside it on each side, a host numpy array of which only the middle is registered
(the canaries lie outside anything pyhcomm knows), ``aclrtMallocHost`` memory, or the first bytes
of a rank's HCCL buffer. The model keeps the expected bytes of the whole block; the fuzzer's valid
operations touch only the window, so any change elsewhere is a finding.

Work queued on a stream is kept as pending effects of that stream and applied to the model, in
order, when the stream is synchronised. A buffer is *claimed* by the one stream with pending work
touching it: the fuzzer synchronises that stream before anything else touches the buffer, so the
effects of different streams never interleave on the same bytes and the model is exact.
"""
from __future__ import annotations

import numpy as np

import pyhcomm
from pyhcomm.sim import memory

GUARD = 64


class Buffer:
    """``size`` usable bytes at ``addr`` (the window) inside a block the fuzzer owns."""

    def __init__(self, name, kind, rank, addr, size, block_addr, block_size, array=None):
        self.name = name
        self.kind = kind                # "device", "host" (numpy), "pinned" (aclrtMallocHost), "hccl"
        self.rank = rank                # the rank (device) it belongs to; None for host memory
        self.addr = addr
        self.size = size
        self.block_addr = block_addr    # the block the model covers (window + guards)
        self.block_size = block_size
        self.array = array              # host numpy block (canaries included)
        self.expect = bytearray(block_size)
        self.claim = None               # the stream key with pending work on it
        self.freed = False

    @property
    def on_device(self) -> bool:
        return self.kind in ("device", "hccl")

    @property
    def win(self) -> int:
        """Offset of the window in the block."""
        return self.addr - self.block_addr

    def actual(self) -> bytes:
        """The block's bytes as they are, read behind pyhcomm's API (its backend)."""
        if self.array is not None:
            return self.array.tobytes()
        alloc = memory.resolve(self.block_addr, self.block_size, memory.ANY)
        sim = pyhcomm.current_sim()
        return sim.backend.to_host(alloc.storage, self.block_addr - alloc.addr, self.block_size)

    def set_actual(self, data: bytes) -> None:
        """Write the block behind the API (initial contents)."""
        if self.array is not None:
            self.array[:] = np.frombuffer(data, np.uint8)
            return
        alloc = memory.resolve(self.block_addr, self.block_size, memory.ANY)
        pyhcomm.current_sim().backend.from_host(alloc.storage, self.block_addr - alloc.addr, data)

    def window(self, off: int, n: int) -> memoryview:
        return memoryview(self.expect)[self.win + off:self.win + off + n]

    def __repr__(self):
        return f"<{self.name} {self.kind} rank {self.rank} 0x{self.addr:x}+{self.size}>"


def apply_copy(dst: Buffer, doff: int, src: Buffer, soff: int, n: int) -> None:
    """``n`` bytes from ``src`` to ``dst`` (overlap behaves as ``memmove``)."""
    data = bytes(src.window(soff, n))
    dst.window(doff, n)[:] = data


def apply_fill(dst: Buffer, off: int, value: int, n: int) -> None:
    dst.window(off, n)[:] = bytes([value & 0xFF]) * n


REDUCE_DTYPES = {0: np.int8, 1: np.int16, 2: np.int32, 4: np.float32}   # HcommDataType -> numpy
REDUCE_UFUNCS = {0: np.add, 2: np.maximum, 3: np.minimum}                 # SUM, MAX, MIN


def apply_reduce(dst: Buffer, doff: int, src: Buffer, soff: int, count: int, dtype: int, op: int) -> None:
    """``dst[i] = op(dst[i], src[i])`` for ``count`` elements (integers wrap, IEEE float32)."""
    dt = np.dtype(REDUCE_DTYPES[dtype])
    n = count * dt.itemsize
    a = np.frombuffer(bytes(dst.window(doff, n)), dt).copy()
    b = np.frombuffer(bytes(src.window(soff, n)), dt)
    with np.errstate(all="ignore"):
        REDUCE_UFUNCS[op](a, b, out=a)
    dst.window(doff, n)[:] = a.tobytes()
