"""Virtual memory: ``aclrtReserveMemAddress``, ``aclrtMallocPhysical``, ``aclrtMapMem`` and their
inverses.

The real runtime's seven steps, as its documentation gives them: reserve addresses, allocate
physical memory, map (part of) the reservation onto it, use it, unmap, free the physical memory,
release the addresses. Here:

* a reservation is a range of the current device's address space that no allocation takes
  (2 MiB aligned: ``ACL_RT_MEM_ALLOC_GRANULARITY``); ``expectPtr`` asks for a given start (it must
  be 1 GiB aligned for a reservation of 1 GiB or more, a power of two at least the size's
  otherwise, inside one device's address range, and free);
* physical memory is a device's bytes of a whole number of granules (``prop``: pyACL's dict
  ``{"handleType": 0, "allocationType": 0, "memAttr": ..., "location": {"id": d, "type": 1},
  "reserve": 0}``; only device memory, ``ACL_MEM_LOCATION_TYPE_DEVICE``), named by a handle
  (``aclrtDrvMemHandle``);
* a mapping makes ``size`` bytes of a reservation (granule aligned, inside it, not over another
  mapping) device memory backed by the first ``size`` bytes of a handle's memory: every call that
  takes device memory takes it (copies, kernels, HCCL);
* physical memory still mapped cannot be freed, a reservation still mapped cannot be released.

Codes: a bad argument is ``ACL_ERROR_RT_PARAM_INVALID`` (as the runtime's documentation gives for
a misaligned ``expectPtr``; it gives no other), NULL where a pointer is needed
``ACL_ERROR_INVALID_PARAM``, addresses taken or exhausted ``ACL_ERROR_RT_MEMORY_ALLOCATION``. A
reservation belongs to the device current when it is made (pyhcomm's addresses tell devices
apart): physical memory of another device cannot back it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import args
from ..errors import AclError, acl_error
from ..sim import LayerState, current_sim
from ..sim import memory
from .device import check_device_id, current_device

#: ``aclrtMemGetAllocationGranularity``: 2 MiB (the only granularity the documentation gives).
GRANULARITY = 2 << 20
GIB = 1 << 30
LOCATION_DEVICE = 1     # ACL_MEM_LOCATION_TYPE_DEVICE
OWNER = "aclrtMapMem"


@dataclass
class Reservation:
    addr: int
    size: int
    device: int
    mappings: dict = field(default_factory=dict)    # start -> Mapping

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass
class Physical:
    handle: int
    size: int
    device: int
    storage: object
    mapped: int = 0                                 # mappings onto it


@dataclass
class Mapping:
    addr: int
    size: int
    physical: Physical
    alloc: object


@dataclass
class VmmState(LayerState):
    """The reservations and physical memory of one Sim."""

    reservations: dict = field(default_factory=dict)     # start -> Reservation
    physical: dict = field(default_factory=dict)         # handle -> Physical
    next_handle: int = 0x7A00_0000_0000

    def release_device(self, sim, device_id: int) -> None:
        for r in [r for r in self.reservations.values() if r.device == device_id]:
            del self.reservations[r.addr]
        for p in [p for p in self.physical.values() if p.device == device_id]:
            del self.physical[p.handle]

    def reservation_of(self, addr: int, size: int = 1):
        """The reservation holding ``[addr, addr + size)``, or None."""
        for r in self.reservations.values():
            if r.addr <= addr and addr + size <= r.end:
                return r
        return None


def vmm_state(sim=None) -> VmmState:
    return (sim or current_sim()).layer_state(VmmState)


def _bad(api, msg):
    return acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, msg)


def _uint(value, api, name, lo=0):
    return args.integer(value, api, name, lo, args.UINT64_MAX, _bad)


def _zero(value, api, name):
    if _uint(value, api, name):
        raise _bad(api, f"{name} {value} is reserved and must be 0")


def aclrtReserveMemAddress(size, alignment=0, expect_ptr=0, flags=0) -> int:
    """Reserve ``size`` bytes of addresses of the current device (see the module docstring)."""
    api = "aclrtReserveMemAddress"
    size = _uint(size, api, "size")
    if not size:
        raise _bad(api, "size must not be 0")
    _zero(alignment, api, "alignment")
    if _uint(flags, api, "flags") not in (0, 1):
        raise _bad(api, f"flags {flags} must be 0 (normal pages) or 1 (huge pages)")
    device = current_device(api).id
    expect_ptr = args.pointer(expect_ptr, api, "expectPtr")
    span = -(-size // GRANULARITY) * GRANULARITY
    if expect_ptr:
        addr = _at(api, expect_ptr, size, span)
        device = memory.device_of_address(addr)
    else:
        addr = memory.reserve_addresses(device, span, GRANULARITY)
        if not addr:
            raise acl_error(AclError.ACL_ERROR_RT_MEMORY_ALLOCATION, api, f"device {device} address space is full")
    vmm_state().reservations[addr] = Reservation(addr, span, device)
    return addr


def _at(api, addr, size, span) -> int:
    """``expectPtr``: aligned as documented, inside one device's range, free."""
    align = GIB if size >= GIB else 1 << (size - 1).bit_length()
    if addr % align:
        raise _bad(api, f"expectPtr 0x{addr:x} must be {align:#x}-aligned for a reservation of {size} bytes")
    if any(r.addr < addr + span and addr < r.end for r in vmm_state().reservations.values()) \
            or memory.reserve_addresses_at(addr, span) is None:
        raise acl_error(AclError.ACL_ERROR_RT_MEMORY_ALLOCATION, api,
                        f"expectPtr 0x{addr:x}: [0x{addr:x}, +{span}) is taken or not inside one device's address range")
    return addr


def aclrtReleaseMemAddress(vir_ptr) -> None:
    """Release a reservation (by its start); one still mapped is refused."""
    api = "aclrtReleaseMemAddress"
    r = _reservation(api, vir_ptr)
    if r.mappings:
        raise _bad(api, f"virPtr 0x{r.addr:x} still has {len(r.mappings)} mapping(s): aclrtUnmapMem first")
    del vmm_state().reservations[r.addr]


def _reservation(api, vir_ptr) -> Reservation:
    vir_ptr = args.pointer(vir_ptr, api, "virPtr")
    if not vir_ptr:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "virPtr is NULL")
    r = vmm_state().reservations.get(vir_ptr)
    if r is None:
        raise _bad(api, f"virPtr 0x{vir_ptr:x} is not the start of a range reserved with aclrtReserveMemAddress")
    return r


def aclrtMallocPhysical(size, prop, flags=0) -> int:
    """Allocate ``size`` bytes (whole granules) of a device's memory; returns its handle."""
    api = "aclrtMallocPhysical"
    size = _uint(size, api, "size")
    if not size or size % GRANULARITY:
        raise _bad(api, f"size {size} must be a positive multiple of the granularity ({GRANULARITY} bytes)")
    if prop is None:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "prop is NULL")
    if not isinstance(prop, dict):
        raise TypeError(f"{api}: prop must be a dict like pyACL's aclrtPhysicalMemProp, not {type(prop).__name__}")
    _zero(flags, api, "flags")
    for name in ("handleType", "allocationType"):
        if prop.get(name, 0) != 0:
            raise _bad(api, f"prop {name} {prop.get(name)!r}: only 0 (ACL_MEM_HANDLE_TYPE_NONE, "
                            "ACL_MEM_ALLOCATION_TYPE_PINNED) is supported")
    location = prop.get("location") or {}
    if location.get("type", LOCATION_DEVICE) != LOCATION_DEVICE:
        raise _bad(api, f"prop location type {location.get('type')!r}: only device memory "
                        "(ACL_MEM_LOCATION_TYPE_DEVICE) is supported")
    device = check_device_id(location.get("id", 0), api)
    sim = current_sim()
    state = vmm_state(sim)
    state.next_handle += 0x100
    p = Physical(state.next_handle, size, device, sim.transport.device_storage(size))
    state.physical[p.handle] = p
    return p.handle


def _physical(api, handle) -> Physical:
    handle = args.handle(handle, api, "handle")
    if not handle:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "handle is NULL")
    p = vmm_state().physical.get(handle)
    if p is None:
        raise _bad(api, f"handle 0x{handle:x} is not physical memory of aclrtMallocPhysical")
    return p


def aclrtFreePhysical(handle) -> None:
    """Free physical memory; memory still mapped is refused."""
    api = "aclrtFreePhysical"
    p = _physical(api, handle)
    if p.mapped:
        raise _bad(api, f"handle 0x{p.handle:x} is still mapped {p.mapped} time(s): aclrtUnmapMem first")
    del vmm_state().physical[p.handle]


def aclrtMapMem(vir_ptr, size, offset, handle, flags=0) -> None:
    """Map ``size`` bytes of reserved addresses at ``vir_ptr`` onto physical memory ``handle``."""
    api = "aclrtMapMem"
    vir_ptr = args.pointer(vir_ptr, api, "virPtr")
    if not vir_ptr:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "virPtr is NULL")
    size = _uint(size, api, "size")
    _zero(offset, api, "offset")
    _zero(flags, api, "flags")
    p = _physical(api, handle)
    if not size or size % GRANULARITY or vir_ptr % GRANULARITY:
        raise _bad(api, f"virPtr 0x{vir_ptr:x} and size {size} must be {GRANULARITY >> 20} MiB aligned (and size > 0)")
    r = vmm_state().reservation_of(vir_ptr, size)
    if r is None:
        raise _bad(api, f"[0x{vir_ptr:x}, +{size}) is not inside one range reserved with aclrtReserveMemAddress")
    if size > p.size:
        raise _bad(api, f"size {size} is more than the {p.size} bytes of handle 0x{p.handle:x}")
    if p.device != r.device:
        raise _bad(api, f"handle 0x{p.handle:x} is memory of device {p.device}; the reservation at 0x{r.addr:x} was "
                        f"made on device {r.device}")
    for m in r.mappings.values():
        if m.addr < vir_ptr + size and vir_ptr < m.addr + m.size:
            raise _bad(api, f"[0x{vir_ptr:x}, +{size}) overlaps the mapping at 0x{m.addr:x}")
    alloc = memory.map_storage(r.device, vir_ptr, size, p.storage, OWNER)
    r.mappings[vir_ptr] = Mapping(vir_ptr, size, p, alloc)
    p.mapped += 1


def aclrtUnmapMem(vir_ptr) -> None:
    """Undo the mapping that starts at ``vir_ptr``."""
    api = "aclrtUnmapMem"
    vir_ptr = args.pointer(vir_ptr, api, "virPtr")
    if not vir_ptr:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "virPtr is NULL")
    r = vmm_state().reservation_of(vir_ptr)
    m = r.mappings.get(vir_ptr) if r is not None else None
    if m is None:
        raise _bad(api, f"virPtr 0x{vir_ptr:x} is not the start of a mapping of aclrtMapMem")
    del r.mappings[vir_ptr]
    m.physical.mapped -= 1
    memory.unmap_storage(m.alloc)


def aclrtMemGetAllocationGranularity(prop, option) -> int:
    """The allocation granularity (2 MiB, for either option)."""
    api = "aclrtMemGetAllocationGranularity"
    if prop is None:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "prop is NULL")
    if _uint(option, api, "option") not in (0, 1):
        raise _bad(api, f"option {option} must be ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM (0) or _RECOMMENDED (1)")
    return GRANULARITY


def mapped_physical(addr: int, size: int):
    """The physical memory mapped at exactly ``[addr, addr + size)`` (one mapping of that start
    and size), or None: for HCCL's ``HcclCommActivateCommMemory``."""
    r = vmm_state().reservation_of(addr, size)
    m = r.mappings.get(addr) if r is not None else None
    return m.physical if m is not None and m.size == size else None


__all__ = ["GRANULARITY", "VmmState", "vmm_state", "aclrtReserveMemAddress", "aclrtReleaseMemAddress",
           "aclrtMallocPhysical", "aclrtFreePhysical", "aclrtMapMem", "aclrtUnmapMem",
           "aclrtMemGetAllocationGranularity", "mapped_physical"]
