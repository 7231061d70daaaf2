"""What a collective algorithm needs, acquired once per communicator and reused: threads, channels
to every peer, the HCCL buffers; and where it runs.

An algorithm is a Python function ``algo(ctx, *args)`` that issues HCOMM primitives on
``ctx.main`` / ``ctx.slaves`` and ``ctx.channel(peer)``, exactly as HCCL's templates do, through
the raising implementations (:mod:`pyhcomm.hcomm`, :mod:`pyhcomm.hccl`): a failure is an
``HcclError``; the flat C tier (:mod:`pyhcomm.capi`) wraps the collectives, not the other way round.
Which engine's threads and channels a collective uses, over which protocols (best first), the
engine descriptions say (:func:`pyhcomm.hcomm.resources.engines.collective_engine`: the engine
whose ``collectives`` holds on the product, its ``channels.collective``; a device-side engine runs
the algorithm in a kernel, with its ``counterpart`` on the user's stream). :func:`run` executes
it the way HCCL does on each product:

* Atlas A2, Atlas training and inference series (host orchestration): the main thread wraps the
  user's stream (CPU_TS); slave threads and channels are CPU_TS; the algorithm runs now, on the
  calling host thread. Where the public HCOMM primitives are outside the seed's support table
  (training and inference series, Atlas 800I A2) HCCL still runs its collectives: the algorithm
  runs inside :class:`~pyhcomm.sim.runtime.library_calls`, over the product's own links.
* Atlas A3 and Atlas 350 (AI CPU orchestration, hcomm-api §5.6): a CPU_TS thread on the user's
  stream records the AI CPU main thread's sync notify, an AI CPU kernel is launched on the user's
  stream, and the user's stream waits for the kernel's "done" record. The kernel runs the
  algorithm in batch mode on AICPU_TS threads and channels.

Timeline of one call in AI CPU mode::

    user stream : [record aicpu.main sync] [kernel launch .........] [wait cpu notify 0]
    kernel      :                           BatchStart, wait sync, algo(...), record cpu 0, BatchEnd
    aicpu main  :                                   wait sync -> algorithm tasks -> record cpu[0]

Either way the call returns at once; the user's stream completes when the collective has. A
collective is a stream-ordered operation of its own: a batch the caller has open
(``HcommBatchModeStart``) neither keeps its tasks nor sees them (pyhcomm's choice; HCCL's
collectives do not go through the caller's HCOMM batch either).
Notify indices on channels follow HCCL: ``ACK = 0`` (my buffer is free), ``DATA = 1`` (data
landed), ``FIN = 2`` (:mod:`.patterns`).

Scale: a thread has at most ``HCOMM_NOTIFY_MAX_NUM`` (64) notifies and the main thread needs one
per slave for the fan-in (the AI CPU main one more, for the host sync), so a call gets at most
:data:`MAX_SLAVES` (63) slaves whatever it asks for; the mesh algorithms serve their peers in
groups of that many (:func:`.patterns.mesh`).
"""
from __future__ import annotations

from .. import topology
from ..aclrt.kernel import launch_function
from ..aclrt.stream import get_stream
from ..sim import current_sim as _sim
from ..sim import kinds
from ..sim.runtime import program_ctx, library_calls
from ..sim.task import attribute_to, call_site, end_attribution
from ..errors import HcclResult, hccl_error
from ..hcomm.resources import channel as channel_mod
from ..hcomm.resources import engines as engines_mod
from ..hccl.comm_config import exec_timeout
from ..hccl import comm as comm_mod
from ..hcomm.resources import thread as thread_mod
from ..hcomm import enqueue as enqueue_mod
from ..hcomm import notify as notify_mod
from ..topology import CommProtocol
from .algorithm import MIN_SLOT, slot_size
from .patterns import ACK, DATA, FIN, WAIT_TIMEOUT  # noqa: F401  (re-exported)

CHANNEL_NOTIFIES = 3
#: Slaves per call at most: the main thread's fan-in notifies plus the AI CPU host-sync notify
#: must fit in one thread's 64.
MAX_SLAVES = thread_mod.HCOMM_NOTIFY_MAX_NUM - 1


class CollectiveContext:
    """Resources of one rank for collectives (cached on the communicator)."""

    def __init__(self, comm):
        self.comm = comm
        self.handle = comm.handle
        self.rank = comm.rank
        self.nranks = comm.nranks
        self.engine = engines_mod.collective_engine()
        self.device_mode = not self.engine.host_side
        #: the engine of the threads on the user's stream, and of the kernel's view of them
        self.stream_engine = engines_mod.find(self.engine.counterpart) if self.device_mode else self.engine
        buf = comm_mod.hccl_buffer(comm, "HcclGetHcclBuffer")
        self.ccl, self.ccl_size = buf.addr, buf.size
        self._slave_pool: list[int] = []
        self.main = 0                   # the main thread of the running call
        self.slaves: list[int] = []     # the slave threads of the running call
        self._channels: dict[int, int] = {}
        self._peer_ccl: dict[int, int] = {}
        self._aicpu_threads: list[int] = []
        self._aicpu_notifies = 0        # notifies of the AI CPU main thread (slaves + host sync)
        self._stream_threads: dict[int, tuple] = {}
        self.calls = 0

    # -- channels ---------------------------------------------------------------------------------
    def connect(self, peers) -> None:
        """Acquire channels to ``peers`` (all ranks must connect to each other: a collective call)."""
        todo = [p for p in peers if p != self.rank and p not in self._channels]
        if not todo:
            return
        desc = channel_mod.HcclChannelDesc()   # one descriptor, reused: acquire keeps none
        channel_mod.desc_init(desc)
        desc.notifyNum = CHANNEL_NOTIFIES
        for p in todo:
            desc.remoteRank, desc.channelProtocol = p, self._protocol(p)
            self._channels[p] = channel_mod.acquire(self.handle, self.engine, [desc], 1)[0].handle
        for p in todo:
            self._peer_ccl[p], _size = channel_mod.peer_hccl_buffer(self.handle, self._channels[p])

    def _protocol(self, peer: int) -> int:
        world = self.comm.world
        have = set(topology.protocols_between(world.place(self.rank), world.place(peer)))
        for p in self.engine.channels.collective:
            if p in have:
                return p
        raise hccl_error(HcclResult.HCCL_E_NOT_FOUND, "collective",
                         f"no usable link between rank {self.rank} and rank {peer} on {_sim().runtime.product.name}")

    def channel(self, peer: int) -> int:
        return self._channels[peer]

    def peer_ccl(self, peer: int) -> int:
        """The peer's HCCL buffer address (valid as a remote address on ``channel(peer)``)."""
        return self._peer_ccl[peer]

    def protocol(self, peer: int) -> CommProtocol:
        return _sim().handles.channels.get(self._channels[peer]).protocol

    # -- threads ----------------------------------------------------------------------------------
    def _slaves_for(self, n: int) -> list[int]:
        if len(self._slave_pool) < n:
            more = thread_mod.acquire(self.handle, self.engine, n - len(self._slave_pool), 1)
            self._slave_pool += [t.handle for t in more]
        return self._slave_pool[:n]

    def host_threads(self, stream: int, nslaves: int):
        """A2: (main thread on the user's stream with ``nslaves`` notifies, slaves)."""
        key = (stream, max(1, nslaves))
        main = self._stream_threads.get(key)
        if main is None:
            main = thread_mod.acquire_with_stream(self.handle, self.engine, stream, max(1, nslaves)).handle
            self._stream_threads[key] = main
        return main, self._slaves_for(nslaves)

    def device_threads(self, stream: int, nslaves: int):
        """A3/350: (cpu thread, cpu thread seen by the AI CPU, aicpu main, aicpu main seen by the
        host, slaves, sync notify index)."""
        sync = max(1, nslaves)  # the AI CPU main's extra notify for the host->device handshake
        if not self._aicpu_threads or self._aicpu_notifies < sync + 1:
            self._aicpu_threads = [t.handle for t in thread_mod.acquire(self.handle, self.engine, 1, sync + 1)]
            self._aicpu_notifies = sync + 1
        main = self._aicpu_threads[0]
        slaves = self._slaves_for(nslaves)
        cpu = self._stream_threads.get(stream)
        if cpu is None:
            cpu_t = thread_mod.acquire_with_stream(self.handle, self.stream_engine, stream, 1).handle
            cpu_on_aicpu = _export(self.handle, cpu_t, self.engine)
            cpu = self._stream_threads[stream] = (cpu_t, cpu_on_aicpu)
        main_on_cpu = _export(self.handle, main, self.stream_engine)
        return cpu[0], cpu[1], main, main_on_cpu, slaves, sync

    # -- the HCCL buffer --------------------------------------------------------------------------
    def check_slots(self, parts: int, api: str = "collective") -> None:
        """Refuse (``HCCL_E_MEMORY``) when the HCCL buffer cannot hold ``parts`` slots of
        :data:`MIN_SLOT` bytes (:func:`slot_bytes`)."""
        slot_bytes(self.ccl_size, parts, self.nranks, api=api)


def _export(comm_handle, thread: int, engine) -> int:
    return thread_mod.export_to_comm_engine(comm_handle, 1, [thread], engine)[0].handle


def device_mode() -> bool:
    """Whether collectives run inside an AI CPU kernel on this product (A3, Atlas 350: their engine
    is a device-side one) rather than host-side (A2): where their local reduces run, hence which
    data types and ops they support."""
    return not engines_mod.collective_engine().host_side


def context(comm_handle) -> CollectiveContext:
    """The collective resources of a communicator (created on first use)."""
    comm = comm_mod.get_comm(comm_handle, "collective")
    ctx = getattr(comm, "collectives", None)
    if ctx is None:
        ctx = comm.collectives = CollectiveContext(comm)
    return ctx


def buffer_parts(parts_of_nranks):
    """Declare how many slots ``algo`` cuts the HCCL buffer into (a function of the rank count):
    :func:`run` checks they fit before anything is enqueued (:meth:`CollectiveContext.check_slots`)."""
    def deco(algo):
        algo.buffer_parts = parts_of_nranks
        return algo
    return deco


def run(comm_handle, stream: int, nslaves: int, algo, *args, tag: str = "pyhcomm_collective",
        peers=None, algorithm: str | None = None, marker: dict | None = None) -> None:
    """Run ``algo(ctx, *args)`` as HCCL does on this product (see the module docstring).

    Connects to ``peers`` first (default: every rank; the peers must call too). ``algo`` finds
    the main thread in ``ctx.main`` and at most :data:`MAX_SLAVES` of the ``nslaves`` slaves it
    asked for in ``ctx.slaves``. Returns at once; the user's ``stream`` completes when the
    collective has. Raises ``HCCL_E_MEMORY`` before anything is enqueued when the HCCL buffer
    cannot hold the slots ``algo`` declared (:func:`buffer_parts`). The call's marker in the
    record names ``tag`` and, when given, the ``algorithm`` (:mod:`.dispatch` gives the one the
    selector chose) and the ``marker`` fields (``op``, ``nbytes``: what the call was, for its
    bandwidth).
    """
    site = call_site()  # the user's call: every task of the collective is attributed to it
    token = attribute_to(site)
    host = program_ctx()
    batch, host.batch = host.batch, None  # the caller's open batch, kept aside (module docstring)
    record = _sim().record
    first = record.next_seq()
    try:
        with library_calls():
            _run(comm_handle, stream, nslaves, algo, args, tag, peers, site)
        # the marker of the call (its entries: this program's from ``first`` on, and its kernel's)
        named = dict(marker or {})
        if algorithm is not None:
            named["algorithm"] = algorithm
        record.host_effect(kinds.COLLECTIVE, tag, rank=comm_mod.get_comm(comm_handle, tag).rank, name=tag,
                           first=first, **named)
    finally:
        host.batch = batch
        end_attribution(token)


def _run(comm_handle, stream, nslaves, algo, args, tag, peers, site) -> None:
    ctx = context(comm_handle)
    parts = getattr(algo, "buffer_parts", None)
    if parts is not None and ctx.nranks > 1:
        ctx.check_slots(parts(ctx.nranks), tag)
    nslaves = min(nslaves, MAX_SLAVES)
    ctx.calls += 1
    ctx.connect(range(ctx.nranks) if peers is None else peers)
    if not ctx.device_mode:
        ctx.main, ctx.slaves = ctx.host_threads(stream, nslaves)
        algo(ctx, *args)
        return
    cpu, cpu_on_aicpu, main, main_on_cpu, slaves, sync = ctx.device_threads(stream, nslaves)
    timeout = exec_timeout(ctx.comm)            # the communicator's config, else HCCL_EXEC_TIMEOUT

    def kernel():
        token = attribute_to(site)
        try:
            enqueue_mod.batch_start(tag)
            notify_mod.wait(main, sync, timeout)
            ctx.main, ctx.slaves = main, slaves
            algo(ctx, *args)
            notify_mod.record(main, cpu_on_aicpu, 0)
            enqueue_mod.batch_end(tag)
        finally:
            end_attribution(token)

    notify_mod.record(cpu, main_on_cpu, sync)
    launch_function(kernel, get_stream(stream, "collective"), (), 1, timeout + 30, tag)
    notify_mod.wait(cpu, 0, timeout + 50)


def slot_bytes(ccl_size: int, parts: int, nranks: int, cap: int = 256 << 20, api: str = "collective") -> int:
    """Bytes per slot when an HCCL buffer of ``ccl_size`` bytes is cut into ``parts`` slots: a
    multiple of :data:`MIN_SLOT` (EX05), at most ``cap``.

    Raises ``HCCL_E_MEMORY`` (naming HCCL_BUFFSIZE and the rank count) when not even
    :data:`MIN_SLOT` bytes fit: cutting the buffer anyway would write past its end. With
    HCCL_BUFFSIZE >= 1 MB (a 2 MB buffer) that happens only past 8192 ranks for ``2 * nranks``
    slots.
    """
    slot = slot_size(ccl_size, parts, cap)
    if slot < MIN_SLOT:
        need_mb = -(-parts * MIN_SLOT // (2 << 20))  # the buffer is 2 x HCCL_BUFFSIZE MB
        raise hccl_error(HcclResult.HCCL_E_MEMORY, api,
                         f"the HCCL buffer of {ccl_size} bytes (2 x HCCL_BUFFSIZE MB; HCCL_BUFFSIZE={_sim().config.buffsize_mb} now) "
                         f"cannot hold the {parts} slots of at least {MIN_SLOT} bytes this algorithm needs "
                         f"with {nranks} ranks; set HCCL_BUFFSIZE to at least {need_mb}")
    return slot


def chunk_bytes(ctx, parts: int, cap: int = 256 << 20) -> int:
    """Bytes per loop when ``ctx``'s HCCL buffer is cut into ``parts`` slots (:func:`slot_bytes`)."""
    return slot_bytes(ctx.ccl_size, parts, ctx.nranks, cap)
