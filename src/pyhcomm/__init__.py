"""pyhcomm: Huawei HCCL's HCOMM communication data plane, simulated in Python.

Three tiers over one core:

* the flat C tier, here: ``HcommLocalCopyOnThread``, ``HcclThreadAcquireWithStream`` ... with
  pyhccl's conventions (ints for pointers and handles, ``ret, out = f(...)``, return codes);
* the acl facade, :mod:`pyhcomm.acl` (pyACL's names: ``dev_ptr, ret = acl.rt.malloc(...)``);
* the Pythonic tier: :class:`Device`, :class:`Comm`, :class:`Thread`, :class:`Channel`, :class:`Buffer` ... raising
  :class:`HcclError`.

Every enum member is also a module constant (``pyhcomm.COMM_ENGINE_CPU_TS``).

Importing the package creates nothing (no Sim, no thread): the default simulation is made on
first use (:func:`current_sim`), with the verifier watching its launches.
"""
from __future__ import annotations

from enum import IntEnum

from . import enums as _enums
from .capi import *  # noqa: F401,F403
from .capi import __all__ as _capi_all
from .capi.pyhccl_module import data_type_size, get_error_string  # noqa: F401  (pyhccl's, outside its __all__)
from . import sim as _sim_mod
from .sim import current_sim
from .enums import *  # noqa: F401,F403
from .errors import (AclError, AclRuntimeError, HcclDeadlockError, HcclError, HcclNotSupportedError,
                     HcclResult, HcclRuntimeError, HcclTimeoutError, HcclUsageError)
from .products import DEFAULT_PRODUCT, PRODUCTS, Product, find_product

__version__ = "0.1.0"


class Sim(_sim_mod.Sim):
    """A simulation (:class:`pyhcomm.sim.Sim`) whose launches the verifier watches (its sessions,
    ``PYHCOMM_VERIFY``): the default one, and every one a program makes with ``pyhcomm.Sim(...)``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _verify_env.watch(self)


def _new_default_sim(**options) -> Sim:
    """A default simulation: ``Sim(**options)``."""
    return Sim(**options)


def set_product(name, device_count: int | None = None) -> Product:
    """Select the simulated product (case-insensitive name); only while no device is open.

    Raises:
        ValueError: an unknown name (the message lists the valid ones).
        RuntimeError: devices are open.
    """
    return current_sim().runtime.set_product(name, device_count)


def get_product() -> Product:
    """The product being simulated."""
    return current_sim().runtime.product


def set_notify_counting(enabled: bool) -> None:
    """Make notifies created from now on count records (True) instead of coalescing them into one
    bit as the hardware does (False, the default)."""
    current_sim().runtime.notify_counting = bool(enabled)


def reset(**options) -> Sim:
    """Close every device and start a new simulation (as ``aclFinalize``, and more: handles,
    addresses and the record start afresh); keeps a product chosen with :func:`set_product`.
    ``options`` go to :class:`pyhcomm.sim.Sim` (``scheduler``, ``data``, ``seed``, ``product``).
    Returns the new Sim. (While ``python -m pyhcomm verify`` runs a whole program, the new Sim
    is checked too, on the verifier's scheduler unless ``options`` name one.)"""
    old = _sim_mod.existing_sim()       # (None: nothing to close, no Sim made for it)
    options = _verify_env.default_options(options)
    if old is not None:
        old.runtime.reset()
        if "product" not in options and old.runtime.product_chosen:
            options["product"] = old.runtime.product
            options["product_chosen"] = True
    new = _new_default_sim(**options)
    _verify_env.made_default(new)
    if old is not None:
        new.launch_observers = old.launch_observers     # who watches the launches made here stays
        _verify_env.watch(new)
    if old is not None and _sim_mod.context_sim() is old:
        _sim_mod.enter(new)
    else:
        _sim_mod.set_default_sim(new)
    return new


class _CurrentRecord:
    """``pyhcomm.record``: the record of the Sim the caller runs in."""

    def __getattr__(self, name):
        return getattr(current_sim().record, name)

    def __setattr__(self, name, value):  # ``pyhcomm.record.enabled = False`` sets the Sim's record
        setattr(current_sim().record, name, value)

    def __len__(self):
        return len(current_sim().record)

    def __repr__(self):
        return f"<record of {current_sim()!r}>"


record = _CurrentRecord()


_constants = {}
from . import capi as _capi  # noqa: E402

_capi_enums = tuple(v for v in (getattr(_capi, n) for n in _capi_all) if isinstance(v, type) and issubclass(v, IntEnum))
for _enum in _enums.ALL_ENUMS + (HcclResult, AclError) + _capi_enums:
    _constants.update(_enum.__members__)
globals().update(_constants)

from .pythonic import Buffer, Channel, Comm, Device, Kernel, Stream, Thread  # noqa: E402
from .spmd import LaunchTimeout, RankError, launch  # noqa: E402
from . import verify  # noqa: E402,F401
from .verify import env as _verify_env  # noqa: E402

_sim_mod.set_default_factory(_new_default_sim)

__all__ = (list(_capi_all) + list(_constants)
           + ["AclError", "AclRuntimeError", "HcclDeadlockError", "HcclError", "HcclNotSupportedError",
              "HcclResult", "HcclRuntimeError", "HcclTimeoutError", "HcclUsageError", "DEFAULT_PRODUCT",
              "PRODUCTS", "Product", "find_product", "set_product", "get_product", "reset", "record",
              "Sim", "current_sim",
              "set_notify_counting", "launch", "RankError", "LaunchTimeout",
              "Buffer", "Channel", "Comm", "Device", "Kernel", "Stream", "Thread", "CommEngine", "HcommDataType",
              "HcommReduceOp", "HcclDataType", "HcclReduceOp", "HCCL", "HCCL_ROOT_INFO_BYTES",
              "COMM_NAME_MAX_LENGTH", "HCCL_RES_TAG_MAX_LEN"])


def __getattr__(name):
    """``pyhcomm.timing`` on first use (the timing model is a tool: not imported with the package)."""
    if name == "timing":
        import importlib
        return importlib.import_module(".timing", __name__)
    raise AttributeError(f"module 'pyhcomm' has no attribute {name!r}")
