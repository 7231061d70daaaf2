"""Initialisation and devices: ``aclInit``, ``aclrtSetDevice``, ``aclrtGetSocName`` ...

:func:`host_only` marks the runtime calls only the host makes: inside an AI CPU kernel they are
refused (``ACL_ERROR_RT_FEATURE_NOT_SUPPORT``, nothing done). An AI CPU kernel has no acl runtime:
devices, streams, memory allocation, notifies, kernel binaries and launches, every synchronize and
every asynchronous copy or fill belong to the host; device-side code orchestrates with HCOMM's
primitives. Its own memory accesses (``aclrtMemcpy``, ``aclrtMemset``: synchronous, a direct
effect of the kernel) and the getters stay allowed.
"""
from __future__ import annotations

import functools

from .. import args
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..errors import AclError, acl_error
from ..products import DEFAULT_PRODUCT


def host_call(api: str) -> None:
    """``ACL_ERROR_RT_FEATURE_NOT_SUPPORT`` when the caller runs inside an AI CPU kernel: ``api``
    is a host call (see the module docstring)."""
    kernels = program_ctx().kernels
    if kernels:
        raise acl_error(AclError.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                        f"a host call: the AI CPU kernel {kernels[-1].name} cannot make it (device-side code "
                        "has no acl runtime; it orchestrates with HCOMM's primitives)")


def host_only(fn):
    """Decorate an acl runtime call that only the host makes (:func:`host_call` first)."""
    api = fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if program_ctx().kernels:
            host_call(api)
        return fn(*args, **kwargs)

    return call


@host_only
def aclInit(config_path=None) -> None:
    """Initialise the _sim().runtime.

    Re-reads ``PYHCOMM_PRODUCT`` unless a product was chosen with :func:`pyhcomm.set_product`
    (or devices are open).
    """
    if _sim().runtime.initialized:
        raise acl_error(AclError.ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "acl is already initialised")
    sim = _sim()
    rt = sim.runtime
    if not rt.devices:
        sim.reload_config()
        if not rt.product_chosen:
            rt.set_product(sim.config.product or DEFAULT_PRODUCT, chosen=False)
    rt.initialized = True


@host_only
def aclFinalize() -> None:
    """Close every device and drop all runtime state."""
    if not _sim().runtime.initialized:
        raise acl_error(AclError.ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "acl is not initialised")
    _sim().runtime.reset()


def check_device_id(device_id, api: str) -> int:
    """A device id of the simulated product: ``ACL_ERROR_RT_INVALID_DEVICEID`` outside ``[0, count)``."""
    count = _sim().runtime.device_count
    return args.integer(device_id, api, "deviceId", 0, count - 1,
                        lambda a, m: acl_error(AclError.ACL_ERROR_RT_INVALID_DEVICEID, a,
                                               f"{m} on {_sim().runtime.product.name}"))


@host_only
def aclrtSetDevice(device_id: int) -> None:
    """Open ``device_id`` (reference counted) and make it the calling OS thread's device."""
    _sim().runtime.open_device(check_device_id(device_id, "aclrtSetDevice"))


@host_only
def aclrtResetDevice(device_id: int) -> None:
    """Drop one reference; at zero, wait for nothing and release the device's streams and memory."""
    check_device_id(device_id, "aclrtResetDevice")
    if not _sim().runtime.close_device(device_id):
        raise acl_error(AclError.ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice",
                        f"device {device_id} is not open (aclrtSetDevice)")


def aclrtGetDevice() -> int:
    dev = _sim().runtime.current_device()
    if dev is None:
        raise acl_error(AclError.ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice", "no current device")
    return dev.id


def aclrtGetDeviceCount() -> int:
    return _sim().runtime.device_count


def aclrtGetSocName() -> str:
    return _sim().runtime.product.soc_name


def current_device(api: str):
    """The calling thread's device, or ``ACL_ERROR_RT_CONTEXT_NULL``."""
    dev = _sim().runtime.current_device()
    if dev is None:
        raise acl_error(AclError.ACL_ERROR_RT_CONTEXT_NULL, api, "no current device: call aclrtSetDevice first")
    return dev
