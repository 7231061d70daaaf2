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
        return max(m.host_submit + dev, entries * m.host_submit + last)
    # user stream: record (host), KernelLaunch, ...; the kernel: wait sync, algorithm, record
    launch = m.host_submit + m.task_dispatch + m.kernel_launch
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


def _exchange(m, link, s: int, concurrent: int, sharing: str) -> float:
    """One mesh exchange on its thread: record ACK, wait ACK, Write ``s`` (sharing the rank's port
    with ``concurrent`` other writes when ``sharing == "port"``), record DATA, wait DATA."""
    d, nr, nw, lat = m.task_dispatch, m.notify_record, m.notify_wait, link.latency
    share = concurrent if sharing == "port" else 1
    return 2 * ((d + nr) + max(d, lat) + nw) + d + s * share / link.bandwidth + lat


def mesh_allgather(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL) -> float:
    """``allgather_mesh``: per loop stage ``s``, then per group of at most 64 peers: the main
    thread releases the slaves (one record each), every thread runs one exchange at once, the main
    thread waits for each slave; then ``p`` copies out:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + exchange(s) + k_g (d + nw)] + p (d + s/Bc)``."""
    p = nranks
    d = m.task_dispatch
    copy = m.copy_bandwidth
    dev, entries, last = 0.0, 0, 0.0
    for s in _loops(nbytes, slot(ccl, p)):
        dev += d + s / copy
        entries += 1
        for g in _groups(p - 1, min(MAX_THREADS, p - 1)):
            slaves = g - 1
            dev += slaves * (d + m.notify_record) + _exchange(m, link, s, g, sharing) + slaves * (d + m.notify_wait)
            entries += 4 * slaves + 5 * g
        c = d + s / copy
        dev += p * c
        entries += p
        last = c
    return _orchestration(m, device_mode, entries, dev, last)


def mesh_reduce_scatter(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                        ccl: int = DEFAULT_CCL) -> float:
    """``reduce_scatter_mesh``: per loop the main thread copies its own slice, then per group of at
    most 63 peers the slaves stage ``s`` each (the copies share the device's memory bandwidth) and
    run one exchange; then the main thread reduces ``p - 1`` slices:
    ``(d + s/Bc) + sum_g [k_g (d + nr) + d + k_g s/Bc + exchange(s) + k_g (d + nw)] + (p-1)(d + s/Br)``."""
    p = nranks
    d = m.task_dispatch
    dev, entries, last = 0.0, 0, 0.0
    for s in _loops(nbytes, slot(ccl, 2 * p)):
        dev += d + s / m.copy_bandwidth
        entries += 1
        for g in _groups(p - 1, min(MAX_THREADS - 1, p - 1)):
            dev += (g * (d + m.notify_record) + d + g * s / m.copy_bandwidth + _exchange(m, link, s, g, sharing)
                    + g * (d + m.notify_wait))
            entries += 4 * g + 6 * g
        c = d + s / m.reduce_bandwidth
        dev += (p - 1) * c
        entries += p - 1
        last = c
    return _orchestration(m, device_mode, entries, dev, last)


def mesh_allreduce(m, nranks: int, nbytes: int, link, sharing: str = "pair", device_mode: bool = False,
                   ccl: int = DEFAULT_CCL, elem: int = 4) -> float:
    """The mesh ReduceScatter of ``nbytes / p`` per rank followed by the mesh AllGather of the
    result (two calls): HCCL's mesh AllReduce, ``2 alpha + 2/p n beta + (p-1)/p n gamma``."""
    per = (nbytes // elem + nranks - 1) // nranks * elem
    return (mesh_reduce_scatter(m, nranks, per, link, sharing, device_mode, ccl)
            + mesh_allgather(m, nranks, per, link, sharing, device_mode, ccl))


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
