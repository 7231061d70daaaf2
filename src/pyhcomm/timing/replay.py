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

The parts: :mod:`.entry_costs` (what each entry costs: its kind's cost class, its flow and route),
:mod:`.transfers` (the transfers' bytes, protocols, remote devices), :mod:`.walk` (the level
walk), :mod:`.exact` (the engine), :mod:`.calls` (the collective calls' times).

Data-less runs replay the same way: only sizes and ranges are read. Entries that never ran (a wait
that timed out, tasks behind a failure) get no start or end (``nan``), and no issue when nothing
after them in their program ran either.
"""
from __future__ import annotations

import gc

import numpy as np

from ..analysis.graph import CODE, CODE_MASK, NOTIFY, SHIFT
from .calls import call_times
from .costs import cost_model
from .engine import _arr
from .entry_costs import EntryCosts
from .exact import exact_times
from .timeline import Arrow, Timeline
from .walk import walk


def replay(source, model=None, graph=None, exact: bool = False) -> Timeline:
    """The :class:`Timeline` of ``source`` (a Sim or its record) under ``model`` (default: the
    cost model of the Sim's product and engines, or of the current Sim's for a bare record). ``graph``: the
    happens-before graph of the same record, when one is at hand. ``exact``: always replay with
    the discrete-event engine (the result is the same when no two flows overlap).

    Raises ``ValueError`` when the record lost entries (``Record.whole()`` is false): a replay of
    part of a program would give wrong times."""
    from ..analysis import happens_before
    record = getattr(source, "record", source)
    if model is None:
        model = cost_model(sim=source if getattr(source, "runtime", None) is not None else None)
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
        return _timeline(EntryCosts(model, graph, record), exact)
    finally:
        if paused:
            gc.enable()


def _timeline(costs: EntryCosts, exact: bool) -> Timeline:
    """The timeline of ``costs``; it keeps what it needs (times, the graph for events and arrows),
    not the per-entry cost arrays (a few hundred MB at 1024 ranks)."""
    times = None if exact else walk(costs)
    if times is None:
        times = exact_times(costs)
    issue, start, end = (_arr("d", t) for t in times)
    graph, n = costs.graph, costs.n

    def events():
        return [graph.event(s) for s in graph.seqs]

    def arrows():
        ptr, codes = graph.pred_csr()
        dst = np.repeat(np.arange(n), np.diff(ptr))
        sel = (codes & CODE_MASK) == CODE[NOTIFY]
        return [Arrow(s, d, "notify") for s, d in zip((codes[sel] >> SHIFT).tolist(), dst[sel].tolist())]

    tl = Timeline(events, issue, start, end, arrows, model=costs.m, destinations=_remote_ends(graph, costs.dest),
                  sources=_remote_ends(graph, costs.origin))
    tl.calls = call_times(graph, costs.is_launch, times[0], times[2], costs.positions)
    return tl


def _remote_ends(graph, parts):
    """A function making ``index -> (rank, device)`` of the other end of each transfer of
    ``parts`` (``(entry indices, remote devices)`` arrays)."""
    def build():
        rank_of: dict = {}
        for e in graph.entries:
            if e.rank is not None and e.device is not None:
                rank_of.setdefault(e.device, e.rank)
        out: dict = {}
        for at, devices in parts:
            out.update((i, (rank_of.get(dev), dev)) for i, dev in zip(at.tolist(), devices.tolist()))
        return out
    return build


__all__ = ["replay"]
