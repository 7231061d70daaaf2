"""The modeled time of each collective call of a replayed record (:class:`~.timeline.CallTime`).

The ``Collective`` host effects (role ``MARKER``, :mod:`pyhcomm.sim.kinds`) mark the calls: a call's
entries are the entries its program issued outside kernels from the call's first seq up to the
marker (a kernel launch among them too, which has no rank), and everything the kernels launched
among them issued. The n-th call of one name on every rank is one call; its algorithm, collective
(``op``) and data size (``nbytes``) are the ones its first marker names.
"""
from __future__ import annotations

from array import array
from math import inf

import numpy as np

from ..sim.kinds import Role
from .timeline import CallTime


def call_times(graph, is_launch, issue, end, positions=None) -> list:
    """A :class:`CallTime` per collective call of ``graph`` (see the module docstring), from the
    replay's ``issue`` and ``end`` times; ``is_launch``: per entry, whether it is a kernel launch;
    ``positions``: the graph's, when at hand."""
    cols = graph.columns
    is_mark = cols.mask(lambda k: k.role is Role.MARKER)
    marks = np.flatnonzero(is_mark)
    if not len(marks):
        return []
    seq, kernel, program = cols.seq, cols.kernel, cols.program
    plain = np.flatnonzero((kernel == 0) & ~is_mark & (program >= 0))
    o = np.argsort(program[plain], kind="stable")
    by_program = _groups(program[plain][o], plain[o])
    inside = np.flatnonzero(kernel != 0)
    o = np.argsort(kernel[inside], kind="stable")
    by_kernel = _groups(kernel[inside][o], inside[o])
    calls: dict = {}
    count: dict = {}
    facts: dict = {}
    for e in graph.objects(marks, positions):
        kind = e.kind
        name, first = kind.get(e, "name", e.api), kind.get(e, "first", e.seq)
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
        facts.setdefault((name, k), (kind.get(e, "algorithm"), kind.get(e, "op"), kind.get(e, "nbytes")))
        ranks.append(e.rank)
        parts.extend(got)
    return [c for c in (_call(name, ranks, parts, issue, end, len(graph), *facts[(name, k)])
                        for (name, k), (ranks, parts) in calls.items()) if c is not None]


def _call(name, ranks, parts, issue, end, n, algorithm, op, nbytes):
    begin, last = inf, -inf        # part by part (a kernel's entries each): no call-sized copies
    for part in parts:
        ends = end[part]
        ok = ends == ends
        if ok.any():
            begin = min(begin, float(issue[part][ok].min()))
            last = max(last, float(ends[ok].max()))
    if last == -inf:                # nothing of it ran
        return None
    entries = array("q")
    entries.frombytes(_union(parts, n).view(np.uint8))
    return CallTime(name, tuple(sorted(ranks)), begin, last, entries, algorithm, op, nbytes)


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


__all__ = ["call_times"]
