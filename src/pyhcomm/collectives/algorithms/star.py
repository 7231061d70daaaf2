"""The star family: the root and every other rank, one step.

Broadcast (the root stages its data, every peer reads it: hcomm-api S2 fanned out from the root,
:func:`..broadcast.broadcast`), Reduce (every peer writes into its slot of the root's buffer,
the root reduces: :func:`..reduce.reduce_to_root`) and Scatter (the root writes every peer its
slice, every peer at once: the mesh level's one-step scatter). The root connects to every rank,
the others to the root only. HCCL runs the star where a CPU rank takes part (Star.md: ``alpha +
n beta``).
"""
from __future__ import annotations

from .. import drive
from ..algorithm import Algorithm, Implementation, Level, Op, root_peers
from ..broadcast import broadcast
from ..reduce import reduce_to_root
from .mesh import level_gather, level_scatter, mesh_slaves

LEVEL = Level("star", scatter=level_scatter, gather=level_gather, slaves=mesh_slaves)
_scatter = drive.scatter(LEVEL)


def _slaves(call) -> int:
    return mesh_slaves(call.nranks)


STAR = Algorithm("star", "the root and every other rank in one step: peers pull from the root, or push to it", (
    Implementation(Op.HCCL_CMD_BROADCAST, broadcast, peers=root_peers,
                   schedule=drive.schedule_of(broadcast, Op.HCCL_CMD_BROADCAST)),
    Implementation(Op.HCCL_CMD_REDUCE, reduce_to_root, peers=root_peers,
                   schedule=drive.schedule_of(reduce_to_root, Op.HCCL_CMD_REDUCE)),
    Implementation(Op.HCCL_CMD_SCATTER, _scatter, slaves=_slaves, peers=root_peers,
                   schedule=drive.schedule_of(_scatter, Op.HCCL_CMD_SCATTER, _slaves)),
))
