"""NHR_V1: the ranks as a near-square grid, rings along its rows and columns (deprecated in HCCL).

HCCL's ``nonuniform_hierarchical_ring_v1_base.cc`` (``RingInfo``: the grid) and its templates
``reduce_scatter_nhr_v1.cc``, ``all_gather_nhr_v1.cc``, ``all_reduce_nhr_v1.cc``,
``broadcast_nhr_v1.cc``. The grid: ``p = rows x columns`` with the two as close as the search of
``RingInfo`` finds (their difference under 5); otherwise ``sqrt(p)`` columns, the first rows one
rank longer (an extra, shorter column) and, when needed, one more row. ``(v, h)``: row ``v``,
column ``h``.

* ReduceScatter: a ring in every column, its members' slices being their rows' slices (a rank of
  the extra column joins the column whose index is its row, with no slice of its own); a ring in
  every row over the full columns (the last member also holding the extra rank's slice); the
  extra rank gets its slice from its row's last full member.
* AllGather: those steps backwards.
* AllReduce: in every row a ring ReduceScatter of the vector cut among the full columns; in every
  full column a ring AllReduce of the column's slice; in every row a ring AllGather.
* Broadcast: a ring scatter along the root's row, a ring broadcast down every full column from
  that row, a ring AllGather in every row.

Cost (HCCL's description): about ``2 (sqrt(p) - 1)`` ring steps per ReduceScatter or AllGather.
"""
from __future__ import annotations

import math

from .. import drive
from ..algorithm import Algorithm, Level, Op
from ..segments import EMPTY, concat, exchange, idle, split
from . import ring

THRESHOLD = 5


class Grid:
    """HCCL's ``RingInfo`` of ``p`` ranks (see the module docstring)."""

    def __init__(self, p: int):
        self.p = p
        sq = self.sq = math.isqrt(p)
        left = right = sq
        while left > 0 and right < p:
            if left * right < p:
                right += 1
            elif left * right > p:
                left -= 1
            else:
                break
        if right - left < THRESHOLD:
            self.cols, self.rows, self.extra_rows, self.extra_cols = right, left, 0, 0
            self.offset = left * right
        else:
            extra = p - sq * sq
            self.extra_rows = sq if extra >= sq else 0
            self.extra_cols = extra - self.extra_rows
            self.rows, self.cols = sq + (0 if self.extra_rows == 0 else 1), sq
            self.offset = self.rows * self.cols if self.extra_cols == 0 else (sq + 1) * self.extra_cols

    def v(self, rank: int) -> int:
        if rank < self.offset:
            return rank // (self.cols + (0 if self.extra_cols == 0 else 1))
        return self.extra_cols + (rank - self.offset) // self.sq

    def h(self, rank: int) -> int:
        if rank < self.offset:
            return rank % (self.cols + (0 if self.extra_cols == 0 else 1))
        return (rank - self.offset) % self.sq

    def col_size(self, h: int) -> int:
        if self.offset == self.p:
            return self.rows
        if h == self.sq:
            return self.extra_cols
        return self.sq + (1 if h < self.extra_rows else 0)

    def row_size(self, v: int) -> int:
        if self.offset == self.p:
            return self.cols
        return self.sq + (1 if v < self.extra_cols else 0)

    def at(self, v: int, h: int) -> int:
        if self.offset == self.p:
            return v * self.cols + h
        if v < self.extra_cols:
            return (self.sq + 1) * v + h
        return self.offset + self.sq * (v - self.extra_cols) + h

    def row(self, v: int) -> list:
        return [self.at(v, h) for h in range(self.row_size(v))]

    def full(self, h: int) -> bool:
        """Whether column ``h`` is as long as the first."""
        return self.col_size(h) == self.col_size(0)

    def vertical(self, rank: int):
        """(members, index of ``rank``) of the column ring ReduceScatter / AllGather use."""
        v, h = self.v(rank), self.h(rank)
        ring_h = h if h < self.cols else v
        members = [self.at(i, ring_h) for i in range(self.col_size(ring_h))]
        if self.row_size(ring_h) > self.cols:
            members.append(self.at(ring_h, self.cols))
        return members, members.index(rank)


def _row_slices(gr: Grid, slices, v: int) -> list:
    """A row's ring slices over its full columns (the last full member also holds the extra one's)."""
    out = []
    for h in range(gr.cols):
        s = slices[gr.at(v, h)]
        if h == gr.cols - 1 and gr.row_size(v) > gr.cols:
            s = concat([s, slices[gr.at(v, gr.cols)]])
        out.append(s)
    return out


def _extra_copy(g, gr: Grid, slices, land, send_to_extra: bool) -> None:
    """The slice of a row's extra rank between it and the row's last full member (a step the others
    sit out, when some row has an extra rank)."""
    r = g.rank
    v, h = gr.v(r), gr.h(r)
    if gr.row_size(v) <= gr.cols or h < gr.cols - 1:
        if any(gr.row_size(x) > gr.cols for x in range(gr.rows)):
            idle(g)
        return
    full, extra = gr.at(v, gr.cols - 1), gr.at(v, gr.cols)
    mine = slices[extra]
    if (r == full) == send_to_extra:
        exchange(g, g.main, extra if r == full else full, None, mine, EMPTY, land)
    else:
        exchange(g, g.main, None, extra if r == full else full, EMPTY, mine, land)


def _ring(g, members, run, steps_of, most: int) -> None:
    """``run(subgroup)`` on the ring of ``members`` (when it has two or more), then idle steps up to
    ``most``: every rank takes as many steps per phase (the ranks' steps line up)."""
    done = 0
    if len(members) > 1:
        run(g.sub(members))
        done = steps_of(len(members))
    for _i in range(most - done):
        idle(g)


def _line(n: int) -> int:
    return n - 1


def _chain(n: int) -> int:
    return 2 * n - 2


def level_rs(g, slices, red, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    members, _i = gr.vertical(r)
    blocks = [concat(slices[q] for q in gr.row(gr.v(m))) if gr.h(m) < gr.cols else EMPTY for m in members]
    tallest = max(len(gr.vertical(q)[0]) for q in range(g.nranks))
    _ring(g, members, lambda sub: ring.level_rs(sub, blocks, red, land), _line, tallest - 1)
    v = gr.v(r)
    row = gr.row(v)[:gr.cols] if gr.h(r) < gr.cols else []
    _ring(g, row, lambda sub: ring.level_rs(sub, _row_slices(gr, slices, v), red, land), _line, gr.cols - 1)
    _extra_copy(g, gr, slices, land, send_to_extra=True)


def level_ag(g, slices, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    _extra_copy(g, gr, slices, land, send_to_extra=False)
    v = gr.v(r)
    row = gr.row(v)[:gr.cols] if gr.h(r) < gr.cols else []
    _ring(g, row, lambda sub: ring.level_ag(sub, _row_slices(gr, slices, v), land), _line, gr.cols - 1)
    members, _i = gr.vertical(r)
    blocks = [concat(slices[q] for q in gr.row(gr.v(m))) if gr.h(m) < gr.cols else EMPTY for m in members]
    tallest = max(len(gr.vertical(q)[0]) for q in range(g.nranks))
    _ring(g, members, lambda sub: ring.level_ag(sub, blocks, land), _line, tallest - 1)


def _row_cut(gr: Grid, s, v: int, elem: int) -> list:
    """The vector cut among a row's members: the full columns share it, the others get nothing."""
    full = [h for h in range(gr.row_size(v)) if gr.full(h)]
    parts = iter(split(s, len(full), elem))
    return [next(parts) if h in full else EMPTY for h in range(gr.row_size(v))]


def level_ar(g, s, red, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    v, h = gr.v(r), gr.h(r)
    row = gr.row(v)
    widest = max(gr.row_size(x) for x in range(gr.rows))
    cut = _row_cut(gr, s, v, red.elem)
    _ring(g, row, lambda sub: ring.level_rs(sub, cut, red, land), _line, widest - 1)
    col = [gr.at(i, h) for i in range(gr.col_size(h))] if gr.full(h) else []
    _ring(g, col, lambda sub: ring.level_ar(sub, cut[h], red, land), _chain, 2 * gr.col_size(0) - 2)
    _ring(g, row, lambda sub: ring.level_ag(sub, cut, land), _line, widest - 1)


def level_bcast(g, s, root, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    v, h, rv = gr.v(r), gr.h(r), gr.v(root)
    row = gr.row(v)
    widest = max(gr.row_size(x) for x in range(gr.rows))
    cut = _row_cut(gr, s, v, 1)
    _ring(g, row if v == rv else [], lambda sub: ring.level_scatter(sub, cut, row.index(root), land), _line,
          gr.row_size(rv) - 1)
    col = [gr.at(i, h) for i in range(gr.col_size(h))] if gr.full(h) else []
    _ring(g, col, lambda sub: ring.level_bcast(sub, cut[h], rv, land), _chain, 2 * gr.col_size(0) - 2)
    _ring(g, row, lambda sub: ring.level_ag(sub, cut, land), _line, widest - 1)


LEVEL = Level("nhr_v1", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast)

NHR_V1 = Algorithm("nhr_v1", "the ranks as a near-square grid: rings along the columns and the rows (HCCL's "
                   "deprecated NHR_V1)", drive.implementations(LEVEL, {Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_REDUCE_SCATTER,
                                                                       Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_BROADCAST}),
                   level=LEVEL)
