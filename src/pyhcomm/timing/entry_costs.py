"""What each entry of a record costs on the virtual clock, as per-entry arrays (the replay's input).

:class:`EntryCosts` reads a record's happens-before graph (its public columns) and a
:class:`~.costs.CostModel`: every entry's kind says what it is charged (its ``cost`` class and
``unit``: :mod:`pyhcomm.sim.kinds`), its fields come through its kind's accessors. It gives, per
entry: the body (a fixed part, or a flow's latency), the bytes of its flow and their route over
shared resources, the latency of the signal it sends, the submit cost its program pays after
issuing it (per engine where the model says so), its program predecessor and, for a task of an
HCOMM batch, the batch's last task. The walk (:mod:`.walk`) and the discrete-event engine
(:mod:`.exact`) turn these into times.
"""
from __future__ import annotations

from operator import attrgetter

import numpy as np

from .. import topology
from ..analysis.graph import int_column
from ..analysis.happens_before import batch_ends
from ..analysis.keysort import stable_argsort
from ..sim.kinds import Cost, Role, Unit, engine_name
from .adjacency import index_type
from .transfers import transfer_columns

_DEVICE = attrgetter("device")


class EntryCosts:
    """Per-entry cost arrays of one record (see the module docstring). ``body``, ``siglat``,
    ``submit``, ``duration``: seconds; ``nbytes``: a flow's bytes; ``route``: index into ``routes``
    (tuples of resource keys; -1: no flow); ``prev``: the entry before it in its program (-1);
    ``batch_last``: the last task of its batch (-1: not in one); ``dest``/``origin``: ``(entry
    indices, remote devices)`` of the writes and reads; ``executed``: entries that get times;
    ``positions``: :meth:`pyhcomm.analysis.graph.Graph.positions`."""

    def __init__(self, model, graph, record):
        self.m, self.graph, self.record = model, graph, record
        self.n = n = len(graph)
        self.cols = cols = graph.columns
        #: the index type of per-entry positions: int32 (half the memory) unless one does not fit
        self.it = index_type(n)
        self.positions = graph.positions()
        step = cols.step
        self.executed = (step > 0) | (cols.is_host & (step != 0))
        self.is_launch = self.of(lambda k: k.role is Role.LAUNCH)
        #: per entry: how long after a launch its kernel's program starts (an AI CPU kernel's
        #: ``kernel_launch``, a CCU mission's ``ccu_launch``; read at launches only)
        self.launch_latency = np.where(self.of(lambda k: k.unit is Unit.CCU), model.ccu_launch, model.kernel_launch)
        self.body = np.zeros(n)
        self.siglat = np.zeros(n)
        self.nbytes = np.zeros(n, dtype=np.int64)
        self.route = np.full(n, -1, dtype=self.it)
        self.routes: list = []          # tuples of resource keys
        self._route_of: dict = {}
        self._links: dict = {}
        self.dest: list = []
        self.origin: list = []
        batched = self._batches()
        self._program_order()
        self._submit(batched)
        self._notifies()
        self._transfers()
        self._local()
        self._aiv()
        self._flows()
        del self._route_of

    # -- helpers -----------------------------------------------------------------------------------
    def of(self, test) -> np.ndarray:
        """Per entry: whether ``test(kind)`` holds for its kind."""
        return self.cols.mask(test)

    def objects(self, at) -> list:
        return self.graph.objects(at, self.positions)

    def link_of(self, protocol):
        link = self._links.get(protocol)
        if link is None:
            link = self._links[protocol] = self.m.link(protocol)
        return link

    def route_id(self, key) -> int:
        r = self._route_of.get(key)
        if r is None:
            r = self._route_of[key] = len(self.routes)
            self.routes.append(key)
        return r

    def dispatch(self) -> np.ndarray:
        """Per entry: what starting it costs (a task's dispatch; nothing for a host effect)."""
        return np.where(self.cols.is_host, 0.0, self.m.task_dispatch)

    def capacity(self, r) -> float:
        m = self.m
        if r[0] == "mem":
            return m.copy_bandwidth
        if r[0] == "aiv":       # an AIV kernel's own limit: in its device's memory, or per device pair
            return m.aiv_copy_bandwidth if len(r) == 2 else m.aiv_link_bandwidth
        if r[0] == "ccu":
            return m.ccu_copy_bandwidth
        if r[0] == "pcie":
            return m.host_link.bandwidth
        return m.link(r[1]).bandwidth

    # -- the parts -----------------------------------------------------------------------------------
    def _batches(self) -> np.ndarray:
        """Whether a task is in an HCOMM batch, and the last task of its batch (from the record's
        batches; from the tasks when two batches of one program overlap)."""
        n, cols, it = self.n, self.cols, self.it
        T = cols.tasks
        batched = np.zeros(n, dtype=bool)
        batch_last = self.batch_last = np.full(n, -1, dtype=it)
        last_seq = batch_ends(self.record.batches, cols.program[T], cols.seq[T]) if len(T) else None
        if last_seq is not None:
            inside = last_seq >= 0
            batched[T[inside]] = True
            batch_last[T[inside]] = self.graph.locate(last_seq[inside])
        elif len(T):
            batch = np.full(n, -1, dtype=np.int64)
            batch[T] = int_column([t.batch for t in cols.task_entries])
            in_batch = np.flatnonzero(batch >= 0)
            batched[in_batch] = True
            b = batch[in_batch]
            top = int(b.max(initial=0))
            if top < 4 * len(b) + 1024:     # ids from a counter: per batch, its largest index
                last_of = np.full(top + 1, -1, dtype=np.int64)
                np.maximum.at(last_of, b, in_batch)
                batch_last[in_batch] = last_of[b]
            else:
                o = stable_argsort(b)
                b, members = b[o], in_batch[o]
                ends = np.append(b[1:] != b[:-1], True)
                last = members[ends][np.cumsum(np.append(0, ends[:-1]))]     # per member: its batch's last
                batch_last[members] = last
        return batched

    def _program_order(self) -> None:
        """Each program's entries one after another (a program-less entry: its rank's host thread
        or kernel): ``prev``, and the entries grouped by program (``chain_order``, ``chain_first``)."""
        n = self.n
        key = self.cols.program.copy()
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
        self.prev = np.full(n, -1, dtype=self.it)
        self.prev[o[1:][same]] = o[:-1][same]
        self.chain_order, self.chain_first = o, np.append(True, ~same)

    def _submit(self, batched) -> None:
        """What issuing an entry costs its program: its side's parameters, or its engine's where
        those do not price it (:meth:`~.costs.CostModel.engine_prices`: an engine whose submit
        costs are its own, and ``engine_submit``); nothing for the kinds that cost nothing."""
        m, cols = self.m, self.cols
        on_device = np.zeros(self.n, dtype=bool)
        on_device[cols.tasks] = cols.on_device
        if len(cols.host):
            on_device[cols.host] = np.fromiter((e.side == "device" for e in cols.host_entries), bool, len(cols.host))
        submit = np.where(on_device, np.where(batched, m.batch_submit, m.aicpu_submit), m.host_submit)
        prices = m.engine_prices()      # the engines the side's parameters do not price (none by default)
        if prices:
            codes, engines = self.graph.engines()
            per_code = np.full((len(engines) or 1, 3), np.nan)   # per entry, per batched task, on the device?
            for k, e in enumerate(engines):
                price = prices.get(engine_name(e))
                if price is not None:
                    per_code[k] = (price[0], price[1], np.nan if price[2] is None else float(price[2] == "device"))
            per = per_code[codes]
            v = np.where(batched, per[:, 1], per[:, 0])
            mine = ~np.isnan(v) & (np.isnan(per[:, 2]) | (per[:, 2] == on_device))
            submit[mine] = v[mine]
        submit[self.of(lambda k: k.cost is Cost.FREE)] = 0.0
        self.submit = submit

    def _notifies(self) -> None:
        """Records (their signal: the notify latency, or a channel's link latency), waits, and the
        blocking calls' return."""
        m, record, body, siglat = self.m, self.record, self.body, self.siglat
        records = self.of(lambda k: k.cost is Cost.NOTIFY_RECORD)
        body[records] = m.notify_record
        siglat[records] = m.notify_latency
        by_link = np.flatnonzero(records & self.of(lambda k: k.link_signal))
        one_latency = {self.link_of(protocol).latency for protocol, _peer in record.channel_info.values()}
        if len(by_link) and len(one_latency) == 1:
            # every channel of the Sim is in ``channel_info`` (noted when it is made, recording or
            # not, kept by ``clear``; a merge renames the channels and their tasks' alike): when all
            # have one latency, no record needs reading (millions at 1024 ranks)
            siglat[by_link] = one_latency.pop()
        elif len(by_link):
            channels = self.graph.read(by_link, "channel", self.objects(by_link))
            latency: dict = {}
            for ch in dict.fromkeys(channels):
                info = record.channel_info.get(ch)
                latency[ch] = self.link_of(info[0]).latency if info else m.notify_latency
            siglat[by_link] = np.fromiter(map(latency.__getitem__, channels), np.float64, len(channels))
        body[self.of(lambda k: k.cost is Cost.NOTIFY_WAIT)] = m.notify_wait
        body[self.of(lambda k: k.cost is Cost.RETURN)] = m.sync_return

    def _transfers(self) -> None:
        """A link's latency (twice for a read: request and data), its resources."""
        m = self.m
        i64 = np.int64
        reads = self.of(lambda k: k.moves == "read")
        moves = np.flatnonzero(self.of(lambda k: k.cost is Cost.TRANSFER))
        if not len(moves):
            return
        objs = self.objects(moves)
        sizes, protocols, remote = transfer_columns(self.graph, moves, objs, self.record)
        names = list(dict.fromkeys(protocols))
        proto = np.fromiter(map({p: k for k, p in enumerate(names)}.__getitem__, protocols), i64, len(objs))
        here = int_column(list(map(_DEVICE, objs)))
        ok = (remote >= 0) & (here >= 0)
        if None in names:
            ok &= proto != names.index(None)
        i, p, r, h, rd = moves[ok], proto[ok], remote[ok], here[ok], reads[moves][ok]
        lat = np.array([self.link_of(x).latency if x is not None else 0.0 for x in names])
        self.body[i] = np.where(rd, 2 * lat[p], lat[p])
        self.siglat[i[self.of(lambda k: k.link_signal)[i]]] = 0.0     # the signal comes with the data
        self.dest.append((i[~rd], r[~rd]))
        self.origin.append((i[rd], r[rd]))
        size = sizes[ok]
        flow = size > 0
        i, p, rd, size = i[flow], p[flow], rd[flow], size[flow]
        a, z = np.where(rd, r[flow], h[flow]), np.where(rd, h[flow], r[flow])
        width = int(max(a.max(initial=0), z.max(initial=0))) + 1
        pairs, which = np.unique((p * width + a) * width + z, return_inverse=True)
        ids = [self.route_id(topology.link_resources(m.family, names[k // (width * width)], (k // width) % width,
                                                     k % width)) for k in pairs.tolist()]
        self.nbytes[i] = size
        self.route[i] = np.array(ids, dtype=i64)[which.reshape(-1)] if len(ids) else i

    def _on_memory(self, at, objs) -> None:
        """Local operations' routes: the device's memory; a CCU's go through its CCU too."""
        ccu = self.of(lambda k: k.unit is Unit.CCU)[at].tolist()
        keys = [(("ccu", d), ("mem", d)) if c else (("mem", d),) for d, c in zip(map(_DEVICE, objs), ccu)]
        ids = {k: self.route_id(k) for k in dict.fromkeys(keys)}
        self.route[at] = np.fromiter(map(ids.__getitem__, keys), np.int64, len(keys))

    def _local(self) -> None:
        """Local operations: the device's memory (or the host link); copies and reduce tasks at
        once, the rest one by one (few). A copy or reduce task's fixed part (``copy_latency``,
        ``reduce_latency``) follows its bytes, as a transfer's latency does (a CCU's has none)."""
        m, i64 = self.m, np.int64
        mem_scale = m.copy_bandwidth / m.reduce_bandwidth
        ccu = self.of(lambda k: k.unit is Unit.CCU)     # (a CCU's: no SDMA fixed part; its task cost is ccu_task)
        copies = np.flatnonzero(self.of(lambda k: k.cost is Cost.COPY))
        if len(copies):
            objs = self.objects(copies)
            self.nbytes[copies] = np.fromiter(self.graph.read(copies, "nbytes", objs), i64, len(objs))
            self.body[copies] = np.where(ccu[copies], 0.0, m.copy_latency)
            self._on_memory(copies, objs)
        reduce_tasks = self.of(lambda k: k.cost is Cost.REDUCE) & ~self.cols.is_host
        reduces = np.flatnonzero(reduce_tasks)
        if len(reduces):        # a reduce task's bytes: its written span, at the reduce bandwidth
            objs = self.objects(reduces)
            written = np.array(self.graph.read(reduces, "nbytes", objs), dtype=i64)
            scale = np.where(ccu[reduces], m.ccu_copy_bandwidth / m.ccu_reduce_bandwidth, mem_scale)
            self.nbytes[reduces] = (written * scale).astype(i64)
            self.body[reduces] = np.where(ccu[reduces], 0.0, m.reduce_latency)
            self._on_memory(reduces, objs)
        local = np.flatnonzero(self.of(lambda k: k.cost in (Cost.REDUCE, Cost.MEMCPY, Cost.MEMSET, Cost.HOST_COPY))
                               & ~reduce_tasks)
        for i, e in zip(local.tolist(), self.objects(local)):
            kind = e.kind
            r = ("mem", e.device)
            nbytes = kind.get(e, "nbytes", 0)
            if kind.cost is Cost.REDUCE:
                size = int(nbytes * mem_scale)
            elif kind.cost is Cost.MEMSET:
                size = nbytes // 2
            else:
                size = nbytes
                if kind.unit_of(e) is Unit.HOST_LINK:
                    r = ("pcie", e.device)
                    self.body[i] = m.host_link.latency
            self.nbytes[i] = size
            self.route[i] = self.route_id((r,))

    def _aiv(self) -> None:
        """What the blocks of AIV kernels move (few entries: one by one): through their device's
        memory, or over their AIV channel's link (its latency first; a load's twice)."""
        at = np.flatnonzero(self.of(lambda k: k.cost is Cost.AIV))
        for i, e in zip(at.tolist(), self.objects(at)):
            kind = e.kind
            nbytes, remote = kind.get(e, "nbytes", 0), kind.get(e, "remote")
            self.nbytes[i] = nbytes
            if remote is None:
                self.route[i] = self.route_id((("mem", e.device), ("aiv", e.device)))
                continue
            protocol = kind.get(e, "protocol")
            load = bool(e.reads) and not e.writes
            a, z = (remote, e.device) if load else (e.device, remote)
            self.body[i] = (2 if load else 1) * self.link_of(protocol).latency
            self.route[i] = self.route_id(topology.link_resources(self.m.family, protocol, a, z) + (("aiv", a, z),))

    def _flows(self) -> None:
        """Each flow's duration alone on its route."""
        route, nbytes = self.route, self.nbytes
        route[nbytes == 0] = -1
        rate = np.array([min(self.capacity(k) for k in r) for r in self.routes], dtype=np.float64)
        flows = np.flatnonzero(route >= 0)
        self.duration = np.zeros(self.n)
        self.duration[flows] = nbytes[flows] / rate[route[flows]]


__all__ = ["EntryCosts"]
