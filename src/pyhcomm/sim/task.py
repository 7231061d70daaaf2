"""Tasks: every enqueued operation, recorded as data.

A :class:`Task` says what it is (``kind``: a :class:`~pyhcomm.sim.kinds.Kind`, declared in
:mod:`pyhcomm.sim.kinds` with its traits), where it runs (rank, device, thread, stream, and the
``engine`` of the HCOMM thread that issued it: None for a runtime task), what it touches (byte
ranges read and written, as device addresses), who enqueued it (the user's
``file:line``) and when (``seq``, a global order). The verifier, the trace export and the timing
model read these records; the scheduler runs them through ``fn(*args)``.
"""
from __future__ import annotations

import contextvars
import os
import sys

from .kinds import TASK_KIND, Kind, named


class TaskState:
    """The states of a task (``task.state``): queued, running, ran, failed (its stream failed with
    it), skipped (it sat behind a failure, or in a stream that was dropped). The Sim hands them to
    its scheduler (``sim.task_states``), which sets them as it runs the queues."""

    PENDING, RUNNING, DONE, FAILED, SKIPPED = "pending", "running", "done", "failed", "skipped"


PENDING, RUNNING, DONE, FAILED, SKIPPED = (TaskState.PENDING, TaskState.RUNNING, TaskState.DONE, TaskState.FAILED,
                                           TaskState.SKIPPED)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OPTIONAL = frozenset(("kernel", "batch", "program", "gen", "engine"))



class TaskBase:
    """What every task has; kind-specific fields live in subclasses (class attributes give defaults)."""

    # ``kernel`` (the seq of the KernelLaunch whose kernel issued the task: set on device-side
    # tasks), ``batch`` (the id of the HCOMM batch it was launched from), ``program`` (the
    # issuing host program or kernel, ``ProgramContext.program``) and ``engine`` (the issuing HCOMM
    # thread's ``engine``, whatever object it is) are set where the task is issued; an unset one
    # reads None (``__getattr__``; reading a set slot costs nothing more).
    __slots__ = ("seq", "stream", "thread", "rank", "device", "t_head", "state", "side", "kernel", "batch",
                 "program", "engine")
    entry = "task"      # an entry of the record's issue log that runs on a stream (see HostEffect)
    kind = TASK_KIND
    reads = ()
    writes = ()
    site = None
    ready = None        # callable: False while the task may not run (a wait)
    blocker = None      # callable: why the task cannot run, for hang reports
    timeout = 0.0       # seconds a not-ready task may wait before its stream fails (0 = forever)
    detail = None

    def run(self) -> None:  # pragma: no cover - every kind implements it
        raise NotImplementedError

    def __getattr__(self, name):
        """The optional fields (``kernel``, ``batch``, ``program``, ``gen``, ``engine``) read None
        while unset (the hot-path kinds set them in ``__init__``; this is the net for any other kind)."""
        if name in _OPTIONAL:
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def where(self) -> str:
        """``file:line`` of the user call that enqueued the task."""
        return site_text(self.site)

    def describe(self) -> str:
        who = f"rank {self.rank} " if self.rank is not None else ""
        thr = f"thread 0x{self.thread:x} " if self.thread else ""
        return (f"{self.kind} task #{self.seq} on {who}device {self.device} {thr}"
                f"stream 0x{self.stream.handle:x}, enqueued at {self.where}")

    def __repr__(self):
        return f"<Task #{self.seq} {self.kind} {self.state} stream=0x{self.stream.handle:x}>"


class Task(TaskBase):
    """A general task: its effect is ``fn(*args)``; every field is given at construction. ``kind``
    is a declared :class:`~pyhcomm.sim.kinds.Kind` (or its name); its accessors name ``args``."""

    __slots__ = ("kind", "reads", "writes", "site", "fn", "args", "ready", "blocker", "timeout", "detail")

    def __init__(self, kind, stream, fn, args, reads=(), writes=(), thread=None, rank=None,
                 site=None, ready=None, blocker=None, timeout=0.0, detail=None, side="host", engine=None):
        self.seq = 0
        self.kind = kind if kind.__class__ is Kind else named(kind)
        self.engine = engine
        self.stream = stream
        self.thread = thread
        self.rank = rank
        self.device = stream.device
        self.reads = reads
        self.writes = writes
        self.site = site
        self.fn = fn
        self.args = args
        self.ready = ready
        self.blocker = blocker
        self.timeout = timeout
        self.t_head = None
        self.state = PENDING
        self.detail = detail
        self.side = side

    def run(self) -> None:
        """Execute the task's effect (called by the scheduler when the stream reaches it)."""
        self.fn(*self.args)


class SiteTask(TaskBase):
    """Base of the hot-path task kinds: no per-task tuples (fewer objects for the GC to scan).

    Subclasses store their operands in slots, compute ``reads``/``writes`` on demand and implement
    ``run``. The call site is kept as ``(code, instruction offset)`` in two slots.
    """

    __slots__ = ("code", "lasti")

    def on_thread(self, t, side: str) -> None:
        """Set where the task runs: HCOMM thread ``t``'s stream, device, handle, rank and engine,
        issued from ``side`` (``"host"`` or ``"device"``); pending, not blocked yet."""
        self.stream = t.stream
        self.device = t.device
        self.thread = t.handle
        self.rank = t.rank
        self.engine = t.engine
        self.t_head = None
        self.state = PENDING
        self.side = side

    @property
    def site(self):
        return (self.code, self.lasti) if self.code is not None else None

    def set_site(self, depth: int = 2) -> None:
        """Record the innermost caller outside the pyhcomm package.

        ``depth`` is where the user's frame usually is (frames above this method); the walk goes
        on from there while frames are pyhcomm's own. (A caller that skips a level, e.g. calling a
        ``.raising`` implementation directly, is attributed to its own caller.)
        """
        fixed = _site_var.get()
        if fixed is not None:
            self.code, self.lasti = fixed
            return
        try:
            f = _user_frame(sys._getframe(depth))
        except ValueError:
            f = _user_frame(sys._getframe(1))
        if f is None:
            self.code = None
        else:
            self.code = f.f_code
            self.lasti = f.f_lasti


def call_site():
    """Return the innermost caller outside the pyhcomm package as ``(code, instruction offset)``.

    The line number is worked out only when asked for (:func:`site_location`): computing
    ``f_lineno`` costs microseconds in a long function, and this runs on every primitive.
    """
    fixed = _site_var.get()
    if fixed is not None:
        return fixed
    f = _user_frame(sys._getframe(1))
    if f is None:
        return None
    return (f.f_code, f.f_lasti)


def _user_frame(f):
    """The first frame from ``f`` outwards that is not pyhcomm's own (None: there is none)."""
    own = _own_file
    while f is not None:
        if not own[f.f_code.co_filename]:
            return f
        f = f.f_back
    return None


#: The call site every task issued now is attributed to (set around a collective's algorithm: the
#: user's ``HcclAllGather`` line, found once instead of walking the algorithm's frames per task).
_site_var: contextvars.ContextVar = contextvars.ContextVar("pyhcomm_site", default=None)
#: The same variable, for the task kinds that inline :meth:`SiteTask.set_site`'s common case.
site_var = _site_var


def enter_public_call():
    """Called first thing by a public entry point: when nothing is attributed yet and its caller
    is user code, attribute the tasks issued from now on, in this context, to that caller's line
    (what :func:`call_site` would find by walking out from each task; one frame read instead of
    a walk through every pyhcomm frame per task). Returns a token for :func:`end_attribution`,
    or None (nothing set: ``call_site`` walks as before)."""
    if _site_var.get() is not None:
        return None
    try:
        f = sys._getframe(2)
    except ValueError:          # the entry point is the outermost frame (started from C)
        return None
    code = f.f_code
    return None if _own_file[code.co_filename] else _site_var.set((code, f.f_lasti))


def attribute_to(site):
    """Attribute the tasks issued from now on, in this context, to ``site``; returns a token for
    :func:`end_attribution`."""
    return _site_var.set(site)


def end_attribution(token) -> None:
    _site_var.reset(token)


class _OwnFiles(dict):
    """file name -> whether it is pyhcomm's own, worked out on first lookup (cheaper than comparing
    prefixes on every frame; keyed by the name, whose hash a str keeps, not by the code object,
    whose hash is computed from its contents at every lookup: 0.1 to 0.3 us, more for a long
    module's code)."""

    def __missing__(self, filename: str) -> bool:
        mine = self[filename] = filename.startswith(_PKG_DIR)
        return mine


_own_file = _OwnFiles()


def site_text(site) -> str:
    """``file:line`` of a site from :func:`call_site` (``<unknown>`` for None)."""
    if not site:
        return "<unknown>"
    filename, line = site_location(site)
    return f"{filename}:{line}"


_lines: dict = {}


def site_location(site) -> tuple:
    """``(filename, lineno)`` of a site from :func:`call_site`."""
    code, lasti = site
    key = (id(code), lasti)     # (not the code object: its hash is computed from its contents each time)
    loc = _lines.get(key)
    if loc is None or loc[0] is not code:   # the entry holds its code object: the id is not reused meanwhile
        line = code.co_firstlineno
        for start, end, lineno in code.co_lines():
            if start <= lasti < end and lineno is not None:
                line = lineno
                break
        loc = _lines[key] = (code, code.co_filename, line)
    return loc[1], loc[2]
