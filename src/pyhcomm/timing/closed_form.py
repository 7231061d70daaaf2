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
    AllGather of the reduced slices, on one thread (one program: the two device paths add up)."""
    p = nranks
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


# -- mesh ------------------------------------------------------------------------------------------
def _groups(peers: int, threads: int) -> list:
    return [min(threads, peers - g) for g in range(0, peers, threads)]


class _HostMesh:
    """A mesh collective as a max-plus recurrence over its tasks: the program issues entry ``k``
    at ``k * gap`` (``host_submit`` for a host program, Atlas A2; 0 once an AI CPU batch is
    submitted, A3 / 350); a task starts at ``max(its issue, its stream free)`` and ends
    ``dispatch`` plus its body later, or after what it waits for. Both ends of an exchange are
    taken symmetric (every rank runs the same program). Copies of one group share the device's
    memory, and with ``sharing == "port"`` its writes share the rank's port, as flows do
    (:func:`shared_finish`)."""

    def __init__(self, m, link, sharing: str = "pair", gap: float | None = None):
        self.m, self.link, self.sharing = m, link, sharing
        self.gap = m.host_submit if gap is None else gap
        self.k = 0

    def task(self, free: float, body: float, dep: float = 0.0) -> float:
        start = max(free, self.k * self.gap)
        self.k += 1
        return max(start + self.m.task_dispatch, dep) + body

    def exchanges(self, frees, s: int) -> list:
        """The exchanges of a group, started on threads free at ``frees``; returns their ends.
        The host issues each thread's 5 entries in turn; the writes of a group overlap in time."""
        m, lat, gap, d = self.m, self.link.latency, self.gap, self.m.task_dispatch
        k0 = self.k
        ready = []
        for j, free in enumerate(frees):
            k = k0 + 5 * j
            r1 = max(max(free, k * gap) + d, 0.0) + m.notify_record
            w1 = max(max(r1, (k + 1) * gap) + d, r1 + lat) + m.notify_wait
            ready.append((w1, k))
        self.k = k0 + 5 * len(frees)
        starts = [max(w1, (k + 2) * gap) + d for w1, k in ready]
        done = _writes_done(starts, s, self.link, self.sharing)
        ends = []
        for (w1, k), wr in zip(ready, done):
            wr += lat
            r2 = max(max(wr, (k + 3) * gap) + d, 0.0) + m.notify_record
            ends.append(max(max(r2, (k + 4) * gap) + d, r2 + lat) + m.notify_wait)
        return ends

    def group(self, main: float, g: int, s: int, main_too: bool, stage: float) -> float:
        """One group of ``g`` exchanges: fan-out, (stage copies of ``stage`` seconds alone, sharing
        the device's memory when they overlap) and exchanges, fan-in."""
        m = self.m
        slaves = g - 1 if main_too else g
        free = []
        for _ in range(slaves):
            main = self.task(main, m.notify_record)
            free.append(self.task(0.0, m.notify_wait, main + m.notify_latency))
        if stage:
            # the program issues slave j's copy, then its 5 exchange entries: copy j is entry k + 6 j
            gap, d = self.gap, m.task_dispatch
            starts = [max(f, (self.k + 6 * j) * gap) + d for j, f in enumerate(free)]
            free = shared_finish(starts, [stage] * len(starts))
            self.k += len(free)
        ends = self.exchanges(([main] if main_too else []) + free, s)
        if main_too:
            main = ends.pop(0)
        for e in ends:
            rec = self.task(e, m.notify_record)
            main = self.task(main, m.notify_wait, rec + m.notify_latency)
        return main


class _DeviceMesh:
    """A mesh collective inside an AI CPU batch (A3, Atlas 350): every task is on its stream from
    the start, so what orders the exchanges is the fan-out (the main thread releases slave ``t``
    after ``t`` records) and the handshakes, where each end of an exchange waits for the other's
    record: rank ``r`` serves peer ``q`` on the thread at ``q``'s position in its group, rank ``q``
    serves ``r`` at ``r``'s, and the later of the two sets the pace. Per rank: the release of each
    thread, the handshake with each peer, the writes (sharing the rank's port: processor sharing
    of their bytes), the fan-in; the collective ends with the last rank."""

    def __init__(self, m, link, sharing: str, nranks: int):
        self.m, self.link, self.sharing, self.p = m, link, sharing, nranks
        self.main = [0.0] * nranks
        self.k = 0                      # entries issued per rank (the batch size)

    def _task(self, free, body, dep=0.0):
        return max(free + self.m.task_dispatch, dep) + body

    def local(self, body: float, times: int = 1) -> None:
        """``times`` tasks of ``body`` seconds on every rank's main thread."""
        for _ in range(times):
            self.main = [self._task(t, body) for t in self.main]
        self.k += times

    def groups(self, width: int, s: int, main_too: bool, stage: float) -> None:
        p, m, lat = self.p, self.m, self.link.latency
        peers = {r: [q for q in range(p) if q != r] for r in range(p)}
        cuts = {r: [peers[r][i:i + width] for i in range(0, p - 1, width)] for r in range(p)}
        for gi in range(len(cuts[0])):
            pos = {r: {q: t for t, q in enumerate(cuts[r][gi])} for r in range(p)}
            free, r1 = {}, {}
            for r in range(p):
                group = cuts[r][gi]
                slaves = len(group) - (1 if main_too else 0)
                main = self.main[r]
                rel = []
                for _ in range(slaves):
                    main = self._task(main, m.notify_record)
                    rel.append(self._task(0.0, m.notify_wait, main + m.notify_latency))
                if stage and rel:
                    rel = shared_finish([t + m.task_dispatch for t in rel], [stage] * len(rel))
                threads = ([main] if main_too else []) + rel
                self.main[r] = main
                free[r] = threads
                r1[r] = [self._task(t, m.notify_record) for t in threads]
            w2_start = {}
            for r in range(p):
                group = cuts[r][gi]
                starts = []
                for t, q in enumerate(group):
                    back = pos[q].get(r, t)
                    w1 = max(r1[r][t] + m.task_dispatch, r1[q][back] + lat) + m.notify_wait
                    starts.append(w1 + m.task_dispatch)
                done = _writes_done(starts, s, self.link, self.sharing)
                w2_start[r] = [self._task(t + lat - m.task_dispatch, m.notify_record) for t in done]
            for r in range(p):
                group = cuts[r][gi]
                ends = []
                for t, q in enumerate(group):
                    back = pos[q].get(r, t)
                    rec = w2_start[r][t]
                    ends.append(max(rec + m.task_dispatch, w2_start[q][back] + lat) + m.notify_wait)
                main = self.main[r]
                if main_too:
                    main = ends.pop(0)
                for e in ends:
                    rec = self._task(e, m.notify_record)
                    main = self._task(main, m.notify_wait, rec + m.notify_latency)
                self.main[r] = main
            g = len(cuts[0][gi])
            slaves = g - (1 if main_too else 0)
            self.k += 4 * slaves + 5 * g + (slaves if stage else 0)

    @property
    def end(self) -> float:
        return max(self.main)


def _mesh_ag_device(h, nbytes, ccl):
    m, p = h.m, h.p
    for s in _loops(nbytes, slot(ccl, p)):
        h.local(s / m.copy_bandwidth)
        h.groups(min(MAX_THREADS, p - 1), s, True, 0.0)
        h.local(s / m.copy_bandwidth, p)


def _mesh_rs_device(h, nbytes, ccl):
    m, p = h.m, h.p
    for s in _loops(nbytes, slot(ccl, 2 * p)):
        h.local(s / m.copy_bandwidth)
        h.groups(min(MAX_THREADS - 1, p - 1), s, False, s / m.copy_bandwidth)
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
    order = sorted(range(len(starts)), key=lambda j: starts[j])
    left = {}
    done = [0.0] * len(starts)
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


def _mesh_ag_host(h, m, p, nbytes, ccl, t=0.0) -> float:
    copy = m.copy_bandwidth
    for s in _loops(nbytes, slot(ccl, p)):
        t = h.task(t, s / copy)
        for g in _groups(p - 1, min(MAX_THREADS, p - 1)):
            t = h.group(t, g, s, True, 0.0)
        for _ in range(p):
            t = h.task(t, s / copy)
    return t


def _mesh_rs_host(h, m, p, nbytes, ccl, t=0.0) -> float:
    for s in _loops(nbytes, slot(ccl, 2 * p)):
        t = h.task(t, s / m.copy_bandwidth)
        for g in _groups(p - 1, min(MAX_THREADS - 1, p - 1)):
            t = h.group(t, g, s, False, s / m.copy_bandwidth)
        for _ in range(p - 1):
            t = h.task(t, s / m.reduce_bandwidth)
    return t


def mesh_allgather(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL) -> float:
    """``allgather_mesh``: per loop stage ``s``, then per group of at most 64 peers: the main
    thread releases the slaves (one record each), every thread runs one exchange at once, the main
    thread waits for each slave; then ``p`` copies out:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + exchange(s) + k_g (d + nw)] + p (d + s/Bc)`` on the
    device (A3, 350: every write of a group shares the rank's port); on Atlas A2 the host issues
    every entry, and the form is the same chain with each task starting no earlier than its issue
    (:class:`_HostMesh`)."""
    if not device_mode:
        return _mesh_ag_host(_HostMesh(m, link, sharing), m, nranks, nbytes, ccl)
    h = _DeviceMesh(m, link, sharing, nranks)
    _mesh_ag_device(h, nbytes, ccl)
    return _orchestration(m, True, h.k, h.end, 0.0)


def mesh_reduce_scatter(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """``reduce_scatter_mesh``: per loop the main thread copies its own slice, then per group of at
    most 63 peers the slaves stage ``s`` each (the copies share the device's memory bandwidth) and
    run one exchange; then the main thread reduces ``p - 1`` slices:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + d + k_g s/Bc + exchange(s) + k_g (d + nw)] + (p-1)(d + s/Br)``
    on the device; on Atlas A2 the same chain with host issue times (:class:`_HostMesh`)."""
    if not device_mode:
        return _mesh_rs_host(_HostMesh(m, link, sharing), m, nranks, nbytes, ccl)
    h = _DeviceMesh(m, link, sharing, nranks)
    _mesh_rs_device(h, nbytes, ccl)
    return _orchestration(m, True, h.k, h.end, 0.0)


def mesh_allreduce(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL, elem: int = 4) -> float:
    """The mesh ReduceScatter of ``nbytes / p`` per rank followed, in the same call, by the mesh
    AllGather of the result: HCCL's mesh AllReduce, ``2 alpha + 2/p n beta + (p-1)/p n gamma``."""
    per = (nbytes // elem + nranks - 1) // nranks * elem
    if not device_mode:
        h = _HostMesh(m, link, sharing)
        return _mesh_ag_host(h, m, nranks, per, ccl, _mesh_rs_host(h, m, nranks, per, ccl))
    h = _DeviceMesh(m, link, sharing, nranks)
    _mesh_rs_device(h, per, ccl)
    _mesh_ag_device(h, per, ccl)
    return _orchestration(m, True, h.k, h.end, 0.0)


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


__all__ = ["ring_allgather", "ring_reduce_scatter", "ring_allreduce", "mesh_allgather", "mesh_reduce_scatter",
           "mesh_allreduce", "hccl_formula", "slot"]
