"""How an idle process of an MPI job polls: at once, then yielding its core, then sleeping a little.

Nothing wakes a process when a message or a doorbell ring arrives: it polls. How long it waits
between polls is a trade between the latency of a round trip and the CPU it burns while nothing
comes, on a machine where the two processes of a ping-pong may share one core. :func:`pause` is
the rule, by how long the caller has been idle; :class:`IdleClock` keeps that time for the link's
callers that come back again and again (the scheduler's idle rounds).
"""
from __future__ import annotations

import os
import time

POLL_MAX = 0.002        # the longest an idle poll sleeps (seconds)
SPIN = 10e-6            # idle for less than this: poll again at once (a longer spin costs a hop its
                        # length when the peer shares this core; yielding costs ~1 us when none does)
YIELD = 2e-3            # ... less than this: give the core away, then poll (other processes run)
NEW_IDLE = 2e-4         # an idle poll this long after the previous pause starts a new idle period


def pause(idle: float, busy: bool = False) -> None:
    """Wait before polling again, ``idle`` seconds into a wait: not at all, then yielding the
    core (to a peer process that shares it, when one does), then sleeping up to
    :data:`POLL_MAX` (a tenth of the time idle so far). ``busy``: MPI is moving a payload of this
    process (it copies a large message through shared memory in pieces, each one when this
    process calls into MPI): never sleep."""
    if idle < SPIN:
        return
    if busy or idle < YIELD:
        os.sched_yield()
        return
    time.sleep(min(POLL_MAX, idle / 10))


class IdleClock:
    """How long this process has been idle, as its repeated polls say.

    ``idle_since`` counts from the first pause after the last message or ring handled (hang
    detection reads it: :meth:`idle_for`); ``waiting_since`` from the start of the current wait
    (the pauses read it: a wait left and entered again more than :data:`NEW_IDLE` later spins
    again instead of sleeping at once)."""

    __slots__ = ("spins", "idle_since", "paused_at", "waiting_since")

    def __init__(self):
        self.spins = 0              # pauses since the last message or ring handled
        self.idle_since = 0.0
        self.paused_at = 0.0        # when the last pause ended
        self.waiting_since = 0.0

    def busy(self) -> None:
        """Something arrived and was handled: idle no more."""
        self.spins = 0

    def idle_for(self, now: float) -> float:
        """Seconds since the first pause after the last thing handled (0 when none since)."""
        return now - self.idle_since if self.spins else 0.0

    def spin_until(self, now: float) -> float:
        """Until when a watch may spin: :data:`SPIN` into the current wait (a young one), or from
        ``now`` when a new one starts."""
        if self.spins and now - self.paused_at <= NEW_IDLE:
            return self.waiting_since + SPIN
        return now + SPIN

    def pause(self) -> None:
        """An idle caller's pause (:func:`pause`), by how long it has been waiting."""
        now = time.monotonic()
        if self.spins == 0:
            self.idle_since = now
        if self.spins == 0 or now - self.paused_at > NEW_IDLE:
            self.waiting_since = now
        self.spins += 1
        pause(now - self.waiting_since)
        self.paused_at = time.monotonic()
