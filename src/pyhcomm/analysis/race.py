"""Race detection over the happens-before graph: vector clocks, FastTrack-style shadow memory.

Every entry that executed belongs to a *chain*, a sequence of entries the graph orders one after
the other: a stream (its tasks), a program (its host effects), or NBI transfers (each completes
at a fence, not in program order: one chain per transfer not yet fenced, reused by a transfer
posted after the fence, so there are as many NBI chains as transfers in flight at once). Walking
the executed entries in execution order (a topological order of the graph), each chain keeps a
vector clock: one counter per chain, joined with the clock of every predecessor on another chain.
``a`` happens before ``b`` exactly when ``b``'s clock has reached ``a``'s position on ``a``'s
chain. A join with a predecessor the chain already knows (its clock has reached it) is skipped:
it knew what the predecessor knew (the epoch test of FastTrack).

A wait that consumed several records coalesced into one bit (a lost record) is ordered after the
first of them only: in another schedule it runs right after that one, before the others, so
what they order in this run is not ordered for sure (and the races that follow are reported with
the lost record).

Shadow memory (per byte range, FastTrack): the last write and the reads since it, as entries.
An access is checked against them: a write against the last write and every read since, a read
against the last write; a pair that is not ordered is a race (write/write, read/write or
write/read). Ranges are kept per 4 MiB bucket of the address space, split where accesses
overlap partly; device memory is one address space (device addresses are unique), host memory
one space per host allocation (host addresses are reused by new arrays).

What each entry accesses: what its kind says (``Kind.spans``: its ``reads`` and ``writes``,
docs/record.md); a one-sided transfer touches the peer's memory, which is how a race across ranks
shows. Entries that did not run
(skipped, pending, failed waits) accessed nothing.

Clocks are numpy arrays shared between chains until one of them joins (copy on write), so a clock
is copied only where a chain synchronises. A chain's clock changes only at its *joins* (entries
with a predecessor on another chain that the chain does not know yet), so what can be known
before the walk is worked out with numpy first (:class:`_Plan`): every entry's position on its
chain, the edges worth joining, the joins, and the *segment* of every entry (the last join of its
chain at or before it, whose clock it has). The walk then visits only the joins and the entries
that touch memory (in a ring AllGather, the notify records are neither: a third of the entries);
a join's clock is kept while entries of its segment have successors on other chains still to
read it, and the notify checks' queries about the entries of a segment are answered where its
clock is made.
"""
from __future__ import annotations

import bisect

import numpy as np

from ..sim.kinds import Unit, engine_name
from ..sim.record import decode
from .findings import RACE, Describer, Finding
from .graph import CODE, CODE_MASK, NOTIFY, SHIFT
from .keysort import stable_argsort

_BUCKET = 22            # 4 MiB buckets of the shadow memory
_NONE = np.zeros(0, dtype=np.int64)
_NOTIFY_CODE = CODE[NOTIFY]
_WW, _RW, _WR = "write/write", "read/write", "write/read"


def _accesses(kind) -> bool:
    return kind.accesses


def never_ran(graph) -> list:
    """The indices of the tasks that never ran and were not behind a failure of their stream:
    still queued when the record was read, or dropped with their stream; in issue order."""
    entries = graph.entries
    x = np.array(graph.record.xlog, dtype=np.int64)
    bad = x[x <= 0]
    failed: set = set()
    late = []
    if len(bad):
        seqs, whats = zip(*map(decode, bad.tolist()))
        for i, what in zip(graph.locate(np.array(seqs, dtype=np.int64)).tolist(), whats):
            if i < 0 or entries[i].entry != "task":
                continue
            h = entries[i].stream.handle
            if what == "failed":
                failed.add(h)
            elif h not in failed:
                late.append(i)
    pending = graph.locate(np.array([t.seq for t in graph.record.pending()], dtype=np.int64))
    late += pending[pending >= 0].tolist()
    late.sort()
    return late


class _Shadow:
    """Per byte range: ``[lo, hi, last write (entry index) or None, {chain: index of its last read} or None]``."""

    def __init__(self):
        self.buckets: dict = {}     # (space, bucket) -> (starts, cells) sorted by start
        self.exact: dict = {}       # (space, lo, hi) -> cell, for the ranges accessed whole

    def _split(self, space, starts, cells, k, at):
        """Cut cell ``k`` of a bucket at ``at`` (both parts keep its history); returns the back part."""
        cell = cells[k]
        back = [at, cell[1], cell[2], dict(cell[3]) if cell[3] else None]
        exact = self.exact
        del exact[(space, cell[0], cell[1])]
        cell[1] = at
        exact[(space, cell[0], at)] = cell
        exact[(space, at, back[1])] = back
        starts.insert(k + 1, at)
        cells.insert(k + 1, back)
        return back

    def cells(self, space, lo, hi):
        """The cells covering ``[lo, hi)``, split and created as needed, in address order."""
        exact = self.exact
        cell = exact.get((space, lo, hi))
        if cell is not None:
            return (cell,)
        b = lo >> _BUCKET
        if (hi - 1) >> _BUCKET == b:     # within one bucket, and touching no cell yet: a new one
            found = self.buckets.get((space, b))
            if found is None:
                found = self.buckets[(space, b)] = ([], [])
            starts, cells = found
            k = bisect.bisect_right(starts, lo)
            if (k == 0 or cells[k - 1][1] <= lo) and (k == len(cells) or starts[k] >= hi):
                cell = [lo, hi, None, None]
                starts.insert(k, lo)
                cells.insert(k, cell)
                exact[(space, lo, hi)] = cell
                return (cell,)
        out = []
        for b in range(lo >> _BUCKET, ((hi - 1) >> _BUCKET) + 1):
            blo, bhi = max(lo, b << _BUCKET), min(hi, (b + 1) << _BUCKET)
            starts, cells = self.buckets.setdefault((space, b), ([], []))
            k = bisect.bisect_right(starts, blo) - 1
            if k < 0 or cells[k][1] <= blo:
                k += 1
            cur = blo
            while cur < bhi:
                if k < len(cells) and cells[k][0] < bhi:
                    cell = cells[k]
                    if cell[0] > cur:                       # a gap before it
                        new = [cur, cell[0], None, None]
                        starts.insert(k, cur)
                        cells.insert(k, new)
                        exact[(space, cur, cell[0])] = new
                        out.append(new)
                        cur = cell[0]
                        k += 1
                        continue
                    if cell[0] < cur:                       # starts before: keep its front apart
                        cell = self._split(space, starts, cells, k, cur)
                        k += 1
                    if cell[1] > bhi:                       # ends after: keep its back apart
                        self._split(space, starts, cells, k, bhi)
                    out.append(cell)
                    cur = cell[1]
                    k += 1
                else:                                       # nothing there yet
                    new = [cur, bhi, None, None]
                    starts.insert(k, cur)
                    cells.insert(k, new)
                    exact[(space, cur, bhi)] = new
                    out.append(new)
                    cur = bhi
                    k += 1
        return out


class _Plan:
    """What the walk needs, worked out with numpy before it.

    * ``pos``: per entry, its position on its chain (1, 2, ... in execution order; 0: not walked);
      ``at``: per chain, its last position.
    * The edges a walk must join, ``edge_*`` (chain, position, segment and kind of the predecessor),
      grouped by successor in execution order: edges from another chain whose predecessor was
      walked first, less the records coalesced into the one a wait consumed first (another
      schedule runs the wait before them) and less the edges an earlier entry of the chain
      already joined from further on the same chain (its clock knows them: a program's tasks
      after the first, all issued after one host call).
    * The entries with such edges are *joins*: a chain's clock changes only there, so every entry
      has the clock of the last join of its chain at or before it, its *segment* (-1: none yet,
      the zero clock). ``seg_readers``: per join, the edges from its segment.
    * The entries the walk visits (``visit``): joins, entries that access memory, entries with a
      ``before`` query; the others (most notify records) only have a position.
    * The queries, answered where the clock they ask about is made: the ``after`` ones (``ask_*``,
      grouped by the join whose segment the entry asked about is in; ``visit_asks``), the
      ``before`` ones per entry (its clock without its notify edges).
    """

    def __init__(self, g, order, late, queries):
        n = len(g)
        chain = self._chain = g.chains()
        self.nch = int(chain.max()) + 1 if n else 0
        o = self._o = np.asarray(order, dtype=np.int64)
        m = self._m = len(o)
        oidx = self._oidx = np.full(n, m, dtype=np.int64)    # per entry: its place in the walk (m: not walked)
        oidx[o] = np.arange(m, dtype=np.int64)
        ent, start = self._positions(n)
        k, kind, ed, es = self._edges(g)
        is_join = np.zeros(n, dtype=bool)
        is_join[ed] = True
        seg = self._segments(n, ent, start, is_join)
        eseg = seg[es]
        joins_read, read = np.unique(eseg[eseg >= 0], return_counts=True)
        self.seg_readers = dict(zip(joins_read.tolist(), read.tolist()))
        self.edge_chain, self.edge_pos = chain[es].tolist(), self.pos[es].tolist()
        self.edge_seg, self.edge_kind = eseg.tolist(), kind[k].tolist()
        j = self._queries(queries, seg)
        self._visits(g, is_join, ed, j)
        # the last task of each (program, stream chain), as a dict in order of first appearance
        walked_task = ~g.columns.is_host[o]
        if len(late):
            walked_task[np.isin(o, np.asarray(late, dtype=np.int64))] = False
        self._tasks = o[walked_task]
        self._program = g.columns.program

    def _positions(self, n) -> tuple:
        """Every walked entry's position on its chain, each chain's last; returns the walk's entries
        grouped by chain and, per one, where its chain starts in that grouping."""
        o, m, chain = self._o, self._m, self._chain
        # the walk's entries grouped by chain (stable: in execution order within one)
        ent = o[stable_argsort(chain[o])]
        sch = chain[ent]
        first = np.flatnonzero(np.r_[True, sch[1:] != sch[:-1]]) if m else np.zeros(0, dtype=np.int64)
        counts = np.diff(np.r_[first, m]).astype(np.int64)
        start = np.repeat(first, counts)
        pos = self.pos = np.zeros(n, dtype=np.int64)
        pos[ent] = np.arange(m, dtype=np.int64) - start + 1
        at = np.zeros(self.nch, dtype=np.int64)
        at[sch[first]] = counts
        self.at = at.tolist()
        return ent, start

    def _edges(self, g) -> tuple:
        """The edges to join, in walk order of their successor: ``(edge indices, edge kinds,
        successors, predecessors)``."""
        chain, oidx, m, pos = self._chain, self._oidx, self._m, self.pos
        ptr, codes = g.pred_csr()
        dst = np.repeat(np.arange(len(g), dtype=np.int64), np.diff(ptr))
        src = codes >> SHIFT
        kind = codes & CODE_MASK
        keep = (chain[src] != chain[dst]) & (oidx[src] < oidx[dst]) & (oidx[dst] < m)
        for i, lost in g.coalesced.items():
            for k in range(int(ptr[i]), int(ptr[i + 1])):
                if kind[k] == _NOTIFY_CODE and int(src[k]) in lost:
                    keep[k] = False
        k = np.flatnonzero(keep)
        d, s = dst[k], src[k]
        by = np.lexsort((pos[s], pos[d], chain[s], chain[d]))
        k, d, s = k[by], d[by], s[by]
        if len(k):
            dc, sc, pd, ps = chain[d], chain[s], pos[d], pos[s]
            group = np.r_[True, (dc[1:] != dc[:-1]) | (sc[1:] != sc[:-1])]
            gid = np.cumsum(group) - 1
            big = int(ps.max()) + 1
            known = np.maximum.accumulate(ps + gid * big) - gid * big     # running max within the group
            run = group | np.r_[True, pd[1:] != pd[:-1]]
            run_first = np.maximum.accumulate(np.where(run, np.arange(len(k)), 0))
            cover = np.where(group[run_first], 0, known[np.maximum(run_first - 1, 0)])
            k = k[ps > cover]       # what earlier entries of the chain joined, from further on: known
        k = k[np.argsort(oidx[dst[k]], kind="stable")]
        return k, kind, dst[k], src[k]

    def _segments(self, n, ent, start, is_join) -> np.ndarray:
        """Per entry, the last join of its chain at or before it (-1: none)."""
        m = self._m
        mark = np.where(is_join[ent], np.arange(m, dtype=np.int64), -1)
        filled = np.maximum.accumulate(mark) if m else mark
        filled = np.where(filled >= start, filled, -1)
        seg = np.full(n, -1, dtype=np.int64)
        seg[ent] = np.where(filled >= 0, ent[np.maximum(filled, 0)], -1)
        return seg

    def _queries(self, queries, seg) -> np.ndarray:
        """The ``before`` queries per entry, the ``after`` ones grouped by the join whose segment
        the entry asked about is in (returns those joins, in walk order)."""
        chain, oidx, m, pos = self._chain, self._oidx, self._m, self.pos
        # (a, b) pairs asked about b; a walked after b is not before it
        (ba, bb), (aa, ab) = queries
        mine = (oidx[bb] < m) & (chain[ba] != chain[bb]) & (oidx[ba] < oidx[bb])
        self.before = {}
        for a, b in zip(ba[mine].tolist(), bb[mine].tolist()):
            self.before.setdefault(b, []).append((int(chain[a]), a))
        mine = (oidx[ab] < m) & (chain[aa] != chain[ab]) & (oidx[aa] < oidx[ab])
        aa, ab = aa[mine], ab[mine]
        j = seg[ab]
        start = j < 0                   # the zero clock: nothing is ordered before them
        self._at_start = list(zip(aa[start].tolist(), ab[start].tolist()))
        aa, ab, j = aa[~start], ab[~start], j[~start]
        by = np.argsort(oidx[j], kind="stable")
        aa, ab, j = aa[by], ab[by], j[by]
        self.ask_chain, self.ask_pos = chain[aa].tolist(), pos[aa].tolist()
        self.ask_a, self.ask_b = aa.tolist(), ab.tolist()
        return j

    def _visits(self, g, is_join, ed, j) -> None:
        """The entries the walk visits: joins, entries that touch memory (a host effect that failed
        touched nothing), entries with a ``before`` query."""
        o, oidx = self._o, self._oidx
        cols = g.columns
        access = cols.mask(_accesses) & (~cols.is_host | (cols.step > 0))
        visit_mask = is_join | access
        if self.before:
            visit_mask[list(self.before)] = True
        visit = o[visit_mask[o]]
        self.visit = visit.tolist()
        self.visit_chain = self._chain[visit].tolist()
        self.visit_access = access[visit].tolist()
        at_visit = oidx[visit]
        self.visit_edges = np.searchsorted(oidx[ed], at_visit).tolist() + [len(ed)]
        self.visit_asks = np.searchsorted(oidx[j], at_visit).tolist() + [len(j)]

    def unordered_at_start(self) -> list:
        """The ``after`` queries of entries before any join of their chain (the zero clock)."""
        return self._at_start

    def last_task(self) -> dict:
        """(program, chain) -> the last task of that program the walk met on that stream chain."""
        tasks = self._tasks
        if not len(tasks):
            return {}
        key = (self._program[tasks] + 1) * self.nch + self._chain[tasks]
        _u, first = np.unique(key, return_index=True)
        _u, last_rev = np.unique(key[::-1], return_index=True)
        last = len(tasks) - 1 - last_rev
        by = np.argsort(first)
        out = {}
        for i in tasks[last[by]].tolist():
            p = int(self._program[i])
            out[(p if p >= 0 else None, self._chain[i].item())] = i
        return out


class _Joins:
    """The clocks of the joins while the walk goes: a join's clock is kept while entries of its
    segment have successors on other chains still to read it."""

    def __init__(self, plan: _Plan, zero, unordered: set):
        self.plan, self.zero, self.unordered = plan, zero, unordered
        self.seg_clock: dict = {}           # join -> its clock, while entries of its segment have readers
        self.seg_readers = plan.seg_readers  # join -> edges from its segment still to be read

    def join(self, i, clock, e0, e1, q0, q1):
        """The clock of join ``i`` (its chain's clock was ``clock``) from its edges ``e0:e1``;
        answers the queries ``q0:q1`` about the entries of its segment."""
        plan, zero, seg_clock, seg_readers = self.plan, self.zero, self.seg_clock, self.seg_readers
        e_cj, e_pj, e_seg = plan.edge_chain, plan.edge_pos, plan.edge_seg
        maximum = np.maximum
        fresh = False
        for k in range(e0, e1):
            cj, sp, s = e_cj[k], e_pj[k], e_seg[k]
            if clock[cj] < sp:  # else this chain knows that predecessor already, and what it knew
                sc = seg_clock[s] if s >= 0 else zero
                if fresh:
                    maximum(clock, sc, out=clock)
                else:
                    clock = maximum(clock, sc)
                    fresh = True
                clock[cj] = sp
            if s >= 0:
                left = seg_readers[s] - 1
                if left:
                    seg_readers[s] = left
                else:
                    del seg_clock[s]
        if seg_readers.get(i):
            seg_clock[i] = clock
        ask_chain, ask_pos = plan.ask_chain, plan.ask_pos
        for q in range(q0, q1):     # the queries about the entries of its segment
            if clock[ask_chain[q]] < ask_pos[q]:
                self.unordered.add((plan.ask_a[q], plan.ask_b[q]))
        return clock


class RaceDetector:
    """Walks a graph (:func:`pyhcomm.analysis.happens_before.build`) once; ``races`` then holds
    ``(kind, first entry index, second entry index, space, lo, hi)`` for every unordered pair
    found (one per pair of entries), and :meth:`ordered_before_end` answers for a program."""

    def __init__(self, graph, queries=None):
        self.g = graph
        #: two pairs of entry index arrays (a, b): "does a[k] (when it ran before b[k]) happen before
        #: b[k]", not counting b's notify edges (the first pair) or counting them (the second); the
        #: pairs (a, b) that are not ordered end in ``unordered``
        self.queries: tuple = queries or ((_NONE, _NONE), (_NONE, _NONE))
        self.unordered: set = set()
        self.races: list = []
        self.chain_of: list = []
        self.pos: list = []
        self.final: dict = {}       # chain -> (clock, position) after its last entry
        #: (program, chain) -> index of the last task of that program that ran on that stream chain
        self.last_task: dict = {}
        self.never_ran: list = []   # tasks taken as running after everything else (see never_ran)
        self._program_chain = None

    def run(self) -> "RaceDetector":
        g = self.g
        entries = g.entries
        plan = _Plan(g, self._order(), self.never_ran, self.queries)
        chain_of = self.chain_of = g.chains(as_list=True)
        pos = self.pos = plan.pos.tolist()
        self.last_task = plan.last_task()
        self.unordered.update(plan.unordered_at_start())
        zero = np.zeros(plan.nch, dtype=np.int32)
        base = [zero] * plan.nch        # per chain: its clock (own component not kept: see pos)
        joins = _Joins(plan, zero, self.unordered)
        join, seg_clock = joins.join, joins.seg_clock
        before = plan.before            # entry -> [(chain, a)]: is a before it, not counting its notify edges
        shadow = _Shadow()
        cells_of, exact_get = shadow.cells, shadow.exact.get
        reported = set()
        for i, c, e0, e1, q0, q1, access in zip(plan.visit, plan.visit_chain, plan.visit_edges, plan.visit_edges[1:],
                                                plan.visit_asks, plan.visit_asks[1:], plan.visit_access):
            clock = base[c]
            if i in before:
                self._answer(i, c, clock, plan, e0, e1, seg_clock, zero, pos)
            if e0 != e1:                # a join: this entry's clock from its predecessors on other chains
                clock = base[c] = join(i, clock, e0, e1, q0, q1)
            if not access:
                continue
            e = entries[i]
            spans = e.kind.spans(e)
            if not spans:
                continue
            # reads first (the kinds give them first): an entry that reads and writes the same bytes
            # (a reduce) is ordered with itself
            for key, write in spans:
                cell = exact_get(key)
                for cell in ((cell,) if cell is not None else cells_of(*key)):
                    w = cell[2]
                    if w is not None and w != i:
                        cw = chain_of[w]
                        if cw != c and clock[cw] < pos[w]:
                            self._race(reported, _WW if write else _WR, w, i, key[0], cell)
                    reads = cell[3]
                    if write:
                        if reads:
                            for cr, r in reads.items():
                                if cr != c and r != i and clock[cr] < pos[r]:
                                    self._race(reported, _RW, r, i, key[0], cell)
                        cell[2] = i
                        cell[3] = None
                    elif reads is None:
                        cell[3] = {c: i}
                    else:
                        reads[c] = i
        self.final = {c: (base[c], plan.at[c]) for c in range(plan.nch)}
        return self

    def _order(self) -> list:
        """The entries that executed, in execution order (tasks that ran, host effects done or
        failed), then the tasks that never ran although nothing failed before them (still queued at
        the end, or dropped with their stream): on hardware they run later, unordered with what
        nothing made wait for them (``never_ran``)."""
        g = self.g
        x = np.array(g.record.xlog, dtype=np.int64)
        at = g.locate(np.abs(x))        # a skipped task's value (SKIP_FLAG set) is no seq: -1
        ran = x > 0
        walked = (at >= 0) & (ran | g.columns.is_host[np.maximum(at, 0)])     # ran, or a host effect that failed
        self.never_ran = late = never_ran(g)
        return at[walked].tolist() + late

    def _answer(self, i, c, clock, plan, e0, e1, seg_clock, zero, pos) -> None:
        """Answer the queries about entry ``i`` with its clock before its ``notify`` edges (what
        orders it without the record it consumed)."""
        probe = clock.copy()
        for k in range(e0, e1):
            if plan.edge_kind[k] == _NOTIFY_CODE:
                continue
            cj, sp, s = plan.edge_chain[k], plan.edge_pos[k], plan.edge_seg[k]
            if probe[cj] < sp:
                np.maximum(probe, seg_clock[s] if s >= 0 else zero, out=probe)
                probe[cj] = sp
        for ca, a in plan.before[i]:
            if probe[ca] < pos[a]:
                self.unordered.add((a, i))

    def _race(self, reported, kind, first, second, space, cell) -> None:
        key = (first, second)
        if key in reported:
            # widen the range already reported for this pair
            for k, r in enumerate(self.races):
                if r[1] == first and r[2] == second:
                    lo, hi = min(r[4], cell[0]), max(r[5], cell[1])
                    if (lo, hi) != (r[4], r[5]) and r[3] == space:
                        self.races[k] = (r[0], first, second, space, lo, hi)
                    break
            return
        reported.add(key)
        self.races.append((kind, first, second, space, cell[0], cell[1]))

    def ordered_before_end(self, i, program) -> bool:
        """Whether entry ``i`` happens before the last host effect of ``program``."""
        c = self.program_chain(program)
        if c is None or not self.final.get(c, (None, 0))[1]:
            return False
        ci = self.chain_of[i]
        if ci == c:
            return True
        clock, _end = self.final[c]
        return clock[ci] >= self.pos[i]

    def program_chain(self, program):
        """The chain of ``program``'s host effects (None: it had none)."""
        if self._program_chain is None:
            g = self.g
            chain = g.chains(as_list=True)
            self._program_chain = {}
            for i, e in enumerate(g.entries):
                if e.entry == "host" and e.program not in self._program_chain and not e.kind.at_fence:
                    self._program_chain[e.program] = chain[i]
        return self._program_chain.get(program)


# -- findings ----------------------------------------------------------------------------------------
def race_findings(detector: RaceDetector, describer: Describer) -> list:
    """One finding per pair of call sites and kinds (the count says how many pairs of entries)."""
    entries = detector.g.entries
    late = set(detector.never_ran)
    out: dict = {}
    for kind, a, b, space, lo, hi in detector.races:
        ea, eb = entries[a], entries[b]
        key = (RACE, kind, ea.kind, describer.where(ea), eb.kind, describer.where(eb), ea.rank == eb.rank)
        f = out.get(key)
        if f is not None:
            f.count += 1
            continue
        first, second = kind.split("/")
        what = describer.memory(space, lo, hi)
        lines = [f"{first:5}: {end_of(ea, space, lo, hi)}{describer.entry(ea)}" + (_NEVER if a in late else ""),
                 f"{second:5}: {end_of(eb, space, lo, hi)}{describer.entry(eb)}" + (_NEVER if b in late else ""),
                 "nothing orders them. "
                 + (f"To run the {first} first: " if ea.entry == eb.entry == "task" else "To fix: ")
                 + suggest(ea, eb, describer)]
        if ea.entry == "task" and eb.entry == "task":
            lines.append(f"or, to run the {second} first: {suggest(eb, ea, describer)}")
        title = f"{first} and {second} of {what} are not ordered"
        out[key] = Finding(RACE, title, lines, (ea.seq, eb.seq), key,
                           {"access": kind, "first": ea.seq, "second": eb.seq, "space": "device" if space == 0 else "host",
                            "range": [lo, hi], "engines": [engine_name(ea.engine), engine_name(eb.engine)],
                            "never_ran": [e.seq for i, e in ((a, ea), (b, eb)) if i in late]})
    found = list(out.values())
    for f in found:
        if f.count > 1:
            f.lines.append(f"(and {f.count - 1} more pair(s) of accesses from the same two call sites: other ranks, "
                           "threads or iterations)")
    return found


_NEVER = " (it had not run when the run ended: nothing waited for it; it runs later on hardware)"


def end_of(e, space, lo, hi) -> str:
    """Which end of entry ``e`` touched the bytes ``[lo, hi)`` of ``space``, for an entry that
    moves bytes (reads some memory, writes other: a copy, a one-sided transfer, a memcpy):
    ``"the source of "`` or ``"the destination of "``; ``""`` for any other entry."""
    spans = e.kind.spans(e)
    if not spans or all(w for _key, w in spans) or not any(w for _key, w in spans):
        return ""
    here = any(w and key[0] == space and key[1] < hi and lo < key[2] for key, w in spans)
    return "the destination of " if here else "the source of "


def suggest(a, b, d: Describer) -> str:
    """What synchronisation would order ``a`` before ``b``."""
    ta, tb = a.entry == "task", b.entry == "task"
    if a.kind.at_fence:
        return (f"complete the NBI transfer with a fence (HcommChannelFence or HcommChannelFenceOnThread on its "
                f"channel) after {d.short(a)} and before {d.short(b)}")
    if ta and tb:
        if a.rank is not None and b.rank is not None and a.rank != b.rank:
            return (f"rank {a.rank} records a channel notify of rank {b.rank} after {d.short(a)} "
                    f"(HcommChannelNotifyRecordOnThread on {d.who(a)}) and rank {b.rank} waits for it before "
                    f"{d.short(b)} (HcommChannelNotifyWaitOnThread on {d.who(b)})")
        if a.stream is b.stream:
            return "queue them on one stream in this order"
        return (f"{d.who(a)} records a notify of {d.who(b)} after {d.short(a)} (HcommThreadNotifyRecordOnThread) and "
                f"{d.who(b)} waits for it before {d.short(b)} (HcommThreadNotifyWaitOnThread)")
    if ta or tb:    # the host (or a kernel, outside any stream) and a queued task
        task, call = (a, b) if ta else (b, a)
        issuer, caller = d.g.host_program(task.program), d.g.host_program(call.program)
        if issuer is not None and caller is not None and issuer != caller:
            return _across_programs(task, call, issuer, caller, ta, d)
        fix = f"make {d.short(call)} wait for {d.short(task)}: "
        if task.side == "device" and task.kernel:
            fix += (f"synchronizing the kernel's launch stream waits for the kernel, not for what it queued on "
                    f"{d.who(task)}; make the launch stream wait for that thread (the kernel records a notify of "
                    f"the launch stream's thread after it, as HCCL's collectives do), or synchronize stream "
                    f"0x{task.stream.handle:x} (or the device) before the call")
        else:
            fix += f"synchronize stream 0x{task.stream.handle:x} ({d.who(task)}) before the call"
        if not ta:
            fix += "; or, if the task must come after the call, queue it after the call returns"
        return fix
    if a.kind.unit is Unit.AIV and b.kind.unit is Unit.AIV:
        same = a.kernel == b.kernel and a.kernel
        return (f"{d.program_label(a.program)} stores a flag after {d.short(a)} (SetSignalValue) and "
                f"{d.program_label(b.program)} waits for that value before {d.short(b)} (WaitSignalValue), a value "
                f"no earlier call left there (a flag reset, or a tag new to this call)"
                + ("; or SyncAll between them (blocks of one kernel)" if same else ""))
    return (f"{d.program_label(a.program)} and {d.program_label(b.program)} run unsynchronized: a barrier "
            f"(Comm.barrier) between {d.short(a)} and {d.short(b)}")


def _across_programs(task, call, issuer, caller, task_first: bool, d: Describer) -> str:
    """The fix for a race between a task that host program ``issuer`` queued and a call of another
    host program ``caller`` (another rank's, as a rank's host reading what a peer's one-sided
    write put in its memory): only ``issuer`` can wait for the task's stream, so the order goes
    through it (a barrier after its synchronize, or a channel notify to a thread of ``caller``)."""
    them, me = d.program_label(issuer), d.program_label(caller)
    stream = f"stream 0x{task.stream.handle:x} ({d.who(task)})"
    if task_first:
        return (f"make {d.short(call)} wait for {d.short(task)}, which {them} queued: only {them} can wait for "
                f"{stream}; it synchronizes that stream after queuing the task and then meets {me} at a barrier "
                f"(Comm.barrier, HcclBarrier) that {me} passes before the call; or {d.who(task)} records a channel "
                f"notify after the task (HcommChannelNotifyRecordOnThread) that a thread of {me} waits for "
                f"(HcommChannelNotifyWaitOnThread), and {me} synchronizes that thread's stream before the call")
    return (f"make {d.short(task)} wait for {d.short(call)}: {me} passes a barrier (Comm.barrier, HcclBarrier) after "
            f"the call that {them} passes before queuing the task; or a thread of {me} records a channel notify "
            f"after the call (HcommChannelNotifyRecordOnThread) that {d.who(task)} waits for before the task "
            f"(HcommChannelNotifyWaitOnThread)")


__all__ = ["RaceDetector", "race_findings", "suggest", "end_of"]
