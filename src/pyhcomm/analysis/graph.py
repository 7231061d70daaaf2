"""The happens-before graph as a value: what its readers ask of it (built by
:func:`pyhcomm.analysis.happens_before.build`, whose docstring says what each edge kind means).

Queries (stable): ``seqs``, ``preds(seq)``, ``succs(seq)``, ``edges()``, ``pred_codes()``,
``pred_csr()``, ``entry(seq)``, ``event(seq)``, ``program(seq)``, ``programs``,
``host_program(program)``, ``stream(seq)``, ``step(seq)``, ``ran(seq)``, ``order()``,
``executed()``, ``happens_before(a, b)``, ``complete``. Every ``seq`` is an entry of the record;
``order()`` is a topological order of the entries that executed (their execution order).

Columns, for the analyses and the replay that read every entry (positions are indices into
``seqs``, in issue order):

* :attr:`Graph.columns` (:class:`Columns`): numpy arrays per entry (seq, signed step, host effect
  or task, kind code, program, kernel), the kinds by code, where the tasks and host effects are
  and their objects; :meth:`Graph.engines` the engine of every entry, by code (read on first use); ``columns.mask(test)`` says per entry whether
  its kind passes ``test`` (a function of a :class:`~pyhcomm.sim.kinds.Kind`, asked once per
  kind); :meth:`Graph.objects` gives the entries at some positions, :meth:`Graph.read` one field
  of each through their kinds' accessors;
* :attr:`Graph.entries` (the task objects and host effects), :meth:`Graph.chains` (the chain of
  every entry: a stream, a program, or NBI transfers a fence completes), :attr:`Graph.coalesced`
  (notify records lost into another's bit), :attr:`Graph.notify_columns` and
  :meth:`Graph.notify_split` (the notify uses), :meth:`Graph.step_table`, :attr:`Graph.kernel_of`.
"""
from __future__ import annotations

from collections import deque
from itertools import count
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from ..sim.kinds import Role, Unit

_ENGINE = attrgetter("engine")

STREAM, KERNEL_END, NOTIFY, PROGRAM, BATCH, LAUNCH = "stream", "kernel_end", "notify", "program", "batch", "launch"
SYNC, JOIN, DRAIN, FENCE, RENDEZVOUS = "sync", "join", "drain", "fence", "rendezvous"
FLAG, BLOCK = "flag", "block"
#: Every edge kind, in the order of the table of :mod:`.happens_before`.
EDGE_KINDS = (STREAM, KERNEL_END, NOTIFY, PROGRAM, BATCH, LAUNCH, SYNC, JOIN, DRAIN, FENCE, RENDEZVOUS, FLAG, BLOCK)
#: Each edge kind's code: an edge is stored as ``src_index << SHIFT | code`` (:meth:`Graph.pred_csr`).
CODE = {k: i for i, k in enumerate(EDGE_KINDS)}
SHIFT = 4
CODE_MASK = (1 << SHIFT) - 1


class Edge(NamedTuple):
    """A direct predecessor: ``src`` (its seq) happens before the entry, for reason ``kind``."""

    src: int
    kind: str


class Program(NamedTuple):
    """A host program or kernel: ``id`` (the record's ``program``), ``kernel`` (the seq of its
    ``KernelLaunch``, None for a host program), the ``ranks`` it issued entries for, and a label
    for messages (``rank 0's host program``, ``kernel HcclAllGather of rank 1 (launch #41)``)."""

    id: int
    kernel: int | None
    ranks: tuple
    label: str


class Columns(NamedTuple):
    """What the build read of every entry, as numpy arrays in issue order (see the module
    docstring): ``seq``; ``step`` (+step: ran, -step: failed or skipped, 0: never executed);
    ``is_host``; ``kind`` (a code: ``kinds[code]`` is the :class:`~pyhcomm.sim.kinds.Kind`);
    ``program`` (-1: none); ``kernel`` (the KernelLaunch seq of the kernel that issued it, 0: none);
    ``tasks`` and ``host``:
    the positions of the tasks and host effects, ``task_entries`` and ``host_entries`` their
    objects (``tasks[j]`` is ``task_entries[j]``); ``on_device``: per task, whether a kernel
    issued it. Read-only."""

    seq: np.ndarray
    step: np.ndarray
    is_host: np.ndarray
    kind: np.ndarray
    kinds: list
    program: np.ndarray
    kernel: np.ndarray
    tasks: np.ndarray
    task_entries: list
    host: np.ndarray
    host_entries: list
    on_device: np.ndarray

    def mask(self, test, codes=None) -> np.ndarray:
        """Per entry (or per code of ``codes``): whether ``test(kind)`` holds for its kind."""
        lut = np.fromiter((bool(test(k)) for k in self.kinds), bool, len(self.kinds))
        codes = self.kind if codes is None else codes
        return lut[codes] if len(lut) else np.zeros(len(codes), dtype=bool)


class Built(NamedTuple):
    """What the build hands the graph besides the columns (see :func:`.happens_before.build`)."""

    ptr: np.ndarray             # entry i's edges are codes[ptr[i]:ptr[i + 1]]
    codes: np.ndarray           # src_index << SHIFT | edge kind code
    xsteps: tuple               # (seqs, signed steps) of the execution log
    coalesced: dict             # wait index -> the records after the first one it consumed
    launcher: dict              # KernelLaunch seq -> the program that queued it
    stream_of_task: np.ndarray  # per task: its stream handle (the tasks' chains)
    host_keys: list             # (index, chain key) of the host effects
    kernel_programs: list       # the programs of the kernels' host effects, and their launches
    kernel_seqs: list
    host_notify: list           # indices of the host effects with a notify
    notify_columns: object      # NotifyColumns of the notify uses that ran


class Graph:
    """The happens-before graph of a record (see the module docstring). Built by
    :func:`pyhcomm.analysis.happens_before.build`.

    The edges are kept as two numpy arrays (:meth:`pred_csr`); the per-entry lists of
    :meth:`pred_codes`, the seq index and the step table are made on first use."""

    def __init__(self, record, columns: Columns, built: Built, complete: bool):
        self.record = record
        self.columns = columns
        self._n = len(columns.seq)
        self._ptr, self._codes = built.ptr, built.codes
        self._built = built
        self._lazy: dict = {}
        self._succs = None
        self._programs = None
        self._builder = None
        self._locate = None
        #: whether the record held every entry (nothing dropped, recording never disabled)
        self.complete = complete

    # -- columns -----------------------------------------------------------------------------------
    @property
    def entries(self) -> list:
        """The task objects and host effects, in issue order (made on first use)."""
        out = self._lazy.get("entries")
        if out is None:
            c = self.columns
            order = np.empty(self._n, dtype=np.int64)
            order[c.tasks] = np.arange(len(c.tasks), dtype=np.int64)
            order[c.host] = np.arange(len(c.tasks), self._n, dtype=np.int64)
            out = self._lazy["entries"] = list(map((c.task_entries + c.host_entries).__getitem__, order.tolist()))
        return out

    @property
    def coalesced(self) -> dict:
        """wait index -> the records after the first one it consumed (coalesced into the bit the
        first one set, so lost: in another schedule the wait runs before them). Read-only."""
        return self._built.coalesced

    @property
    def notify_columns(self):
        """The notify records and waits that ran with a generation
        (:class:`~.happens_before.NotifyColumns`)."""
        return self._built.notify_columns

    def positions(self) -> tuple:
        """``(task position, host position)`` per entry: entry ``i`` is ``columns.task_entries[tp[i]]``
        or ``columns.host_entries[hp[i]]`` (-1 in the other); made at each call (a caller reading
        many entries keeps them while it needs them)."""
        c = self.columns
        it = np.int32 if self._n < np.iinfo(np.int32).max else np.int64
        tp = np.full(self._n, -1, dtype=it)
        tp[c.tasks] = np.arange(len(c.tasks), dtype=it)
        hp = np.full(self._n, -1, dtype=it)
        hp[c.host] = np.arange(len(c.host), dtype=it)
        return tp, hp

    def objects(self, at, positions=None) -> list:
        """The task objects and host effects at positions ``at`` (a numpy integer array);
        ``positions``: what :meth:`positions` gave, when at hand."""
        c = self.columns
        if positions is None:
            if "entries" in self._lazy or not len(at):
                return list(map(self.entries.__getitem__, np.asarray(at).tolist()))
            positions = self.positions()
        tp_all, hp_all = positions
        tasks, host = c.task_entries, c.host_entries
        tp = tp_all[at]
        if (tp >= 0).all():
            return list(map(tasks.__getitem__, tp.tolist()))
        return [tasks[t] if t >= 0 else host[h] for t, h in zip(tp.tolist(), hp_all[at].tolist())]

    def read(self, at, field: str, objs=None, positions=None) -> list:
        """Field ``field`` of the entries at positions ``at``, through their kinds' accessors
        (:meth:`pyhcomm.sim.kinds.Kind.getter`), in the order of ``at`` (``objs``: their objects,
        when at hand). One pass when their kinds share the accessor."""
        objs = self.objects(at, positions) if objs is None else objs
        c = self.columns
        codes = c.kind[at]
        present = np.flatnonzero(np.bincount(codes, minlength=len(c.kinds))).tolist() if len(at) else []
        getters = {c.kinds[k].getter(field) for k in present}
        if len(getters) == 1:
            return list(map(getters.pop(), objs))
        out = [None] * len(objs)
        for k in present:
            get = c.kinds[k].getter(field)
            for j in np.flatnonzero(codes == k).tolist():
                out[j] = get(objs[j])
        return out

    def engines(self) -> tuple:
        """``(codes, engines)``: per entry the code of its engine (``engines[code]``: the engine
        object, or the name a snapshot kept; None included), read on first use (one pass over the
        entries: the replay asks only when its cost model prices engines). Read-only."""
        out = self._lazy.get("engines")
        if out is None:
            first: dict = {}            # engine -> a number of its own (where it was first seen)
            c, at_ = self.columns, count()
            raw = np.empty(self._n, dtype=np.int64)
            for at, entries in ((c.tasks, c.task_entries), (c.host, c.host_entries)):
                raw[at] = np.fromiter(map(first.setdefault, map(_ENGINE, entries), at_), np.int64, len(entries))
            numbers, codes = np.unique(raw, return_inverse=True)
            by_number = {v: k for k, v in first.items()}
            out = self._lazy["engines"] = (codes.reshape(-1).astype(np.int32),
                                           [by_number[v] for v in numbers.tolist()])
        return out

    def notify_split(self) -> tuple:
        """The notify records and waits (ran or not): ``(task indices, host effect indices)``."""
        c = self.columns
        return c.tasks[c.mask(_uses_notify, c.kind[c.tasks])], self._built.host_notify

    def notify_entries(self) -> list:
        """The indices of the notify records and waits, in issue order."""
        out = self._lazy.get("notify")
        if out is None:
            tasks, host = self.notify_split()
            out = np.sort(np.concatenate([tasks, np.asarray(host, dtype=np.int64)])).tolist()
            self._lazy["notify"] = out
        return out

    def step_table(self) -> dict:
        """seq -> +step / -step, as ``Record.step_table()`` when the graph was built."""
        d = self._lazy.get("steps")
        if d is None:
            seqs, signed = self._built.xsteps
            d = self._lazy["steps"] = dict(zip(seqs.tolist(), signed.tolist()))
        return d

    @property
    def kernel_of(self) -> dict:
        """kernel program -> the seq of its KernelLaunch."""
        out = self._lazy.get("kernel_of")
        if out is None:
            c, b = self.columns, self._built
            tasks = c.tasks[c.on_device]
            tasks = tasks[c.kernel[tasks] != 0]
            out = {(p if p >= 0 else None): k for p, k in zip(c.program[tasks].tolist(), c.kernel[tasks].tolist())}
            out.update(zip(b.kernel_programs, b.kernel_seqs))
            self._lazy["kernel_of"] = out
        return out

    def chains(self, as_list: bool = False):
        """Per entry its chain (a stream, a program, or NBI transfers that fences separate), numbered
        in order of their first entry: a numpy array (``as_list``: a list). Read-only."""
        if "chain" not in self._lazy:
            self._number_chains()
        return self._lazy["chain" if as_list else "chain_array"]

    def _number_chains(self) -> None:
        tasks, handles, host_keys = self.columns.tasks, self._built.stream_of_task, self._built.host_keys
        chain = np.zeros(self._n, dtype=np.int64)
        if len(tasks):
            uniq, first, inverse = np.unique(handles, return_index=True, return_inverse=True)
            task_first = tasks[first]
        else:
            uniq, inverse, task_first = (), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        key_first: dict = {}
        for i, key in host_keys:
            key_first.setdefault(key, i)
        firsts = np.concatenate([task_first, np.fromiter(key_first.values(), np.int64, len(key_first))])
        rank = np.empty(len(firsts), dtype=np.int64)
        rank[np.argsort(firsts, kind="stable")] = np.arange(len(firsts))
        if len(tasks):
            chain[tasks] = rank[:len(uniq)][inverse.reshape(-1)]
        key_id = dict(zip(key_first, rank[len(uniq):].tolist()))
        for i, key in host_keys:
            chain[i] = key_id[key]
        self._lazy["chain"] = chain.tolist()
        self._lazy["chain_array"] = chain

    # -- made on first use -------------------------------------------------------------------------
    @property
    def seqs(self) -> list:
        """The seq of every entry, in issue order."""
        out = self._lazy.get("seqs")
        if out is None:
            out = self._lazy["seqs"] = self.columns.seq.tolist()
        return out

    @property
    def _index(self) -> dict:
        d = self._lazy.get("index")
        if d is None:
            d = self._lazy["index"] = {s: i for i, s in enumerate(self.seqs)}
        return d

    @property
    def _preds(self) -> list:
        """Per entry: None or the list of its edge codes (``src_index << SHIFT | kind code``)."""
        out = self._lazy.get("preds")
        if out is None:
            codes = self._codes.tolist()
            ptr = self._ptr.tolist()
            out = [codes[a:b] or None for a, b in zip(ptr, ptr[1:])]
            self._lazy["preds"] = out
        return out

    # -- reading -----------------------------------------------------------------------------------
    def __len__(self):
        return self._n

    def __contains__(self, seq):
        return seq in self._index

    def locate(self, seqs: np.ndarray) -> np.ndarray:
        """The entry indices of ``seqs`` (a numpy integer array), -1 for a seq not in the graph."""
        if self._locate is None:
            self._locate = locator(self.columns.seq)
        return self._locate(np.asarray(seqs, dtype=np.int64))

    def entry(self, seq):
        """The task object or host effect of ``seq`` (as the record keeps it)."""
        return self.entries[self._index[seq]]

    def event(self, seq):
        """The typed event of ``seq`` (:mod:`pyhcomm.sim.events`; built on demand)."""
        if self._builder is None:
            from ..sim.event_builder import Builder
            self._builder = Builder(self.record, self.record.steps(), _issued(self.entries))
        return self._builder.build(self.entry(seq))

    def preds(self, seq) -> tuple:
        """The direct predecessors of ``seq``, as :class:`Edge` values."""
        seqs = self.seqs
        i = self._index[seq]
        return tuple(Edge(seqs[c >> SHIFT], EDGE_KINDS[c & CODE_MASK])
                     for c in self._codes[self._ptr[i]:self._ptr[i + 1]].tolist())

    def pred_codes(self) -> list:
        """Every entry's direct predecessors in compact form, for replays over the whole graph:
        per entry, in the order of ``seqs``, None or a list of ``src << SHIFT | k``, ``src`` the
        position of the predecessor in ``seqs`` and ``k`` the index of its kind in
        :data:`EDGE_KINDS`. Read-only."""
        return self._preds

    def pred_csr(self) -> tuple:
        """The same as two numpy arrays ``(ptr, codes)``: entry ``i``'s codes are
        ``codes[ptr[i]:ptr[i + 1]]``, in the order :meth:`pred_codes` lists them. Read-only."""
        return self._ptr, self._codes

    def succs(self, seq) -> tuple:
        """The entries ``seq`` is a direct predecessor of, as :class:`Edge` values (``src`` is the
        successor's seq)."""
        if self._succs is None:
            succs = [[] for _ in range(self._n)]
            for i, codes in enumerate(self._preds):
                for c in codes or ():
                    succs[c >> SHIFT].append(i << SHIFT | (c & CODE_MASK))
            self._succs = succs
        seqs = self.seqs
        return tuple(Edge(seqs[c >> SHIFT], EDGE_KINDS[c & CODE_MASK]) for c in self._succs[self._index[seq]])

    def edges(self):
        """Every edge as ``(src, dst, kind)``, grouped by ``dst`` in issue order."""
        seqs = self.seqs
        for i, codes in enumerate(self._preds):
            for c in codes or ():
                yield seqs[c >> SHIFT], seqs[i], EDGE_KINDS[c & CODE_MASK]

    def step(self, seq):
        """The step of the entry's first execution-log entry (None: not executed)."""
        s = self.step_table().get(seq)
        return None if s is None else abs(s)

    def ran(self, seq) -> bool:
        """Whether the entry ran (a task that started running, a host effect that succeeded)."""
        return self.step_table().get(seq, 0) > 0

    def program(self, seq):
        """The ``program`` of the entry: the host program or kernel that issued it."""
        return getattr(self.entry(seq), "program", None)

    def stream(self, seq):
        """The stream handle of a task (None for a host effect)."""
        e = self.entry(seq)
        return e.stream.handle if e.entry == "task" else None

    @property
    def programs(self) -> dict:
        """program id -> :class:`Program`."""
        if self._programs is None:
            self._programs = _programs(self.entries)
        return self._programs

    def host_program(self, program):
        """The host program behind ``program``: itself, or for a kernel the program that queued
        its launch (followed up, for kernels launched from kernels)."""
        kernel_of, launcher = self.kernel_of, self._built.launcher
        for _ in range(64):
            k = kernel_of.get(program)
            if k is None:
                return program
            program = launcher.get(k)
        return program

    def executed(self):
        """The positions (in ``seqs``) of the entries that executed, in execution order: a numpy
        array (see :meth:`order`)."""
        step = self.columns.step
        done = np.flatnonzero((step > 0) | (self.columns.is_host & (step != 0)))
        return done[np.argsort(np.abs(step[done]), kind="stable")]

    def order(self) -> list:
        """The seqs of every entry that executed (ran, or failed as a host effect), in execution
        order: a topological order of the graph restricted to them."""
        return self.columns.seq[self.executed()].tolist()

    def happens_before(self, a: int, b: int) -> bool:
        """Whether there is a path ``a -> ... -> b`` (a backward search from ``b``; for tests and
        small graphs: the race detector uses vector clocks)."""
        if a == b:
            return False
        target = self._index[a]
        seen = {self._index[b]}
        todo = deque(seen)
        preds = self._preds
        while todo:
            i = todo.popleft()
            for c in preds[i] or ():
                j = c >> SHIFT
                if j == target:
                    return True
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return False


def _uses_notify(kind) -> bool:
    return kind.notify is not None


def _issued(entries) -> dict:
    out: dict = {}
    for e in entries:
        k = getattr(e, "kernel", None)
        if k:
            out.setdefault(k, []).append(e.seq)
    return out


def _programs(entries) -> dict:
    ranks: dict = {}
    devices: dict = {}
    kernels: dict = {}
    blocks: dict = {}
    launches = {}
    rank_of_device: dict = {}
    met: dict = {}          # program -> its rank at the first rendezvous it joined (a join, a barrier)
    for e in entries:
        p = e.program
        if e.kind.role is Role.LAUNCH:
            launches[e.seq] = e
        elif e.kind.role is Role.RENDEZVOUS:
            for r, q in zip(e.kind.get(e, "ranks", ()) or (), e.kind.get(e, "programs", ()) or ()):
                met.setdefault(q, r)
        elif e.kind.unit is Unit.AIV and p is not None:
            blocks[p] = e.kind.get(e, "block")
        if e.rank is not None and e.device is not None:
            rank_of_device.setdefault(e.device, e.rank)
        if p is None:
            continue
        r = ranks.setdefault(p, set())
        if e.rank is not None:
            r.add(e.rank)
        elif e.device is not None:
            devices.setdefault(p, set()).add(e.device)
        k = e.kernel
        if k:
            kernels[p] = k
    out = {}
    for p, rs in sorted(ranks.items()):
        for dev in devices.get(p, ()):      # entries of no rank (acl calls): the rank on their device
            if dev in rank_of_device:
                rs.add(rank_of_device[dev])
        if not rs and p in met and p not in kernels:    # none: its rank where it met the others
            rs.add(met[p])
        out[p] = Program(p, kernels.get(p), tuple(sorted(rs)), "")
    return {p: prog._replace(label=_label(prog, launches, blocks.get(p))) for p, prog in out.items()}


def _label(prog: Program, launches: dict, block=None) -> str:
    rs, k = prog.ranks, prog.kernel
    on = f" of rank {rs[0]}" if len(rs) == 1 else ""
    if k is not None:
        launch = launches.get(k)
        name = launch.kind.get(launch, "name") if launch is not None else "?"
        if block is not None:       # a block of an AIV kernel: a program of its own
            return f"block {block} of AIV kernel {name}{on} (launch #{k})"
        return f"kernel {name}{on} (launch #{k})"
    if len(rs) == 1:
        return f"rank {rs[0]}'s host program"
    return f"host program {prog.id}"


def int_column(values, missing=-1):
    """A numpy int64 array of ``values`` (a list of ints or None; None gives ``missing``)."""
    n = len(values)
    try:
        return np.fromiter(values, np.int64, n)
    except TypeError:
        return np.fromiter(map({None: missing}.get, values, values), np.int64, n)


def locator(seq):
    """A function mapping a numpy array of seqs to their positions in ``seq`` (sorted), -1 where
    absent."""
    n = len(seq)
    if n and int(seq[-1]) - int(seq[0]) == n - 1:       # contiguous: the common case
        base = int(seq[0])

        def locate(values):
            pos = values - base
            if not len(pos) or (int(pos.min()) >= 0 and int(pos.max()) < n):
                return pos
            return np.where((pos >= 0) & (pos < n), pos, -1)
    elif n:
        def locate(values):
            pos = np.minimum(np.searchsorted(seq, values), n - 1)
            return np.where(seq[pos] == values, pos, -1)
    else:
        def locate(values):
            return np.full(len(values), -1, dtype=np.int64)
    return locate


__all__ = ["Graph", "Columns", "Edge", "Program", "EDGE_KINDS", "CODE", "SHIFT", "CODE_MASK", "STREAM", "KERNEL_END",
           "NOTIFY", "PROGRAM", "BATCH", "LAUNCH", "SYNC", "JOIN", "DRAIN", "FENCE", "RENDEZVOUS", "FLAG", "BLOCK", "locator",
           "int_column"]
