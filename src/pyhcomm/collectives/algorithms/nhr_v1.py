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
from ..algorithm import Algorithm, Level
from ..segments import EMPTY, concat, exchange, split
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


def grid_peers(rank: int, nranks: int) -> list:
    gr = Grid(nranks)
    out = set()
    members, _i = gr.vertical(rank)
    row = gr.row(gr.v(rank))
    col = [gr.at(i, gr.h(rank)) for i in range(gr.col_size(gr.h(rank)))] if gr.h(rank) < len(row) else []
    for ring_members in (members, row, row[:gr.cols], col):
        if rank in ring_members:
            i, n = ring_members.index(rank), len(ring_members)
            out |= {ring_members[(i - 1) % n], ring_members[(i + 1) % n]}
    return sorted(out - {rank})


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
    """The slice of a row's extra rank between it and the row's last full member."""
    r = g.rank
    v, h = gr.v(r), gr.h(r)
    if gr.row_size(v) <= gr.cols or h < gr.cols - 1:
        return
    full, extra = gr.at(v, gr.cols - 1), gr.at(v, gr.cols)
    mine = slices[extra]
    if (r == full) == send_to_extra:
        exchange(g, g.main, extra if r == full else full, None, mine, EMPTY, land)
    else:
        exchange(g, g.main, None, extra if r == full else full, EMPTY, mine, land)


def level_rs(g, slices, red, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    members, _i = gr.vertical(r)
    if len(members) > 1:
        blocks = [concat(slices[q] for q in gr.row(gr.v(m))) if gr.h(m) < gr.cols else EMPTY for m in members]
        ring.level_rs(g.sub(members), blocks, red, land)
    v = gr.v(r)
    if gr.h(r) < gr.cols and gr.cols > 1:
        ring.level_rs(g.sub(gr.row(v)[:gr.cols]), _row_slices(gr, slices, v), red, land)
    _extra_copy(g, gr, slices, land, send_to_extra=True)


def level_ag(g, slices, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    _extra_copy(g, gr, slices, land, send_to_extra=False)
    v = gr.v(r)
    if gr.h(r) < gr.cols and gr.cols > 1:
        ring.level_ag(g.sub(gr.row(v)[:gr.cols]), _row_slices(gr, slices, v), land)
    members, _i = gr.vertical(r)
    if len(members) > 1:
        blocks = [concat(slices[q] for q in gr.row(gr.v(m))) if gr.h(m) < gr.cols else EMPTY for m in members]
        ring.level_ag(g.sub(members), blocks, land)


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
    cut = _row_cut(gr, s, v, red.elem)
    if len(row) > 1:
        ring.level_rs(g.sub(row), cut, red, land)
    if gr.full(h) and gr.col_size(h) > 1:
        ring.level_ar(g.sub([gr.at(i, h) for i in range(gr.col_size(h))]), cut[h], red, land)
    if len(row) > 1:
        ring.level_ag(g.sub(row), cut, land)


def level_bcast(g, s, root, land):
    gr, r = Grid(g.nranks), g.rank
    if g.nranks == 1:
        return
    v, h, rv = gr.v(r), gr.h(r), gr.v(root)
    row = gr.row(v)
    cut = _row_cut(gr, s, v, 1)
    if v == rv and len(row) > 1:
        ring.level_scatter(g.sub(row), cut, row.index(root), land)
    if gr.full(h) and gr.col_size(h) > 1:
        col = [gr.at(i, h) for i in range(gr.col_size(h))]
        ring.level_bcast(g.sub(col), cut[h], rv, land)
    if len(row) > 1:
        ring.level_ag(g.sub(row), cut, land)


LEVEL = Level("nhr_v1", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, peers=grid_peers)

NHR_V1 = Algorithm("nhr_v1", "the ranks as a near-square grid: rings along the columns and the rows (HCCL's "
                   "deprecated NHR_V1)", drive.implementations(LEVEL), level=LEVEL)
