"""``acl.util``: host pointers for numpy arrays and bytes, and numpy views of host memory."""
from __future__ import annotations

import numpy as np

from ..sim import current_sim as _sim
from ..sim import memory


def numpy_to_ptr(array: np.ndarray) -> int:
    """The host address of a C-contiguous numpy array, usable with ``acl.rt.memcpy``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"numpy_to_ptr: expected a numpy.ndarray, not {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise ValueError("numpy_to_ptr: the array must be C-contiguous (use numpy.ascontiguousarray)")
    return memory.register_host_array(array, readonly=not array.flags.writeable)


def bytes_to_ptr(data) -> int:
    """The host address of a bytes-like object (read-only for ``bytes``)."""
    view = np.frombuffer(data, dtype=np.uint8)
    ptr = memory.register_host_array(view, readonly=not view.flags.writeable, keep=data)
    return ptr


def _host(ptr: int, nbytes: int, fn: str):
    try:
        return memory.resolve(ptr, nbytes, memory.HOST)
    except memory.BadRange as why:
        raise ValueError(f"{fn}: {why}") from None


#: numpy's type numbers (``NPY_BOOL`` = 0 ... ``NPY_FLOAT32`` = 11 ... ``NPY_HALF`` = 23), as pyACL's
#: ``ptr_to_numpy`` takes them: the number types only (no object, string or time types, and none of
#: the numbers extension types such as ml_dtypes' get at run time, which differ between runs).
NPY_TYPES = {np.dtype(t).num: np.dtype(t) for t in set(np.sctypeDict.values())
             if np.dtype(t).num < 24 and np.dtype(t).kind in "biufc"}


def ptr_to_numpy(ptr: int, shape, npy_type) -> np.ndarray:
    """A numpy view of host memory at ``ptr`` (``npy_type``: a numpy type number such as 11 for
    ``NPY_FLOAT32``, as pyACL takes it, or a dtype)."""
    if isinstance(npy_type, (int, np.integer)) and not isinstance(npy_type, bool):
        if int(npy_type) not in NPY_TYPES:
            raise ValueError(f"ptr_to_numpy: {npy_type} is not a numpy type number of a number type "
                             "(NPY_FLOAT32 is 11)")
        dtype = NPY_TYPES[int(npy_type)]
    else:
        dtype = np.dtype(npy_type)
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    alloc = _host(ptr, nbytes, "ptr_to_numpy")
    off = ptr - alloc.addr
    return _sim().backend.view(alloc.storage, off, nbytes, dtype).reshape(shape)


def ptr_to_bytes(ptr: int, size: int) -> bytes:
    """A copy of ``size`` bytes of host memory at ``ptr``."""
    alloc = _host(ptr, size, "ptr_to_bytes")
    off = ptr - alloc.addr
    return _sim().backend.to_host(alloc.storage, off, size)
