"""The simulated machine: one :class:`Sim` owns all of its state.

A Sim holds the configuration, the runtime (product, devices), the address spaces, the handle
tables, the record, the scheduler, the backend that moves bytes, the transport between ranks and
the control-plane registries (roots, channel pairs, runtime notify ids, open batches). Nothing
else in pyhcomm keeps state between calls.

Code finds the Sim it runs in with :func:`current_sim`, through a ``contextvars`` variable: each
``pyhcomm.launch`` runs its ranks (OS threads or greenlets) in a context whose Sim is its own;
everything else uses the process's default Sim, which ``pyhcomm.reset()`` replaces with a new one.
Handle and address values depend only on what was done in a Sim, so they are deterministic.
"""
from __future__ import annotations

import contextvars
import itertools
import threading

_var: contextvars.ContextVar = contextvars.ContextVar("pyhcomm_sim")
_default = None


def current_sim() -> "Sim":
    """The Sim the caller runs in (the launch's, else the process default)."""
    return _var.get(_default)


def context_sim():
    """The Sim the calling context was given (:func:`enter`, a launch), None when it uses the
    process default."""
    return _var.get(None)


def set_default_sim(sim: "Sim") -> None:
    """Make ``sim`` the Sim of every context that has none of its own."""
    global _default
    _default = sim


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

    def __init__(self, config=None, *, product=None, scheduler=None, data=None, seed=None,
                 backend=None, transport=None, product_chosen=False):
        from ..backend import make_backend
        from ..config import Config
        from ..sched import make_scheduler
        from ..transport.local import LocalTransport
        from .handles import Handles
        from .memory import AddressSpace
        from .record import Record
        from .runtime import Runtime

        self.config = config if config is not None else Config.from_env()
        if data is not None:
            self.config = self.config.with_values(data=bool(data))
        if seed is not None:
            self.config = self.config.with_values(seed=int(seed))
        self.data = self.config.data
        self.lock = threading.RLock()           # control plane (rendezvous, pairing, registries)
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
        self.runtime_notifies: dict = {}        # runtime notify id -> AclNotify
        self.notify_ids = itertools.count(1)
        self.open_batches: set = set()
        self.comm_holders: dict = {}            # Communicator -> KernelContext (HcommAcquireComm)
        self.module_ids = itertools.count()
        self.program_ids = itertools.count(1)   # host programs and kernels (HostContext.program)
        self.control: dict = {}                 # further registries, one per feature (see registry())

    def registry(self, feature: str, factory=dict):
        """The control-plane registry of ``feature`` (made with ``factory`` on first use)."""
        with self.lock:
            reg = self.control.get(feature)
            if reg is None:
                reg = self.control[feature] = factory()
            return reg

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
