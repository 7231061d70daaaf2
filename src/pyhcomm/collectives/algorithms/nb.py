"""NB (nonuniform Bruck): ``ceil(log2 p)`` steps for any rank count, slices sent one by one.

HCCL's ``nonuniform_bruck_base.cc`` and its templates (``reduce_scatter_nb.cc``,
``all_gather_nb.cc``, ``all_reduce_nb.cc``, ``scatter_nb.cc``, ``broadcast_nb.cc``):

* ReduceScatter, step ``k`` (``d = 2^k``): send to ``r + d`` the partials of slices ``r + d +
  2d i``, receive from ``r - d`` those of slices ``r + 2d i`` and reduce them, ``i < floor((p - 1 +
  d) / 2d)`` (NB.md: step ``k`` sends ``floor((p-1+2^k)/2^(k+1))`` slices to distance ``2^k``).
* AllGather (Bruck): step ``k`` sends the ``2^k`` slices ``r, r-1, ...`` this rank holds to ``r + d``
  and receives ``r - d, r - d - 1, ...``; the last step of a rank count that is no power of two
  moves the ``p - 2^k`` that are left.
* AllReduce: ReduceScatter then AllGather. Scatter: at step ``k`` the ranks within ``2^k`` of the
  root send to ``r + 2^k`` the slices of the ranks that rank serves next. Broadcast: Scatter then
  AllGather.

Each slice is its own transfer (HCCL's NB does not merge them). Cost (NB.md): as NHR's,
``ceil(log2 p) alpha + (p-1)/p n beta`` per ReduceScatter, AllGather or Scatter.
"""
from __future__ import annotations

from .. import drive
from ..algorithm import Algorithm, Level
from ..segments import EMPTY, concat, exchange, idle, split
from .nhr import steps


def level_rs(g, slices, red, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    for k in range(steps(p)):
        d = 1 << k
        n = (p - 1 + d) // (2 * d)
        exchange(g, t, (r + d) % p, (r - d) % p, concat(slices[(r + d + 2 * d * i) % p] for i in range(n)),
                 concat(slices[(r + 2 * d * i) % p] for i in range(n)), land, red, merge=False)


def level_ag(g, slices, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    last = steps(p) - 1
    for k in range(last + 1):
        d = 1 << k
        n = p - d if k == last else d
        exchange(g, t, (r + d) % p, (r - d) % p, concat(slices[(r - i) % p] for i in range(n)),
                 concat(slices[(r - d - i) % p] for i in range(n)), land, merge=False)


def level_ar(g, s, red, land):
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_ag(g, slices, land)


def level_scatter(g, slices, root, land):
    """Distance doubling from the root: at step ``k`` a rank ``x < 2^k`` from the root sends the
    rank ``x + 2^k`` from it the slices of the ranks congruent to ``x + 2^k`` modulo ``2^(k+1)``."""
    p, r = g.nranks, g.rank
    x = (r - root) % p
    for k in range(steps(p)):
        d = 1 << k
        if x < d and x + d < p:
            exchange(g, g.main, (r + d) % p, None,
                     concat(slices[(root + y) % p] for y in range(x + d, p, 2 * d)), EMPTY, land, merge=False)
        elif d <= x < 2 * d:
            exchange(g, g.main, None, (r - d) % p, EMPTY,
                     concat(slices[(root + y) % p] for y in range(x, p, 2 * d)), land, merge=False)
        else:
            idle(g)


def level_bcast(g, s, root, land):
    slices = split(s, g.nranks)
    level_scatter(g, slices, root, land)
    level_ag(g, slices, land)


LEVEL = Level("nb", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, scatter=level_scatter)

NB = Algorithm("nb", "nonuniform Bruck: ceil(log2 p) steps for any p, distance doubling, slice by slice",
               drive.implementations(LEVEL), level=LEVEL)
