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

What each entry accesses: its ``reads`` and ``writes`` (docs/record.md); a one-sided transfer
touches the peer's memory, which is how a race across ranks shows. Entries that did not run
(skipped, pending, failed waits) accessed nothing.

Clocks are numpy arrays shared between chains until one of them joins (copy on write), so a clock
is copied only where a chain synchronises; a predecessor's clock is kept only until every
successor on another chain has read it.
"""
from __future__ import annotations

import bisect

import numpy as np

from .findings import RACE, Describer, Finding
from .happens_before import _CODE, _SHIFT, NBI_KINDS, NOTIFY

_BUCKET = 22            # 4 MiB buckets of the shadow memory
_NOTIFY_CODE = _CODE[NOTIFY]
_WW, _RW, _WR = "write/write", "read/write", "write/read"
#: Kinds that touch no memory (notifies, launches, synchronisation).
_NO_ACCESS = frozenset(("ThreadNotifyRecord", "ThreadNotifyWait", "AclrtNotifyRecord", "AclrtNotifyWait",
                        "ChannelNotifyRecord", "ChannelNotifyWait", "ChannelNotifyRecordNow", "ChannelNotifyWaitNow",
                        "KernelLaunch", "Synchronize", "ThreadJoin", "ChannelDrain", "Fence", "Rendezvous"))


def _spans(e):
    """``((space, lo, hi), write)`` of everything entry ``e`` reads and writes, reads first."""
    kind = e.kind
    if e.entry == "task":
        if kind == "LocalCopy":
            s, d, n = e.src_alloc.addr + e.src_off, e.dst_alloc.addr + e.dst_off, e.n
            return (((0, s, s + n), False), ((0, d, d + n), True))
        if kind == "MemcpyAsync":
            d, d_off, s, s_off, n, _keep = e.args
            return (((_space(s), s.addr + s_off, s.addr + s_off + n), False),
                    ((_space(d), d.addr + d_off, d.addr + d_off + n), True))
        if kind == "MemsetAsync":
            a, off, _value, n = e.args
            return (((_space(a), a.addr + off, a.addr + off + n), True),)
        reads, writes = e.reads, e.writes
        if len(reads) == 1 and len(writes) == 1:       # most transfers: one source, one destination
            (a, n), = reads
            (b, m), = writes
            return (((0, a, a + n), False), ((0, b, b + m), True))
        out = [((0, a, a + n), False) for a, n in reads]
        out += [((0, a, a + n), True) for a, n in writes]
        return out
    out = []
    for spans, write in ((e.reads, False), (e.writes, True)):
        for span in spans:
            a, n = span[0], span[1]
            space = _space(span[2]) if len(span) > 2 else 0
            out.append(((space, a, a + n), write))
    return out


def _guaranteed(codes, lost, readers, kept) -> list:
    """A wait's edges without those from the records in ``lost`` (records coalesced into the one it
    consumed first: another schedule runs the wait before them, so they order nothing for sure)."""
    out = []
    for code in codes:
        j = code >> _SHIFT
        if j in lost and code & 15 == _NOTIFY_CODE:
            readers[j] -= 1
            if not readers[j]:
                kept.pop(j, None)
        else:
            out.append(code)
    return out


def never_ran(graph) -> list:
    """The indices of the tasks that never ran and were not behind a failure of their stream:
    still queued when the record was read, or dropped with their stream; in issue order."""
    from ..sim.record import decode
    entries, index = graph._entries, graph._index
    failed: set = set()
    late = []
    for v in graph.record.xlog:
        if v > 0:
            continue
        seq, what = decode(v)
        i = index.get(seq)
        if i is None or entries[i].entry != "task":
            continue
        h = entries[i].stream.handle
        if what == "failed":
            failed.add(h)
        elif h not in failed:
            late.append(i)
    late += [index[t.seq] for t in graph.record.pending() if t.seq in index]
    late.sort()
    return late


def _space(alloc) -> int:
    """0 for device memory; the identity of a host allocation for host memory."""
    return id(alloc) if getattr(alloc, "kind", "device") == "host" else 0


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


class RaceDetector:
    """Walks a graph (:func:`pyhcomm.analysis.happens_before.build`) once; ``races`` then holds
    ``(kind, first entry index, second entry index, space, lo, hi)`` for every unordered pair
    found (one per pair of entries), and :meth:`ordered_before_end` answers for a program."""

    def __init__(self, graph, queries=None):
        self.g = graph
        #: two dicts, entry index b -> [entry index a, ...]: "does a (which ran before b) happen
        #: before b", not counting b's notify edges (the first) or counting them (the second); the
        #: pairs that are not ordered end in ``unordered``
        self.queries: tuple = queries or ({}, {})
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
        entries, preds = g._entries, g._preds
        n = len(entries)
        index = g._index
        xlog = g.record.xlog
        # the executed entries, in execution order: tasks that ran, host effects (done or failed)
        get = index.get
        order = [i for i in map(get, [v for v in xlog if v > 0]) if i is not None]
        failed = [(k, get(-v)) for k, v in enumerate(xlog) if v < 0 and get(-v) is not None
                  and entries[get(-v)].entry == "host"]
        if failed:
            ran_at = {v: k for k, v in enumerate(xlog) if v > 0}
            merged = [(ran_at[entries[i].seq], i) for i in order] + failed
            merged.sort()
            order = [i for _k, i in merged]
        # then the tasks that never ran although nothing failed before them (still queued at the
        # end, or dropped with their stream): on hardware they run later, unordered with what
        # nothing made wait for them
        self.never_ran = late = never_ran(g)
        order += late
        late_set = set(late)
        chain_of = self.chain_of = g._chain
        readers = list(g._readers)
        nch = (max(chain_of) + 1) if chain_of else 0
        zero = np.zeros(nch, dtype=np.int32)
        base = [zero] * nch             # per chain: its clock (own component not kept: see pos)
        at = [0] * nch                  # per chain: the position of its last entry
        pos = [0] * n                   # per entry: its position on its chain
        last_in = [-1] * nch            # per chain: the predecessor on another chain it joined last
        kept: dict = {}                 # entry -> (clock, position), while successors on other chains need it
        shadow = _Shadow()
        cells_of, exact_get = shadow.cells, shadow.exact.get
        before, after = self.queries
        coalesced = g._coalesced
        unordered = self.unordered
        reported = set()
        last_task = self.last_task
        maximum = np.maximum
        host_kind = "host"
        no_access = _NO_ACCESS
        ran = g.ran
        for i in order:
            c = chain_of[i]
            clock = base[c]
            codes = preds[i]
            if i in coalesced:
                codes = _guaranteed(codes, coalesced[i], readers, kept)
            asked = before.get(i)
            if asked and any(chain_of[a] != c for a in asked):
                codes = self._answer(i, c, clock, codes, asked, kept, chain_of, pos)
            if codes:
                fresh = False
                for code in codes:
                    j = code >> _SHIFT
                    if j == last_in[c]:     # this chain's last join already (a program's tasks): known
                        readers[j] -= 1
                        if not readers[j]:
                            del kept[j]
                        continue
                    cj = chain_of[j]
                    if cj == c:
                        continue
                    snap = kept.get(j)
                    if snap is None:
                        continue
                    last_in[c] = j
                    sc, sp = snap
                    if clock[cj] < sp:      # else this chain knows j already, and so what j knew
                        if fresh:
                            maximum(clock, sc, out=clock)
                        else:
                            clock = maximum(clock, sc)
                            fresh = True
                        clock[cj] = sp
                    readers[j] -= 1
                    if not readers[j]:
                        del kept[j]
                base[c] = clock
            p = at[c] + 1
            at[c] = p
            pos[i] = p
            if readers[i]:
                kept[i] = (clock, p)
            asked = after.get(i)
            if asked:
                for a in asked:
                    ca = chain_of[a]
                    if ca != c and clock[ca] < pos[a]:
                        unordered.add((a, i))
            e = entries[i]
            if e.entry != host_kind and i not in late_set:
                last_task[(e.program, c)] = i
            if e.kind in no_access:
                continue
            spans = _spans(e)
            if not spans or (e.entry == host_kind and not ran(e.seq)):
                continue                # nothing touched (a host effect that failed touched nothing)
            # reads first (_spans gives them first): an entry that reads and writes the same bytes
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
        self.pos = pos
        self.final = {c: (base[c], at[c]) for c in range(nch)}
        return self

    def _answer(self, i, c, clock, codes, asked, kept, chain_of, pos):
        """Answer the queries about entry ``i`` with its clock before its ``notify`` edges (what
        orders it without the record it consumed); returns its edges, notify edges last."""
        other = [code for code in codes or () if code & 15 != _NOTIFY_CODE]
        notify = [code for code in codes or () if code & 15 == _NOTIFY_CODE]
        probe = clock.copy()
        for code in other:
            j = code >> _SHIFT
            cj = chain_of[j]
            snap = kept.get(j)
            if cj != c and snap is not None and probe[cj] < snap[1]:
                np.maximum(probe, snap[0], out=probe)
                probe[cj] = snap[1]
        for a in asked:
            ca = chain_of[a]
            if ca != c and probe[ca] < pos[a]:
                self.unordered.add((a, i))
        return other + notify

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
            self._program_chain = {}
            for i, e in enumerate(g._entries):
                if e.entry == "host" and e.program not in self._program_chain and e.kind not in NBI_KINDS:
                    self._program_chain[e.program] = g._chain[i]
        return self._program_chain.get(program)


# -- findings ----------------------------------------------------------------------------------------
def race_findings(detector: RaceDetector, describer: Describer) -> list:
    """One finding per pair of call sites and kinds (the count says how many pairs of entries)."""
    entries = detector.g._entries
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
        lines = [f"{first:5}: {describer.entry(ea)}" + (_NEVER if a in late else ""),
                 f"{second:5}: {describer.entry(eb)}" + (_NEVER if b in late else ""),
                 f"nothing orders them. "
                 + (f"To run the {first} first: " if ea.entry == eb.entry == "task" else "To fix: ")
                 + suggest(ea, eb, describer)]
        if ea.entry == "task" and eb.entry == "task":
            lines.append(f"or, to run the {second} first: {suggest(eb, ea, describer)}")
        title = f"{first} and {second} of {what} are not ordered"
        out[key] = Finding(RACE, title, lines, (ea.seq, eb.seq), key,
                           {"access": kind, "first": ea.seq, "second": eb.seq, "space": "device" if space == 0 else "host",
                            "range": [lo, hi]})
    found = list(out.values())
    for f in found:
        if f.count > 1:
            f.lines.append(f"(and {f.count - 1} more pair(s) of accesses from the same two call sites: other ranks, "
                           "threads or iterations)")
    return found


_NEVER = " (it had not run when the run ended: nothing waited for it; it runs later on hardware)"


def suggest(a, b, d: Describer) -> str:
    """What synchronisation would order ``a`` before ``b``."""
    ta, tb = a.entry == "task", b.entry == "task"
    if a.kind in NBI_KINDS:
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
    return (f"{d.program_label(a.program)} and {d.program_label(b.program)} run unsynchronized: a barrier "
            f"(Comm.barrier) between {d.short(a)} and {d.short(b)}")


__all__ = ["RaceDetector", "race_findings", "suggest"]
