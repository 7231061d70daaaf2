"""What HCCL keeps in a Sim besides its communicators: callbacks, symmetric windows, settings."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sim import LayerState, current_sim


@dataclass
class HcclState(LayerState):
    """HCCL's state in one Sim (``hccl_state()``); made with the first communicator."""

    #: regName -> ``(cb, args)`` of ``HcclCommRegCommStateCallback`` (called at every state change)
    comm_state_callbacks: dict = field(default_factory=dict)
    #: world id -> its symmetric windows
    sym_windows: dict = field(default_factory=dict)
    #: process-wide HCCL settings (``HcclSetConfig``: HcclConfig -> value)
    settings: dict = field(default_factory=dict)
    #: (the rank-table file's bytes, devices per server) -> its parsed RankTable: every rank of a
    #: cluster reads the same file, parsed once (HcclCommInitClusterInfo)
    rank_tables: dict = field(default_factory=dict)

    def release_device(self, sim, device_id: int) -> None:
        """Destroy the communicators on ``device_id`` (its reset or ``aclFinalize``)."""
        from .comm import destroy
        for comm in list(sim.handles.comms.values()):
            if comm.device == device_id:
                destroy(comm, device_released=True)


def hccl_state(sim=None) -> HcclState:
    """HCCL's state in ``sim`` (default: the current Sim)."""
    return (sim or current_sim()).layer_state(HcclState)
