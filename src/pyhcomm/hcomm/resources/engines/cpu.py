"""The host CPU engines: ``COMM_ENGINE_CPU_TS`` (host-issued tasks on a stream the task scheduler
runs) and ``COMM_ENGINE_CPU`` (host CPU threads: Atlas 350's non-blocking RoCE path).

Facts (hcomm-api §3.3-3.4): CPU_TS threads exist on every product (``HcclThreadAcquire``,
``HcclThreadAcquireWithStream``, ``HcclThreadAcquireWithConfig(COMM_ENGINE_CPU,
THREAD_TYPE_TS)``); CPU threads on Atlas 350 only (``THREAD_TYPE_CPU``). CPU_TS channels:
Atlas A2 (RoCE, HCCS, HCCS_ONLY); CPU channels: Atlas 350 (RoCE). On Atlas A2 and on the
products outside the HCOMM support table HCCL's collectives orchestrate from the host on CPU_TS
threads (pyhcomm's collectives: :mod:`pyhcomm.collectives.context`), over the product's own links.
Local operations on Atlas 350 run on AICPU_TS threads only (the product's device-side rule).
"""
from __future__ import annotations

from ....defs.hccl_types import HcclOpExpansionMode as X
from ....defs.res_defs import CommProtocol as P
from ....defs.res_defs import ThreadType
from ....enums import CommEngine as E
from .base import (CHANNEL_OPS, FENCE, HOST, HOST_NBI, LOCAL_OPS, THREAD_SYNC, Channels, Engine, Submit,
                   Threads)

A2A3 = frozenset({P.COMM_PROTOCOL_ROCE, P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY})
#: A host program spends ``host_submit`` per entry it issues.
HOST_PROGRAM = Submit("host program", "host_submit")

#: Links HCCL's own collectives use from the host, by family: (the channel protocols, best first).
_LIBRARY = {
    "A2": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_ROCE),
    "910": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_PCIE, P.COMM_PROTOCOL_ROCE),
    "310P": (P.COMM_PROTOCOL_PCIE, P.COMM_PROTOCOL_ROCE),
}
_LIBRARY_PROTOCOLS = {"A2": A2A3, "910": frozenset(_LIBRARY["910"]), "310P": frozenset(_LIBRARY["310P"])}


def engines(product) -> tuple:
    family = product.family
    is_950 = family == "950"
    local = frozenset() if product.device_side_only else LOCAL_OPS
    cpu_ts = Engine(
        E.COMM_ENGINE_CPU_TS.value, E.COMM_ENGINE_CPU_TS.name, HOST, HOST, HOST_PROGRAM,
        threads=Threads(acquire=True, with_stream=True, config=((E.COMM_ENGINE_CPU, ThreadType.THREAD_TYPE_TS),)),
        channels=Channels(protocols=A2A3 if family == "A2" else frozenset(),
                          library=_LIBRARY_PROTOCOLS.get(family, frozenset()),
                          collective=() if family in ("A3", "950") else _LIBRARY.get(family, ())),
        runs=local | THREAD_SYNC | CHANNEL_OPS,
        collectives=family not in ("A3", "950"),
        expansion=(X.HCCL_OP_EXPANSION_MODE_HOST_TS,), counterpart=E.COMM_ENGINE_AICPU_TS.value,
        family=__name__, doc="host-issued tasks on streams the task scheduler runs")
    cpu = Engine(
        E.COMM_ENGINE_CPU.value, E.COMM_ENGINE_CPU.name, HOST, HOST, HOST_PROGRAM,
        threads=Threads(acquire=is_950, with_stream=is_950,
                        config=((E.COMM_ENGINE_CPU, ThreadType.THREAD_TYPE_CPU),)),
        channels=Channels(protocols=frozenset({P.COMM_PROTOCOL_ROCE}) if is_950 else frozenset(),
                          timed_waits=frozenset({P.COMM_PROTOCOL_ROCE})),   # the host CPU RoCE path
        runs=local | THREAD_SYNC | CHANNEL_OPS | FENCE | (HOST_NBI if is_950 else frozenset()),
        expansion=(X.HCCL_OP_EXPANSION_MODE_HOST,), counterpart=E.COMM_ENGINE_AICPU.value,
        family=__name__, doc="host CPU threads (non-blocking RoCE transfers, fences)")
    return cpu, cpu_ts
