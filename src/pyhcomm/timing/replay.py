"""Replay a record on a virtual clock: the happens-before graph plus the cost model.

``replay(sim)`` (or a record) builds the record's happens-before graph
(:mod:`pyhcomm.analysis.happens_before`) and gives every entry an issue, a start and an end
(:class:`~.timeline.Timeline`) under the costs of a :class:`~.costs.CostModel`. The graph's edges
become timed constraints:

=============== ===============================================================================
graph edge      on the clock
=============== ===============================================================================
``stream``      the task starts after the previous task of its stream ended
``kernel_end``  the task starts after the kernel in front of it on its stream ended
``notify``      the wait's body starts once the record's signal arrived: the record's end plus
                ``notify_latency`` (a thread or runtime notify) or the channel link's latency
``program``     the entry is issued after the host effect before it returned
``batch``,      from a ``KernelLaunch``: the kernel's program starts ``kernel_launch`` after its
``launch``      launch task started; otherwise as ``program``
``sync``,       the blocking call returns (``sync_return`` later) after what it waited for ended
``join``, ``drain``, ``fence``, ``rendezvous``
=============== ===============================================================================

Two more constraints are costs, not orderings, so they are not in the graph: a program issues its
entries one after another, ``host_submit`` (a host program), ``aicpu_submit`` (a kernel) or
``batch_submit`` (a task added to a batch) apart; and the tasks of an HCOMM batch reach their
streams together, ``batch_submit + batch_fixed`` after the batch's last one was added.

Transfers and local copies are flows through shared resources
(:func:`pyhcomm.topology.link_resources`; a device's memory). The replay first computes every
time with every flow at its full rate, level by level over the graph (all the entries whose
predecessors have times, at once, as numpy arrays; a program's run of issues that only follow
each other is one node, summed at once: a 1024-rank ring has some 6,000 levels for 6 million
entries); if two flows then overlap on one resource, it replays again with the
discrete-event engine (:mod:`.engine`), where overlapping flows share the bandwidth.
``exact=True`` always uses the engine. Both give the same times, bit for bit, where no flows
overlap (tests/test_timing_replay.py).

Data-less runs replay the same way: only sizes and ranges are read. Entries that never ran (a wait
that timed out, tasks behind a failure) get no start or end (``nan``), and no issue when nothing
after them in their program ran either.
"""
from __future__ import annotations

import gc
from array import array
from math import inf
from operator import attrgetter, itemgetter

import numpy as np

from .. import topology
from ..analysis.happens_before import _ints, batch_ends, of_kinds
from ..analysis.keysort import stable_argsort
from ..sim.events import local_bytes, transfer_view
from ..sim.memory import DEVICE_VA_BASE, DEVICE_VA_STRIDE, device_of_address
from .adjacency import index_type, indegrees, one, successors
from .costs import cost_model
from .engine import (END_TO_DEP, END_TO_ISSUE, END_TO_START, ISSUE_TO_ISSUE, ISSUE_TO_START, START_TO_ISSUE,
                     Plan, _arr)
from .timeline import Arrow, CallTime, Timeline

_RECORDS = frozenset(("ThreadNotifyRecord", "AclrtNotifyRecord", "ChannelNotifyRecord", "ChannelNotifyRecordNow"))
_WAITS = frozenset(("ThreadNotifyWait", "AclrtNotifyWait", "ChannelNotifyWait", "ChannelNotifyWaitNow"))
_WRITES = frozenset(("Write", "WriteReduce", "WriteWithNotify", "WriteReduceWithNotify", "WriteNbi",
                     "WriteWithNotifyNbi"))
_READS = frozenset(("Read", "ReadReduce", "ReadNbi"))
_SIGNAL_BY_LINK = frozenset(("ChannelNotifyRecord", "ChannelNotifyRecordNow", "WriteWithNotify",
                             "WriteReduceWithNotify", "WriteWithNotifyNbi"))
_BLOCKING = frozenset(("Synchronize", "ThreadJoin", "ChannelDrain"))
#: Entries that cost their program nothing to issue: call markers, control-plane rendezvous.
_FREE = frozenset(("Collective", "Rendezvous"))
_HOST_LINK = frozenset(("ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST", "ACL_MEMCPY_HOST_TO_HOST",
                        "ACL_MEMCPY_DEFAULT"))
# the graph's edge kinds, by code (pyhcomm.analysis.happens_before.EDGE_KINDS)
_STREAM, _KERNEL_END, _NOTIFY, _PROGRAM, _BATCH, _LAUNCH = range(6)
_EPS = 1e-12
_BATCH_OF, _N, _DEVICE = (attrgetter(a) for a in ("batch", "n", "device"))
_WRITES_OF, _READS_OF, _ARGS, _DETAIL = (attrgetter(a) for a in ("writes", "reads", "args", "detail"))
_SIZE_ARG, _CHANNEL, _TARGET, _ENTRY = itemgetter(5), itemgetter(0), attrgetter("target"), attrgetter("entry")
_NBYTES, _CHANNEL_OF, _REMOTE = (attrgetter(a) for a in ("nbytes", "channel", "remote"))
#: Transfer tasks (transfer_view reads their channel from ``detail[0]``, their size from ``args[5]``
#: or, for a reduce, the written span).
_TASK_TRANSFERS = frozenset(("Write", "Read", "WriteReduce", "ReadReduce", "WriteWithNotify",
                             "WriteReduceWithNotify"))


def replay(source, model=None, graph=None, exact: bool = False) -> Timeline:
    """The :class:`Timeline` of ``source`` (a Sim or its record) under ``model`` (default: the
    cost model of the Sim's product, or of the current product for a bare record). ``graph``: the
    happens-before graph of the same record, when one is at hand. ``exact``: always replay with
    the discrete-event engine (the result is the same when no two flows overlap).

    Raises ``ValueError`` when the record lost entries (``Record.whole()`` is false): a replay of
    part of a program would give wrong times."""
    from ..analysis import happens_before
    record = getattr(source, "record", source)
    if model is None:
        runtime = getattr(source, "runtime", None)
        model = cost_model(runtime.product if runtime is not None else None)
    if not record.whole():
        raise ValueError("replay: the record does not hold every entry (recording was disabled, or more than "
                         f"PYHCOMM_RECORD_CAPACITY={record.capacity} entries were kept); times would be wrong. "
                         "Run with PYHCOMM_RECORD_CAPACITY=0 (unbounded) or a larger capacity")
    if graph is None:
        graph = happens_before.build(record)
    paused = gc.isenabled()     # the record's millions of objects form no cycles: a collection
    if paused:                  # would scan them all, again and again, while the replay allocates
        gc.disable()
    try:
        return _Replay(model, graph, record).run(exact)
    finally:
        if paused:
            gc.enable()


class _Replay:
    """One replay: per-entry cost arrays (:meth:`costs`), then times from the graph's levels
    (:meth:`walk`) or the discrete-event engine (:meth:`engine`)."""

    def __init__(self, model, graph, record):
        self.m = model
        self.graph = graph
        self.record = record
        self.n = len(graph)
        cols = graph._cols
        self.cols = cols
        self.kc = cols["kind_code"]
        from ..analysis import happens_before
        # the graph's compact predecessor codes: ``src_index << 4 | kind code``, kinds in this order
        assert happens_before.EDGE_KINDS[:6] == ("stream", "kernel_end", "notify", "program", "batch", "launch")
        assert getattr(happens_before, "_SHIFT", 4) == 4
        #: the index type of per-entry positions: int32 (half the memory) unless one does not fit
        it = self.it = index_type(self.n)
        tpos = np.full(self.n, -1, dtype=it)
        tpos[cols["tasks"]] = np.arange(len(cols["tasks"]), dtype=it)
        hpos = np.full(self.n, -1, dtype=it)
        hpos[cols["host"]] = np.arange(len(cols["host"]), dtype=it)
        self.tpos, self.hpos = tpos, hpos
        step = graph._step
        #: entries that executed (ran, or a host effect that failed): the ones that get times
        self.executed = (step > 0) | (graph._is_host & (step != 0))

    def of_kind(self, kinds):
        """Per entry: whether its kind is one of ``kinds``."""
        return of_kinds(self.cols["kind_table"], self.kc, kinds)

    def objects(self, idx) -> list:
        """The task objects and host effects at positions ``idx`` (a numpy array)."""
        tasks, host = self.cols["task_entries"], self.cols["host_entries"]
        tp = self.tpos[idx]
        if (tp >= 0).all():
            return list(map(tasks.__getitem__, tp.tolist()))
        return [tasks[t] if t >= 0 else host[h] for t, h in zip(tp.tolist(), self.hpos[idx].tolist())]

    # -- costs -------------------------------------------------------------------------------------
    def costs(self):
        """Per entry: body (fixed part, or a flow's latency), flow bytes and route, the
        latency of the signal it sends, the submit cost its program pays after it; the program
        order (``prev``) and batches (``batch_last``)."""
        m, record, cols, n, it = self.m, self.record, self.cols, self.n, self.it
        i64 = np.int64
        T, H = cols["tasks"], cols["host"]
        tasks, host = cols["task_entries"], cols["host_entries"]
        is_task = ~self.graph._is_host
        body = np.zeros(n)
        siglat = np.zeros(n)
        nbytes = np.zeros(n, dtype=i64)
        route = np.full(n, -1, dtype=it)           # flows: index into routes
        routes: list = []                           # tuples of resource keys
        route_of: dict = {}
        dest: list = []                             # (entry indices, remote devices) of writes
        origin: list = []                           # the same of reads
        links: dict = {}

        def link_of(protocol):
            link = links.get(protocol)
            if link is None:
                link = links[protocol] = m.link(protocol)
            return link

        def route_id(key):
            r = route_of.get(key)
            if r is None:
                r = route_of[key] = len(routes)
                routes.append(key)
            return r

        # batches: whether a task is in one, the last task of its batch (from the record's batches;
        # from the tasks when two batches of one program overlap)
        batched = np.zeros(n, dtype=bool)
        batch_last = np.full(n, -1, dtype=it)
        last_seq = batch_ends(record.batches, cols["program"][T], self.graph._seq[T]) if len(T) else None
        if last_seq is not None:
            inside = last_seq >= 0
            batched[T[inside]] = True
            batch_last[T[inside]] = self.graph.locate(last_seq[inside])
            del last_seq, inside
        elif len(T):
            batch = np.full(n, -1, dtype=i64)
            batch[T] = _ints(list(map(_BATCH_OF, tasks)))
            in_batch = np.flatnonzero(batch >= 0)
            batched[in_batch] = True
            b = batch[in_batch]
            top = int(b.max(initial=0))
            if top < 4 * len(b) + 1024:     # ids from a counter: per batch, its largest index
                last_of = np.full(top + 1, -1, dtype=i64)
                np.maximum.at(last_of, b, in_batch)
                batch_last[in_batch] = last_of[b]
            else:
                o = stable_argsort(b)
                b, members = b[o], in_batch[o]
                ends = np.append(b[1:] != b[:-1], True)
                last = members[ends][np.cumsum(np.append(0, ends[:-1]))]     # per member: its batch's last
                batch_last[members] = last
            del batch
        # program order: each program's entries one after another (a program-less entry: its rank's
        # host thread or kernel)
        key = cols["program"].copy()
        lost = np.flatnonzero(key < 0)
        if len(lost):
            others: dict = {}
            base = int(key.max()) + 1 if n else 0
            for i, e in zip(lost.tolist(), self.objects(lost)):
                key[i] = base + others.setdefault(("rank", e.rank, getattr(e, "kernel", None)), len(others))
        o = stable_argsort(key)         # (int64: it indexes much, and an int32 index is converted each time)
        key = key[o]
        same = key[1:] == key[:-1]
        del key
        prev = np.full(n, -1, dtype=it)
        prev[o[1:][same]] = o[:-1][same]
        self.chain_order, self.chain_first = o, np.append(True, ~same)
        # submit: what issuing an entry costs its program
        on_device = np.zeros(n, dtype=bool)
        on_device[T] = cols["on_device"]
        if len(H):
            on_device[H] = np.fromiter((e.side == "device" for e in host), bool, len(H))
        submit = np.where(on_device, np.where(batched, m.batch_submit, m.aicpu_submit), m.host_submit)
        submit[self.of_kind(_FREE)] = 0.0
        # notifies
        records = self.of_kind(_RECORDS)
        body[records] = m.notify_record
        siglat[records] = m.notify_latency
        by_link = np.flatnonzero(records & self.of_kind(_SIGNAL_BY_LINK))
        one_latency = {link_of(protocol).latency for protocol, _peer in record.channel_info.values()}
        if len(by_link) and len(one_latency) == 1:
            # every channel of the Sim is in ``channel_info`` (noted when it is made, recording or
            # not, kept by ``clear``; a merge renames the channels and their tasks' alike): when all
            # have one latency, no record needs reading (millions at 1024 ranks)
            siglat[by_link] = one_latency.pop()
        elif len(by_link):
            objs = self.objects(by_link)
            if (self.tpos[by_link] >= 0).all():
                channels = list(map(_CHANNEL, map(_TARGET, objs)))
            else:
                channels = [e.target[0] if e.entry == "task" else (e.extra or {}).get("channel") for e in objs]
            latency: dict = {}
            for ch in dict.fromkeys(channels):
                info = record.channel_info.get(ch)
                latency[ch] = link_of(info[0]).latency if info else m.notify_latency
            siglat[by_link] = np.fromiter(map(latency.__getitem__, channels), np.float64, len(channels))
        body[self.of_kind(_WAITS)] = m.notify_wait
        body[self.of_kind(_BLOCKING)] = m.sync_return
        # transfers: a link's latency (twice for a read: request and data), its resources
        reads = self.of_kind(_READS)
        moves = np.flatnonzero(self.of_kind(_WRITES) | reads)
        if len(moves):
            objs = self.objects(moves)
            sizes, protocols, remotes = _transfer_views(record, objs, self.cols["kind_table"], self.kc[moves])
            names = list(dict.fromkeys(protocols))
            proto = np.fromiter(map({p: k for k, p in enumerate(names)}.__getitem__, protocols), i64, len(objs))
            remote = remotes
            here = _ints(list(map(_DEVICE, objs)))
            ok = (remote >= 0) & (here >= 0)
            if None in names:
                ok &= proto != names.index(None)
            i, p, r, h, rd = moves[ok], proto[ok], remote[ok], here[ok], reads[moves][ok]
            lat = np.array([link_of(x).latency if x is not None else 0.0 for x in names])
            body[i] = np.where(rd, 2 * lat[p], lat[p])
            siglat[i[self.of_kind(_SIGNAL_BY_LINK)[i]]] = 0.0
            dest.append((i[~rd], r[~rd]))
            origin.append((i[rd], r[rd]))
            size = sizes[ok]
            flow = size > 0
            i, p, rd, size = i[flow], p[flow], rd[flow], size[flow]
            a, z = np.where(rd, r[flow], h[flow]), np.where(rd, h[flow], r[flow])
            width = int(max(a.max(initial=0), z.max(initial=0))) + 1
            pairs, which = np.unique((p * width + a) * width + z, return_inverse=True)
            ids = [route_id(topology.link_resources(m.family, names[k // (width * width)], (k // width) % width,
                                                    k % width)) for k in pairs.tolist()]
            nbytes[i] = size
            route[i] = np.array(ids, dtype=i64)[which.reshape(-1)] if len(ids) else i
        # local operations: the device's memory (or the host link); copies and reduces by kind
        mem_scale = m.copy_bandwidth / m.reduce_bandwidth

        def on_memory(at, objs):
            devices = list(map(_DEVICE, objs))
            ids = {d: route_id((("mem", d),)) for d in dict.fromkeys(devices)}
            route[at] = np.fromiter(map(ids.__getitem__, devices), i64, len(devices))

        copies = np.flatnonzero(self.of_kind(("LocalCopy",)))
        if len(copies):
            objs = self.objects(copies)
            nbytes[copies] = np.fromiter(map(_N, objs), i64, len(objs))
            on_memory(copies, objs)
        reduces = np.flatnonzero(self.of_kind(("LocalReduce",)) & is_task)
        if len(reduces):        # local_bytes of a reduce task: its written span
            objs = self.objects(reduces)
            written = np.array([w[0][1] if w else 0 for w in map(_WRITES_OF, objs)], dtype=i64)
            nbytes[reduces] = (written * mem_scale).astype(i64)
            on_memory(reduces, objs)
        local = np.flatnonzero(self.of_kind(("LocalReduce", "MemcpyAsync", "Memcpy", "EngineCtxCopy", "MemsetAsync",
                                             "Memset")) & ~(self.of_kind(("LocalReduce",)) & is_task))
        for i, e in zip(local.tolist(), self.objects(local)):
            kind = e.kind
            r = ("mem", e.device)
            if kind == "LocalReduce":
                size = int(local_bytes(e) * mem_scale)
            elif kind in ("MemsetAsync", "Memset"):
                size = local_bytes(e) // 2
            else:
                size = local_bytes(e)
                direction = (e.extra or {}).get("direction") if e.entry == "host" else e.detail
                if kind == "EngineCtxCopy" or _direction_name(direction) in _HOST_LINK:
                    r = ("pcie", e.device)
                    body[i] = m.host_link.latency
            nbytes[i] = size
            route[i] = route_id((r,))
        route[nbytes == 0] = -1
        rate = np.array([min(self.capacity(k) for k in r) for r in routes], dtype=np.float64)
        flows = np.flatnonzero(route >= 0)
        duration = np.zeros(n)
        duration[flows] = nbytes[flows] / rate[route[flows]]
        self.body, self.nbytes, self.siglat, self.submit = body, nbytes, siglat, submit
        self.route, self.routes, self.duration = route, routes, duration
        self.dest, self.origin = dest, origin
        self.prev, self.batch_last = prev, batch_last
        self.is_launch = self.of_kind(("KernelLaunch",))

    def dispatch(self) -> np.ndarray:
        """Per entry: what starting it costs (a task's dispatch; nothing for a host effect)."""
        return np.where(self.graph._is_host, 0.0, self.m.task_dispatch)

    def capacity(self, r) -> float:
        m = self.m
        if r[0] == "mem":
            return m.copy_bandwidth
        if r[0] == "pcie":
            return m.host_link.bandwidth
        return m.link(r[1]).bandwidth

    # -- the fast walk -------------------------------------------------------------------------------
    def walk(self):
        """Times with every flow at its full rate; returns the arrays ``(issue, start, end)``, or
        None when two flows overlap on one resource (the engine must share them).

        Each entry has two nodes: its issue (after the previous entry of its program, plus that
        one's submit cost, and after a ``program`` / ``batch`` / ``launch`` predecessor), and its
        execution (start and end). Nodes are evaluated level by level (every node whose
        predecessors are known, all at once), with the same floating-point operations as a walk
        entry by entry in execution order, so with the same results. The issues of a program that
        only follow the previous one (no constraint of their own) are evaluated with their run's
        head, by a cumulative sum (the same additions, in the same order)."""
        n, m = self.n, self.m
        i64 = np.int64
        ptr, codes = self.graph.pred_csr()
        ex = self.executed
        prev, bl, is_launch = self.prev, self.batch_last, self.is_launch
        # node and entry indices: int32 when they fit (a 1024-rank ring has 6 million entries,
        # 12 million nodes: the walk's memory is mostly index arrays)
        it = index_type(3 * n + 2, len(codes))
        dst = np.repeat(np.arange(n, dtype=it), np.diff(ptr))
        src = (codes >> 4).astype(it)
        kind = (codes & 15).astype(np.int8)
        live = ex[src]                      # a predecessor that never ran constrains nothing
        # Value arrays have two more slots: ZERO (issue 0.0: the issue of a program's first entry
        # is its predecessor's 0.0 + 0.0) and NONE (-inf: an absent predecessor); ``end`` has one
        # more slot per KernelLaunch: its start plus ``kernel_launch`` (what its kernel waits for).
        ZERO, NONE = n, n + 1
        launches = np.flatnonzero(is_launch & ex)
        slot = np.full(n, -1, dtype=it)
        slot[launches] = n + 2 + np.arange(len(launches), dtype=it)
        # the issue's predecessors: the previous entry of the program, a program-kind edge
        prev2 = np.where(prev >= 0, prev, ZERO)
        p = np.flatnonzero(live & (kind >= _PROGRAM) & (kind <= _LAUNCH))
        pd, psrc = dst[p], src[p]
        del p
        prg = np.full(n, NONE, dtype=it)
        prg[pd] = np.where(is_launch[psrc], slot[psrc], psrc)
        # the start's predecessors: the batch's last entry (its issue), stream, kernel end (at most
        # one of each); the end's: notify (plus the record's signal latency) and the others
        on = live & ex[dst]
        is_start = on & (kind <= _KERNEL_END)
        is_dep = on & ((kind == _NOTIFY) | (kind > _LAUNCH))
        sd, ss = dst[is_start], src[is_start]
        firsts = np.append(True, sd[1:] != sd[:-1]) if len(sd) else np.zeros(0, dtype=bool)
        before = np.full(n, NONE, dtype=it)              # the first; the second (rare) in before2
        before[sd[firsts]] = ss[firsts]
        before2 = np.full(n, NONE, dtype=it)
        before2[sd[~firsts]] = ss[~firsts]
        has_two = np.zeros(n, dtype=bool)
        has_two[sd[~firsts]] = True
        bl2 = np.where(bl >= 0, bl, NONE)
        dd, ds = dst[is_dep], src[is_dep]
        dlat = np.where(kind[is_dep] == _NOTIFY, self.siglat[ds], 0.0)
        firsts = np.append(True, dd[1:] != dd[:-1]) if len(dd) else np.zeros(0, dtype=bool)
        dep1 = np.full(n, NONE, dtype=it)
        dep1[dd[firsts]] = ds[firsts]
        lat1 = np.zeros(n)
        lat1[dd[firsts]] = dlat[firsts]
        more_d, more_s, more_l = dd[~firsts], ds[~firsts], dlat[~firsts]
        has_more = np.zeros(n, dtype=bool)
        has_more[more_d] = True
        # what most walks have none of is neither kept nor looked for at every level (a level
        # costs its numpy calls more than its elements; a 1024-rank ring has some 6,000 levels)
        any_two, any_more, any_launch = bool(has_two.any()), len(more_d) > 0, len(launches) > 0
        if not any_two:
            before2 = has_two = None
        if not any_more:
            has_more = None
        # the nodes' dependency graph: issue k is node k, execution i is node n + i. Two kinds of
        # edges order nothing more, as a longer path holds them: a program-kind edge into an issue
        # whose program predecessor has one from the same source (through that predecessor's
        # issue), and a batch's edge into an execution whose stream predecessor waits for the same
        # batch (through that predecessor's execution). Left out, the walk moves fewer edges (a
        # kernel's launch and its batch precede thousands of its tasks).
        n_ex = int(np.count_nonzero(ex))
        del dst, src, kind, live, on, is_start, is_dep
        pd, psrc = _implied(pd, psrc, prev, n)
        b = np.flatnonzero(ex & (bl >= 0))
        via = np.full(n, -1, dtype=it)
        via[sd] = ss
        b, bsrc = _implied(b, bl[b], via, n, bl)
        del via
        # A program's issues form runs: from a head (its first entry, or one with a program-kind
        # constraint of its own) through the entries after it whose issue is the previous one's
        # plus its submit cost (no such constraint, or the same one as the previous entry, which
        # that issue already follows). A run is one node, its head: evaluated at once (a cumulative
        # sum, the same additions in the same order), its entries' edges leave from the head.
        # (The same constraint adds nothing as the previous issue already follows it and submit
        # costs are not negative; were one negative, every constrained issue would be a head.)
        o = self.chain_order
        head = prev < 0
        head[pd] = True
        has_prg = np.flatnonzero(prg != NONE)
        if (self.submit >= 0).all():
            has_prg = has_prg[prg[np.maximum(prev[has_prg], 0)] != prg[has_prg]]
        head[has_prg] = True
        del has_prg
        run = np.cumsum(head[o]) - 1                    # per position in o: its run
        run_at = np.flatnonzero(head[o])                # per run: where it starts in o
        run_len = np.diff(np.append(run_at, n))
        head_of = np.empty(n, dtype=it)
        head_of[o] = o[run_at][run]
        at_o = np.empty(n, dtype=it)
        at_o[o[run_at]] = run_at
        length = np.zeros(n, dtype=it)
        length[o[run_at]] = run_len
        del run, run_at, run_len
        hk = np.flatnonzero(head & (prev >= 0))
        oe = o[ex[o]]                                   # the executed entries, grouped by run
        parts = [(head_of[prev[hk]], hk, False), (n + psrc, pd, False), (head_of[oe], n + oe, True),
                 (head_of[bsrc], n + b, False), (n + ss, n + sd, False), (n + ds, n + dd, False)]
        del hk, oe, b, bsrc, pd, psrc, sd, ss, dd, ds, head_of
        indeg = indegrees(2 * n, parts)
        dec = one(indeg)
        sptr, succ = successors(2 * n, parts)
        del parts
        psub_o = np.append(self.submit, [0.0, 0.0])[prev2[o]]      # the submit cost before each entry, in run order

        nan, inf_ = float("nan"), float("inf")
        issue = np.full(n + 2, nan)
        issue[ZERO], issue[NONE] = 0.0, -inf_
        start = np.full(n, nan)
        end = np.full(n + 2 + len(launches), nan)
        end[NONE] = -inf_
        flow_start = np.full(n, nan)
        body, duration, is_host, task_dispatch = self.body, self.duration, self.graph._is_host, m.task_dispatch
        kernel_launch = m.kernel_launch
        release = m.batch_submit + m.batch_fixed
        fmax = np.fmax
        front = np.flatnonzero((indeg[:n] == 0) & head)
        done = 0
        cumsum = np.cumsum
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
                    for j in np.flatnonzero(has_more[E]).tolist():
                        a, z = np.searchsorted(more_d, E[j]), np.searchsorted(more_d, E[j], side="right")
                        for s_, l_ in zip(more_s[a:z].tolist(), more_l[a:z].tolist()):
                            v = end[s_] + l_
                            if v > t[j]:
                                t[j] = v
                flow_start[E] = t
                end[E] = (t + duration[E]) + body[E]
                if any_launch:
                    sl = slot[E]
                    if sl.max() >= 0:
                        at = sl >= 0
                        end[sl[at]] = start[E[at]] + kernel_launch
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
        del sptr, succ, indeg, slot, prev2, prg, before, before2, bl2, dep1, lat1, head, at_o, length, psub_o
        if done != n + n_ex:
            raise RuntimeError("replay: the graph's constraints have a cycle")
        issue, end = issue[:n], end[:n]
        self.unknown(issue)
        # flows that overlap on a resource: the engine shares them
        flows = np.flatnonzero((self.route >= 0) & ex)
        if not _alone(self.routes, self.route[flows], flow_start[flows], flow_start[flows] + duration[flows]):
            return None
        return issue, start, end

    def unknown(self, issue) -> None:
        """Set to nan, in ``issue``, the issue times the replay does not know: those after the last
        entry of their program that executed (or whose batch an executed entry waited for)."""
        n, ex, bl = self.n, self.executed, self.batch_last
        if ex.all():                    # every entry executed: every issue is known
            return
        wanted = ex.copy()
        waited = bl[ex]
        wanted[waited[waited >= 0]] = True
        o, first = self.chain_order, self.chain_first
        at = np.where(wanted[o], np.arange(n, dtype=np.int64), -1)
        last = np.maximum.reduceat(at, np.flatnonzero(first)) if n else at
        issue[o[np.arange(n) > last[np.cumsum(first) - 1]]] = float("nan")

    # -- the engine ----------------------------------------------------------------------------------
    def engine(self):
        """Times from the discrete-event engine (flows share bandwidth)."""
        m, n = self.m, self.n
        i64 = np.int64
        plan = Plan()
        routes = self.routes
        plan.add_nodes(self.dispatch(), self.body, self.nbytes,
                       [routes[r] if r >= 0 else None for r in self.route.tolist()])
        for key in {k for rs in routes for k in rs}:
            plan.capacity[key] = self.capacity(key)
        # the graph's edges, by destination in its order; then program order; then batches
        ptr, codes = self.graph.pred_csr()
        dst = np.repeat(np.arange(n, dtype=i64), np.diff(ptr))
        kind, src = codes & 15, codes >> 4
        ek = np.full(len(codes), END_TO_DEP, dtype=np.int8)      # kinds past _LAUNCH: a signal
        lat = np.zeros(len(codes))
        ek[kind <= _KERNEL_END] = END_TO_START
        sig = kind == _NOTIFY
        lat[sig] = self.siglat[src[sig]]
        order = (kind >= _PROGRAM) & (kind <= _LAUNCH)
        by_launch = order & self.is_launch[src]
        ek[order] = END_TO_ISSUE
        ek[by_launch] = START_TO_ISSUE
        lat[by_launch] = m.kernel_launch
        del kind, sig, order, by_launch
        plan.add_edges(src, dst, ek, lat)
        del dst, src, ek, lat
        after = np.flatnonzero(self.prev >= 0)
        p = self.prev[after]
        plan.add_edges(p, after, np.full(len(after), ISSUE_TO_ISSUE, dtype=np.int8), self.submit[p])
        in_batch = np.flatnonzero(self.batch_last >= 0)
        plan.add_edges(self.batch_last[in_batch], in_batch, np.full(len(in_batch), ISSUE_TO_START, dtype=np.int8),
                       np.full(len(in_batch), m.batch_submit + m.batch_fixed))
        del after, p, in_batch
        plan.run()
        issue, start, end = np.array(plan.issue), np.array(plan.start), np.array(plan.end)
        never = ~self.executed
        start[never] = float("nan")
        end[(end == inf) | never] = float("nan")
        self.unknown(issue)
        return issue, start, end

    # -- the result ----------------------------------------------------------------------------------
    def run(self, exact: bool) -> Timeline:
        self.costs()
        times = None if exact else self.walk()
        if times is None:
            times = self.engine()
        issue, start, end = (_arr("d", t) for t in times)
        graph = self.graph

        def events():
            return [graph.event(s) for s in graph.seqs]

        n = self.n      # (the timeline keeps these closures: they must not keep this replay's arrays)

        def arrows():
            ptr, codes = graph.pred_csr()
            dst = np.repeat(np.arange(n), np.diff(ptr))
            sel = (codes & 15) == _NOTIFY
            return [Arrow(s, d, "notify") for s, d in zip((codes[sel] >> 4).tolist(), dst[sel].tolist())]

        def remote_ends(parts):
            def build():
                rank_of: dict = {}
                for e in graph._entries:
                    if e.rank is not None and e.device is not None:
                        rank_of.setdefault(e.device, e.rank)
                out: dict = {}
                for at, devices in parts:
                    out.update((i, (rank_of.get(dev), dev)) for i, dev in zip(at.tolist(), devices.tolist()))
                return out
            return build

        tl = Timeline(events, issue, start, end, arrows, model=self.m, destinations=remote_ends(self.dest),
                      sources=remote_ends(self.origin))
        tl.calls = self.calls(times[0], times[2])
        return tl

    def calls(self, issue, end) -> list:
        """A :class:`CallTime` per collective call: the ``Collective`` host effects mark them
        (``first``: the first seq of the call in its program); a call's entries are the entries
        its program issued outside kernels from ``first`` up to the marker (a kernel launch among
        them too, which has no rank), and everything the kernels launched among them issued. The
        n-th call of one name on every rank is one call."""
        kc, cols = self.kc, self.cols
        code = cols["kind_table"].get("Collective")
        if code is None:
            return []
        marks = np.flatnonzero(kc == code)
        seq = self.graph._seq
        kernel, program = cols["kernel"], cols["program"]
        plain = np.flatnonzero((kernel == 0) & (kc != code) & (program >= 0))
        o = np.argsort(program[plain], kind="stable")
        by_program = _groups(program[plain][o], plain[o])
        inside = np.flatnonzero(kernel != 0)
        o = np.argsort(kernel[inside], kind="stable")
        by_kernel = _groups(kernel[inside][o], inside[o])
        is_launch = self.is_launch
        calls: dict = {}
        count: dict = {}
        algorithm: dict = {}
        for i, e in zip(marks.tolist(), self.objects(marks)):
            extra = e.extra or {}
            name, first = extra.get("name", e.api), extra.get("first", e.seq)
            mine = by_program.get(e.program)
            got = []
            if mine is not None:
                got.append(mine[np.searchsorted(seq[mine], first):np.searchsorted(seq[mine], e.seq)])
            if got:
                for launch in got[0][is_launch[got[0]]].tolist():
                    more = by_kernel.get(int(seq[launch]))
                    if more is not None:
                        got.append(more)
            k = count[(e.rank, name)] = count.get((e.rank, name), 0) + 1
            ranks, parts = calls.setdefault((name, k), ([], []))
            algorithm.setdefault((name, k), extra.get("algorithm"))
            ranks.append(e.rank)
            parts.extend(got)
        out = []
        for (name, k), (ranks, parts) in calls.items():
            begin, last = inf, -inf        # part by part (a kernel's entries each): no call-sized copies
            for part in parts:
                ends = end[part]
                ok = ends == ends
                if ok.any():
                    begin = min(begin, float(issue[part][ok].min()))
                    last = max(last, float(ends[ok].max()))
            if last == -inf:                # nothing of it ran
                continue
            entries = array("q")
            entries.frombytes(_union(parts, self.n).view(np.uint8))
            out.append(CallTime(name, tuple(sorted(ranks)), begin, last, entries, algorithm[(name, k)]))
        return out


def _transfer_views(record, objs, table, codes) -> tuple:
    """``pyhcomm.sim.events.transfer_view`` of each of ``objs`` (transfers, with kind codes
    ``codes``), as sizes (a numpy int64 array), protocol names (a list) and remote devices (a numpy
    int64 array, -1: None): the task kinds read kind by kind, the same fields (the channel in
    ``detail``, the size in ``args`` or the written span, the remote device from the first written
    or read span; a transfer task of this Sim gives its ``nbytes``, ``channel`` and ``remote``
    slots instead), the host effects (NBI) one by one."""
    n = len(objs)
    sizes, protocols, remotes = np.zeros(n, dtype=np.int64), [None] * n, np.full(n, -1, dtype=np.int64)
    kinds = {c: k for k, c in table.items()}
    info_of = record.channel_info.get
    for code in np.unique(codes).tolist():
        kind = kinds[code]
        at = np.flatnonzero(codes == code)
        mine = list(map(objs.__getitem__, at.tolist()))
        # transfer tasks of this Sim (not a merged record's entries) give their slots, no tuples
        slots = kind in _TASK_TRANSFERS and all(getattr(c, "transfer_slots", False) for c in set(map(type, mine)))
        if not slots and (kind not in _TASK_TRANSFERS or set(map(_ENTRY, mine)) != {"task"}):
            for j, e in zip(at.tolist(), mine):
                size, protocols[j], remote = transfer_view(record, e)
                sizes[j], remotes[j] = size, -1 if remote is None else remote
            continue
        if slots:
            sizes[at] = np.fromiter(map(_NBYTES, mine), np.int64, len(mine))
            channels = list(map(_CHANNEL_OF, mine))
        else:
            spans = list(map(_WRITES_OF if kind.startswith("Write") else _READS_OF, mine))
            if "Reduce" in kind:
                sizes[at] = np.fromiter((sp[0][1] for sp in map(_WRITES_OF, mine)), np.int64, len(mine))
            else:
                sizes[at] = _ints(list(map(_SIZE_ARG, map(_ARGS, mine))))
            channels = list(map(_CHANNEL, map(_DETAIL, mine)))
        protocol_of = {}
        for ch in dict.fromkeys(channels):
            info = info_of(ch)
            protocol_of[ch] = info[0] if info else None
        protocol = list(map(protocol_of.__getitem__, channels))
        if len(at) == n:
            protocols = protocol
        else:
            for j, b in zip(at.tolist(), protocol):
                protocols[j] = b
        if slots:                                                           # the peer's address
            remotes[at] = _devices_of(list(map(_REMOTE, mine)))
        elif all(spans) and set(map(len, map(_CHANNEL, spans))) == {2}:    # no allocation: by address
            remotes[at] = _devices_of(list(map(_CHANNEL, map(_CHANNEL, spans))))
        else:
            remote = []
            for sp in spans:
                alloc = sp[0][2] if sp and len(sp[0]) > 2 else None
                remote.append(None if not sp else getattr(alloc, "device", None) if alloc is not None
                              else device_of_address(sp[0][0]))
            remotes[at] = _ints(remote)
    return sizes, protocols, remotes


def _devices_of(addresses) -> np.ndarray:
    """``device_of_address`` of each of ``addresses`` (device addresses, a list of ints) as a numpy
    int64 array, -1 for None."""
    try:
        addr = np.fromiter(addresses, np.int64, len(addresses))
    except OverflowError:
        return _ints(list(map(device_of_address, addresses)))
    return np.where(addr >= DEVICE_VA_BASE, (addr - DEVICE_VA_BASE) // DEVICE_VA_STRIDE, -1)


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


def _union(parts, n: int) -> np.ndarray:
    """The indices in any of ``parts`` (arrays of indices below ``n``), sorted, once each, as a
    contiguous int64 array: through a mask of ``n`` when they are many (no sort of millions)."""
    total = sum(map(len, parts))
    if total * 8 < n:
        return np.unique(np.concatenate(parts)).astype(np.int64, copy=False) if parts else np.zeros(0, dtype=np.int64)
    mask = np.zeros(n, dtype=bool)
    for part in parts:
        mask[part] = True
    return np.flatnonzero(mask)


def _groups(keys, values) -> dict:
    """key -> the numpy array of its values (``keys`` sorted, ``values`` aligned)."""
    if not len(keys):
        return {}
    starts = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    ends = np.append(starts[1:], len(keys))
    return {k: values[a:z] for k, a, z in zip(keys[starts].tolist(), starts.tolist(), ends.tolist())}


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


def _direction_name(direction):
    if direction is None or isinstance(direction, str):
        return direction
    from ..enums import aclrtMemcpyKind
    try:
        return aclrtMemcpyKind(direction).name
    except ValueError:
        return None
