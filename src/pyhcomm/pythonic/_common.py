"""What the object families of the Pythonic tier share: the context-manager base, addresses of
buffers, default sizes, and the data type / reduce op spellings numpy users write."""
from __future__ import annotations

import numpy as np

from ..enums import DATA_TYPE_SIZE as _DATA_TYPE_SIZE
from ..enums import NUMPY_DTYPE as _NUMPY_DTYPE
from ..enums import CommEngine as _CommEngine
from ..enums import HcommReduceOp as _HcommReduceOp
from ..errors import para


class Closable:
    """A context manager whose ``__exit__`` calls ``close()`` (idempotent in every subclass)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def public_engine(engine):
    """The ``CommEngine`` member of an engine description (the description itself for an engine
    that is not one)."""
    try:
        return _CommEngine(engine.value)
    except ValueError:
        return engine


def addr(x) -> int:
    """The address of a buffer (anything with ``.addr``), or ``x`` itself (an int)."""
    return getattr(x, "addr", x)


def common_size(api: str, name: str, *buffers) -> int:
    """The size shared by every buffer of ``buffers`` that knows its size; ``HCCL_E_PARA``
    (asking for ``name``) when they differ or none knows it."""
    sizes = {b.size for b in buffers if hasattr(b, "size") and not isinstance(b, int)}
    if len(sizes) != 1:
        raise para(api, f"give {name}: buffer sizes {sorted(sizes)} differ or are unknown")
    return sizes.pop()


def element_count(api: str, dt: int, *buffers) -> int:
    """Elements of data type ``dt`` in the common size of ``buffers`` (see :func:`common_size`)."""
    size = common_size(api, "count", *buffers)
    item = _DATA_TYPE_SIZE.get(dt)
    if item is None or size % item:
        raise para(api, f"give count: {size} bytes is not a whole number of dataType {dt} elements")
    return size // item


_DTYPE_OF_NUMPY = {dt: value for value, dt in _NUMPY_DTYPE.items()}
_OP_NAMES = {"sum": 0, "prod": 1, "max": 2, "min": 3}


def reduce_dtype(dtype, api: str) -> int:
    """An ``HcommDataType`` value from an int / enum, or from a numpy dtype (``HCCL_E_PARA`` if none)."""
    if dtype is None:
        raise TypeError(f"{api}: give dtype (an HcommDataType or a numpy dtype)")
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return dtype
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{api}: dtype {dtype!r} is neither an HcommDataType nor a numpy dtype") from None
    value = _DTYPE_OF_NUMPY.get(np_dtype)
    if value is None:
        raise para(api, f"numpy dtype {np_dtype} has no HcommDataType")
    return value


def reduce_op(op, api: str) -> int:
    """An ``HcommReduceOp`` value from an int / enum or a name (``"sum"``, ``"prod"``, ``"max"``, ``"min"``)."""
    if isinstance(op, str):
        value = _OP_NAMES.get(op.lower().removeprefix("hcomm_reduce_").removeprefix("hccl_reduce_"))
        if value is None:
            raise para(api, f"reduce op {op!r} is not sum, prod, max or min")
        return _HcommReduceOp(value)
    return op
