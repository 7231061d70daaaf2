"""NHR (nonuniform hierarchical ring): ``ceil(log2 p)`` steps for any rank count.

HCCL's ``nonuniform_hierarchical_ring_base.cc`` and its templates (``reduce_scatter_nhr.cc``,
``all_gather_nhr.cc``, ``all_reduce_nhr(_oneshot).cc``, ``broadcast_nhr(_oneshot).cc``,
``scatter_nhr.cc``, ``reduce_nhr_oneshot.cc``):

* ReduceScatter, step ``s`` (``d = 2^s``): send to ``r - d`` the partials of slices ``r - d -
  2d i``, receive from ``r + d`` those of slices ``r - 2d i`` and reduce them, ``i <
  floor((p - 1 + d) / 2d)``: the first step moves about half the vector, each next one half as
  much, ``(p-1)/p n`` in all.
* AllGather: the same steps backwards (``d = 2^(steps-1-s)``, towards ``r + d``).
* AllReduce: ReduceScatter then AllGather, the slices renumbered (HCCL's ``GetRankMapping``) so
  that the slices of one step are adjacent and move in one transfer; at most 256 KiB
  (``NHR_ALLREDUCE_SMALL_SIZE``, ``op_context.h``) the one-shot form: the whole vector reduced up
  a binomial tree to rank 0 and broadcast down it (``2 ceil(log2 p)`` steps of ``n``).
* Broadcast: at most 2 MiB (``NHR_BCAST_SMALL_SIZE``) the binomial tree from the root in one
  shot; above, Scatter then AllGather of the renumbered slices.
* Scatter: the binomial tree from the root, each hop carrying the slices of the receiver's subtree;
  Gather the same tree backwards. Reduce (Atlas 350's ``AicpuReduceSoleNHR``): at most 256 KiB
  the one-shot tree to the root, above ReduceScatter then Gather.

Cost (HCCL's NHR.md): ReduceScatter / AllGather / Scatter ``ceil(log2 p) alpha + (p-1)/p n beta``
(+ ``(p-1)/p n gamma`` to reduce); AllReduce and Broadcast twice that; the one-shot forms
``ceil(log2 p) (alpha + n beta)`` per tree.
"""
from __future__ import annotations

from .. import drive
from ..algorithm import Algorithm, Level
from ..segments import EMPTY, exchange, idle, pack, size, split

ONESHOT_ALLREDUCE = 256 << 10
ONESHOT_BROADCAST = 2 << 20


def steps(p: int) -> int:
    """``ceil(log2 p)``."""
    return (p - 1).bit_length()


def slice_map(p: int) -> list:
    """HCCL's renumbering of the slices for AllReduce and Broadcast (``GetRankMapping``): logical
    slice ``i`` is physical slice ``slice_map(p)[i]``; the slices a step moves become adjacent."""
    tree, length = list(range(p)), p
    for step in range(steps(p)):
        if (p - 1 + (1 << step)) // (1 << (step + 1)) <= 1:
            break
        tmp, odd = list(tree), False
        for start in range(0, p, length):
            end = min(start + length, p)
            for i in range(start, end):
                off = i - start
                tmp[start + (off // 2 if off % 2 == 0 else (off + length) // 2)] = tree[i]
            odd = odd or (end - start) % 2 == 1
        tree = tmp
        if odd:
            break
        length >>= 1
    out = [0] * p
    for i, t in enumerate(tree):
        out[t] = i
    return out


def level_rs(g, slices, red, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    for s in range(steps(p)):
        d = 1 << s
        n = (p - 1 + d) // (2 * d)
        to, frm = (r - d) % p, (r + d) % p
        exchange(g, t, to, frm, pack(slices, [(to - 2 * d * i) % p for i in range(n)]),
                 pack(slices, [(r - 2 * d * i) % p for i in range(n)]), land, red)


def level_ag(g, slices, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    k = steps(p)
    for s in range(k):
        d = 1 << (k - 1 - s)
        n = (p - 1 + d) // (2 * d)
        to, frm = (r + d) % p, (r - d) % p
        exchange(g, t, to, frm, pack(slices, [(r - 2 * d * i) % p for i in range(n)]),
                 pack(slices, [(r - d - 2 * d * i) % p for i in range(n)]), land)


def tree_reduce(g, s, root, red, land):
    """The whole ``s`` reduced up the binomial tree to ``root`` (HCCL's one-shot reduce): at step
    ``j`` the ranks ``2^j`` past a multiple of ``2^(j+1)`` (from the root) send to the rank ``2^j``
    before them."""
    p, r = g.nranks, g.rank
    k = (r - root) % p
    for j in range(steps(p)):
        pair, group = 1 << j, 1 << (j + 1)
        active = k // group < (p - 1 + pair) // group
        if active and (k + pair) % group == 0:
            exchange(g, g.main, (r - pair) % p, None, s, EMPTY, land)
        elif active and k % group == 0:
            exchange(g, g.main, None, (r + pair) % p, EMPTY, s, land, red)
        else:
            idle(g)


def tree_bcast(g, s, root, land):
    """The whole ``s`` down the binomial tree from ``root`` (HCCL's one-shot broadcast)."""
    p, r = g.nranks, g.rank
    k, n = (r - root) % p, steps(p)
    for j in range(n):
        pair = 1 << (n - 1 - j)
        group = 2 * pair
        active = k // group < (p - 1 + pair) // group
        if active and k % group == 0:
            exchange(g, g.main, (r + pair) % p, None, s, EMPTY, land)
        elif active and (k + pair) % group == 0:
            exchange(g, g.main, None, (r - pair) % p, EMPTY, s, land)
        else:
            idle(g)


def level_scatter(g, slices, root, land):
    """The binomial tree from the root: at step ``j`` a rank at a multiple of ``2 pair`` from the
    root sends the rank ``pair`` after it the slices of that rank's subtree."""
    p, r = g.nranks, g.rank
    k, n = (r - root) % p, steps(p)
    for j in range(n):
        pair = 1 << (n - 1 - j)
        group = 2 * pair
        if k % group == 0 and k + pair < p:
            exchange(g, g.main, (r + pair) % p, None,
                     pack(slices, [(root + x) % p for x in range(k + pair, min(k + group, p))]), EMPTY, land)
        elif k % group == pair:
            exchange(g, g.main, None, (r - pair) % p, EMPTY,
                     pack(slices, [(root + x) % p for x in range(k, min(k + pair, p))]), land)
        else:
            idle(g)


def level_gather(g, slices, root, land):
    """The scatter's tree backwards: each rank sends its subtree's slices to its parent."""
    p, r = g.nranks, g.rank
    k, n = (r - root) % p, steps(p)
    for j in reversed(range(n)):
        pair = 1 << (n - 1 - j)
        group = 2 * pair
        if k % group == pair:
            exchange(g, g.main, (r - pair) % p, None,
                     pack(slices, [(root + x) % p for x in range(k, min(k + pair, p))]), EMPTY, land)
        elif k % group == 0 and k + pair < p:
            exchange(g, g.main, None, (r + pair) % p, EMPTY,
                     pack(slices, [(root + x) % p for x in range(k + pair, min(k + group, p))]), land)
        else:
            idle(g)


def level_reduce(g, s, root, red, land):
    """At most 256 KiB: the whole vector up the binomial tree (HCCL's reduce_nhr_oneshot.cc); above,
    ReduceScatter then the slices gathered to the root up the scatter's tree."""
    if g.nranks == 1:
        return
    if size(s) <= ONESHOT_ALLREDUCE:
        tree_reduce(g, s, root, red, land)
        return
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_gather(g, slices, root, land)


def level_ar(g, s, red, land):
    if g.nranks == 1:
        return
    if size(s) <= ONESHOT_ALLREDUCE:
        tree_reduce(g, s, 0, red, land)
        tree_bcast(g, s, 0, land)
        return
    slices = split(s, g.nranks, red.elem)
    logical = [slices[m] for m in slice_map(g.nranks)]
    level_rs(g, logical, red, land)
    level_ag(g, logical, land)


def level_bcast(g, s, root, land):
    if g.nranks == 1:
        return
    if size(s) <= ONESHOT_BROADCAST:
        tree_bcast(g, s, root, land)
        return
    slices = split(s, g.nranks)
    logical = [slices[m] for m in slice_map(g.nranks)]
    # the scatter's root holds logical slice `root` of its own; every rank ends with its own
    level_scatter(g, logical, root, land)
    level_ag(g, logical, land)


LEVEL = Level("nhr", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, scatter=level_scatter,
              gather=level_gather, reduce=level_reduce)

NHR = Algorithm("nhr", "nonuniform hierarchical ring: ceil(log2 p) steps for any p, halving the data each step "
                "(one-shot trees for small AllReduce and Broadcast)", drive.implementations(LEVEL), level=LEVEL)
