"""The AI CPU engines: ``COMM_ENGINE_AICPU_TS`` (tasks an AI CPU kernel issues onto streams the task
scheduler runs) and ``COMM_ENGINE_AICPU`` (the AI CPU itself: MC2 operators' engine).

Facts (hcomm-api §3.3-3.4, §5.6): AICPU_TS threads exist on every product (``HcclThreadAcquire``,
``HcclThreadAcquireWithConfig(COMM_ENGINE_AICPU, THREAD_TYPE_TS)``, the communicator's dedicated
threads of ``HcclDedicatedThreadAcquire``), not on a user's stream; their handles are used inside
AI CPU kernels. Channels: Atlas A2 and A3 RoCE, HCCS, HCCS_ONLY; Atlas 350 UBOE, UBC_CTP, UBC_TP,
RoCE (for AICPU also: the custom-operator samples acquire AICPU channels). On Atlas A3 and Atlas
350 HCCL's collectives run in an AI CPU kernel on AICPU_TS threads; on Atlas 350 local
operations run on AICPU_TS threads only, inside a kernel. Engine contexts live in device memory.
"""
from __future__ import annotations

from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....defs.res_defs import ThreadType
from ....enums import CommEngine as E
from .base import CHANNEL_OPS, DEVICE, LOCAL_OPS, THREAD_SYNC, Channels, Engine, Submit, Threads
from .cpu import A2A3

UB = frozenset({P.COMM_PROTOCOL_UBOE, P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_ROCE})
#: A kernel spends ``aicpu_submit`` per entry it issues, ``batch_submit`` per task it adds to a batch.
KERNEL = Submit("AI CPU kernel", "aicpu_submit", "batch_submit")
_PROTOCOLS = {"A2": A2A3, "A3": A2A3, "950": UB}
#: The protocols of the collectives' channels where they run in a kernel, best first.
_COLLECTIVE = {"A3": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_ROCE),
               "950": (P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UBOE)}


def engines(product) -> tuple:
    family = product.family
    protocols = _PROTOCOLS.get(family, frozenset())
    aicpu_ts = Engine(
        E.COMM_ENGINE_AICPU_TS.value, E.COMM_ENGINE_AICPU_TS.name, DEVICE, DEVICE, KERNEL,
        threads=Threads(acquire=True, config=((E.COMM_ENGINE_AICPU, ThreadType.THREAD_TYPE_TS),), dedicated=True),
        channels=Channels(protocols=protocols, collective=_COLLECTIVE.get(family, ())),
        runs=LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS, collectives=family in _COLLECTIVE,
        expansion=(X.HCCL_OP_EXPANSION_MODE_AI_CPU,), counterpart=E.COMM_ENGINE_CPU_TS.value,
        family=__name__, doc="tasks an AI CPU kernel issues onto streams the task scheduler runs")
    aicpu = Engine(
        E.COMM_ENGINE_AICPU.value, E.COMM_ENGINE_AICPU.name, DEVICE, DEVICE, KERNEL,
        channels=Channels(protocols=protocols),
        runs=(THREAD_SYNC | CHANNEL_OPS) if product.device_side_only else (LOCAL_OPS | THREAD_SYNC | CHANNEL_OPS),
        counterpart=E.COMM_ENGINE_CPU.value, mc2=True,
        family=__name__, doc="the AI CPU (MC2 operators, custom-operator channels)")
    return aicpu, aicpu_ts
