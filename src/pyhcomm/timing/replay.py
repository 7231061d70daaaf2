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
(:func:`pyhcomm.topology.link_resources`; a device's memory). The replay first walks the graph in
execution order (``Graph.order()``) with every flow at its full rate; if two flows then overlap on
one resource, it replays again with the discrete-event engine (:mod:`.engine`), where overlapping
flows share the bandwidth. ``exact=True`` always uses the engine.

Data-less runs replay the same way: only sizes and ranges are read. Entries that never ran (a wait
that timed out, tasks behind a failure) get no times (``nan``).
"""
from __future__ import annotations

import gc
from array import array
from math import inf

from .. import topology
from ..sim.events import local_bytes, transfer_view
from .costs import cost_model
from .engine import (END_TO_DEP, END_TO_ISSUE, END_TO_START, ISSUE_TO_ISSUE, ISSUE_TO_START, START_TO_ISSUE,
                     Plan)
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


def _pred_codes(graph):
    """Per entry, its direct predecessors as ``src_index << 4 | kind code`` (None: none)."""
    codes = getattr(graph, "pred_codes", None)
    if codes is not None:
        return codes() if callable(codes) else codes
    return graph._preds


class _Replay:
    def __init__(self, model, graph, record):
        self.m = model
        self.graph = graph
        self.record = record
        self.entries = [graph.entry(s) for s in graph.seqs]
        self.preds = _pred_codes(graph)
        from ..analysis import happens_before
        # the graph's compact predecessor codes: ``src_index << 4 | kind code``, kinds in this order
        assert happens_before.EDGE_KINDS[:6] == ("stream", "kernel_end", "notify", "program", "batch", "launch")
        assert getattr(happens_before, "_SHIFT", 4) == 4

    # -- costs -------------------------------------------------------------------------------------
    def costs(self):
        """Per entry: dispatch, body (fixed part, or a flow's latency), flow bytes, flow resources,
        the latency of the signal it sends, the submit cost its program pays after it."""
        m, record = self.m, self.record
        n = len(self.entries)
        dispatch = [0.0] * n
        body = [0.0] * n
        nbytes = [0] * n
        res = [None] * n
        siglat = [0.0] * n
        submit = [0.0] * n
        dest: dict = {}
        origin: dict = {}
        family, link_resources = m.family, topology.link_resources
        links: dict = {}
        routes: dict = {}

        def link_of(protocol):
            link = links.get(protocol)
            if link is None:
                link = links[protocol] = m.link(protocol)
            return link
        d_task = m.task_dispatch
        mem_scale = m.copy_bandwidth / m.reduce_bandwidth
        hs, asub, bsub = m.host_submit, m.aicpu_submit, m.batch_submit
        prev = array("q", [-1]) * n
        is_launch = [False] * n
        last: dict = {}
        batch_last: dict = {}
        batch_of = [None] * n
        for i, e in enumerate(self.entries):
            kind = e.kind
            task = e.entry == "task"
            d = d_task if task else 0.0
            dispatch[i] = d
            batch = getattr(e, "batch", None) if task else None
            p = getattr(e, "program", None)
            if p is None:
                p = ("rank", e.rank, getattr(e, "kernel", None))
            j = last.get(p)
            if j is not None:
                prev[i] = j
            last[p] = i
            if batch is not None:
                batch_last[batch] = i
                batch_of[i] = batch
            if kind == "KernelLaunch":
                is_launch[i] = True
            submit[i] = (0.0 if kind in _FREE else hs if e.side != "device" else bsub if batch is not None else asub)
            if kind in _RECORDS:
                body[i] = m.notify_record
                if kind in _SIGNAL_BY_LINK:
                    info = record.channel_info.get(e.target[0] if task else (e.extra or {}).get("channel"))
                    siglat[i] = link_of(info[0]).latency if info else m.notify_latency
                else:
                    siglat[i] = m.notify_latency
            elif kind in _WAITS:
                body[i] = m.notify_wait
            elif kind in _WRITES or kind in _READS:
                size, protocol, remote = transfer_view(record, e)
                here = e.device
                if protocol is None or remote is None or here is None:
                    continue
                link = link_of(protocol)
                if kind in _READS:
                    src, dst, lat = remote, here, 2 * link.latency
                    origin[i] = remote
                else:
                    src, dst, lat = here, remote, link.latency
                    dest[i] = remote
                body[i] = lat
                if kind in _SIGNAL_BY_LINK:
                    siglat[i] = 0.0
                if size > 0:
                    nbytes[i] = size
                    key = (protocol, src, dst)
                    route = routes.get(key)
                    if route is None:
                        route = routes[key] = link_resources(family, protocol, src, dst)
                    res[i] = route
            elif kind == "LocalCopy":
                nbytes[i] = e.n
                res[i] = (("mem", e.device),)
            elif kind == "LocalReduce":
                nbytes[i] = int(local_bytes(e) * mem_scale)
                res[i] = (("mem", e.device),)
            elif kind in ("MemcpyAsync", "Memcpy", "EngineCtxCopy"):
                size = local_bytes(e)
                direction = (e.extra or {}).get("direction") if not task else e.detail
                host_side = kind == "EngineCtxCopy" or _direction_name(direction) in _HOST_LINK
                nbytes[i] = size
                if host_side:
                    res[i] = (("pcie", e.device),)
                    body[i] = m.host_link.latency
                else:
                    res[i] = (("mem", e.device),)
            elif kind in ("MemsetAsync", "Memset"):
                nbytes[i] = local_bytes(e) // 2
                res[i] = (("mem", e.device),)
            elif kind in _BLOCKING:
                body[i] = m.sync_return
            if nbytes[i] == 0:
                res[i] = None
        self.dispatch, self.body, self.nbytes, self.res = dispatch, body, nbytes, res
        self.siglat, self.submit, self.dest, self.origin = siglat, submit, dest, origin
        self.prev, self.batch_last, self.batch_of, self.is_launch = prev, batch_last, batch_of, is_launch

    def capacity(self, r) -> float:
        m = self.m
        if r[0] == "mem":
            return m.copy_bandwidth
        if r[0] == "pcie":
            return m.host_link.bandwidth
        return m.link(r[1]).bandwidth

    # -- the fast walk -------------------------------------------------------------------------------
    def walk(self):
        """Times with every flow at its full rate, in the graph's execution order; returns the
        arrays, or None when two flows overlap on one resource (the engine must share them)."""
        entries, preds, m = self.entries, self.preds, self.m
        n = len(entries)
        nan = float("nan")
        issue = array("d", [nan]) * n
        start = array("d", [nan]) * n
        end = array("d", [nan]) * n
        dispatch, body, nbytes, res, siglat, submit = (self.dispatch, self.body, self.nbytes, self.res, self.siglat,
                                                      self.submit)
        prev, batch_last, batch_of = self.prev, self.batch_last, self.batch_of
        kernel_launch = m.kernel_launch
        release = m.batch_submit + m.batch_fixed
        is_launch = self.is_launch
        rates: dict = {}                # resources -> the full rate of a flow through them
        spans: dict = {}                # resource -> (array of data starts, array of data ends)

        def issued(k):
            """The issue time of ``k`` (and of the entries of its program before it, first)."""
            chain = []
            while k >= 0 and issue[k] != issue[k]:
                chain.append(k)
                k = prev[k]
            for k in reversed(chain):
                p = prev[k]
                t = issue[p] + submit[p] if p >= 0 else 0.0
                for c in preds[k] or ():
                    kind = c & 15
                    if _PROGRAM <= kind <= _LAUNCH:
                        s = c >> 4
                        if is_launch[s]:
                            v = start[s] + kernel_launch
                        else:
                            v = end[s]
                        if v > t:
                            t = v
                issue[k] = t
            return issue[k]

        index = getattr(self.graph, "_index", None) or {s: i for i, s in enumerate(self.graph.seqs)}
        for seq in self.graph.order():
            i = index[seq]
            t = issue[i]
            if t != t:
                t = issued(i)
            b = batch_of[i]
            if b is not None:
                v = issue[batch_last[b]]
                if v != v:
                    v = issued(batch_last[b])
                v += release
                if v > t:
                    t = v
            dep = 0.0
            for c in preds[i] or ():
                kind = c & 15
                s = c >> 4
                if kind <= _KERNEL_END:
                    v = end[s]
                    if v > t:
                        t = v
                elif kind == _NOTIFY:
                    v = end[s] + siglat[s]
                    if v > dep:
                        dep = v
                elif kind > _LAUNCH:
                    v = end[s]
                    if v > dep:
                        dep = v
            start[i] = t
            t += dispatch[i]
            if dep > t:
                t = dep
            size = nbytes[i]
            if size:
                r = res[i]
                rate = rates.get(r)
                if rate is None:
                    rate = rates[r] = min(self.capacity(key) for key in r)
                data_end = t + size / rate
                for key in r:
                    pair = spans.get(key)
                    if pair is None:
                        pair = spans[key] = (array("d"), array("d"))
                    pair[0].append(t)
                    pair[1].append(data_end)
                t = data_end
            end[i] = t + body[i]
        if not _alone(spans):
            return None
        return issue, start, end

    # -- the engine ----------------------------------------------------------------------------------
    def engine(self):
        """Times from the discrete-event engine (flows share bandwidth)."""
        m, entries, preds = self.m, self.entries, self.preds
        plan = Plan()
        for i in range(len(entries)):
            plan.add(self.dispatch[i], self.body[i], self.nbytes[i], self.res[i])
        for key in {r for rs in self.res if rs for r in rs}:
            plan.capacity[key] = self.capacity(key)
        is_launch = self.is_launch
        for i, codes in enumerate(preds):
            for c in codes or ():
                kind, s = c & 15, c >> 4
                if kind <= _KERNEL_END:
                    plan.edge(s, i, END_TO_START)
                elif kind == _NOTIFY:
                    plan.edge(s, i, END_TO_DEP, self.siglat[s])
                elif kind <= _LAUNCH:
                    if is_launch[s]:
                        plan.edge(s, i, START_TO_ISSUE, m.kernel_launch)
                    else:
                        plan.edge(s, i, END_TO_ISSUE)
                else:
                    plan.edge(s, i, END_TO_DEP)
        for i, p in enumerate(self.prev):
            if p >= 0:
                plan.edge(p, i, ISSUE_TO_ISSUE, self.submit[p])
        release = m.batch_submit + m.batch_fixed
        for i, b in enumerate(self.batch_of):
            if b is not None:
                plan.edge(self.batch_last[b], i, ISSUE_TO_START, release)
        plan.run()
        nan = float("nan")
        ran = self.graph.ran
        end = [t if t != inf and (ran(e.seq) or e.entry == "host") else nan for t, e in zip(plan.end, entries)]
        return plan.issue, plan.start, end

    # -- the result ----------------------------------------------------------------------------------
    def run(self, exact: bool) -> Timeline:
        self.costs()
        times = None if exact else self.walk()
        if times is None:
            times = self.engine()
        issue, start, end = times
        graph, entries = self.graph, self.entries

        def events():
            return [graph.event(s) for s in graph.seqs]

        def arrows():
            return [Arrow(c >> 4, i, "notify") for i, codes in enumerate(self.preds) for c in codes or ()
                    if c & 15 == _NOTIFY]

        rank_of: dict = {}

        def remote_ends(by_index):
            def build():
                if not rank_of:
                    for e in entries:
                        if e.rank is not None and e.device is not None:
                            rank_of.setdefault(e.device, e.rank)
                return {i: (rank_of.get(dev), dev) for i, dev in by_index.items()}
            return build

        tl = Timeline(events, issue, start, end, arrows, model=self.m, destinations=remote_ends(self.dest),
                      sources=remote_ends(self.origin))
        tl.calls = collective_calls(entries, issue, end)
        return tl


def _alone(spans) -> bool:
    """Whether no two flows on one resource overlap in time (``spans``: resource -> arrays of
    the flows' data starts and ends)."""
    import numpy as np
    for starts, ends in spans.values():
        if len(starts) < 2:
            continue
        s = np.frombuffer(starts, dtype=np.float64)
        e = np.frombuffer(ends, dtype=np.float64)
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        busy = np.maximum.accumulate(e)[:-1]
        if np.any(s[1:] < busy - _EPS * np.maximum(1.0, busy)):
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


def collective_calls(entries, issue, end) -> list:
    """A :class:`CallTime` per collective call: the ``Collective`` host effects mark them
    (``first``: the first seq of the call on its rank); a call's entries are its rank's entries
    outside kernels from ``first`` up to the marker, and everything the kernels launched among them
    issued. The n-th call of one name on every rank is one call."""
    import bisect
    marks = [(i, e) for i, e in enumerate(entries) if e.kind == "Collective"]
    if not marks:
        return []
    by_rank: dict = {}
    kernel_entries: dict = {}
    for i, e in enumerate(entries):
        k = getattr(e, "kernel", None)
        if k is not None:
            kernel_entries.setdefault(k, []).append(i)
        elif e.rank is not None and e.kind != "Collective":
            by_rank.setdefault(e.rank, []).append(i)
    calls: dict = {}
    order: list = []
    count: dict = {}
    seqs_of = {rank: [entries[j].seq for j in mine] for rank, mine in by_rank.items()}
    for i, e in marks:
        extra = e.extra or {}
        name, first = extra.get("name", e.api), extra.get("first", e.seq)
        mine = by_rank.get(e.rank, [])
        seqs = seqs_of.get(e.rank, [])
        got = mine[bisect.bisect_left(seqs, first):bisect.bisect_left(seqs, e.seq)]
        for j in list(got):
            if entries[j].kind == "KernelLaunch":
                got += kernel_entries.get(entries[j].seq, [])
        k = count[(e.rank, name)] = count.get((e.rank, name), 0) + 1
        key = (name, k)
        if key not in calls:
            calls[key] = ([], [])
            order.append(key)
        calls[key][0].append(e.rank)
        calls[key][1].extend(got)
    out = []
    for key in order:
        ranks, got = calls[key]
        times = [(issue[j], end[j]) for j in got if end[j] == end[j]]
        if times:
            out.append(CallTime(key[0], tuple(sorted(ranks)), min(t[0] for t in times),
                                max(t[1] for t in times), tuple(sorted(got))))
    return out
