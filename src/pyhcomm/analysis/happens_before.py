"""The happens-before graph of a record: for every entry, its direct predecessors and why.

``graph = build(sim.record)`` (or ``build(sim)``) reads the issue and execution logs of a record
(docs/record.md) and gives, for every entry (a task or a host effect, named by its ``seq``), the
entries that directly happen before it, each with the kind of the edge:

=============== ================================================================================
kind            ``src -> dst`` means
=============== ================================================================================
``stream``      ``src`` is the task queued just before ``dst`` on the same stream (FIFO order).
``kernel_end``  ``dst`` is queued behind a ``KernelLaunch`` on its stream, and ``src`` is the last
                host effect of that launch's kernel (the kernel ended after it; the stream waits
                for the kernel's end). No such edge when the kernel issued no host effect: the
                ``stream`` edge from the launch says all.
``notify``      ``dst`` is a wait (``ThreadNotifyWait``, ``AclrtNotifyWait``, ``ChannelNotifyWait``,
                ``ChannelNotifyWaitNow``) and ``src`` a record whose generation it consumed
                (``gen``): the record that set the generation the wait read, and the records that
                coalesced into it (generations after the one the notify's previous wait read).
                Records are ``*NotifyRecord*`` entries and the ``WithNotify`` transfers.
``program``     ``src`` is the last host effect the same program (``program`` field: a host
                program or a kernel) issued before ``dst``: program order. Tasks are not in the
                chain (a task runs after its issue, later), nor are the NBI host effects (they
                complete at a fence).
``batch``       as ``program`` (or ``launch``), for a task launched by ``HcommBatchModeEnd``: its
                ``seq`` is given at the batch's end, so the edge comes from the last host effect
                its program issued before the end (or the kernel's launch when there is none):
                every task of a batch is launched there, together.
``launch``      ``src`` is the ``KernelLaunch`` of the kernel that issued ``dst`` outside a batch,
                and the kernel issued no host effect before ``dst``: the kernel starts when its
                launch runs.
``sync``        ``dst`` is a ``Synchronize`` (stream / device synchronize, stream destroy) and
                ``src`` the last task that ran, before it returned, on a stream it waited for
                (when that task is a ``KernelLaunch``: also the kernel's last host effect).
``join``        as ``sync``, for ``HcommThreadJoin``.
``drain``       as ``sync``, for ``HcommChannelDrainOnThread``.
``fence``       ``dst`` is a ``Fence`` (``HcommFenceOnThread``, ``HcommChannelFence[OnThread]`` on
                the host) and ``src`` an NBI transfer its program posted (on that channel, for a
                channel fence) since the previous fence: the NBI completes there.
``rendezvous``  ``dst`` is a ``Rendezvous`` (communicator init, ``Comm.barrier``) and ``src`` the
                last host effect of a member program before it; the rendezvous is then in the
                program order of every member (their next entries get a ``program`` edge).
``flag``        ``dst`` is an ``AivFlagLoad`` (a block of an AIV kernel read a flag) and ``src``
                the ``AivFlagStore`` whose value it read (release / acquire).
``block``       ``dst`` is an ``AivSyncAll`` (the block barrier) and ``src`` the last entry
                another block of the kernel issued before it arrived there; or ``dst`` is the
                ``AivKernelEnd`` and ``src`` another block's last entry.
=============== ================================================================================

An edge ``src -> dst`` says that ``dst``'s execution begins after ``src``'s ended; so does
every path. Entries that never ran (pending, skipped, a wait that failed) are nodes too (with
their ``stream``, ``program`` and other static edges), but get no ``notify`` edge. A blocking call
that timed out, was stuck or aborted gets no ``sync`` / ``join`` / ``drain`` edge.

The graph (:class:`~.graph.Graph`, :mod:`.graph`: its queries and its public columns) is what
:func:`build` returns; the names of :mod:`.graph` are available here too.

What an entry is comes from its kind's traits and accessors (:mod:`pyhcomm.sim.kinds`: a launch,
a blocking call and its edge kind, a fence, a rendezvous, an NBI transfer, a notify record or
wait), never from its kind's name. The build reads each field of the entries once, column by
column, and finds the edges of the tasks with numpy (tasks are almost every entry: a 1024-rank ring AllGather records 6 million);
host effects, few, are read one by one. Per-entry lists (``pred_codes()``) and the verifier's
chains are made on first use.
"""
from __future__ import annotations

import gc
from itertools import compress, count
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from ..sim.record import SKIP_FLAG
from ..sim.kinds import NotifyUse, Role, kinds_where
from .graph import (BATCH, BLOCK, CODE, CODE_MASK, DRAIN, EDGE_KINDS, FENCE, FLAG, JOIN, KERNEL_END,  # noqa: F401
                    LAUNCH, NOTIFY, PROGRAM, RENDEZVOUS, SHIFT, STREAM, SYNC, Built, Columns, Edge, Graph, Program,
                    int_column, locator)
from .keysort import stable_argsort

#: Host effects whose transfer completes at a fence (the NBI family).
NBI_KINDS = kinds_where(lambda k: k.at_fence)
#: Results of a blocking call after which the streams it waited for had ended.
_NOT_ENDED = frozenset(("timeout", "stuck", "aborted"))
_SEQ, _KIND, _PROGRAM, _KERNEL = (attrgetter(a) for a in ("seq", "kind", "program", "kernel"))
_TASK_KEY = attrgetter("kind", "side", "program", "stream")
_DEVICE_SIDE = "device"


def build(source) -> Graph:
    """The happens-before graph of ``source``: a :class:`pyhcomm.sim.record.Record` or a Sim.

    Python's cyclic garbage collector is paused meanwhile (as the cooperative scheduler does while
    it drives): the record's task objects form no cycles, and each collection would scan them all.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _build(source)
    finally:
        if paused:
            gc.enable()


def _kernels(tasks, on_device, programs):
    """The kernel (KernelLaunch seq, 0: none) of the device-side ``tasks`` (``on_device``: a mask
    of them; ``programs``: their programs, -1: none), a numpy int64 array. A kernel issues its
    tasks from the program context its launch made (``sim.kernel.start_kernel``), a program of its
    own, and the enqueue sets a task's kernel and program from that one context
    (``hcomm.enqueue.enqueue``; a merge of MPI records renumbers both per process): so each
    program's kernel is read from one of its tasks, not from millions. Tasks without a program
    are read one by one."""
    at = np.flatnonzero(on_device)
    if len(programs) and int(programs.min()) >= 0:
        one = np.full(int(programs.max()) + 1, -1, dtype=np.int64)
        one[programs] = at                      # a task of each program (whichever is written last)
        have = np.flatnonzero(one >= 0)
        of_program = np.zeros(len(one), dtype=np.int64)
        of_program[have] = int_column([tasks[i].kernel for i in one[have].tolist()], 0)
        return of_program[programs]
    return int_column(list(map(_KERNEL, compress(tasks, on_device.tolist()))), 0)


def _program_ids(entries):
    """The ``program`` of each entry as a numpy int64 array (-1: None)."""
    try:
        return np.fromiter(map(_PROGRAM, entries), np.int64, len(entries))
    except TypeError:
        return int_column(list(map(_PROGRAM, entries)))


class _Columns:
    """What the build reads of the entries, one field at a time: positions in issue order of the
    tasks (``T``) and host effects (``H``), and per entry its seq, kind code (``kinds[code]``: the
    kind), program (-1: None), kernel (the KernelLaunch seq, 0: none) and signed step."""

    def __init__(self, record):
        i64 = np.int64
        tasks, host = record.tasks(), record.host_effects()
        tasks, task_seq = _in_seq_order(tasks)
        host, host_seq = _in_seq_order(host)
        nt, nh = len(tasks), len(host)
        self.n = n = nt + nh
        # the merge of the two (a seq is a task's or a host effect's, never both's): each entry's
        # position is its rank in its list plus the entries of the other list before it
        self.T = np.arange(nt, dtype=i64) + np.searchsorted(host_seq, task_seq)
        self.H = np.arange(nh, dtype=i64) + np.searchsorted(task_seq, host_seq, side="right")
        self.seq = np.empty(n, dtype=i64)
        self.seq[self.T] = task_seq
        self.seq[self.H] = host_seq
        self.tasks, self.host = tasks, host
        self.locate = locator(self.seq)
        self.is_host = np.zeros(n, dtype=bool)
        self.is_host[self.H] = True
        self.table: dict = {}           # kind -> its code (in order of first appearance)
        self.kc = np.empty(n, dtype=i64)
        self.pid = np.empty(n, dtype=i64)
        self._read_tasks(tasks)
        self.kc[self.H] = np.fromiter(map(self._code, map(_KIND, host)), i64, nh)
        self.pid[self.H] = _program_ids(host)
        self.kernel = np.zeros(n, dtype=i64)
        dev = self.T[self.on_device]
        if len(dev):
            self.kernel[dev] = _kernels(tasks, self.on_device, self.pid[dev])
        self.is_launch = self.of_kind(lambda k: k.role is Role.LAUNCH)
        self.step, self.xsteps = _steps(record, self.locate, n, self.seq)

    def _read_tasks(self, tasks) -> None:
        """The tasks' columns: one read of (kind, side, program, stream), whose
        combinations are few (a pass over millions of tasks costs its iteration more than the
        fields it reads): each combination is decoded once. (The combinations are kept while the
        build runs, with the collector paused: see build.)"""
        i64, nt = np.int64, len(tasks)
        combos: dict = {}
        combo_at = np.fromiter(map(combos.setdefault, map(_TASK_KEY, tasks), count()), i64, nt)
        firsts = np.fromiter(combos.values(), i64, len(combos))          # increasing
        which = np.searchsorted(firsts, combo_at)
        del combo_at
        self.kc[self.T] = np.array([self._code(k) for k, _s, _p, _st in combos], dtype=i64)[which]
        self.on_device = np.array([side == _DEVICE_SIDE for _k, side, _p, _st in combos], dtype=bool)[which]
        self.pid[self.T] = np.array([-1 if p is None else p for _k, _s, p, _st in combos], dtype=i64)[which]
        self.handle = np.array([st.handle for _k, _s, _p, st in combos], dtype=i64)[which]

    def _code(self, kind) -> int:
        code = self.table.get(kind)
        if code is None:
            code = self.table[kind] = len(self.table)
        return code

    def of_kind(self, test):
        """Per entry: whether ``test(kind)`` holds for its kind."""
        lut = np.fromiter((bool(test(k)) for k in self.table), bool, len(self.table))
        return lut[self.kc] if len(lut) else np.zeros(self.n, dtype=bool)

    def columns(self) -> Columns:
        """The graph's public columns."""
        return Columns(self.seq, self.step, self.is_host, self.kc, list(self.table), self.pid, self.kernel, self.T,
                       self.tasks, self.H, self.host, self.on_device)

    def launch_at(self, kernels):
        """The positions of the KernelLaunch tasks of ``kernels`` (seqs); KeyError for one that is
        not in the record."""
        at = self.locate(kernels)
        if len(at) and (int(at.min()) < 0 or not self.is_launch[at].all()):
            bad = (at < 0) | ~self.is_launch[np.maximum(at, 0)]
            raise KeyError(int(kernels[bad][0]))
        return at


def _in_seq_order(entries) -> tuple:
    """``(entries sorted by seq, their seqs as a numpy array)``."""
    seqs = np.fromiter(map(_SEQ, entries), np.int64, len(entries))
    if len(seqs) > 1 and not (seqs[1:] > seqs[:-1]).all():
        perm = np.argsort(seqs, kind="stable")
        return list(map(entries.__getitem__, perm.tolist())), seqs[perm]
    return entries, seqs


def _first_steps(logged, locate, seq) -> tuple:
    """``np.unique(logged, return_index=True)``: the seqs in the execution log, sorted, and where
    each first appears. Without a sort when every logged seq is an entry's (``locate``, ``seq``:
    the entries' positions and sorted seqs) and appears once (the common case)."""
    at = locate(logged)
    if len(at) and (at >= 0).all():
        n = len(seq)
        first = np.full(n, -1, dtype=np.int64)
        first[at] = np.arange(len(at), dtype=np.int64)
        present = first >= 0
        if int(np.count_nonzero(present)) == len(at):     # as many entries as log lines: each once
            if len(at) == n:                # every entry, once
                return seq, first
            return seq[present], first[present]
    return np.unique(logged, return_index=True)


def _steps(record, locate, n, seq) -> tuple:
    """Per entry the signed step of its first execution-log entry (0: none), and ``(seqs, signed
    steps)`` of every seq in the log (what ``Record.step_table()`` gives)."""
    i64 = np.int64
    xlog = record.xlog
    xl = np.frombuffer(xlog, dtype=i64).copy() if len(xlog) else np.zeros(0, dtype=i64)
    dropped = record.step_count() - len(xl)
    ran = xl > 0
    failed = ~ran                           # -seq or -(seq | SKIP_FLAG): decoded in place
    np.negative(xl, out=xl, where=failed)
    np.bitwise_and(xl, ~SKIP_FLAG, out=xl, where=failed)
    del failed
    useq, first = _first_steps(xl, locate, seq)
    signed = (dropped + 1 + first) * np.where(ran[first], 1, -1)
    if useq is seq:                         # every entry was logged
        return signed, (useq, signed)
    step = np.zeros(n, dtype=i64)
    at = locate(useq)
    found = at >= 0
    step[at[found]] = signed[found]
    return step, (useq, signed)


class _Streams:
    """The tasks grouped by stream, in issue order: ``prev`` (per entry: the task before it on its
    stream, -1), and for the blocking calls, the tasks of each stream (``range``: handle -> slice
    of ``by_stream``)."""

    def __init__(self, c: _Columns):
        o = stable_argsort(c.handle)
        self.by_stream, handles = c.T[o], c.handle[o]
        same = handles[1:] == handles[:-1]
        self.prev = np.full(c.n, -1, dtype=np.int64)
        self.prev[self.by_stream[1:][same]] = self.by_stream[:-1][same]
        bounds = np.flatnonzero(np.concatenate([[True], ~same])) if len(o) else np.zeros(0, dtype=np.int64)
        self.range = dict(zip(handles[bounds].tolist(), zip(bounds.tolist(), np.append(bounds[1:], len(o)).tolist())))


class _HostEffects:
    """The host effects, one by one (few: synchronous calls, kernels' fences and joins, call
    markers): their edges, and what the tasks' edges need of them."""

    def __init__(self, c: _Columns, streams: _Streams):
        self.c, self.streams = c, streams
        self.dst: list = []             # their edges, in order
        self.codes: list = []
        self.events: list = []          # (program, index): a program's last host effect changed here
        self.kernel_last: dict = {}     # KernelLaunch seq -> index of its kernel's last host effect
        self.kernel_programs: list = []
        self.kernel_seqs: list = []
        self.keys: list = []            # (index, chain key)
        self.notify: list = []          # indices of host effects with a notify
        self.records: list = []         # (owner, index, gen, entry index, notify) of notify records
        self.waits: list = []           # the same for notify waits
        self.last_he: dict = {}         # program -> index of its last host effect so far (program order)
        self.nbi: dict = {}             # program -> [(index, channel)] posted since its last fence
        self.nbi_free: dict = {}        # program -> keys of NBI chains whose transfers a fence completed
        self.chain: dict = {}           # index -> chain key
        for i, e in zip(c.H.tolist(), c.host):
            self._visit(i, e)

    def _visit(self, i: int, e) -> None:
        """Host effect ``e`` at index ``i``: its chain, its edges, what it tells the tasks."""
        c, kind, program, kernel = self.c, e.kind, e.program, e.kernel
        if kernel:
            self.kernel_programs.append(program)
            self.kernel_seqs.append(kernel)
            c.kernel[i] = kernel
        if kind.at_fence:
            free = self.nbi_free.get(program)
            key = free.pop() if free else ("nbi", i)
        else:
            key = ("program", program)
        self.keys.append((i, key))
        self.chain[i] = key
        mine = []
        src = self.last_he.get(program)
        if src is not None:
            mine.append(src << SHIFT | CODE[PROGRAM])
        elif kernel:
            mine.append(int(c.launch_at(np.array([kernel]))[0]) << SHIFT | CODE[LAUNCH])
        if kind.at_fence:
            self.nbi.setdefault(program, []).append((i, kind.get(e, "channel")))
        else:
            self._in_program(i, e, kind, program, kernel, mine)
        n_ = kind.get(e, "notify")
        if n_ is not None:
            self.notify.append(i)
            gen = kind.get(e, "gen")
            if gen is not None:
                uses = self.waits if kind.notify is NotifyUse.WAIT else self.records
                uses.append((n_.owner, n_.index, gen, i, n_))
        if mine:
            self.dst.extend([i] * len(mine))
            self.codes.extend(mine)

    def _in_program(self, i, e, kind, program, kernel, mine) -> None:
        """The edges of a host effect in its program's order (not an NBI transfer), by role."""
        role = kind.role
        if role is Role.HOST_SYNC:
            if kind.get(e, "result") not in _NOT_ENDED:
                _tails(mine, e, i, self.c, self.streams, self.kernel_last, CODE[kind.sync_edge])
        elif role is Role.FENCE:
            self._fence(i, kind.get(e, "channel"), program, mine)
        elif role is Role.ACQUIRE:
            after = kind.get(e, "after", ())
            if after:
                code = CODE[kind.sync_edge]
                at = self.c.locate(np.asarray(after, dtype=np.int64))
                mine.extend(int(j) << SHIFT | code for j in at.tolist() if 0 <= j < i)
        elif role is Role.RENDEZVOUS:
            members = kind.get(e, "programs", ())
            for q in members:
                if q != program:
                    j = self.last_he.get(q)
                    if j is not None:
                        mine.append(j << SHIFT | CODE[RENDEZVOUS])
            for q in members:
                self.last_he[q] = i
                self.events.append((-1 if q is None else q, i))
        if program is not None:
            self.last_he[program] = i
            self.events.append((program, i))
        if kernel:
            self.kernel_last[kernel] = i

    def _fence(self, i, ch, program, mine) -> None:
        """A fence completes the NBI transfers its program posted (on channel ``ch``, or all);
        their chains are free again."""
        posted = self.nbi.get(program)
        if not posted:
            return
        keep = []
        free = self.nbi_free.setdefault(program, [])
        for j, cj in posted:
            if ch is None or cj == ch:
                mine.append(j << SHIFT | CODE[FENCE])
                if self.chain[j] not in free:
                    free.append(self.chain[j])
            else:
                keep.append((j, cj))
        self.nbi[program] = keep


def _program_edges(c: _Columns, host: _HostEffects, batches) -> tuple:
    """The tasks' program-order edges ``(dst, codes)``: from the last host effect their program
    issued before them, else from their kernel's launch; ``batch`` for a task of a batch."""
    i64 = np.int64
    T, n1 = c.T, c.n + 1
    tp = c.pid[T]
    ev = np.array(host.events, dtype=i64).reshape(-1, 2)
    ev_keys = np.sort(ev[:, 0] * n1 + ev[:, 1])
    has_he = np.zeros(len(T), dtype=bool)
    src = np.full(len(T), -1, dtype=i64)
    if len(ev_keys):
        # only a task of a program with host effects can follow one: the search is for those (an
        # AI CPU kernel's program usually has none, and millions of tasks). ``with_ev`` has a slot
        # past every program: index -1 (a task or host effect without a program) lands there.
        with_ev = np.zeros(int(max(tp.max(initial=-1), ev[:, 0].max())) + 2, dtype=bool)
        with_ev[ev[:, 0]] = True
        cand = np.flatnonzero(with_ev[tp])
        del with_ev
        ctp = tp[cand]
        key = ctp * n1
        key += T[cand]
        pos = np.searchsorted(ev_keys, key)
        del key
        pos -= 1
        ok = pos >= 0
        np.maximum(pos, 0, out=pos)
        hit = ev_keys[pos]
        del pos
        ok &= hit // n1 == ctp
        has_he[cand[ok]] = True
        src[cand[ok]] = hit[ok] % n1
        del hit, ok, cand, ctp
    tk = c.kernel[T]
    by_launch = ~has_he
    by_launch &= tk != 0
    if by_launch.any():
        src[by_launch] = c.launch_at(tk[by_launch])
    del tk
    batched = _batched(batches, tp, c.seq[T], int(c.seq[-1]) + 1 if c.n else 1)
    del tp
    kind = np.where(has_he, CODE[PROGRAM], CODE[LAUNCH])
    kind[batched] = CODE[BATCH]
    del batched
    some = has_he
    some |= by_launch
    del by_launch
    code = src[some]
    del src
    code <<= SHIFT
    code |= kind[some]
    return T[some], code


def _stream_edges(c: _Columns, streams: _Streams, host: _HostEffects) -> tuple:
    """The tasks' ``stream`` edges and, for those queued behind a KernelLaunch, ``kernel_end``
    edges from the kernel's last host effect: ``(dst, codes)`` of each."""
    i64 = np.int64
    T, prev = c.T, streams.prev
    dst = T[prev[T] >= 0]
    src = prev[dst]
    behind = dst[c.is_launch[src]]
    kend_dst, kend_code = [], []
    for i, j in zip(behind.tolist(), prev[behind].tolist()):
        last = host.kernel_last.get(int(c.seq[j]))
        if last is not None:
            kend_dst.append(i)
            kend_code.append(last << SHIFT | CODE[KERNEL_END])
    return (dst, src << SHIFT | CODE[STREAM]), (np.array(kend_dst, dtype=i64), np.array(kend_code, dtype=i64))


def _notify_uses(c: _Columns, host: _HostEffects) -> tuple:
    """The notify records and waits that ran, tasks and host effects: ``(keys, gens, entry
    indices, is_wait)`` (``keys``: a number per notify, its ``(owner, index)``), and what the
    notify checks read (:class:`NotifyColumns`)."""
    i64 = np.int64
    T = c.T
    mine = np.flatnonzero(c.of_kind(_uses_notify)[T])         # positions in c.tasks
    mine = mine[c.step[T[mine]] > 0]
    ran = T[mine]
    picked = np.zeros(len(T), dtype=bool)
    picked[mine] = True
    objs = list(compress(c.tasks, picked.tolist()))
    del picked
    gen_of, notify_of_task = _task_getter(c, ran, "gen"), _task_getter(c, ran, "notify")
    try:
        gens = np.fromiter(map(gen_of, objs), i64, len(objs))
    except TypeError:                   # some ran without setting a generation
        got = list(map(gen_of, objs))
        keep = [k for k, v in enumerate(got) if v is not None]
        ran, mine, objs = ran[keep], mine[keep], [objs[k] for k in keep]
        gens = np.array([got[k] for k in keep], dtype=i64)
    lanes = c.handle[mine]
    del mine
    # tasks share their notify objects (some hash by value, slowly): read each one's (owner,
    # index) once, by identity (the objects are alive, so their ids are distinct), in the order
    # they first appear. (The ids as a numpy array: millions of tasks, a few thousand notifies.)
    ids = np.fromiter(map(id, map(notify_of_task, objs)), i64, len(objs))
    distinct, first, which = np.unique(ids, return_index=True, return_inverse=True)
    del ids, distinct
    key_of: dict = {}                   # (owner, index) -> key
    notify_of: list = []                # key -> one of its notify objects
    key_at = np.empty(len(first), dtype=i64)
    for u in np.argsort(first).tolist():
        n_ = notify_of_task(objs[first[u]])
        key = key_of.setdefault((n_.owner, n_.index), len(key_of))
        if key == len(notify_of):
            notify_of.append(n_)
        key_at[u] = key
    keys = key_at[which.reshape(-1)]
    del first, which, key_at
    is_wait = c.of_kind(_waits)[ran]
    nt = len(keys)
    if host.records or host.waits:
        more = host.records + host.waits
        hk = []
        for r in more:
            key = key_of.setdefault((r[0], r[1]), len(key_of))
            if key == len(notify_of):
                notify_of.append(r[4])
            hk.append(key)
        keys = np.concatenate([keys, np.array(hk, dtype=i64)])
        gens = np.concatenate([gens, np.array([r[2] for r in more], dtype=i64)])
        ran = np.concatenate([ran, np.array([r[3] for r in more], dtype=i64)])
        is_wait = np.concatenate([is_wait, np.arange(len(more)) >= len(host.records)])
        pid = c.pid[ran[nt:]]
        lanes = np.concatenate([lanes, -2 - pid])
    cols = NotifyColumns(keys, gens, ran, is_wait, lanes, nt, notify_of)
    return (keys, gens, ran, is_wait), cols


def _uses_notify(kind) -> bool:
    return kind.entry == "task" and kind.notify is not None


def _waits(kind) -> bool:
    return kind.notify is NotifyUse.WAIT


def _task_getter(c: _Columns, at, field: str):
    """The accessor of ``field`` for the entries at ``at``: their kinds' one accessor when they
    share it (one pass, at C speed, over millions of tasks), else one that asks each entry's kind."""
    present = np.bincount(c.kc[at], minlength=len(c.table)) if len(at) else np.zeros(len(c.table), dtype=np.int64)
    getters = {k.getter(field) for k, code in c.table.items() if present[code]}
    if len(getters) == 1:
        return getters.pop()

    def get(e):
        return e.kind.getter(field)(e)
    return get


class NotifyColumns(NamedTuple):
    """The notify records and waits that ran with a generation (tasks first, then host effects),
    as the build found them: per use its notify (``key``), generation, entry index (``at``),
    whether it waits, and its lane (a task's stream handle; ``-2 - program`` for a host
    effect); ``tasks``: how many are tasks; ``notify``: per key, one of its notify objects."""
    key: np.ndarray
    gen: np.ndarray
    at: np.ndarray
    waits: np.ndarray
    lane: np.ndarray
    tasks: int
    notify: list


def _build(source) -> Graph:
    record = getattr(source, "record", source)
    c = _Columns(record)
    streams = _Streams(c)
    host = _HostEffects(c, streams)
    uses, notify_columns = _notify_uses(c, host)
    i64 = np.int64
    # every edge, per entry in the order: program (or a host effect's own), stream, kernel end, notify
    (st_dst, st_code), (kend_dst, kend_code) = _stream_edges(c, streams, host)
    prog_dst, prog_code = _program_edges(c, host, record.batches)
    coalesced: dict = {}
    nf_dst, nf_code = _notify_edges(*uses, coalesced, CODE[NOTIFY])
    del uses
    ptr, codes = _csr(c.n, [
        (prog_dst, prog_code, False),
        (np.array(host.dst, dtype=i64), np.array(host.codes, dtype=i64), True),
        (st_dst, st_code, False),
        (kend_dst, kend_code, False),
        (nf_dst, nf_code, True),
    ])
    launches = np.flatnonzero(c.is_launch)
    launcher = {k: (p if p >= 0 else None) for k, p in zip(c.seq[launches].tolist(), c.pid[launches].tolist())}
    built = Built(ptr, codes, c.xsteps, coalesced, launcher, c.handle, host.keys, host.kernel_programs,
                  host.kernel_seqs, host.notify, notify_columns)
    return Graph(record, c.columns(), built, record.whole())


def _batched(batches, programs, seqs, big):
    """Per task (``programs``, ``seqs``): whether a batch of its program holds its seq."""
    if not batches or not len(seqs):
        return np.zeros(len(seqs), dtype=bool)
    bp, lo, hi = _batch_table(batches)
    reach = np.maximum.accumulate(hi + bp * big) - bp * big      # the furthest end of the program's batches so far
    pos, ok = _last_batch_before(bp, lo, programs, seqs, big)
    return ok & (reach[pos] >= seqs)


def _last_batch_before(bp, lo, programs, seqs, big):
    """Per task, the last batch of its program (in ``_batch_table`` order) that starts at or
    before its seq: ``(positions, found)`` (a position is 0 where none is found). ``big``: more
    than any seq."""
    pos = np.searchsorted(bp * big + lo, programs * big + seqs, side="right") - 1
    ok = pos >= 0
    pos = np.maximum(pos, 0)
    return pos, ok & (bp[pos] == programs)


def _batch_table(batches):
    """The record's batches as ``(programs, first seqs, last seqs)`` (-1: no program), sorted by
    program and first seq."""
    b = np.array([(-1 if p is None else p, lo, hi) for _bid, p, lo, hi in batches], dtype=np.int64)
    order = np.lexsort((b[:, 1], b[:, 0]))
    return b[order, 0], b[order, 1], b[order, 2]


def batch_ends(batches, programs, seqs):
    """Per task (``programs``: -1 for none, ``seqs``): the last seq of the batch that holds it (a
    batch of its program whose seqs span its own), -1 when none; None when two batches of one
    program overlap (then only the tasks themselves can tell). The record's batches say it
    without reading a task: a batch's tasks are its program's tasks from its first seq to its
    last (they get their seqs together, at ``HcommBatchModeEnd``)."""
    out = np.full(len(seqs), -1, dtype=np.int64)
    if not batches or not len(seqs):
        return out
    bp, lo, hi = _batch_table(batches)
    same = bp[1:] == bp[:-1]
    if (lo[1:][same] <= hi[:-1][same]).any():
        return None
    pos, ok = _last_batch_before(bp, lo, programs, seqs, int(max(int(seqs.max()), int(hi.max()))) + 1)
    ok &= hi[pos] >= seqs
    out[ok] = hi[pos[ok]]
    return out


def _notify_edges(key, gens, at, is_wait, coalesced, code):
    """The ``notify`` edges: ``(dst, code)`` arrays, grouped by wait, in generation order. Waits of a
    notify (``key``: a number per notify, >= 0; ``gens``: the generation each use set or read) read
    generations in order; each is ordered after the
    record of the generation it read and of those after the previous wait's (coalesced into it)."""
    i64 = np.int64
    m = len(key)
    if not m:
        return np.zeros(0, dtype=i64), np.zeros(0, dtype=i64)
    gen = np.asarray(gens, dtype=i64)
    span = int(gen.max()) + 2
    n1 = int(at.max()) + 1
    rec = ~is_wait
    # records: (key, gen) -> entry index, the last issued one winning
    rk, ri = key[rec] * span + gen[rec], at[rec]
    o = np.argsort(rk * n1 + ri) if len(rk) and (int(rk.max()) + 1) * n1 < 1 << 62 else np.lexsort((ri, rk))
    rk, ri = rk[o], ri[o]
    last = np.append(rk[1:] != rk[:-1], True) if len(rk) else np.zeros(0, dtype=bool)
    rk, ri = rk[last], ri[last]
    # waits in (key, gen, index) order; the generations each one consumed
    wk, wg, wi = key[is_wait], gen[is_wait], at[is_wait]
    if len(wk) and (int(wk.max()) + 1) * span * n1 < 1 << 62:
        o = np.argsort((wk * span + wg) * n1 + wi)
    else:
        o = np.lexsort((wi, wg, wk))
    wk, wg, wi = wk[o], wg[o], wi[o]
    prev = np.zeros(len(wg), dtype=i64)
    if len(wg):
        prev[1:] = np.where(wk[1:] == wk[:-1], wg[:-1], 0)
    lo = np.where(wg > prev, prev, wg - 1)
    single = wg - lo == 1

    def find(keys):
        p = np.minimum(np.searchsorted(rk, keys), max(len(rk) - 1, 0))
        hit = (rk[p] == keys) if len(rk) else np.zeros(len(keys), dtype=bool)
        return hit, ri[p] if len(rk) else np.zeros(len(keys), dtype=i64)

    hit, src = find(wk[single] * span + wg[single])
    dst_parts, src_parts = [wi[single][hit]], [src[hit]]
    many = np.flatnonzero(~single)
    if len(many):
        md, ms = [], []
        for w in many.tolist():
            k, g_hi, g_lo, i = int(wk[w]), int(wg[w]), int(lo[w]), int(wi[w])
            keys = np.arange(g_lo + 1, g_hi + 1, dtype=i64) + k * span
            h, s = find(keys)
            s = s[h].tolist()
            md += [i] * len(s)
            ms += s
            if len(s) > 1:
                coalesced.setdefault(i, set()).update(s[1:])
        dst_parts.append(np.array(md, dtype=i64))
        src_parts.append(np.array(ms, dtype=i64))
    dst = np.concatenate(dst_parts)
    src = np.concatenate(src_parts)
    o = np.argsort(dst, kind="stable")
    return dst[o], src[o] << SHIFT | code


def _csr(n, parts):
    """Edges ``(ptr, codes)`` by destination from ``parts``: ``(dst, codes, many)`` in the order
    an entry's edges are listed; ``many``: a destination may have several (then grouped, in order).
    Both int32 when every code and edge count fits one (half the memory of the graph's largest
    arrays: a 1024-rank ring has 14 million edges), else int64."""
    i64 = np.int64
    fill = np.zeros(n, dtype=i64)          # first the count per destination, then where the next goes
    for d, _c, _m in parts:
        if len(d):
            fill += np.bincount(d, minlength=n)
    total = int(fill.sum())
    it = np.int32 if max(n << SHIFT | 15, total) <= np.iinfo(np.int32).max else i64
    ptr = np.zeros(n + 1, dtype=it)
    ptr[1:] = np.cumsum(fill)
    codes = np.empty(total, dtype=it)
    fill[:] = ptr[:-1]
    for dst, code, many in parts:
        if not len(dst):
            continue
        if many:
            starts = np.flatnonzero(np.append(True, dst[1:] != dst[:-1]))
            rank = np.arange(len(dst)) - np.repeat(starts, np.diff(np.append(starts, len(dst))))
            codes[fill[dst] + rank] = code
            np.add.at(fill, dst[starts], np.diff(np.append(starts, len(dst))))
        else:
            codes[fill[dst]] = code
            fill[dst] += 1
    return ptr, codes


def _tails(mine, e, i, c, streams, kernel_last, code) -> None:
    """Edges into a blocking call ``e`` (at index ``i``) from the last task that ran, before it
    returned, on each stream it waited for (and from the end of that task's kernel, for a
    launch)."""
    step, by_stream = c.step, streams.by_stream
    mine_step = abs(int(step[i])) or None
    for h in e.kind.get(e, "streams", ()):
        r = streams.range.get(h)
        if r is None:
            continue
        lo, hi = r
        hi = lo + int(np.searchsorted(by_stream[lo:hi], i))      # the tasks queued before the call
        for j in by_stream[lo:hi][::-1].tolist():
            s = int(step[j])
            if s > 0 and (mine_step is None or s < mine_step):
                mine.append(j << SHIFT | code)
                if c.is_launch[j]:
                    k = kernel_last.get(int(c.seq[j]))
                    if k is not None:
                        mine.append(k << SHIFT | code)
                break


__all__ = ["build", "batch_ends", "NotifyColumns", "Graph", "Columns", "Edge", "Program", "EDGE_KINDS", "NBI_KINDS",
           "STREAM", "KERNEL_END", "NOTIFY", "PROGRAM", "BATCH", "LAUNCH", "SYNC", "JOIN", "DRAIN", "FENCE",
           "RENDEZVOUS", "FLAG", "BLOCK"]
