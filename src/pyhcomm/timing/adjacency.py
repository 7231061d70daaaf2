"""Successor lists of a dependency graph given as edge arrays, for the replay's level walk.

``successors(size, parts)`` groups edges by their source without sorting them all: ``parts`` is a
list of ``(src, dst, grouped)``, ``src`` and ``dst`` numpy int64 arrays (nodes ``0 .. size - 1``),
``grouped`` true when equal sources are next to each other in ``src``; the result ``(ptr, succ)``
lists node ``v``'s successors as ``succ[ptr[v]:ptr[v + 1]]``, each edge once, in the order of
``parts`` (and within a part, in the part's order). ``indegrees(size, parts)`` counts each
node's incoming edges.

A part whose sources are all distinct (a node's successor on its program, on its stream, its own
execution ...: most edges) is placed by one scatter, a grouped one by one scatter too; only a part
with repeated sources not grouped is sorted, by itself.
"""
from __future__ import annotations

import numpy as np


def successors(size: int, parts) -> tuple:
    """``(ptr, succ)``: the successors of each node, grouped by node (see the module docstring)."""
    i64 = np.int64
    srcs = [s for s, _d, _g in parts if len(s)]
    ptr = np.zeros(size + 1, dtype=i64)
    if srcs:
        np.cumsum(np.bincount(np.concatenate(srcs), minlength=size), out=ptr[1:])
    del srcs
    succ = np.empty(int(ptr[-1]), dtype=i64)
    fill = ptr[:-1].copy()
    last = np.empty(size, dtype=i64)            # scratch: per source, the last position naming it
    for s, d, grouped in parts:
        if not len(s):
            continue
        where = np.arange(len(s), dtype=i64)
        last[s] = where
        if (last[s] == where).all():            # distinct sources
            succ[fill[s]] = d
            fill[s] += 1
            continue
        if not grouped:
            o = np.argsort(s, kind="stable")
            s, d = s[o], d[o]
        starts = np.flatnonzero(np.append(True, s[1:] != s[:-1]))
        runs = np.diff(np.append(starts, len(s)))
        succ[fill[s] + (where - np.repeat(starts, runs))] = d
        fill[s[starts]] += runs
    return ptr, succ


def indegrees(size: int, parts) -> np.ndarray:
    """Per node, how many edges of ``parts`` end there."""
    dsts = [d for _s, d, _g in parts if len(d)]
    if not dsts:
        return np.zeros(size, dtype=np.int64)
    return np.bincount(np.concatenate(dsts), minlength=size).astype(np.int64, copy=False)


__all__ = ["successors", "indegrees"]
