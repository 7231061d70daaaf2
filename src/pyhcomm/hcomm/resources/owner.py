"""Who owns HCOMM resources: a communicator's rank, seen from below HCCL.

The resource calls of ``hccl_res.h`` / ``hccl_channel.h`` (``HcclThreadAcquire``,
``HcclChannelAcquire``, ``HcclEngineCtxCreate``, ``HcclCommMemReg`` ...) take a communicator
handle. HCCL's :class:`pyhcomm.hccl.comm.Communicator` is a :class:`ResourceOwner`: it keeps the
resources these modules hand out (threads, channels, engine contexts, registered memories, the
HCCL buffer) and tears them down through :func:`pyhcomm.hcomm.resources.teardown.release`.
HCOMM finds it by handle in the Sim's ``comms`` table (:func:`get_owner`), never by importing HCCL.

An owner has ``world`` (``.id``: the transport's root; ``.name``; ``.place(rank)``), ``rank``,
``nranks``, ``device`` and ``name``; :meth:`ResourceOwner.check_usable` says whether a call may
use it now (a suspended communicator answers ``HCCL_E_SUSPENDING`` to most calls).
"""
from __future__ import annotations

import threading

from ... import args
from ...errors import HcclResult, hccl_error, not_found, ptr
from ...sim import current_sim as _sim
from ...sim import memory


class ResourceOwner:
    """The resources of one rank: what every communicator rank owns below HCCL."""

    l3 = False      # resources of a communicator (HCOMM's comm-less owners, DeviceScope, say True)

    def __init__(self, device: int, buffer_size: int):
        self.device = device
        self.buffer_size = buffer_size
        self.hccl_buffer = None         # Allocation, created on first use (hccl_buffer)
        self.buffer_region = None       # its transport Region, shared by every channel end exposing it
        self.threads: list = []         # HcommThread objects acquired on this rank
        self.notify_total = 0
        self.engine_ctx: dict = {}      # (tag, engine value) -> EngineCtx
        self.channels: list = []        # ChannelEnd objects acquired on this rank
        self.channel_ends: dict = {}    # channel key -> this rank's live end
        self.mems: list = []            # MemHandle objects registered with HcclCommMemReg
        self.destroyed = False
        self.lock = threading.Lock()    # what two host programs may change at once (engine contexts)

    def check_usable(self, api: str) -> None:
        """Raise if ``api`` may not use this owner now (the communicator overrides it)."""


def get_owner(handle, api: str) -> ResourceOwner:
    """Look a communicator up by handle: NULL is ``HCCL_E_PTR``, unknown or destroyed
    ``HCCL_E_NOT_FOUND``; then the owner's own :meth:`~ResourceOwner.check_usable`."""
    handle = args.handle(handle, api, "comm")
    if not handle:
        raise ptr(api, "comm is NULL")
    owner = _sim().handles.comms.get(handle)
    if owner is None:
        raise not_found(api, f"comm 0x{handle:x} is not a live communicator")
    owner.check_usable(api)
    return owner


def hccl_buffer(owner: ResourceOwner, api: str):
    """The rank's HCCL buffer (allocated on first use, the same on every call)."""
    if owner.hccl_buffer is None:
        with _sim().lock:
            if owner.hccl_buffer is None:
                alloc = memory.alloc_device(owner.device, owner.buffer_size, owner="hccl")
                if alloc is None:
                    raise hccl_error(HcclResult.HCCL_E_MEMORY, api, f"cannot allocate {owner.buffer_size} bytes")
                owner.hccl_buffer = alloc
    return owner.hccl_buffer


def free_hccl_buffer(owner: ResourceOwner) -> None:
    """Give the HCCL buffer back (the owner is being destroyed)."""
    if owner.hccl_buffer is not None:
        memory.free_device(owner.hccl_buffer)
        owner.hccl_buffer = None
