"""Backends move the bytes: the core decides *what* moves, a backend decides *how*.

A backend (:class:`Backend`) provides :class:`Storage` (the bytes behind one allocation) and the
raw operations on it; nothing outside this package touches a storage's bytes. Each
:class:`pyhcomm.sim.Sim` owns one backend instance (``sim.backend``): :class:`CpuBackend` keeps the
bytes in host memory (numpy); :class:`NullBackend` keeps none (data-less mode: ``PYHCOMM_DATA=0``,
``launch(..., data=False)``). A GPU backend will implement the same interface.
"""
from __future__ import annotations

from .base import Backend, Storage
from .cpu import CpuBackend, CpuStorage, SharedCpuStorage
from .null import NoDataError, NullBackend, NullStorage


def make_backend(config) -> Backend:
    """The backend a Sim with ``config`` uses."""
    if not config.data:
        return NullBackend()
    return CpuBackend(threads=config.copy_threads)


__all__ = ["Backend", "CpuBackend", "CpuStorage", "NoDataError", "NullBackend", "NullStorage", "SharedCpuStorage",
           "Storage", "make_backend"]
