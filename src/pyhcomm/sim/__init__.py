"""The simulated machine: one :class:`Sim` owns all of its state.

A Sim holds the configuration, the runtime (product, devices), the address spaces, the handle
tables, the record, the scheduler, the backend that moves bytes, the transport between ranks, the
hang report, the observers of the launches made in it, the control-plane registries (roots, open
batches) and the state each layer above keeps in it (:meth:`Sim.layer_state`). Nothing else in pyhcomm keeps state between calls.

Code finds the Sim it runs in with :func:`current_sim`, through a ``contextvars`` variable: each
``pyhcomm.launch`` runs its ranks (OS threads or greenlets) in a context whose Sim is its own;
everything else uses the process's default Sim, made on first use (importing pyhcomm makes none),
which ``pyhcomm.reset()`` replaces with a new one. Handle and address values depend only on what
was done in a Sim, so they are deterministic.
"""
from __future__ import annotations

import contextvars
import itertools
import threading

from .task import TaskState

_var: contextvars.ContextVar = contextvars.ContextVar("pyhcomm_sim")
_default = None             # the process's default Sim, once made
_default_lock = threading.Lock()
_factory = None             # makes the default Sim (set_default_factory; None: Sim())


def current_sim() -> "Sim":
    """The Sim the caller runs in (the launch's, else the process default, made now if there is none)."""
    sim = _var.get(_default)
    return sim if sim is not None else _make_default()


def _make_default() -> "Sim":
    global _default
    with _default_lock:
        if _default is None:
            _default = (_factory or Sim)()
        return _default


def existing_sim():
    """The Sim the caller runs in, or None while it has none and there is no default Sim yet
    (makes none: a caller that only looks)."""
    return _var.get(_default)


def default_sim(create: bool = True):
    """The process's default Sim (made now when ``create``; else None while there is none)."""
    return _make_default() if create and _default is None else _default


def context_sim():
    """The Sim the calling context was given (:func:`enter`, a launch), None when it uses the
    process default."""
    return _var.get(None)


def set_default_sim(sim: "Sim") -> None:
    """Make ``sim`` the Sim of every context that has none of its own."""
    global _default
    _default = sim


def set_default_factory(factory) -> None:
    """How the default Sim is made on first use: ``factory()`` returns it (the package's facade
    gives one that also attaches the verifier to it; ``pyhcomm.reset()`` makes its Sims the same way)."""
    global _factory
    _factory = factory


def enter(sim: "Sim"):
    """Make ``sim`` current in the calling context; returns a token for :func:`leave`."""
    return _var.set(sim)


def leave(token) -> None:
    _var.reset(token)


def context_for(sim: "Sim") -> contextvars.Context:
    """A fresh context in which ``sim`` is current (for a rank's OS thread or greenlet)."""
    ctx = contextvars.Context()
    ctx.run(_var.set, sim)
    return ctx


class LayerState:
    """Base of the per-layer state classes (see :meth:`Sim.layer_state`)."""

    def release_device(self, sim: "Sim", device_id: int) -> None:
        """Device ``device_id`` of ``sim`` is being released: drop what this layer holds of it."""


class Sim:
    """One simulated machine (see the module docstring).

    Args:
        config: a :class:`pyhcomm.config.Config` (default: parsed from the environment).
        product: a product name or :class:`pyhcomm.products.Product` (default: the config's).
        scheduler: ``"threaded"`` or ``"coop"`` (default: the config's, ``PYHCOMM_SCHEDULER``).
        data: False for data-less mode (ranges checked and recorded, no byte moves).
        seed: the cooperative scheduler's policy seed.
        backend, transport: instances to use instead of the defaults.
    """

    #: The values of ``task.state`` (owned here; the scheduler sets them as it runs tasks).
    task_states = TaskState

    def __init__(self, config=None, *, product=None, scheduler=None, data=None, seed=None,
                 backend=None, transport=None, product_chosen=False):
        from ..backend import make_backend
        from ..config import Config
        from ..errors import configure_logging
        from ..sched import make_scheduler
        from ..transport.local import LocalTransport
        from .handles import Handles
        from .hang import HangReport
        from .memory import AddressSpace
        from .record import Record
        from .runtime import Runtime

        self.config = config if config is not None else Config.from_env()
        if data is not None:
            self.config = self.config.with_values(data=bool(data))
        if seed is not None:
            self.config = self.config.with_values(seed=int(seed))
        configure_logging(self.config.log_level)    # (the first Sim of the process does it)
        self.data = self.config.data
        self.lock = threading.RLock()           # control plane (rendezvous, pairing, registries)
        self.hang_report = HangReport(self)
        self.handles = Handles()
        self.memory = AddressSpace()
        self.record = Record(self.config.record_capacity)
        self.backend = backend if backend is not None else make_backend(self.config)
        self.runtime = Runtime(self, product, product_chosen)
        self.scheduler = make_scheduler(scheduler or self.config.scheduler or "threaded", self)
        if transport is None:
            if self.config.use_mpi:
                from ..transport.mpi import MpiTransport
                transport = MpiTransport(self)
            else:
                transport = LocalTransport(self)
        self.transport = transport
        # control-plane registries
        self.roots: dict = {}                   # root id (the transport's) -> this process's World
        self.open_batches: set = set()
        self.module_ids = itertools.count()     # names of the kernel modules loaded (aclrtBinaryLoad*)
        self.program_ids = itertools.count(1)   # host programs and kernels (ProgramContext.program)
        #: Observers of the launches made while this Sim is current (:class:`pyhcomm.spmd.LaunchObserver`).
        self.launch_observers: list = []
        self._layers: dict = {}                 # state class -> its instance (see layer_state)

    def layer_state(self, cls):
        """The state the layer owning ``cls`` keeps in this Sim: ``cls()``, made on first use.

        Each layer above the simulated machine declares its own state class (a dataclass:
        :class:`pyhcomm.aclrt.state.AclrtState`, :class:`pyhcomm.hccl.state.HcclState` ...) and
        reaches it through an accessor of its own; the Sim never imports them. A state that holds
        objects of a device (a :class:`LayerState` whose ``release_device`` does something) is
        asked to release them when the device is released, the most recently made state first.
        """
        state = self._layers.get(cls)
        if state is None:
            with self.lock:
                state = self._layers.get(cls)
                if state is None:
                    state = self._layers[cls] = cls()
        return state

    def layer_states(self) -> list:
        """The layer states made so far, in the order they were made."""
        return list(self._layers.values())

    def context(self) -> contextvars.Context:
        """A fresh context in which this Sim is current (for a host program or a kernel actor)."""
        return context_for(self)

    def reload_config(self, env=None) -> None:
        """Parse the environment again (``aclInit`` does; tests that change it do), keeping the
        data and seed options given to the constructor."""
        from ..config import Config
        self.config = Config.from_env(env).with_values(data=self.config.data, seed=self.config.seed)

    @property
    def product(self):
        return self.runtime.product

    def __repr__(self):
        return (f"<Sim {self.runtime.product.name} scheduler={self.scheduler.name} "
                f"data={'on' if self.data else 'off'} devices={sorted(self.runtime.devices)}>")
