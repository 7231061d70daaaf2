"""The collective communication unit: ``COMM_ENGINE_CCU`` (a unit on each IO die of Atlas 350, programmed
with microcode recorded on the host: :mod:`pyhcomm.ccu`).

Facts on Atlas 350 and their sources:

* threads: ``HcclThreadAcquireWithStream(comm, COMM_ENGINE_CCU, stream, ...)`` wraps the user's stream
  (hcomm-api §3.3; example 05's ``GetThreadForCcu``); ``HcommCcuKernelLaunch`` issues a kernel on such a
  thread (its ``api_ref`` page); the thread runs the CCU's task kinds (:data:`~.base.CCU_OPS`) and
  thread notifies;
* channels: UBC_CTP and UBC_TP (``HcclChannelAcquire``'s table), 4 fixed notifies per end, released one
  by one with ``HcclChannelDestroy``; each notify of a CCU channel is a 16-bit sync register (CKE: the
  ``uint16_t`` masks of ``NotifyRecord`` / ``NotifyWait``), and each end has variable slots its peer
  writes (``WriteVariableWithNotify``, ``GetResByChannel``); pyhcomm gives it as many slots as notifies
  (4: a count no public source gives);
* engine contexts live in host memory (``HcclEngineCtxCreate``);
* ``HCCL_OP_EXPANSION_MODE`` ``CCU_MS`` / ``CCU_SCHED`` name it (``HcclOpExpansionMode``); a
  communicator in one of them makes its own CCU instance on demand (``HcclCommQueryCcuIns``);
* resources (:func:`die_totals`): 2 IO dies (``CCU_MAX_IODIE_NUM``), each with its own pools of
  missions (``CCU_THREAD``), loops, variables (XN), addresses (GSA), events (CKE), CCU buffers (MS,
  4 KiB slices), instructions and cascade counters. Example 05 presets "a fifth of the total" of each
  (``CCU_DEFAULT_RES_FRACTION_*`` in ``ccu/inc/common.h``: 400 addresses, 16 loops, 128 buffers, 400
  variables, 48 events, 2 missions), so a die has five times that; cascade counter blocks: 4 per die
  (``ccu_res.h``, ``HcommCcuCascCntAlloc``: "每 die 上限 4 块", each 1024 variables). No public source
  gives the instructions (pyhcomm: 32768 per die) or the allocation granules the docs say counts are
  rounded up to (``HcommCcuInsCreate``; pyhcomm's in :data:`GRANULES`);
* timing (``cost_model.cc``): a CCU task costs 2 us to issue (``CalcLatencyParams``: "和ccu一致",
  the same as an AI CPU task), the CCU copies at 200 GB/s and reduces at 160 GB/s
  (``ccuLocalCopyBw_``, ``ccuLocalReduceBw_``): the parameters ``ccu_task``, ``ccu_copy_bandwidth``,
  ``ccu_reduce_bandwidth`` of :mod:`pyhcomm.timing.costs` (docs/timing.md).

Other products have no CCU: no threads, no channels, no resources; its expansion modes are refused.
"""
from __future__ import annotations

from ....defs.ccu import CCU_CHANNEL_CKES, CCU_CHANNEL_VARIABLES, CCU_CKE_BITS, HcommCcuResType as R
from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....enums import CommEngine as E
from .base import CCU_OPS, CHANNEL_OPS, HOST, LOCAL_OPS, THREAD_SYNC, Channels, Engine, Submit, Threads
from .cpu import HOST_PROGRAM

#: Notifies of every CCU channel end (the descriptor's ``notifyNum`` is ignored).
CCU_NOTIFY_NUM = CCU_CHANNEL_CKES
#: What one CCU task costs its mission (and the host program that launches it): ``cost_model.cc``.
CCU_SUBMIT = Submit("CCU microcode", "ccu_task", default=2e-6, anywhere=True)
#: Example 05's presets: a fifth of each die's total (``ccu/inc/common.h``).
EXAMPLE_PRESETS = {R.HCOMM_CCU_RES_TYPE_ADDRESS: 400, R.HCOMM_CCU_RES_TYPE_LOOP: 16, R.HCOMM_CCU_RES_TYPE_CCU_BUF: 128,
                   R.HCOMM_CCU_RES_TYPE_VARIABLE: 400, R.HCOMM_CCU_RES_TYPE_EVENT: 48,
                   R.HCOMM_CCU_RES_TYPE_CCU_THREAD: 2}
#: Per die and type: how many there are (Atlas 350).
_TOTALS = {**{t: 5 * n for t, n in EXAMPLE_PRESETS.items()}, R.HCOMM_CCU_RES_TYPE_INSTRUCTION: 32768,
           R.HCOMM_CCU_RES_TYPE_CASC_CNT: 4}
#: Per type: the allocation granule counts are rounded up to (pyhcomm's choice; no public figure).
GRANULES = {R.HCOMM_CCU_RES_TYPE_LOOP: 4, R.HCOMM_CCU_RES_TYPE_CCU_BUF: 8, R.HCOMM_CCU_RES_TYPE_VARIABLE: 8,
            R.HCOMM_CCU_RES_TYPE_ADDRESS: 8, R.HCOMM_CCU_RES_TYPE_EVENT: 4, R.HCOMM_CCU_RES_TYPE_CCU_THREAD: 1,
            R.HCOMM_CCU_RES_TYPE_INSTRUCTION: 64, R.HCOMM_CCU_RES_TYPE_CASC_CNT: 1}


def die_count(product) -> int:
    """The CCU IO dies of one device of ``product`` (0: it has no CCU)."""
    return 2 if product.family == "950" else 0


def die_totals(product) -> dict:
    """``HcommCcuResType`` -> how many one IO die of ``product`` has (empty: no CCU)."""
    return dict(_TOTALS) if die_count(product) else {}


def resources_text(products) -> str:
    """The CCU resources of each product that has a CCU, for ``python -m pyhcomm products``."""
    lines = []
    for p in products:
        totals = die_totals(p)
        if totals:
            each = ", ".join(f"{R(t).name[len('HCOMM_CCU_RES_TYPE_'):].lower()} {n} (granule {GRANULES[t]})"
                             for t, n in totals.items())
            lines.append(f"{p.name}: {die_count(p)} IO dies, each: {each}")
    return "\n".join(lines)


def engines(product) -> tuple:
    is_950 = product.family == "950"
    base = (THREAD_SYNC | CHANNEL_OPS) if product.device_side_only else (LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS)
    return (Engine(
        E.COMM_ENGINE_CCU.value, E.COMM_ENGINE_CCU.name, HOST, HOST, CCU_SUBMIT if is_950 else HOST_PROGRAM,
        threads=Threads(with_stream=is_950),
        channels=Channels(protocols=frozenset({P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP}) if is_950
                          else frozenset(), notifies=CCU_NOTIFY_NUM, destroyable=True,
                          cke_bits=CCU_CKE_BITS if is_950 else 0, variables=CCU_CHANNEL_VARIABLES if is_950 else 0),
        runs=base | CCU_OPS if is_950 else base,
        expansion=(X.HCCL_OP_EXPANSION_MODE_CCU_MS, X.HCCL_OP_EXPANSION_MODE_CCU_SCHED),
        expansion_refused="" if is_950 else f"{product.name} has no CCU (Atlas 350 only)",
        family=__name__, doc=("the collective communication unit (microcode kernels: pyhcomm.ccu)" if is_950
                              else "the collective communication unit: none here (its calls: HCCL_E_NOT_SUPPORT)")),)
