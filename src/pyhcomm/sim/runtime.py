"""Runtime state: the selected product, the simulated devices, and each OS thread's context.

Models CANN's process-level runtime: ``aclrtSetDevice`` opens a device (reference counted per
process) and makes it current for the calling host program; ``aclrtResetDevice`` drops one reference
and, at zero, releases the device's streams and memory. Code running inside an AI CPU kernel is
"device side" (:func:`on_device_side`).
"""
from __future__ import annotations

import contextvars
import threading

from .. import sim as _sim_mod
from ..errors import log
from ..products import DEFAULT_PRODUCT, Product, find_product
from . import _var as _sim_var
from . import current_sim, memory
from .stream import Stream


class Device:
    """One simulated NPU: its streams, its memory, its default stream."""

    def __init__(self, device_id: int, product: Product):
        self.id = device_id
        self.product = product
        self.refcount = 0
        self.streams: dict[int, Stream] = {}
        self.default_stream = self.new_stream("default stream")

    def new_stream(self, label="stream") -> Stream:
        s = Stream(self.id, label)
        self.streams[s.handle] = s
        return s

    def __repr__(self):
        return f"<Device {self.id} {self.product.name}>"


class ProgramContext:
    """What one host program (an OS thread, a rank's greenlet) or one AI CPU kernel has of its own:
    its current device, the kernel it runs in (device side when set), its open HCOMM batch, its
    ``HcommSetNotifyWaitTimeOut``, its most recent error message (``recent_error``, what
    ``aclGetRecentErrMsg`` returns and clears) and the last error logged for it (``last_error``,
    kept: what a failing rank's :class:`~pyhcomm.spmd.RankError` quotes), whether HCCL's own
    collectives are issuing data-plane calls now (``library``, see :func:`library_calls`) and its
    open ``HcclGroupStart`` group (:mod:`pyhcomm.collectives.group`). ``program`` numbers it (1, 2,
    ... per Sim, in order of creation): the record's ``program`` of what it issues."""

    __slots__ = ("sim", "device", "kernels", "batch", "wait_timeout", "recent_error", "last_error", "library", "group",
                 "program")

    def __init__(self, sim):
        self.sim = sim
        self.program = next(sim.program_ids)
        self.device: int | None = None
        self.kernels: list = []      # the running kernel launch (device side when non-empty)
        self.batch = None            # the open HCOMM batch
        self.wait_timeout = None     # HcommSetNotifyWaitTimeOut (seconds)
        self.recent_error = ""       # aclGetRecentErrMsg (cleared when read)
        self.last_error = ""         # the last failure logged at ERROR (kept)
        self.library = 0             # depth of library_calls() scopes
        self.group = None            # collectives.group.Group, once HcclGroupStart was called


_program_var: contextvars.ContextVar = contextvars.ContextVar("pyhcomm_program")
#: The same variable, for hot paths that inline :func:`program_ctx`'s common case.
program_var = _program_var


def program_ctx() -> ProgramContext:
    """The calling host program's (or kernel's) context in the current Sim; created on first use."""
    c = _program_var.get(None)
    if c is not None and c.sim is _sim_var.get(_sim_mod._default):
        return c
    c = ProgramContext(current_sim())
    _program_var.set(c)
    return c


def note_error(message: str, logged: bool = True) -> None:
    """A call of the calling program failed with ``message``: it becomes the program's most recent
    error (``aclGetRecentErrMsg``) and, when it was ``logged`` at ERROR, its last error (what a
    :class:`~pyhcomm.spmd.RankError` of its rank quotes)."""
    c = program_ctx()
    c.recent_error = message
    if logged:
        c.last_error = message


def report_failure(exc) -> None:
    """Log a failed call's error (``exc``) at ERROR for the calling program and note it
    (:func:`note_error`). While an abort is in force (another rank failed), the failure follows
    from it: the first one logs the abort in one line, the others only at INFO."""
    message = str(exc)
    sched = program_ctx().sim.scheduler
    if sched.abort_reason is None:
        log.error("%s", message)
        note_error(message)
        return
    if sched.abort_follow_on():
        log.error("aborted (%s): the calls that fail because of it are logged at INFO", sched.abort_reason)
    log.info("%s", message)
    note_error(message, logged=False)


def set_program_ctx(c: ProgramContext) -> None:
    """Install ``c`` as the calling context's program context (a kernel actor's own)."""
    _program_var.set(c)


class Runtime:
    """The runtime of one Sim: product, visible devices, open devices."""

    def __init__(self, sim, product=None, chosen: bool = False):
        self.sim = sim
        self.lock = threading.RLock()
        self.initialized = False
        cfg = sim.config
        self.product: Product = find_product(product or cfg.product or DEFAULT_PRODUCT)
        self.product_chosen = chosen    # True once set_product() was called by the user
        self.device_count = self._default_count(self.product)
        self.devices: dict[int, Device] = {}
        #: Notifies created from now on count records instead of coalescing them (an option; the
        #: hardware's 1-bit behaviour is the default). ``PYHCOMM_NOTIFY_COUNTING=1`` sets it.
        self.notify_counting = cfg.notify_counting

    def _default_count(self, product: Product) -> int:
        n = self.sim.config.device_count
        return n if n else max(product.devices_per_server, 16)

    # -- product -------------------------------------------------------------------------------
    def set_product(self, name, device_count: int | None = None, chosen: bool = True) -> Product:
        """Select the simulated product; only while no device is open."""
        product = find_product(name)
        with self.lock:
            if self.devices:
                raise RuntimeError(
                    f"cannot switch to {product.name!r}: devices {sorted(self.devices)} are open "
                    "(reset them, or call aclFinalize, first)")
            self.product = product
            self.product_chosen = self.product_chosen or chosen
            self.device_count = device_count or self._default_count(product)
        return product

    # -- devices -------------------------------------------------------------------------------
    def open_device(self, device_id: int) -> Device:
        with self.lock:
            dev = self.devices.get(device_id)
            if dev is None:
                dev = self.devices[device_id] = Device(device_id, self.product)
            dev.refcount += 1
        program_ctx().device = device_id
        self.sim.scheduler.register_host()
        return dev

    def close_device(self, device_id: int) -> bool:
        """Drop one reference; release the device at zero. False if it was not open."""
        with self.lock:
            dev = self.devices.get(device_id)
            if dev is None:
                return False
            dev.refcount -= 1
            released = dev.refcount <= 0
            if released:
                self._release(dev)
        ctx = program_ctx()
        if released and ctx.device == device_id:
            ctx.device = None
        return True

    def _release(self, dev: Device) -> None:
        """Release ``dev``, in this order: its streams (what they still queue is skipped), what
        the layers above hold of it (each layer state's ``release_device``, the most recently
        made state first, as a stack unwinds: HCCL destroys the communicators on it, the acl
        runtime drops its notifies), then its memory."""
        sim = self.sim
        stream_handles = sim.handles.streams
        for s in dev.streams.values():
            sim.scheduler.drop_stream(s)
            stream_handles.remove(s.handle)
        for state in reversed(sim.layer_states()):
            state.release_device(sim, dev.id)
        memory.release_device_memory(dev.id)
        del self.devices[dev.id]

    def current_device(self) -> Device | None:
        d = program_ctx().device
        return None if d is None else self.devices.get(d)

    def reset(self) -> None:
        """Close every device and forget all state (``aclFinalize``; also used by tests)."""
        with self.lock:
            for dev in list(self.devices.values()):
                dev.refcount = 0
                self._release(dev)
            self.initialized = False
        self.sim.scheduler.reset()
        program_ctx().device = None


def on_device_side() -> bool:
    """True while the caller runs inside an AI CPU kernel."""
    return bool(program_ctx().kernels)


class library_calls:
    """Scope in which HCCL's own collectives issue data-plane calls (threads, channels, tasks).

    HCCL runs its collectives on products whose public HCOMM primitives are outside the seed's
    support table (Atlas training / inference series, Atlas 800I A2): there the library drives
    the data plane itself. Inside this scope the product check of the primitives passes; user
    calls outside it keep getting ``HCCL_E_NOT_SUPPORT``. Re-entrant; per host program.
    """

    __slots__ = ("ctx",)

    def __enter__(self):
        self.ctx = program_ctx()
        self.ctx.library += 1
        return self

    def __exit__(self, *exc):
        self.ctx.library -= 1
        return False


def in_library() -> bool:
    """True inside :class:`library_calls` (HCCL's collectives drive the data plane)."""
    return bool(program_ctx().library)
