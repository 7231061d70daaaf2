"""Shared memory between the processes of an MPI job on one machine: who is on this machine, and
the doorbells that carry remote notifies without a message.

**Same machine.** Every process says hello to every other one (:meth:`Near.hello`): its host key
(host name and boot id), its pid and the handle of its mailbox (memory another process maps:
:meth:`~pyhcomm.backend.CpuBackend.allocate_shared`). A process that gets a hello with its own
host key maps the sender's mailbox and checks the random token the sender wrote there: only then
is the sender *near* (same machine, same process namespace), and this process writes into its
exposed memory directly and rings its doorbell instead of sending messages.

**Doorbells.** A mailbox holds one ring per sending process: slots of ``(channel end id, notify
index, order)`` and a head the sender advances; the owner polls the heads and keeps a tail per
sender (written back: the sender's room). ``order`` is how many messages the sender had sent
this process before the ring: the owner handles a ring only once it has received that many from
the sender, and before it handles the next one, so rings and messages keep the sender's order
(a remote notify follows the writes before it, whichever way they went). A ring is an 8-byte
store after the slot's stores: the other process sees them in that order on x86-64 (TSO) only,
so elsewhere notifies stay messages (:data:`RINGS`).

:class:`Near` is what a process's link knows of this: its mailbox, the near processes, the
doorbells it rings and the processes that ring it (the link rings and takes the rings,
:mod:`.mpi_link`).
"""
from __future__ import annotations

import os
import platform
import secrets
import socket

from ..backend.cpu import CpuBackend

#: slots of one sender's ring (a sender with that many rings unhandled sends messages instead)
RING = 1024
MAGIC = 0x50594843_4F4D4D31     # "PYHCOMM1"
_HEAD, _TOKEN, _NPROCS = 8, 1, 3    # words: the heads start at 8, the token at 1-2, nprocs at 3
_LINE = 8                           # words per head / tail (one cache line: no false sharing)

#: rings need stores seen in program order by another process (x86-64's TSO)
RINGS = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def host_key() -> str:
    """This machine, as the processes on it see it: host name and boot id."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        boot = "?"
    return f"{socket.gethostname()}/{boot}"


class Layout:
    """Word offsets in a mailbox of ``nprocs`` senders."""

    def __init__(self, nprocs: int):
        self.nprocs = nprocs
        self.tails = _HEAD + _LINE * nprocs
        self.slots = self.tails + _LINE * nprocs
        self.words = self.slots + 3 * RING * nprocs

    def head(self, p: int) -> int:
        return _HEAD + _LINE * p

    def tail(self, p: int) -> int:
        return self.tails + _LINE * p

    def slot(self, p: int, i: int) -> int:
        return self.slots + 3 * (RING * p + i % RING)


def _words(backend: CpuBackend, storage):
    """The mailbox's 64-bit words, through the backend's live view of ``storage``."""
    return memoryview(backend.view(storage, 0, storage.size)).cast("q")


class Mailbox:
    """This process's mailbox: made once per process (:meth:`make`), None where shared memory is
    not available."""

    def __init__(self, storage, nprocs: int, backend: CpuBackend):
        self.storage = storage
        self.layout = Layout(nprocs)
        self.words = _words(backend, storage)
        self.token = (secrets.randbits(63), secrets.randbits(63))
        w = self.words
        w[_TOKEN], w[_TOKEN + 1], w[_NPROCS] = self.token[0], self.token[1], nprocs
        w[0] = MAGIC
        self.tails = [0] * nprocs           # handled so far, per sender
        lay = self.layout
        self._heads = [lay.head(p) for p in range(nprocs)]
        self._tails = [lay.tail(p) for p in range(nprocs)]
        self._slots = [lay.slot(p, 0) for p in range(nprocs)]

    @classmethod
    def make(cls, nprocs: int, backend: CpuBackend):
        storage = backend.allocate_shared(Layout(nprocs).words * 8)
        return None if storage is None else cls(storage, nprocs, backend)

    def hello(self, backend: CpuBackend) -> tuple:
        """What a hello carries: ``(host key, pid, mailbox handle, token)``."""
        return (host_key(), os.getpid(), backend.share(self.storage), self.token)

    def pending(self, p: int) -> bool:
        return self.words[self._heads[p]] != self.tails[p]

    def take(self, p: int, received: int):
        """The next ring of sender ``p`` as ``(end id, notify index)`` when there is one whose
        order is at most ``received`` (messages received from ``p`` so far), else None."""
        t = self.tails[p]
        w = self.words
        if w[self._heads[p]] == t:
            return None
        s = self._slots[p] + 3 * (t % RING)
        if w[s + 2] > received:
            return None
        tid, index = w[s], w[s + 1]
        self.tails[p] = t + 1
        w[self._tails[p]] = t + 1
        return tid, index


class Doorbell:
    """Another process's mailbox, mapped here: this process (``me``) rings it."""

    def __init__(self, storage, me: int, backend: CpuBackend):
        self.storage = storage
        self.words = _words(backend, storage)
        self.layout = Layout(self.words[_NPROCS])
        self.me = me
        self.head = self.words[self.layout.head(me)]
        self._head_at = self.layout.head(me)
        self._tail_at = self.layout.tail(me)
        self._slots = self.layout.slot(me, 0)

    @classmethod
    def attach(cls, hello: tuple, me: int, nprocs: int, backend: CpuBackend):
        """The doorbell a hello offers, or None when this process cannot use it (another
        machine, the mailbox cannot be mapped, or its token or size is not the hello's)."""
        key, _pid, handle, token = hello
        if key != host_key() or handle is None:
            return None
        try:
            storage = backend.attach(handle)
        except (OSError, ValueError, TypeError):
            return None
        w = _words(backend, storage)
        if len(w) <= _NPROCS or (w[0], w[_TOKEN], w[_TOKEN + 1], w[_NPROCS]) != (MAGIC, token[0], token[1], nprocs):
            return None
        return cls(storage, me, backend)

    def room(self) -> bool:
        return self.head - self.words[self._tail_at] < RING

    def ring(self, tid: int, index: int, order: int) -> None:
        """Write a ring (the caller checked :meth:`room`)."""
        w = self.words
        head = self.head
        s = self._slots + 3 * (head % RING)
        w[s], w[s + 1], w[s + 2] = tid, index, order
        self.head = head = head + 1
        w[self._head_at] = head             # last: the owner reads the slot only after this


class Near:
    """The processes of this machine as this one (``me`` of ``nprocs``) knows them: its own
    mailbox (None: no shared memory, then everything goes by messages), the processes whose
    hello it could use (:attr:`procs`), the doorbells it rings and the processes that ring it."""

    def __init__(self, me: int, nprocs: int, backend: CpuBackend, enabled: bool):
        self.me, self.nprocs, self.backend = me, nprocs, backend
        self.mailbox = Mailbox.make(nprocs, backend) if enabled else None
        self.procs: set = set()         # processes whose mailbox this one mapped: same machine
        self.bells: dict = {}           # process -> Doorbell this process rings
        self.ringers: list = []         # processes that ring this one (their rings are polled)
        self.rung = 0                   # rings this process wrote

    def hello(self):
        """The hello to send every other process (``("hello", host key, pid, handle, token)``),
        or None without a mailbox (no hello: messages only)."""
        return None if self.mailbox is None else ("hello",) + self.mailbox.hello(self.backend)

    def on_hello(self, src: int, hello: tuple) -> bool:
        """``src`` said hello: map its mailbox when it is on this machine (then it is near); True
        when this process will ring it (tell it ``ringing``, so that it polls this one's rings).
        Without a mailbox of its own a process uses none."""
        if self.mailbox is None:
            return False
        bell = Doorbell.attach(hello, self.me, self.nprocs, self.backend)
        if bell is None:
            return False
        self.procs.add(src)
        if not RINGS:
            return False
        self.bells[src] = bell
        return True

    def on_ringing(self, src: int) -> None:
        """``src`` rings this process from now on: poll its ring."""
        if self.mailbox is not None and src not in self.ringers:
            self.ringers.append(src)
