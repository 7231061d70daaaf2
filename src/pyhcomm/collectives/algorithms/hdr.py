"""H-D_R (recursive halving-doubling): ``log2 p`` steps for a power of two, a fold step around them
otherwise.

HCCL's ``recursive_halvingdoubling_base.cc`` and its templates (``reduce_scatter_recursive_hd.cc``,
``all_gather_recursive_hd.cc``, ``all_reduce_recursive_hd.cc``, ``bcast_recursive_halvingdoubling.cc``,
``reduce_recursive_hd.cc``), RHD.md. With ``2^k <= p < 2^(k+1)`` the first ``part1 = 2 (p - 2^k)``
ranks pair up (``2i``, ``2i + 1``) and one of each pair folds into the other, leaving a block of
``2^k`` ranks (block rank ``i`` for the pair ``i``, ``r - part1/2`` past part1):

* ReduceScatter: the odd rank of a pair sends its whole vector to the even one (reduced there);
  in the block, recursive halving at halving distance (step ``s`` exchanges with block rank ``b xor
  2^(k-1-s)`` the half of the block's slices that is the partner's), a pair's block rank owning its
  two slices; then the even rank sends the odd one its slice.
* AllGather: the odd rank sends its slice to the even one; recursive doubling in the block
  (``b xor 2^s``, the group held so far); the even rank sends the whole result to the odd one.
* AllReduce: fold (reduce), ReduceScatter and AllGather of ``2^k`` slices in the block, unfold
  (``(2 floor(log2 p) + 2) alpha`` for a rank count that is no power of two, RHD.md).
* Broadcast: the member of each pair with the root's parity joins the block; a binomial tree from
  the root's block rank (halving distance), then one send to each partner: ``ceil(log2 p) (alpha
  + n beta)``.
* Reduce: fold towards the member with the root's parity, ReduceScatter in the block, the slices
  gathered to the root's block rank by doubling distance (``(2 floor(log2 p) + 1) alpha``).
"""
from __future__ import annotations

from .. import drive
from ..algorithm import Algorithm, Level, Op
from ..segments import EMPTY, concat, exchange, idle, split


class Fold:
    """The fold of ``p`` ranks into a block of ``2^k``: ``part1`` ranks in pairs, of which the one
    with parity ``keep`` joins the block."""

    def __init__(self, p: int, keep: int = 0):
        self.k = p.bit_length() - 1
        self.block = 1 << self.k
        self.part1 = 2 * (p - self.block)
        self.keep = keep

    def block_rank(self, r: int):
        """The block rank of ``r`` (None: it folds into its partner)."""
        if r < self.part1:
            return r // 2 if r % 2 == self.keep else None
        return r - self.part1 // 2

    def rank(self, b: int) -> int:
        """The rank of block rank ``b``."""
        return 2 * b + self.keep if b < self.part1 // 2 else b + self.part1 // 2

    def partner(self, r: int):
        """The other rank of ``r``'s pair (None past part1)."""
        return (r ^ 1) if r < self.part1 else None

    def origins(self, b: int) -> list:
        """The ranks (slices) block rank ``b`` stands for, in order."""
        return [2 * b, 2 * b + 1] if b < self.part1 // 2 else [b + self.part1 // 2]


def _fold_in(g, t, f: Fold, s_send, s_recv, land, red=None):
    """A pair's member outside the block sends ``s_send`` to the one inside (``red``: reduced)."""
    r, mate = g.rank, f.partner(g.rank)
    if mate is None:
        if f.part1:                 # the pairs fold this step: sit it out
            idle(g, t)
        return
    if f.block_rank(r) is None:
        exchange(g, t, mate, None, s_send, EMPTY, land)
    else:
        exchange(g, t, None, mate, EMPTY, s_recv, land, red)


def _fold_out(g, t, f: Fold, s_send, s_recv, land):
    """The block member of a pair sends ``s_send`` to the other (which receives ``s_recv``)."""
    r, mate = g.rank, f.partner(g.rank)
    if mate is None:
        if f.part1:                 # the pairs fold this step: sit it out
            idle(g, t)
        return
    if f.block_rank(r) is not None:
        exchange(g, t, mate, None, s_send, EMPTY, land)
    else:
        exchange(g, t, None, mate, EMPTY, s_recv, land)


def _halving(g, t, f: Fold, b, block_slices, land, red):
    """Recursive halving in the block: block rank ``b`` ends with ``block_slices[b]`` reduced (a
    rank outside the block sits the steps out)."""
    if b is None:
        for _s in range(f.k):
            idle(g, t)
        return
    for s in range(f.k):
        mask = 1 << (f.k - 1 - s)
        peer = b ^ mask
        mine, theirs = b & ~(mask - 1), peer & ~(mask - 1)
        exchange(g, t, f.rank(peer), f.rank(peer), concat(block_slices[theirs:theirs + mask]),
                 concat(block_slices[mine:mine + mask]), land, red)


def _doubling(g, t, f: Fold, b, block_slices, land):
    """Recursive doubling in the block: every block rank ends with every block slice."""
    if b is None:
        for _s in range(f.k):
            idle(g, t)
        return
    for s in range(f.k):
        mask = 1 << s
        peer = b ^ mask
        mine, theirs = b & ~(mask - 1), peer & ~(mask - 1)
        exchange(g, t, f.rank(peer), f.rank(peer), concat(block_slices[mine:mine + mask]),
                 concat(block_slices[theirs:theirs + mask]), land)


def level_rs(g, slices, red, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    if p == 1:
        return
    f = Fold(p)
    everything = concat(slices)
    _fold_in(g, t, f, everything, everything, land, red)
    b = f.block_rank(r)
    _halving(g, t, f, b, [concat(slices[o] for o in f.origins(i)) for i in range(f.block)], land, red)
    mate = f.partner(r)
    _fold_out(g, t, f, slices[mate] if mate is not None else EMPTY, slices[r], land)


def level_ag(g, slices, land, t=None):
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    if p == 1:
        return
    f = Fold(p)
    _fold_in(g, t, f, slices[r], slices[f.partner(r)] if f.partner(r) is not None else EMPTY, land)
    b = f.block_rank(r)
    _doubling(g, t, f, b, [concat(slices[o] for o in f.origins(i)) for i in range(f.block)], land)
    everything = concat(slices)
    _fold_out(g, t, f, everything, everything, land)


def level_ar(g, s, red, land):
    p, r = g.nranks, g.rank
    if p == 1:
        return
    f, t = Fold(p), g.main
    _fold_in(g, t, f, s, s, land, red)
    b = f.block_rank(r)
    block_slices = split(s, f.block, red.elem)
    _halving(g, t, f, b, block_slices, land, red)
    _doubling(g, t, f, b, block_slices, land)
    _fold_out(g, t, f, s, s, land)


def level_bcast(g, s, root, land):
    p, r = g.nranks, g.rank
    if p == 1:
        return
    f = Fold(p, root % 2 if root < 2 * (p - (1 << (p.bit_length() - 1))) else 0)
    b, br = f.block_rank(r), f.block_rank(root)
    for j in range(f.k):
        mask = 1 << (f.k - 1 - j)
        rel = None if b is None else b ^ br
        if rel is not None and rel % (2 * mask) == 0:
            exchange(g, g.main, f.rank((rel + mask) ^ br), None, s, EMPTY, land)
        elif rel is not None and rel % (2 * mask) == mask:
            exchange(g, g.main, None, f.rank((rel - mask) ^ br), EMPTY, s, land)
        else:
            idle(g)
    _fold_out(g, g.main, f, s, s, land)


def level_reduce(g, s, root, red, land):
    p, r = g.nranks, g.rank
    if p == 1:
        return
    f, t = Fold(p, root % 2 if root < 2 * (p - (1 << (p.bit_length() - 1))) else 0), g.main
    _fold_in(g, t, f, s, s, land, red)
    b, br = f.block_rank(r), f.block_rank(root)
    block_slices = split(s, f.block, red.elem)
    _halving(g, t, f, b, block_slices, land, red)
    for j in range(f.k):                    # gather to the root's block rank by doubling distance
        mask = 1 << j
        if b is None or (b ^ br) & (mask - 1):
            idle(g)                         # outside the block, or already sent its group
            continue
        peer = b ^ mask
        if (b ^ br) & mask:
            lo = b & ~(mask - 1)
            exchange(g, t, f.rank(peer), None, concat(block_slices[lo:lo + mask]), EMPTY, land)
        else:
            lo = peer & ~(mask - 1)
            exchange(g, t, None, f.rank(peer), EMPTY, concat(block_slices[lo:lo + mask]), land)


LEVEL = Level("hdr", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, reduce=level_reduce)

HDR = Algorithm("hdr", "recursive halving-doubling (H-D_R): log2 p steps between pairs of ranks, a fold step "
                "for rank counts that are no power of two", drive.implementations(LEVEL, {Op.HCCL_CMD_ALLGATHER,
                Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_REDUCE}),
                level=LEVEL)
