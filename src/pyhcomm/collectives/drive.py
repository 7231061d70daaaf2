"""Flat collectives from a :class:`~.algorithm.Level`: the loops over the HCCL buffer, the copies
between the user's buffers and the work space, the level's one-loop form on every rank.

Each ``driver(level)`` returns the issue function of one collective (the arguments of
:data:`~.algorithm.ARGUMENTS`) and :func:`implementations` the descriptor's implementations of
every collective a level runs. Where the data goes:

* AllReduce, Broadcast, AllGather(V): in place in the user's output buffer (the input copied there
  first), the HCCL buffer a landing area. HCCL copies the input into its CCL buffer and works
  there; here the output buffer is the work space (the same steps, one copy fewer per loop).
* ReduceScatter(V), Reduce, Scatter: the HCCL buffer holds the work vector (every slice's piece of
  this loop) and, after it, the landing area; the rank's slice is copied out at the end of a loop.

A loop is as large as the HCCL buffer allows (the level's landing bytes per vector byte,
:attr:`~.algorithm.Level.land_per_byte`); a buffer that cannot hold one element per rank is
``HCCL_E_MEMORY`` before anything is enqueued.
"""
from __future__ import annotations

from ..enums import DATA_TYPE_SIZE
from ..errors import HcclResult, hccl_error
from ..sim import current_sim as _sim
from ..topology import CommProtocol, RankPlace
from .algorithm import MIN_SLOT, Call, Exchange, Implementation, Layout, Level, Op, Program, Topology
from .context import MAX_SLAVES, buffer_parts
from .patterns import ACK, DATA, PROBE, Probe
from .segments import Group, Red, concat, copy, copy_into, seg, whole

SLACK = 4 * MIN_SLOT


def fit(ctx, factor: float, unit: int, api: str = "collective") -> int:
    """The largest chunk (a multiple of ``unit`` bytes) whose ``factor`` bytes of HCCL buffer per
    byte fit the buffer (less a few slots of slack for per-rank rounding)."""
    avail = ctx.ccl_size - SLACK * max(1, ctx.nranks)
    c = int(avail / factor) // unit * unit if avail > 0 else 0
    if c < unit:
        raise hccl_error(HcclResult.HCCL_E_MEMORY, api,
                         f"the HCCL buffer of {ctx.ccl_size} bytes (2 x HCCL_BUFFSIZE MB; HCCL_BUFFSIZE="
                         f"{_sim().config.buffsize_mb} now) cannot hold one loop of this algorithm with "
                         f"{ctx.nranks} ranks; set HCCL_BUFFSIZE higher")
    return c


def _named(fn, level: Level, what: str):
    fn.__name__ = fn.__qualname__ = f"{level.name}_{what}"
    return buffer_parts(lambda n: 2 * n)(fn)


# -- the drivers -----------------------------------------------------------------------------------
def all_reduce(level: Level):
    def issue(ctx, send, recv, count, data_type, op):
        elem = DATA_TYPE_SIZE[data_type]
        n = count * elem
        if send != recv and n:
            copy(ctx.main, recv, send, n)
        if ctx.nranks == 1 or not n:
            return
        g, red = whole(ctx), Red(data_type, op, elem)
        c = fit(ctx, level.land_per_byte(ctx.nranks), elem)
        for o in range(0, n, c):
            level.ar(g, seg(recv + o, min(c, n - o)), red, 0)
    return _named(issue, level, "all_reduce")


def reduce_scatter_v(level: Level):
    def issue(ctx, send, recv, counts, displs, data_type, op):
        p, me = ctx.nranks, ctx.rank
        elem = DATA_TYPE_SIZE[data_type]
        if p == 1:
            if counts[0] and recv != send + displs[0] * elem:
                copy(ctx.main, recv, send + displs[0] * elem, counts[0] * elem)
            return
        g, red = whole(ctx), Red(data_type, op, elem)
        c = fit(ctx, p * (1 + level.land_per_byte(p)), elem) // elem
        work, land = ctx.ccl, p * c * elem
        for done in range(0, max(counts), c):
            piece = [max(0, min(c, k - done)) * elem for k in counts]
            slices = [seg(work + i * c * elem, piece[i]) for i in range(p)]
            copy_into(ctx.main, concat(slices), concat(seg(send + (displs[i] + done) * elem, piece[i])
                                                       for i in range(p)))
            level.rs(g, slices, red, land)
            if piece[me]:
                copy(ctx.main, recv + done * elem, work + me * c * elem, piece[me])
    return _named(issue, level, "reduce_scatter_v")


def reduce_scatter(level: Level):
    rsv = reduce_scatter_v(level)

    def issue(ctx, send, recv, count, data_type, op):
        p = ctx.nranks
        rsv(ctx, send, recv, [count] * p, [i * count for i in range(p)], data_type, op)
    return _named(issue, level, "reduce_scatter")


def all_gather_v(level: Level):
    def issue(ctx, send, recv, sizes, displs):
        p, me = ctx.nranks, ctx.rank
        mine = recv + displs[me]
        if p == 1:
            if sizes[0] and mine != send:
                copy(ctx.main, mine, send, sizes[0])
            return
        g = whole(ctx)
        c = fit(ctx, p * level.land_per_byte(p), MIN_SLOT)
        for done in range(0, max(sizes), c):
            piece = [max(0, min(c, k - done)) for k in sizes]
            if piece[me] and mine != send:
                copy(ctx.main, mine + done, send + done, piece[me])
            level.ag(g, [seg(recv + displs[i] + done, piece[i]) for i in range(p)], 0)
    return _named(issue, level, "all_gather_v")


def all_gather(level: Level):
    agv = all_gather_v(level)

    def issue(ctx, send, recv, nbytes):
        p = ctx.nranks
        agv(ctx, send, recv, [nbytes] * p, [i * nbytes for i in range(p)])
    return _named(issue, level, "all_gather")


def broadcast(level: Level):
    def issue(ctx, buf, nbytes, root):
        if ctx.nranks == 1 or not nbytes:
            return
        g = whole(ctx)
        c = fit(ctx, level.land_per_byte(ctx.nranks), MIN_SLOT)
        for o in range(0, nbytes, c):
            level.bcast(g, seg(buf + o, min(c, nbytes - o)), root, 0)
    return _named(issue, level, "broadcast")


def scatter(level: Level):
    def issue(ctx, send, recv, nbytes, root):
        p, me = ctx.nranks, ctx.rank
        if p == 1:
            if nbytes and recv != send:
                copy(ctx.main, recv, send, nbytes)
            return
        g = whole(ctx)
        c = fit(ctx, p * (1 + level.land_per_byte(p)), MIN_SLOT)
        work, land = ctx.ccl, p * c
        for done in range(0, nbytes, c):
            cur = min(c, nbytes - done)
            base, stride = (send + done, nbytes) if me == root else (work, c)
            slices = [seg(base + i * stride, cur) for i in range(p)]
            level.scatter(g, slices, root, land)
            src = base + me * stride
            if src != recv + done:
                copy(ctx.main, recv + done, src, cur)
    return _named(issue, level, "scatter")


def reduce(level: Level):
    def issue(ctx, send, recv, count, data_type, op, root):
        elem = DATA_TYPE_SIZE[data_type]
        n = count * elem
        if ctx.nranks == 1:
            if n and recv != send:
                copy(ctx.main, recv, send, n)
            return
        g, red = whole(ctx), Red(data_type, op, elem)
        c = fit(ctx, 1 + level.land_per_byte(ctx.nranks), elem)
        work = ctx.ccl
        for o in range(0, n, c):
            cur = min(c, n - o)
            copy(ctx.main, work, send + o, cur)
            level.reduce(g, seg(work, cur), root, red, c)
            copy(ctx.main, recv + o, work, cur if ctx.rank == root else 0)     # the root's result (others: nothing)
    return _named(issue, level, "reduce")


#: collective -> (the level's core it needs, the driver)
DRIVERS = {
    Op.HCCL_CMD_ALLREDUCE: ("ar", all_reduce),
    Op.HCCL_CMD_REDUCE_SCATTER: ("rs", reduce_scatter),
    Op.HCCL_CMD_REDUCE_SCATTER_V: ("rs", reduce_scatter_v),
    Op.HCCL_CMD_ALLGATHER: ("ag", all_gather),
    Op.HCCL_CMD_ALLGATHER_V: ("ag", all_gather_v),
    Op.HCCL_CMD_BROADCAST: ("bcast", broadcast),
    Op.HCCL_CMD_SCATTER: ("scatter", scatter),
    Op.HCCL_CMD_REDUCE: ("reduce", reduce),
}


# -- the peers: the algorithm's steps looked at, not issued ---------------------------------------------
class _Probe:
    """Stands in for a :class:`~.context.CollectiveContext` while :func:`probe_peers` looks at an
    algorithm's steps (the call's rank, size and layout; no thread, channel or buffer)."""

    def __init__(self, call):
        self.rank, self.nranks = call.rank, call.nranks
        self.main, self.slaves = 0, list(range(1, MAX_SLAVES + 1))
        self.ccl, self.ccl_size = 0, 1 << 62
        self.layout = call.topology.layout

    def channel(self, q):
        return q

    def peer_ccl(self, q):
        return 0


def probe_peers(level: Level, core: str, call) -> list:
    """The ranks ``level``'s ``core`` talks to on this rank for ``call`` (one loop of the whole
    message: the forms a smaller last loop takes talk to a subset), found by running its steps with
    :data:`.patterns.PROBE` set. A collective connects exactly these: a peer it declared but never
    waited for could finish the call and destroy its channel ends before this rank connects."""
    p, n = call.nranks, max(0, call.nbytes)
    probe = Probe()
    token = PROBE.set(probe)
    try:
        g = Group(_Probe(call), range(p))
        red = Red(call.data_type if call.data_type is not None else 4, call.reduce_op or 0,
                  DATA_TYPE_SIZE.get(call.data_type, 4) if call.data_type is not None else 4)
        n -= n % red.elem
        slices = [seg(i * n, n) for i in range(p)] if core in ("rs", "ag", "scatter") else None
        root = call.root or 0
        if core == "ar":
            level.ar(g, seg(0, n), red, 0)
        elif core == "rs":
            level.rs(g, slices, red, 0)
        elif core == "ag":
            level.ag(g, slices, 0)
        elif core == "bcast":
            level.bcast(g, seg(0, n), root, 0)
        elif core == "scatter":
            level.scatter(g, slices, root, 0)
        elif core == "reduce":
            level.reduce(g, seg(0, n), root, red, 0)
    finally:
        PROBE.reset(token)
    return sorted(probe.peers - {call.rank})


#: fake addresses of a schedule's look at an issue function (nothing is issued)
_SEND, _RECV, _CCL = 1 << 44, 2 << 44, 3 << 44
_ELEM_TYPES = {1: 1, 2: 3, 4: 4, 8: 5}     # element size -> an HcclDataType of that size (int8, fp16, fp32, int64)


def _fake_args(op, p: int, nbytes: int, elem: int) -> tuple:
    count = nbytes // elem
    dt = _ELEM_TYPES[elem]
    if op in (Op.HCCL_CMD_ALLGATHER,):
        return _SEND, _RECV, nbytes
    if op == Op.HCCL_CMD_ALLGATHER_V:
        return _SEND, _RECV, [nbytes] * p, [i * nbytes for i in range(p)]
    if op in (Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_REDUCE_SCATTER):
        return _SEND, _RECV, count, dt, 0
    if op == Op.HCCL_CMD_REDUCE_SCATTER_V:
        return _SEND, _RECV, [count] * p, [i * count for i in range(p)], dt, 0
    if op == Op.HCCL_CMD_REDUCE:
        return _SEND, _RECV, count, dt, 0, 0
    if op == Op.HCCL_CMD_BROADCAST:
        return _SEND, nbytes, 0
    if op == Op.HCCL_CMD_SCATTER:
        return _SEND, _RECV, nbytes, 0
    if op == Op.HCCL_CMD_BARRIER:
        return ()
    if op in (Op.HCCL_CMD_ALLTOALL, Op.HCCL_CMD_ALLTOALLV, Op.HCCL_CMD_ALLTOALLVC):
        sizes, displs = [nbytes] * p, [i * nbytes for i in range(p)]
        return (_SEND, _RECV, nbytes) if op == Op.HCCL_CMD_ALLTOALL else (_SEND, sizes, displs, _RECV, sizes, displs)
    raise ValueError(f"no schedule for {Op(op).name}")


class _ScheduleProbe:
    """A rank of a communicator as :func:`probe_schedule` sees it: ``nranks`` ranks in servers of
    ``per_server`` (one server when None), ``nslaves`` slave threads (1 ..), channels that are
    the peers' ranks."""

    def __init__(self, rank: int, nranks: int, ccl_size: int, nslaves: int, layout: Layout):
        self.rank, self.nranks = rank, nranks
        self.main, self.slaves = 0, list(range(1, nslaves + 1))
        self.ccl, self.ccl_size = _CCL, ccl_size
        self.layout = layout

    def channel(self, q):
        return q

    def peer_ccl(self, q):
        return _CCL

    def protocol(self, q):
        """HCCS inside a server, RoCE between servers (what a flat product's collectives use)."""
        same = self.layout.server_of[q] == self.layout.server_of[self.rank]
        return CommProtocol.COMM_PROTOCOL_HCCS if same else CommProtocol.COMM_PROTOCOL_ROCE


def probe_schedule(issue, op, nranks: int, nbytes: int, ccl: int, elem: int = 4, slaves=None,
                   per_server: int | None = None, per_pod: int | None = None):
    """The steps ``issue`` (an issue function) takes on every rank of a communicator of
    ``nranks`` ranks (servers of ``per_server`` ranks, super pods of ``per_pod``; one server, one
    pod when None), each rank's looked at
    with :data:`.patterns.PROBE` set (nothing is issued) and ``slaves(call)`` slave threads (at
    most :data:`MAX_SLAVES`; none when None). Where every step runs on the main thread and the
    ranks' steps line up on one server, :class:`~.algorithm.Exchange` steps aligned by index;
    otherwise one :class:`~.algorithm.Program` of every rank's tasks."""
    per = per_server or nranks
    layout = Layout([RankPlace(r // per, r % per, r // per_pod if per_pod else 0, r) for r in range(nranks)])
    topology = Topology.of(layout)
    per_rank = []
    for r in range(nranks):
        call = Call(op, nranks, nbytes, rank=r, topology=topology, root=0)
        nslaves = min(MAX_SLAVES, slaves(call)) if slaves is not None else 0
        probe = Probe(events=True)
        token = PROBE.set(probe)
        try:
            issue(_ScheduleProbe(r, nranks, ccl, nslaves, layout), *_fake_args(op, nranks, nbytes, elem))
        finally:
            PROBE.reset(token)
        per_rank.append(probe.events)
    steps = _aligned(per_rank, nranks) if len(layout.servers) == 1 else None   # (Exchange steps: one kind of link)
    return steps if steps is not None else [Program(tuple(_tasks(events) for events in per_rank))]


def _aligned(per_rank, nranks: int):
    """The ranks' events as :class:`~.algorithm.Exchange` steps (None: some run on another thread
    than the main one, or are no exchange or local step, or do not line up between the ranks)."""
    if any(ev[0] not in ("exchange", "local") or ev[1] != 0 for events in per_rank for ev in events):
        return None
    if len({len(events) for events in per_rank}) > 1:
        return None
    steps = []
    for i in range(len(per_rank[0])):
        at = [events[i] for events in per_rank]
        kinds = {ev[0] for ev in at}
        afters = {ev[6] if ev[0] == "exchange" else ev[2] for ev in at
                  if (ev[5] if ev[0] == "exchange" else ev[3])}
        if len(kinds) > 1 or len(afters) > 1:
            return None
        after = afters.pop() if afters else "copy"
        if kinds == {"local"}:
            steps.append(Exchange((-1,) * nranks, (-1,) * nranks, ((),) * nranks,
                                  tuple(tuple(ev[3]) for ev in at), after))
        else:
            steps.append(Exchange(tuple(ev[2] for ev in at), tuple(ev[3] for ev in at),
                                  tuple(tuple(ev[4]) for ev in at), tuple(tuple(ev[5]) for ev in at), after))
    return steps


def _tasks(events) -> tuple:
    """One rank's probe events as :class:`~.algorithm.Program` tasks: an exchange as the tasks
    :func:`.segments.exchange` issues, a local step as one task per piece."""
    out = []
    for ev in events:
        kind, t = ev[0], ev[1]
        if kind == "exchange":
            _k, t, to, frm, sent, got, after = ev
            if frm >= 0:
                out.append(("rec", t, frm, ACK))
            if to >= 0:
                out.append(("wait", t, to, ACK))
                out.extend(("write", t, to, n) for n in sent)
                out.append(("rec", t, to, DATA))
            if frm >= 0:
                out.append(("wait", t, frm, DATA))
                out.extend(("local", t, after, n) for n in got)
        elif kind == "local":
            out.extend(("local", t, ev[2], n) for n in ev[3])
        else:
            out.append(ev)
    return tuple(out)


def schedule_of(issue, op, slaves=None):
    """The ``schedule(nranks, nbytes, ccl, elem, per_server=None, per_pod=None)`` of an issue
    function run with ``slaves(call)`` slave threads (:func:`probe_schedule`)."""
    def schedule(nranks: int, nbytes: int, ccl: int, elem: int = 4, per_server: int | None = None,
                 per_pod: int | None = None):
        return iter(probe_schedule(issue, op, nranks, nbytes, ccl, elem, slaves, per_server, per_pod))
    return schedule


def on_servers(schedule, issue, op, slaves=None):
    """A hand-written ``schedule`` (of one server's uniform links) that also takes ``per_server``
    and ``per_pod``: on several servers, the steps of ``issue`` (:func:`schedule_of`)."""
    probed = schedule_of(issue, op, slaves)

    def both(nranks: int, nbytes: int, ccl: int, elem: int = 4, per_server: int | None = None,
             per_pod: int | None = None):
        if per_server and per_server < nranks:
            return probed(nranks, nbytes, ccl, elem, per_server, per_pod)
        return schedule(nranks, nbytes, ccl, elem)
    both.__name__ = getattr(schedule, "__name__", "schedule")
    return both


def implementations(level: Level, ops=None, schedules=None, slaves_of=None) -> tuple:
    """The :class:`~.algorithm.Implementation` of every collective of ``ops`` (default: every one
    the level has a core for) driven by ``level``; ``schedules``: op -> schedule (default: the
    steps of its issue function, :func:`schedule_of`); ``slaves_of(call)``: the slave threads it
    asks for (default: the level's ``slaves(nranks)``). Its peers are the ranks its steps name
    (:func:`probe_peers`)."""
    schedules = schedules or {}
    out = []
    for op, (core, driver) in DRIVERS.items():
        if getattr(level, core) is None or (ops is not None and op not in ops):
            continue
        issue = driver(level)
        slaves = (lambda call, lv=level: lv.slaves(call.nranks)) if slaves_of is None else slaves_of
        out.append(Implementation(op, issue, slaves=slaves,
                                  peers=lambda call, lv=level, c=core: probe_peers(lv, c, call),
                                  schedule=schedules.get(op) or schedule_of(issue, op, slaves)))
    return tuple(out)
