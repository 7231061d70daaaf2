"""The helpers of the pyhccl module itself: loading the native library, resolving symbols, data
type sizes and error strings.

pyhcomm is its own library: it is always "loaded" (both of pyhccl's libraries, ``libhccl.so``
and ``libhcomm.so``), and every C-tier function it has resolves to a nonzero synthetic address
(deterministic per name); an unknown name, or one of these Python helpers, resolves to 0.
"""
from __future__ import annotations

import zlib

from ..enums import DATA_TYPE_SIZE
from ..errors import HcclGetErrorString

SYMBOL_BASE = 0x7F00_0000_0000
#: The native libraries pyhccl loads: ``libhccl.so`` and ``libhcomm.so``.
NATIVE_LIBRARIES = 2


def has_native_library() -> bool:
    """True: the simulated HCCL / HCOMM library is always there."""
    return True


def load_library() -> int:
    """Load the native libraries: nothing to do; returns how many are loaded (2, as pyhccl with
    both ``libhccl.so`` and ``libhcomm.so``)."""
    return NATIVE_LIBRARIES


def resolve_symbol(name):
    """The address of C symbol ``name`` (a synthetic one) if pyhcomm has it, else 0."""
    if name is None:
        return 0
    if not isinstance(name, str):
        raise TypeError(f"resolve_symbol: name must be a str, not {type(name).__name__}")
    from .. import capi
    if name in __all__ or name in HELPERS:
        return 0
    if name in capi.__all__ and callable(getattr(capi, name, None)) and not isinstance(getattr(capi, name), type):
        return SYMBOL_BASE + (zlib.crc32(name.encode()) << 4)
    return 0


def data_type_size(data_type: int) -> int:
    """Bytes per element of ``HcclDataType`` value ``data_type``; 0 for an unknown one."""
    return DATA_TYPE_SIZE.get(int(data_type), 0)


def get_error_string(code: int) -> str:
    """``HcclGetErrorString(code)`` (pyhccl gives None only while its native library is not
    loaded, which never happens here)."""
    return HcclGetErrorString(code)


__all__ = ["has_native_library", "load_library", "resolve_symbol"]
#: pyhccl's module-level helpers outside its ``__all__``: attributes of :mod:`pyhcomm`, not C
#: symbols.
HELPERS = ["data_type_size", "get_error_string"]
