"""One record from the records of several processes (ranks over MPI: one Sim per process).

Every process of an MPI job keeps the record of its own Sim (docs/record.md). To read a whole run
with the tools that read one record (the happens-before graph, the verifier's checks, the timing
replay), the records are merged:

* :func:`~pyhcomm.sim.snapshot.snapshot` turns a Sim's record into a
  :class:`~pyhcomm.sim.snapshot.ProcessRecord` (:mod:`.snapshot`: the entries as values, both
  logs, what the MPI transport noted); its names are available here too.
* :func:`merge` makes one :class:`~pyhcomm.sim.record.Record` of the snapshots of every process of
  a job (or of Sims, records, saved files):

  - **numbering**: one issue order (``seq`` 1, 2, ...) interleaving the processes' issue logs, one
    execution log interleaving theirs; program and batch ids of process ``p`` follow those of
    the processes before it; handles (threads, streams, channels, and the handles named in a
    notify's owner) of process ``p`` get ``p << 32`` added (process 0 keeps its own);
  - **remote notifies**: a notify record sent to a rank of another process has no generation in
    its process's record; messages between two processes arrive in order, so the n-th record one
    process sent to a notify is the n-th arrival from it, whose generation the target noted;
  - **rendezvous**: a process records no ``Rendezvous`` of a world whose ranks live in several
    processes; the merge makes one per communicator init and host barrier from the arrivals the
    processes noted (as one process records it: every member program's last host effect before
    it precedes it, it precedes what they do after);
  - both orders respect what crossed processes (a wait after the remote records it consumed, a
    rendezvous after its members arrived and before they went on), so the execution order is
    still a topological order of the happens-before graph.

  The merged record is whole (``Record.whole()``) when every part was. Devices must differ between
  processes (each rank of a world has its own device; device addresses name the device).
* :func:`gather`: in an MPI job, every process calls it; the root gets the merged record.

``pyhcomm.launch(fn, n, mpi=True, sim=sim)`` outside an MPI job leaves the merged record of the
job in ``sim.record``.
"""
from __future__ import annotations

import bisect
import os
import re
from array import array
from collections import deque
from itertools import count

from .record import SKIP_FLAG
from .kinds import RENDEZVOUS, NotifyUse
from .record import Record, decode
from .snapshot import Entry, MemoryRef, NotifyRef, ProcessRecord, StreamRef, snapshot  # noqa: F401

_HEX = re.compile(r"0x[0-9a-fA-F]+")


def gather(source=None, root: int = 0):
    """In an MPI job every process calls this with its Sim (default: the current one; for
    ``pyhcomm.launch``, the ``sim=`` it ran in): process ``root`` gets the merged record of all,
    the others None. Outside a job: the merged record of ``source`` alone."""
    from . import current_sim
    sim = source if source is not None else current_sim()
    part = snapshot(sim)
    parts = sim.transport.gather(part, root)
    return None if parts is None else merge(parts)


# -- merging -------------------------------------------------------------------------------------------
def _handle_bases() -> tuple:
    from .handles import Handles
    h = Handles()
    return tuple(getattr(h, name)._base for name in Handles.__slots__)


_BASES = _handle_bases()


def _is_handle(v) -> bool:
    return v.__class__ is int and any(b <= v < b + (1 << 32) for b in _BASES)


class _Part:
    """One process's record while merging: its maps from old numbers to merged ones."""

    def __init__(self, rec: ProcessRecord, prog_off: int, batch_off: int):
        self.rec = rec
        self.p = rec.process
        self.off = rec.process << 32
        self.prog_off, self.batch_off = prog_off, batch_off
        self.entries = rec.entries
        self.seqs = [e.seq for e in rec.entries]
        self.new_seq: dict = {}
        self.streams: dict = {}
        self.gens: dict = {}            # index of a remote record -> the generation it set

    def h(self, v, process=None):
        """A handle of process ``process`` (default: this one) in the merged numbering."""
        off = self.off if process is None else process << 32
        return v + off if off and _is_handle(v) else v

    def seq_at_or_after(self, old: int):
        k = bisect.bisect_left(self.seqs, old)
        return self.new_seq.get(self.seqs[k]) if k < len(self.seqs) else None

    def seq_at_or_before(self, old: int):
        k = bisect.bisect_right(self.seqs, old) - 1
        return self.new_seq.get(self.seqs[k]) if k >= 0 else None


def _notify_of(e):
    return e.kind.get(e, "notify")


def _is_wait(e) -> bool:
    return e.kind.notify is NotifyUse.WAIT


def _parts(sources) -> list:
    out = []
    for s in sources:
        if isinstance(s, ProcessRecord):
            out.append(s)
        elif isinstance(s, (str, os.PathLike)):
            out.append(ProcessRecord.load(s))
        else:
            out.append(snapshot(s))
    return out


def merge(sources) -> Record:
    """One record of the records of every process of a run (see the module docstring).

    ``sources``: :class:`ProcessRecord` values, Sims, Records or paths of saved snapshots, one per
    process (any order). Raises ``ValueError`` when they cannot come from one run: two of the same
    process, a device used in two processes, or a process missing."""
    recs = sorted(_parts(sources), key=lambda r: r.process)
    if not recs:
        raise ValueError("merge: no record given")
    if len(recs) > 1 and any(r.facts is None for r in recs):
        raise ValueError("merge: records of several Sims must come from the processes of one MPI job")
    procs = [r.process for r in recs]
    if len(set(procs)) != len(procs):
        raise ValueError(f"merge: two records of MPI process {next(p for p in procs if procs.count(p) > 1)}")
    if len(recs) > 1 and procs != list(range(recs[0].processes)):
        missing = sorted(set(range(recs[0].processes)) - set(procs))
        raise ValueError(f"merge: the records of MPI process(es) {missing} are missing")
    owner_of_device: dict = {}
    for r in recs:
        for e in r.entries:
            d = e.device
            if d is not None and owner_of_device.setdefault(d, r.process) != r.process:
                raise ValueError(f"merge: MPI processes {owner_of_device[d]} and {r.process} both use device {d}: "
                                 "the records can be merged only when every process has devices of its own")
    parts, prog_off, batch_off = [], 0, 0
    for r in recs:
        parts.append(_Part(r, prog_off, batch_off))
        prog_off += _max_program(r)
        batch_off += max((b[0] for b in r.batches), default=0)
    by_process = {part.p: part for part in parts}
    _remote_generations(parts, by_process)
    meetings, dropped = _meetings(parts)
    return _build(parts, meetings, dropped)


def _max_program(r: ProcessRecord) -> int:
    out = max((e.program or 0 for e in r.entries), default=0)
    out = max([out] + [b[1] or 0 for b in r.batches])
    for m in (r.facts or {}).get("meetings", ()):
        out = max(out, m[4] or 0)
    return out


def _ran_in_order(part: _Part):
    """The indices of the part's entries in the order they first ran (execution log)."""
    index = {s: i for i, s in enumerate(part.seqs)}
    seen = set()
    for _step, v in part.rec.xlog:
        if v <= 0:
            continue
        i = index.get(v)
        if i is not None and i not in seen:
            seen.add(i)
            yield i


def _remote_generations(parts, by_process) -> None:
    """Give every notify record sent to another process the generation it set there: the n-th
    record a process sent to one notify is the n-th arrival of that notify from it."""
    for part in parts:
        facts = part.rec.facts
        if not facts:
            continue
        mine: dict = {}         # (end, index) -> [entry indices] in the order they ran
        for i in _ran_in_order(part):
            e = part.entries[i]
            n = _notify_of(e)
            if n is None or n.process == part.p or n.end is None or _is_wait(e) or e.state != "done":
                continue
            mine.setdefault((n.end, n.index), []).append(i)
        for key, idx in mine.items():
            target = by_process.get(key[0] >> 32)
            if target is None or not target.rec.facts:
                continue
            got = target.rec.facts["arrivals"].get((part.p, key[0], key[1]), ())
            first = facts["sent"].get(key, len(idx)) - len(idx)    # records of it the record lost
            for k, i in enumerate(idx):
                if 0 <= first + k < len(got):
                    part.gens[i] = got[first + k]


class _Meeting:
    """A rendezvous of ranks of several processes, made from their arrivals."""

    def __init__(self, key, nranks, group):
        self.key, self.nranks, self.group = key, nranks, group
        self.members: dict = {}     # rank -> (part, program, device, seq boundary, step boundary)
        self.api = None
        self.entry = None


def _meetings(parts):
    """The rendezvous every rank of its world arrived at, and the ``Rendezvous`` entries the
    processes recorded of them themselves (to drop: the merged one replaces them)."""
    found: dict = {}
    dropped = set()         # (process, seq)
    for part in parts:
        facts = part.rec.facts
        if not facts:
            continue
        by_seq = {e.seq: e for e in part.entries if e.kind is RENDEZVOUS}
        for key, rank, nranks, device, program, seq, step, group in facts["meetings"]:
            m = found.get(key)
            if m is None:
                m = found[key] = _Meeting(key, nranks, group)
            m.members[rank] = (part, program, device, seq, step)
            own = by_seq.get(seq)
            if own is not None:
                dropped.add((part.p, seq))
                m.api = own.api
    out = []
    for m in found.values():
        if m.nranks is None or len(m.members) < m.nranks:
            continue        # a world that never formed (or a barrier not every rank reached)
        if len({(part.p, prog) for part, prog, *_ in m.members.values()}) == 1:
            continue        # one program joined every rank (HcclCommInitAll): no rendezvous
        if m.api is None:
            m.api = "Comm.barrier" if m.key[0] == "barrier" else "HcclCommInitRootInfo"
        out.append(m)
    out.sort(key=lambda m: (m.key[0] != "init", m.key[1:]))
    return out, dropped


class _Interleaving:
    """Every part's items emitted in its own order, interleaved so that an item follows its
    ``deps`` (``(part index, item index)`` that must come first) and the meetings of its program
    that it follows, and a meeting follows what its members did before arriving
    (``need_of(meeting, part index, part)``: how many of that part's items come first)."""

    def __init__(self, parts, items, meetings, item_program, need_of, deps):
        self.parts, self.items, self.item_program, self.deps = parts, items, item_program, deps
        self.ptr = [0] * len(parts)
        self.pindex = {part.p: k for k, part in enumerate(parts)}
        self.fronts: dict = {}      # (part index, program) -> deque of (seq boundary, meeting)
        needs = []
        for m in meetings:
            need = {}
            for part, program, _dev, seq, _step in m.members.values():
                k = self.pindex[part.p]
                self.fronts.setdefault((k, program), []).append((seq, id(m), m))
                need[k] = max(need.get(k, 0), need_of(m, k, part))
            needs.append((m, need))
        for key, lst in self.fronts.items():
            lst.sort(key=lambda x: (x[0], x[1]))
            self.fronts[key] = deque((seq, m) for seq, _i, m in lst)
        self.done = set()
        self.pending = {id(m): (m, need) for m, need in needs}    # in the order of ``meetings``

    def blocked(self, k, i) -> bool:
        q = self.fronts.get((k, self.item_program(k, i)))
        if q:
            seq, m = q[0]
            if id(m) not in self.done and self.parts[k].seqs_of_items[i] >= seq:
                return True
        for dk, di in self.deps(k, i):
            if self.ptr[dk] <= di:
                return True
        return False

    def meeting_ready(self, m, need) -> bool:
        if any(self.ptr[k] < c for k, c in need.items()):
            return False
        for part, program, _dev, _seq, _step in m.members.values():
            q = self.fronts[(self.pindex[part.p], program)]
            if q[0][1] is not m:
                return False
        return True

    def release(self, m) -> None:
        self.done.add(id(m))
        for part, program, *_ in m.members.values():
            q = self.fronts[(self.pindex[part.p], program)]
            if q and q[0][1] is m:
                q.popleft()
            else:       # a meeting emitted out of turn (see run)
                for x in [x for x in q if x[1] is m]:
                    q.remove(x)

    def run(self, emit, emit_meeting) -> None:
        items, ptr, pending = self.items, self.ptr, self.pending
        total = sum(len(x) for x in items)
        emitted = 0
        while emitted < total or pending:
            progressed = False
            for k in range(len(items)):
                lst = items[k]
                while ptr[k] < len(lst) and not self.blocked(k, ptr[k]):
                    emit(k, ptr[k])
                    ptr[k] += 1
                    emitted += 1
                    progressed = True
                if pending:     # a meeting can go only when it is first in its every member's queue
                    progressed |= self._meetings(emit_meeting)
            if progressed:
                continue
            # nothing can go on: the records do not say enough (recording disabled meanwhile, a join
            # that did not wait): go on with the earliest meeting, or the first waiting item
            if pending:
                m, _need = pending.pop(next(iter(pending)))
                emit_meeting(m)
                self.release(m)
                continue
            k = next(k for k in range(len(items)) if ptr[k] < len(items[k]))
            emit(k, ptr[k])
            ptr[k] += 1
            emitted += 1

    def _meetings(self, emit_meeting) -> bool:
        """Emit the meetings that are ready; whether any was."""
        progressed = False
        for key in {id(q[0][1]) for q in self.fronts.values() if q}:
            m, need = self.pending.get(key, (None, None))
            if m is not None and self.meeting_ready(m, need):
                emit_meeting(m)
                self.release(m)
                del self.pending[key]
                progressed = True
        return progressed


def _interleave(parts, items, meetings, item_program, need_of, deps, emit, emit_meeting) -> None:
    """See :class:`_Interleaving`."""
    _Interleaving(parts, items, meetings, item_program, need_of, deps).run(emit, emit_meeting)


def _build(parts, meetings, dropped) -> Record:
    order = _issue_order(parts, meetings, dropped)
    owners: dict = {}       # (process, owner text) -> merged owner text
    entries_new: dict = {}  # (process, old seq) -> merged Entry
    for part, i in order:
        if part is None:
            continue
        entries_new[(part.p, part.entries[i].seq)] = _renumbered(part, i, owners)
    for m in meetings:
        m.entry = _rendezvous_entry(m)
    xlog = _exec_order(parts, meetings, entries_new)
    return _record(parts, order, entries_new, xlog)


def _issue_order(parts, meetings, dropped) -> list:
    """The merged issue order: ``(part, entry index)`` or ``(None, meeting)``; numbers them."""
    for part in parts:
        part.items = [i for i, e in enumerate(part.entries) if (part.p, e.seq) not in dropped]
        part.seqs_of_items = [part.entries[i].seq for i in part.items]
    seqs = count(1)
    order: list = []

    def emit_issue(k, j):
        part = parts[k]
        i = part.items[j]
        part.new_seq[part.entries[i].seq] = next(seqs)
        order.append((part, i))

    def emit_meeting_issue(m):
        m.seq = next(seqs)
        order.append((None, m))

    _interleave(parts, [p.items for p in parts], meetings,
                lambda k, j: parts[k].entries[parts[k].items[j]].program,
                lambda m, k, part: bisect.bisect_left(part.seqs_of_items, max(
                    seq for pt, _pr, _d, seq, _s in m.members.values() if pt is part)),
                lambda k, j: (), emit_issue, emit_meeting_issue)
    return order


def _exec_order(parts, meetings, entries_new) -> array:
    """The merged execution log."""
    for part in parts:
        keep = {part.entries[i].seq for i in part.items}
        part.x_items = [(step, v) for step, v in part.rec.xlog if decode(v)[0] in keep]
        part.x_seqs = [decode(v)[0] for _step, v in part.x_items]
        part.x_steps = [step for step, _v in part.x_items]
    for part in parts:      # exec items read by the interleaving's blocked(): the entry's seq
        part.seqs_of_items_issue, part.seqs_of_items = part.seqs_of_items, part.x_seqs
    deps = _notify_deps(parts, entries_new)
    xlog = array("q")

    def emit_exec(k, j):
        part = parts[k]
        seq, what = decode(part.x_items[j][1])
        new = part.new_seq[seq]
        xlog.append(new if what == "ran" else -new if what == "failed" else -(new | SKIP_FLAG))

    def emit_meeting_exec(m):
        xlog.append(m.seq)

    entry_of = [{e.seq: e for e in part.entries} for part in parts]
    _interleave(parts, [p.x_items for p in parts], meetings,
                lambda k, j: entry_of[k][parts[k].x_seqs[j]].program,
                lambda m, k, part: bisect.bisect_right(part.x_steps, max(
                    step for pt, _pr, _d, _seq, step in m.members.values() if pt is part)),
                lambda k, j: deps.get((k, j), ()), emit_exec, emit_meeting_exec)
    return xlog


def _record(parts, order, entries_new, xlog) -> Record:
    """The merged :class:`~pyhcomm.sim.record.Record`."""
    rec = Record(0)
    for part, i in order:
        if part is None:        # a meeting
            e = i.entry
            e.seq = i.seq
        else:
            e = entries_new[(part.p, part.entries[i].seq)]
        (rec.task_log if e.entry == "task" else rec.host_log).append(e)
    rec.xlog = xlog
    rec.counter = count(len(order) + 1)
    rec._partial = not all(p.rec.whole for p in parts)
    for part in parts:
        r = part.rec
        rec.thread_engines.update({part.h(k): v for k, v in r.thread_engines.items()})
        rec.channel_info.update({part.h(k): v for k, v in r.channel_info.items()})
        for bid, program, lo, hi in r.batches:
            first, last = part.seq_at_or_after(lo), part.seq_at_or_before(hi)
            if first is not None and last is not None:
                rec.batches.append((bid + part.batch_off, _prog(part, program), first, last))
        rec.allocations.extend(r.allocations)
    rec.batch_ids = count(max((b[0] for b in rec.batches), default=0) + 1)
    rec.processes = tuple(p.p for p in parts)
    return rec


def _prog(part, program):
    return None if program is None else program + part.prog_off


def _owner(part, n, owners) -> NotifyRef:
    """The merged name of notify ``n`` (named as its own process names it)."""
    proc = n.process if n.process is not None else part.p
    key = (proc, n.owner)
    text = owners.get(key)
    if text is None:
        off = proc << 32
        text = n.owner if not off else _HEX.sub(
            lambda mo: f"0x{int(mo.group(0), 16) + off:x}" if _is_handle(int(mo.group(0), 16)) else mo.group(0),
            n.owner)
        owners[key] = text
    return NotifyRef(text, n.index, proc, n.end, n.counting)


def _renumbered(part: _Part, i: int, owners) -> Entry:
    """A copy of the part's entry ``i`` in the merged numbering."""
    old = part.entries[i]
    f = dict(old.__dict__)
    f["seq"] = part.new_seq[old.seq]
    if f.get("kernel"):
        f["kernel"] = part.new_seq.get(f["kernel"], f["kernel"])
    if "program" in f:
        f["program"] = _prog(part, f["program"])
    if f.get("batch") is not None:
        f["batch"] = f["batch"] + part.batch_off
    if f.get("thread"):
        f["thread"] = part.h(f["thread"])
    if old.entry == "task":
        s = f["stream"]
        ref = part.streams.get(s.handle)
        if ref is None:
            ref = part.streams[s.handle] = StreamRef(part.h(s.handle), s.device, s.label, s.destroyed)
        f["stream"] = ref
        for name in ("detail", "target"):
            v = f.get(name)
            if v.__class__ is tuple and v and v[0].__class__ is int:
                f[name] = (part.h(v[0]),) + v[1:]
        if f.get("channel").__class__ is int:       # a transfer's channel handle
            f["channel"] = part.h(f["channel"])
        n = f.get("notify")
        if n is not None:
            f["notify"] = _owner(part, n, owners)
        args = f.get("args")
        if args.__class__ is tuple:
            f["args"] = tuple(_owner(part, a, owners) if isinstance(a, NotifyRef) else
                              part.streams.get(a.handle) or StreamRef(part.h(a.handle), a.device, a.label,
                                                                      a.destroyed)
                              if isinstance(a, StreamRef) else a for a in args)
        if i in part.gens:
            f["gen"] = part.gens[i]
    else:
        if f.get("stream"):
            f["stream"] = part.h(f["stream"])
        extra = dict(f.get("extra") or {})
        if extra.get("channel") is not None:
            extra["channel"] = part.h(extra["channel"])
        if "streams" in extra:
            extra["streams"] = tuple(part.h(s) for s in extra["streams"])
        if extra.get("notify") is not None:
            extra["notify"] = _owner(part, extra["notify"], owners)
            if i in part.gens:
                extra["gen"] = part.gens[i]
        if extra.get("first") is not None:
            extra["first"] = part.seq_at_or_after(extra["first"]) or f["seq"]
        if "programs" in extra:
            extra["programs"] = tuple(_prog(part, q) for q in extra["programs"])
        f["extra"] = extra
    return Entry(f)


def _rendezvous_entry(m: _Meeting) -> Entry:
    ranks = tuple(sorted(m.members))
    last = m.members[ranks[-1]]
    part, program, device = last[0], last[1], last[2]
    extra = {"group": m.group, "ranks": ranks,
             "programs": tuple(_prog(m.members[r][0], m.members[r][1]) for r in ranks)}
    return Entry({"entry": "host", "seq": 0, "kind": RENDEZVOUS, "api": m.api, "state": "done", "rank": None,
                  "device": device, "side": "host", "engine": None, "thread": None, "stream": None, "kernel": None,
                  "reads": (), "writes": (), "extra": extra, "program": _prog(part, program), "batch": None,
                  "site": None})


def _notify_deps(parts, entries_new) -> dict:
    """(part index, exec item index) of a wait -> the exec items of other processes that must come
    before it: per process, its last record of that notify whose generation the wait consumed or
    passed."""
    records: dict = {}      # merged (owner, index) -> {part index: ([gen], [exec item index])}
    waits = []
    for k, part in enumerate(parts):
        first_ran = {}
        for j, (_step, v) in enumerate(part.x_items):
            if v > 0 and v not in first_ran:
                first_ran[v] = j
        for seq, j in first_ran.items():
            e = entries_new[(part.p, seq)]
            n = _notify_of(e)
            if n is None:
                continue
            gen = e.kind.get(e, "gen")
            if gen is None:
                continue
            key = (n.owner, n.index)
            if _is_wait(e):
                waits.append((k, j, key, gen))
            else:
                slot = records.setdefault(key, {}).setdefault(k, ([], []))
                slot[0].append(gen)
                slot[1].append(j)
    out: dict = {}
    for k, j, key, gen in waits:
        got = []
        for k2, (gens, js) in records.get(key, {}).items():
            if k2 == k:
                continue
            order = sorted(zip(gens, js))
            g = [x[0] for x in order]
            pos = bisect.bisect_right(g, gen) - 1
            if pos >= 0:
                got.append((k2, max(x[1] for x in order[:pos + 1])))
        if got:
            out[(k, j)] = tuple(got)
    return out


__all__ = ["merge", "gather", "ProcessRecord", "Entry", "StreamRef", "MemoryRef", "NotifyRef", "snapshot"]
