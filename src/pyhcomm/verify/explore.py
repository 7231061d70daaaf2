"""Schedule exploration on the cooperative scheduler: which runnable stream or program goes next.

The cooperative scheduler asks its policy at every choice (:class:`pyhcomm.sched.coop.SeededPolicy`:
``pick(choices)`` returns an index). The policies here replace it; each is named by a *schedule
token* that replays it exactly (same program, same choices):

* ``fifo``: always the oldest choice (seed 0, the default schedule);
* ``random:S``: a pseudo-random choice from seed ``S`` (``launch(seed=S)`` does the same);
* ``pct:D:S:N``: PCT, probabilistic concurrency testing of depth ``D`` (seed ``S``, ``N`` the
  number of decisions expected): every stream and program gets a random priority, the highest
  runnable one goes, and at ``D - 1`` random decisions the one chosen drops below all others. A
  bug that needs ``D`` orderings to line up is found with probability at least
  ``1 / (k * N^(D-1))`` per run (``k`` choosers);
* ``dfs:c1.c2...``: the given choice at each decision (a decision: a pick among more than one),
  the oldest after the list. :class:`Explorer` enumerates these breadth-first by number of
  deviations from ``fifo``: bounded exhaustive exploration.

A choice is told apart by ``("stream", handle)`` or ``("actor", name)``, the same on every run.
"""
from __future__ import annotations

import random
from collections import deque

DEFAULT_DEPTH = 3


def choice_key(c):
    """What identifies a choice across runs: a stream's handle, an actor's name."""
    h = getattr(c, "handle", None)
    return ("stream", h) if h is not None else ("actor", getattr(c, "name", repr(c)))


class Policy:
    """Counts decisions (picks among more than one) and keeps the trace ``[(index, n), ...]``."""

    token = "fifo"

    def __init__(self):
        self.decisions = 0
        self.trace: list = []

    def pick(self, choices) -> int:
        n = len(choices)
        if n == 1:
            return 0
        i = self.choose(choices, n)
        self.decisions += 1
        self.trace.append((i, n))
        return i

    def choose(self, choices, n) -> int:
        return 0


class RandomPolicy(Policy):
    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed
        self.token = f"random:{seed}"
        self._rng = random.Random(seed)

    def choose(self, choices, n) -> int:
        return self._rng.randrange(n)


class PCTPolicy(Policy):
    """See the module docstring; priorities are kept per :func:`choice_key`."""

    def __init__(self, depth: int, seed: int, steps: int):
        super().__init__()
        self.depth, self.seed, self.steps = depth, seed, max(1, steps)
        self.token = f"pct:{depth}:{seed}:{self.steps}"
        self._rng = random.Random(seed)
        self._prio: dict = {}
        self._lowered = 0
        self._changes = sorted(self._rng.randint(1, self.steps) for _ in range(max(0, depth - 1)))

    def choose(self, choices, n) -> int:
        prio = self._prio
        rng = self._rng
        best, best_p = 0, None
        for k, c in enumerate(choices):
            key = choice_key(c)
            p = prio.get(key)
            if p is None:
                p = prio[key] = self.depth + rng.random()
            if best_p is None or p > best_p:
                best, best_p = k, p
        step = self.decisions + 1
        while self._changes and self._changes[0] <= step:
            self._changes.pop(0)
            self._lowered += 1
            prio[choice_key(choices[best])] = self.depth - self._lowered   # below every first priority
        return best


class ReplayPolicy(Policy):
    """The given choice at each decision, the oldest after the list (indices past the end of a
    decision's choices are taken modulo their number)."""

    def __init__(self, prefix=()):
        super().__init__()
        self.prefix = list(prefix)
        self.token = "dfs:" + ".".join(map(str, self.prefix)) if self.prefix else "fifo"

    def choose(self, choices, n) -> int:
        k = self.decisions
        return self.prefix[k] % n if k < len(self.prefix) else 0


def parse(token: str) -> Policy:
    """The policy a schedule token names (``ValueError`` with the valid forms otherwise)."""
    t = (token or "fifo").strip()
    try:
        if t in ("fifo", "0", "random:0"):
            return ReplayPolicy()
        kind, _, rest = t.partition(":")
        if kind == "random":
            return RandomPolicy(int(rest))
        if kind == "pct":
            d, s, n = (int(x) for x in rest.split(":"))
            if d < 1:
                raise ValueError
            return PCTPolicy(d, s, n)
        if kind == "dfs":
            return ReplayPolicy([int(x) for x in rest.split(".")] if rest else [])
    except ValueError:
        pass
    raise ValueError(f"schedule {token!r} is not fifo, random:SEED, pct:DEPTH:SEED:STEPS or dfs:C1.C2...")


STRATEGIES = ("auto", "random", "pct", "dfs")


class Explorer:
    """The schedule tokens to try, one after the other (``next_token(last policy)``).

    ``strategy``: ``random`` (fifo, then random seeds), ``pct`` (fifo, then PCT of ``depth``
    with the decision count fifo needed), ``dfs`` (bounded exhaustive: every schedule that
    deviates from fifo at up to ``bound`` decisions, fewest deviations first; ``complete`` says
    when they were all run), ``auto`` (fifo, then PCT, random and dfs in turn).
    """

    def __init__(self, strategy: str = "auto", depth: int = DEFAULT_DEPTH, bound: int = 2, seed: int = 1):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
        self.strategy, self.depth, self.bound = strategy, depth, bound
        self.seed = seed
        self.steps = None
        self.complete = False
        self._queue: deque = deque()    # dfs prefixes not run yet
        self._turn = 0
        self._seeds = seed

    def first(self) -> str:
        return "fifo"

    def after(self, policy: Policy) -> None:
        """Learn from a finished run: the decisions it made (for PCT), the alternatives (dfs)."""
        if self.steps is None:
            self.steps = max(1, policy.decisions)
        if self.strategy in ("dfs", "auto") and isinstance(policy, ReplayPolicy):
            start = len(policy.prefix)
            used = sum(1 for c in policy.prefix if c)
            if used < self.bound:
                for k in range(start, len(policy.trace)):
                    _i, n = policy.trace[k]
                    for alt in range(1, n):
                        self._queue.append([c for c, _n in policy.trace[:k]] + [alt])

    def next_token(self):
        """The next schedule to run, or None when a bounded exhaustive exploration is done."""
        kind = self.strategy
        if kind == "auto":
            kinds = ("pct", "random", "dfs")
            kind = kinds[self._turn % 3]
            self._turn += 1
            if kind == "dfs" and not self._queue:
                kind = "pct"
        if kind == "dfs":
            if not self._queue:
                self.complete = True
                return None
            return "dfs:" + ".".join(map(str, self._queue.popleft()))
        seed = self._seeds
        self._seeds += 1
        if kind == "random":
            return f"random:{seed}"
        return f"pct:{self.depth}:{seed}:{self.steps or 1}"


__all__ = ["Policy", "RandomPolicy", "PCTPolicy", "ReplayPolicy", "Explorer", "parse", "choice_key",
           "STRATEGIES", "DEFAULT_DEPTH"]
