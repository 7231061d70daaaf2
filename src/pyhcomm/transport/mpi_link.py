"""The process's link to the other processes of an MPI job: messages, liveness, global idleness.

One :class:`Link` per process (:func:`link`), shared by every MPI transport of the process (each
Sim has its own transport; worlds and channel ends are routed to the transport that owns them).
It talks on ``MPI.COMM_WORLD`` with two tags of its own (``TAG``: everything pyhcomm sends, in
order per pair of processes; ``TAG_BEAT``: heartbeats), so it needs no collective call to start
and never matches a message of the program's own.

Messages are byte buffers whose first byte says what they are: ``C`` a pickled control tuple,
``D`` a data-plane header (eight int64 words, then the payload when it is small), ``B`` the payload
of a large transfer, received in place right after its header (MPI keeps the order of the
messages of one sender). Everything a process receives is handled in the order its sender sent
it, by :meth:`Link.serve`, called from the scheduler's ``progress`` and ``watch`` and from every
wait of the link.

Same machine (:mod:`.mpi_shm`): at start every process says hello to the others with the handle of
its mailbox; a process on the same machine maps it (it is then *near*: exposed memory is written
directly, :mod:`.mpi`) and rings its doorbell for remote notifies, in the order of its messages
(``PYHCOMM_MPI_SHM=0``: no hello, messages only).

Liveness: a daemon thread sends a heartbeat to every other process every quarter of
``PYHCOMM_MPI_LIVENESS`` seconds; a process heard from once and then silent for that long is dead
(its ranks are named in the abort). Global idleness (:meth:`Link.world_idle`) is a termination
detection: each idle process reports (messages sent, received) to the coordinator (the lowest
process still there), which confirms that every process is still idle with the same counts, so
no message was in flight, and then hands everyone the hang facts of every process.

Where it differs from hardware: a one-sided write sent as a message lands when the target process
next serves its messages (MPI's own active-message RMA does the same; a write into a near
process's memory lands when its task runs); the link keeps the order that matters (every write
before a later notify or control message reaches its target process, see
:meth:`Link.fence_others`; a ring after the messages before it).
"""
from __future__ import annotations

import atexit
import os
import pickle
import sys
import threading
import time

import numpy as np

from ..backend.cpu import CpuBackend
from . import mpi_shm

TAG = 0x5AC0            # every pyhcomm message (one tag: MPI keeps their order per sender)
TAG_BEAT = 0x5AC1       # heartbeats
EAGER = 1 << 16         # payloads up to this many bytes travel inside their header message
HDR = 72                # kind byte + 7 pad + 8 int64 words

# data-plane operations (word 0 of a ``D`` header)
PUT, NOTIFY, GET, GOT, ACC, FENCE, FENCED = range(1, 8)
INLINE, BULK = 1, 2     # word 6: where the payload is

_POLL_MAX = 0.002       # the longest an idle poll sleeps (seconds)

_SPIN = 10e-6           # idle for less than this: poll again at once (a longer spin costs a hop its
                        # length when the peer shares this core; yielding costs ~1 us when none does)
_YIELD = 2e-3           # ... less than this: give the core away, then poll (other processes run)
_REPORT_IDLE = 1e-3     # idle this long: report it to the coordinator of the hang detection
_HEAR_BEATS = 0.01      # heartbeats are taken at most this often
_NEW_IDLE = 2e-4        # an idle poll this long after the previous pause starts a new idle period

_link = None
_link_lock = threading.Lock()


def _local_processes(nprocs: int) -> int:
    """Processes of the job on this machine, as the launcher says (Hydra's ``MPI_LOCALNRANKS``,
    Open MPI's ``OMPI_COMM_WORLD_LOCAL_SIZE``); ``nprocs`` when it does not."""
    for var in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        try:
            return int(os.environ[var])
        except (KeyError, ValueError):
            continue
    return nprocs


def _pause(idle: float, busy: bool = False) -> None:
    """Wait before polling again, ``idle`` seconds into a wait: not at all, then yielding the
    core (to a peer process that shares it, when one does), then sleeping up to
    ``_POLL_MAX`` (a tenth of the time idle so far). ``busy``: MPI is moving a payload of this
    process (it copies a large message through shared memory in pieces, each one when this
    process calls into MPI): never sleep."""
    if idle < _SPIN:
        return
    if busy or idle < _YIELD:
        os.sched_yield()
        return
    time.sleep(min(_POLL_MAX, idle / 10))


def _unlink_mpi_segments() -> None:
    """Remove the shared-memory files of MPICH this process maps (``/dev/shm/mpich_shm_*``):
    leaving without ``MPI_Finalize`` (after a death) would leave them behind. Linux only."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "/dev/shm/mpich_shm_" in line}
    except OSError:
        return
    for path in paths:
        if not path.endswith("(deleted)"):
            try:
                os.unlink(path)
            except OSError:
                pass


class LinkError(RuntimeError):
    """The link cannot go on: the job was aborted, or a process died."""


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


def link(liveness: float = 10.0, shm: bool = True) -> "Link":
    """The process's link (made on first use: initialises MPI; ``shm``: use shared memory with
    the processes of this machine, see :mod:`.mpi_shm`)."""
    global _link
    with _link_lock:
        if _link is None:
            _link = Link(mpi_module(), liveness, shm)
        return _link


def active_link():
    """The process's link if MPI is already in use, else None (never initialises MPI)."""
    return _link


class Link:
    """See the module docstring."""

    def __init__(self, MPI, liveness: float, shm: bool = True):
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.me = self.comm.Get_rank()
        self.nprocs = self.comm.Get_size()
        here = _local_processes(self.nprocs)
        self.lock = threading.RLock()
        self.liveness = liveness
        self.status = MPI.Status()
        self.rbuf = np.empty(HDR + EAGER + 8, np.uint8)    # receive buffer of small messages
        self.sends: list = []          # (request, buffer) of sends not known complete
        self.sent = 0                  # messages sent / received (global idleness counts them; rings too)
        self.received = 0
        self.sent_to = [0] * self.nprocs     # messages sent to / received from each process (every one
        self.recv_from = [0] * self.nprocs   # on TAG: a ring's order, see mpi_shm)
        # shared memory with the processes of this machine (mpi_shm)
        self.shm_backend = CpuBackend(threads=1)
        self.mailbox = None            # this process's mailbox (None: no shared memory)
        self.near: set = set()         # processes whose mailbox this one mapped: same machine
        self.bells: dict = {}          # process -> Doorbell this process rings
        self.ringers: list = []        # processes that ring this one (their rings are polled)
        self.rung = 0                  # rings this process wrote
        self.rang_last = False         # the last serve handled rings only (see _serve)
        self.dirty: set = set()        # processes written to since their last fence
        self.reqids = 0
        self.roots_made = 0            # roots made by the Sims of this process (root_number)
        self.done: set = set()         # request ids answered (fences, reads)
        self.reads: dict = {}          # request id -> where a read's bytes go
        self.routes_root: dict = {}    # root id -> transport
        self.routes_end: dict = {}     # channel end id -> transport
        self.handlers = None           # the transport that handles what has no route (set by transports)
        self.last_seen: dict = {}      # process -> monotonic time of its last message
        self.beats_heard = 0.0         # when heartbeats were last taken
        self.gone: set = set()         # processes that are leaving the job (said ``exit``)
        self.byes: set = set()         # processes that sent their last message (said ``bye``)
        self.dead: dict = {}           # process -> why it is considered dead
        self.abort_reason = None
        self.abort_rank = None         # the rank whose failure began the abort (None: unknown)
        self.abort_remote = False      # the abort began in another process (or with a death)
        self.owners: dict = {}         # process -> the ranks it hosts (for messages)
        self.gathers: dict = {}        # gather number -> {process: value} (at the gather's root)
        self.gather_count = 0
        self.idle_spins = 0
        self.idle_since = 0.0
        self.paused_at = 0.0           # when the last idle pause ended
        self.waiting_since = 0.0       # the start of the current wait (see poll_pause)
        # global idleness
        self.idle_state = None         # (sent, received) last reported while idle
        self.states: dict = {}         # coordinator: process -> (sent, received)
        self.wave = 0
        self.confirm = None            # coordinator: (wave, {process: answer or None}, counts expected)
        self.pending_confirm = None    # the wave that asked this process whether it is idle
        self.verdict = None            # (wave, {process: snapshot}): the world is stuck
        self.used_verdict = -1
        self.snapshotter = None        # callable -> this process's hang facts (set by transports)
        self.beat = None
        self._stop = threading.Event()
        if liveness and self.nprocs > 1 and MPI.Query_thread() == MPI.THREAD_MULTIPLE:
            self.beat = threading.Thread(target=self._beat, name="pyhcomm-mpi-heartbeat", daemon=True)
            self.beat.start()
        atexit.register(self.close)
        self._hook = sys.excepthook
        sys.excepthook = self._uncaught
        if shm and self.nprocs > 1 and here > 1:
            self.mailbox = mpi_shm.Mailbox.make(self.nprocs, self.shm_backend)
        if self.mailbox is not None:
            hello = ("hello",) + self.mailbox.hello(self.shm_backend)
            for p in range(self.nprocs):
                if p != self.me:
                    self.send_ctrl(p, hello, counted=False, fence=False)

    def _uncaught(self, kind, exc, tb) -> None:
        """An exception nobody caught ends this process: the others give up naming its ranks."""
        if self.abort_reason is None and not issubclass(kind, KeyboardInterrupt):
            self.abort_all(f"{self.ranks_of(self.me)} failed: {exc!r}")
        self._hook(kind, exc, tb)

    # -- sending ---------------------------------------------------------------------------------
    def _isend(self, buf, proc) -> None:
        req = self.comm.Isend(buf, proc, TAG)
        self.sent_to[proc] += 1
        self.sends.append((req, buf))
        if len(self.sends) > 64:
            self._reap()

    def _reap(self) -> None:
        keep = []
        for req, buf in self.sends:
            if not req.Test():
                keep.append((req, buf))
        self.sends = keep

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
            body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
            buf = np.empty(8 + len(body), np.uint8)
            buf[0] = ord("C")
            buf[1] = 1 if counted else 0
            buf[8:] = np.frombuffer(body, np.uint8)
            if counted:
                self.sent += 1
            self._isend(buf, proc)

    def send_data(self, proc: int, op: int, tid: int, addr: int, size: int, aux: int = 0, reqid: int = 0,
                  extra: int = 0, payload=None, owned: bool = False) -> None:
        """Send a data-plane message; ``payload`` (a uint8 array) goes inline when small, else
        as a ``B`` message received in place. Returns once MPI is done reading ``payload``, unless
        ``owned`` (a copy nobody else touches: it is kept until the send completes)."""
        with self.lock:
            if payload is not None and len(payload) <= EAGER:
                buf = np.empty(HDR + len(payload), np.uint8)
                buf[HDR:] = payload
                where = INLINE
            else:
                buf = np.empty(HDR, np.uint8)
                where = 0 if payload is None else BULK
            buf[0] = ord("D")
            buf[8:HDR].view(np.int64)[:] = (op, tid, addr, size, aux, reqid, where, extra)
            self.sent += 1
            self._isend(buf, proc)
            if where == BULK:
                req = self.comm.Isend(payload, proc, TAG)
                self.sent_to[proc] += 1
                if owned:
                    self.sends.append((req, payload))
        if where == BULK and not owned:
            self.wait(req.Test, "a large transfer to be taken", busy=True)

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

    def ring(self, proc: int, tid: int, index: int) -> bool:
        """Ring ``proc``'s doorbell for notify ``index`` of its channel end ``tid`` (it is handled
        after every message sent to ``proc`` before); False when ``proc`` has no doorbell here or
        its ring is full (send a message instead: ``proc`` handles it after the rings before it,
        and never blocks this process as a wait for room could)."""
        bell = self.bells.get(proc)
        if bell is None or not bell.room():
            return False
        with self.lock:
            bell.ring(tid, index, self.sent_to[proc])
            self.sent += 1
            self.rung += 1
        return True

    def root_number(self) -> int:
        """A root number no Sim of this process had before (the low bits of the root ids it
        makes: one id names one world in the whole job, whichever Sim of the process made it)."""
        with self.lock:
            self.roots_made += 1
            return self.roots_made

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
        MPI, comm, st = self.MPI, self.comm, self.status
        before = self.received
        mailbox = self.mailbox
        handled = self._all_rings()  # rings first (one whose messages are still to come waits for them)
        if handled and not self.rang_last:
            # rings handled: what they wake runs first, messages wait for the next call (a probe
            # less on a notify's path; never twice in a row, so messages wait one call at most)
            self.rang_last = True
            self._served(handled, before)
            return handled
        self.rang_last = False
        probe = comm.Iprobe         # a third of Improbe's cost when nothing came (the usual case)
        while probe(MPI.ANY_SOURCE, TAG):
            msg = comm.Improbe(MPI.ANY_SOURCE, TAG, st)
            if msg is None:
                break
            src = st.Get_source()
            n = st.Get_count(MPI.BYTE)
            buf = self.rbuf if n <= len(self.rbuf) else np.empty(n, np.uint8)
            msg.Recv([buf, n, MPI.BYTE])
            self.last_seen[src] = time.monotonic()
            if self.ringers and mailbox.pending(src):
                handled += self._rings(src)     # rung before this message was sent
            self.recv_from[src] += 1
            kind = buf[0]
            if kind == 68:      # "D"
                self.received += 1
                self._dispatch_data(src, buf, n)
            elif kind == 67:    # "C"
                if buf[1]:
                    self.received += 1
                self._dispatch_ctrl(src, pickle.loads(buf[8:n].tobytes()))
            else:
                raise LinkError(f"process {self.me}: unexpected message kind {kind} from process {src}")
            handled += 1
        if handled:                 # (rings that waited for the messages just received)
            handled += self._all_rings()
        self._served(handled, before)
        return handled

    def _served(self, handled: int, before: int) -> None:
        """The end of a :meth:`serve`: heartbeats, idleness, sends complete."""
        if self.beat is not None:
            now = time.monotonic()
            if now - self.beats_heard >= _HEAR_BEATS:
                self.beats_heard = now
                self._hear_beats()
        if handled:
            self.idle_spins = 0
            if self.pending_confirm is not None and self.received != before:
                self._answer_confirm(False)   # work arrived: not idle any more
        if self.sends:
            self._reap()

    def recv_bulk(self, src: int, into) -> None:
        """Receive the payload that follows a header from ``src`` into ``into`` (a uint8 array)."""
        self.comm.Recv(into, src, TAG)
        self.recv_from[src] += 1

    def _all_rings(self) -> int:
        """Handle the rings of every process that rings this one (see :meth:`_rings`); returns how many."""
        handled = 0
        mailbox = self.mailbox
        for p in self.ringers:
            if mailbox.pending(p):
                handled += self._rings(p)
        return handled

    def _rings(self, src: int) -> int:
        """Handle the rings of ``src`` whose messages before them all arrived; returns how many."""
        take, received, routes = self.mailbox.take, self.recv_from[src], self.routes_end
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
        op, tid, addr, size, aux, reqid, where, extra = (int(x) for x in buf[8:HDR].view(np.int64))
        inline = buf[HDR:n] if where == INLINE else None
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
            if t is None:
                if where == BULK:
                    self.recv_bulk(src, np.empty(size, np.uint8))
                if op == GET:
                    self.send_data(src, GOT, 0, 0, 0, reqid=reqid)
                return
            t.on_data(src, op, tid, addr, size, aux, reqid, where, extra, inline)

    def _dispatch_ctrl(self, src, msg) -> None:
        kind = msg[0]
        if kind == "state":
            self.states[src] = msg[1]
            self.gone.discard(src)
            self._coordinate()
        elif kind == "confirm":
            self.pending_confirm = msg[1]
        elif kind == "answer":
            self._on_answer(src, *msg[1:])
        elif kind == "stuck":
            self.verdict = (msg[1], msg[2])

        elif kind == "abort":
            for p in msg[3] if len(msg) > 3 else ():    # processes the sender found dead
                if p != self.me and p not in self.dead:
                    self.dead[p] = msg[1]
            self._on_abort(msg[1], msg[2])
        elif kind == "bye":
            self.byes.add(src)
        elif kind == "hello":
            bell = None
            if self.mailbox is not None:    # (without shared memory of its own, a process uses none)
                bell = mpi_shm.Doorbell.attach(msg[1:], self.me, self.nprocs, self.shm_backend)
            if bell is not None:
                self.near.add(src)
                if mpi_shm.RINGS:
                    self.bells[src] = bell
                    self.send_ctrl(src, ("ringing",), counted=False, fence=False)
        elif kind == "ringing":
            if self.mailbox is not None and src not in self.ringers:
                self.ringers.append(src)
        elif kind == "gather":
            self.gathers.setdefault(msg[1], {})[src] = msg[2]
        elif kind == "exit":
            if src == self.coordinator():
                self.idle_state = None  # the next coordinator has not heard this process yet
            self.gone.add(src)
            self.states[src] = msg[1]
            self._coordinate()
        else:
            route = self.routes_root.get(msg[1]) if len(msg) > 1 else None
            target = route or self.handlers
            if target is not None:
                target.on_ctrl(src, msg)

    # -- waiting ---------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`LinkError` when the job was aborted or a process died."""
        if self.abort_reason is not None:
            raise LinkError(self.abort_reason)
        self._check_liveness()
        if self.abort_reason is not None:
            raise LinkError(self.abort_reason)

    def wait(self, done, what: str, busy: bool = False) -> None:
        """Serve messages until ``done()`` holds (a transfer's answer); raises :class:`LinkError`
        when the job is aborted or a process dies first. ``busy``: see :func:`_pause`."""
        since = None
        while not done():
            if self.serve():
                since = None
                continue
            self.check()
            now = time.monotonic()
            if since is None:
                since = now
            _pause(now - since, busy)

    def watch(self) -> int:
        """Spin until a message or ring arrives, while the current wait is young (less than
        ``_SPIN`` idle, as :meth:`poll_pause` counts it), and handle what came (:meth:`serve`);
        returns how many. A turn costs a fraction of a scheduler's idle round (which also looks
        for timeouts and hangs), so an answer that comes within microseconds is handled sooner."""
        now = time.monotonic()
        if self.idle_spins and now - self.paused_at <= _NEW_IDLE:
            until = self.waiting_since + _SPIN
        else:
            until = now + _SPIN
        mailbox, ringers = self.mailbox, self.ringers
        probe, anysrc, monotonic = self.comm.Iprobe, self.MPI.ANY_SOURCE, time.monotonic
        while now < until:
            for p in ringers:
                if mailbox.pending(p):
                    return self.serve()
            if probe(anysrc, TAG):
                return self.serve()
            now = monotonic()
        return 0

    def poll_pause(self) -> None:
        """An idle caller's pause (see :func:`_pause`), by how long this process has been waiting:
        since the last message or ring it handled, or since its previous pause ended more than
        ``_NEW_IDLE`` ago (it did something else meanwhile, e.g. left the wait: a new wait spins
        again instead of sleeping at once). (Hang detection counts the idle time from the last
        message or ring alone.)"""
        now = time.monotonic()
        if self.idle_spins == 0:
            self.idle_since = now
        if self.idle_spins == 0 or now - self.paused_at > _NEW_IDLE:
            self.waiting_since = now
        self.idle_spins += 1
        _pause(now - self.waiting_since)
        self.paused_at = time.monotonic()

    # -- failures --------------------------------------------------------------------------------
    def abort_all(self, reason: str, rank=None) -> None:
        """This process failed (``rank`` of it, when known): tell every other process (their
        blocking calls give up naming it). A failure that follows an abort passes the first cause
        on instead (a rank that gave up because another died is not the origin)."""
        if self.abort_reason is None:
            self.abort_reason, self.abort_rank = reason, rank
        else:
            reason, rank = self.abort_reason, self.abort_rank
        for p in range(self.nprocs):
            if p != self.me and p not in self.dead:
                try:
                    self.send_ctrl(p, ("abort", reason, rank, tuple(self.dead)), counted=False, fence=False)
                except Exception:  # noqa: BLE001 - best effort: the job is failing anyway
                    pass

    def _on_abort(self, reason: str, rank=None) -> None:
        if self.abort_reason is None:
            self.abort_reason, self.abort_rank, self.abort_remote = reason, rank, True
            for t in set(self.routes_root.values()) | ({self.handlers} - {None}):
                t.on_abort(reason)

    def ranks_of(self, proc: int) -> str:
        ranks = sorted(self.owners.get(proc, ()))
        if not ranks:
            return f"MPI process {proc}"
        return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} (MPI process {proc})"

    def _hear_beats(self) -> None:
        MPI, comm, st = self.MPI, self.comm, self.status
        one = self.rbuf[:8]
        while True:
            msg = comm.Improbe(MPI.ANY_SOURCE, TAG_BEAT, st)
            if msg is None:
                return
            msg.Recv([one, 8, MPI.BYTE])
            self.last_seen[st.Get_source()] = time.monotonic()

    def _check_liveness(self) -> None:
        if self.beat is None or not self.liveness:
            return
        now = time.monotonic()
        for p, seen in list(self.last_seen.items()):
            if p in self.byes or p in self.dead or now - seen < self.liveness:
                continue
            why = f"{self.ranks_of(p)} died: no sign of life for {self.liveness:g} s (PYHCOMM_MPI_LIVENESS)"
            self.dead[p] = why
            self.idle_state = None
            ranks = sorted(self.owners.get(p, ()))
            self._on_abort(why, ranks[0] if ranks else None)

    def _beat(self) -> None:
        buf = np.zeros(8, np.uint8)
        period = max(0.05, self.liveness / 4)
        reqs = []
        while not self._stop.wait(period):
            reqs = [r for r in reqs if not r.Test()]
            for p in range(self.nprocs):
                if p != self.me and p not in self.byes and p not in self.dead:
                    reqs.append(self.comm.Isend(buf, p, TAG_BEAT))
        for r in reqs:
            r.Test()

    def close(self) -> None:
        """At exit, in two phases, so that no message is left unreceived (``MPI_Finalize`` of
        MPICH then never returns): say ``exit`` and serve until every other process said it too
        (this process's memory stays readable meanwhile); stop the heartbeats, say ``bye`` and
        take everything until each other process's ``bye``. A dead process is not waited for;
        after a death, leave at once (``MPI_Finalize`` would wait for the dead process forever)."""
        if self._stop.is_set():
            return
        try:
            told = None
            since = time.monotonic()
            while True:
                others = self._others()
                counts = (self.sent, self.received)
                if told != counts:
                    told = counts
                    for p in others:
                        self.send_ctrl(p, ("exit", counts), counted=False, fence=False)
                if all(p in self.gone for p in others):
                    break
                if self.abort_reason is not None and time.monotonic() - since > max(self.liveness, 5.0):
                    for p in others:    # an aborted job: who is still silent is gone (it may have died
                        if p not in self.gone:  # before this process ever heard from it)
                            self.dead[p] = f"{self.ranks_of(p)} did not leave with the others"
                    break
                self._idle_wait()
            self._stop.set()
            if self.beat is not None:
                self.beat.join(5.0)
            for p in self._others():
                self.send_ctrl(p, ("bye",), counted=False, fence=False)
            while not all(p in self.byes for p in self._others()):
                self._idle_wait()
            while self.serve():     # (one call may leave messages for the next: see _serve)
                pass
            self._hear_beats()
            deadline = time.monotonic() + 5.0
            while self.sends and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.001)
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
        self._stop.set()
        if self.dead:
            sys.stdout.flush()
            sys.stderr.flush()
            _unlink_mpi_segments()
            os._exit(1)

    def _others(self):
        return [p for p in range(self.nprocs) if p != self.me and p not in self.dead]

    def _idle_wait(self) -> None:
        if not self.serve():
            self._check_liveness()
            time.sleep(0.002)

    # -- global idleness (termination detection) -------------------------------------------------
    def coordinator(self) -> int:
        for p in range(self.nprocs):
            if p not in self.gone and p not in self.dead:
                return p
        return self.me

    def world_idle(self) -> bool:
        """Called by an idle scheduler: True once every process of the job is idle with no message
        in flight (then :attr:`verdict` holds every process's hang facts); else pauses a poll
        interval and returns False."""
        if self.serve():
            return False
        self._check_liveness()
        if self.verdict is not None and self.verdict[0] > self.used_verdict:
            self.used_verdict = self.verdict[0]
            self.idle_state = None      # report again: a later hang is a new detection
            return True
        if self.idle_spins and time.monotonic() - self.idle_since >= _REPORT_IDLE:
            # idle a while: tell the coordinator (not at every pause of a busy exchange, where the
            # reports and the waves they start would cost each round trip a round trip more)
            counts = (self.sent, self.received)
            if self.idle_state != counts:
                self.idle_state = counts
                self.send_ctrl(self.coordinator(), ("state", counts), counted=False, fence=False)
            if self.pending_confirm is not None:
                self._answer_confirm(True)
        self.poll_pause()
        return False

    def _answer_confirm(self, idle: bool) -> None:
        wave = self.pending_confirm
        self.pending_confirm = None
        facts = self.snapshotter() if idle and self.snapshotter is not None else None
        self.send_ctrl(self.coordinator(), ("answer", wave, idle, (self.sent, self.received), facts),
                       counted=False, fence=False)

    def _coordinate(self) -> None:
        """Coordinator: when every process reported idle with matching totals, confirm it with
        two waves (the four-counter method: the world is stuck when every process answers idle
        twice, the second wave started after the first ended, with the same counts both times and
        as many messages received as sent)."""
        if self.coordinator() != self.me or self.confirm is not None:
            return
        live = [p for p in range(self.nprocs) if p not in self.dead]
        if any(p not in self.states for p in live):
            return
        if sum(self.states[p][0] for p in live) != sum(self.states[p][1] for p in live):
            return
        waiting = [p for p in live if p not in self.gone]
        if waiting:
            self._wave(waiting, None)

    def _wave(self, procs, expect) -> None:
        self.wave += 1
        self.confirm = (self.wave, {p: None for p in procs}, expect)
        for p in procs:
            self.send_ctrl(p, ("confirm", self.wave), counted=False, fence=False)

    def _on_answer(self, src, wave, idle, counts, facts) -> None:
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
        left = [self.states[p] for p in self.gone if p in self.states and p not in self.dead and p not in got]
        sent = sum(c[0] for c in got.values()) + sum(c[0] for c in left)
        received = sum(c[1] for c in got.values()) + sum(c[1] for c in left)
        if sent != received or (expect is not None and got != expect):
            self._coordinate()               # messages in flight, or something moved: look again
            return
        if expect is None:
            self._wave(list(got), got)       # the second wave, after the first ended
            return
        self.states.clear()
        facts_all = {p: a[1] for p, a in answers.items()}
        for p in answers:
            self.send_ctrl(p, ("stuck", wave, facts_all), counted=False, fence=False)
