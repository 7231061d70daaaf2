"""Zero copy: ``HcclCommSetMemoryRange`` / ``HcclCommUnsetMemoryRange`` and
``HcclCommActivateCommMemory`` / ``HcclCommDeactivateCommMemory`` (``hccl_comm.h``).

What the documentation and HCCL's address manager say (``zero_copy_readme.md``, the four API
pages; facts of ``zero_copy_address_mgr.cc``): Atlas A3 only (other products
``HCCL_E_NOT_SUPPORT``); a communicator inside one server; ``alignment``, ``offset`` and ``flags``
are reserved, 0. A range of virtual addresses reserved with ``aclrtReserveMemAddress`` is set per
device and is then known to every communicator of the process on it; two set ranges may not
overlap, nor one be set twice; a range with active memory in it cannot be unset. Memory mapped into
a set range (``aclrtMapMem`` of an ``aclrtMallocPhysical`` handle) is activated whole: inside a set
range, overlapping no active memory; it is deactivated by its start. Every refusal of the address
manager is ``HCCL_E_PARA``.

What activation changes: HCCL's AI CPU collectives may then work on active input and output memory
without staging it in the HCCL buffer. pyhcomm's collectives stage as usual (the results are the
same; only the copies HCCL saves differ): the calls keep the ranges, check what the documentation
asks, and say which memory is active (:func:`is_active`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import args
from ..aclrt.vmm import mapped_physical, vmm_state
from ..errors import HcclResult, hccl_error, not_support, para
from ..sim import LayerState, current_sim
from .comm import get_comm

_PRODUCTS = ("A3",)


@dataclass
class ZeroCopyState(LayerState):
    """The set ranges (per device) and the active memory of one Sim (its process)."""

    ranges: dict = field(default_factory=dict)      # device -> {start: size}
    active: dict = field(default_factory=dict)      # start -> size

    def release_device(self, sim, device_id: int) -> None:
        for start, size in self.ranges.pop(device_id, {}).items():
            for a in [a for a in self.active if start <= a < start + size]:
                del self.active[a]


def zero_copy_state(sim=None) -> ZeroCopyState:
    return (sim or current_sim()).layer_state(ZeroCopyState)


def _check(comm_handle, api):
    comm = get_comm(comm_handle, api)
    product = current_sim().runtime.product
    if product.family not in _PRODUCTS:
        raise not_support(api, f"zero copy is Atlas A3 only, not {product.name}")
    return comm


def _reserved(api, value, name):
    if args.integer(value, api, name, 0, args.UINT64_MAX):
        raise para(api, f"{name} {value} is reserved and must be 0")


def _overlap(table: dict, start: int, size: int):
    return next(((a, n) for a, n in table.items() if a < start + size and start < a + n), None)


def set_memory_range(comm_handle, base, size, alignment, flags) -> None:
    """``HcclCommSetMemoryRange`` (see the module docstring)."""
    api = "HcclCommSetMemoryRange"
    comm = _check(comm_handle, api)
    _reserved(api, alignment, "alignment")
    _reserved(api, flags, "flags")
    base = args.pointer(base, api, "baseVirPtr")
    size = args.integer(size, api, "size", 0, args.UINT64_MAX)
    if not base or not size:
        raise para(api, f"baseVirPtr 0x{base:x} and size {size} must both be nonzero")
    servers = {comm.world.place(r).server for r in range(comm.nranks) if comm.world.place(r) is not None}
    if len(servers) > 1:
        raise not_support(api, f"{comm.name} spans {len(servers)} servers: memory ranges are set in a "
                               "communicator of one server")
    if vmm_state().reservation_of(base, size) is None:
        raise para(api, f"[0x{base:x}, +{size}) is not inside a range reserved with aclrtReserveMemAddress")
    ranges = zero_copy_state().ranges.setdefault(comm.device, {})
    if base in ranges:
        raise para(api, f"baseVirPtr 0x{base:x} is already set on device {comm.device}")
    hit = _overlap(ranges, base, size)
    if hit is not None:
        raise para(api, f"[0x{base:x}, +{size}) overlaps the range set at 0x{hit[0]:x} ({hit[1]} bytes)")
    ranges[base] = size


def unset_memory_range(comm_handle, base) -> None:
    """``HcclCommUnsetMemoryRange``: the range set at ``base`` (no active memory left in it)."""
    api = "HcclCommUnsetMemoryRange"
    comm = _check(comm_handle, api)
    base = args.pointer(base, api, "baseVirPtr")
    state = zero_copy_state()
    ranges = state.ranges.get(comm.device, {})
    if base not in ranges:
        raise para(api, f"baseVirPtr 0x{base:x} is not a range set with HcclCommSetMemoryRange on device "
                        f"{comm.device}")
    hit = _overlap(state.active, base, ranges[base])
    if hit is not None:
        raise para(api, f"the range at 0x{base:x} still has active memory at 0x{hit[0]:x} ({hit[1]} bytes): "
                        "HcclCommDeactivateCommMemory first")
    del ranges[base]


def activate(comm_handle, vir_ptr, size, offset, handle, flags) -> None:
    """``HcclCommActivateCommMemory``: ``size`` bytes mapped at ``vir_ptr`` onto ``handle``."""
    api = "HcclCommActivateCommMemory"
    comm = _check(comm_handle, api)
    _reserved(api, offset, "offset")
    _reserved(api, flags, "flags")
    vir_ptr = args.pointer(vir_ptr, api, "virPtr")
    size = args.integer(size, api, "size", 0, args.UINT64_MAX)
    if not vir_ptr or not size:
        raise para(api, f"virPtr 0x{vir_ptr:x} and size {size} must both be nonzero")
    if not args.handle(handle, api, "handle"):
        raise hccl_error(HcclResult.HCCL_E_PTR, api, "handle is NULL")
    state = zero_copy_state()
    ranges = state.ranges.get(comm.device, {})
    if not any(a <= vir_ptr and vir_ptr + size <= a + n for a, n in ranges.items()):
        raise para(api, f"[0x{vir_ptr:x}, +{size}) is not inside a range set with HcclCommSetMemoryRange on "
                        f"device {comm.device}")
    hit = _overlap(state.active, vir_ptr, size)
    if hit is not None:
        raise para(api, f"[0x{vir_ptr:x}, +{size}) overlaps the active memory at 0x{hit[0]:x} ({hit[1]} bytes)")
    physical = mapped_physical(vir_ptr, size)
    if physical is None or physical.handle != handle:
        raise para(api, f"[0x{vir_ptr:x}, +{size}) is not one mapping (aclrtMapMem) of handle 0x{int(handle):x}")
    state.active[vir_ptr] = size


def deactivate(comm_handle, vir_ptr) -> None:
    """``HcclCommDeactivateCommMemory``: the active memory that starts at ``vir_ptr``."""
    api = "HcclCommDeactivateCommMemory"
    _check(comm_handle, api)
    vir_ptr = args.pointer(vir_ptr, api, "virPtr")
    state = zero_copy_state()
    if not vir_ptr or vir_ptr not in state.active:
        raise para(api, f"virPtr 0x{vir_ptr:x} is not the start of active memory (HcclCommActivateCommMemory)")
    del state.active[vir_ptr]


def is_active(addr: int, size: int, sim=None) -> bool:
    """Whether ``[addr, addr + size)`` lies in active memory."""
    return any(a <= addr and addr + size <= a + n for a, n in zero_copy_state(sim).active.items())


__all__ = ["ZeroCopyState", "zero_copy_state", "set_memory_range", "unset_memory_range", "activate", "deactivate",
           "is_active"]
