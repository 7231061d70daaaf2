"""The CCU's resource calls (``ccu_res.h``): descriptors, instances, reservations, memory tokens.

Raising implementations of ``HcommCcuInsResDesc*``, ``HcommCcuQueryRemainResDesc``,
``HcommCcuInsCreate[Default]``, ``HcommCcuInsDestroy``, ``HcommCcuInsQueryResDesc``,
``HcommCcuVariableAlloc`` / ``EventAlloc`` / ``...GetAddr``, ``HcommCcuCascCntAlloc`` /
``...GetMem``, ``HcommCcuGetMemToken`` / ``GetRmtMemToken``: each raises :class:`~.ccu_pool.CcuError`
with the ``CcuResult`` its ``api_ref`` page (or ``ccu_res.h``) gives for the case; the model is
:mod:`.ccu_pool`. Every call is ``HCCL_E_NOT_SUPPORT`` (5) on a product without a CCU.

Where the pages are silent, pyhcomm's choices: a descriptor or instance of another device is
``CCU_E_PTR`` (``HcommCcuInsCreate``'s page says so for descriptors); destroying an instance a
communicator owns is ``CCU_E_PARA`` (the communicator destroys it); ``HcommCcuInsCreate`` on a disabled
die is ``CCU_E_UNAVAIL``.
"""
from __future__ import annotations

from ... import args
from ...defs.ccu import CcuResult as C
from ...sim import current_sim as _sim
from .ccu_pool import (CASC_CNT_XN, TYPES, Instance, R, ResDesc, ccu_error, ccu_state, check_die, check_product,
                       current_device, rounded)
from .engines import ccu as _ccu_engine

#: How many cascade counter blocks a die has at most (``ccu_res.h``: "每 die 上限 4 块").
CASC_CNT_PER_DIE = 4
#: Types an instance takes a block of at creation (instructions: at registration; cascade counters
#: and missions apart).
_BLOCK_TYPES = tuple(t for t in TYPES if t not in (R.HCOMM_CCU_RES_TYPE_INSTRUCTION, R.HCOMM_CCU_RES_TYPE_CCU_THREAD,
                                                   R.HCOMM_CCU_RES_TYPE_CASC_CNT))


def _u32(value, api: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= args.UINT32_MAX:
        raise ccu_error(C.CCU_E_PARA, api, f"{name} {value!r} is not a uint32")
    return value


def _res_type(value, api: str):
    try:
        t = R(value)
    except (ValueError, TypeError):
        t = None
    if t is None or t == R.HCOMM_CCU_RES_TYPE_INVALID:
        raise ccu_error(C.CCU_E_PARA, api, f"resType {value!r} is not an HcommCcuResType")
    return t


# -- descriptors ---------------------------------------------------------------------------------------------
def get_desc(handle, api: str) -> ResDesc:
    d = ccu_state().descs.get(handle) if type(handle) is int else None
    if d is None:
        raise ccu_error(C.CCU_E_NOT_FOUND, api, f"resDesc {handle!r} is not a live CCU resource descriptor")
    return d


def desc_create(die_id) -> int:
    """``HcommCcuInsResDescCreate``: a descriptor of ``die_id`` on the current device, every count 0."""
    api = "HcommCcuInsResDescCreate"
    check_product(api)
    die = check_die(die_id, api)
    d = ResDesc(current_device(api), die)
    d.handle = ccu_state().descs.add(d)
    return d.handle


def desc_destroy(handle) -> None:
    api = "HcommCcuInsResDescDestroy"
    check_product(api)
    ccu_state().descs.remove(get_desc(handle, api).handle)


def desc_die(handle) -> int:
    api = "HcommCcuInsResDescQueryDieId"
    check_product(api)
    return get_desc(handle, api).die


def desc_set_num(handle, res_type, num) -> None:
    """``HcommCcuInsResDescSetNum``: a pure write (capacity is checked at creation)."""
    api = "HcommCcuInsResDescSetNum"
    check_product(api)
    t = _res_type(res_type, api)
    d = get_desc(handle, api)
    d.nums[t] = _u32(num, api, "resNum")


def desc_num(handle, res_type) -> int:
    api = "HcommCcuInsResDescQueryNum"
    check_product(api)
    t = _res_type(res_type, api)
    return get_desc(handle, api).nums[t]


def query_remain(handle) -> None:
    """``HcommCcuQueryRemainResDesc``: the longest free run of each type on the descriptor's die."""
    api = "HcommCcuQueryRemainResDesc"
    check_product(api)
    d = get_desc(handle, api)
    die = ccu_state().die(d.device, d.die)
    if not die.enabled:
        raise ccu_error(C.CCU_E_UNAVAIL, api, f"IO die {d.die} of device {d.device} is not enabled "
                                              "(PYHCOMM_CCU_DIES)")
    for t in TYPES:
        d.nums[t] = die.pools[t].largest()
    d.nums[R.HCOMM_CCU_RES_TYPE_CASC_CNT] = min(CASC_CNT_PER_DIE, die.pools[R.HCOMM_CCU_RES_TYPE_VARIABLE].largest()
                                                // CASC_CNT_XN)


# -- instances -----------------------------------------------------------------------------------------------
def get_instance(handle, api: str, missing=C.CCU_E_PTR) -> Instance:
    """A live instance of the current device; 0 or unknown: ``missing``."""
    inst = ccu_state().instances.get(handle) if type(handle) is int and handle else None
    if inst is None or inst.destroyed:
        raise ccu_error(missing, api, f"CCU instance {handle!r} does not exist (HcommCcuInsCreate)")
    dev = _sim().runtime.current_device()
    if dev is not None and dev.id != inst.device:
        raise ccu_error(missing, api, f"CCU instance {handle} belongs to device {inst.device}, the caller runs on "
                                      f"device {dev.id}")
    return inst


def _give_back(state, device: int, taken: list) -> None:
    for die, t, start, n in taken:
        state.die(device, die).pools[t].give(start, n)


def _take(state, device, die, t, n, taken, api) -> int:
    if not n:
        return 0
    start = state.die(device, die).pools[t].take(n)
    if start is None:
        _give_back(state, device, taken)
        raise ccu_error(C.CCU_E_UNAVAIL, api, f"IO die {die} of device {device} has no {n} contiguous "
                                              f"{t.name[len('HCOMM_CCU_RES_TYPE_'):]} left")
    taken.append((die, t, start, n))
    return start


def _missions(state, device, want, taken, api) -> tuple:
    """Fused missions: ``want`` on every enabled die, the same ids on each."""
    t = R.HCOMM_CCU_RES_TYPE_CCU_THREAD
    dies = [d for d in range(_ccu_engine.die_count(_sim().runtime.product)) if state.die(device, d).enabled]
    starts = {_take(state, device, d, t, want, taken, api) for d in dies}
    return (starts.pop() if starts else 0), dies


def _blocks(state, device, descs, api) -> Instance:
    """Take every block the descriptors ask for (all or nothing)."""
    taken, blocks = [], {}
    for d in descs:
        if not state.die(device, d.die).enabled:
            _give_back(state, device, taken)
            raise ccu_error(C.CCU_E_UNAVAIL, api, f"IO die {d.die} of device {device} is not enabled")
        mine = blocks[d.die] = {}
        for t in _BLOCK_TYPES:
            n = rounded(t, d.nums[t])
            mine[t] = (_take(state, device, d.die, t, n, taken, api), n)
    want = max(rounded(R.HCOMM_CCU_RES_TYPE_CCU_THREAD, d.nums[R.HCOMM_CCU_RES_TYPE_CCU_THREAD]) for d in descs)
    start, dies = _missions(state, device, want, taken, api)
    for die in dies:
        blocks.setdefault(die, {t: (0, 0) for t in _BLOCK_TYPES})[R.HCOMM_CCU_RES_TYPE_CCU_THREAD] = (start, want)
    casc = {}
    for d in descs:
        n = d.nums[R.HCOMM_CCU_RES_TYPE_CASC_CNT]
        if n > CASC_CNT_PER_DIE:
            _give_back(state, device, taken)
            raise ccu_error(C.CCU_E_UNAVAIL, api, f"die {d.die}: {n} cascade counter blocks, at most "
                                                  f"{CASC_CNT_PER_DIE}")
        casc[d.die] = [_take(state, device, d.die, R.HCOMM_CCU_RES_TYPE_VARIABLE, CASC_CNT_XN, taken, api)
                       for _ in range(n)]
    inst = Instance(device, blocks)
    inst.casc_blocks = casc
    inst.taken = taken
    return inst


def ins_create(res_descs) -> int:
    """``HcommCcuInsCreate``: an instance from 1 or 2 descriptors of distinct dies of this device."""
    api = "HcommCcuInsCreate"
    check_product(api)
    if res_descs is None:
        raise ccu_error(C.CCU_E_PTR, api, "resDescs is NULL")
    if not isinstance(res_descs, (list, tuple)):
        raise ccu_error(C.CCU_E_PARA, api, f"resDescs must be a list of descriptor handles, not "
                                           f"{type(res_descs).__name__}")
    if not 0 < len(res_descs) <= 2:
        raise ccu_error(C.CCU_E_PARA, api, f"resDescNum {len(res_descs)} is outside (0, 2]")
    device = current_device(api)
    state = ccu_state()
    descs = []
    for i, h in enumerate(res_descs):
        d = state.descs.get(h) if type(h) is int else None
        if d is None or d.device != device:
            raise ccu_error(C.CCU_E_PTR, api, f"resDescs[{i}] {h!r} is not a descriptor of device {device}")
        descs.append(d)
    if len({d.die for d in descs}) != len(descs):
        raise ccu_error(C.CCU_E_PARA, api, f"resDescs name IO die {descs[0].die} twice")
    inst = _blocks(state, device, descs, api)
    inst.handle = state.instances.add(inst)
    return inst.handle


def ins_create_default(_die_ids) -> int:
    """``HcommCcuInsCreateDefault``: every resource of every enabled die (``dieIds`` is not read)."""
    api = "HcommCcuInsCreateDefault"
    check_product(api)
    device = current_device(api)
    state = ccu_state()
    descs = []
    for die in range(_ccu_engine.die_count(_sim().runtime.product)):
        if state.die(device, die).enabled:
            d = ResDesc(device, die)
            d.nums = {t: pool.total for t, pool in state.die(device, die).pools.items()}
            d.nums[R.HCOMM_CCU_RES_TYPE_CASC_CNT] = 0
            descs.append(d)
    if not descs:
        raise ccu_error(C.CCU_E_UNAVAIL, api, f"device {device} has no enabled IO die")
    inst = _blocks(state, device, descs, api)
    inst.handle = state.instances.add(inst)
    return inst.handle


def destroy(inst: Instance) -> None:
    """Give an instance's resources back; its kernels and reservations go with it."""
    state = ccu_state()
    inst.destroyed = True
    _give_back(state, inst.device, inst.taken)
    for k in inst.kernels:
        if k.instructions:
            state.die(inst.device, k.die).pools[R.HCOMM_CCU_RES_TYPE_INSTRUCTION].give(*k.instructions)
        state.kernels.remove(k.handle)
    inst.kernels.clear()
    for h, res in list(state.reservations.by_handle.items()):
        if res.instance is inst:
            state.reservations.remove(h)
    state.instances.remove(inst.handle)


def ins_destroy(handle) -> None:
    api = "HcommCcuInsDestroy"
    check_product(api)
    inst = get_instance(handle, api, C.CCU_E_NOT_FOUND)
    if inst.owner is not None:
        raise ccu_error(C.CCU_E_PARA, api, f"CCU instance {handle} belongs to communicator {inst.owner.name}: it is "
                                           "destroyed with it")
    destroy(inst)


def ins_query(handle, desc_handle) -> None:
    """``HcommCcuInsQueryResDesc``: what the instance holds on the descriptor's die."""
    api = "HcommCcuInsQueryResDesc"
    check_product(api)
    if not handle or not desc_handle:
        raise ccu_error(C.CCU_E_PARA, api, "ccuInsHandle and resDesc must not be 0")
    inst = get_instance(handle, api, C.CCU_E_NOT_FOUND)
    d = get_desc(desc_handle, api)
    mine = inst.blocks.get(d.die, {})
    for t in TYPES:
        d.nums[t] = mine.get(t, (0, 0))[1]
    d.nums[R.HCOMM_CCU_RES_TYPE_INSTRUCTION] = sum(k.instructions[1] for k in inst.kernels
                                                   if k.die == d.die and k.instructions)
    d.nums[R.HCOMM_CCU_RES_TYPE_CASC_CNT] = len(inst.casc_blocks.get(d.die, ()))


def release_owner(owner) -> None:
    """Destroy the instances a destroyed communicator owns (assigned, or its own)."""
    for inst in list(ccu_state().instances.values()):
        if inst.owner is owner:
            destroy(inst)
