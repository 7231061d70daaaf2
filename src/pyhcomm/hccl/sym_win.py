"""Symmetric memory windows (``HcclCommSymWinRegister`` ... ``HcclSymWinGetRemoteAddr``).

Atlas A3 and Atlas 350 only (``HCCL_E_NOT_SUPPORT`` elsewhere). Every rank registers its windows
in the same order with the same sizes: a rank's ``k``-th registration on a communicator pairs with
every other rank's ``k``-th. Registering does not block; ``HcclSymWinGetRemoteAddr`` (any peer)
and ``HcclSymWinGetPeerPointer`` (a peer in the same node, layer 0 of the rank graph:
``HCCL_E_NOT_SUPPORT`` for others) give the peer's address at ``offset`` in its window, once the
peer registered it (``HCCL_E_UNAVAIL`` before; a window of another size: ``HCCL_E_PARA``).

A window must be device memory of the rank's device, ``0 < size``, and on Atlas A3 at most
``hcclSymWinMaxMemSizePerRank`` GB (the config's, default 16); ``flag`` must be 1. pyhcomm's data
plane moves bytes to peers through channels only: these addresses are bookkeeping for algorithms
(give a channel the window with ``HcclCommMemReg`` to reach it with one-sided writes).
"""
from __future__ import annotations

from .. import args
from ..defs.hccl_types import HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE
from ..errors import HcclResult, hccl_error, not_found, not_support, para, ptr
from ..sim import current_sim as _sim
from ..sim import memory
from . import comm as comm_mod
from .state import hccl_state
from ..args import live_object

GB = 1 << 30
SUPPORTED = ("A3", "950")


class Window:
    """One rank's ``k``-th window (``HcclCommSymWindow``)."""

    def __init__(self, comm, index: int, addr: int, size: int):
        self.comm, self.index, self.addr, self.size = comm, index, addr, size
        self.live = True
        self.handle = _sim().handles.misc.add(self)


def _windows(world) -> dict:
    """``{(rank, k): Window}`` of a world's live windows."""
    return hccl_state().sym_windows.setdefault(world.id, {})


def register(comm_handle, addr, size, flag) -> int:
    api = "HcclCommSymWinRegister"
    c = comm_mod.get_comm(comm_handle, api)
    product = _sim().runtime.product
    if product.family not in SUPPORTED:
        raise not_support(api, f"symmetric memory is supported on Atlas A3 and Atlas 350, not on {product.name}")
    if not addr:
        raise ptr(api, "addr is NULL")
    if flag != 1:
        raise para(api, f"flag {flag!r}: only 1 is supported")
    size = args.integer(size, api, "size", -(1 << 64), args.UINT64_MAX)
    if size <= 0:
        raise para(api, f"size {size!r} must be a positive int")
    settings = c.settings
    limit = (settings.fields.get("hcclSymWinMaxMemSizePerRank") if settings else None) \
        or HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE
    if product.family == "A3" and size > limit * GB:
        raise para(api, f"size {size} exceeds hcclSymWinMaxMemSizePerRank ({limit} GB)")
    try:
        memory.resolve(addr, size, memory.DEVICE, c.device)
    except memory.BadRange as why:
        raise para(api, f"addr 0x{addr:x} + {size} is not device memory of rank {c.rank}: {why}") from None
    with _sim().lock:
        index = c.__dict__.setdefault("sym_win_count", 0)
        c.sym_win_count = index + 1
        win = Window(c, index, addr, size)
        _windows(c.world)[(c.rank, index)] = win
    return win.handle


def get_window(handle, api: str) -> Window:
    return live_object(handle, Window, api, "winHandle", "a registered symmetric window")


def deregister(handle) -> None:
    win = get_window(handle, "HcclCommSymWinDeregister")
    with _sim().lock:
        win.live = False
        _windows(win.comm.world).pop((win.comm.rank, win.index), None)
        _sim().handles.misc.remove(handle)


def find(comm_handle, ptr_, size):
    """``HcclCommSymWinGet``: ``(window, offset)`` of the live window holding ``[ptr, ptr + size)``."""
    api = "HcclCommSymWinGet"
    c = comm_mod.get_comm(comm_handle, api)
    ptr_ = args.pointer(ptr_, api, "ptr")
    size = args.integer(size, api, "size")
    if not ptr_:
        raise ptr(api, "ptr is NULL")
    for (rank, _k), win in sorted(_windows(c.world).items()):
        if rank == c.rank and win.addr <= ptr_ and ptr_ + size <= win.addr + win.size:
            return win.handle, ptr_ - win.addr
    raise not_found(api, f"0x{ptr_:x} + {size} lies in no symmetric window of rank {c.rank}")


def peer_address(handle, offset, peer_rank, api: str, same_node: bool) -> int:
    win = get_window(handle, api)
    c = win.comm
    peer_rank = args.integer(peer_rank, api, "peerRank", -(1 << 64), args.UINT64_MAX)
    offset = args.integer(offset, api, "offset", -(1 << 64), args.UINT64_MAX)
    if not 0 <= peer_rank < c.nranks:
        raise para(api, f"peerRank {peer_rank!r} is not a rank of {c.name}")
    if not 0 <= offset < win.size:
        raise para(api, f"offset {offset!r} is outside the window ({win.size} bytes)")
    if same_node:
        from .rank_graph import instances
        if not any(c.rank in ranks and peer_rank in ranks for ranks in instances(c, 0)):
            raise not_support(api, f"rank {peer_rank} is not in rank {c.rank}'s node: no load/store path (use "
                                   "HcclSymWinGetRemoteAddr)")
    peer = _windows(c.world).get((peer_rank, win.index))
    if peer is None:
        raise hccl_error(HcclResult.HCCL_E_UNAVAIL, api, f"rank {peer_rank} has not registered its window "
                                                         f"{win.index} yet")
    if peer.size != win.size:
        raise para(api, f"rank {peer_rank}'s window {win.index} has {peer.size} bytes, this one {win.size}: "
                        "symmetric windows must have the same size")
    return peer.addr + offset
