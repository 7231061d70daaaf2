"""Memory as objects: :class:`Buffer` (device memory of this rank, with numpy views) and
:class:`RemoteBuffer` (memory a peer exposed on a channel: its HCCL buffer, or memory it
registered), both sliceable into views of part of themselves."""
from __future__ import annotations

import numpy as np

from ..aclrt import memory as _mem
from ..enums import aclrtMemcpyKind
from ..errors import para
from ..sim import current_sim as _sim
from ..sim import memory
from ._common import Closable


def _slice(key, size: int, what: str) -> tuple:
    if not isinstance(key, slice):
        raise TypeError(f"{what} indices must be slices (buf[start:stop]), not {type(key).__name__}")
    start, stop, step = key.indices(size)
    if step != 1:
        raise ValueError(f"{what} slices must be contiguous")
    return start, max(0, stop - start)


class Buffer(Closable):
    """Device memory ``[addr, addr + size)``; slicing gives a view of part of it."""

    def __init__(self, addr: int, size: int, device: int, owned: bool = True):
        self.addr, self.size, self.device, self._owned = addr, size, device, owned

    def __getitem__(self, key: slice) -> "Buffer":
        start, size = _slice(key, self.size, "Buffer")
        return Buffer(self.addr + start, size, self.device, owned=False)

    def __len__(self):
        return self.size

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """A live numpy view of the simulated device memory (no synchronisation implied)."""
        try:
            alloc = memory.resolve(self.addr, self.size, memory.DEVICE)
        except memory.BadRange as why:
            raise para("Buffer.numpy", str(why)) from None
        off = self.addr - alloc.addr
        return _sim().backend.view(alloc.storage, off, self.size, dtype)

    def write(self, data) -> None:
        """Copy host data (array-like) into the buffer now (``aclrtMemcpy`` host to device)."""
        arr = np.ascontiguousarray(data)
        if arr.nbytes > self.size:
            raise para("Buffer.write", f"{arr.nbytes} bytes do not fit in {self.size}")
        if arr.nbytes:
            ptr = memory.register_host_array(arr)
            _mem.aclrtMemcpy(self.addr, self.size, ptr, arr.nbytes, aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE)

    def read(self, dtype=np.uint8) -> np.ndarray:
        """Copy the buffer to a new host array now (``aclrtMemcpy`` device to host)."""
        out = np.empty(self.size // np.dtype(dtype).itemsize, dtype=dtype)
        if out.nbytes:
            ptr = memory.register_host_array(out)
            _mem.aclrtMemcpy(ptr, out.nbytes, self.addr, out.nbytes, aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_HOST)
        return out

    def fill(self, value: int) -> None:
        _mem.aclrtMemset(self.addr, self.size, value, self.size)

    def close(self) -> None:
        """Free the memory (owned buffers only; idempotent)."""
        if self._owned:
            self._owned = False
            if _sim().memory.device_map.exact(self.addr) is not None:
                _mem.aclrtFree(self.addr)

    def __repr__(self):
        return f"<Buffer 0x{self.addr:x} {self.size} B device {self.device}>"


class RemoteBuffer:
    """Memory rank ``rank`` exposed on a channel: ``[addr, addr + size)`` of the peer's address
    space, valid as the remote side of that channel's transfers (the peer's ``dst`` of a write,
    ``src`` of a read). It has no bytes here: a rank reaches it only through the channel.
    ``tag``: the tag the peer registered it under (None: its HCCL buffer)."""

    def __init__(self, addr: int, size: int, rank: int, tag: str | None = None):
        self.addr, self.size, self.rank, self.tag = addr, size, rank, tag

    def __getitem__(self, key: slice) -> "RemoteBuffer":
        start, size = _slice(key, self.size, "RemoteBuffer")
        return RemoteBuffer(self.addr + start, size, self.rank, self.tag)

    def __len__(self):
        return self.size

    def __repr__(self):
        what = "HCCL buffer" if self.tag is None else f"memory {self.tag!r}"
        return f"<RemoteBuffer 0x{self.addr:x} {self.size} B: rank {self.rank}'s {what}>"
