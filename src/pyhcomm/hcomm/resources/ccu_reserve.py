"""Reservations of CCU registers, cascade counters and memory tokens (``ccu_res.h``).

* ``HcommCcuVariableAlloc`` / ``HcommCcuEventAlloc(ins, die, num)``: ``num`` contiguous variables
  (events) taken out of the instance's pool for good (a kernel then binds them: ``Variable(handle,
  index)``, ``Array(Variable, handle=...)`` of :mod:`pyhcomm.ccu`); ``...GetAddr(handle, index)`` the
  address a host module sees register ``index`` at. 0 or unknown instance ``CCU_E_PTR``, a bad die or
  ``num`` 0 ``CCU_E_PARA``, no contiguous run left ``CCU_E_UNAVAIL``; a handle of another kind or an
  index past ``num`` ``CCU_E_PARA``, an unknown handle ``CCU_E_NOT_FOUND``.
* ``HcommCcuCascCntAlloc(ins, die)``: one of the cascade counter blocks the instance was created with
  (its descriptor's ``CASC_CNT``; 1024 variables each, at most 4 per die); ``...GetMem(handle)`` the
  memory of its 1022 counters (``CommMem``).
* ``HcommCcuGetMemToken(va, size)``: the token of the device memory ``[va, va + size)`` lies in (0 or
  empty ``CCU_E_PARA``, not memory of the current device ``CCU_E_RUNTIME``); host only: inside an AI CPU kernel or a
  CCU kernel's registration ``CCU_E_NOT_SUPPORT``. ``HcommCcuGetRmtMemToken(channel, va)``: the token
  of the peer's memory at ``va`` (a CCU channel; a bad channel or address ``CCU_E_PARA``).
"""
from __future__ import annotations

from ... import args
from ...defs.ccu import CcuResult as C
from ...defs.res_defs import CommMem, CommMemType
from ...sim import current_sim as _sim
from ...sim import memory
from ...sim.runtime import program_ctx
from .ccu_pool import CASC_CNT_XN, R, ccu_error, ccu_state, check_die, check_product, mem_token, recording_var
from .ccu_res import get_instance

#: Counters of a cascade counter block a host may use (the rest: its total and expected counts).
CASC_CNT_WISH = 1022


class Reservation:
    """Registers reserved on an instance (``CcuVariableHandle``, ``CcuEventHandle``), or a cascade
    counter block (``HcommCcuCascCntHandle``)."""

    def __init__(self, instance, die: int, rtype, start: int, num: int):
        self.instance, self.device, self.die, self.rtype, self.start, self.num = (
            instance, instance.device, die, rtype, start, num)
        self.handle = 0


def _count(value, api: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= args.UINT32_MAX:
        raise ccu_error(C.CCU_E_PARA, api, f"num {value!r} must be a uint32 greater than 0")
    return value


def reserve(ins, die, num, rtype, api: str) -> int:
    check_product(api)
    inst = get_instance(ins, api)
    die = check_die(die, api)
    num = _count(num, api)
    res = Reservation(inst, die, rtype, inst.take(die, rtype, num, api), num)
    res.handle = ccu_state().reservations.add(res)
    return res.handle


def variable_alloc(ins, die, num) -> int:
    return reserve(ins, die, num, R.HCOMM_CCU_RES_TYPE_VARIABLE, "HcommCcuVariableAlloc")


def event_alloc(ins, die, num) -> int:
    return reserve(ins, die, num, R.HCOMM_CCU_RES_TYPE_EVENT, "HcommCcuEventAlloc")


def get_reservation(handle, rtype, api: str) -> Reservation:
    """A live reservation of ``rtype`` (``CCU_E_NOT_FOUND`` / ``CCU_E_PARA`` otherwise)."""
    res = ccu_state().reservations.get(handle) if type(handle) is int else None
    if res is None or res.instance.destroyed:
        raise ccu_error(C.CCU_E_NOT_FOUND, api, f"handle {handle!r} is not a live reservation")
    if res.rtype != rtype:
        raise ccu_error(C.CCU_E_PARA, api, f"handle {handle!r} reserves {res.rtype.name}, not {R(rtype).name}")
    return res


def reservation_addr(handle, index, rtype, api: str) -> int:
    check_product(api)
    res = get_reservation(handle, rtype, api)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < res.num:
        raise ccu_error(C.CCU_E_PARA, api, f"index {index!r} is outside [0, {res.num})")
    return ccu_state().die(res.device, res.die).register_addr(rtype, res.start + index)


def variable_addr(handle, index) -> int:
    return reservation_addr(handle, index, R.HCOMM_CCU_RES_TYPE_VARIABLE, "HcommCcuVariableGetAddr")


def event_addr(handle, index) -> int:
    return reservation_addr(handle, index, R.HCOMM_CCU_RES_TYPE_EVENT, "HcommCcuEventGetAddr")


def casc_cnt_alloc(ins, die) -> int:
    api = "HcommCcuCascCntAlloc"
    check_product(api)
    if not ins:
        raise ccu_error(C.CCU_E_PARA, api, "ccuInsHandle is 0")
    die = check_die(die, api)
    inst = get_instance(ins, api, C.CCU_E_NOT_FOUND)
    blocks, used = inst.casc_blocks.get(die, []), inst.casc.get(die, 0)
    if used >= len(blocks):
        raise ccu_error(C.CCU_E_UNAVAIL, api, f"CCU instance {ins} has no free cascade counter block on die {die} "
                                              f"({len(blocks)} from its descriptor's CASC_CNT)")
    inst.casc[die] = used + 1
    res = Reservation(inst, die, R.HCOMM_CCU_RES_TYPE_CASC_CNT, blocks[used], CASC_CNT_XN)
    res.handle = ccu_state().reservations.add(res)
    return res.handle


def casc_cnt_mem(handle) -> CommMem:
    api = "HcommCcuCascCntGetMem"
    check_product(api)
    res = ccu_state().reservations.get(handle) if type(handle) is int else None
    if res is None or res.rtype != R.HCOMM_CCU_RES_TYPE_CASC_CNT or res.instance.destroyed:
        raise ccu_error(C.CCU_E_PARA, api, f"handle {handle!r} is not a cascade counter block")
    addr = ccu_state().die(res.device, res.die).register_addr(R.HCOMM_CCU_RES_TYPE_VARIABLE, res.start)
    return CommMem(type=CommMemType.COMM_MEM_TYPE_DEVICE, addr=addr, size=CASC_CNT_WISH * 8)


def _host_only(api: str) -> None:
    if program_ctx().kernels or recording_var.get() is not None:
        raise ccu_error(C.CCU_E_NOT_SUPPORT, api, "a host call: it cannot be made inside a kernel")


def mem_token_of(va, size) -> int:
    api = "HcommCcuGetMemToken"
    check_product(api)
    _host_only(api)
    va, size = args.integer(va, api, "srcVa", 0, args.UINT64_MAX), args.integer(size, api, "size", 0, args.UINT64_MAX)
    if not va or not size:
        raise ccu_error(C.CCU_E_PARA, api, "srcVa and size must not be 0")
    dev = _sim().runtime.current_device()
    try:
        alloc = memory.resolve(va, size, memory.DEVICE, dev.id if dev is not None else None)
    except memory.BadRange as why:
        raise ccu_error(C.CCU_E_RUNTIME, api, f"srcVa: {why}") from None
    return mem_token(alloc.device)


def remote_mem_token(channel, va) -> int:
    api = "HcommCcuGetRmtMemToken"
    check_product(api)
    _host_only(api)
    ch = _sim().handles.channels.get(channel) if type(channel) is int and channel else None
    if ch is None or ch.registers is None:
        raise ccu_error(C.CCU_E_PARA, api, f"channelHandle {channel!r} is not a live CCU channel")
    va = args.integer(va, api, "srcVa", 0, args.UINT64_MAX)
    device = _sim().transport.members(ch.world_id).get(ch.peer_rank)
    if not va or memory.device_of_address(va) != device:
        raise ccu_error(C.CCU_E_PARA, api, f"srcVa 0x{va:x} is not memory of rank {ch.peer_rank} (device {device})")
    return mem_token(device)
