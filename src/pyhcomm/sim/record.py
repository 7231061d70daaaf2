"""The record of one Sim: what was issued (the issue log) and what was executed (the execution log).

* **Issue log**: every enqueued task and every host effect, numbered by one counter (``seq``) in
  the order they were issued. Tasks are kept as the task objects themselves (creating a task
  builds nothing more); host effects (:class:`HostEffect`: a synchronous copy, a host
  synchronize, a thread join ...) are small objects numbered from the same counter.
* **Execution log**: a compact array, one entry per execution step: a task that ran (appended by
  the scheduler just before it runs), a task that failed without running (a wait that timed out
  or deadlocked) or that was skipped (behind a failure, or on a destroyed stream), a task that ran
  and failed (a second entry), and every host effect (executed when issued, so in both logs).

Typed events (:mod:`pyhcomm.sim.events`) are built from the two logs when the record is read
(:meth:`Record.events`) and exported as JSON lines (:meth:`Record.export_jsonl`, schema in
docs/record.md).
"""
from __future__ import annotations

import io
import json
import os
from array import array
from collections import deque
from itertools import count
from typing import NamedTuple

from .kinds import Kind, engine_name, named
from .runtime import program_ctx
from .task import DONE, FAILED, PENDING, call_site, site_text

#: Execution-log entries: ``seq`` (it ran), ``-seq`` (it failed), ``-(seq | SKIP_FLAG)`` (it was
#: skipped). The common entry is the plain seq, so the scheduler appends ``task.seq`` as it is
#: (the other two through :meth:`Record.failed` and :meth:`Record.skipped`).
SKIP_FLAG = 1 << 48


def decode(v: int) -> tuple:
    """``(seq, what)`` of an execution-log entry (``what``: ``"ran"``, ``"failed"``, ``"skipped"``)."""
    if v > 0:
        return v, "ran"
    v = -v
    if v & SKIP_FLAG:
        return v ^ SKIP_FLAG, "skipped"
    return v, "failed"


def outcome(status: str, error=None) -> str:
    """What a blocking call ended with, for its host effect: the scheduler's status (done, timeout,
    stuck, aborted), or the code name of the stream failure it reports."""
    if error is not None:
        code = getattr(error, "code", None)
        return getattr(code, "name", None) or type(error).__name__
    return status


class ExecStep(NamedTuple):
    """One execution-log entry: ``step`` (1, 2, ...), the entry's ``seq`` and what happened
    (``"ran"``, ``"failed"`` or ``"skipped"``)."""

    step: int
    seq: int
    what: str


class HostEffect:
    """An effect done at once by the host (or by a kernel, outside any stream): recorded in both
    logs. ``kind`` is its :class:`~pyhcomm.sim.kinds.Kind`; ``extra`` holds the kind-specific
    fields of its event (see :mod:`.events`); ``engine``: the engine of the thread, channel or
    engine context it used (whatever object that is; None: none)."""

    __slots__ = ("seq", "kind", "api", "state", "rank", "device", "side", "engine", "thread", "stream",
                 "kernel", "site", "reads", "writes", "extra", "program")
    entry = "host"
    batch = None

    def __init__(self, kind, api, state, rank, device, side, engine, thread, stream, kernel, site,
                 reads, writes, extra):
        self.seq = 0
        self.kind, self.api, self.state = kind, api, state
        self.rank, self.device, self.side, self.engine = rank, device, side, engine
        self.thread, self.stream, self.kernel, self.site = thread, stream, kernel, site
        self.reads, self.writes, self.extra = reads, writes, extra
        self.program = None

    @property
    def where(self) -> str:
        return site_text(self.site)

    def __repr__(self):
        return f"<HostEffect #{self.seq} {self.kind} {self.state}>"


def _filtered(items, rank, device, kind) -> list:
    """``items`` (tasks or events) of ``rank``, ``device`` and ``kind`` where those are given."""
    if rank is not None:
        items = [x for x in items if x.rank == rank]
    if device is not None:
        items = [x for x in items if x.device == device]
    if kind is not None:
        items = [x for x in items if x.kind == kind]
    return items


def _peek(counter) -> int:
    """The next value of an ``itertools.count`` without taking it."""
    return int(repr(counter)[6:-1])


class Record:
    """The issue and execution logs of one Sim (bounded: ``capacity`` entries of each kind, 0 =
    unbounded; ``PYHCOMM_RECORD_CAPACITY``, default 1,000,000).

    ``enabled`` False stops recording (tasks are still numbered). ``tasks()`` gives the task
    objects; ``events()`` the typed events of tasks and host effects; ``issue_log()`` and
    ``exec_log()`` the two orders.
    """

    def __init__(self, capacity: int = 1_000_000):
        self.capacity = capacity
        #: the issue log: the task objects and the host effects, each in issue order (the scheduler
        #: appends a task as it is enqueued: ``append``, inlined on its hot path)
        self.task_log = deque(maxlen=capacity or None)
        self.host_log = deque(maxlen=capacity or None)
        self.xlog = array("q")          # execution log (see ``decode``)
        self._exec_dropped = 0          # entries trimmed from the front (steps stay absolute)
        self.counter = count(1)         # the global issue order (``seq``), also while disabled
        self.batch_ids = count(1)       # HCOMM batch ids
        self.enabled = True
        self._base = 0                  # seqs below this were cleared
        self._partial = False           # some entry was dropped (clear with pending tasks, capacity)
        #: registries for reading the record after the objects are gone (handles are never reused)
        self.thread_engines: dict = {}  # thread handle -> its engine's name (kinds.engine_name)
        self.channel_info: dict = {}    # channel handle -> (CommProtocol name, peer rank)
        #: HCOMM batches that ended: (batch id, program, first seq, last seq); a task is in the
        #: batch when its program is that one and its seq is in that range
        self.batches: list = []
        #: device allocations made: (addr, size, device, owner), to name memory in reports
        self.allocations: list = []

    # -- recording ---------------------------------------------------------------------------------
    def append(self, task) -> None:
        self.task_log.append(task)

    def note_thread(self, thread) -> None:
        self.thread_engines[thread.handle] = engine_name(thread.engine)

    def note_channel(self, end) -> None:
        self.channel_info[end.handle] = (end.protocol.name, end.peer_rank)

    def note_allocation(self, alloc) -> None:
        self.allocations.append((alloc.addr, alloc.size, alloc.device, alloc.owner))

    def note_batch(self, batch_id: int, program, first: int, last: int) -> None:
        """A batch ended: its tasks, issued by ``program``, got the seqs ``first .. last``."""
        if self.enabled:
            self.batches.append((batch_id, program, first, last))

    def ran(self, task) -> None:
        """Log that ``task`` starts running (the scheduler inlines this on its hot path)."""
        if self.enabled:
            self.xlog.append(task.seq)

    def failed(self, task) -> None:
        if self.enabled and task.seq:
            self.xlog.append(-task.seq)

    def skipped(self, task) -> None:
        if self.enabled and task.seq:
            self.xlog.append(-(task.seq | SKIP_FLAG))

    def trim(self) -> None:
        """Keep the execution log within twice the capacity (drops the oldest half)."""
        limit = self.capacity
        if limit and len(self.xlog) > 2 * limit:
            k = len(self.xlog) - limit
            del self.xlog[:k]
            self._exec_dropped += k

    def step_count(self) -> int:
        """Execution-log entries so far: the step the latest one got (steps stay absolute when
        the log is trimmed or cleared)."""
        return self._exec_dropped + len(self.xlog)

    def position(self) -> tuple:
        """``(program, next seq, step count)``: the calling host program, and where the record
        stands now (what merging the records of MPI processes notes of a rendezvous arrival)."""
        from .runtime import program_ctx
        return program_ctx().program, self.next_seq(), self.step_count()

    def next_seq(self) -> int:
        """The seq the next entry will get (nothing is taken)."""
        return _peek(self.counter)

    def host_effect(self, kind: str, api: str, *, ok: bool = True, rank=None, device=None, engine=None,
                    thread=None, stream=None, reads=(), writes=(), **extra):
        """Record a host effect of ``kind`` (a :class:`~pyhcomm.sim.kinds.Kind` of entry ``"host"``)
        that just happened (``ok`` False: the call failed); returns it (None while recording is
        disabled). ``reads``/``writes``: ``(addr, size)`` or ``(addr, size, allocation)`` (the
        allocation tells host memory from device memory)."""
        if kind.__class__ is not Kind:
            kind = named(kind)
        return self.effect(kind, api, ok, rank, device, engine, thread, stream, tuple(reads), tuple(writes), extra,
                           None)

    def effect(self, kind, api, ok, rank, device, engine, thread, stream, reads: tuple, writes: tuple, extra: dict,
               ctx):
        """:meth:`host_effect` with every field given in order (``reads`` and ``writes`` tuples,
        ``extra`` a dict) and the caller's program context (None: looked up): for the calls whose
        whole work is an effect (NBI transfers, host notify waits), where binding keywords cost
        as much as the rest."""
        seq = next(self.counter)
        if not self.enabled:
            return None
        if ctx is None:
            ctx = program_ctx()
        kernels = ctx.kernels
        if device is None:
            device = ctx.device
        e = HostEffect(kind, api, DONE if ok else FAILED, rank, device, "device" if kernels else "host", engine,
                       thread, stream, kernels[-1].seq if kernels else None, call_site(), reads, writes, extra)
        e.seq = seq
        e.program = ctx.program
        self.host_log.append(e)
        self.xlog.append(seq if ok else -seq)
        if self.capacity and len(self.xlog) > 2 * self.capacity:
            self.trim()
        return e

    # -- reading -----------------------------------------------------------------------------------
    def tasks(self, *, rank=None, device=None, kind=None):
        """Return the recorded tasks in enqueue order, optionally filtered."""
        return _filtered(list(self.task_log), rank, device, kind)

    def host_effects(self, *, kind=None):
        """Return the recorded host effects in issue order."""
        out = list(self.host_log)
        return out if kind is None else [e for e in out if e.kind == kind]

    def entries(self):
        """Tasks and host effects together, in issue (seq) order."""
        out = list(self.task_log) + list(self.host_log)
        out.sort(key=_seq)
        return out

    def issue_log(self) -> list:
        """The seqs of every recorded entry, in issue order."""
        return [e.seq for e in self.entries()]

    def exec_log(self) -> list:
        """The execution log as :class:`ExecStep` values, in execution order."""
        base = self._exec_dropped + 1
        return [ExecStep(base + i, *decode(v)) for i, v in enumerate(self.xlog)]

    def steps(self) -> dict:
        """seq -> the step of its first execution-log entry."""
        out = {}
        base = self._exec_dropped + 1
        for i, v in enumerate(self.xlog):
            seq = decode(v)[0]
            if seq not in out:
                out[seq] = base + i
        return out

    def step_table(self) -> dict:
        """seq -> the step of its first execution-log entry, positive when that entry says it
        ran, negative when it failed or was skipped (cheaper than :meth:`exec_log` for analyses)."""
        out = {}
        step = self._exec_dropped
        for v in self.xlog:
            step += 1
            if v > 0:
                if v not in out:
                    out[v] = step
            else:
                seq = -v
                if seq & SKIP_FLAG:
                    seq ^= SKIP_FLAG
                if seq not in out:
                    out[seq] = -step
        return out

    def events(self, *, rank=None, device=None, kind=None) -> list:
        """The typed events (:mod:`pyhcomm.sim.events`) of every recorded entry, in issue order."""
        from .event_builder import Builder
        entries = self.entries()
        issued: dict = {}
        for e in entries:
            k = getattr(e, "kernel", None)
            if k:
                issued.setdefault(k, []).append(e.seq)
        b = Builder(self, self.steps(), issued)
        # all of them: host regions are numbered in issue order
        return _filtered([b.build(e) for e in entries], rank, device, kind)

    def export_jsonl(self, dest) -> int:
        """Write every event as one JSON object per line (docs/record.md); returns the count.

        ``dest``: a path, or an open text or binary file. Keys keep their field order; no wall
        clock, no object ids; host addresses are written as ``host#<k>+<offset>``.
        """
        encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        lines = [encode(ev.to_json()) for ev in self.events()]
        text = "".join(line + "\n" for line in lines)
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        elif isinstance(dest, (io.RawIOBase, io.BufferedIOBase)) or "b" in getattr(dest, "mode", ""):
            dest.write(text.encode("utf-8"))
        else:
            dest.write(text)
        return len(lines)

    def pending(self):
        """The recorded tasks not yet run, in enqueue order (queued on streams: tasks in batches
        not yet ended are not enqueued, so not here)."""
        return [t for t in list(self.task_log) if t.state == PENDING]  # list(): a copy taken at once

    def whole(self) -> bool:
        """Whether the record holds every task enqueued since it was created or last cleared
        without pending tasks (recording never disabled meanwhile, nothing dropped): then
        :meth:`pending` is every queued task."""
        if not self.enabled or self._partial:
            return False
        if self.capacity and (len(self.task_log) >= self.capacity or len(self.host_log) >= self.capacity):
            return False
        return len(self.task_log) + len(self.host_log) == _peek(self.counter) - 1 - self._base

    def clear(self) -> None:
        """Forget every entry and the execution log (numbering goes on)."""
        if any(t.state == PENDING for t in list(self.task_log)):
            self._partial = True
        self.task_log.clear()
        self.host_log.clear()
        self.batches.clear()
        self._exec_dropped += len(self.xlog)
        del self.xlog[:]
        self._base = _peek(self.counter) - 1

    def set_capacity(self, capacity: int) -> None:
        """Keep at most ``capacity`` tasks and host effects (0 = unbounded); keeps the newest."""
        if capacity and (len(self.task_log) > capacity or len(self.host_log) > capacity):
            self._partial = True
        self.capacity = capacity
        self.task_log = deque(self.task_log, maxlen=capacity or None)
        self.host_log = deque(self.host_log, maxlen=capacity or None)

    def __len__(self):
        return len(self.task_log)


def _seq(e):
    return e.seq


__all__ = ["Record", "HostEffect", "ExecStep", "SKIP_FLAG", "decode", "outcome"]
