"""Global idleness of an MPI job: a termination detection, so that a hang across processes is found.

A scheduler that can run nothing asks whether any process of the job can still send something
(:meth:`~.mpi_link.Link.world_idle`). Each process idle for a while reports its counts of work
messages (sent, received) to the *coordinator* (the lowest process neither gone nor dead). When
every live process reported and the totals match, the coordinator confirms with two waves (the
four-counter method): the world is stuck when every process answers idle twice, the second wave
started after the first ended, with the same counts both times and as many messages received as
sent. It then hands everyone the hang facts of every process (``stuck``), which the hang report
reads (:meth:`~.mpi.MpiTransport.remote_hang_facts`). A process that receives work while a wave
asks it answers "not idle", and reports again once idle.

Control messages (never counted): ``state`` (a report), ``confirm`` (a wave's question),
``answer``, ``stuck`` (the verdict); ``exit`` (a process leaving, :mod:`.mpi_link`) is also a
final report.
"""
from __future__ import annotations


class Termination:
    """One process's part in the detection (see the module docstring); the coordinator's state
    is used in the coordinator only."""

    def __init__(self, link):
        self.link = link
        self.reported = None            # (sent, received) last reported while idle
        self.pending = None             # the wave that asked this process whether it is idle
        self.verdict = None             # (wave, {process: hang facts}): the world is stuck
        self.used = -1                  # the last verdict a scheduler took
        # coordinator
        self.states: dict = {}          # process -> (sent, received)
        self.wave = 0
        self.confirm = None             # (wave, {process: answer or None}, counts expected)

    def coordinator(self) -> int:
        """The lowest process neither gone nor dead."""
        link = self.link
        gone, dead = link.leaving.gone, link.failures.dead
        for p in range(link.nprocs):
            if p not in gone and p not in dead:
                return p
        return link.me

    def forget(self) -> None:
        """Report again when idle (the coordinator changed, or a later hang is a new detection)."""
        self.reported = None

    # -- every process -----------------------------------------------------------------------------
    def take_verdict(self) -> bool:
        """True once per verdict: every process is stuck (:attr:`verdict` holds their facts)."""
        if self.verdict is not None and self.verdict[0] > self.used:
            self.used = self.verdict[0]
            self.reported = None        # report again: a later hang is a new detection
            return True
        return False

    def idle(self, counts: tuple) -> None:
        """This process has been idle a while with ``counts``: report them (when they changed
        since the last report), and answer a wave waiting for it."""
        if self.reported != counts:
            self.reported = counts
            self.link.send_ctrl(self.coordinator(), ("state", counts), counted=False, fence=False)
        if self.pending is not None:
            self.answer(True)

    def busy(self) -> None:
        """Work arrived: a wave waiting for this process's answer gets "not idle"."""
        if self.pending is not None:
            self.answer(False)

    def answer(self, idle: bool) -> None:
        wave, self.pending = self.pending, None
        link = self.link
        facts = link.snapshotter() if idle and link.snapshotter is not None else None
        link.send_ctrl(self.coordinator(), ("answer", wave, idle, (link.sent, link.received), facts),
                       counted=False, fence=False)

    def on_confirm(self, src: int, msg: tuple) -> None:
        self.pending = msg[1]

    def on_stuck(self, src: int, msg: tuple) -> None:
        self.verdict = (msg[1], msg[2])

    # -- coordinator -------------------------------------------------------------------------------
    def on_state(self, src: int, msg: tuple) -> None:
        self.states[src] = msg[1]
        self.link.leaving.gone.discard(src)
        self.coordinate()

    def on_exit(self, src: int, counts: tuple) -> None:
        """``src`` leaves with ``counts`` (already counted as gone)."""
        self.states[src] = counts
        self.coordinate()

    def coordinate(self) -> None:
        """Start the first wave when every live process reported idle with matching totals."""
        link = self.link
        if self.coordinator() != link.me or self.confirm is not None:
            return
        dead, states = link.failures.dead, self.states
        live = [p for p in range(link.nprocs) if p not in dead]
        if any(p not in states for p in live):
            return
        if sum(states[p][0] for p in live) != sum(states[p][1] for p in live):
            return
        waiting = [p for p in live if p not in link.leaving.gone]
        if waiting:
            self._wave(waiting, None)

    def _wave(self, procs, expect) -> None:
        self.wave += 1
        self.confirm = (self.wave, {p: None for p in procs}, expect)
        for p in procs:
            self.link.send_ctrl(p, ("confirm", self.wave), counted=False, fence=False)

    def on_answer(self, src: int, msg: tuple) -> None:
        _, wave, idle, counts, facts = msg
        if self.confirm is None or self.confirm[0] != wave:
            return
        _, answers, expect = self.confirm
        if not idle:
            self.confirm = None
            self.states.pop(src, None)   # it reports again when idle
            return
        answers[src] = (counts, facts)
        if any(a is None for a in answers.values()):
            return
        self.confirm = None
        got = {p: a[0] for p, a in answers.items()}
        self.states.update(got)
        if not self._balanced(got) or (expect is not None and got != expect):
            self.coordinate()               # messages in flight, or something moved: look again
            return
        if expect is None:
            self._wave(list(got), got)      # the second wave, after the first ended
            return
        self.states.clear()
        facts_all = {p: a[1] for p, a in answers.items()}
        for p in answers:
            self.link.send_ctrl(p, ("stuck", wave, facts_all), counted=False, fence=False)

    def _balanced(self, got: dict) -> bool:
        """As many messages received as sent, by the processes that answered and those that left."""
        link = self.link
        dead = link.failures.dead
        left = [self.states[p] for p in link.leaving.gone if p in self.states and p not in dead and p not in got]
        sent = sum(c[0] for c in got.values()) + sum(c[0] for c in left)
        received = sum(c[1] for c in got.values()) + sum(c[1] for c in left)
        return sent == received
