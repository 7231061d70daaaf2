"""Backends move the bytes: the core decides *what* moves, a backend decides *how*.

A backend provides :class:`Storage` (the bytes behind one allocation) and the raw operations on
it. Only the CPU (numpy) backend exists today; a GPU backend will implement the same interface.
"""
from __future__ import annotations

from .cpu import CpuBackend, Storage

_backend = None


def get_backend() -> CpuBackend:
    """Return the process-wide backend, creating the CPU backend on first use."""
    global _backend
    if _backend is None:
        _backend = CpuBackend()
    return _backend


__all__ = ["CpuBackend", "Storage", "get_backend"]
