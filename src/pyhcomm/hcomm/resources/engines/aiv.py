"""The AI Vector engine: ``COMM_ENGINE_AIV`` (Ascend C kernels on the vector cores that move data
and signal peers through flags in memory).

Facts (HCOMM docs: ``CommEngine.md``, ``HcclChannelAcquire.md``, ``HcclChannelGetRemoteMems.md``,
``aiv_comm_op_dev``; hicann/hccl ``examples/05_custom_ops_allgather``): an engine of Ascend 950
(Atlas 350) only; Atlas A2 / A3 list no AIV engine, so no AIV channels there
(``HCCL_E_NOT_SUPPORT``). Its channels speak UBC_CTP, UBC_TP, UB_MEM or RoCE; one carries the
registered memories its descriptor lists (``HcclChannelDesc.memHandles``), which the peer's
kernels then read and write directly, as they do the HCCL buffer (``load_store``: what
:mod:`pyhcomm.sim.aiv` lets a block reach). It has no threads: an AIV kernel is launched with
``aclrtLaunchKernelWithHostArgs`` / ``aclrtLaunchKernelWithConfig`` on a stream, and its blocks
synchronise through flags. Engine contexts live in device memory (the kernel's ``GM_OUT`` flags
and the address table in example 05). The operator expansion modes ``AIV`` / ``AIV_ONLY`` are read
back (pyhcomm's collectives run their usual way) and MC2 operators may name it.

Submit cost: each entry a block issues (a ``DataCopy``, a flag) costs ``aiv_task``, 1 us
(``cost_model.cc``, ``CalcLatencyParams``: AIV 0.000001 s per task; docs/timing.md).
"""
from __future__ import annotations

from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....enums import CommEngine as E
from .base import AIV_OPS, CHANNEL_OPS, DEVICE, LOCAL_OPS, THREAD_SYNC, Channels, Engine, Submit

_PROTOCOLS = {"950": frozenset({P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM,
                                P.COMM_PROTOCOL_ROCE})}
#: A block spends ``aiv_task`` per entry it issues (cost_model.cc: 1 us per AIV task).
KERNEL = Submit("AIV kernel", "aiv_task", "batch_submit", default=1e-6)


def engines(product) -> tuple:
    local = (THREAD_SYNC | CHANNEL_OPS) if product.device_side_only else (LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS)
    return (Engine(
        E.COMM_ENGINE_AIV.value, E.COMM_ENGINE_AIV.name, DEVICE, DEVICE, KERNEL,
        channels=Channels(protocols=_PROTOCOLS.get(product.family, frozenset()), shared_queue=True,
                          load_store=True),
        runs=local | AIV_OPS,
        expansion=(X.HCCL_OP_EXPANSION_MODE_AIV, X.HCCL_OP_EXPANSION_AIV_ONLY), mc2=True,
        family=__name__, doc=("AI Vector kernels: blocks that load, store and signal flags over AIV channels"
                              if product.family in _PROTOCOLS else "AI Vector kernels (no AIV channels here)")),)
