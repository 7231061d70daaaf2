"""A discrete-event engine on a virtual clock: nodes, timed edges, and flows that share bandwidth.

The engine knows nothing about HCOMM: :mod:`.replay` builds a :class:`Plan` from a record's
happens-before graph and the cost model, and reads the times back. Each node ``i`` has three
points on the clock:

* ``issue[i]``: when its program (a host thread, an AI CPU kernel) issued it;
* ``start[i]``: when it started: ``max(issue, the edges into its start)`` (its stream reached it);
* ``end[i]``: ``max(start + dispatch, the edges into its dependencies) + body``, where ``body`` is
  fixed, or, for a *flow*, ``bytes`` moved through shared resources followed by ``latency``.

An edge says ``dst.<point> >= src.<point> + latency`` (:data:`ISSUE_TO_ISSUE` ...). Flows that
hold a resource at the same moment share its capacity equally (a flow's rate is the smallest of
``capacity / flows holding it`` over its resources), recomputed whenever a flow starts or ends
(processor sharing). Times propagate eagerly along edges; only flow starts and completions go
through the event heap, in time order, so two flows that overlap in virtual time contend
whatever order the record issued them in.

Contract: the edges must form a DAG over the points (a cycle leaves its nodes unresolved:
:meth:`Plan.run` returns their indices). Durations and latencies are >= 0.

Memory: a plan keeps flat arrays (``array``), not an object per node or edge: about 110 bytes a
node and 16 an edge while it runs (a 1024-rank mesh collective has tens of millions of both).
Nodes and edges are added one at a time (:meth:`Plan.add`, :meth:`Plan.edge`) or as numpy arrays
(:meth:`Plan.add_nodes`, :meth:`Plan.add_edges`); the result is the same.
"""
from __future__ import annotations

import heapq
from array import array
from math import inf

import numpy as np

#: Edge kinds: (source point, destination point).
ISSUE_TO_ISSUE = 0   # program order: the next entry is issued after this one (plus its submit cost)
END_TO_ISSUE = 1     # a blocking call: the program goes on after it returned
START_TO_ISSUE = 2   # a kernel launch: the kernel's program starts after its launch task started
END_TO_START = 3     # stream order: FIFO on one stream
END_TO_DEP = 4       # a signal: a notify record reaching its wait, a sync waiting for a stream ...
ISSUE_TO_DEP = 5     # the end of a blocking call waits for the program that issued it (kernel end)
ISSUE_TO_START = 6   # a batch: its tasks reach their streams when the batch ends
_SRC = (0, 2, 1, 2, 2, 0, 0)   # 0 issue, 1 start, 2 end
_DST = (0, 0, 0, 1, 2, 2, 1)   # 0 issue, 1 start, 2 dependencies


def _np(a, dtype):
    """The ``array`` ``a`` as a numpy array (its buffer, not a copy)."""
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def _bytes(values, dtype):
    """``values`` as ``dtype``, seen as bytes (no copy when they already are)."""
    return memoryview(np.ascontiguousarray(values, dtype=dtype)).cast("B")


def _arr(code: str, values: np.ndarray) -> array:
    """An ``array`` of ``code`` holding ``values`` (a numpy array of the matching item size)."""
    out = array(code)
    out.frombytes(_bytes(values, values.dtype))
    return out


class Plan:
    """Nodes, edges and resources; :meth:`run` computes every node's issue, start and end."""

    def __init__(self):
        self.dispatch = array("d")
        self.body = array("d")
        self.nbytes = array("q")    # flows: bytes; others: 0
        self.res: dict = {}         # flows: node -> tuple of resource keys
        self.capacity: dict = {}    # resource key -> bytes per second
        self._src, self._dst, self._kind, self._lat = array("q"), array("q"), array("b"), array("d")

    def __len__(self):
        return len(self.body)

    def add(self, dispatch: float = 0.0, body: float = 0.0, nbytes: int = 0, resources=None) -> int:
        """Add a node; returns its index. With ``resources`` (keys of :attr:`capacity`) and
        ``nbytes > 0`` it is a flow: ``body`` is then the latency after its bytes moved."""
        i = len(self.body)
        self.dispatch.append(dispatch)
        self.body.append(body)
        flow = bool(resources) and nbytes > 0
        self.nbytes.append(nbytes if flow else 0)
        if flow:
            self.res[i] = tuple(resources)
        return i

    def add_nodes(self, dispatch, body, nbytes, resources) -> None:
        """Add ``len(dispatch)`` nodes (numpy arrays; ``resources``: per node a tuple of keys or
        None), as :meth:`add` one by one would."""
        first = len(self.body)
        flow = (np.asarray(nbytes) > 0) & np.array([bool(r) for r in resources], dtype=bool)
        self.dispatch.frombytes(_bytes(dispatch, np.float64))
        self.body.frombytes(_bytes(body, np.float64))
        self.nbytes.frombytes(_bytes(np.where(flow, nbytes, 0), np.int64))
        for i in np.flatnonzero(flow).tolist():
            self.res[first + i] = tuple(resources[i])

    def edge(self, src: int, dst: int, kind: int, latency: float = 0.0) -> None:
        """``dst.<point> >= src.<point> + latency`` (``kind``: one of the module's edge kinds)."""
        self._src.append(src)
        self._dst.append(dst)
        self._kind.append(kind)
        self._lat.append(latency)

    def add_edges(self, src, dst, kind, latency) -> None:
        """Add edges given as numpy arrays, in their order (as :meth:`edge` one by one would)."""
        self._src.frombytes(_bytes(src, np.int64))
        self._dst.frombytes(_bytes(dst, np.int64))
        self._kind.frombytes(_bytes(kind, np.int8))
        self._lat.frombytes(_bytes(latency, np.float64))

    def _lists(self, n):
        """Per source point (issue, start, end): each node's out edges as ``(ptr, to, lat)`` (``to``:
        ``dst << 2 | destination point``), in the order they were added; per node and
        destination point (``3 * node + point``), how many edges end there; the nodes with no
        edge into their issue. (The edges added so far are given up.)"""
        src, dst = _np(self._src, np.int64), _np(self._dst, np.int64)
        kind, lat = _np(self._kind, np.int8), _np(self._lat, np.float64)
        self._src, self._dst, self._kind, self._lat = array("q"), array("q"), array("b"), array("d")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise IndexError(f"Plan: an edge names a node that does not exist (nodes 0 .. {n - 1})")
        if len(kind) and (kind.min() < 0 or kind.max() >= len(_DST)):
            raise ValueError(f"Plan: an edge kind is not one of 0 .. {len(_DST) - 1}")
        dpoint = np.array(_DST, dtype=np.int64)[kind]
        waiting = np.bincount(dst * 3 + dpoint, minlength=3 * n).astype(np.int64, copy=False)
        spoint = np.array(_SRC, dtype=np.int8)[kind]
        del kind
        out = []
        for p in range(3):
            sel = np.flatnonzero(spoint == p)
            s = src[sel]
            sel = sel[np.argsort(s, kind="stable")]
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(s, minlength=n), out=ptr[1:])
            del s
            out.append((_arr("q", ptr), _arr("q", dst[sel] << 2 | dpoint[sel]), _arr("d", lat[sel])))
        ready = np.flatnonzero(waiting[0::3] == 0).tolist()
        return out, _arr("q", waiting), ready

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> list:
        """Compute :attr:`issue`, :attr:`start`, :attr:`end` (arrays of seconds); returns the nodes
        left unresolved (empty unless the edges have a cycle). Consumes the edges."""
        n = len(self.body)
        out, waiting, ready = self._lists(n)
        zeros = bytes(8 * n)
        self.issue = array("d", zeros)
        self.start = array("d", zeros)
        self.end = array("d", [inf]) * n
        self._dep = array("d", zeros)
        self._stage = array("b", bytes(n))  # points known: 0 none, 1 issue, 2 start, 3 body running, 4 end
        self._heap: list = []
        self._tick = 0                  # heap tie-breaker: events at one time in creation order
        self._holders: dict = {}        # resource -> set of flows holding it
        self._rate: dict = {}
        self._left: dict = {}
        self._since: dict = {}
        self._version: dict = {}
        self._propagate(out, waiting, ready)
        stage = self._stage
        del self._dep, self._stage, self._heap, self._holders, self._rate, self._left, self._since, self._version
        return np.flatnonzero(np.frombuffer(stage, dtype=np.int8) != 4).tolist() if n else []

    def _propagate(self, out, waiting, ready) -> None:
        """Advance every ready node as far as its resolved edges allow, propagating each new point
        along its out edges; then the next flow event in time order; until none is left."""
        ptrs, tos, lats = zip(*out)     # each indexed by the source point
        del out
        issue, start, end, dep, stage = self.issue, self.start, self.end, self._dep, self._stage
        dispatch, body, res, heap = self.dispatch, self.body, self.res, self._heap
        push, pop = heapq.heappush, heapq.heappop
        while True:
            while ready:
                i = ready.pop()
                st = stage[i]
                w = 3 * i
                while True:
                    if st == 0:
                        st = 1
                        t = issue[i]
                        if start[i] < t:
                            start[i] = t
                        sp = 0
                    elif st == 1 and waiting[w + 1] == 0:
                        st = 2
                        t = start[i]
                        d = t + dispatch[i]
                        if dep[i] < d:
                            dep[i] = d
                        sp = 1
                    elif st == 2 and waiting[w + 2] == 0:
                        st = 3
                        if i in res:                # a flow: the heap starts it in time order
                            self._tick += 1
                            push(heap, (dep[i], self._tick, 0, i, 0))
                            break
                        end[i] = dep[i] + body[i]
                        continue
                    elif st == 3 and end[i] != inf:
                        st = 4
                        t = end[i]
                        sp = 2
                    else:
                        break
                    ptr, to, lat = ptrs[sp], tos[sp], lats[sp]
                    for e in range(ptr[i], ptr[i + 1]):
                        c = to[e]
                        t2 = t + lat[e]
                        dst = c >> 2
                        point = c & 3
                        k = 3 * dst + point
                        left_ = waiting[k] - 1
                        waiting[k] = left_
                        if point == 0:
                            if issue[dst] < t2:
                                issue[dst] = t2
                            if left_ == 0:
                                ready.append(dst)
                        elif point == 1:
                            if start[dst] < t2:
                                start[dst] = t2
                            if left_ == 0 and stage[dst] == 1:
                                ready.append(dst)
                        else:
                            if dep[dst] < t2:
                                dep[dst] = t2
                            if left_ == 0 and stage[dst] == 2:
                                ready.append(dst)
                stage[i] = st
            if not heap:
                break
            self._flow_event(*pop(heap), ready)

    def _flow_event(self, now, _tick, what, f, ver, ready) -> None:
        """A flow starts (``what`` 0), or its bytes are through (1, when ``ver`` is its current
        version): the flows sharing its resources get new rates; a finished flow's end is known."""
        res, holders, version = self.res, self._holders, self._version
        if what == 0:
            self._left[f] = float(self.nbytes[f])
            self._rate[f] = 0.0
            self._since[f] = now
            version[f] = 0
            for r in res[f]:
                holders.setdefault(r, set()).add(f)
            self._reshare(res[f], now)
        elif ver == version[f]:
            for r in res[f]:
                holders[r].discard(f)
            version[f] = -1
            rest = [r for r in res[f] if holders[r]]
            if rest:
                self._reshare(rest, now)
            self.end[f] = now + self.body[f]
            ready.append(f)

    def _reshare(self, resources, now) -> None:
        """The flows holding ``resources`` share them again from ``now`` (processor sharing)."""
        holders, left, rate, since, version = self._holders, self._left, self._rate, self._since, self._version
        cap, res, heap = self.capacity, self.res, self._heap
        touched = set()
        for r in resources:
            touched |= holders[r]
        for f in touched:
            left[f] -= rate[f] * (now - since[f])
            since[f] = now
            new = min(cap[r] / len(holders[r]) for r in res[f])
            rate[f] = new
            version[f] += 1
            self._tick += 1
            heapq.heappush(heap, (now + max(left[f], 0.0) / new, self._tick, 1, f, version[f]))
