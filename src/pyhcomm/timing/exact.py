"""The replay's exact path: times from the discrete-event engine, where flows share bandwidth.

:func:`exact_times` turns an :class:`~.entry_costs.EntryCosts` into an engine
:class:`~.engine.Plan` (a node per entry; the graph's edges, program order and batches as timed
edges; each flow's resources and their capacities) and reads the times back. The walk
(:mod:`.walk`) gives the same times, bit for bit, where no two flows overlap.
"""
from __future__ import annotations

from math import inf

import numpy as np

from ..analysis.graph import CODE, CODE_MASK, KERNEL_END, LAUNCH, NOTIFY, PROGRAM, SHIFT
from .engine import END_TO_DEP, END_TO_ISSUE, END_TO_START, ISSUE_TO_ISSUE, ISSUE_TO_START, START_TO_ISSUE, Plan
from .walk import unknown

_KERNEL_END, _NOTIFY, _PROGRAM, _LAUNCH = CODE[KERNEL_END], CODE[NOTIFY], CODE[PROGRAM], CODE[LAUNCH]


def exact_times(costs) -> tuple:
    """``(issue, start, end)`` arrays of seconds (nan: unknown) from the engine."""
    m = costs.m
    plan = Plan()
    routes = costs.routes
    plan.add_nodes(costs.dispatch(), costs.body, costs.nbytes,
                   [routes[r] if r >= 0 else None for r in costs.route.tolist()])
    for key in {k for rs in routes for k in rs}:
        plan.capacity[key] = costs.capacity(key)
    _graph_edges(plan, costs)
    after = np.flatnonzero(costs.prev >= 0)
    p = costs.prev[after]
    plan.add_edges(p, after, np.full(len(after), ISSUE_TO_ISSUE, dtype=np.int8), costs.submit[p])
    in_batch = np.flatnonzero(costs.batch_last >= 0)
    plan.add_edges(costs.batch_last[in_batch], in_batch, np.full(len(in_batch), ISSUE_TO_START, dtype=np.int8),
                   np.full(len(in_batch), m.batch_submit + m.batch_fixed))
    del after, p, in_batch
    plan.run()
    issue, start, end = np.array(plan.issue), np.array(plan.start), np.array(plan.end)
    never = ~costs.executed
    start[never] = float("nan")
    end[(end == inf) | never] = float("nan")
    unknown(costs, issue)
    return issue, start, end


def _graph_edges(plan, costs) -> None:
    """The graph's edges, by destination in its order: stream order into the start, program
    order into the issue (a kernel's program starts its launch latency after its launch started),
    signals into the end (a notify plus its record's signal latency)."""
    ptr, codes = costs.graph.pred_csr()
    dst = np.repeat(np.arange(costs.n, dtype=np.int64), np.diff(ptr))
    kind, src = codes & CODE_MASK, codes >> SHIFT
    ek = np.full(len(codes), END_TO_DEP, dtype=np.int8)      # kinds past launch: a signal
    lat = np.zeros(len(codes))
    ek[kind <= _KERNEL_END] = END_TO_START
    sig = kind == _NOTIFY
    lat[sig] = costs.siglat[src[sig]]
    order = (kind >= _PROGRAM) & (kind <= _LAUNCH)
    by_launch = order & costs.is_launch[src]
    ek[order] = END_TO_ISSUE
    ek[by_launch] = START_TO_ISSUE
    lat[by_launch] = costs.launch_latency[src[by_launch]]
    del kind, sig, order, by_launch
    plan.add_edges(src, dst, ek, lat)


__all__ = ["exact_times"]
