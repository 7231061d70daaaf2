"""What HCOMM's data plane keeps in a Sim: the device-side communicator locks and the AI CPU task cache."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sim import LayerState, current_sim


@dataclass
class HcommState(LayerState):
    """HCOMM's data-plane state in one Sim (``hcomm_state()``)."""

    #: Communicator -> the KernelContext holding it (``HcommAcquireComm``)
    comm_holders: dict = field(default_factory=dict)
    #: (device, tag) -> (address ranges, recorded calls): the task cache's entries
    task_caches: dict = field(default_factory=dict)
    #: KernelContext -> its task-cache context (what Lookup found, what it records), while it runs
    kernel_caches: dict = field(default_factory=dict)
    #: how many kernels record now (a data-plane call looks for a recording only when some kernel records)
    recordings: int = 0


def hcomm_state(sim=None) -> HcommState:
    """HCOMM's data-plane state in ``sim`` (default: the current Sim)."""
    return (sim or current_sim()).layer_state(HcommState)
