"""The helpers of the pyhccl module itself: loading the native library and resolving symbols.

pyhcomm is its own library: it is always "loaded", and every C-tier function it has resolves to
a nonzero synthetic address (deterministic per name); an unknown name resolves to 0.
"""
from __future__ import annotations

import zlib

SYMBOL_BASE = 0x7F00_0000_0000


def has_native_library() -> bool:
    """True: the simulated HCCL / HCOMM library is always there."""
    return True


def load_library() -> int:
    """Load the native library: nothing to do; returns 0 (success)."""
    return 0


def resolve_symbol(name):
    """The address of C symbol ``name`` (a synthetic one) if pyhcomm has it, else 0."""
    if name is None:
        return 0
    if not isinstance(name, str):
        raise TypeError(f"resolve_symbol: name must be a str, not {type(name).__name__}")
    from .. import capi
    if name in capi.__all__ and callable(getattr(capi, name, None)) and not isinstance(getattr(capi, name), type):
        return SYMBOL_BASE + (zlib.crc32(name.encode()) << 4)
    return 0


__all__ = ["has_native_library", "load_library", "resolve_symbol"]
