"""Notify checks from the record: lost records, waits satisfied by a later round, notifies left
set, and waits that can never be satisfied.

A notify holds one bit (unless ``PYHCOMM_NOTIFY_COUNTING``): a record sets it, a wait waits until
it is set and clears it. Each record stores the generation it set and each wait the generation it
consumed (docs/record.md); with the happens-before graph that gives, per notify:

* **lost record** (in this schedule): a record whose generation no wait consumed while a later
  one was: it was recorded again before the wait ran (two records, one wait: one is lost);
* **lost record** (possible in another schedule): a record that is not ordered after the wait
  that consumed the record before it: another schedule runs it first, and one is lost;
* **late wait**: two waits of the notify that are not ordered with each other: in some schedule
  one consumes the record meant for the other, a later round's;
* **notify left set**: records no wait consumed when the run ended;
* **hang**: a wait that never ran (its stream failed at it, or the run ended with it queued),
  explained from the record: nobody records that notify; its records never ran (and what their
  stream was stuck at); or they ran and other waits consumed them. A wait-for cycle is printed
  when the stuck waits wait for each other.

The ordering questions are answered by the race detector's vector clocks
(:func:`notify_queries`, :class:`pyhcomm.analysis.race.RaceDetector`).
"""
from __future__ import annotations

import bisect
from operator import attrgetter

import numpy as np

from ..sim.kinds import NotifyUse
from .findings import HANG, LATE_WAIT, LOST_RECORD, NOTIFY_LEFT_SET, Describer, Finding


class _Use:
    """One record or wait of a notify, as the record says (``at``: its entry index in the graph)."""

    __slots__ = ("e", "seq", "gen", "ran", "lane", "waits", "at")

    def __init__(self, e, gen, ran, lane, waits, at):
        self.e, self.seq, self.gen, self.ran, self.lane, self.waits, self.at = e, e.seq, gen, ran, lane, waits, at


class NotifyUses:
    """The records and waits of every notify of a graph (what :func:`notify_uses` returns).

    ``fast``: when every notify record and wait of the record ran with a generation (a run that
    ended well), the uses as numpy columns (:class:`~pyhcomm.analysis.happens_before.NotifyColumns`)
    sorted by notify, generation and entry: the checks read those, and make the per-use objects
    only for the notifies they flag. Else None, and the checks read :meth:`by_notify`."""

    def __init__(self, graph):
        self.graph = graph
        self._by_notify = None
        self._sequences = None
        self.fast = _fast_columns(graph)

    def by_notify(self) -> dict:
        """(owner, index) -> (a notify, [records], [waits]) in issue order; a use's ``lane`` is its
        stream (tasks) or program (host effects). Made on first use."""
        if self._by_notify is None:
            self._by_notify = _by_notify(self.graph)
        return self._by_notify

    def sequences(self) -> list:
        """Per notify: (notify, records that ran, waits that ran), both in generation (execution)
        order, from :meth:`by_notify`."""
        if self._sequences is None:
            gen = attrgetter("gen")
            out = []
            for n, records, waits in self.by_notify().values():
                ran_records = [r for r in records if r.ran and r.gen is not None]
                ran_records.sort(key=gen)
                ran_waits = [w for w in waits if w.ran and w.gen is not None]
                ran_waits.sort(key=gen)
                out.append((n, ran_records, ran_waits))
            self._sequences = out
        return self._sequences


def notify_uses(graph) -> NotifyUses:
    """The records and waits of the notifies of ``graph`` (:class:`NotifyUses`)."""
    return NotifyUses(graph)


def _fast_columns(graph):
    """The graph's notify columns sorted by (notify, generation, entry), when they hold every
    notify record and wait of the record (each ran, with a generation); else None."""
    cols = graph.notify_columns
    if cols is None:
        return None
    tasks, host = graph.notify_split()
    if len(tasks) != cols.tasks or len(host) != len(cols.key) - cols.tasks:
        return None         # a notify task that did not run (or has no generation), a host use that did not
    if len(host):
        entries, step = graph.entries, graph.columns.step
        if any(entries[i].kind.notify is None or step[i] <= 0 for i in host):
            return None
    o = np.lexsort((cols.at, cols.gen, cols.key))
    return cols._replace(key=cols.key[o], gen=cols.gen[o], at=cols.at[o], waits=cols.waits[o], lane=cols.lane[o])


def _by_notify(graph) -> dict:
    out = {}
    steps = graph.step_table()
    entries = graph.entries
    for i in graph.notify_entries():
        e = entries[i]
        kind = e.kind
        if kind.notify is None:
            continue
        n = kind.get(e, "notify")
        if n is None:
            continue
        ran = steps.get(e.seq, 0) > 0
        lane = ("stream", e.stream.handle) if e.entry == "task" else ("program", e.program)
        use = _Use(e, kind.get(e, "gen") if ran else None, ran, lane, kind.notify is NotifyUse.WAIT, i)
        key = (n.owner, n.index)        # a notify is known by owner and index (a remote one is a value)
        slot = out.get(key)
        if slot is None:
            slot = out[key] = (n, [], [])
        (slot[2] if use.waits else slot[1]).append(use)
    return out


def _name(n) -> str:
    return f"notify {n.index} of {n.owner}"


def _counting(notifies) -> np.ndarray:
    """Per notify key: whether it counts its records (``PYHCOMM_NOTIFY_COUNTING``)."""
    return np.array([bool(getattr(n, "counting", False)) for n in notifies], dtype=bool)



def notify_queries(graph, uses) -> tuple:
    """The happens-before questions the notify checks ask the race detector: is each wait ordered
    before the next one (not counting the record the next one consumed), and is the wait that
    consumed a record ordered before the next record (:class:`~pyhcomm.analysis.race.RaceDetector`'s
    ``queries``): ``(before, after)``, each a pair of entry index arrays ``(a, b)``: is ``a[k]``
    ordered before ``b[k]``."""
    f = uses.fast
    if f is None:
        return _queries_of_sequences(uses.sequences())
    plain = ~_counting(f.notify)[f.key] if len(f.key) else np.zeros(0, dtype=bool)
    rec, wts = plain & ~f.waits, plain & f.waits
    rk, rg, ra = f.key[rec], f.gen[rec], f.at[rec]
    wk, wg, wa, wl = f.key[wts], f.gen[wts], f.at[wts], f.lane[wts]
    span = int(f.gen.max()) + 2 if len(f.gen) else 1
    # a record and the next one of its notify: the wait of the first one's generation (the last
    # of them), asked about the next record
    nxt = np.flatnonzero(rk[1:] == rk[:-1]) + 1
    want = rk[nxt - 1] * span + rg[nxt - 1]
    have = wk * span + wg
    p = np.searchsorted(have, want, side="right") - 1
    hit = p >= 0
    hit[hit] = have[p[hit]] == want[hit]
    after = (wa[p[hit]], ra[nxt[hit]])
    # a wait and the next one of its notify, on another stream or program
    pair = np.flatnonzero((wk[1:] == wk[:-1]) & (wl[1:] != wl[:-1]))
    before = (wa[pair], wa[pair + 1])
    return before, after


def _queries_of_sequences(sequences) -> tuple:
    before_a, before_b, after_a, after_b = [], [], [], []
    for n, records, waits in sequences:
        if getattr(n, "counting", False):
            continue
        by_gen = {w.gen: w for w in waits}
        for r, nxt in zip(records, records[1:]):
            w = by_gen.get(r.gen)
            if w is not None:
                after_a.append(w.at)
                after_b.append(nxt.at)
        for w, nxt in zip(waits, waits[1:]):
            if w.lane != nxt.lane:      # one stream or program: ordered
                before_a.append(w.at)
                before_b.append(nxt.at)
    arr = np.asarray
    i64 = np.int64
    return ((arr(before_a, dtype=i64), arr(before_b, dtype=i64)), (arr(after_a, dtype=i64), arr(after_b, dtype=i64)))


def notify_findings(graph, describer: Describer, uses=None, detector=None) -> list:
    """Lost records (in this schedule, or possible in another), waits not ordered with each other,
    notifies left set (see the module docstring). ``detector``: the race detector that answered
    :func:`notify_queries` (without it, only what happened in this schedule is reported)."""
    uses = notify_uses(graph) if uses is None else uses
    unordered = detector.unordered if detector is not None else set()
    out = []
    sequences = uses.sequences() if uses.fast is None else _flagged(graph, uses.fast, unordered)
    for n, records, waits in sequences:
        out += _checks(n, records, waits, unordered, describer)
    return out


def _flagged(graph, f, unordered) -> list:
    """The sequences (as :meth:`NotifyUses.sequences`) of the notifies that may have a finding: a
    record no wait consumed, an entry in an ``unordered`` pair, or a counting notify; in order
    of their first use."""
    if not len(f.key):
        return []
    rec = ~f.waits
    span = int(f.gen.max()) + 2
    have = f.key[f.waits] * span + f.gen[f.waits]
    want = f.key[rec] * span + f.gen[rec]
    p = np.minimum(np.searchsorted(have, want), max(len(have) - 1, 0))
    consumed = (have[p] == want) if len(have) else np.zeros(len(want), dtype=bool)
    keys = [f.key[rec][~consumed], np.flatnonzero(_counting(f.notify))]
    if unordered:
        asked = np.fromiter((x for pair in unordered for x in pair), np.int64, 2 * len(unordered))
        keys.append(f.key[np.isin(f.at, asked)])
    keys = np.unique(np.concatenate(keys))
    if not len(keys):
        return []
    entries = graph.entries
    lo, hi = np.searchsorted(f.key, keys), np.searchsorted(f.key, keys, side="right")  # f is sorted by key
    first = [int(f.at[a:z].min()) for a, z in zip(lo.tolist(), hi.tolist())]    # each notify's first use
    out = []
    for k in sorted(range(len(keys)), key=first.__getitem__):
        a, z = int(lo[k]), int(hi[k])
        records, waits = [], []
        for i, gen, w, lane in zip(f.at[a:z].tolist(), f.gen[a:z].tolist(), f.waits[a:z].tolist(),
                                   f.lane[a:z].tolist()):
            e = entries[i]
            use = _Use(e, gen, True, ("stream", lane) if e.entry == "task" else ("program", e.program), w, i)
            (waits if w else records).append(use)
        out.append((f.notify[int(keys[k])], records, waits))
    return out


def _checks(n, records, waits, unordered, d) -> list:
    """The findings of one notify, from its records and waits that ran, in generation order."""
    out = []
    if getattr(n, "counting", False):
        if len(records) > len(waits):
            out.append(_left_set(n, [records[-1]], d, len(records) - len(waits)))
        return out
    consumed = [w.gen for w in waits]
    by_gen = {w.gen: w for w in waits}
    lost: dict = {}         # the wait that consumed the record they were lost into -> [records]
    left = []
    for r in records:
        k = bisect.bisect_left(consumed, r.gen)
        if k < len(consumed) and consumed[k] == r.gen:
            continue
        if k < len(consumed):
            lost.setdefault(by_gen[consumed[k]], []).append(r)
        else:
            left.append(r)
    for w, recs in lost.items():
        out.append(_lost(n, recs, w, records, d))
    if left:
        out.append(_left_set(n, left, d))
    if not lost:
        for r, nxt in zip(records, records[1:]):
            w = by_gen.get(r.gen)
            if w is not None and (w.at, nxt.at) in unordered:
                out.append(_may_lose(n, r, w, nxt, d))
    for w, nxt in zip(waits, waits[1:]):
        if (w.at, nxt.at) in unordered:
            out.append(_unordered_waits(n, w, nxt, records, d))
    return out


def _lost(n, recs, w, records, d) -> Finding:
    lines = [f"lost: {d.entry(r.e)}" for r in recs]
    winner = next((r for r in records if r.gen == w.gen), None)
    if winner is not None:
        lines.append(f"then: {d.entry(winner.e)} set it again")
    lines.append(f"before {d.entry(w.e)} consumed it: the notify holds one bit, so {len(recs) + 1} records "
                 "counted once")
    lines.append("to fix: the recorder must not record again before the waiter consumed the last record "
                 "(a handshake back, as the ACK notify of HCCL's collectives), or use one notify per round")
    key = (LOST_RECORD, n.index, tuple(sorted({d.where(r.e) for r in recs})), d.where(w.e))
    return Finding(LOST_RECORD, f"{_name(n)}: {len(recs)} record(s) lost (recorded again before a wait consumed it)",
                   lines, tuple(r.seq for r in recs) + (w.seq,), key,
                   {"notify": {"owner": n.owner, "index": n.index}, "lost": [r.seq for r in recs],
                    "wait": w.seq, "happened": True})


def _may_lose(n, r, w, nxt, d) -> Finding:
    lines = [f"record: {d.entry(r.e)}",
             f"consumed by: {d.entry(w.e)}",
             f"next record: {d.entry(nxt.e)}",
             "nothing orders the next record after that wait: in another schedule it comes first, the notify "
             "(one bit) is set twice, one record is lost and a later wait hangs",
             "to fix: record again only after the waiter said it consumed the last one (a notify back)"]
    key = (LOST_RECORD, "may", n.index, d.where(r.e), d.where(w.e), d.where(nxt.e))
    return Finding(LOST_RECORD, f"{_name(n)}: a record can be lost (recorded again with no wait in between)",
                   lines, (r.seq, w.seq, nxt.seq), key,
                   {"notify": {"owner": n.owner, "index": n.index}, "record": r.seq, "wait": w.seq,
                    "next": nxt.seq, "happened": False})


def _unordered_waits(n, w, nxt, records, d) -> Finding:
    got = {r.gen: r for r in records}

    def line(x):
        r = got.get(x.gen)
        return f"wait: {d.entry(x.e)}" + (f", consumed the record at {d.where(r.e)}" if r is not None else "")

    lines = [line(w), line(nxt),
             "nothing orders these two waits: in another schedule the second one consumes the record meant "
             "for the first (or the first one a later round's), and goes on too early",
             "to fix: order the waits (one waiting thread, or a notify between them), or give each its own notify"]
    key = (LATE_WAIT, n.index, tuple(sorted((d.where(w.e), d.where(nxt.e)))))
    return Finding(LATE_WAIT, f"{_name(n)}: two waits are not ordered: either can be satisfied by the other's record",
                   lines, (w.seq, nxt.seq), key, {"notify": {"owner": n.owner, "index": n.index},
                                                  "waits": [w.seq, nxt.seq]})


def _left_set(n, recs, d, extra=None) -> Finding:
    lines = [f"set by: {d.entry(r.e)}" for r in recs]
    if len(recs) > 1:
        lines.append("(recorded more than once with no wait between: the notify holds one bit)")
    if extra:
        lines.append(f"{extra} more record(s) than waits")
    lines.append("no wait consumed it: a later operation's wait on this notify would be satisfied at once "
                 "(wait for it, or do not record it)")
    key = (NOTIFY_LEFT_SET, n.index, tuple(sorted({d.where(r.e) for r in recs})))
    return Finding(NOTIFY_LEFT_SET, f"{_name(n)} is still set when the run ends", lines,
                   tuple(r.seq for r in recs), key, {"notify": {"owner": n.owner, "index": n.index},
                                                     "records": [r.seq for r in recs]})


# -- waits that can never be satisfied ---------------------------------------------------------------
def hang_findings(graph, describer: Describer, uses=None, report: str | None = None) -> list:
    """One finding for the waits that never ran (see the module docstring); ``report``: the
    scheduler's deadlock report, kept in the finding's details."""
    uses = notify_uses(graph) if uses is None else uses
    if uses.fast is not None:
        return []           # every wait ran
    d = describer
    stuck = []
    for n, records, waits in uses.by_notify().values():
        for w in waits:
            if not w.ran and w.e.state != "skipped":
                stuck.append((w, n, records, waits))
    if not stuck:
        return []
    stuck.sort(key=lambda s: s[0].seq)
    blocked_by = _stream_blockers(graph)
    lines = []
    waits_for = {}
    for w, n, records, waits in stuck:
        mask = w.e.kind.get(w.e, "mask")       # (a CCU wait: one entry per bit of its mask)
        of = f" (its mask 0x{mask:04x})" if mask is not None else ""
        lines.append(f"{d.entry(w.e)} waits for {_name(n)}{of}: {_why(w, n, records, waits, d, blocked_by, waits_for)}")
    cycle = _cycle([s[0] for s in stuck], waits_for)
    if cycle:
        lines.append("wait-for cycle: " + " -> ".join(f"{d.who(x.e)} waits at {d.where(x.e)}" for x in cycle)
                     + f" -> back to {d.who(cycle[0].e)}")
    key = (HANG, tuple(sorted({d.where(s[0].e) for s in stuck})))
    title = f"{len(stuck)} wait(s) can never be satisfied"
    return [Finding(HANG, title, lines, tuple(s[0].seq for s in stuck), key,
                    {"waits": [s[0].seq for s in stuck], "scheduler_report": report})]


def _stream_blockers(graph) -> dict:
    """stream handle -> the first task of it that never ran and was not skipped (where it stuck)."""
    out = {}
    steps = graph.step_table()
    for e in graph.entries:
        if e.entry == "task" and steps.get(e.seq, 0) <= 0 and e.state != "skipped":
            out.setdefault(e.stream.handle, e)
    return out


def _why(w, n, records, waits, d, blocked_by, waits_for) -> str:
    if not records:
        return "nobody ever records it"
    parts = []
    pending = [r for r in records if not r.ran]
    for r in pending[:3]:
        if r.e.entry == "task":
            head = blocked_by.get(r.e.stream.handle)
            if head is not None and head is not r.e and head.seq < r.seq:
                what = f"{head.kind} at {d.where(head)}"
                if head.kind.notify is NotifyUse.WAIT:
                    what += f" (waiting for {_name(head.kind.get(head, 'notify'))})"
                    waits_for.setdefault(w.seq, head.seq)
                parts.append(f"the record at {d.where(r.e)} never ran: {d.who(r.e)} was stuck at {what}")
            elif r.e.state == "skipped":
                parts.append(f"the record at {d.where(r.e)} was skipped (its stream failed or was destroyed first)")
            else:
                parts.append(f"the record at {d.where(r.e)} never ran")
        else:
            parts.append(f"the record at {d.where(r.e)} failed")
    ran = [r for r in records if r.ran]
    if ran:
        takers = [x for x in waits if x.ran]
        parts.append(f"its {len(ran)} record(s) that ran were consumed by {len(takers)} other wait(s)"
                     + (f" (the last at {d.where(takers[-1].e)})" if takers else "")
                     + (" or lost" if len(ran) > len(takers) else ""))
    return "; ".join(parts) if parts else "its records never ran"


def _cycle(stuck, waits_for):
    by_seq = {w.seq: w for w in stuck}
    for start in stuck:
        path, seen = [start], {start.seq}
        cur = start.seq
        while True:
            nxt = waits_for.get(cur)
            if nxt is None or nxt not in by_seq:
                break
            if nxt in seen:
                i = next(k for k, x in enumerate(path) if x.seq == nxt)
                return path[i:]
            path.append(by_seq[nxt])
            seen.add(nxt)
            cur = nxt
    return None


__all__ = ["notify_findings", "notify_queries", "hang_findings", "notify_uses", "NotifyUses"]
