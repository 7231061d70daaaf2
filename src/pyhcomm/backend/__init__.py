"""Backends move the bytes: the core decides *what* moves, a backend decides *how*.

A backend (:class:`Backend`) provides :class:`Storage` (the bytes behind one allocation) and the
raw operations on it; nothing outside this package touches a storage's bytes. :class:`CpuBackend`
keeps them in host memory (numpy); :class:`NullBackend` keeps none (the simulation runs without
data). A GPU backend will implement the same interface.
"""
from __future__ import annotations

from .base import Backend, Storage
from .cpu import CpuBackend, CpuStorage
from .null import NoDataError, NullBackend, NullStorage

_backend = None


def get_backend() -> CpuBackend:
    """Return the process-wide backend, creating the CPU backend on first use."""
    global _backend
    if _backend is None:
        _backend = CpuBackend()
    return _backend


__all__ = ["Backend", "CpuBackend", "CpuStorage", "NoDataError", "NullBackend", "NullStorage", "Storage",
           "get_backend"]
