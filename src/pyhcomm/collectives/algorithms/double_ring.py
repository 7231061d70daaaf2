"""Double ring (Atlas A3 inside a server): two rings at once, each carrying half of every slice.

HCCL's ``aligned_all_gather_double_ring.cc``, ``aligned_reduce_scatter_double_ring.cc`` and
``coll_all_reduce_fast_double_ring_for_910_93_executor.cc``: on an A3 server whose dies pair up
over SIO (HCCS-switch links ``(d-2) d`` and SIO links ``d``: ``alg_configurator.cc``,
``IsHCCSSWNumEqualToTwiceSIONum``) HCCL runs its level-0 ReduceScatter, AllGather and AllReduce on
two rings concurrently. Here the first ring runs on the main thread in rank order, the second on
one slave thread in the opposite direction, each over its half of every slice (its own landing
area); with two ranks or fewer it is the single ring. The two rings use the notifies of the two
ends of each channel (ring one: ACK and DATA at the lower rank's end of ``r, r+1``, ring two at the
upper's), so they never share a signal.

Cost: each ring ``(p-1) (alpha + n/(2p) beta)`` per ReduceScatter or AllGather, the two at once.
"""
from __future__ import annotations

from .. import drive, patterns
from ..algorithm import Algorithm, Level
from ..segments import size, split
from . import ring


def _halves(slices, elem: int):
    """(first halves, second halves) of every slice (whole elements)."""
    parts = [split(s, 2, elem) for s in slices]
    return [a for a, _b in parts], [b for _a, b in parts]


def _both(g, one, two) -> None:
    """``one(thread)`` on the main thread and ``two(thread)`` on the first slave, concurrently."""
    if g.nranks <= 2 or not g.slaves:
        one(g.main)
        two(g.main)
        return
    slave = g.slaves[0]
    patterns.fan_out(g.main, [slave])
    one(g.main)
    two(slave)
    patterns.fan_in(g.main, [slave])


def _reversed(g):
    """The same ranks in the opposite ring order."""
    return g.sub(list(reversed(range(g.nranks))))


def level_rs(g, slices, red, land):
    first, second = _halves(slices, red.elem)
    other = land + max(size(s) for s in first)
    _both(g, lambda t: ring.level_rs(g, first, red, land, t),
          lambda t: ring.level_rs(_reversed(g), second[::-1], red, other, t))


def level_ag(g, slices, land, elem: int = 1):
    first, second = _halves(slices, elem)
    other = land + max(size(s) for s in first)
    _both(g, lambda t: ring.level_ag(g, first, land, t),
          lambda t: ring.level_ag(_reversed(g), second[::-1], other, t))


def level_ar(g, s, red, land):
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_ag(g, slices, land, red.elem)


def two_rings(nranks: int) -> int:
    return 1 if nranks > 2 else 0


LEVEL = Level("double_ring", rs=level_rs, ag=level_ag, ar=level_ar, slaves=two_rings)

DOUBLE_RING = Algorithm("double_ring", "two rings at once in opposite directions, each with half of every slice "
                        "(Atlas A3 inside a server)", drive.implementations(LEVEL), level=LEVEL)
