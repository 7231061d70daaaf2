"""What the acl runtime keeps in a Sim: its runtime notifies and the stream errors it reported."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..sim import LayerState, current_sim


@dataclass
class AclrtState(LayerState):
    """The acl runtime's state in one Sim (``aclrt_state()``)."""

    #: runtime notify id -> AclNotify (``aclrtGetNotifyId``; ``HcommAclrtNotify*OnThread`` find them by id)
    runtime_notifies: dict = field(default_factory=dict)
    notify_ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    #: stream handle -> the first error a synchronize reported on it (``HcclGetCommAsyncError`` reads it)
    stream_errors: dict = field(default_factory=dict)

    def release_device(self, sim, device_id: int) -> None:
        """Destroy the runtime notifies of ``device_id``."""
        for n in [n for n in self.runtime_notifies.values() if n.device == device_id]:
            sim.handles.notifies.remove(n.handle)
            self.runtime_notifies.pop(n.id, None)


def aclrt_state(sim=None) -> AclrtState:
    """The acl runtime's state in ``sim`` (default: the current Sim)."""
    return (sim or current_sim()).layer_state(AclrtState)
