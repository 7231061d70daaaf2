"""``acl.util``: host pointers for numpy arrays and bytes, and numpy views of host memory.

These calls have no return code: as pyACL's, they raise ``TypeError`` for an argument of the
wrong type and ``ValueError`` (naming the function) for a value they cannot use.

Registrations never let a pointer outlive its bytes: ``numpy_to_ptr`` registers the array until
it is garbage collected (numpy refuses to resize an array while it is registered);
``bytes_to_ptr`` pins its object for the rest of the Sim (kept alive, and a ``bytearray`` or
``array.array`` can no longer be resized: ``BufferError``), since a ``bytes`` object or a
``bytearray`` cannot tell when it goes away.
"""
from __future__ import annotations

import numpy as np

from .. import args
from ..sim import current_sim as _sim
from ..sim import memory


def _value_error(api: str, message: str) -> ValueError:
    return ValueError(f"{api}: {message}")


def numpy_to_ptr(array: np.ndarray) -> int:
    """The host address of a C-contiguous numpy array, usable with ``acl.rt.memcpy``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"numpy_to_ptr: expected a numpy.ndarray, not {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise ValueError("numpy_to_ptr: the array must be C-contiguous (use numpy.ascontiguousarray)")
    return memory.register_host_array(array, readonly=not array.flags.writeable)


def bytes_to_ptr(data) -> int:
    """The host address of a bytes-like object (read-only for ``bytes``); pins it (see above)."""
    try:
        view = np.frombuffer(data, dtype=np.uint8)
    except TypeError:
        raise TypeError(f"bytes_to_ptr: expected a bytes-like object, not {type(data).__name__}") from None
    except ValueError as exc:  # a non-contiguous buffer
        raise ValueError(f"bytes_to_ptr: {exc}") from None
    return memory.register_host_array(view, readonly=not view.flags.writeable, keep=data, pin=True)


def _host(ptr, nbytes: int, fn: str):
    """The allocation, storage and owner of ``nbytes`` of host memory at ``ptr`` (held by the caller)."""
    ptr = args.pointer(ptr, fn, "ptr")
    try:
        alloc = memory.resolve(ptr, nbytes, memory.HOST)
        storage, owner = memory.hold(alloc)
    except memory.BadRange as why:
        raise ValueError(f"{fn}: {why}") from None
    return alloc, storage, owner, ptr - alloc.addr


#: numpy's type numbers (``NPY_BOOL`` = 0 ... ``NPY_FLOAT32`` = 11 ... ``NPY_HALF`` = 23), as pyACL's
#: ``ptr_to_numpy`` takes them: the number types only (no object, string or time types, and none of
#: the numbers extension types such as ml_dtypes' get at run time, which differ between runs).
NPY_TYPES = {np.dtype(t).num: np.dtype(t) for t in set(np.sctypeDict.values())
             if np.dtype(t).num < 24 and np.dtype(t).kind in "biufc"}


def ptr_to_numpy(ptr: int, shape, npy_type) -> np.ndarray:
    """A numpy view of host memory at ``ptr`` (``npy_type``: a numpy type number such as 11 for
    ``NPY_FLOAT32``, as pyACL takes it, or a dtype); the view is read-only over read-only memory
    and keeps the memory alive."""
    api = "ptr_to_numpy"
    if isinstance(npy_type, (int, np.integer)) and not isinstance(npy_type, bool):
        dtype = NPY_TYPES.get(int(npy_type))
        if dtype is None:
            raise ValueError(f"{api}: {int(npy_type)} is not a numpy type number of a number type "
                             "(NPY_FLOAT32 is 11)")
    else:
        try:
            dtype = np.dtype(npy_type)
        except TypeError:
            raise TypeError(f"{api}: type must be a numpy type number or dtype, not {type(npy_type).__name__}") from None
    dims = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
    dims = tuple(args.integer(d, api, "shape", 0, args.UINT64_MAX, _value_error) for d in dims)
    nbytes = int(np.prod(dims, dtype=object)) * dtype.itemsize
    alloc, storage, _owner, off = _host(ptr, nbytes, api)
    view = _sim().backend.view(storage, off, nbytes, dtype).reshape(dims)
    if alloc.owner == memory.READONLY:
        view.flags.writeable = False
    return view


def ptr_to_bytes(ptr: int, size: int) -> bytes:
    """A copy of ``size`` bytes of host memory at ``ptr``."""
    api = "ptr_to_bytes"
    size = args.integer(size, api, "size", 0, args.UINT64_MAX, _value_error)
    _alloc, storage, _owner, off = _host(ptr, size, api)
    return _sim().backend.to_host(storage, off, size)
