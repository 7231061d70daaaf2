"""The null backend: the simulation runs without data (``PYHCOMM_DATA=0``).

Tasks, ordering, notifies and the checks of every call behave as with data, but no byte moves:
copies, fills and reduces do nothing, and nothing can be read back. Storage of any size commits no
memory: it is an address range reserved read-only (an anonymous mapping that is never touched), so
host allocations still get real, distinct process addresses that cannot collide with user arrays
registered next to them. User arrays are wrapped as they are, for registration.
"""
from __future__ import annotations

import mmap

import numpy as np

from ..errors import HcclNotSupportedError, HcclResult
from .base import Backend, Storage

_RESERVE = ({"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, "prot": mmap.PROT_READ}
            if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS") else {})


class NoDataError(HcclNotSupportedError, ValueError):
    """Reading memory back while the simulation runs without data (the null backend)."""


def no_data(hook: str) -> NoDataError:
    return NoDataError(HcclResult.HCCL_E_NOT_SUPPORT, "",
                       f"null backend: {hook} has no bytes to give, the simulation runs without data "
                       "(PYHCOMM_DATA=0)")


class NullStorage(Storage):
    """``size`` bytes of reserved address space that are never committed (nor written)."""

    __slots__ = ("_map",)

    def __init__(self, size: int):
        m = mmap.mmap(-1, max(size, 1), **_RESERVE)  # length 0 is refused; one page is reserved
        probe = np.frombuffer(m, dtype=np.uint8)
        addr = probe.__array_interface__["data"][0]
        del probe  # the export must end, else the mapping could not be closed
        Storage.__init__(self, addr, size, (lambda: m))
        self._map = m


class NullBackend(Backend):
    """A backend without data: storage of the right size and address, operations that do nothing."""

    name = "null"

    # -- storage -------------------------------------------------------------------------------
    def allocate(self, size: int) -> NullStorage:
        """Return storage of ``size`` bytes that commits no memory (it reads as nothing, see ``view``)."""
        return NullStorage(size)

    def wrap(self, array: np.ndarray, anchor) -> Storage:
        """Storage over a user's host array (address and size only; the array is not read)."""
        flat = array.reshape(-1)
        addr, size = flat.__array_interface__["data"][0], flat.nbytes
        return Storage(addr, size, anchor if anchor is not None else (lambda: array))

    # -- operations: nothing moves -------------------------------------------------------------
    def copy(self, dst: Storage, dst_off: int, src: Storage, src_off: int, n: int) -> None:
        """Do nothing."""

    def memset(self, dst: Storage, off: int, value: int, n: int) -> None:
        """Do nothing."""

    def reduce(self, dst: Storage, dst_off: int, src: Storage, src_off: int, count: int, np_dtype,
               op: int) -> None:
        """Do nothing."""

    def from_host(self, storage: Storage, off: int, data) -> None:
        """Do nothing (the bytes are dropped)."""

    # -- host access: no data to give --------------------------------------------------------
    def to_host(self, storage: Storage, off: int, n: int) -> bytes:
        """Raise :class:`NoDataError`: there are no bytes to read."""
        raise no_data("to_host")

    def view(self, storage: Storage, off: int, n: int, dtype=None):
        """Raise :class:`NoDataError`: there are no bytes to view."""
        raise no_data("view")
