"""Alpha-beta closed forms of the collective library's algorithms, derived from their descriptors.

Every :class:`~pyhcomm.collectives.algorithm.Implementation` with a ``schedule`` lists its steps
with their bytes (:class:`~pyhcomm.collectives.algorithm.Local`,
:class:`~pyhcomm.collectives.algorithm.RingStep`, :class:`~pyhcomm.collectives.algorithm.MeshPass`);
:func:`predict` costs them with the parameters of a :class:`~pyhcomm.timing.costs.CostModel`, so
that the discrete-event replay can be checked against them (tests/test_timing_validation.py).
Nothing here knows an algorithm: a new one with a schedule has its closed form at once.

HCCL evaluates its algorithms with the Hockney alpha-beta model (hicann/hccl,
docs/en/user_guide/coll_algo_intro: ``D = alpha + n * beta + n * gamma`` per step; ring AllGather
``(p-1)(alpha + n/p * beta)``, mesh AllGather ``alpha + n/p * beta`` ...). The forms here are the
same shape with pyhcomm's costs: one ring step, for instance, is

    record ACK | wait ACK (its record crosses the link) | Write s bytes | record DATA |
    wait DATA | LocalCopy (or LocalReduce) s bytes

``alpha`` = the dispatch, notify and link latency terms of a step, ``beta`` = ``1 / link
bandwidth``, the copy or reduce term = ``1 / device memory bandwidth``. Where the replay adds
something no closed form has (the last steps of a pipeline, staggered starts), the forms are
bounds of the same size: the tests hold the replay to 5 %.

How a schedule is evaluated:

* local tasks and ring steps, every rank moving the same bytes (or every rank some bytes): the
  step form, a sum over the steps run side by side with the program issuing its entries
  (:func:`_step_form`); where some rank skips a task another does (an empty slice) or
  ``by_rank``: rank by rank, numpy vectors over the ranks (:class:`_Ranks`);
* a mesh pass: a max-plus recurrence over every rank's groups (:class:`_Mesh`).

Every function returns seconds for one call of ``nbytes`` (the call's count times the element
size: AllGather the input of one rank, ReduceScatter the output of one rank, AllReduce the buffer)
on ``nranks`` ranks whose every pair of neighbours (ring) or peers (mesh) uses ``link`` (a
:class:`Link`) with ``sharing`` ``"pair"`` (a dedicated link per pair) or ``"port"`` (one port per
rank shared by its transfers).
"""
from __future__ import annotations

from itertools import chain

import numpy as np

from ..collectives.algorithm import Algorithm, Exchange, Local, MeshPass, Op, Program, RingStep, slot_size
from ..collectives.algorithms import find

#: The HCCL buffer (2 x HCCL_BUFFSIZE MB, 200 MB by default) as the collectives cut it.
DEFAULT_CCL = 2 * 200 * (1 << 20)
MAX_THREADS = 64          # the main thread and at most 63 slaves
#: Bytes per slot of an HCCL buffer of ``ccl`` bytes cut into ``parts`` slots.
slot = slot_size
AG, RS, AR = Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_ALLREDUCE


def predict(algorithm, op, m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
            ccl: int = DEFAULT_CCL, elem: int = 4, by_rank: bool = False, per_server: int | None = None,
            per_pod: int | None = None, route=None) -> float:
    """The closed form of ``algorithm`` (an :class:`~pyhcomm.collectives.algorithm.Algorithm` or
    its name) running collective ``op`` (see the module docstring); ``device_mode``: AI CPU
    orchestration (A3, 350), else host (A2); ``elem``: the element size of a reducing call;
    ``per_server``, ``per_pod``: the ranks of a server and of a super pod (one server, one pod when
    None) and ``route`` the links between ranks (:func:`evaluate`). ``ValueError`` when the implementation has no schedule."""
    if not isinstance(algorithm, Algorithm):
        algorithm = find(algorithm)
    impl = algorithm.implementation(op)
    if impl.schedule is None:
        raise ValueError(f"no closed form for the {algorithm.name} {Op(op).name}: its descriptor has no schedule")
    servers = {k: v for k, v in (("per_server", per_server), ("per_pod", per_pod)) if v is not None}
    return evaluate(lambda: impl.schedule(nranks, nbytes, ccl, elem, **servers), m, nranks, link, sharing,
                    device_mode, by_rank, route)


def evaluate(schedule, m, nranks: int, link, sharing: str = "pair", device_mode: bool = False,
             by_rank: bool = False, route=None) -> float:
    """Seconds of the steps ``schedule()`` yields (a fresh iterator per call: some forms walk
    them twice) on ``nranks`` ranks (see the module docstring for which form); ``route(src,
    dst)``: the ``(Link, resources)`` of a transfer between two ranks, for a :class:`Program`
    whose ranks sit in several servers (default: ``link`` and ``sharing`` between every pair)."""
    mesh, uneven = False, False
    for step in schedule():
        if isinstance(step, Program):
            return _program_form(step, m, route or uniform_route(link, sharing), device_mode)
        if isinstance(step, MeshPass):
            mesh = True
        elif isinstance(step, Local):
            uneven = uneven or _uneven(step.nbytes)
        elif isinstance(step, RingStep):
            uneven = uneven or _uneven(step.write) or _uneven(step.local)
        elif isinstance(step, Exchange):
            uneven = True           # peers and bytes rank by rank
        else:
            raise TypeError(f"closed_form: no cost for a step {step!r}")
    if mesh:
        return _mesh_form(schedule, m, nranks, link, sharing, device_mode)
    if by_rank or uneven:
        return _rank_form(schedule, m, nranks, link, device_mode)
    return _step_form(schedule(), m, link, device_mode)


def _uneven(nbytes) -> bool:
    """Whether some rank moves bytes in this step and another none (it skips the task)."""
    if np.ndim(nbytes) == 0:
        return False
    busy = np.asarray(nbytes) > 0
    return bool(busy.any() and not busy.all())


def _most(nbytes) -> int:
    return int(np.max(nbytes)) if np.ndim(nbytes) else int(nbytes)


def _local(m, what: str, nbytes):
    """A local copy or reduce of ``nbytes`` alone: its fixed part and its bytes
    (:meth:`~.costs.CostModel.local_seconds`)."""
    return m.local_seconds(what, nbytes)


def _ring_step(m, link, s: int, local: float) -> float:
    """One ring step (see the module docstring); ``local`` is the copy or reduce after it."""
    d, nr, nw, lat = m.task_dispatch, m.notify_record, m.notify_wait, link.latency
    handshake = (d + nr) + max(d, lat) + nw
    return 2 * handshake + (d + s / link.bandwidth + lat) + (d + local)


def _launch(m) -> float:
    """When an AI CPU kernel's body starts: the host records the kernel's sync notify on the
    user's stream, then issues the launch, which starts once that record ended."""
    return max(m.host_submit, m.task_dispatch + m.notify_record) + m.kernel_launch


def _orchestration(m, device_mode: bool, entries: int, dev: float, last: float) -> float:
    """A whole call from the device path ``dev`` and the program that issues its ``entries``
    (``last``: the duration of the last task): host orchestration (Atlas A2) runs the device path
    and the host's issue of every entry side by side; AI CPU orchestration (A3, 350) launches a
    kernel that submits the whole batch first."""
    if not device_mode:
        return max(dev, (entries - 1) * m.host_submit + last)
    # user stream: record (host), KernelLaunch, ...; the kernel: wait sync, algorithm, record
    launch = _launch(m)
    batch = (entries + 2) * m.batch_submit + m.batch_fixed
    head = m.task_dispatch + m.notify_wait                  # the kernel's wait for the host's sync
    tail = m.task_dispatch + m.notify_record + m.notify_latency + m.notify_wait
    return launch + batch + head + dev + tail


# -- local tasks and ring steps ----------------------------------------------------------------------
def _step_form(steps, m, link, device_mode: bool) -> float:
    """The step form: every step charged the most bytes any rank moves in it, one after another
    on one thread: a local task ``d + s/Bc`` (``s/Br`` for a reduce), a ring step
    ``2 (d + nr + max(d, L) + nw) + d + s/B + L + d + s'/Bc``; the device path beside the program
    issuing its entries (:func:`_orchestration`). A ring AllGather of ``s`` bytes per rank (one
    loop) is ``2 (d + s/Bc) + (p-1) step(s)``. (Here and below ``s/Bc`` stands for a copy's
    ``copy_latency + s/Bc``, ``s/Br`` for a reduce's ``reduce_latency + s/Br``.)"""
    d = m.task_dispatch
    dev, entries, last = 0.0, 0, 0.0
    for step in steps:
        if isinstance(step, Local):
            task = d + _local(m, step.what, _most(step.nbytes))
            dev += step.times * task
            entries += step.times
            last = task
        else:
            write, local = _most(step.write), _most(step.local)
            after = _local(m, step.after, local) if local else 0.0
            dev += _ring_step(m, link, write, after)
            entries += 6
            last = d + after
    return _orchestration(m, device_mode, entries, dev, last)


class _Ranks:
    """The one thread of every rank of a ring at once, task by task (numpy vectors over ranks): a
    task starts when its thread is free and (host orchestration) its program issued it, the
    ``k``-th task of a rank ``k * host_submit`` after the call began; it runs ``dispatch`` then
    its body; a wait ends ``notify_wait`` after both its dispatch and the record it waits for
    arrived."""

    def __init__(self, m, link, start, device_mode: bool):
        self.m, self.link, self.device = m, link, device_mode
        self.free = np.array(start, dtype=np.float64)
        self.issued = np.zeros(len(self.free))

    def _start(self, mask=None):
        free = self.free if mask is None else self.free[mask]
        if self.device:
            return free
        issued = self.issued if mask is None else self.issued[mask]
        return np.maximum(free, issued * self.m.host_submit)

    def task(self, mask, body) -> None:
        """A task of ``body`` seconds on the ranks in ``mask`` (the others issue nothing)."""
        if mask.any():
            self.free[mask] = self._start(mask) + self.m.task_dispatch + body[mask]
            self.issued[mask] += 1

    def record(self):
        """A notify record on every rank; returns when each one was recorded."""
        self.free = self._start() + self.m.task_dispatch + self.m.notify_record
        self.issued += 1
        return self.free

    def wait(self, arrives) -> None:
        """A notify wait on every rank, for records that arrive at ``arrives``."""
        self.free = np.maximum(self._start() + self.m.task_dispatch, arrives) + self.m.notify_wait
        self.issued += 1

    def _record(self, mask):
        """A notify record on the ranks in ``mask``; returns when each was recorded (others: nan)."""
        when = np.full(len(self.free), np.nan)
        if mask.any():
            self.free[mask] = self._start(mask) + self.m.task_dispatch + self.m.notify_record
            self.issued[mask] += 1
            when[mask] = self.free[mask]
        return when

    def _wait(self, mask, arrives) -> None:
        if mask.any():
            self.free[mask] = np.maximum(self._start(mask) + self.m.task_dispatch, arrives[mask]) + self.m.notify_wait
            self.issued[mask] += 1

    def _tasks(self, sizes, body) -> None:
        """Each rank's tasks in order: ``sizes[r]`` (a list of byte counts) on rank ``r``, a task of
        ``n`` bytes running ``body(n)`` after its dispatch."""
        most = max((len(x) for x in sizes), default=0)
        for i in range(most):
            mask = np.array([len(x) > i for x in sizes])
            nbytes = np.array([x[i] if len(x) > i else 0 for x in sizes], dtype=np.float64)
            self.task(mask, np.where(mask, body(nbytes), 0.0))

    def exchange(self, step) -> None:
        """One :class:`~pyhcomm.collectives.algorithm.Exchange` (see there), rank by rank: the ACK
        crosses the link from ``frm`` to the rank that writes to it, the DATA from ``to`` back."""
        lat = self.link.latency
        to, frm = np.array(step.to), np.array(step.frm)
        sends, gets = to >= 0, frm >= 0
        acked = self._record(gets)              # "my landing area is free", to frm
        arrive = np.zeros(len(to))
        arrive[sends] = acked[to[sends]] + lat
        self._wait(sends, arrive)
        self._tasks([w if t >= 0 else () for w, t in zip(step.writes, step.to)],
                    lambda n: n / self.link.bandwidth + lat)
        landed = self._record(sends)             # "it landed", to to
        arrive = np.zeros(len(frm))
        arrive[gets] = landed[frm[gets]] + lat
        self._wait(gets, arrive)
        self._tasks(step.locals, lambda n: _local(self.m, step.after, n))

    def step(self, out, back, after: str) -> None:
        """One ring step: ``out`` bytes written right, ``back`` bytes copied or reduced
        (``after``) after."""
        lat = self.link.latency
        acked = self.record()
        self.wait(np.roll(acked, -1) + lat)         # the right neighbour's ACK
        self.task(out > 0, out / self.link.bandwidth + lat)
        landed = self.record()
        self.wait(np.roll(landed, 1) + lat)         # the left neighbour's DATA
        self.task(back > 0, _local(self.m, after, back))


def _rank_form(schedule, m, nranks: int, link, device_mode: bool) -> float:
    """The steps rank by rank (:class:`_Ranks`), for ranks whose task lists differ: a rank
    writes, reduces and copies only non-empty pieces but does every handshake, so its neighbours'
    records come earlier or later than its own; AI CPU orchestration submits each rank's own
    number of tasks. Where every rank moves the same bytes: under AI CPU orchestration the step
    form's value; under host orchestration at least that (the step form takes the longer of the
    device path and the host's issue, this has both at once)."""
    p = nranks

    def vector(nbytes):
        return np.full(p, nbytes, dtype=np.int64) if np.ndim(nbytes) == 0 else nbytes

    def run(ranks) -> None:
        for step in schedule():
            if isinstance(step, Local):
                piece = vector(step.nbytes)
                for _ in range(step.times):
                    ranks.task(piece > 0, _local(m, step.what, piece))
            elif isinstance(step, Exchange):
                ranks.exchange(step)
            else:
                ranks.step(vector(step.write), vector(step.local), step.after)

    if not device_mode:
        ranks = _Ranks(m, link, np.zeros(p), False)
        run(ranks)
        return float(ranks.free.max())
    tally = _Ranks(m, link, np.zeros(p), True)
    run(tally)                                      # how many tasks each rank's kernel submits
    launch = _launch(m)
    head = m.task_dispatch + m.notify_wait
    tail = m.task_dispatch + m.notify_record + m.notify_latency + m.notify_wait
    ranks = _Ranks(m, link, launch + (tally.issued + 2) * m.batch_submit + m.batch_fixed + head, True)
    run(ranks)
    return float((ranks.free + tail).max())


# -- mesh ------------------------------------------------------------------------------------------
class _Mesh:
    """The mesh collectives of every rank at once, as a max-plus recurrence over their tasks.

    Each rank serves its ``p - 1`` peers in the groups the pass cuts (at most ``width`` threads:
    the rounds of a round-robin schedule, :meth:`pyhcomm.collectives.algorithm.MeshPass.groups`;
    the ReduceScatter orders each group from ``rank + 1`` on):
    per group the main thread releases the slaves it uses (a record each, the slave waits), every
    thread runs one exchange (record the peer's ACK, wait its own ACK, write ``s`` bytes, record the
    peer's DATA, wait its own DATA; the ReduceScatter stages ``s`` bytes first), and the main
    thread waits for each slave. A task starts once its stream is free and (``gap``, host
    orchestration) its program issued it, ``dispatch`` later runs its body, after the record it
    waits for arrived (``notify_latency`` on the device, the link's latency across it). A staging
    copy's fixed part (``copy_latency``) follows its bytes, which share the device's memory.

    An exchange pairs two ranks in the same group on both sides, but a rank's group still waits for
    its peers to reach theirs (ranks leave the previous group at different times). The recurrence
    is solved unit by unit (a unit: one rank's group) in sweeps until no time changes; the units
    form a DAG (the cut is deadlock-free), so the sweeps end. Concurrent copies of a unit share the
    device's memory; with ``sharing == "port"`` the writes of a unit share the rank's port
    (:func:`shared_finish`).
    """

    def __init__(self, m, link, sharing: str, nranks: int, gap: float | None = None):
        self.m, self.link, self.sharing, self.p = m, link, sharing, nranks
        self.gap = gap                  # None: an AI CPU batch (every task on its stream already)
        self.main = [0.0] * nranks      # per rank: when its main thread's stream is free
        self.slaves = [[0.0] * (MAX_THREADS - 1) for _ in range(nranks)]
        self.k = 0                      # entries each rank's program issued so far (the same on all)

    def _issue(self, k: int) -> float:
        return 0.0 if self.gap is None else k * self.gap

    def _task(self, free: float, k: int, body: float, dep: float = 0.0) -> float:
        """The end of the task issued as entry ``k`` on a stream free at ``free``."""
        start = free if self.gap is None else max(free, k * self.gap)
        return max(start + self.m.task_dispatch, dep) + body

    def local(self, body: float, times: int = 1) -> None:
        """``times`` tasks of ``body`` seconds on every rank's main thread."""
        for _ in range(times):
            self.main = [self._task(t, self.k, body) for t in self.main]
            self.k += 1

    def groups(self, step: MeshPass, stage: float) -> None:
        """One mesh pass (``step``): every rank exchanges ``step.nbytes`` with each peer, in the
        groups the step cuts (see the class); ``stage``: seconds of each staging copy (0: none)."""
        p, s, main_too = self.p, step.nbytes, step.main_too
        cuts = [step.groups(r, p) for r in range(p)]
        ngroups = len(cuts[0])
        per = (5 if s else 4) + (1 if stage else 0)     # entries per exchange
        k0 = [[self.k] for _ in range(p)]               # per rank: its first entry of each group
        for r in range(p):
            for g in cuts[r]:
                k0[r].append(k0[r][-1] + (4 * (len(g) - (1 if main_too else 0)) + per * len(g) if g else 0))
        r1 = [dict() for _ in range(p)]     # r1[r][q]: rank r recorded q's ACK (end)
        r2 = [dict() for _ in range(p)]     # r2[r][q]: rank r recorded q's DATA (end)
        main_in = [list(self.main)] + [[0.0] * p for _ in range(ngroups)]
        slave_in = [[list(x) for x in self.slaves]] + [[None] * p for _ in range(ngroups)]
        for _sweep in range(4 * ngroups + 8):
            changed = False
            for g in range(ngroups):
                for r in range(p):
                    if not cuts[r][g]:
                        main, slaves = main_in[g][r], slave_in[g][r]
                    else:
                        main, slaves = self._unit(r, cuts[r][g], k0[r][g], main_in[g][r], slave_in[g][r], s,
                                                  main_too, stage, r1, r2)
                    if main != main_in[g + 1][r] or slaves != slave_in[g + 1][r]:
                        changed = True
                        main_in[g + 1][r], slave_in[g + 1][r] = main, slaves
            if not changed:
                break
        else:   # a cycle would mean a deadlocking cut: MeshPass.groups promises there is none
            raise RuntimeError("closed_form: the mesh recurrence did not settle")
        self.main, self.slaves, self.k = main_in[-1], slave_in[-1], max(k[-1] for k in k0)

    def _unit(self, r, group, k, main, slave_free, s, main_too, stage, r1, r2):
        """One rank's group; updates ``r1[r]``, ``r2[r]``; returns (main free, slaves free)."""
        m, task = self.m, self._task
        d, nr, nw, nl, lat = m.task_dispatch, m.notify_record, m.notify_wait, m.notify_latency, self.link.latency
        n = len(group)
        nslaves = n - (1 if main_too else 0)
        slave_free = list(slave_free)
        for j in range(nslaves):                    # fan-out: record slave j's notify, it waits
            main = task(main, k, nr)
            slave_free[j] = task(slave_free[j], k + 1, nw, main + nl)
            k += 2
        threads = ([main] if main_too else []) + slave_free[:nslaves]
        per = (5 if s else 4) + (1 if stage else 0)
        off = 1 if stage else 0
        if stage:                                   # the staging copies share the device's memory
            starts = [max(f, self._issue(k + per * j)) + d for j, f in enumerate(threads)]
            threads = [t + m.copy_latency for t in shared_finish(starts, [stage] * n)]
        mine1, mine2 = r1[r], r2[r]
        ack = [task(f, k + per * j + off, nr) for j, f in enumerate(threads)]
        for q, e in zip(group, ack):
            mine1[q] = e
        w1 = [task(ack[j], k + per * j + off + 1, nw, r1[q].get(r, 0.0) + lat) for j, q in enumerate(group)]
        if s:
            starts = [max(e, self._issue(k + per * j + off + 2)) + d for j, e in enumerate(w1)]
            landed = [t + lat for t in _writes_done(starts, s, self.link, self.sharing)]
        else:
            landed = w1
        step = 3 if s else 2
        data = [task(t, k + per * j + off + step, nr) for j, t in enumerate(landed)]
        for q, e in zip(group, data):
            mine2[q] = e
        ends = [task(data[j], k + per * j + off + step + 1, nw, r2[q].get(r, 0.0) + lat)
                for j, q in enumerate(group)]
        k += per * n
        if main_too:
            main = ends.pop(0)
        for i, e in enumerate(ends):                # fan-in: slave i records, main waits
            rec = task(e, k, nr)
            slave_free[i] = rec
            main = task(main, k + 1, nw, rec + nl)
            k += 2
        return main, slave_free


def _mesh_form(schedule, m, nranks, link, sharing, device_mode) -> float:
    """Local tasks and mesh passes, every rank at once (:class:`_Mesh`)."""
    h = _Mesh(m, link, sharing, nranks, None if device_mode else m.host_submit)
    for step in schedule():
        if isinstance(step, Local):
            h.local(_local(m, step.what, _most(step.nbytes)), step.times)
        elif isinstance(step, MeshPass):
            h.groups(step, step.nbytes / m.copy_bandwidth if step.stage else 0.0)
        else:
            raise TypeError(f"closed_form: a mesh schedule with a {type(step).__name__} has no form")
    end = max(h.main)
    return _orchestration(m, True, h.k, end, 0.0) if device_mode else end


def _writes_done(starts, s: int, link, sharing: str) -> list:
    """When writes of ``s`` bytes that start at ``starts`` have moved their bytes: alone on their
    links, or sharing the rank's port (``sharing == "port"``)."""
    work = s / link.bandwidth
    if not s:
        return list(starts)
    if sharing == "port" and len(starts) > 1:
        return shared_finish(starts, [work] * len(starts))
    return [t + work for t in starts]


def shared_finish(starts, works) -> list:
    """When jobs that arrive at ``starts`` needing ``works`` seconds of a resource alone finish,
    sharing it equally while they overlap (processor sharing)."""
    n = len(starts)
    order = sorted(range(n), key=lambda j: starts[j])
    done = [0.0] * n
    if n and all(w == works[0] for w in works):
        # equal work: jobs finish in arrival order; v is the work each job in service received
        work, v, now, head, nxt = works[0], 0.0, 0.0, 0, 0
        got = [0.0] * n          # v when the job arrived
        while head < n:
            active = nxt - head
            finish = now + (got[order[head]] + work - v) * active if active else float("inf")
            if nxt < n and starts[order[nxt]] < finish:
                t = starts[order[nxt]]
                if active:
                    v += (t - now) / active
                now = t
                got[order[nxt]] = v
                nxt += 1
            else:
                v = got[order[head]] + work
                now = finish
                done[order[head]] = finish
                head += 1
        return done
    left = {}
    now = 0.0
    k = 0
    while k < len(order) or left:
        nxt = starts[order[k]] if k < len(order) else float("inf")
        if left:
            j = min(left, key=left.get)
            finish = now + left[j] * len(left)
            if finish <= nxt:
                share = (finish - now) / len(left)
                for i in left:
                    left[i] -= share
                done[j] = finish
                del left[j]
                now = finish
                continue
            share = (nxt - now) / len(left)
            for i in left:
                left[i] -= share
        now = nxt
        left[order[k]] = works[order[k]]
        k += 1
    return done


# -- any program: every rank's tasks on every thread ----------------------------------------------------
def uniform_route(link, sharing: str):
    """``route(src, dst)`` with ``link`` between every pair of ranks: a dedicated link per
    directed pair (``sharing == "pair"``), or the source's egress and the destination's ingress
    port (``"port"``)."""
    def route(src: int, dst: int):
        if sharing == "pair":
            return link, (("link", src, dst),)
        return link, (("out", src), ("in", dst))
    return route


#: Rounds of the contention fixed point (:func:`_program_form`) at most.
SHARING_ROUNDS = 30


def _program_form(prog: Program, m, route, device_mode: bool) -> float:
    """A :class:`Program` (every rank's tasks on its threads), as a max-plus recurrence over the
    tasks (:func:`_walk`): a task starts once its thread is free and its program issued it (host
    orchestration: the ``k``-th entry of a rank ``k * host_submit`` after the call began; AI CPU:
    after the kernel launch and its batch), ``dispatch`` later runs its body; a wait ends
    ``notify_wait`` after its record arrived (a channel notify's record after the link's latency,
    a thread notify's after ``notify_latency``); a write moves its bytes then pays the link's
    latency (a read twice: request and data); a local copy or reduce moves its bytes on the
    device's memory, then pays its fixed part.

    Transfers and local tasks that overlap on a resource (a pair link, a port, a device's memory)
    share its bandwidth: each round gives every flow the duration processor sharing gives it
    among the flows of each of its resources (with the start times of the previous round), the
    longest over its resources, until no duration changes (at most :data:`SHARING_ROUNDS`)."""
    durations: dict = {}
    for _round in range(SHARING_ROUNDS):
        end, flows = _walk(prog, m, route, device_mode, durations)
        shared = _shared_durations(flows)
        if all(abs(shared[f] - durations.get(f, work)) <= 1e-12 for f, _b, work, _res in flows):
            break
        durations = shared
    return end


def _walk(prog: Program, m, route, device_mode: bool, durations: dict):
    """One pass of :func:`_program_form`: ``(the call's seconds, flows)``, a flow ``(id, start of
    its bytes, seconds alone, resources)``; ``durations``: a flow's seconds (default: alone)."""
    ranks = prog.ranks
    if device_mode:
        head = m.task_dispatch + m.notify_wait          # the kernel's wait for the host's sync notify
        ready = [_launch(m) + (len(tasks) + 2) * m.batch_submit + m.batch_fixed + head for tasks in ranks]
    else:
        ready = [0.0] * len(ranks)
    walk = _Walk(m, route, 0.0 if device_mode else m.host_submit, durations)
    queues = []        # per rank: thread -> [task indices], in program order
    for tasks in ranks:
        q: dict = {}
        for k, t in enumerate(tasks):
            q.setdefault(t[1], []).append(k)
        queues.append(q)
    free = [dict.fromkeys(q, ready[r]) for r, q in enumerate(queues)]
    heads = [dict.fromkeys(q, 0) for q in queues]
    keys = [_signal_keys(r, tasks) for r, tasks in enumerate(ranks)]
    left = sum(len(tasks) for tasks in ranks)
    while left:
        moved = 0
        for r, tasks in enumerate(ranks):
            for thread, order in queues[r].items():
                i = heads[r][thread]
                while i < len(order) and walk.task(r, order[i], tasks[order[i]], keys[r][order[i]], free[r], thread):
                    i += 1
                moved += i - heads[r][thread]
                heads[r][thread] = i
        if not moved:
            raise RuntimeError("closed_form: the program's waits never get their records (a deadlock)")
        left -= moved
    if device_mode:
        tail = m.task_dispatch + m.notify_record + m.notify_latency + m.notify_wait
        return max(max(max(fr.values()), fr.get(0, 0.0) + tail) for fr in free), walk.flows
    return max(max(fr.values()) for fr in free), walk.flows


def _signal_keys(r: int, tasks) -> list:
    """Per task of rank ``r``: the key of the signal it records or waits for (None for others);
    the ``k``-th record of a notify is consumed by its ``k``-th wait."""
    seen: dict = {}
    keys = []
    for t in tasks:
        kind = t[0]
        if kind == "rec":
            key = ("c", r, t[2], t[3])
        elif kind == "wait":
            key = ("c", t[2], r, t[3])
        elif kind == "trec":
            key = ("t", r, t[2], t[3])
        elif kind == "twait":
            key = ("t", r, t[1], t[2])
        else:
            keys.append(None)
            continue
        side = (key, kind in ("rec", "trec"))
        n = seen.get(side, 0)
        seen[side] = n + 1
        keys.append(key + (n,))
    return keys


class _Walk:
    """The cost of each task of a :class:`Program` (see :func:`_program_form`)."""

    def __init__(self, m, route, issue: float, durations: dict):
        self.m, self.route, self.issue, self.durations = m, route, issue, durations
        self.arrived: dict = {}
        self.flows: list = []

    def task(self, r: int, k: int, t: tuple, key, free: dict, thread) -> bool:
        """Run task ``k`` of rank ``r`` (``t``) on ``thread`` (``free``: when each thread of the
        rank is free); False when it waits for a record not made yet."""
        m, kind = self.m, t[0]
        if key is not None and kind in ("wait", "twait") and key not in self.arrived:
            return False
        start = max(free[thread], k * self.issue) + m.task_dispatch
        if kind == "rec" or kind == "trec":
            end = start + m.notify_record
            self.arrived[key] = end + (self.route(r, t[2])[0].latency if kind == "rec" else m.notify_latency)
        elif kind == "wait" or kind == "twait":
            end = max(start, self.arrived[key]) + m.notify_wait
        elif kind == "write" or kind == "read":
            link, resources = self.route(*((r, t[2]) if kind == "write" else (t[2], r)))
            end = self._flow((r, k), start, t[3] / link.bandwidth, resources) + \
                link.latency * (2 if kind == "read" else 1)
        elif kind == "local":
            fixed = m.reduce_latency if t[2] == "reduce" else m.copy_latency
            end = self._flow((r, k), start, m.local_seconds(t[2], t[3]) - fixed, (("mem", r),)) + fixed
        else:
            raise TypeError(f"closed_form: no cost for a task {t!r}")
        free[thread] = end
        return True

    def _flow(self, fid, start: float, work: float, resources) -> float:
        """When a flow of ``work`` seconds alone that starts at ``start`` has moved its bytes."""
        if work:
            self.flows.append((fid, start, work, resources))
        return start + self.durations.get(fid, work)


def _shared_durations(flows) -> dict:
    """Each flow's seconds when the flows of each resource share it (:func:`shared_finish`), the
    longest over its resources."""
    by_resource: dict = {}
    for n, (_fid, start, work, resources) in enumerate(flows):
        for res in resources:
            by_resource.setdefault(res, []).append(n)
    out = {fid: work for fid, _s, work, _r in flows}
    for members in by_resource.values():
        if len(members) == 1:
            continue
        starts = [flows[n][1] for n in members]
        works = [flows[n][2] for n in members]
        for n, finish in zip(members, shared_finish(starts, works)):
            fid = flows[n][0]
            out[fid] = max(out[fid], finish - flows[n][1])
    return out


# -- the forms by name ---------------------------------------------------------------------------------
def ring_allgather(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL) -> float:
    """The ring AllGather of ``nbytes`` per rank: per loop a staging copy, ``p - 1`` steps (write
    ``s``, copy ``s`` out), the rank's own copy:
    ``2 (d + s/Bc) + (p-1) [2 (d + nr + max(d, L) + nw) + d + s/B + L + d + s/Bc]``."""
    return predict("ring", AG, m, nranks, nbytes, link, device_mode=device_mode, ccl=ccl)


def ring_reduce_scatter(m, nranks: int, nbytes: int, link, device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """The ring ReduceScatter of ``nbytes`` per rank (fp32): per loop a staging copy, ``p - 1``
    steps (write ``s``, reduce ``s``), the copy to the output."""
    return predict("ring", RS, m, nranks, nbytes, link, device_mode=device_mode, ccl=ccl)


def ring_allreduce(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL,
                   elem: int = 4) -> float:
    """The ring AllReduce: the ring ReduceScatter of slices of ``nbytes / p``, then the ring
    AllGather of the reduced slices, on one thread. When some slice is empty (fewer elements
    than ranks) the ranks no longer do the same tasks: rank by rank then
    (:func:`ring_allreduce_ranks`)."""
    return predict("ring", AR, m, nranks, nbytes, link, device_mode=device_mode, ccl=ccl, elem=elem)


def ring_allreduce_ranks(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL,
                         elem: int = 4) -> float:
    """The ring AllReduce rank by rank (:func:`_rank_form`), whatever the slices."""
    return predict("ring", AR, m, nranks, nbytes, link, device_mode=device_mode, ccl=ccl, elem=elem, by_rank=True)


def mesh_allgather(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL) -> float:
    """The mesh AllGather: per loop stage ``s``, then per group of at most 64 peers: the main
    thread releases the slaves (one record each), every thread runs one exchange at once, the main
    thread waits for each slave; then ``p`` copies out. One group (up to 65 ranks):
    ``(d + s/Bc) + [k (d + nr) + exchange(s) + k (d + nw)] + p (d + s/Bc)``, ``exchange(s)`` the
    two handshakes and ``s/B`` (``k s/B`` with the writes sharing the rank's port, A3 / 350). On
    Atlas A2 the host issues every entry, each task starting no earlier than its issue; on A3 /
    350 the AI CPU kernel submits the batch first. Past 65 ranks: groups of the same form, one
    after another (:class:`_Mesh`)."""
    return predict("mesh", AG, m, nranks, nbytes, link, sharing, device_mode, ccl)


def mesh_reduce_scatter(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """The mesh ReduceScatter: per loop the main thread copies its own slice, then per group of at
    most 63 peers the slaves stage ``s`` each (the copies share the device's memory bandwidth) and
    run one exchange; then the main thread reduces ``p - 1`` slices:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + d + k_g s/Bc + exchange(s) + k_g (d + nw)] + (p-1)(d + s/Br)``
    for aligned groups (:class:`_Mesh` for the general case and host orchestration)."""
    return predict("mesh", RS, m, nranks, nbytes, link, sharing, device_mode, ccl)


def mesh_allreduce(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL, elem: int = 4) -> float:
    """The mesh ReduceScatter of ``nbytes / p`` per rank followed, in the same call, by the mesh
    AllGather of the result (the two mesh descriptors' steps one after the other): HCCL's mesh
    AllReduce, ``2 alpha + 2/p n beta + (p-1)/p n gamma``."""
    per = (nbytes // elem + nranks - 1) // nranks * elem
    mesh = find("mesh")
    rs, ag = mesh.implementation(RS).schedule, mesh.implementation(AG).schedule
    return evaluate(lambda: chain(rs(nranks, per, ccl, elem), ag(nranks, per, ccl, elem)), m, nranks, link, sharing,
                    device_mode)


def hccl_formula(algorithm: str, op: str, nranks: int, nbytes: int, alpha: float, beta: float,
                 gamma: float = 0.0) -> float:
    """HCCL's published forms (hicann/hccl docs, Ring.md and Mesh.md), ``nbytes`` = ``n`` the
    whole buffer: ring AllGather/ReduceScatter ``(p-1)(alpha + n/p beta [+ n/p gamma])``, ring
    AllReduce twice that; mesh AllGather ``alpha + n/p beta``, ReduceScatter ``+ (p-1)/p n gamma``,
    AllReduce ``2 alpha + 2/p n beta + (p-1)/p n gamma``."""
    p, n = nranks, nbytes
    forms = {
        ("ring", "allgather"): (p - 1) * (alpha + n / p * beta),
        ("ring", "reduce_scatter"): (p - 1) * (alpha + n / p * beta + n / p * gamma),
        ("ring", "allreduce"): 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma,
        ("mesh", "allgather"): alpha + n / p * beta,
        ("mesh", "reduce_scatter"): alpha + n / p * beta + (p - 1) / p * n * gamma,
        ("mesh", "allreduce"): 2 * alpha + 2 / p * n * beta + (p - 1) / p * n * gamma,
    }
    return forms[(algorithm, op)]


__all__ = ["predict", "evaluate", "ring_allgather", "ring_reduce_scatter", "ring_allreduce", "ring_allreduce_ranks",
           "mesh_allgather", "mesh_reduce_scatter", "mesh_allreduce", "hccl_formula", "slot"]

