"""Sub-communicators (``HcclCreateSubCommConfig``): a subset of a communicator's ranks.

Every member calls it with the same ``rankIds`` (ranks of the parent, in the order that gives the
sub-communicator's ranks) and the same ``subCommId``; ``subCommRankId`` is the caller's index in
``rankIds``. It is collective over the members: it blocks until all of them called it
(``HCCL_CONNECT_TIMEOUT``). The sub-communicator keeps each member's device and place in the
cluster (its links are the parent's) and has resources of its own (HCCL buffer, threads,
channels); its name is the config's, else ``<parent>_sub_<subCommId>``. A ``subCommId`` used
again after the previous sub-communicator of that id is complete makes a new one. The parent
handle comes back unchanged (``ret, comm, subComm``).
"""
from __future__ import annotations

from .. import args
from ..errors import para
from ..sim import current_sim as _sim
from .. import topology
from . import comm as comm_mod
from . import comm_config

API = "HcclCreateSubCommConfig"


def create(comm_handle, rank_ids, sub_comm_id, sub_comm_rank_id, config):
    """Join (or create) sub-communicator ``sub_comm_id`` of the parent; see the module docstring."""
    parent = comm_mod.get_comm(comm_handle, API)
    if rank_ids is None:
        raise para(API, "rankIds is NULL")
    ranks = [args.plain(r) for r in rank_ids]
    if not ranks:
        raise para(API, "rankIds is empty")
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < parent.nranks:
            raise para(API, f"rankIds holds {r!r}, not a rank of {parent.name} (0..{parent.nranks - 1})")
    if len(set(ranks)) != len(ranks):
        raise para(API, f"rankIds {ranks} repeats a rank")
    if parent.rank not in ranks:
        raise para(API, f"rank {parent.rank} is not in rankIds {ranks}: only members create the sub-communicator")
    if sub_comm_rank_id != ranks.index(parent.rank):
        raise para(API, f"subCommRankId {sub_comm_rank_id!r} must be rank {parent.rank}'s index in rankIds "
                        f"({ranks.index(parent.rank)})")
    sub_comm_id = args.integer(sub_comm_id, API, "subCommId", -(1 << 64), args.UINT64_MAX)
    if not 0 <= sub_comm_id < 1 << 64:
        raise para(API, f"subCommId {sub_comm_id!r} must be a uint64")
    settings = comm_config.settings_from(config, API) if config is not None else None
    sim = _sim()
    with sim.lock:
        world = comm_mod.named_world(("sub-communicator", parent.world.id, sub_comm_id), len(ranks))
        if world.rank_table is None:   # a fresh one
            world.name = f"{parent.name}_sub_{sub_comm_id}"
            world.rank_table = topology.RankTable([parent.world.place(r) for r in ranks])
            world.member_ranks = ranks
        elif world.member_ranks != ranks:
            raise para(API, f"rankIds {ranks} differ from {world.member_ranks} given by another member of "
                            f"sub-communicator {sub_comm_id}")
    sub = comm_mod._join(world, len(ranks), sub_comm_rank_id, API, settings, device=parent.device)
    sub.parent = parent
    return parent.handle, sub.handle
