"""The star family: the root and every other rank, one step, one thread a rank.

Broadcast (the root stages its data, every peer reads it: hcomm-api S2 fanned out from the root,
:func:`..broadcast.broadcast`) and Reduce (every peer writes into its slot of the root's buffer,
the root reduces: :func:`..reduce.reduce_to_root`). The root connects to every rank, the others
to the root only. No closed form yet.
"""
from __future__ import annotations

from ..algorithm import Algorithm, Implementation, Op, root_peers
from ..broadcast import broadcast
from ..reduce import reduce_to_root

STAR = Algorithm("star", "the root and every other rank in one step: peers pull from the root, or push to it", (
    Implementation(Op.HCCL_CMD_BROADCAST, broadcast, peers=root_peers),
    Implementation(Op.HCCL_CMD_REDUCE, reduce_to_root, peers=root_peers),
))
