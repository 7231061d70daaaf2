"""``pyhcomm.verify.check(fn, nranks, ...)``: run a program under several schedules and report
every defect the record shows.

Each schedule is a fresh ``pyhcomm.launch`` of ``fn`` on ``nranks`` ranks, in a Sim of its own on
the cooperative scheduler, whose choices a policy of :mod:`.explore` makes; the record of the run
is then analysed (:func:`pyhcomm.analysis.analyze`: races, notify checks, hangs, work never waited
for) and a rank that failed is a finding too. The same defect found in several schedules is
reported once, with the first schedule that found it and a command that replays it.
"""
from __future__ import annotations

import inspect
import json
import sys
import time
from contextlib import contextmanager

from ..analysis import analyze
from ..analysis.findings import ERROR, HANG, NOTIFY_LEFT_SET, UNSYNCHRONIZED, Finding
from ..errors import HcclDeadlockError
from ..spmd import RankError, user_frame
from .explore import DEFAULT_DEPTH, Explorer, parse
from .labels import label_of


class VerificationError(AssertionError):
    """The verifier found defects; ``.report`` holds them (:class:`Report`)."""

    def __init__(self, report: "Report"):
        self.report = report
        super().__init__(report.text())


class Report:
    """What :func:`check` found: ``findings`` (each defect once), the ``schedules`` run, whether
    a bounded exhaustive exploration was ``complete``. ``labelled``: ``finding.key -> file:line``
    of the findings the program labels deliberate (:mod:`.labels`); they do not count against
    :attr:`ok`."""

    def __init__(self, program: str = "", nranks: int = 0, product: str = ""):
        self.program, self.nranks, self.product = program, nranks, product
        self.findings: list = []
        self.schedules: list = []       # (token, findings in that run, seconds)
        self.complete = False
        self._keys: dict = {}
        self.labelled: dict = {}

    @property
    def ok(self) -> bool:
        """No finding, or only findings the program labels deliberate."""
        return not self.unexpected

    @property
    def unexpected(self) -> list:
        """The findings no label in the program calls deliberate."""
        return [f for f in self.findings if f.key not in self.labelled]

    def __bool__(self):
        return self.ok

    def kinds(self) -> set:
        return {f.kind for f in self.findings}

    def add(self, findings, token: str, replay) -> int:
        """Merge one run's findings; returns how many were new."""
        new = 0
        for f in findings:
            seen = self._keys.get(f.key)
            if seen is not None:
                continue
            if token is not None:       # None: keep what another report said
                f.schedule = token
                f.replay = replay(token) if replay is not None else None
            self._keys[f.key] = f
            self.findings.append(f)
            where = label_of(f)
            if where is not None:
                self.labelled[f.key] = where
            new += 1
        return new

    def text(self) -> str:
        head = (f"pyhcomm verify: {self.program}" + (f" on {self.nranks} rank(s)" if self.nranks else "")
                + f", {self.product}: {len(self.schedules)} schedule(s)"
                + (" (all of the bound)" if self.complete else "") + ", ")
        if not self.findings:
            return head + "no findings"
        labelled = len(self.findings) - len(self.unexpected)
        out = [head + f"{len(self.findings)} finding(s)" + (f", {labelled} labelled deliberate" if labelled else "")]
        for k, f in enumerate(self.findings, 1):
            text = f.text()
            where = self.labelled.get(f.key)
            if where is not None:
                text = f"{f.kind} (deliberate, labelled at {where}):" + text[len(f.kind) + 1:]
            out.append(f"[{k}] " + text)
        return "\n".join(out)

    __str__ = text

    def to_json(self) -> dict:
        return {"program": self.program, "ranks": self.nranks, "product": self.product,
                "schedules": [{"schedule": t, "findings": n, "seconds": round(s, 3)} for t, n, s in self.schedules],
                "complete": self.complete,
                "findings": [dict(f.to_json(), deliberate=self.labelled.get(f.key)) for f in self.findings]}

    def write_json(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")

    def raise_for_findings(self) -> None:
        """Raise :class:`VerificationError` when there is a finding not labelled deliberate."""
        if not self.ok:
            raise VerificationError(self)


def run_findings(sim, error=None, races: bool = True) -> list:
    """The findings of one finished run: its record's (hangs, races, notifies, work never waited
    for), and the failure of a rank (``error``: what ``launch`` raised) unless it is the hang.

    After a rank failed the others' blocking calls gave up: what the record shows from then on
    follows from the failure and is no finding of its own (:func:`before_failure`)."""
    found = analyze(sim, races=races, deadlock_report=sim.scheduler.last_deadlock)
    if error is None:
        return found
    failure = error_findings(error, found)
    if failure and isinstance(error, RankError) and sim.scheduler.last_deadlock is None:
        found = before_failure(found, error.failed_at)      # (a deadlock came first: the failure follows from it)
    return found + failure


#: What a failed rank leaves behind in every run: waits never satisfied, notifies left set, work
#: never waited for (the others were aborted). Not findings once a rank failed.
FOLLOW_ON = frozenset((HANG, NOTIFY_LEFT_SET, UNSYNCHRONIZED))


def before_failure(found, failed_at) -> list:
    """The findings of a run in which a rank failed that do not follow from the failure: no
    :data:`FOLLOW_ON` kind, none about a task that never ran (the failure stopped the streams),
    and (with ``failed_at``, the record's next seq when the rank failed) about entries issued
    before it only."""
    return [f for f in found if f.kind not in FOLLOW_ON and not f.details.get("never_ran")
            and (failed_at is None or all(seq < failed_at for seq in f.seqs))]


def error_findings(error, found) -> list:
    """A finding for a rank that failed (an exception in its program, a launch timeout)."""
    cause = error.__cause__ if error.__cause__ is not None else error
    hang = any(f.kind == HANG for f in found)
    if hang and (isinstance(cause, HcclDeadlockError) or "deadlock" in str(cause)
                 or "deadlock" in getattr(error, "last_error", "")):
        return []       # the program failed on the hang's error (raised, or returned and then asserted)
    rank = getattr(error, "rank", None)
    where = getattr(error, "where", None) or user_frame(cause)
    message = str(cause).strip()
    text = message.splitlines()[0] if message else ""
    who = f"rank {rank}" if rank is not None else "the run"
    lines = [f"at {where}"] if where else []
    last = getattr(error, "last_error", "")
    if last and last not in message:
        lines.append(f"last error logged by {who}: {last}")
    if STUCK_TEXT in message:    # a host call (communicator init, channel connect) that could never complete
        kind, title = HANG, f"{who} is stuck: {text}"
        lines.append("every other rank had ended or was blocked too: nothing could ever complete the call")
    else:
        kind = ERROR
        title = f"{who} failed: " + (error.cause.splitlines()[0] if isinstance(error, RankError) else
                                     f"{type(cause).__name__}: {text}" if text else type(cause).__name__)
        if hang:
            lines.append("(after the hang above: the blocked call returned an error)")
    key = (kind, type(cause).__name__, where)
    return [Finding(kind, title, lines, (), key, {"rank": rank, "exception": type(cause).__name__,
                                                  "message": str(cause), "where": where})]


#: What a blocking host call says when the world can never complete it (HCCL_E_TIMEOUT at once).
STUCK_TEXT = "no other rank can run any more"


def replay_command(fn, nranks: int, product=None, data: bool = True, script=None, args=(), kwargs=None):
    """A function ``token -> the command that replays that schedule``: ``python -m pyhcomm verify``
    for a ``script`` (``nranks`` 0: a whole program) or for a function its file defines under its
    name, called without extra arguments; else the ``pyhcomm.verify.check`` call that replays it."""
    opts = (f" --ranks {nranks}" if nranks else "") + (f' --product "{product}"' if product else "")
    opts += "" if data else " --data off"
    if script is not None:
        return lambda token: f"python -m pyhcomm verify {script}{opts} --replay {token}"
    name = getattr(fn, "__qualname__", "") or "fn"
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = inspect.getsourcefile(fn) if callable(fn) and module is not None else None
    if path and not args and not kwargs and getattr(module, name, None) is fn:
        return lambda token: f"python -m pyhcomm verify {path} --function {name}{opts} --replay {token}"
    if not name.isidentifier():
        name = getattr(fn, "__name__", "fn")
    call = [name, str(nranks)] + [repr(a) for a in args] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()]
    call += ([f"product={product!r}"] if product else []) + ([] if data else ["data=False"])
    return lambda token: f"pyhcomm.verify.check({', '.join(call)}, replay={token!r})"


def check(fn, nranks: int, *args, product=None, schedules: int = 8, strategy: str = "auto", data: bool = True,
          timeout: float | None = 120.0, depth: int = DEFAULT_DEPTH, bound: int = 2, scheduler: str = "coop",
          replay: str | None = None, races: bool = True, stop_at_first: bool = False, stop_when=None,
          seed: int = 1, script=None, **kwargs) -> Report:
    """Run ``fn(comm, *args, **kwargs)`` on ``nranks`` ranks under ``schedules`` schedules and
    return a :class:`Report` of every defect found (each once). Blocks.

    Args:
        product: the product to simulate (default: the current one).
        schedules: how many schedules at most (``replay`` runs exactly one).
        strategy: ``auto``, ``random``, ``pct``, ``dfs`` (see :class:`.explore.Explorer`).
        data: False: data-less (ranges checked, no byte moves: what the checks need).
        timeout: seconds per run (a run that never ends is a finding).
        depth: PCT's depth; bound: dfs's number of deviations from the default schedule.
        scheduler: ``coop`` (explored) or ``threaded`` (one run: OS threads choose).
        replay: a schedule token (``fifo``, ``random:7``, ``pct:3:5:120``, ``dfs:0.2``) to run alone.
        races: False skips the race detector (faster: notify checks and hangs only).
        stop_at_first: stop after the first schedule with a finding.
        stop_when: ``stop_when(report)`` true after a schedule: stop there.
    """
    from .. import sim as sim_mod
    parent = sim_mod.current_sim()
    if product is None and parent.runtime.product_chosen:
        product = parent.runtime.product.name
    name = getattr(fn, "__qualname__", repr(fn)) if script is None else script
    report = Report(name, nranks, product or parent.runtime.product.name)
    replay_of = replay_command(fn, nranks, product, data, script, args, kwargs)
    if scheduler != "coop":
        schedules, replay = 1, None
    explorer = Explorer(strategy, depth, bound, seed)
    with quiet_log():
        _explore(report, explorer, replay or explorer.first(), fn, nranks, args, kwargs, product, schedules,
                 scheduler, data, timeout, races, replay, replay_of, stop_at_first, stop_when)
    return report


@contextmanager
def quiet_log():
    """The library's error log silenced for the ``with``: the failing calls of the runs being
    checked are in their findings."""
    import logging

    from ..errors import log
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _explore(report, explorer, token, fn, nranks, args, kwargs, product, schedules, scheduler, data, timeout, races,
             replay, replay_of, stop_at_first, stop_when) -> None:
    from .env import session
    from .. import sim as sim_mod
    from ..spmd import LaunchTimeout, launch
    for _ in range(max(1, schedules)):
        policy = parse(token) if scheduler == "coop" else None
        sim = sim_mod.Sim(product=product, scheduler=scheduler, data=data,
                          product_chosen=product is not None)
        if policy is not None:
            sim.scheduler.set_policy(policy)
        t0 = time.perf_counter()
        error = None
        with session():
            try:
                launch(fn, nranks, *args, sim=sim, timeout=timeout, **kwargs)
            except (RankError, LaunchTimeout) as exc:
                error = exc
        found = run_findings(sim, error, races)
        label = token if scheduler == "coop" else "threaded"
        report.add(found, label, replay_of if scheduler == "coop" else None)
        report.schedules.append((label, len(found), time.perf_counter() - t0))
        del sim
        if replay or (stop_at_first and report.findings) or (stop_when is not None and stop_when(report)):
            break
        if policy is not None:
            explorer.after(policy)
        token = explorer.next_token()
        if token is None:
            report.complete = True
            break


def print_report(report: Report, stream=None) -> None:
    print(report.text(), file=stream or sys.stderr)


__all__ = ["check", "Report", "VerificationError", "run_findings", "replay_command"]
