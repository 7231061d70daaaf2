"""What a destroyed owner gives back, in order (``HcclCommDestroy`` calls :func:`release`)."""
from __future__ import annotations

from .ccu_res import release_owner as release_comm_ccu
from .channel import release_comm_channels
from .engine_ctx import release_comm_engine_ctx
from .owner import ResourceOwner, free_hccl_buffer
from .thread import release_comm_threads


def release(owner: ResourceOwner) -> None:
    """Release ``owner``'s threads (their library-owned streams skip what they still queue), close
    its channel ends (peers see them gone), free its engine contexts and its HCCL buffer, destroy the
    CCU instances it owns."""
    release_comm_threads(owner)
    release_comm_channels(owner)
    release_comm_engine_ctx(owner)
    free_hccl_buffer(owner)
    release_comm_ccu(owner)
