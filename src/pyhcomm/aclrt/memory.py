"""Memory calls: ``aclrtMalloc[WithCfg]``, ``aclrtFree``, host memory, ``aclrtMemcpy``, ``aclrtMemset``.

Deliberate differences: an allocation is exactly the requested size (the real runtime rounds up
by 32-64 bytes), so the bounds checks are strict; memory is zero-filled (real memory is not
initialised); every device has 64 GiB. Host pointers must be known to pyhcomm (from
``aclrtMallocHost`` or ``acl.util.numpy_to_ptr`` / ``bytes_to_ptr``) so that no call can touch
arbitrary process memory.
"""
from __future__ import annotations

import functools

from .. import args
from ..sim import current_sim as _sim
from ..sim import aiv, kinds, memory
from ..sim.aiv import AivBlock
from ..sim.kernel import current_kernel
from ..sim.runtime import program_ctx
from ..sim.task import Task, call_site
from ..enums import MALLOC_KNOWN_BITS, aclrtMallocAttrType, aclrtMemcpyKind
from ..errors import AclError, HcclResult, HcclRuntimeError, acl_error
from .device import check_device_id, current_device, host_only
from .stream import get_stream

DEVICE_CAPACITY = 64 << 30

_K = aclrtMemcpyKind
_H, _D, _ANY = "host", "device", "any"
#: (dst side, src side) each memcpy kind requires.
_KIND_SIDES = {
    _K.ACL_MEMCPY_HOST_TO_HOST: (_H, _H),
    _K.ACL_MEMCPY_HOST_TO_DEVICE: (_D, _H),
    _K.ACL_MEMCPY_DEVICE_TO_HOST: (_H, _D),
    _K.ACL_MEMCPY_DEVICE_TO_DEVICE: (_D, _D),
    _K.ACL_MEMCPY_DEFAULT: (_ANY, _ANY),
    _K.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: (_D, _H),
    _K.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE: (_D, _D),
    _K.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: (_D, _D),
}


def _invalid(api, msg):
    return acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, msg)


def _rt_invalid(api, msg):
    return acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, msg)


def _size(api, size, name="size") -> int:
    """A byte count of an allocation: an int in [1, 2**64)."""
    size = args.integer(size, api, name, -(1 << 64), args.UINT64_MAX, _invalid)
    if size <= 0:
        raise _invalid(api, f"{name} {size} must be greater than 0")
    return size


def _malloc(api, size, policy, device, module_id=None) -> int:
    size = _size(api, size)
    policy = args.integer(policy, api, "policy", -(1 << 64), args.UINT64_MAX, _invalid)
    if policy < 0 or policy & ~MALLOC_KNOWN_BITS:
        raise _invalid(api, f"policy 0x{policy:x} has bits outside aclrtMemMallocPolicy")
    if memory.device_bytes(device) + size > DEVICE_CAPACITY:
        raise acl_error(AclError.ACL_ERROR_RT_MEMORY_ALLOCATION, api,
                        f"{size} bytes do not fit in the {DEVICE_CAPACITY >> 30} GiB of device {device}")
    alloc = memory.alloc_device(device, size, policy=policy, module_id=module_id)
    if alloc is None:
        raise acl_error(AclError.ACL_ERROR_RT_MEMORY_ALLOCATION, api, f"device {device} address space is full")
    return alloc.addr


@host_only
def aclrtMalloc(size: int, policy: int) -> int:
    """Allocate ``size`` bytes on the current device; the address is 512-byte aligned."""
    return _malloc("aclrtMalloc", size, policy, current_device("aclrtMalloc").id)


@host_only
def aclrtMallocWithCfg(size: int, policy: int, cfg=None, device: int | None = None) -> int:
    """``aclrtMalloc`` with attributes: ``cfg`` is pyACL's dict
    ``{"numAttrs": n, "attrs": [{"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": {"moduleId": 3}}]}``
    (``{}`` or None for NULL). ``ACL_RT_MEM_ATTR_DEVICE_ID`` (or ``device``) allocates on that
    device instead of the current one.
    """
    api = "aclrtMallocWithCfg"
    if device is None:
        device = current_device(api).id
    elif device not in _sim().runtime.devices:
        raise acl_error(AclError.ACL_ERROR_RT_CONTEXT_NULL, api, f"device {device} is not open")
    module_id = None
    if cfg:
        if not isinstance(cfg, dict):
            raise TypeError(f"{api}: cfg must be a dict like pyACL's aclrtMallocConfig, not {type(cfg).__name__}")
        attrs = cfg.get("attrs", [])
        if not isinstance(attrs, (list, tuple)):
            raise TypeError(f"{api}: cfg['attrs'] must be a list of dicts, not {type(attrs).__name__}")
        num = args.integer(cfg.get("numAttrs", len(attrs)), api, "cfg numAttrs", 0, args.UINT32_MAX, _invalid)
        if num != len(attrs):
            raise _invalid(api, f"cfg numAttrs {num} but {len(attrs)} attrs given")
        for i, item in enumerate(attrs):
            if not isinstance(item, dict):
                raise TypeError(f"{api}: cfg['attrs'][{i}] must be a dict like "
                                f"{{'attr': ..., 'value': ...}}, not {type(item).__name__}")
            kind, value = item.get("attr"), item.get("value", {})
            if kind == aclrtMallocAttrType.ACL_RT_MEM_ATTR_MODULE_ID:
                module_id = value.get("moduleId") if isinstance(value, dict) else value
                module_id = args.integer(module_id, api, f"cfg attrs[{i}] moduleId", 0, 0xFFFF, _invalid)
            elif kind == aclrtMallocAttrType.ACL_RT_MEM_ATTR_DEVICE_ID:
                dev_id = value.get("deviceId") if isinstance(value, dict) else value
                device = check_device_id(dev_id, api)
                if device not in _sim().runtime.devices:
                    raise acl_error(AclError.ACL_ERROR_RT_INVALID_DEVICEID, api, f"device {device} is not open")
            elif kind in (aclrtMallocAttrType.ACL_RT_MEM_ATTR_RSV, aclrtMallocAttrType.ACL_RT_MEM_ATTR_VA_FLAG):
                pass
            else:
                raise _invalid(api, f"cfg attrs[{i}] attr {kind!r} is not an aclrtMallocAttrType")
    return _malloc(api, size, policy, device, module_id)


@host_only
def aclrtFree(dev_ptr: int) -> None:
    """Free device memory from ``aclrtMalloc``; a second free is ``ACL_ERROR_RT_MEMORY_FREE``."""
    api = "aclrtFree"
    dev_ptr = args.pointer(dev_ptr, api, "devPtr")
    if not dev_ptr:
        raise _invalid(api, "devPtr is NULL")
    alloc = _sim().memory.device_map.exact(dev_ptr)
    if alloc is None:
        if _sim().memory.freed_map.exact(dev_ptr) is not None:
            raise acl_error(AclError.ACL_ERROR_RT_MEMORY_FREE, api, f"0x{dev_ptr:x} was already freed (double free)")
        inner = _sim().memory.device_map.find(dev_ptr)
        if inner is not None:
            raise _rt_invalid(api, f"0x{dev_ptr:x} is inside the allocation at 0x{inner.addr:x}, not its start")
        raise _rt_invalid(api, f"{memory.describe_address(dev_ptr)}")
    if alloc.owner != "user":
        raise _rt_invalid(api, f"0x{dev_ptr:x} is owned by HCCL ({alloc.owner} buffer) and must not be freed")
    memory.free_device(alloc)


@host_only
def aclrtMallocHost(size: int) -> int:
    """Allocate host memory; the result is a real process address."""
    api = "aclrtMallocHost"
    try:
        return memory.alloc_host(_size(api, size)).addr
    except memory.OutOfHostMemory as exc:
        raise acl_error(AclError.ACL_ERROR_RT_MEMORY_ALLOCATION, api, str(exc)) from None


@host_only
def aclrtFreeHost(host_ptr: int) -> None:
    api = "aclrtFreeHost"
    host_ptr = args.pointer(host_ptr, api, "hostPtr")
    if not host_ptr:
        raise _invalid(api, "hostPtr is NULL")
    alloc = _sim().memory.host_map.exact(host_ptr)
    if alloc is None or alloc.owner != "user":
        raise _rt_invalid(api, f"0x{host_ptr:x} is not memory from aclrtMallocHost (or was already freed)")
    memory.free_host(alloc)


def _resolve(api, addr, n, side, name, writable=False):
    """Find the allocation holding ``[addr, addr+n)`` on ``side`` (host, device or any) and hold
    its bytes (:func:`pyhcomm.sim.memory.hold`); returns ``(allocation, storage, owner)``."""
    space = memory.DEVICE if side == _D else memory.HOST if side == _H else memory.ANY
    try:
        alloc = memory.resolve(addr, n, space, writable=writable)
        return (alloc, *memory.hold(alloc))
    except memory.BadRange as why:
        raise _rt_invalid(api, f"{name} {why}") from None


def _count(api, value, name) -> int:
    """``count`` / ``destMax`` / ``maxCount``: an int (``ACL_ERROR_RT_PARAM_INVALID`` outside uint64)."""
    return args.integer(value, api, name, -(1 << 64), args.UINT64_MAX, _rt_invalid)


def _check_copy(api, dst, dest_max, src, count, kind):
    """Validate a copy (in this order: dst and src NULL, the integers, kind, the ranges); returns
    ``(dst, src, (dst allocation, storage, owner), (src allocation, storage, owner))``."""
    dst = args.pointer(dst, api, "dst")
    src = args.pointer(src, api, "src")
    if not dst:
        raise _invalid(api, "dst is NULL")
    if not src:
        raise _invalid(api, "src is NULL")
    dest_max = _count(api, dest_max, "destMax")
    count = _count(api, count, "count")
    kind = args.integer(kind, api, "kind", -(1 << 64), args.UINT64_MAX, _rt_invalid)
    if count <= 0 or dest_max <= 0:
        raise _rt_invalid(api, f"count {count} and destMax {dest_max} must be greater than 0")
    if count > dest_max:
        raise _rt_invalid(api, f"count {count} exceeds destMax {dest_max}")
    if kind not in _KIND_SIDES:
        raise _rt_invalid(api, f"kind {kind} is not an aclrtMemcpyKind (0..7)")
    dst_side, src_side = _KIND_SIDES[kind]
    d = _resolve(api, dst, count, dst_side, "dst", writable=True)
    s = _resolve(api, src, count, src_side, "src")
    if dest_max > d[0].end - dst:
        raise _rt_invalid(api, f"destMax {dest_max} runs past dst's allocation ({d[0].end - dst} bytes left)")
    return dst, src, kind, count, d, s


def aclrtMemcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
    """Copy ``count`` bytes now (synchronous; not ordered with any stream). Memory freed by
    another host thread while the copy runs is not touched after it was released. Inside an AIV
    kernel: a load and a store of global memory by the calling block (device to device only; a
    peer's memory over an AIV channel, :mod:`pyhcomm.sim.aiv`)."""
    dst, src, kind, count, (d, d_st, _d_owner), (s, s_st, _s_owner) = _check_copy(
        "aclrtMemcpy", dst, dest_max, src, count, kind)
    if isinstance(current_kernel(), AivBlock):
        if d.kind != memory.DEVICE or s.kind != memory.DEVICE:
            raise _rt_invalid("aclrtMemcpy", "inside an AIV kernel a copy is between device addresses (global memory)")
        aiv.copy(dst, src, count)
        return
    sim = _sim()
    sim.backend.copy(d_st, dst - d.addr, s_st, src - s.addr, count)
    sim.record.host_effect(kinds.MEMCPY, "aclrtMemcpy", device=d.device if d.device is not None else s.device,
                           reads=((src, count, s),), writes=((dst, count, d),), nbytes=count,
                           direction=_K(kind).name)


def _run_async_copy(d, d_off, s, s_off, n, _keep):
    dst, src = d.storage, s.storage  # read once: a free on another host thread clears them
    if dst is None or src is None:
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, "aclrtMemcpyAsync", "memory was freed before the copy ran")
    _sim().backend.copy(dst, d_off, src, s_off, n)


@host_only
def aclrtMemcpyAsync(dst: int, dest_max: int, src: int, count: int, kind: int, stream: int) -> None:
    """Enqueue a copy on ``stream`` (0 = the current device's default stream). User arrays stay
    alive until the copy ran; memory freed before it runs fails the stream."""
    api = "aclrtMemcpyAsync"
    st = get_stream(stream, api)
    dst, src, kind, count, (d, _d_st, d_owner), (s, _s_st, s_owner) = _check_copy(
        api, dst, dest_max, src, count, kind)
    task = Task(kinds.MEMCPY_ASYNC, st, _run_async_copy, (d, dst - d.addr, s, src - s.addr, count, (d_owner, s_owner)),
                reads=((src, count),), writes=((dst, count),), site=call_site(), detail=kind)
    task.program = program_ctx().program
    _sim().scheduler.submit(task)


def _check_set(api, dev_ptr, max_count, value, count):
    """Validate a fill; returns ``(devPtr, value byte, count, (allocation, storage, owner))``."""
    dev_ptr = args.pointer(dev_ptr, api, "devPtr")
    if not dev_ptr:
        raise _invalid(api, "devPtr is NULL")
    max_count = _count(api, max_count, "maxCount")
    value = args.integer(value, api, "value", -(1 << 64), args.UINT64_MAX, _rt_invalid)
    count = _count(api, count, "count")
    if count > max_count:
        raise _rt_invalid(api, f"count {count} exceeds maxCount {max_count}")
    if count < 0:
        raise _rt_invalid(api, f"count {count} is negative")
    return dev_ptr, value & 0xFF, count, _resolve(api, dev_ptr, max(count, 1), _ANY, "devPtr", writable=True)


def aclrtMemset(dev_ptr: int, max_count: int, value: int, count: int) -> None:
    """Fill ``count`` bytes with the low byte of ``value`` now (synchronous)."""
    dev_ptr, value, count, (a, storage, _owner) = _check_set("aclrtMemset", dev_ptr, max_count, value, count)
    sim = _sim()
    sim.backend.memset(storage, dev_ptr - a.addr, value, count)
    sim.record.host_effect(kinds.MEMSET, "aclrtMemset", device=a.device, writes=((dev_ptr, count, a),), nbytes=count,
                           value=value)


def _run_memset(a, off, value, n, _keep=None):
    """Task body of a fill; ``_keep`` holds a user array alive until it ran."""
    storage = a.storage  # read once: a free on another host thread clears it
    if storage is None:
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, "aclrtMemsetAsync", "memory was freed before the fill ran")
    _sim().backend.memset(storage, off, value, n)


@host_only
def aclrtMemsetAsync(dev_ptr: int, max_count: int, value: int, count: int, stream: int) -> None:
    api = "aclrtMemsetAsync"
    st = get_stream(stream, api)
    dev_ptr, value, count, (a, _storage, owner) = _check_set(api, dev_ptr, max_count, value, count)
    fill = functools.partial(_run_memset, _keep=owner) if a.kind == memory.HOST else _run_memset
    task = Task(kinds.MEMSET_ASYNC, st, fill, (a, dev_ptr - a.addr, value, count), writes=((dev_ptr, count),),
                site=call_site())
    task.program = program_ctx().program
    _sim().scheduler.submit(task)
