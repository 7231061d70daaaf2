"""What an engine is: :class:`Engine`, one description per ``CommEngine`` value and product.

An engine module (one per family: :mod:`.cpu`, :mod:`.aicpu`, :mod:`.aiv`, :mod:`.ccu`) has a
function ``engines(product)`` that returns the descriptions of its engines on ``product``; the
catalogue (:mod:`.catalogue`) asks every module it lists, plus those registered in a Sim, and
the HCOMM and HCCL rules read the result. A description is frozen data: it decides nothing at
run time by itself.

Each engine says:

* ``side``: where the code that uses its thread and channel handles runs: ``HOST`` (host
  programs) or ``DEVICE`` (inside an AI CPU kernel); the other side gets ``HCCL_E_NOT_SUPPORT``;
* ``threads`` (:class:`Threads`): which calls make threads of it and their limits;
* ``channels`` (:class:`Channels`): the protocols its channels may speak and their features;
* ``context``: where its engine contexts (``HcclEngineCtxCreate``) live, ``HOST`` or ``DEVICE``
  memory;
* ``submit`` (:class:`Submit`): how work reaches it and what issuing one entry costs, as
  parameters of the timing model (:mod:`pyhcomm.timing.costs`);
* ``runs``: the task kinds (:mod:`pyhcomm.sim.kinds`) its threads and channels execute on the
  product. The primitives whose legality depends on the engine check it (local operations, the
  non-blocking host transfers, fences); the other kinds are checked by side only;
* ``collectives``: HCCL's own collectives orchestrate on its threads on this product (the product's
  default expansion); ``expansion``: the ``HcclOpExpansionMode`` values that name it, and
  ``expansion_refused`` why those are ``HCCL_E_NOT_SUPPORT`` here (empty: accepted);
* ``counterpart``: the engine of the other side HCCL pairs it with (exports its threads to);
* ``mc2``: MC2 operators (``HcclKfcOpArgsSetCommEngine``) may name it.

An engine compares equal to its ``CommEngine`` value (and hashes like it), so a description can
stand where a value was kept (dictionary keys, comparisons with ``CommEngine`` members).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ....sim import kinds

HOST, DEVICE = "host", "device"

#: Task kinds of the local operations (``HcommLocalCopyOnThread``, ``HcommLocalReduceOnThread``).
LOCAL_OPS = frozenset({kinds.LOCAL_COPY, kinds.LOCAL_REDUCE})
#: Task kinds of thread notifies (``HcommThreadNotifyRecordOnThread`` / ``...WaitOnThread``).
THREAD_SYNC = frozenset({kinds.THREAD_NOTIFY_RECORD, kinds.THREAD_NOTIFY_WAIT})
#: Task kinds that go over a channel (one-sided transfers and channel notifies).
CHANNEL_OPS = frozenset({kinds.WRITE, kinds.READ, kinds.WRITE_REDUCE, kinds.READ_REDUCE, kinds.WRITE_WITH_NOTIFY,
                         kinds.WRITE_REDUCE_WITH_NOTIFY, kinds.CHANNEL_NOTIFY_RECORD, kinds.CHANNEL_NOTIFY_WAIT})
#: The non-blocking host transfers (``HcommWriteNbi`` ...).
HOST_NBI = frozenset({kinds.WRITE_NBI, kinds.READ_NBI, kinds.WRITE_WITH_NOTIFY_NBI})
#: ``HcommFenceOnThread``.
FENCE = frozenset({kinds.FENCE})
#: What an AIV kernel's blocks do (``pyhcomm.sim.aiv``).
AIV_OPS = frozenset({kinds.AIV_KERNEL_LAUNCH, kinds.AIV_LOAD, kinds.AIV_STORE, kinds.AIV_SCALAR_LOAD,
                     kinds.AIV_SCALAR_STORE, kinds.AIV_FLAG_STORE,
                     kinds.AIV_FLAG_LOAD, kinds.AIV_SYNC_ALL, kinds.AIV_KERNEL_END})
#: CCU kernels (``HcommCcuKernelLaunch``: a mission, its moves, events, notifies and loops).
CCU_OPS = frozenset(kinds.CCU_KINDS)

#: ``HCOMM_NOTIFY_MAX_NUM``: notifies per thread.
NOTIFY_MAX = 64
#: ``HCOMM_THREADNUM_MAX_NUM``: threads per acquire call.
THREADS_MAX = 1000


@dataclass(frozen=True)
class Threads:
    """How threads of an engine are made on a product, and their limits (nothing: no threads of
    its own; a handle of another engine's thread may still be exported to it)."""

    acquire: bool = False           # HcclThreadAcquire, HcommThreadAlloc (library-owned streams)
    with_stream: bool = False       # HcclThreadAcquireWithStream (the caller's stream)
    config: tuple = ()              # (engine value, ThreadType) pairs HcclThreadAcquireWithConfig names it by
    dedicated: bool = False         # HcclDedicatedThreadAcquire makes threads of this engine
    notify_max: int = NOTIFY_MAX    # notifies per thread (HcclThreadAcquireWithConfig's configs: up to 65535)
    max_threads: int = THREADS_MAX  # threads per acquire call

    @property
    def any(self) -> bool:
        return self.acquire or self.with_stream


@dataclass(frozen=True)
class Channels:
    """The channels of an engine on a product (no protocol: no channels)."""

    protocols: frozenset = frozenset()   # HcclChannelAcquire / HcommChannelCreate
    library: frozenset = frozenset()     # HCCL's own collectives, on products without HCOMM
    collective: tuple = ()               # the protocols HCCL's collectives use on it, best first
    notifies: int | None = None          # a fixed notify count per end (None: the descriptor's notifyNum)
    destroyable: bool = False            # HcclChannelDestroy releases them (else they live with the comm)
    shared_queue: bool = False           # HCOMM_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE may be set
    load_store: bool = False             # its kernels load and store what the peer exposes (AIV)
    timed_waits: frozenset = frozenset()  # protocols whose channel notify waits refuse timeOut 0 (wait for ever)
    cke_bits: int = 0                    # each end also has ``notifies`` sync registers of this many bits
    variables: int = 0                   # ... and this many variable slots its peer writes (a CCU's)


@dataclass(frozen=True)
class Submit:
    """How work reaches the engine, and what issuing one entry costs the program that issues it.

    ``cost`` and ``batch_cost`` name parameters of the timing model (fields of
    :class:`pyhcomm.timing.costs.CostModel`, or an engine's own parameter, whose value is
    ``default`` unless a model sets it): seconds per entry, and per task added to an HCOMM batch
    (None: batching costs the same)."""

    how: str                        # in words: "host program", "AI CPU kernel", ...
    cost: str                       # the timing-model parameter: seconds per entry issued
    batch_cost: str | None = None   # the same for a task added to an HCOMM batch
    default: float | None = None    # the value of an engine's own parameter
    anywhere: bool = False          # ``cost`` prices its entries from either side (else from its own)


@dataclass(frozen=True, eq=False)
class Engine:
    """One engine on one product (see the module docstring)."""

    value: int
    name: str
    side: str
    context: str
    submit: Submit
    threads: Threads = Threads()
    channels: Channels = Channels()
    runs: frozenset = frozenset()
    collectives: bool = False
    expansion: tuple = ()
    expansion_refused: str = ""
    counterpart: int | None = None
    mc2: bool = False
    family: str = ""                # the module that describes it
    doc: str = field(default="", repr=False)   # one line for ``python -m pyhcomm products``

    def __post_init__(self):
        if self.side not in (HOST, DEVICE) or self.context not in (HOST, DEVICE):
            raise ValueError(f"engine {self.name}: side and context must be {HOST!r} or {DEVICE!r}")
        object.__setattr__(self, "runs", frozenset(self.runs))

    @property
    def host_side(self) -> bool:
        """Whether its handles are used by host code (else inside a kernel)."""
        return self.side == HOST

    def __index__(self) -> int:
        return self.value

    __int__ = __index__

    def __eq__(self, other):
        if isinstance(other, Engine):
            return self.value == other.value
        if isinstance(other, int) and not isinstance(other, bool):
            return self.value == other
        return NotImplemented

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"<Engine {self.name} ({self.value}) {self.side}>"
