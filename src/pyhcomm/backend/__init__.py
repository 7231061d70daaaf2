"""Backends move the bytes: the core decides *what* moves, a backend decides *how*.

A backend (:class:`Backend`) provides :class:`Storage` (the bytes behind one allocation) and the
raw operations on it; nothing outside this package touches a storage's bytes. Each
:class:`pyhcomm.sim.Sim` owns one backend instance (``sim.backend``), chosen by its configuration
(``PYHCOMM_BACKEND``, :attr:`pyhcomm.config.Config.backend_name`): ``cpu``, :class:`CpuBackend`,
keeps the bytes in host memory (numpy); ``null``, :class:`NullBackend`, keeps none (data-less
mode, also ``PYHCOMM_DATA=0`` and ``launch(..., data=False)``, whatever ``PYHCOMM_BACKEND`` says).

Adding one (a GPU backend): a module here implementing :class:`Backend`, its entry in
:data:`BACKENDS` and its name in :data:`pyhcomm.config.BACKENDS` (which ``PYHCOMM_BACKEND``
accepts).
"""
from __future__ import annotations

from .base import Backend, Storage
from .cpu import CpuBackend, CpuStorage, SharedCpuStorage
from .null import NoDataError, NullBackend, NullStorage


#: backend name -> ``factory(config)``
BACKENDS = {
    "cpu": lambda config: CpuBackend(threads=config.copy_threads),
    "null": lambda config: NullBackend(),
}


def make_backend(config) -> Backend:
    """The backend a Sim with ``config`` uses (``config.backend_name``)."""
    return BACKENDS[config.backend_name](config)


__all__ = ["Backend", "CpuBackend", "CpuStorage", "NoDataError", "NullBackend", "NullStorage", "SharedCpuStorage",
           "Storage", "BACKENDS", "make_backend"]
