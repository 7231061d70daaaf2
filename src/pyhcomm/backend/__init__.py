"""Backends move the bytes: the core decides *what* moves, a backend decides *how*.

A backend provides :class:`Storage` (the bytes behind one allocation) and the raw operations on
it. Each :class:`pyhcomm.sim.Sim` owns one backend instance (``sim.backend``): the CPU (numpy)
backend, or in data-less mode a backend that moves nothing.
"""
from __future__ import annotations

from .cpu import CpuBackend, Storage


def make_backend(config):
    """The backend a Sim with ``config`` uses."""
    return CpuBackend(threads=config.copy_threads)


__all__ = ["CpuBackend", "Storage", "make_backend"]
