"""A communicator's CCU instances (``hccl_ccu_res.h``): ``HcclCommAssignCcuIns``,
``HcclCommQueryAssignedCcuIns``, ``HcclCommQueryCcuIns``.

* ``HcclCommAssignCcuIns(comm, ins)`` binds an instance the caller made (``HcommCcuInsCreate``) to the
  communicator, which then owns it and destroys it with itself. One per communicator: a second is
  ``HCCL_E_PARA`` (the first stays), so is 0, or an instance another communicator owns; an instance
  that does not exist on the communicator's device is ``HCCL_E_NOT_FOUND``.
* ``HcclCommQueryAssignedCcuIns(comm)``: ``[that instance]`` (``HCCL_E_UNAVAIL`` when none was assigned).
* ``HcclCommQueryCcuIns(comm)``: the communicator's own instance, independent of the assigned one,
  made on the first call from its operator expansion mode (its config's ``hcclOpExpansionMode``, else
  ``HCCL_OP_EXPANSION_MODE``): ``HCCL_E_UNAVAIL`` when that mode is not a CCU one. Its amounts are
  pyhcomm's choice (no public source gives them): example 05's presets on every enabled die for
  ``CCU_SCHED``; twice them for ``CCU_MS``, which falls back once to ``CCU_SCHED``'s amounts when they
  do not fit (the page: "CCU_MS→CCU_SCHED 自动降级一次"); when those do not fit either,
  ``HCCL_E_UNAVAIL``.

Each is ``HCCL_E_NOT_SUPPORT`` on a product without a CCU; a NULL communicator ``HCCL_E_PTR``.
"""
from __future__ import annotations

from ..defs.ccu import CcuResult
from ..defs.hccl_types import HcclOpExpansionMode as X
from ..errors import HcclResult, hccl_error, not_found, not_support, para, ptr
from ..hcomm.resources import ccu_res
from ..hcomm.resources.ccu_pool import CcuError, ccu_state
from ..hcomm.resources.engines import ccu as ccu_engine
from ..hcomm.resources.owner import get_owner
from ..sim import current_sim as _sim

_CCU_MODES = (X.HCCL_OP_EXPANSION_MODE_CCU_MS, X.HCCL_OP_EXPANSION_MODE_CCU_SCHED)


def _comm(comm_handle, api: str):
    if not comm_handle:
        raise ptr(api, "comm is NULL")
    comm = get_owner(comm_handle, api)
    product = _sim().runtime.product
    if not ccu_engine.die_count(product):
        raise not_support(api, f"{product.name} has no CCU (Atlas 350 only)")
    return comm


def _instances(comm, own: bool) -> list:
    return [i for i in ccu_state().instances.values() if i.owner is comm and i.own == own and not i.destroyed]


def assign(comm_handle, ins) -> None:
    api = "HcclCommAssignCcuIns"
    comm = _comm(comm_handle, api)
    if isinstance(ins, bool) or not isinstance(ins, int) or not ins:
        raise para(api, f"insHandle {ins!r} must be a CCU instance handle (not 0)")
    if _instances(comm, False):
        raise para(api, f"communicator {comm.name} already has CCU instance {_instances(comm, False)[0].handle}")
    inst = ccu_state().instances.get(ins)
    if inst is None or inst.destroyed or inst.device != comm.device:
        raise not_found(api, f"CCU instance {ins} does not exist on device {comm.device}")
    if inst.owner is not None:
        raise para(api, f"CCU instance {ins} is already bound to communicator {inst.owner.name}")
    inst.owner = comm


def query_assigned(comm_handle) -> list:
    api = "HcclCommQueryAssignedCcuIns"
    comm = _comm(comm_handle, api)
    found = _instances(comm, False)
    if not found:
        raise hccl_error(HcclResult.HCCL_E_UNAVAIL, api, f"no CCU instance was assigned to communicator {comm.name}")
    return [found[0].handle]


def expansion_mode(comm) -> int:
    """The communicator's ``HcclOpExpansionMode`` value (0: the product's default)."""
    settings = getattr(comm, "settings", None)
    if settings is not None and settings.op_expansion_mode:
        return settings.op_expansion_mode
    name = _sim().config.op_expansion_mode
    return int(X[f"HCCL_OP_EXPANSION_MODE_{name}"] if name != "AIV_ONLY" else X.HCCL_OP_EXPANSION_AIV_ONLY) \
        if name else 0


def _create_own(comm, scale: int) -> int:
    """An instance of ``scale`` times example 05's presets on every enabled die of the comm's device."""
    descs = []
    try:
        for die in range(ccu_engine.die_count(_sim().runtime.product)):
            if ccu_state().die(comm.device, die).enabled:
                h = ccu_res.desc_create(die)
                descs.append(h)
                for rtype, n in ccu_engine.EXAMPLE_PRESETS.items():
                    ccu_res.desc_set_num(h, rtype, scale * n)
        return ccu_res.ins_create(descs)
    finally:
        for h in descs:
            ccu_res.desc_destroy(h)


def query_own(comm_handle) -> list:
    api = "HcclCommQueryCcuIns"
    comm = _comm(comm_handle, api)
    found = _instances(comm, True)
    if found:
        return [found[0].handle]
    _sim().config.check("HCCL_OP_EXPANSION_MODE", api)
    mode = expansion_mode(comm)
    if mode not in _CCU_MODES:
        raise hccl_error(HcclResult.HCCL_E_UNAVAIL, api, f"communicator {comm.name}'s operator expansion mode "
                                                         f"({X(mode).name if mode else 'the default'}) is not CCU_MS "
                                                         "or CCU_SCHED")
    scales = (2, 1) if mode == X.HCCL_OP_EXPANSION_MODE_CCU_MS else (1,)
    for scale in scales:
        try:
            handle = _create_own(comm, scale)
        except CcuError as exc:
            if exc.code != CcuResult.CCU_E_UNAVAIL:
                raise
            continue
        inst = ccu_state().instances.get(handle)
        inst.owner, inst.own = comm, True
        return [handle]
    raise hccl_error(HcclResult.HCCL_E_UNAVAIL, api, f"the CCU of device {comm.device} has too few free resources for "
                                                     "the communicator's own instance (fall back to AICPU_TS)")
