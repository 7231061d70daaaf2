"""Kernel loading and launch with pyACL's model: binary -> function -> args -> launch.

In pyhcomm a kernel "binary" is a Python module of kernels: a ``.py`` file path or an importable
module name (or a module object), or its source (``aclrtCreateBinary``). A kernel is a function of
that module; its arguments are the values appended with ``aclrtKernelArgsAppend`` (Python objects,
or bytes copied from a host pointer), passed positionally. A function the module marks with
``pyhcomm.aiv.EXPORT_AIV_META_INFO`` (the ``.ascend.meta`` section an Ascend C kernel's binary
carries) is an AIV kernel: its blocks run on the vector cores, concurrently
(:mod:`pyhcomm.sim.aiv`); the others are AI CPU kernels (:mod:`pyhcomm.sim.kernel`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import types

from .. import args as argcheck
from ..sim import current_sim as _sim
from ..sim import kinds, memory
from ..sim.aiv import is_aiv_kernel, start_aiv_kernel
from ..sim.kernel import start_kernel
from ..sim.runtime import program_ctx
from ..sim.task import Task, call_site
from ..enums import aclrtBinaryLoadOptionType, aclrtEngineType, aclrtLaunchKernelAttrId
from ..errors import AclError, acl_error
from .device import host_only
from .stream import get_stream



class Binary:
    def __init__(self, module, path):
        self.module = module
        self.path = path


class Function:
    def __init__(self, binary, name, fn):
        self.binary = binary
        self.name = name
        self.fn = fn


class KernelArgs:
    def __init__(self, function):
        self.function = function
        self.values: list = []
        self.finalized = False


def _invalid(api, msg):
    return acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, msg)


def _check_load_options(options, api: str) -> None:
    """pyACL's load options: a list of ``{"type": aclrtBinaryLoadOptionType, "value": ...}`` dicts
    (or None / ``[]``). They change nothing for a Python kernel module, but a wrong one is refused:
    a non-list is a ``TypeError``, an unknown type ``ACL_ERROR_INVALID_PARAM``."""
    if options is None:
        return
    if not isinstance(options, (list, tuple)):
        raise TypeError(f"{api}: options must be a list of option dicts, not {type(options).__name__}")
    known = {int(t) for t in aclrtBinaryLoadOptionType}
    for i, item in enumerate(options):
        if not isinstance(item, dict):
            raise TypeError(f"{api}: options[{i}] must be a dict like {{'type': ..., 'value': ...}}, "
                            f"not {type(item).__name__}")
        kind = argcheck.plain(item.get("type"))
        if isinstance(kind, bool) or not isinstance(kind, int) or int(kind) not in known:
            raise _invalid(api, f"options[{i}]: type {kind!r} is not an aclrtBinaryLoadOptionType")


@host_only
def aclrtBinaryLoadFromFile(bin_path, options=None) -> int:
    """Load a kernel module; returns a binary handle (``options``: see :func:`_check_load_options`)."""
    api = "aclrtBinaryLoadFromFile"
    _check_load_options(options, api)
    if isinstance(bin_path, types.ModuleType):
        return _sim().handles.kernels.add(Binary(bin_path, getattr(bin_path, "__file__", bin_path.__name__)))
    if not bin_path or not isinstance(bin_path, str):
        raise _invalid(api, "binPath must be a non-empty path or module name")
    if os.path.isfile(bin_path):
        if not bin_path.endswith(".py"):
            raise acl_error(AclError.ACL_ERROR_INVALID_FILE, api, f"{bin_path} is not a Python kernel module (.py)")
        name = f"pyhcomm_kernels_{next(_sim().module_ids)}"
        spec = importlib.util.spec_from_file_location(name, bin_path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise acl_error(AclError.ACL_ERROR_INVALID_FILE, api, f"loading {bin_path} failed: {exc!r}") from exc
    else:
        try:
            module = importlib.import_module(bin_path)
        except ImportError as exc:
            raise acl_error(AclError.ACL_ERROR_INVALID_FILE, api,
                            f"{bin_path} is neither a file nor an importable module ({exc})") from None
    return _sim().handles.kernels.add(Binary(module, bin_path))


def _lookup(handle, api: str, name: str):
    """The object behind a binary, function or arguments handle (None for an unknown one)."""
    return _sim().handles.kernels.get(argcheck.handle(handle, api, name))


@host_only
def aclrtBinaryUnLoad(bin_handle) -> None:
    if not isinstance(_lookup(bin_handle, "aclrtBinaryUnLoad", "binHandle"), Binary):
        raise _invalid("aclrtBinaryUnLoad", f"binHandle {bin_handle!r} is not a loaded binary")
    _sim().handles.kernels.remove(bin_handle)


@host_only
def aclrtBinaryGetFunction(bin_handle, kernel_name: str) -> int:
    api = "aclrtBinaryGetFunction"
    binary = _lookup(bin_handle, api, "binHandle")
    if not isinstance(binary, Binary):
        raise _invalid(api, f"binHandle {bin_handle!r} is not a loaded binary")
    fn = getattr(binary.module, kernel_name, None) if isinstance(kernel_name, str) else None
    if not callable(fn):
        raise acl_error(AclError.ACL_ERROR_KERNEL_NOT_FOUND, api, f"{binary.path} has no kernel {kernel_name!r}")
    return _sim().handles.kernels.add(Function(binary, kernel_name, fn))


def _function(handle, api) -> Function:
    f = _lookup(handle, api, "funcHandle")
    if not isinstance(f, Function):
        raise _invalid(api, f"funcHandle {handle!r} is not a kernel function")
    return f


@host_only
def aclrtKernelArgsInit(func_handle) -> int:
    return _sim().handles.kernels.add(KernelArgs(_function(func_handle, "aclrtKernelArgsInit")))


def _args(handle, api) -> KernelArgs:
    a = _lookup(handle, api, "argsHandle")
    if not isinstance(a, KernelArgs):
        raise _invalid(api, f"argsHandle {handle!r} is not kernel arguments")
    return a


@host_only
def aclrtKernelArgsAppend(args_handle, param, param_size=None) -> int:
    """Append one argument: a Python object, or ``param_size`` bytes copied from host pointer
    ``param``. Returns the parameter's handle: nonzero, naming the argument list and the position
    (``args_handle << 16 | position + 1``), as opaque as pyACL's ``aclrtParamHandle``."""
    api = "aclrtKernelArgsAppend"
    args = _args(args_handle, api)
    if args.finalized:
        raise _invalid(api, "arguments are already finalized")
    if isinstance(param, int) and not isinstance(param, bool) and param_size is not None:
        param_size = argcheck.integer(param_size, api, "paramSize", 0, argcheck.UINT64_MAX, _invalid)
        try:
            alloc = memory.resolve(param, param_size, memory.HOST)
            storage, _owner = memory.hold(alloc)
        except memory.BadRange as why:
            raise _invalid(api, f"param {why}") from None
        param = _sim().backend.to_host(storage, param - alloc.addr, param_size)
    if len(args.values) >= 0xFFFF:
        raise _invalid(api, "more than 65534 arguments")
    args.values.append(param)
    return (int(args_handle) << 16) | len(args.values)


@host_only
def aclrtKernelArgsFinalize(args_handle) -> None:
    _args(args_handle, "aclrtKernelArgsFinalize").finalized = True


class LaunchCfg:
    """What a launch configuration (``aclrtLaunchKernelCfg``) says: ``timeout`` (seconds; None: the
    default, no limit of its own), ``engine`` (``aclrtEngineType``, or None), ``schem_mode``."""

    __slots__ = ("timeout", "engine", "schem_mode")

    def __init__(self):
        self.timeout = None
        self.engine = None
        self.schem_mode = 0


_T = aclrtLaunchKernelAttrId
_KNOWN_ATTRS = frozenset(int(a) for a in aclrtLaunchKernelAttrId)


def _attr_items(cfg, api) -> list:
    """The attributes of ``cfg``: a dict ``{id: value}`` or pyACL's list of ``{"id": ..., "value":
    ...}`` (anything else is a ``TypeError``)."""
    if isinstance(cfg, dict):
        cfg = [{"id": k, "value": v} for k, v in cfg.items()]
    if not isinstance(cfg, (list, tuple)):
        raise TypeError(f"{api}: cfg must be a dict or a list of attribute dicts, not {type(cfg).__name__}")
    for i, item in enumerate(cfg):
        if not isinstance(item, dict):
            raise TypeError(f"{api}: cfg[{i}] must be a dict like {{'id': ..., 'value': ...}}, "
                            f"not {type(item).__name__}")
    return list(cfg)


def _uint(value, api, what, top):
    value = argcheck.plain(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise _invalid(api, f"cfg {what} {value!r} must be an int in [0, {top}]")
    return value


def _timeout_us(value, api) -> float | None:
    """``aclrtTimeoutUs``: an int of microseconds, ``{"timeoutLow": ..., "timeoutHigh": ...}`` or a
    ``(low, high)`` pair (two uint32 halves); 0 waits forever (None)."""
    if isinstance(value, dict):
        unknown = set(value) - {"timeoutLow", "timeoutHigh"}
        if unknown:
            raise _invalid(api, f"cfg timeoutUs has no field {sorted(unknown)[0]!r} (timeoutLow, timeoutHigh)")
        value = (value.get("timeoutLow", 0), value.get("timeoutHigh", 0))
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise _invalid(api, f"cfg timeoutUs {value!r} must be (timeoutLow, timeoutHigh)")
        low, high = (_uint(v, api, "timeoutUs half", argcheck.UINT32_MAX) for v in value)
        value = high << 32 | low
    us = _uint(value, api, "timeoutUs", argcheck.UINT64_MAX)
    return us / 1e6 if us else None


def _launch_cfg(cfg, api) -> LaunchCfg:
    """The attributes of a launch configuration (see :func:`_attr_items`): the timeout, in seconds
    (``ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT``, or ``..._TIMEOUT_US`` in microseconds, CANN 8.5 and
    later: not both), the engine type (``aclrtEngineType``) and the schedule mode (0 normal, 1
    batch: every block starts together, as all do here). An unknown id, a value out of its range
    or both timeouts are ``ACL_ERROR_INVALID_PARAM``; the other attributes are accepted and change
    nothing here."""
    out = LaunchCfg()
    if not cfg:
        return out
    timeouts = []
    for item in _attr_items(cfg, api):
        attr, value = argcheck.plain(item.get("id")), argcheck.plain(item.get("value"))
        if attr == "timeout":       # (an older spelling pyhcomm accepted)
            attr = _T.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT
        if isinstance(attr, bool) or not isinstance(attr, int) or int(attr) not in _KNOWN_ATTRS:
            raise _invalid(api, f"cfg attribute id {attr!r} is not an aclrtLaunchKernelAttrId")
        if attr == _T.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT:
            timeouts.append(attr)
            out.timeout = value
        elif attr == _T.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US:
            timeouts.append(attr)
            out.timeout = _timeout_us(value, api)
        elif attr == _T.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE:
            if isinstance(value, bool) or not isinstance(value, int) or value not in {int(e) for e in aclrtEngineType}:
                raise _invalid(api, f"cfg engineType {value!r} is not an aclrtEngineType "
                                    "(ACL_RT_ENGINE_TYPE_AIC 0, ACL_RT_ENGINE_TYPE_AIV 1)")
            out.engine = aclrtEngineType(value)
        elif attr == _T.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE:
            if value not in (0, 1) or isinstance(value, bool):
                raise _invalid(api, f"cfg schemMode {value!r} must be 0 (normal) or 1 (batch)")
            out.schem_mode = value
    if len(timeouts) > 1:
        raise _invalid(api, "cfg sets the timeout more than once (ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT and "
                            "ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US cannot both be given)")
    return out


@host_only
def aclrtLaunchKernelWithConfig(func_handle, num_blocks, stream, cfg, args_handle, reserve=None) -> None:
    """Enqueue the kernel on ``stream``; it runs on the device side when the stream reaches it (an
    AIV kernel: its ``num_blocks`` blocks at once, see :func:`launch_function`)."""
    api = "aclrtLaunchKernelWithConfig"
    f = _function(func_handle, api)
    args = _args(args_handle, api)
    if args.function is not f:
        raise _invalid(api, "argsHandle was initialised for another function")
    num_blocks = argcheck.integer(num_blocks, api, "numBlocks", 1, argcheck.UINT32_MAX, _invalid)
    launch_function(f.fn, get_stream(stream, api), tuple(args.values), num_blocks, _launch_cfg(cfg, api), f.name)


def launch_function(fn, stream, args, num_blocks=1, cfg=None, name=None) -> None:
    """Enqueue ``fn(*args)`` as a kernel on ``stream`` (a Stream object). ``cfg``: a
    :class:`LaunchCfg`, or a timeout in seconds (None: no limit). An AIV kernel (a function marked
    ``EXPORT_AIV_META_INFO``, or launched with the engine type ``ACL_RT_ENGINE_TYPE_AIV``) runs its
    ``num_blocks`` blocks concurrently (:mod:`pyhcomm.sim.aiv`); any other is an AI CPU kernel
    (:mod:`pyhcomm.sim.kernel`: its blocks one after another)."""
    if not isinstance(cfg, LaunchCfg):
        timeout, cfg = cfg, LaunchCfg()
        cfg.timeout = timeout
    name = name or getattr(fn, "__name__", repr(fn))
    if is_aiv_kernel(fn) or cfg.engine == aclrtEngineType.ACL_RT_ENGINE_TYPE_AIV:
        task = Task(kinds.AIV_KERNEL_LAUNCH, stream, start_aiv_kernel, (), site=call_site(), detail=name)
    else:
        task = Task(kinds.KERNEL_LAUNCH, stream, start_kernel, (), site=call_site(), detail=name)
    task.args = (task, name, fn, args, stream, num_blocks, cfg.timeout)
    task.program = program_ctx().program
    _sim().scheduler.submit(task)


# -- aclrtCreateBinary / aclrtBinaryLoad / aclrtDestroyBinary -------------------------------------


class BinaryData:
    """``aclrtBinary``: the bytes of a kernel binary (pyhcomm: the source of a Python kernel module)."""

    def __init__(self, source: bytes):
        self.source = source


@host_only
def aclrtCreateBinary(data, data_len) -> int:
    """Describe a kernel binary held in host memory (``data``, ``data_len`` bytes: the UTF-8 source
    of a Python kernel module; bytes or str are accepted too); returns the ``aclrtBinary``."""
    api = "aclrtCreateBinary"
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        source = bytes(data)[:data_len] if data_len else bytes(data)
    else:
        data = argcheck.pointer(data, api, "data")
        data_len = argcheck.integer(data_len, api, "dataLen", -(1 << 64), argcheck.UINT64_MAX, _invalid)
        if not data or data_len <= 0:
            raise _invalid(api, "data must be a host pointer and dataLen a positive size")
        try:
            source = memory.read_host(data, data_len)
        except memory.BadRange as why:
            raise _invalid(api, f"data {why}") from None
    return _sim().handles.kernels.add(BinaryData(source))


def _binary_data(handle, api) -> BinaryData:
    b = _sim().handles.kernels.get(handle)
    if not isinstance(b, BinaryData):
        raise _invalid(api, f"binary {handle!r} was not made by aclrtCreateBinary")
    return b


@host_only
def aclrtBinaryLoad(binary) -> int:
    """Load an ``aclrtBinary`` (compile and run the kernel module's source); returns a binary handle."""
    api = "aclrtBinaryLoad"
    data = _binary_data(binary, api)
    name = f"pyhcomm_kernels_{next(_sim().module_ids)}"
    module = types.ModuleType(name)
    try:
        exec(compile(data.source.decode("utf-8"), f"<aclrtBinary 0x{binary:x}>", "exec"), module.__dict__)
    except Exception as exc:
        raise acl_error(AclError.ACL_ERROR_INVALID_FILE, api, f"loading the binary failed: {exc!r}") from exc
    return _sim().handles.kernels.add(Binary(module, f"<aclrtBinary 0x{binary:x}>"))


@host_only
def aclrtDestroyBinary(binary) -> None:
    _binary_data(binary, "aclrtDestroyBinary")
    _sim().handles.kernels.remove(binary)


@host_only
def aclrtLaunchKernelWithHostArgs(func_handle, num_blocks, stream, cfg, host_args, args_size,
                                  place_holders=None, place_holder_num=0) -> None:
    """Enqueue a kernel whose arguments are ``args_size`` bytes of host memory (copied now); the
    kernel gets them as one ``bytes`` argument. Each place holder ``{"addrOffset", "dataOffset"}``
    gets the device address of the argument bytes at ``dataOffset`` written at ``addrOffset``
    (a uint64): the arguments then live in device memory of the stream's device."""
    api = "aclrtLaunchKernelWithHostArgs"
    f = _function(func_handle, api)
    num_blocks = argcheck.integer(num_blocks, api, "numBlocks", 1, argcheck.UINT32_MAX, _invalid)
    args_size = argcheck.integer(args_size, api, "argsSize", 0, argcheck.UINT64_MAX, _invalid)
    st = get_stream(stream, api)
    if args_size:
        if isinstance(host_args, (bytes, bytearray, memoryview)):
            data = bytearray(bytes(host_args)[:args_size])
        else:
            try:
                data = bytearray(memory.read_host(host_args, args_size))
            except (memory.BadRange, TypeError) as why:
                raise _invalid(api, f"hostArgs {why}") from None
    else:
        data = bytearray()
    holders = list(place_holders or [])
    place_holder_num = argcheck.integer(place_holder_num, api, "placeHolderNum", 0, argcheck.UINT32_MAX, _invalid)
    if len(holders) != place_holder_num:
        raise _invalid(api, f"placeHolderNum {place_holder_num} but {len(holders)} place holders")
    if holders:
        alloc = memory.alloc_device(st.device, max(args_size, 1), owner="kernel args")
        for i, h in enumerate(holders):
            addr_off, data_off = argcheck.plain(h.get("addrOffset")), argcheck.plain(h.get("dataOffset"))
            if not all(isinstance(v, int) and 0 <= v for v in (addr_off, data_off)) or addr_off + 8 > args_size \
                    or data_off >= args_size:
                raise _invalid(api, f"place holder {i} {h!r} lies outside the {args_size} argument bytes")
            data[addr_off:addr_off + 8] = (alloc.addr + data_off).to_bytes(8, "little")
        _sim().backend.from_host(alloc.storage, 0, bytes(data))
    launch_function(f.fn, st, (bytes(data),), num_blocks, _launch_cfg(cfg, api), f.name)
