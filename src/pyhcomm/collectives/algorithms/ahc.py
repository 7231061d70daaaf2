"""AHC and AHC_BROKE (asymmetric hierarchical concatenate): groups of different sizes joined by
"logically same-index" ranks.

HCCL's ``asymmetric_hierarchical_concatenate_*.cc``, ``all_reduce_ahc(_broke).cc``,
``reduce_scatter_ahc(_broke).cc``, ``all_gather_ahc(_broke).cc`` and AHC.md. The groups are the
servers (Atlas A2: HCCL_ALGO ``level0:NA;level1:AHC``) or, with several super pods, the super pods
(Atlas A3). With ``G`` groups of ``n_g`` ranks and ``L`` the least common multiple of the ``n_g``,
each group's region of the vector (its ranks' slices) is cut into ``L`` units; rank ``i`` of group
``g`` owns the units ``[i L / n_g, (i + 1) L / n_g)`` of every region (its *column*). For a run of
units the owners in every group are the same ranks: those are logically same-index, and run the
step between groups together.

* ReduceScatter: a ReduceScatter inside each group (a rank's slice: its column), then for every
  run of units a ReduceScatter between its owners, each owner keeping its own region's part;
* AllGather: the AllGather between owners first, then inside each group;
* AllReduce: ReduceScatter inside the groups, AllReduce between owners, AllGather inside.

Inside a group NHR runs; between groups the ring for three groups or fewer, NHR above
(``coll_alg_operator.cc``, ``AHCAlgOptionSelect``: ``AHC_LEVEL0_GROUP_SIZE_THRESHOLD``). HCCL picks
AHC_BROKE where every group has as many ranks (``AHCAlgSelect``); then the owners are simply the
ranks of one index, and the two run the same steps here.
"""
from __future__ import annotations

import math

from ...sim import current_sim as _sim
from .. import drive
from ..algorithm import Algorithm, Layout, Level, Op, layout_for
from ..segments import Group, concat, cut, shares, size, split
from . import nhr, ring

#: Groups joined by the ring at most (HCCL's AHC_LEVEL0_GROUP_SIZE_THRESHOLD), NHR above.
RING_GROUPS = 3


def groups_of(layout: Layout, family: str) -> list:
    """The groups AHC joins: the super pods (when there are several, off Atlas A2), else the servers."""
    if family != "A2" and len(layout.pods) > 1:
        return [tuple(r for s in pod for r in layout.servers[s]) for pod in layout.pods]
    return [tuple(s) for s in layout.servers]


class Plan:
    """One rank's view: its group, its index there, the units, the runs of same-index owners."""

    def __init__(self, groups, rank: int):
        self.groups = groups
        self.G = len(groups)
        self.L = math.lcm(*[len(g) for g in groups])
        self.gi = next(i for i, g in enumerate(groups) if rank in g)
        self.i = self.groups[self.gi].index(rank)

    def column(self, g: int, i: int) -> range:
        n = len(self.groups[g])
        return range(i * self.L // n, (i + 1) * self.L // n)

    def owner(self, g: int, u: int) -> int:
        """The rank of group ``g`` owning unit ``u``."""
        return self.groups[g][u * len(self.groups[g]) // self.L]

    def runs(self) -> list:
        """``(units, owners)`` of every run of units whose owners do not change, in unit order."""
        out = []
        for u in range(self.L):
            who = tuple(self.owner(g, u) for g in range(self.G))
            if out and out[-1][1] == who:
                out[-1] = (range(out[-1][0].start, u + 1), who)
            else:
                out.append((range(u, u + 1), who))
        return out


def _units(region, L: int, elem: int) -> list:
    """A region (a segment) cut into ``L`` units of whole elements."""
    return cut(region, [c * elem for c in shares(size(region) // elem, L)])


def _inter(plan: Plan):
    return ring if plan.G <= RING_GROUPS else nhr


def _plan(g):
    layout = layout_for(g.ctx)
    return Plan(groups_of(layout, _sim().runtime.product.family), g.ctx.rank)


def _region_units(plan: Plan, slices, elem: int) -> list:
    """Each group's region of the vector cut into ``L`` units: every rank's slice cut into the
    ``L / n_g`` units of its column (so a column is its owner's slice)."""
    out = []
    for grp in plan.groups:
        per = plan.L // len(grp)
        out.append([u for q in grp for u in _units(slices[q], per, elem)])
    return out


def _own_group(g, plan, units):
    """This rank's group and, for each of its ranks, the units of every region that rank's column
    holds (what the in-group NHR steps move)."""
    grp = Group(g.ctx, plan.groups[plan.gi])
    return grp, [concat(units[h][u] for h in range(plan.G) for u in plan.column(plan.gi, i))
                 for i in range(grp.nranks)]


def level_rs(g, slices, red, land):
    plan = _plan(g)
    units = _region_units(plan, slices, red.elem)
    grp, cols = _own_group(g, plan, units)
    if grp.nranks > 1:
        nhr.level_rs(grp, cols, red, land)
    inter = _inter(plan)
    for us, owners in plan.runs():
        if g.ctx.rank in owners and plan.G > 1:
            inter.level_rs(Group(g.ctx, owners), [concat(units[h][u] for u in us) for h in range(plan.G)], red, land)


def level_ag(g, slices, land, elem: int = 1):
    plan = _plan(g)
    units = _region_units(plan, slices, elem)
    inter = _inter(plan)
    for us, owners in plan.runs():
        if g.ctx.rank in owners and plan.G > 1:
            inter.level_ag(Group(g.ctx, owners), [concat(units[h][u] for u in us) for h in range(plan.G)], land)
    grp, cols = _own_group(g, plan, units)
    if grp.nranks > 1:
        nhr.level_ag(grp, cols, land)


def level_ar(g, s, red, land):
    plan = _plan(g)
    units = [_units(reg, plan.L, red.elem) for reg in split(s, plan.G, red.elem)]
    grp, cols = _own_group(g, plan, units)
    if grp.nranks > 1:
        nhr.level_rs(grp, cols, red, land)
    inter = _inter(plan)
    for us, owners in plan.runs():
        if g.ctx.rank in owners and plan.G > 1:
            inter.level_ar(Group(g.ctx, owners), concat(units[h][u] for h in range(plan.G) for u in us), red, land)
    if grp.nranks > 1:
        nhr.level_ag(grp, cols, land)


def _algorithm(name: str, summary: str) -> Algorithm:
    level = Level(name, rs=level_rs, ag=level_ag, ar=level_ar)
    return Algorithm(name, summary, drive.implementations(level, {Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_REDUCE_SCATTER,
                                                                 Op.HCCL_CMD_ALLREDUCE}), level=None)


AHC = _algorithm("ahc", "asymmetric hierarchical concatenate: groups of any sizes, steps between logically "
                 "same-index ranks (units of the groups' least common multiple)")
AHC_BROKE = _algorithm("ahc_broke", "AHC where every group has as many ranks (HCCL's choice for symmetric groups)")
