"""Alpha-beta closed forms of pyhcomm's ring and mesh collectives, from the cost model's parameters.

HCCL evaluates its algorithms with the Hockney alpha-beta model (hicann/hccl,
docs/en/user_guide/coll_algo_intro: ``D = alpha + n * beta + n * gamma`` per step; ring AllGather
``(p-1)(alpha + n/p * beta)``, mesh AllGather ``alpha + n/p * beta`` ...). The forms here are the
same shape, written for the algorithms in :mod:`pyhcomm.collectives` with the parameters of a
:class:`~pyhcomm.timing.costs.CostModel`, so that the discrete-event replay can be checked against
them (tests/test_timing_validation.py): one ring step, for instance, is

    record ACK | wait ACK (its record crosses the link) | Write s bytes | record DATA |
    wait DATA | LocalCopy (or LocalReduce) s bytes

``alpha`` = the dispatch, notify and link latency terms of a step, ``beta`` = ``1 / link
bandwidth``, the copy or reduce term = ``1 / device memory bandwidth``. Where the replay adds
something no closed form has (the last steps of a pipeline, staggered starts), the forms are
bounds of the same size: the tests hold the replay to 5 %.

Every function returns seconds for one call of ``nbytes`` per rank (AllGather: the input of one
rank; ReduceScatter: the output of one rank; AllReduce: the buffer) on ``nranks`` ranks whose
every pair of neighbours (ring) or peers (mesh) uses ``link`` (a :class:`Link`) with ``sharing``
``"pair"`` (a dedicated link per pair) or ``"port"`` (one port per rank shared by its transfers).
"""
from __future__ import annotations

import numpy as np

from ..collectives.all_reduce import slices
from ..collectives.patterns import mesh_groups

#: The HCCL buffer (2 x HCCL_BUFFSIZE MB, 200 MB by default) as the collectives cut it.
DEFAULT_CCL = 2 * 200 * (1 << 20)
SLOT_CAP = 256 << 20
MIN_SLOT = 128
MAX_THREADS = 64          # the main thread and at most 63 slaves


def slot(ccl: int, parts: int) -> int:
    """Bytes per slot when the HCCL buffer is cut into ``parts`` slots (collectives.context.slot_bytes)."""
    return min(SLOT_CAP, ccl // parts // MIN_SLOT * MIN_SLOT)


def _loops(nbytes: int, per: int) -> list:
    """The sizes of the loops that move ``nbytes`` in pieces of at most ``per`` bytes."""
    if nbytes <= 0:
        return [0]
    full, rest = divmod(nbytes, per)
    return [per] * full + ([rest] if rest else [])


def _ring_step(m, link, s: int, local: float) -> float:
    """One ring step (see the module docstring); ``local`` is the copy or reduce after it."""
    d, nr, nw, lat = m.task_dispatch, m.notify_record, m.notify_wait, link.latency
    handshake = (d + nr) + max(d, lat) + nw
    return 2 * handshake + (d + s / link.bandwidth + lat) + (d + local)


def _orchestration(m, device_mode: bool, entries: int, dev: float, last: float) -> float:
    """A whole call from the device path ``dev`` and the program that issues its ``entries``
    (``last``: the duration of the last task): host orchestration (Atlas A2) runs the device path
    and the host's issue of every entry side by side; AI CPU orchestration (A3, 350) launches a
    kernel that submits the whole batch first."""
    if not device_mode:
        return max(dev, (entries - 1) * m.host_submit + last)
    # user stream: record (host), KernelLaunch, ...; the kernel: wait sync, algorithm, record
    launch = m.host_submit + m.kernel_launch
    batch = (entries + 2) * m.batch_submit + m.batch_fixed
    head = m.task_dispatch + m.notify_wait                  # the kernel's wait for the host's sync
    tail = m.task_dispatch + m.notify_record + m.notify_latency + m.notify_wait
    return launch + batch + head + dev + tail


# -- ring ------------------------------------------------------------------------------------------
def ring_allgather(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL) -> float:
    """``allgather_ring``: per loop a staging copy, ``p - 1`` steps (write ``s``, copy ``s`` out),
    the rank's own copy: ``2 (d + s/Bc) + (p-1) [2 (d + nr + max(d, L) + nw) + d + s/B + L + d + s/Bc]``."""
    p = nranks
    copy = m.copy_bandwidth
    dev, entries, last = 0.0, 0, 0.0
    for s in _loops(nbytes, slot(ccl, p)):
        c = m.task_dispatch + s / copy
        dev += 2 * c + (p - 1) * _ring_step(m, link, s, s / copy)
        entries += 2 + 6 * (p - 1)
        last = c
    return _orchestration(m, device_mode, entries, dev, last)


def ring_reduce_scatter(m, nranks: int, nbytes: int, link, device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """``reduce_scatter_ring``: per loop a staging copy, ``p - 1`` steps (write ``s``, reduce ``s``),
    the copy to the output: ``2 (d + s/Bc) + (p-1) [... + s/B + L + d + s/Br]``."""
    p = nranks
    dev, entries, last = 0.0, 0, 0.0
    for s in _loops(nbytes, slot(ccl, 2)):
        c = m.task_dispatch + s / m.copy_bandwidth
        dev += 2 * c + (p - 1) * _ring_step(m, link, s, s / m.reduce_bandwidth)
        entries += 2 + 6 * (p - 1)
        last = c
    return _orchestration(m, device_mode, entries, dev, last)


def ring_allreduce(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL,
                   elem: int = 4) -> float:
    """``all_reduce_ring``: the ring ReduceScatter of slices of ``nbytes / p`` then the ring
    AllGather of the reduced slices, on one thread (one program: the two device paths add up).
    When some slice is empty (fewer elements than ranks) the ranks no longer do the same tasks:
    :func:`ring_allreduce_ranks` then."""
    p = nranks
    if 0 < nbytes // elem < p:
        return ring_allreduce_ranks(m, nranks, nbytes, link, device_mode, ccl, elem)
    per = (nbytes // elem + p - 1) // p * elem          # the largest slice
    copy = m.copy_bandwidth
    dev, entries, last = 0.0, 0, 0.0
    for s in _loops(per, slot(ccl, 2)):
        dev += 2 * (m.task_dispatch + s / copy) + (p - 1) * _ring_step(m, link, s, s / m.reduce_bandwidth)
        entries += 2 + 6 * (p - 1)
    for s in _loops(per, slot(ccl, p)):
        c = m.task_dispatch + s / copy
        dev += c + (p - 1) * _ring_step(m, link, s, s / copy)     # in place: no own copy at the end
        entries += 1 + 6 * (p - 1)
        last = c
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

    def step(self, out, back, local_bw) -> None:
        """One ring step: ``out`` bytes written right, ``back`` bytes copied or reduced after."""
        lat = self.link.latency
        acked = self.record()
        self.wait(np.roll(acked, -1) + lat)         # the right neighbour's ACK
        self.task(out > 0, out / self.link.bandwidth + lat)
        landed = self.record()
        self.wait(np.roll(landed, 1) + lat)         # the left neighbour's DATA
        self.task(back > 0, back / local_bw)


def ring_allreduce_ranks(m, nranks: int, nbytes: int, link, device_mode: bool = False, ccl: int = DEFAULT_CCL,
                         elem: int = 4) -> float:
    """``all_reduce_ring`` rank by rank (:class:`_Ranks`), for slices of unequal task lists: a
    rank writes, reduces and copies only non-empty pieces but does every handshake, so its
    neighbours' records come earlier or later than its own; AI CPU orchestration submits each
    rank's own number of tasks. When every slice has its elements: under AI CPU orchestration
    the value of :func:`ring_allreduce`'s form; under host orchestration at least that form
    (which takes the longer of the device path and the host's issue, this has both at once)."""
    p = nranks
    counts = np.array(slices(nbytes // elem, p)[0], dtype=np.int64)
    r = np.arange(p)
    copy, red = m.copy_bandwidth, m.reduce_bandwidth

    def schedule(ranks) -> None:
        elems = slot(ccl, 2) // elem
        for done in range(0, int(counts.max()), elems):
            piece = np.clip(counts - done, 0, elems) * elem
            ranks.task(piece[(r - 1) % p] > 0, piece[(r - 1) % p] / copy)
            for s in range(p - 1):
                ranks.step(piece[(r - s - 1) % p], piece[(r - s - 2) % p], red)
            ranks.task(piece > 0, piece / copy)
        per = slot(ccl, p)
        sizes = counts * elem
        for done in range(0, int(sizes.max()), per):
            piece = np.clip(sizes - done, 0, per)
            ranks.task(piece > 0, piece / copy)
            for s in range(p - 1):
                ranks.step(piece[(r - s) % p], piece[(r - s - 1) % p], copy)

    if not device_mode:
        ranks = _Ranks(m, link, np.zeros(p), False)
        schedule(ranks)
        return float(ranks.free.max())
    tally = _Ranks(m, link, np.zeros(p), True)
    schedule(tally)                                 # how many tasks each rank's kernel submits
    launch = m.host_submit + m.kernel_launch
    head = m.task_dispatch + m.notify_wait
    tail = m.task_dispatch + m.notify_record + m.notify_latency + m.notify_wait
    ranks = _Ranks(m, link, launch + (tally.issued + 2) * m.batch_submit + m.batch_fixed + head, True)
    schedule(ranks)
    return float((ranks.free + tail).max())


# -- mesh ------------------------------------------------------------------------------------------
class _Mesh:
    """The mesh collectives of every rank at once, as a max-plus recurrence over their tasks.

    Each rank serves its ``p - 1`` peers in groups of at most ``width`` threads (the rounds of a
    round-robin schedule, :func:`pyhcomm.collectives.patterns.mesh_groups`; the ReduceScatter
    orders each group from ``rank + 1`` on):
    per group the main thread releases the slaves it uses (a record each, the slave waits), every
    thread runs one exchange (record the peer's ACK, wait its own ACK, write ``s`` bytes, record the
    peer's DATA, wait its own DATA; the ReduceScatter stages ``s`` bytes first), and the main
    thread waits for each slave. A task starts once its stream is free and (``gap``, host
    orchestration) its program issued it, ``dispatch`` later runs its body, after the record it
    waits for arrived (``notify_latency`` on the device, the link's latency across it).

    An exchange pairs two ranks in the same group on both sides, but a rank's group still waits for
    its peers to reach theirs (ranks leave the previous group at different times). The recurrence
    is solved unit by unit (a unit: one rank's group) in sweeps until no time changes; the units
    form a DAG (the cut is deadlock-free), so the sweeps end. Concurrent copies of a unit share the device's memory; with ``sharing == "port"`` the
    writes of a unit share the rank's port (:func:`shared_finish`).
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

    def groups(self, width: int, s: int, main_too: bool, stage: float, rotated: bool = False) -> None:
        """One mesh pass: every rank exchanges ``s`` bytes with each peer (see the class)."""
        p = self.p
        cuts = [mesh_groups(r, p, [q for q in range(p) if q != r], width,
                            (lambda q, r=r: (q - r) % p) if rotated else None) for r in range(p)]
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
        else:   # a cycle would mean a deadlocking cut: mesh_groups promises there is none
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
            threads = shared_finish(starts, [stage] * n)
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


def _mesh_ag(h, nbytes, ccl):
    m, p = h.m, h.p
    for s in _loops(nbytes, slot(ccl, p)):
        h.local(s / m.copy_bandwidth)
        h.groups(min(MAX_THREADS, p - 1), s, True, 0.0)
        h.local(s / m.copy_bandwidth, p)


def _mesh_rs(h, nbytes, ccl):
    m, p = h.m, h.p
    for s in _loops(nbytes, slot(ccl, 2 * p)):
        h.local(s / m.copy_bandwidth)
        h.groups(min(MAX_THREADS - 1, p - 1), s, False, s / m.copy_bandwidth, rotated=True)
        h.local(s / m.reduce_bandwidth, p - 1)


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


def _mesh(m, nranks, link, sharing, device_mode, run) -> float:
    h = _Mesh(m, link, sharing, nranks, None if device_mode else m.host_submit)
    run(h)
    end = max(h.main)
    return _orchestration(m, True, h.k, end, 0.0) if device_mode else end


def mesh_allgather(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL) -> float:
    """``allgather_mesh``: per loop stage ``s``, then per group of at most 64 peers: the main
    thread releases the slaves (one record each), every thread runs one exchange at once, the main
    thread waits for each slave; then ``p`` copies out. One group (up to 65 ranks):
    ``(d + s/Bc) + [k (d + nr) + exchange(s) + k (d + nw)] + p (d + s/Bc)``, ``exchange(s)`` the
    two handshakes and ``s/B`` (``k s/B`` with the writes sharing the rank's port, A3 / 350). On
    Atlas A2 the host issues every entry, each task starting no earlier than its issue; on A3 /
    350 the AI CPU kernel submits the batch first. Past 65 ranks: groups of the same form, one
    after another (:class:`_Mesh`)."""
    return _mesh(m, nranks, link, sharing, device_mode, lambda h: _mesh_ag(h, nbytes, ccl))


def mesh_reduce_scatter(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """``reduce_scatter_mesh``: per loop the main thread copies its own slice, then per group of at
    most 63 peers the slaves stage ``s`` each (the copies share the device's memory bandwidth) and
    run one exchange; then the main thread reduces ``p - 1`` slices:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + d + k_g s/Bc + exchange(s) + k_g (d + nw)] + (p-1)(d + s/Br)``
    for aligned groups (:class:`_Mesh` for the general case and host orchestration)."""
    return _mesh(m, nranks, link, sharing, device_mode, lambda h: _mesh_rs(h, nbytes, ccl))


def mesh_allreduce(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL, elem: int = 4) -> float:
    """The mesh ReduceScatter of ``nbytes / p`` per rank followed, in the same call, by the mesh
    AllGather of the result: HCCL's mesh AllReduce, ``2 alpha + 2/p n beta + (p-1)/p n gamma``."""
    per = (nbytes // elem + nranks - 1) // nranks * elem

    def run(h):
        _mesh_rs(h, per, ccl)
        _mesh_ag(h, per, ccl)
    return _mesh(m, nranks, link, sharing, device_mode, run)


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


__all__ = ["ring_allgather", "ring_reduce_scatter", "ring_allreduce", "ring_allreduce_ranks", "mesh_allgather",
           "mesh_reduce_scatter", "mesh_allreduce", "hccl_formula", "slot"]
