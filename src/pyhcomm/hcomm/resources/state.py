"""What HCOMM's resource layer keeps in a Sim: the comm-less owners and the channel pairings."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...sim import LayerState, current_sim


@dataclass
class ResourcesState(LayerState):
    """HCOMM resources' state in one Sim (``resources_state()``)."""

    #: device -> its DeviceScope (the owner of resources made without a communicator)
    device_scopes: dict = field(default_factory=dict)
    #: channel key -> the PairWorlds of ``HcommChannelCreate`` (the n-th creation pairs with the peer's n-th)
    channel_worlds: dict = field(default_factory=dict)


def resources_state(sim=None) -> ResourcesState:
    """HCOMM resources' state in ``sim`` (default: the current Sim)."""
    return (sim or current_sim()).layer_state(ResourcesState)
