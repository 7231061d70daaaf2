"""The AI Vector engine: ``COMM_ENGINE_AIV`` (Ascend C kernels on the vector cores that move data
and signal peers through flags in memory).

Modelled so far: its channels on Atlas 350 (UBC_CTP, UBC_TP, UB_MEM, RoCE; the shared queue of
``HcclChannelConfig``), its engine contexts (device memory), the operator expansion mode
``AIV`` / ``AIV_ONLY`` (read back; pyhcomm's collectives run their usual way) and MC2 operators
naming it. It has no threads of its own; AIV kernels themselves are not modelled yet.
"""
from __future__ import annotations

from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....enums import CommEngine as E
from .aicpu import KERNEL
from .base import CHANNEL_OPS, DEVICE, LOCAL_OPS, THREAD_SYNC, Channels, Engine

_PROTOCOLS = {"950": frozenset({P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM,
                                P.COMM_PROTOCOL_ROCE})}


def engines(product) -> tuple:
    return (Engine(
        E.COMM_ENGINE_AIV.value, E.COMM_ENGINE_AIV.name, DEVICE, DEVICE, KERNEL,
        channels=Channels(protocols=_PROTOCOLS.get(product.family, frozenset()), shared_queue=True),
        runs=(THREAD_SYNC | CHANNEL_OPS) if product.device_side_only else (LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS),
        expansion=(X.HCCL_OP_EXPANSION_MODE_AIV, X.HCCL_OP_EXPANSION_AIV_ONLY), mc2=True,
        family=__name__, doc="AI Vector kernels (channels and contexts; the kernels are not modelled)"),)
