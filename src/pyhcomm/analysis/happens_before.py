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
=============== ================================================================================

An edge ``src -> dst`` says that ``dst``'s execution begins after ``src``'s ended; so does
every path. Entries that never ran (pending, skipped, a wait that failed) are nodes too (with
their ``stream``, ``program`` and other static edges), but get no ``notify`` edge. A blocking call
that timed out, was stuck or aborted gets no ``sync`` / ``join`` / ``drain`` edge.

The API (stable; :class:`Graph`): ``seqs``, ``preds(seq)``, ``succs(seq)``, ``edges()``, ``pred_codes()``,
``entry(seq)``, ``event(seq)``, ``program(seq)``, ``programs``, ``host_program(program)``,
``stream(seq)``, ``step(seq)``,
``ran(seq)``, ``order()``, ``happens_before(a, b)``, ``complete``. Every ``seq`` is an entry
of the record; ``order()`` is a topological order of the entries that executed (their execution
order), which is what a replay walks.
"""
from __future__ import annotations

import gc
from collections import deque
from heapq import heappop, heappush
from typing import NamedTuple

STREAM, KERNEL_END, NOTIFY, PROGRAM, BATCH, LAUNCH = "stream", "kernel_end", "notify", "program", "batch", "launch"
SYNC, JOIN, DRAIN, FENCE, RENDEZVOUS = "sync", "join", "drain", "fence", "rendezvous"
#: Every edge kind, in the order of the table above.
EDGE_KINDS = (STREAM, KERNEL_END, NOTIFY, PROGRAM, BATCH, LAUNCH, SYNC, JOIN, DRAIN, FENCE, RENDEZVOUS)
_CODE = {k: i for i, k in enumerate(EDGE_KINDS)}
_SHIFT = 4      # an edge is stored as src_index << _SHIFT | kind code

#: Host effects that wait for streams, and the kind of their edges.
_BLOCKING = {"Synchronize": SYNC, "ThreadJoin": JOIN, "ChannelDrain": DRAIN}
#: Host effects whose transfer completes at a fence (the NBI family).
NBI_KINDS = frozenset(("WriteNbi", "ReadNbi", "WriteWithNotifyNbi"))
#: Task kinds that record or wait for a notify (``notify``, ``gen``, ``waits``).
_NOTIFY_TASKS = frozenset(("ThreadNotifyRecord", "ThreadNotifyWait", "AclrtNotifyRecord", "AclrtNotifyWait",
                           "ChannelNotifyRecord", "ChannelNotifyWait", "WriteWithNotify", "WriteReduceWithNotify"))
#: Results of a blocking call after which the streams it waited for had ended.
_NOT_ENDED = frozenset(("timeout", "stuck", "aborted"))


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


def _extra(e, name, default=None):
    extra = e.extra
    return extra.get(name, default) if extra else default


class Graph:
    """The happens-before graph of a record (see the module docstring). Built by :func:`build`."""

    def __init__(self, record, entries, steps, complete):
        self.record = record
        self._entries = entries
        self.seqs = [e.seq for e in entries]
        self._index = {s: i for i, s in enumerate(self.seqs)}
        self._steps = steps                 # seq -> +step (ran) / -step (failed, skipped)
        self._preds: list = [None] * len(entries)     # per entry: None or [src_index << _SHIFT | kind code]
        self._succs = None
        self._programs = None
        self._builder = None
        self._chain: list = []          # per entry: its chain (see pyhcomm.analysis.race)
        self._readers: list = []        # per entry: its successors on another chain
        self._notify_entries: list = [] # indices of the notify records and waits
        #: wait index -> the records after the first one it consumed (coalesced into the bit the first
        #: one set, so lost: in another schedule the wait runs before them)
        self._coalesced: dict = {}
        self._kernel_of: dict = {}      # kernel program -> the seq of its KernelLaunch
        self._launcher: dict = {}       # KernelLaunch seq -> the program that queued it
        #: whether the record held every entry (nothing dropped, recording never disabled)
        self.complete = complete

    # -- reading -----------------------------------------------------------------------------------
    def __len__(self):
        return len(self._entries)

    def __contains__(self, seq):
        return seq in self._index

    def entry(self, seq):
        """The task object or host effect of ``seq`` (as the record keeps it)."""
        return self._entries[self._index[seq]]

    def event(self, seq):
        """The typed event of ``seq`` (:mod:`pyhcomm.sim.events`; built on demand)."""
        if self._builder is None:
            from ..sim.events import Builder
            self._builder = Builder(self.record, self.record.steps(), _issued(self._entries))
        return self._builder.build(self.entry(seq))

    def preds(self, seq) -> tuple:
        """The direct predecessors of ``seq``, as :class:`Edge` values."""
        seqs = self.seqs
        return tuple(Edge(seqs[c >> _SHIFT], EDGE_KINDS[c & 15]) for c in self._preds[self._index[seq]] or ())

    def pred_codes(self) -> list:
        """Every entry's direct predecessors in compact form, for replays over the whole graph:
        per entry, in the order of ``seqs``, None or a list of ``src << 4 | k``, ``src`` the
        position of the predecessor in ``seqs`` and ``k`` the index of its kind in
        :data:`EDGE_KINDS`. Read-only."""
        return self._preds

    def succs(self, seq) -> tuple:
        """The entries ``seq`` is a direct predecessor of, as :class:`Edge` values (``src`` is the
        successor's seq)."""
        if self._succs is None:
            succs = [[] for _ in self._entries]
            for i, codes in enumerate(self._preds):
                for c in codes or ():
                    succs[c >> _SHIFT].append(i << _SHIFT | (c & 15))
            self._succs = succs
        seqs = self.seqs
        return tuple(Edge(seqs[c >> _SHIFT], EDGE_KINDS[c & 15]) for c in self._succs[self._index[seq]])

    def edges(self):
        """Every edge as ``(src, dst, kind)``, grouped by ``dst`` in issue order."""
        seqs = self.seqs
        for i, codes in enumerate(self._preds):
            for c in codes or ():
                yield seqs[c >> _SHIFT], seqs[i], EDGE_KINDS[c & 15]

    def step(self, seq):
        """The step of the entry's first execution-log entry (None: not executed)."""
        s = self._steps.get(seq)
        return None if s is None else abs(s)

    def ran(self, seq) -> bool:
        """Whether the entry ran (a task that started running, a host effect that succeeded)."""
        return self._steps.get(seq, 0) > 0

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
            self._programs = _programs(self._entries)
        return self._programs

    def host_program(self, program):
        """The host program behind ``program``: itself, or for a kernel the program that queued
        its launch (followed up, for kernels launched from kernels)."""
        kernel_of, launcher = self._kernel_of, self._launcher
        for _ in range(64):
            k = kernel_of.get(program)
            if k is None:
                return program
            program = launcher.get(k)
        return program

    def order(self) -> list:
        """The seqs of every entry that executed (ran, or failed as a host effect), in execution
        order: a topological order of the graph restricted to them."""
        steps = self._steps
        out = [(abs(steps[s]), s) for s in self.seqs if s in steps and (steps[s] > 0 or self.entry(s).entry == "host")]
        out.sort()
        return [s for _step, s in out]

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
                j = c >> _SHIFT
                if j == target:
                    return True
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return False


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
    launches = {}
    rank_of_device: dict = {}
    for e in entries:
        p = e.program
        if e.kind == "KernelLaunch":
            launches[e.seq] = e
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
        k = kernels.get(p)
        rs = tuple(sorted(rs))
        on = f" of rank {rs[0]}" if len(rs) == 1 else ""
        if k is not None:
            launch = launches.get(k)
            name = launch.args[1] if launch is not None else "?"
            label = f"kernel {name}{on} (launch #{k})"
        elif len(rs) == 1:
            label = f"rank {rs[0]}'s host program"
        else:
            label = f"host program {p}"
        out[p] = Program(p, k, rs, label)
    return out


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


def _build(source) -> Graph:
    record = getattr(source, "record", source)
    entries = record.entries()
    steps = record.step_table()
    n = len(entries)
    g = Graph(record, entries, steps, record.whole())
    preds = g._preds
    sh = _SHIFT
    c_stream, c_kend, c_notify, c_prog, c_batch, c_launch = (_CODE[k] for k in (STREAM, KERNEL_END, NOTIFY, PROGRAM,
                                                                                BATCH, LAUNCH))
    c_fence, c_rdv = _CODE[FENCE], _CODE[RENDEZVOUS]
    # chains (what the race detector keeps one clock for): a stream, a program, or NBI transfers
    # that fences separate
    chain = g._chain = [0] * n
    chain_ids: dict = {}
    notify_entries = g._notify_entries      # indices of the records and waits, in issue order

    last_on_stream: dict = {}       # stream handle -> index of its last task so far
    stream_tasks: dict = {}         # stream handle -> [index, ...] (for the tails of blocking calls)
    last_he: dict = {}              # program -> index of its last host effect so far (program order)
    kernel_at: dict = {}            # KernelLaunch seq -> its index
    kernel_last: dict = {}          # KernelLaunch seq -> index of its kernel's last host effect
    kernel_of = g._kernel_of        # program -> the KernelLaunch seq of its kernel (kernel programs)
    nbi: dict = {}                  # program -> [(index, channel)] posted since its last fence
    nbi_free: dict = {}             # program -> NBI chains whose transfers a fence completed
    records: dict = {}              # (owner, index) of a notify -> {gen: index}
    waits: list = []                # ((owner, index) of a notify, gen, index)
    behind_kernel: list = []        # (index, KernelLaunch seq): tasks queued behind a kernel

    host_kind, device_side = "host", "device"
    batches = sorted((lo, hi, p) for _bid, p, lo, hi in record.batches)
    n_batches, next_batch = len(batches), 0
    closing: list = []              # heap of (last seq, index) of the batches open at the current seq
    open_count: dict = {}           # program -> how many of its batches hold the current seq
    for i, e in enumerate(entries):
        program = e.program
        if e.entry != host_kind:
            seq = e.seq
            h = e.stream.handle
            c = chain_ids.get(h)
            if c is None:
                c = chain_ids[h] = len(chain_ids)
            chain[i] = c
            if e.side == device_side:
                kernel = e.kernel
                if kernel:
                    kernel_of[program] = kernel
            else:
                kernel = None
            # batched: its program ended a batch whose seqs hold it
            batched = False
            if next_batch < n_batches or closing:
                while next_batch < n_batches and batches[next_batch][0] <= seq:
                    bp = batches[next_batch][2]
                    heappush(closing, (batches[next_batch][1], next_batch))
                    open_count[bp] = open_count.get(bp, 0) + 1
                    next_batch += 1
                while closing and closing[0][0] < seq:
                    bp = batches[heappop(closing)[1]][2]
                    open_count[bp] -= 1
                batched = open_count.get(program, 0) > 0
            # program order: the issuing program's last host effect before the task
            src = last_he.get(program)
            if src is not None:
                mine = [src << sh | (c_batch if batched else c_prog)]
            elif kernel:
                mine = [kernel_at[kernel] << sh | (c_batch if batched else c_launch)]
            else:
                mine = None
            prev = last_on_stream.get(h)
            if prev is not None:
                if mine is None:
                    mine = [prev << sh | c_stream]
                else:
                    mine.append(prev << sh | c_stream)
                before = entries[prev]
                if before.kind == "KernelLaunch":
                    behind_kernel.append((i, before.seq))
                stream_tasks[h].append(i)
            else:
                stream_tasks[h] = [i]
            last_on_stream[h] = i
            kind = e.kind
            if kind in _NOTIFY_TASKS:
                notify_entries.append(i)
                gen = e.gen if steps.get(seq, 0) > 0 else None
                if gen is not None:
                    nt = e.notify  # a notify is known by owner and index (a remote one is a value)
                    if e.waits:
                        waits.append(((nt.owner, nt.index), gen, i))
                    else:
                        records.setdefault((nt.owner, nt.index), {})[gen] = i
            elif kind == "KernelLaunch":
                kernel_at[seq] = i
            if mine is not None:
                preds[i] = mine
            continue
        # a host effect
        kernel = e.kernel
        if kernel:
            kernel_of[program] = kernel
        kind = e.kind
        if kind in NBI_KINDS:
            # an NBI transfer is ordered with nothing its program does until a fence completes it:
            # a chain of its own, or one whose transfers a fence completed before it was posted
            free = nbi_free.get(program)
            if free:
                c = free.pop()
            else:
                c = len(chain_ids)
                chain_ids[("nbi", i)] = c
        else:
            key = ("program", program)
            c = chain_ids.get(key)
            if c is None:
                c = chain_ids[key] = len(chain_ids)
        chain[i] = c
        mine = []
        src = last_he.get(program)
        if src is not None:
            mine.append(src << sh | c_prog)
        elif kernel:
            mine.append(kernel_at[kernel] << sh | c_launch)
        if kind in NBI_KINDS:
            nbi.setdefault(program, []).append((i, _extra(e, "channel")))
        else:
            blocking = _BLOCKING.get(kind)
            if blocking is not None:
                if _extra(e, "result") not in _NOT_ENDED:
                    _tails(mine, e, steps, stream_tasks, entries, kernel_last, _CODE[blocking])
            elif kind == "Fence":
                posted = nbi.get(program)
                if posted:
                    ch = _extra(e, "channel")
                    keep = []
                    free = nbi_free.setdefault(program, [])
                    for j, cj in posted:
                        if ch is None or cj == ch:
                            mine.append(j << sh | c_fence)
                            if chain[j] not in free:
                                free.append(chain[j])
                        else:
                            keep.append((j, cj))
                    nbi[program] = keep
            elif kind == "Rendezvous":
                members = _extra(e, "programs", ())
                for q in members:
                    if q != program:
                        j = last_he.get(q)
                        if j is not None:
                            mine.append(j << sh | c_rdv)
                for q in members:
                    last_he[q] = i
            if program is not None:
                last_he[program] = i
            if kernel:
                kernel_last[kernel] = i
        n_ = _extra(e, "notify")
        if n_ is not None:
            notify_entries.append(i)
            gen = _extra(e, "gen")
            if gen is not None:
                if _extra(e, "waits"):
                    waits.append(((n_.owner, n_.index), gen, i))
                else:
                    records.setdefault((n_.owner, n_.index), {})[gen] = i
        if mine:
            preds[i] = mine

    # tasks queued behind a kernel wait for its end
    for i, k in behind_kernel:
        j = kernel_last.get(k)
        if j is not None:
            _add(preds, i, j << sh | c_kend)
    # a wait happens after the record whose generation it read, and the records coalesced into it
    waits.sort()
    coalesced = g._coalesced
    prev_key, prev_gen = None, 0
    for key, gen, i in waits:
        if key != prev_key:
            prev_key, prev_gen = key, 0
        recs = records.get(key, {})
        lo = prev_gen if gen > prev_gen else gen - 1
        first = True
        for g_ in range(lo + 1, gen + 1):
            j = recs.get(g_)
            if j is not None:
                _add(preds, i, j << sh | c_notify)
                if not first:
                    coalesced.setdefault(i, set()).add(j)
                first = False
        prev_gen = gen
    # how many successors on another chain each entry has (the race detector keeps its clock for them)
    readers = g._readers = [0] * n
    for i, codes in enumerate(preds):
        if codes:
            c = chain[i]
            for code in codes:
                j = code >> sh
                if chain[j] != c:
                    readers[j] += 1
    g._launcher = {seq: entries[i].program for seq, i in kernel_at.items()}
    return g


def _add(preds, i, code) -> None:
    p = preds[i]
    if p:
        p.append(code)
    else:
        preds[i] = [code]


def _tails(mine, e, steps, stream_tasks, entries, kernel_last, code) -> None:
    """Edges into a blocking call ``e`` from the last task that ran, before it returned, on each
    stream it waited for (and from the end of that task's kernel, for a launch)."""
    mine_step = abs(steps.get(e.seq, 0)) or None
    for h in _extra(e, "streams", ()):
        tasks = stream_tasks.get(h)
        if not tasks:
            continue
        for j in reversed(tasks):
            s = steps.get(entries[j].seq, 0)
            if s > 0 and (mine_step is None or s < mine_step):
                mine.append(j << _SHIFT | code)
                t = entries[j]
                if t.kind == "KernelLaunch":
                    k = kernel_last.get(t.seq)
                    if k is not None:
                        mine.append(k << _SHIFT | code)
                break


__all__ = ["build", "Graph", "Edge", "Program", "EDGE_KINDS", "NBI_KINDS", "STREAM", "KERNEL_END", "NOTIFY",
           "PROGRAM", "BATCH", "LAUNCH", "SYNC", "JOIN", "DRAIN", "FENCE", "RENDEZVOUS"]
