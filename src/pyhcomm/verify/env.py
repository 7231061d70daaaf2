"""Checking any run: the verifier's observer of ``pyhcomm.launch``, and ``PYHCOMM_VERIFY=1``.

The package attaches the observer (:func:`watch`) to each default Sim it makes, so it hears of
every launch made from the default simulation (:class:`pyhcomm.spmd.LaunchObserver`). A
*session* (:func:`session`) collects the launches that end while it is open, and can give each
new launch a scheduling policy (schedule exploration of a whole script). Without a session and
with ``PYHCOMM_VERIFY=1`` (read by the launch's Sim), every launch is checked when it ends: its
findings are printed to stderr and raised as :class:`~pyhcomm.verify.check.VerificationError`;
the process's default simulation (programs that do not use ``launch``) is checked at exit, and
findings there make the exit status 1.
"""
from __future__ import annotations

import atexit
import os
import sys
from contextlib import contextmanager

from .. import sim as sim_mod
from ..spmd import LaunchObserver


class Session:
    """The launches that ended while it was open: ``[(sim, the error launch raised or None)]``;
    the default Sims ``pyhcomm.reset()`` made meanwhile (``defaults``), made with the session's
    ``sim_options`` (a whole program verified: the cooperative scheduler) unless the call gave its own."""

    def __init__(self, policy=None, sim_options=None):
        self.launches: list = []
        self.defaults: list = []
        self.policy = policy        # callable -> a policy for each new launch (cooperative only)
        self.sim_options = dict(sim_options or {})


_sessions: list = []


@contextmanager
def session(policy=None, sim_options=None):
    """Collect the launches that end inside the ``with`` (see :class:`Session`)."""
    s = Session(policy, sim_options)
    _sessions.append(s)
    try:
        yield s
    finally:
        _sessions.remove(s)


def default_options(options: dict) -> dict:
    """The options of a default Sim ``pyhcomm.reset(**options)`` makes now: the innermost
    session's ``sim_options`` under the caller's."""
    return dict(_sessions[-1].sim_options, **options) if _sessions else options


def made_default(sim) -> None:
    """``pyhcomm.reset()`` made ``sim`` the default Sim: the innermost session keeps it (its run is
    checked with the launches) and gives it its policy (when its scheduler is explorable)."""
    if not _sessions:
        return
    s = _sessions[-1]
    s.defaults.append(sim)
    if s.policy is not None and sim.scheduler.explorable:
        sim.scheduler.set_policy(s.policy())


class Watcher(LaunchObserver):
    """The verifier's launch observer: a new launch gets the innermost session's policy (when
    its scheduler is explorable); an ended one goes to that session, else, with
    ``PYHCOMM_VERIFY=1``, is checked at once."""

    def started(self, sim) -> None:
        s = _sessions[-1] if _sessions else None
        if s is not None and s.policy is not None and sim.scheduler.explorable:
            sim.scheduler.set_policy(s.policy())

    def ended(self, sim, error) -> None:
        if _sessions:
            _sessions[-1].launches.append((sim, error))
            return
        if sim.config.verify:
            _check_now(sim, error, "pyhcomm.launch")


_exit_check = False     # whether the default simulation's check at exit is registered (watch)


def watch(sim) -> None:
    """Make the verifier hear of the launches made in ``sim`` (once per Sim), and check the
    default simulation at exit when ``PYHCOMM_VERIFY=1`` (registered with the first Sim watched)."""
    global _exit_check
    if not any(isinstance(o, Watcher) for o in sim.launch_observers):
        sim.launch_observers.append(Watcher())
    if not _exit_check:
        _exit_check = True
        atexit.register(_at_exit)


def schedule_of(sim) -> tuple:
    """``(schedule, replay)`` of a run that was not explored: on the cooperative scheduler, the
    token of its seeded order and how to run it again (a function of the token); on the threaded
    scheduler, ``("threaded", None)``: the OS chose the order, it cannot be replayed."""
    if not sim.scheduler.explorable:
        return sim.scheduler.name, None
    token = getattr(sim.scheduler.policy, "token", None)
    if token is None:
        seed = getattr(sim.scheduler.policy, "seed", 0) or 0
        token = f"random:{seed}" if seed else "fifo"
    seed = token.partition(":")[2] if token.startswith("random:") else "0" if token == "fifo" else None
    if seed is None:
        return token, None
    return token, lambda _token: f"run it again with PYHCOMM_SCHEDULER=coop PYHCOMM_SEED={seed} (or launch(seed={seed}))"


def _check_now(sim, error, what: str) -> None:
    from .check import Report, VerificationError, run_findings
    found = run_findings(sim, error)
    if not found:
        return
    report = Report(what, 0, sim.product.name)
    token, replay = schedule_of(sim)
    report.add(found, token, replay)
    report.schedules.append((token, len(found), 0.0))
    print(report.text(), file=sys.stderr)
    if report.ok:           # only findings the program labels deliberate
        return
    raise VerificationError(report) from error


def _at_exit() -> None:
    sim = sim_mod.default_sim(create=False)
    if sim is None or not sim.config.verify or not len(sim.record) and not sim.record.host_effects():
        return
    try:
        _check_now(sim, None, "the default simulation")
    except AssertionError:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


__all__ = ["session", "Session", "Watcher", "watch", "schedule_of", "default_options", "made_default"]
