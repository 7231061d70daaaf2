"""Successor lists of a dependency graph given as edge arrays, for the replay's level walk.

``successors(size, parts)`` groups edges by their source without sorting them all: ``parts`` is a
list of ``(src, dst, grouped)``, ``src`` and ``dst`` numpy integer arrays (nodes ``0 .. size - 1``),
``grouped`` true when equal sources are next to each other in ``src``; the result ``(ptr, succ)``
lists node ``v``'s successors as ``succ[ptr[v]:ptr[v + 1]]``, each edge once, in the order of
``parts`` (and within a part, in the part's order). ``indegrees(size, parts)`` counts each
node's incoming edges. Both give int32 arrays (half the memory: a 1024-rank replay has some 12
million nodes) unless a node or an edge count does not fit one, then int64. (The walk decrements
the in-degrees with ``np.subtract.at`` and a scalar of their own type, :func:`one`: with a Python
int numpy's ``ufunc.at`` takes a casting path 25 times as slow on int32.)

A part whose sources are all distinct (a node's successor on its program, on its stream, its own
execution ...: most edges) is placed by one scatter, a grouped one by one scatter too; only a part
with repeated sources not grouped is sorted, by itself.
"""
from __future__ import annotations

import numpy as np

_I32_MAX = np.iinfo(np.int32).max


def index_type(*sizes):
    """int32 when every one of ``sizes`` (a count of nodes or edges) fits one, else int64."""
    return np.int32 if max(sizes, default=0) < _I32_MAX else np.int64


def successors(size: int, parts) -> tuple:
    """``(ptr, succ)``: the successors of each node, grouped by node (see the module docstring)."""
    it = index_type(size, sum(len(s) for s, _d, _g in parts))
    ptr = np.zeros(size + 1, dtype=it)
    counts = ptr[1:]                            # per source (no int64 count), then summed in place
    _count(counts, (s for s, _d, _g in parts))
    np.cumsum(counts, out=counts)
    succ = np.empty(int(ptr[-1]), dtype=it)
    fill = ptr[:-1].copy()
    last = np.empty(size, dtype=it)             # scratch: per source, the last position naming it
    for s, d, grouped in parts:
        if not len(s):
            continue
        where = np.arange(len(s), dtype=it)
        last[s] = where
        if (last[s] == where).all():            # distinct sources
            succ[fill[s]] = d
            fill[s] += 1
            continue
        if not grouped:
            o = np.argsort(s, kind="stable")
            s, d = s[o], d[o]
        starts = np.flatnonzero(np.append(True, s[1:] != s[:-1])).astype(it)
        runs = np.diff(np.append(starts, it(len(s))))
        at = np.repeat(starts, runs)            # (in place and in ``it``: the walk's peak of memory)
        np.subtract(where, at, out=at)          # each edge's rank among its source's
        at += fill[s]
        succ[at] = d
        del at
        fill[s[starts]] += runs
    return ptr, succ


def one(a: np.ndarray):
    """1 as a scalar of ``a``'s type (the increment ``np.add.at`` / ``np.subtract.at`` need)."""
    return a.dtype.type(1)


def indegrees(size: int, parts) -> np.ndarray:
    """Per node, how many edges of ``parts`` end there (counted part by part: no concatenation
    of every edge)."""
    deg = np.zeros(size, dtype=index_type(size, sum(len(d) for _s, d, _g in parts)))
    _count(deg, (d for _s, d, _g in parts))
    return deg


def _count(out: np.ndarray, arrays) -> None:
    """Add to ``out[v]`` how often ``v`` occurs in ``arrays``, array by array (no concatenation of
    every edge; the increment of ``out``'s own type, see :func:`one`)."""
    inc = one(out)
    for a in arrays:
        if len(a):
            np.add.at(out, a, inc)


__all__ = ["successors", "indegrees", "index_type", "one"]
