"""The collective communication unit: ``COMM_ENGINE_CCU`` (a unit on Atlas 350's IO die, programmed
with microcode, driven from the host).

Modelled so far: threads on a user's stream (``HcclThreadAcquireWithStream``) and channels
(UBC_CTP, UBC_TP; 4 fixed notifies per end; released one by one with ``HcclChannelDestroy``) on
Atlas 350, and host-memory engine contexts. Its kernels and resources are not modelled: the CCU
operator expansion modes are ``HCCL_E_NOT_SUPPORT``.
"""
from __future__ import annotations

from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....enums import CommEngine as E
from .base import CHANNEL_OPS, HOST, LOCAL_OPS, THREAD_SYNC, Channels, Engine, Threads
from .cpu import HOST_PROGRAM

#: Notifies of every CCU channel end (the descriptor's ``notifyNum`` is ignored).
CCU_NOTIFY_NUM = 4


def engines(product) -> tuple:
    is_950 = product.family == "950"
    return (Engine(
        E.COMM_ENGINE_CCU.value, E.COMM_ENGINE_CCU.name, HOST, HOST, HOST_PROGRAM,
        threads=Threads(with_stream=is_950),
        channels=Channels(protocols=frozenset({P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP}) if is_950
                          else frozenset(), notifies=CCU_NOTIFY_NUM, destroyable=True),
        runs=(THREAD_SYNC | CHANNEL_OPS) if product.device_side_only else (LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS),
        expansion=(X.HCCL_OP_EXPANSION_MODE_CCU_MS, X.HCCL_OP_EXPANSION_MODE_CCU_SCHED),
        expansion_refused="pyhcomm does not model the CCU",
        family=__name__, doc="the collective communication unit (threads and channels; kernels not modelled)"),)
