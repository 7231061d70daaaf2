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
* ``dfs:K=C,K=C...``: choice ``C`` at decision ``K`` (a decision: a pick among more than one,
  counted from 0), the oldest at every other one; ``dfs:C.C.C...`` gives a choice per decision.
  :class:`Explorer` enumerates these breadth-first by number of deviations from ``fifo``:
  bounded exhaustive exploration.

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
    """Given choices at given decisions, the oldest everywhere else (a choice past the end of a
    decision's choices is taken modulo their number). ``deviations``: decision index -> choice
    (the non-zero ones; the token ``dfs:K=C,K=C``); ``prefix``: the same as a list of choices,
    one per decision (the token ``dfs:C.C.C``)."""

    def __init__(self, prefix=(), deviations=None):
        super().__init__()
        devs = {k: c for k, c in enumerate(prefix) if c}
        devs.update({k: c for k, c in (deviations or {}).items() if c})
        self.deviations = devs
        self.token = ("dfs:" + ",".join(f"{k}={c}" for k, c in sorted(devs.items()))) if devs else "fifo"

    @property
    def prefix(self) -> list:
        devs = self.deviations
        out = [0] * (max(devs) + 1 if devs else 0)
        for k, c in devs.items():
            out[k] = c
        return out

    def choose(self, choices, n) -> int:
        c = self.deviations.get(self.decisions)
        return c % n if c else 0


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
            if "=" in rest:
                devs = {}
                for part in rest.split(","):
                    k, c = part.split("=")
                    if int(k) < 0 or int(c) < 0:
                        raise ValueError
                    devs[int(k)] = int(c)
                return ReplayPolicy(deviations=devs)
            prefix = [int(x) for x in rest.split(".")] if rest else []
            if any(c < 0 for c in prefix):
                raise ValueError
            return ReplayPolicy(prefix)
    except ValueError:
        pass
    raise ValueError(f"schedule {token!r} is not fifo, random:SEED, pct:DEPTH:SEED:STEPS or dfs:K=C,K=C...")


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
        #: dfs: runs whose alternatives are not all tried yet, oldest first, as
        #: [deviations, trace, next decision, next choice] (the alternatives are made when asked
        #: for: a run of N decisions has about N of them, and storing each as a prefix is N^2)
        self._frames: deque = deque()
        self._turn = 0
        self._seeds = seed

    def first(self) -> str:
        return "fifo"

    def after(self, policy: Policy) -> None:
        """Learn from a finished run: the decisions it made (for PCT), the alternatives (dfs)."""
        if self.steps is None:
            self.steps = max(1, policy.decisions)
        if self.strategy in ("dfs", "auto") and isinstance(policy, ReplayPolicy):
            devs = {k: c for k, (c, _n) in enumerate(policy.trace) if c}
            if len(devs) < self.bound:
                start = max(devs) + 1 if devs else 0
                self._frames.append([devs, policy.trace, start, 1])

    def _next_deviation(self):
        """The next schedule of bounded exhaustive exploration (deviations), or None when none is left."""
        frames = self._frames
        while frames:
            frame = frames[0]
            devs, trace, k, alt = frame
            while k < len(trace) and alt >= trace[k][1]:
                k, alt = k + 1, 1
            if k >= len(trace):
                frames.popleft()
                continue
            frame[2], frame[3] = k, alt + 1
            out = dict(devs)
            out[k] = alt
            return out
        return None

    def next_token(self):
        """The next schedule to run, or None when a bounded exhaustive exploration is done."""
        kind = self.strategy
        if kind == "auto":
            kinds = ("pct", "random", "dfs")
            kind = kinds[self._turn % 3]
            self._turn += 1
        if kind == "dfs":
            devs = self._next_deviation()
            if devs is not None:
                return ReplayPolicy(deviations=devs).token
            if self.strategy == "dfs":
                self.complete = True
                return None
            kind = "pct"
        seed = self._seeds
        self._seeds += 1
        if kind == "random":
            return f"random:{seed}"
        return f"pct:{self.depth}:{seed}:{self.steps or 1}"


__all__ = ["Policy", "RandomPolicy", "PCTPolicy", "ReplayPolicy", "Explorer", "parse", "choice_key",
           "STRATEGIES", "DEFAULT_DEPTH"]
