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
"""
from __future__ import annotations

import heapq
from math import inf

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


class Plan:
    """Nodes, edges and resources; :meth:`run` computes every node's issue, start and end."""

    def __init__(self):
        self.dispatch: list = []
        self.body: list = []
        self.nbytes: list = []      # flows: bytes; others: 0
        self.res: list = []         # flows: tuple of resource keys; others: None
        self.out: list = []         # per node: [(dst, kind, latency), ...]
        self.waiting: list = []     # per node: [edges into issue, into start, into deps] not yet resolved
        self.capacity: dict = {}    # resource key -> bytes per second

    def __len__(self):
        return len(self.body)

    def add(self, dispatch: float = 0.0, body: float = 0.0, nbytes: int = 0, resources=None) -> int:
        """Add a node; returns its index. With ``resources`` (keys of :attr:`capacity`) and
        ``nbytes > 0`` it is a flow: ``body`` is then the latency after its bytes moved."""
        self.dispatch.append(dispatch)
        self.body.append(body)
        flow = bool(resources) and nbytes > 0
        self.nbytes.append(nbytes if flow else 0)
        self.res.append(tuple(resources) if flow else None)
        self.out.append([])
        self.waiting.append([0, 0, 0])
        return len(self.body) - 1

    def edge(self, src: int, dst: int, kind: int, latency: float = 0.0) -> None:
        """``dst.<point> >= src.<point> + latency`` (``kind``: one of the module's edge kinds)."""
        self.out[src].append((dst, kind, latency))
        self.waiting[dst][_DST[kind]] += 1

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> list:
        """Compute :attr:`issue`, :attr:`start`, :attr:`end` (lists of seconds); returns the nodes
        left unresolved (empty unless the edges have a cycle)."""
        n = len(self.body)
        self.issue = issue = [0.0] * n
        self.start = start = [0.0] * n
        self.end = end = [inf] * n
        dep = [0.0] * n
        stage = [0] * n                 # points known: 0 none, 1 issue, 2 start, 3 body running, 4 end
        waiting = self.waiting
        out, dispatch, body, nbytes, res = self.out, self.dispatch, self.body, self.nbytes, self.res
        heap: list = []
        push, pop = heapq.heappush, heapq.heappop
        tick = 0                        # heap tie-breaker: events at one time in creation order
        ready = [i for i in range(n) if waiting[i][0] == 0]
        holders: dict = {}              # resource -> set of flows holding it
        rate: dict = {}
        left: dict = {}
        since: dict = {}
        version: dict = {}
        cap = self.capacity

        def reshare(resources, now):
            nonlocal tick
            touched = set()
            for r in resources:
                touched |= holders[r]
            for f in touched:
                left[f] -= rate[f] * (now - since[f])
                since[f] = now
                new = min(cap[r] / len(holders[r]) for r in res[f])
                rate[f] = new
                version[f] += 1
                tick += 1
                push(heap, (now + max(left[f], 0.0) / new, tick, 1, f, version[f]))

        while True:
            while ready:
                i = ready.pop()
                w = waiting[i]
                st = stage[i]
                # advance node i as far as its resolved edges allow, propagating each new point
                while True:
                    if st == 0:
                        st = 1
                        t = issue[i]
                        if start[i] < t:
                            start[i] = t
                        src = 0
                    elif st == 1 and w[1] == 0:
                        st = 2
                        t = start[i]
                        d = t + dispatch[i]
                        if dep[i] < d:
                            dep[i] = d
                        src = 1
                    elif st == 2 and w[2] == 0:
                        st = 3
                        if res[i] is not None:      # a flow: the heap starts it in time order
                            tick += 1
                            push(heap, (dep[i], tick, 0, i, 0))
                            break
                        end[i] = dep[i] + body[i]
                        continue
                    elif st == 3 and end[i] != inf:
                        st = 4
                        t = end[i]
                        src = 2
                    else:
                        break
                    for dst, kind, lat in out[i]:
                        if _SRC[kind] != src:
                            continue
                        t2 = t + lat
                        point = _DST[kind]
                        wd = waiting[dst]
                        wd[point] -= 1
                        if point == 0:
                            if issue[dst] < t2:
                                issue[dst] = t2
                            if wd[0] == 0:
                                ready.append(dst)
                        elif point == 1:
                            if start[dst] < t2:
                                start[dst] = t2
                            if wd[1] == 0 and stage[dst] == 1:
                                ready.append(dst)
                        else:
                            if dep[dst] < t2:
                                dep[dst] = t2
                            if wd[2] == 0 and stage[dst] == 2:
                                ready.append(dst)
                stage[i] = st
            if not heap:
                break
            now, _t, what, f, ver = pop(heap)
            if what == 0:               # a flow starts
                left[f] = float(nbytes[f])
                rate[f] = 0.0
                since[f] = now
                version[f] = 0
                for r in res[f]:
                    holders.setdefault(r, set()).add(f)
                reshare(res[f], now)
            elif ver == version[f]:     # a flow's bytes are through
                for r in res[f]:
                    holders[r].discard(f)
                version[f] = -1
                rest = [r for r in res[f] if holders[r]]
                if rest:
                    reshare(rest, now)
                end[f] = now + body[f]
                ready.append(f)
        return [i for i in range(n) if stage[i] != 4]
