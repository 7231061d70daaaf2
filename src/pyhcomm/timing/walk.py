"""The replay's fast path: times with every flow at its full rate, level by level over the graph.

:func:`walk` gives every entry of an :class:`~.entry_costs.EntryCosts` its issue, start and end, or
None when two flows then overlap on one resource (the discrete-event engine, :mod:`.exact`, must
share them). Each entry has two nodes: its issue (after the previous entry of its program, plus
that one's submit cost, and after a ``program`` / ``batch`` / ``launch`` predecessor), and its
execution (start and end). Nodes are evaluated level by level (every node whose predecessors are
known, all at once), with the same floating-point operations as a walk entry by entry in
execution order, so with the same results. The issues of a program that only follow the previous
one (no constraint of their own) are evaluated with their run's head, by a cumulative sum (the
same additions, in the same order).

Memory: node and entry indices are int32 when they fit (a 1024-rank ring has 6 million entries,
12 million nodes: the walk's memory is mostly index arrays); each stage drops what the next does
not need.
"""
from __future__ import annotations

import numpy as np

from ..analysis.graph import CODE, CODE_MASK, KERNEL_END, LAUNCH, NOTIFY, PROGRAM, SHIFT
from .adjacency import index_type, indegrees, one, successors

_EPS = 1e-12
_KERNEL_END, _NOTIFY, _PROGRAM, _LAUNCH = CODE[KERNEL_END], CODE[NOTIFY], CODE[PROGRAM], CODE[LAUNCH]


def walk(costs):
    """``(issue, start, end)`` arrays of seconds (nan: unknown), or None when flows overlap (see
    the module docstring). Raises ``RuntimeError`` when the constraints have a cycle."""
    w = _Walk(costs)
    w.constraints()
    w.implied()
    w.runs()
    return w.evaluate()


class _Walk:
    """The stages of one walk; its arrays (see :func:`walk`)."""

    def __init__(self, costs):
        self.costs, self.n = costs, costs.n
        ptr, codes = costs.graph.pred_csr()
        self.it = index_type(3 * self.n + 2, len(codes))
        # value arrays have two more slots: ZERO (issue 0.0: the issue of a program's first entry is
        # its predecessor's 0.0 + 0.0) and NONE (-inf: an absent predecessor); ``end`` has one more
        # slot per launch: its start plus its launch latency (what its kernel waits for)
        self.ZERO, self.NONE = self.n, self.n + 1

    def constraints(self) -> None:
        """Per node its predecessors: the issue's (the previous entry of the program, a
        program-kind edge), the start's (the batch's last entry, stream, kernel end: at most one
        of each) and the end's (notify, plus the record's signal latency, and the others)."""
        c, n, it, NONE = self.costs, self.n, self.it, self.NONE
        ptr, codes = c.graph.pred_csr()
        ex, prev, bl, is_launch = c.executed, c.prev, c.batch_last, c.is_launch
        dst = np.repeat(np.arange(n, dtype=it), np.diff(ptr))
        src = (codes >> SHIFT).astype(it)
        kind = (codes & CODE_MASK).astype(np.int8)
        live = ex[src]                      # a predecessor that never ran constrains nothing
        self.launches = launches = np.flatnonzero(is_launch & ex)
        self.slot = slot = np.full(n, -1, dtype=it)
        slot[launches] = n + 2 + np.arange(len(launches), dtype=it)
        self.prev2 = np.where(prev >= 0, prev, self.ZERO)
        p = np.flatnonzero(live & (kind >= _PROGRAM) & (kind <= _LAUNCH))
        self.pd, self.psrc = pd, psrc = dst[p], src[p]
        self.prg = np.full(n, NONE, dtype=it)
        self.prg[pd] = np.where(is_launch[psrc], slot[psrc], psrc)
        on = live & ex[dst]
        is_start = on & (kind <= _KERNEL_END)
        is_dep = on & ((kind == _NOTIFY) | (kind > _LAUNCH))
        self.sd, self.ss = sd, ss = dst[is_start], src[is_start]
        firsts = np.append(True, sd[1:] != sd[:-1]) if len(sd) else np.zeros(0, dtype=bool)
        self.before = np.full(n, NONE, dtype=it)         # the first; the second (rare) in before2
        self.before[sd[firsts]] = ss[firsts]
        self.before2 = np.full(n, NONE, dtype=it)
        self.before2[sd[~firsts]] = ss[~firsts]
        self.has_two = np.zeros(n, dtype=bool)
        self.has_two[sd[~firsts]] = True
        self.bl2 = np.where(bl >= 0, bl, NONE)
        self.dd, self.ds = dd, ds = dst[is_dep], src[is_dep]
        dlat = np.where(kind[is_dep] == _NOTIFY, c.siglat[ds], 0.0)
        firsts = np.append(True, dd[1:] != dd[:-1]) if len(dd) else np.zeros(0, dtype=bool)
        self.dep1 = np.full(n, NONE, dtype=it)
        self.dep1[dd[firsts]] = ds[firsts]
        self.lat1 = np.zeros(n)
        self.lat1[dd[firsts]] = dlat[firsts]
        self.more_d, self.more_s, self.more_l = dd[~firsts], ds[~firsts], dlat[~firsts]
        self.has_more = np.zeros(n, dtype=bool)
        self.has_more[self.more_d] = True
        # what most walks have none of is neither kept nor looked for at every level (a level
        # costs its numpy calls more than its elements; a 1024-rank ring has some 6,000 levels)
        self.any_two, self.any_more = bool(self.has_two.any()), len(self.more_d) > 0
        self.any_launch = len(launches) > 0
        if not self.any_two:
            self.before2 = self.has_two = None
        if not self.any_more:
            self.has_more = None

    def implied(self) -> None:
        """Leave out two kinds of edges that order nothing more, as a longer path holds them: a
        program-kind edge into an issue whose program predecessor has one from the same source
        (through that predecessor's issue), and a batch's edge into an execution whose stream
        predecessor waits for the same batch (through that predecessor's execution). The walk
        then moves fewer edges (a kernel's launch and its batch precede thousands of its tasks)."""
        c, n = self.costs, self.n
        self.pd, self.psrc = _implied(self.pd, self.psrc, c.prev, n)
        b = np.flatnonzero(c.executed & (c.batch_last >= 0))
        via = np.full(n, -1, dtype=self.it)
        via[self.sd] = self.ss
        self.b, self.bsrc = _implied(b, c.batch_last[b], via, n, c.batch_last)

    def runs(self) -> None:
        """A program's issues form runs: from a head (its first entry, or one with a program-kind
        constraint of its own) through the entries after it whose issue is the previous one's
        plus its submit cost (no such constraint, or the same one as the previous entry, which
        that issue already follows). A run is one node, its head: evaluated at once (a cumulative
        sum, the same additions in the same order), its entries' edges leave from the head. (The
        same constraint adds nothing as the previous issue already follows it and submit costs
        are not negative; were one negative, every constrained issue would be a head.) Then the
        nodes' dependency graph: issue k is node k, execution i is node n + i."""
        c, n, it = self.costs, self.n, self.it
        o, prev, prg = c.chain_order, c.prev, self.prg
        head = self.head = prev < 0
        head[self.pd] = True
        has_prg = np.flatnonzero(prg != self.NONE)
        if (c.submit >= 0).all():
            has_prg = has_prg[prg[np.maximum(prev[has_prg], 0)] != prg[has_prg]]
        head[has_prg] = True
        del has_prg
        run = np.cumsum(head[o]) - 1                    # per position in o: its run
        run_at = np.flatnonzero(head[o])                # per run: where it starts in o
        run_len = np.diff(np.append(run_at, n))
        head_of = np.empty(n, dtype=it)
        head_of[o] = o[run_at][run]
        self.at_o = np.empty(n, dtype=it)
        self.at_o[o[run_at]] = run_at
        self.length = np.zeros(n, dtype=it)
        self.length[o[run_at]] = run_len
        del run, run_at, run_len
        hk = np.flatnonzero(head & (prev >= 0))
        oe = o[c.executed[o]]                           # the executed entries, grouped by run
        parts = [(head_of[prev[hk]], hk, False), (n + self.psrc, self.pd, False), (head_of[oe], n + oe, True),
                 (head_of[self.bsrc], n + self.b, False), (n + self.ss, n + self.sd, False),
                 (n + self.ds, n + self.dd, False)]
        del hk, oe, head_of, self.b, self.bsrc, self.pd, self.psrc, self.sd, self.ss, self.dd, self.ds
        self.indeg = indegrees(2 * n, parts)
        self.sptr, self.succ = successors(2 * n, parts)
        del parts
        self.psub_o = np.append(c.submit, [0.0, 0.0])[self.prev2[o]]   # the submit cost before each entry, in run order

    def evaluate(self):
        """The level-by-level evaluation (see :func:`walk`)."""
        c, n, m = self.costs, self.n, self.costs.m
        i64 = np.int64
        ZERO, NONE = self.ZERO, self.NONE
        issue = np.full(n + 2, np.nan)
        issue[ZERO], issue[NONE] = 0.0, -np.inf
        start = np.full(n, np.nan)
        end = np.full(n + 2 + len(self.launches), np.nan)
        end[NONE] = -np.inf
        flow_start = np.full(n, np.nan)
        o, prev2, psub_o, at_o, length, prg = c.chain_order, self.prev2, self.psub_o, self.at_o, self.length, self.prg
        bl2, before, before2, has_two, any_two = self.bl2, self.before, self.before2, self.has_two, self.any_two
        dep1, lat1, has_more, any_more = self.dep1, self.lat1, self.has_more, self.any_more
        more_d, more_s, more_l = self.more_d, self.more_s, self.more_l
        slot, any_launch, indeg, sptr, succ = self.slot, self.any_launch, self.indeg, self.sptr, self.succ
        dec = one(indeg)
        body, duration, is_host, task_dispatch = c.body, c.duration, c.cols.is_host, m.task_dispatch
        launch_lat, release = c.launch_latency, m.batch_submit + m.batch_fixed
        fmax, cumsum = np.fmax, np.cumsum
        front = np.flatnonzero((indeg[:n] == 0) & self.head)
        done = 0
        while len(front):
            split = int(np.searchsorted(front, n))
            done += len(front) - split
            if split:
                I = front[:split]
                issue[I] = fmax(issue[prev2[I]] + psub_o[at_o[I]], end[prg[I]])
                runs = length[I]
                done += int(runs.sum())
                for h in I[runs > 1].tolist():          # the rest of each run
                    a = int(at_o[h])
                    v = psub_o[a:a + int(length[h])].copy()
                    v[0] = issue[h]
                    issue[o[a:a + len(v)]] = cumsum(v)
            if split < len(front):
                E = front[split:] - n
                t = fmax(issue[E], issue[bl2[E]] + release)
                if any_two and has_two[E].any():
                    t = fmax(t, np.maximum(end[before[E]], end[before2[E]]))
                else:
                    t = fmax(t, end[before[E]])
                start[E] = t
                t = fmax(t + np.where(is_host[E], 0.0, task_dispatch), end[dep1[E]] + lat1[E])
                if any_more and has_more[E].any():
                    _more(E, t, end, has_more, more_d, more_s, more_l)
                flow_start[E] = t
                end[E] = (t + duration[E]) + body[E]
                if any_launch:
                    sl = slot[E]
                    if sl.max() >= 0:
                        at = sl >= 0
                        end[sl[at]] = start[E[at]] + launch_lat[E[at]]
            lo = sptr[front]
            cnt = sptr[front + 1] - lo
            total = int(cnt.sum())
            if not total:
                break
            targets = succ[np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(total, dtype=i64)].astype(i64)
            np.subtract.at(indeg, targets, dec)
            fresh = targets[indeg[targets] == 0]
            fresh.sort()
            front = fresh[np.append(True, fresh[1:] != fresh[:-1])] if len(fresh) > 1 else fresh
        # the walk's index arrays go before the overlap check
        del sptr, succ, indeg, slot, prev2, prg, before, before2, bl2, dep1, lat1, at_o, length, psub_o, has_two
        del has_more, more_d, more_s, more_l
        self.__dict__.clear()
        self.costs, self.n = c, n
        return self._result(issue, start, end, flow_start, done)

    def _result(self, issue, start, end, flow_start, done):
        c, n = self.costs, self.n
        if done != n + int(np.count_nonzero(c.executed)):
            raise RuntimeError("replay: the graph's constraints have a cycle")
        issue, end = issue[:n], end[:n]
        unknown(c, issue)
        # flows that overlap on a resource: the engine shares them
        flows = np.flatnonzero((c.route >= 0) & c.executed)
        if not _alone(c.routes, c.route[flows], flow_start[flows], flow_start[flows] + c.duration[flows]):
            return None
        return issue, start, end


def _more(E, t, end, has_more, more_d, more_s, more_l) -> None:
    """The end predecessors beyond the first of the executions ``E`` (rare): into ``t``."""
    for j in np.flatnonzero(has_more[E]).tolist():
        a, z = np.searchsorted(more_d, E[j]), np.searchsorted(more_d, E[j], side="right")
        for s_, l_ in zip(more_s[a:z].tolist(), more_l[a:z].tolist()):
            v = end[s_] + l_
            if v > t[j]:
                t[j] = v


def unknown(costs, issue) -> None:
    """Set to nan, in ``issue``, the issue times the replay does not know: those after the last
    entry of their program that executed (or whose batch an executed entry waited for)."""
    n, ex, bl = costs.n, costs.executed, costs.batch_last
    if ex.all():                    # every entry executed: every issue is known
        return
    wanted = ex.copy()
    waited = bl[ex]
    wanted[waited[waited >= 0]] = True
    o, first = costs.chain_order, costs.chain_first
    at = np.where(wanted[o], np.arange(n, dtype=np.int64), -1)
    last = np.maximum.reduceat(at, np.flatnonzero(first)) if n else at
    issue[o[np.arange(n) > last[np.cumsum(first) - 1]]] = float("nan")


def _implied(dst, src, via, n, src_of=None) -> tuple:
    """The edges ``src -> dst`` (one per ``dst``) less those a path through ``via[dst]`` (an
    edge ``via[dst] -> dst``, -1: none) already gives: ``via[dst]`` has an edge from the same
    source, in these edges or, when given, per ``src_of`` (``src_of[x]``: the source of ``x``'s
    edge, -1: none; then every such ``x`` that executed is among ``dst``)."""
    if src_of is None:
        src_of = np.full(n, -1, dtype=src.dtype)
        src_of[dst] = src
    v = via[dst]
    keep = (v < 0) | (src_of[np.maximum(v, 0)] != src)
    return dst[keep], src[keep]


def _alone(routes, route, starts, ends) -> bool:
    """Whether no two flows on one resource overlap in time (``route``: each flow's index into
    ``routes``, tuples of resource keys; ``starts``, ``ends``: the flows' data starts and ends)."""
    if len(route) < 2:
        return True
    rid: dict = {}
    per_route = [[rid.setdefault(k, len(rid)) for k in r] for r in routes]
    width = max(len(r) for r in per_route)
    table = np.full((len(routes), width), -1, dtype=np.int64)
    for j, r in enumerate(per_route):
        table[j, :len(r)] = r
    res = table[route].reshape(-1)
    s = np.repeat(starts, width)
    e = np.repeat(ends, width)
    keep = res >= 0
    res, s, e = res[keep], s[keep], e[keep]
    order = np.lexsort((s, res))
    res, s, e = res[order], s[order], e[order]
    bounds = np.flatnonzero(np.append(True, res[1:] != res[:-1]))
    for a, z in zip(bounds.tolist(), np.append(bounds[1:], len(res)).tolist()):
        if z - a < 2:
            continue
        busy = np.maximum.accumulate(e[a:z])[:-1]
        if np.any(s[a + 1:z] < busy - _EPS * np.maximum(1.0, busy)):
            return False
    return True


__all__ = ["walk", "unknown"]
