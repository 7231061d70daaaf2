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
    counts = [np.bincount(s, minlength=size) if len(s) else None for s, _d, _g in parts]
    ptr = np.zeros(size + 1, dtype=i64)
    total = np.zeros(size, dtype=i64)
    for c in counts:
        if c is not None:
            total += c
    np.cumsum(total, out=ptr[1:])
    del total
    succ = np.empty(int(ptr[-1]), dtype=i64)
    fill = ptr[:-1].copy()
    for (s, d, grouped), c in zip(parts, counts):
        if c is None:
            continue
        if int(c.max()) <= 1:
            succ[fill[s]] = d
            fill[s] += 1
        else:
            if not grouped:
                o = np.argsort(s, kind="stable")
                s, d = s[o], d[o]
            starts = np.flatnonzero(np.append(True, s[1:] != s[:-1]))
            rank = np.arange(len(s), dtype=i64) - np.repeat(starts, np.diff(np.append(starts, len(s))))
            succ[fill[s] + rank] = d
            fill += c
    return ptr, succ


def indegrees(size: int, parts) -> np.ndarray:
    """Per node, how many edges of ``parts`` end there."""
    out = np.zeros(size, dtype=np.int64)
    for _s, d, _g in parts:
        if len(d):
            out += np.bincount(d, minlength=size)
    return out


__all__ = ["successors", "indegrees"]
