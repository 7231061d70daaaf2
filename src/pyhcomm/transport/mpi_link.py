"""The process's link to the other processes of an MPI job: messages out, and serving what came in.

One :class:`Link` per process (:func:`link`, started when a program first uses an MPI transport:
never at import), shared by every MPI transport of the process (each Sim has its own transport;
worlds and channel ends are routed to the transport that owns them). It talks on
``MPI.COMM_WORLD`` with tags of its own (:mod:`.mpi_wire`), so it needs no collective call to
start and never matches a message of the program's own.

Everything a process receives is handled in the order its sender sent it, by :meth:`Link.serve`,
called from the scheduler's ``progress`` and ``watch`` and from every wait of the link: data-plane
messages here (fences, reads, and the rest routed to the transport of their channel end), control
messages by their kind, to the part of the link that owns it or to the transport of their world.

The link is the hub of parts with one job each: :mod:`.mpi_wire` (the bytes of a message),
:mod:`.mpi_shm` (the processes of this machine: hellos, shared memory, doorbells that carry remote
notifies, in the order of the messages), :mod:`.mpi_liveness` (heartbeats, deaths),
:mod:`.mpi_failures` (aborts), :mod:`.mpi_termination` (global idleness, for hang detection),
:mod:`.mpi_leave` (the last messages at exit) and :mod:`.mpi_poll` (how an idle process polls).

Where it differs from hardware: a one-sided write sent as a message lands when the target process
next serves its messages (MPI's own active-message RMA does the same; a write into a near
process's memory lands when its task runs); the link keeps the order that matters (every write
before a later notify or control message reaches its target process, see
:meth:`Link.fence_others`; a ring after the messages before it).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import NamedTuple

import numpy as np

from ..backend.cpu import CpuBackend
from . import mpi_wire as wire
from .mpi_failures import Failures, LinkError
from .mpi_leave import Leaving
from .mpi_liveness import HEAR_EVERY, Heartbeat
from .mpi_poll import IdleClock, pause
from .mpi_shm import Near
from .mpi_termination import Termination
from .mpi_wire import BULK, CONTROL, DATA, EAGER, FENCE, FENCED, GET, GOT, HDR, TAG

REPORT_IDLE = 1e-3      # idle this long: report it to the coordinator of the hang detection

_link = None
_link_lock = threading.Lock()


class LinkSettings(NamedTuple):
    """How the process's link runs (from :class:`pyhcomm.config.Config`: :meth:`of`)."""

    liveness: float = 10.0          # seconds of silence after which a process is dead (0: never)
    shm: bool = True                # share memory with the processes of this machine
    local_processes: int | None = None  # processes of the job on this machine (None: as many as in the job)

    @classmethod
    def of(cls, config) -> "LinkSettings":
        return cls(config.mpi_liveness, config.mpi_shm, config.launcher_local_size)

    def __str__(self):
        return (f"PYHCOMM_MPI_LIVENESS={self.liveness:g}, PYHCOMM_MPI_SHM={int(self.shm)}, "
                f"{self.local_processes or 'all'} processes on this machine")


def mpi_module():
    """``mpi4py.MPI``, or ImportError naming the extra that brings it."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError("pyhcomm's MPI transport needs mpi4py and an MPI library: "
                          "pip install 'pyhcomm[mpi]'") from exc
    return MPI


def mpiexec() -> list:
    """The command that starts an MPI job: the ``mpiexec`` installed beside this Python (the
    ``mpich`` wheel puts it there), else the first on ``PATH``."""
    import shutil
    import sysconfig
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        path = os.path.join(folder, "mpiexec")
        if os.access(path, os.X_OK):
            return [path]
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("no mpiexec: pip install 'pyhcomm[mpi]' brings MPICH's")
    return [found]


def link(settings: LinkSettings = LinkSettings()) -> "Link":
    """The process's link, started on the first call (it initialises MPI, unless the program did,
    and starts the heartbeat thread). Every later call must ask for the same ``settings``: there
    is one link per process, so a different one raises ``ValueError`` (naming both) instead of
    being ignored."""
    global _link
    with _link_lock:
        if _link is None:
            _link = Link(mpi_module(), settings)
            _link.start()
        elif _link.settings != settings:
            raise ValueError(f"the MPI link of this process runs with {_link.settings}; a Sim asks for "
                             f"{settings}: every Sim of a process shares the one link, their settings "
                             "must agree")
        return _link


class Link:
    """See the module docstring. Counts: ``sent`` / ``received`` are the work messages (and
    rings) termination detection counts; ``sent_to`` / ``recv_from`` every message per process
    (a ring's order, :mod:`.mpi_shm`)."""

    def __init__(self, MPI, settings: LinkSettings):
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.me = self.comm.Get_rank()
        self.nprocs = self.comm.Get_size()
        self.settings = settings
        self.lock = threading.RLock()
        self.status = MPI.Status()
        self.rbuf = np.empty(HDR + EAGER + 8, np.uint8)    # receive buffer of small messages
        self.sends: list = []          # (request, buffer) of sends not known complete
        self.sent = 0
        self.received = 0
        self.sent_to = [0] * self.nprocs
        self.recv_from = [0] * self.nprocs
        self.rang_last = False         # the last serve handled rings only (see _serve)
        self.dirty: set = set()        # processes written to since their last fence
        self.reqids = 0
        self.roots_made = 0            # roots made by the Sims of this process (root_number)
        self.launches_made = 0         # launches across processes made here (launch_number)
        self.done: set = set()         # request ids answered (fences, reads)
        self.reads: dict = {}          # request id -> where a read's bytes go
        self.gathers: dict = {}        # gather number -> {process: value} (at the gather's root)
        self.gather_count = 0
        self.routes_root: dict = {}    # root id -> transport
        self.routes_end: dict = {}     # channel end id -> transport
        self.handlers = None           # the transport that handles what has no route (set by transports)
        self.snapshotter = None        # callable -> this process's hang facts (set by transports)
        self.clock = IdleClock()
        self.failures = Failures(self)
        self.leaving = Leaving(self)
        self.termination = Termination(self)
        self.heartbeat = None
        here = settings.local_processes or self.nprocs
        self.near = Near(self.me, self.nprocs, CpuBackend(threads=1), settings.shm and self.nprocs > 1 and here > 1)
        self._control = self._control_kinds()

    def start(self) -> None:
        """Join the job: the heartbeat thread, the leave at exit, the abort on an uncaught
        exception, the hellos to the other processes (:func:`link` calls it once)."""
        MPI, settings = self.MPI, self.settings
        self.heartbeat = Heartbeat.start(MPI, self.comm, self.me, self.nprocs, settings.liveness, self._quiet)
        atexit.register(self.leaving.close)
        self.failures.watch_uncaught()
        hello = self.near.hello()
        if hello is not None:
            for p in self.others():
                self.send_ctrl(p, hello, counted=False, fence=False)

    def _control_kinds(self) -> dict:
        """Control kind -> the part of the link that handles it (``handler(src, msg)``); any other
        kind goes to the transport of its world (:meth:`_dispatch_ctrl`)."""
        term, leaving = self.termination, self.leaving
        return {"state": term.on_state, "confirm": term.on_confirm, "answer": term.on_answer,
                "stuck": term.on_stuck, "abort": self.failures.on_abort_message, "exit": leaving.on_exit,
                "bye": leaving.on_bye, "hello": self._on_hello, "ringing": self._on_ringing,
                "gather": self._on_gather}

    def others(self) -> list:
        """The other processes not known dead."""
        dead = self.failures.dead
        return [p for p in range(self.nprocs) if p != self.me and p not in dead]

    def _quiet(self, p: int) -> bool:
        """``p`` gets no heartbeat: it said goodbye, or it is dead."""
        return p in self.leaving.byes or p in self.failures.dead

    # -- sending ---------------------------------------------------------------------------------
    def _isend(self, buf, proc) -> None:
        req = self.comm.Isend(buf, proc, TAG)
        self.sent_to[proc] += 1
        self.sends.append((req, buf))
        if len(self.sends) > 64:
            self._reap()

    def _reap(self) -> None:
        self.sends = [(req, buf) for req, buf in self.sends if not req.Test()]

    def sends_done(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for every send to complete (before leaving)."""
        deadline = time.monotonic() + timeout
        while self.sends and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.001)

    def send_ctrl(self, proc: int, msg: tuple, counted: bool = True, fence: bool = True) -> None:
        """Send a control tuple to ``proc`` (to this process: handled at once). ``fence``: every
        write of this process to a third process lands first (see :meth:`fence_others`)."""
        if proc == self.me:
            if counted:
                self.sent += 1
                self.received += 1
            self._dispatch_ctrl(self.me, msg)
            return
        with self.lock:
            if fence:
                self.fence_others(proc)
            buf = wire.control(msg, counted)
            if counted:
                self.sent += 1
            self._isend(buf, proc)

    def send_data(self, proc: int, op: int, tid: int, addr: int, size: int, aux: int = 0, reqid: int = 0,
                  extra: int = 0, payload=None, owned: bool = False) -> None:
        """Send a data-plane message; ``payload`` (a uint8 array) goes inline when small, else
        as a message of its own received in place. Returns once MPI is done reading ``payload``,
        unless ``owned`` (a copy nobody else touches: it is kept until the send completes)."""
        with self.lock:
            buf, where = wire.data(op, tid, addr, size, aux, reqid, extra, payload)
            self.sent += 1
            self._isend(buf, proc)
            if where == BULK:
                req = self.comm.Isend(payload, proc, TAG)
                self.sent_to[proc] += 1
                if owned:
                    self.sends.append((req, payload))
        if where == BULK and not owned:
            self.wait(req.Test, "a large transfer to be taken", busy=True)

    def ring(self, proc: int, tid: int, index: int) -> bool:
        """Ring ``proc``'s doorbell for notify ``index`` of its channel end ``tid`` (it is handled
        after every message sent to ``proc`` before); False when ``proc`` has no doorbell here or
        its ring is full (send a message instead: ``proc`` handles it after the rings before it,
        and never blocks this process as a wait for room could)."""
        near = self.near
        bell = near.bells.get(proc)
        if bell is None or not bell.room():
            return False
        with self.lock:
            bell.ring(tid, index, self.sent_to[proc])
            self.sent += 1
            near.rung += 1
        return True

    def root_number(self) -> int:
        """A root number no Sim of this process had before (the low bits of the root ids it
        makes: one id names one world in the whole job, whichever Sim of the process made it)."""
        with self.lock:
            self.roots_made += 1
            return self.roots_made

    def launch_number(self) -> int:
        """The number of this process's next ``pyhcomm.launch`` across processes (1, 2, ...)."""
        with self.lock:
            self.launches_made += 1
            return self.launches_made

    def request_id(self) -> int:
        self.reqids += 1
        return self.reqids

    def fence_others(self, proc: int) -> None:
        """Every write of this process to a process other than ``proc`` has landed (one round trip
        to each; nothing when none is outstanding). Called before every notify and control
        message, so that whoever learns of it through ``proc`` sees those writes."""
        if not self.dirty:      # (direct writes and rings land at once: usually nothing to fence)
            return
        others = [p for p in self.dirty if p != proc]
        if others:
            self.fence(others)

    def fence(self, procs) -> None:
        """Every write of this process to ``procs`` has landed (a round trip to each)."""
        ids = []
        with self.lock:
            for p in procs:
                self.dirty.discard(p)
                rid = self.request_id()
                ids.append(rid)
                self.send_data(p, FENCE, 0, 0, 0, reqid=rid)
        self.wait(lambda: all(i in self.done for i in ids), "writes to land")
        self.done.difference_update(ids)

    def gather(self, value, root: int = 0):
        """Every process's ``value`` (picklable), in process order, at process ``root``; None in
        the others, which return at once. Every process calls it, the same number of times."""
        self.gather_count += 1
        number = self.gather_count
        if self.me != root:
            self.send_ctrl(root, ("gather", number, value))
            return None
        got = self.gathers.setdefault(number, {})
        got[self.me] = value
        self.wait(lambda: len(got) >= self.nprocs, "every process's part of a gather")
        del self.gathers[number]
        return [got[p] for p in range(self.nprocs)]

    def _on_gather(self, src, msg) -> None:
        self.gathers.setdefault(msg[1], {})[src] = msg[2]

    # -- receiving -------------------------------------------------------------------------------
    def serve(self) -> int:
        """Handle what has arrived, in order; returns how many. Rings first: a call that handled
        rings leaves the messages for the next call (never twice in a row), so what a ring wakes
        runs sooner."""
        if not self.lock.acquire(blocking=False):
            return 0   # another thread of this process serves now
        try:
            return self._serve()
        finally:
            self.lock.release()

    def _serve(self) -> int:
        before = self.received
        handled = self._all_rings()  # rings first (one whose messages are still to come waits for them)
        if handled and not self.rang_last:
            # rings handled: what they wake runs first, messages wait for the next call (a probe
            # less on a notify's path; never twice in a row, so messages wait one call at most)
            self.rang_last = True
            self._served(handled, before)
            return handled
        self.rang_last = False
        if self.comm.Iprobe(self.MPI.ANY_SOURCE, TAG):  # (a third of Improbe's cost when nothing came,
            handled += self._messages()                  # the usual case)
        if handled:                 # (rings that waited for the messages just received)
            handled += self._all_rings()
        self._served(handled, before)
        return handled

    def _messages(self) -> int:
        """Receive and handle every message that arrived (a probe found one; each is handled after
        the rings its sender rang before it); returns how many things were handled."""
        MPI, comm, st = self.MPI, self.comm, self.status
        near, hb = self.near, self.heartbeat
        handled = 0
        while True:
            msg = comm.Improbe(MPI.ANY_SOURCE, TAG, st)
            if msg is None:
                break
            src = st.Get_source()
            n = st.Get_count(MPI.BYTE)
            buf = self.rbuf if n <= len(self.rbuf) else np.empty(n, np.uint8)
            msg.Recv([buf, n, MPI.BYTE])
            if hb is not None:
                hb.last_seen[src] = time.monotonic()
            if near.ringers and near.mailbox.pending(src):
                handled += self._rings(src)     # rung before this message was sent
            self.recv_from[src] += 1
            kind = buf[0]
            if kind == DATA:
                self.received += 1
                self._dispatch_data(src, buf, n)
            elif kind == CONTROL:
                counted, ctrl = wire.read_control(buf, n)
                if counted:
                    self.received += 1
                self._dispatch_ctrl(src, ctrl)
            else:
                raise LinkError(f"process {self.me}: unexpected message kind {kind} from process {src}")
            handled += 1
            if not comm.Iprobe(MPI.ANY_SOURCE, TAG):
                break
        return handled

    def _served(self, handled: int, before: int) -> None:
        """The end of a :meth:`serve`: heartbeats, idleness, sends complete."""
        hb = self.heartbeat
        if hb is not None and time.monotonic() - hb.heard >= HEAR_EVERY:
            hb.hear()
        if handled:
            self.clock.busy()
            if self.received != before:
                self.termination.busy()   # work arrived: not idle any more
        if self.sends:
            self._reap()

    def recv_bulk(self, src: int, into) -> None:
        """Receive the payload that follows a header from ``src`` into ``into`` (a uint8 array)."""
        self.comm.Recv(into, src, TAG)
        self.recv_from[src] += 1

    def _all_rings(self) -> int:
        """Handle the rings of every process that rings this one (see :meth:`_rings`); returns how many."""
        handled = 0
        near = self.near
        mailbox = near.mailbox
        for p in near.ringers:
            if mailbox.pending(p):
                handled += self._rings(p)
        return handled

    def _rings(self, src: int) -> int:
        """Handle the rings of ``src`` whose messages before them all arrived; returns how many."""
        take, received, routes = self.near.mailbox.take, self.recv_from[src], self.routes_end
        n = 0
        while True:
            got = take(src, received)
            if got is None:
                return n
            n += 1
            self.received += 1
            t = routes.get(got[0])
            if t is not None:
                t.on_ring(src, got[0], got[1])

    def _dispatch_data(self, src, buf, n) -> None:
        (op, tid, addr, size, aux, reqid, where, extra), inline = wire.read_data(buf, n)
        if op == FENCE:
            self.send_data(src, FENCED, 0, 0, 0, reqid=reqid)
        elif op == FENCED:
            self.done.add(reqid)
        elif op == GOT:
            dst = self.reads.pop(reqid, None)
            if where == BULK:
                self.recv_bulk(src, dst if dst is not None else np.empty(size, np.uint8))
            elif dst is not None and inline is not None:
                dst[:] = inline
            self.done.add(reqid)
        else:
            t = self.routes_end.get(tid)
            if t is None:       # the end is gone: take the payload, answer a read with nothing
                if where == BULK:
                    self.recv_bulk(src, np.empty(size, np.uint8))
                if op == GET:
                    self.send_data(src, GOT, 0, 0, 0, reqid=reqid)
                return
            t.on_data(src, op, tid, addr, size, aux, reqid, where, extra, inline)

    def _dispatch_ctrl(self, src, msg) -> None:
        handler = self._control.get(msg[0])
        if handler is not None:
            handler(src, msg)
            return
        route = self.routes_root.get(msg[1]) if len(msg) > 1 else None
        target = route or self.handlers
        if target is not None:
            target.on_ctrl(src, msg)

    def _on_hello(self, src, msg) -> None:
        if self.near.on_hello(src, msg[1:]):
            self.send_ctrl(src, ("ringing",), counted=False, fence=False)

    def _on_ringing(self, src, msg) -> None:
        self.near.on_ringing(src)

    # -- waiting ---------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`LinkError` when the job was aborted or a process died."""
        self.failures.check()
        self.check_liveness()
        self.failures.check()

    def check_liveness(self) -> None:
        """A process silent for too long is dead: the job is aborted naming its ranks."""
        hb = self.heartbeat
        if hb is None:
            return
        for p in hb.silent(self.leaving.byes, self.failures.dead):
            self.termination.forget()
            self.failures.died(p, hb.liveness)

    def wait(self, done, what: str, busy: bool = False) -> None:
        """Serve messages until ``done()`` holds (a transfer's answer); raises :class:`LinkError`
        when the job is aborted or a process dies first. ``busy``: see :func:`.mpi_poll.pause`."""
        since = None
        while not done():
            if self.serve():
                since = None
                continue
            self.check()
            now = time.monotonic()
            if since is None:
                since = now
            pause(now - since, busy)

    def watch(self) -> int:
        """Spin until a message or ring arrives, while the current wait is young (see
        :meth:`.mpi_poll.IdleClock.spin_until`), and handle what came (:meth:`serve`); returns how
        many. A turn costs a fraction of a scheduler's idle round (which also looks for timeouts
        and hangs), so an answer that comes within microseconds is handled sooner."""
        now = time.monotonic()
        until = self.clock.spin_until(now)
        near = self.near
        mailbox, ringers = near.mailbox, near.ringers
        probe, anysrc, monotonic = self.comm.Iprobe, self.MPI.ANY_SOURCE, time.monotonic
        while now < until:
            for p in ringers:
                if mailbox.pending(p):
                    return self.serve()
            if probe(anysrc, TAG):
                return self.serve()
            now = monotonic()
        return 0

    def world_idle(self) -> bool:
        """Called by an idle scheduler: True once every process of the job is idle with no message
        in flight (then ``termination.verdict`` holds every process's hang facts); else pauses a
        poll interval and returns False. Idle a while, this process reports it to the coordinator
        (not at every pause of a busy exchange, where the reports and the waves they start would
        cost each round trip a round trip more)."""
        if self.serve():
            return False
        self.check_liveness()
        term = self.termination
        if term.take_verdict():
            return True
        if self.clock.idle_for(time.monotonic()) >= REPORT_IDLE:
            term.idle((self.sent, self.received))
        self.clock.pause()
        return False
