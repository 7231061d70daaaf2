"""What a collective algorithm needs, acquired once per communicator and reused: threads, channels
to every peer, the HCCL buffers; and where it runs.

An algorithm is a Python function ``algo(ctx, *args)`` that issues HCOMM primitives on
``ctx.main`` / ``ctx.slaves`` and ``ctx.channel(peer)`` (flat C tier, exactly as HCCL's templates
do). :func:`run` executes it the way HCCL does on each product:

* Atlas A2 (host orchestration): the main thread wraps the user's stream (CPU_TS); slave threads
  and channels are CPU_TS; the algorithm runs now, on the calling host thread.
* Atlas A3 and Atlas 350 (AI CPU orchestration, hcomm-api §5.6): a CPU_TS thread on the user's
  stream records the AI CPU main thread's sync notify, an AI CPU kernel is launched on the user's
  stream, and the user's stream waits for the kernel's "done" record. The kernel runs the
  algorithm in batch mode on AICPU_TS threads and channels.

Timeline of one call in AI CPU mode::

    user stream : [record aicpu.main sync] [kernel launch .........] [wait cpu notify 0]
    kernel      :                           BatchStart, wait sync, algo(...), record cpu 0, BatchEnd
    aicpu main  :                                   wait sync -> algorithm tasks -> record cpu[0]

Either way the call returns at once; the user's stream completes when the collective has.
Notify indices on channels follow HCCL: ``ACK = 0`` (my buffer is free), ``DATA = 1`` (data
landed), ``FIN = 2``.
"""
from __future__ import annotations

from ..sim import current_sim as _sim
from ..capi.hccl_channel import (HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit,
                                 HcclChannelGetHcclBuffer, HcclRankGraphGetLinks)
from ..capi.hccl_res import (HcclGetHcclBuffer, HcclThreadAcquire, HcclThreadAcquireWithStream,
                             HcclThreadExportToCommEngine)
from ..capi.hcomm_primitives import (HcommBatchModeEnd, HcommBatchModeStart, HcommThreadNotifyRecordOnThread,
                                     HcommThreadNotifyWaitOnThread)
from ..enums import CommEngine
from ..errors import HcclResult, hccl_error
from ..hccl import comm as comm_mod
from ..topology import CommProtocol

ACK, DATA, FIN = 0, 1, 2
CHANNEL_NOTIFIES = 3
WAIT_TIMEOUT = 1836
E, P = CommEngine, CommProtocol

#: Channel protocols each product's collectives use, best first.
PROTOCOL_PREFERENCE = {
    "A2": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_ROCE),
    "A3": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_ROCE),
    "950": (P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UBOE),
}


def _ok(ret, what: str):
    if ret != 0:
        raise hccl_error(HcclResult(ret), what, f"failed with {HcclResult(ret).name}")


class CollectiveContext:
    """Resources of one rank for collectives (cached on the communicator)."""

    def __init__(self, comm):
        self.comm = comm
        self.handle = comm.handle
        self.rank = comm.rank
        self.nranks = comm.nranks
        self.device_mode = device_mode()
        self.engine = E.COMM_ENGINE_AICPU_TS if self.device_mode else E.COMM_ENGINE_CPU_TS
        ret, self.ccl, self.ccl_size = HcclGetHcclBuffer(self.handle)
        _ok(ret, "HcclGetHcclBuffer")
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
        descs = []
        for p in todo:
            d = HcclChannelDesc()
            HcclChannelDescInit(d)
            d.remoteRank = p
            d.channelProtocol = self._protocol(p)
            d.notifyNum = CHANNEL_NOTIFIES
            descs.append(d)
        ret, chans = HcclChannelAcquire(self.handle, self.engine, descs, len(descs))
        _ok(ret, "HcclChannelAcquire")
        for p, ch in zip(todo, chans):
            self._channels[p] = ch
        for p in todo:
            ret, addr, _size = HcclChannelGetHcclBuffer(self.handle, self._channels[p])
            _ok(ret, "HcclChannelGetHcclBuffer")
            self._peer_ccl[p] = addr

    def _protocol(self, peer: int) -> int:
        ret, links = HcclRankGraphGetLinks(self.handle, 0, self.rank, peer)
        _ok(ret, "HcclRankGraphGetLinks")
        have = {link.linkAttr.linkProtocol for link in links}
        for p in PROTOCOL_PREFERENCE.get(_sim().runtime.product.family, ()):
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
            ret, more = HcclThreadAcquire(self.handle, self.engine, n - len(self._slave_pool), 1)
            _ok(ret, "HcclThreadAcquire")
            self._slave_pool += more
        return self._slave_pool[:n]

    def host_threads(self, stream: int, nslaves: int):
        """A2: (main thread on the user's stream with ``nslaves`` notifies, slaves)."""
        key = (stream, max(1, nslaves))
        main = self._stream_threads.get(key)
        if main is None:
            ret, main = HcclThreadAcquireWithStream(self.handle, self.engine, stream, max(1, nslaves))
            _ok(ret, "HcclThreadAcquireWithStream")
            self._stream_threads[key] = main
        return main, self._slaves_for(nslaves)

    def device_threads(self, stream: int, nslaves: int):
        """A3/350: (cpu thread, cpu thread seen by the AI CPU, aicpu main, aicpu main seen by the
        host, slaves, sync notify index)."""
        sync = max(1, nslaves)  # the AI CPU main's extra notify for the host->device handshake
        if not self._aicpu_threads or self._aicpu_notifies < sync + 1:
            ret, t = HcclThreadAcquire(self.handle, self.engine, 1, sync + 1)
            _ok(ret, "HcclThreadAcquire")
            self._aicpu_threads, self._aicpu_notifies = t, sync + 1
        main = self._aicpu_threads[0]
        slaves = self._slaves_for(nslaves)
        cpu = self._stream_threads.get(stream)
        if cpu is None:
            ret, cpu_t = HcclThreadAcquireWithStream(self.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
            _ok(ret, "HcclThreadAcquireWithStream")
            ret, (cpu_on_aicpu,) = HcclThreadExportToCommEngine(self.handle, 1, [cpu_t], E.COMM_ENGINE_AICPU_TS)
            _ok(ret, "HcclThreadExportToCommEngine")
            cpu = self._stream_threads[stream] = (cpu_t, cpu_on_aicpu)
        ret, (main_on_cpu,) = HcclThreadExportToCommEngine(self.handle, 1, [main], E.COMM_ENGINE_CPU_TS)
        _ok(ret, "HcclThreadExportToCommEngine")
        return cpu[0], cpu[1], main, main_on_cpu, slaves, sync


def device_mode() -> bool:
    """Whether collectives run inside an AI CPU kernel on this product (A3, Atlas 350) rather than
    host-side (A2): where their local reduces run, hence which data types and ops they support."""
    return _sim().runtime.product.family in ("A3", "950")


def context(comm_handle) -> CollectiveContext:
    """The collective resources of a communicator (created on first use)."""
    comm = comm_mod.get_comm(comm_handle, "collective")
    ctx = getattr(comm, "collectives", None)
    if ctx is None:
        ctx = comm.collectives = CollectiveContext(comm)
    return ctx


def run(comm_handle, stream: int, nslaves: int, algo, *args, tag: str = "pyhcomm_collective",
        peers=None) -> None:
    """Run ``algo(ctx, *args)`` as HCCL does on this product (see the module docstring).

    Connects to ``peers`` first (default: every rank; the peers must call too). ``algo`` finds
    the main thread in ``ctx.main`` and the slaves in ``ctx.slaves``. Returns at once; the user's
    ``stream`` completes when the collective has.
    """
    ctx = context(comm_handle)
    ctx.calls += 1
    ctx.connect(range(ctx.nranks) if peers is None else peers)
    if not ctx.device_mode:
        ctx.main, ctx.slaves = ctx.host_threads(stream, nslaves)
        algo(ctx, *args)
        return
    cpu, cpu_on_aicpu, main, main_on_cpu, slaves, sync = ctx.device_threads(stream, nslaves)
    cfg = _sim().config
    cfg.check("HCCL_EXEC_TIMEOUT", "collective")
    timeout = cfg.exec_timeout

    def kernel():
        _ok(HcommBatchModeStart(tag), "HcommBatchModeStart")
        _ok(HcommThreadNotifyWaitOnThread(main, sync, timeout), "HcommThreadNotifyWaitOnThread")
        ctx.main, ctx.slaves = main, slaves
        algo(ctx, *args)
        _ok(HcommThreadNotifyRecordOnThread(main, cpu_on_aicpu, 0), "HcommThreadNotifyRecordOnThread")
        _ok(HcommBatchModeEnd(tag), "HcommBatchModeEnd")

    from ..aclrt.kernel import launch_function
    from ..aclrt.stream import get_stream
    _ok(HcommThreadNotifyRecordOnThread(cpu, main_on_cpu, sync), "HcommThreadNotifyRecordOnThread")
    launch_function(kernel, get_stream(stream, "collective"), (), 1, timeout + 30, tag)
    _ok(HcommThreadNotifyWaitOnThread(cpu, 0, timeout + 50), "HcommThreadNotifyWaitOnThread")


def fan_out(ctx) -> None:
    """The main thread releases every slave (slave ``i`` waits for its notify 0)."""
    for s in ctx.slaves:
        _ok(HcommThreadNotifyRecordOnThread(ctx.main, s, 0), "HcommThreadNotifyRecordOnThread")
        _ok(HcommThreadNotifyWaitOnThread(s, 0, WAIT_TIMEOUT), "HcommThreadNotifyWaitOnThread")


def fan_in(ctx) -> None:
    """Every slave ``i`` records the main thread's notify ``i``; the main thread waits for all."""
    for i, s in enumerate(ctx.slaves):
        _ok(HcommThreadNotifyRecordOnThread(s, ctx.main, i), "HcommThreadNotifyRecordOnThread")
        _ok(HcommThreadNotifyWaitOnThread(ctx.main, i, WAIT_TIMEOUT), "HcommThreadNotifyWaitOnThread")


def ok(ret, what: str) -> None:
    """Raise the HCCL error of a nonzero return code (algorithms call the flat C tier)."""
    _ok(ret, what)


def chunk_bytes(ctx, parts: int, cap: int = 256 << 20) -> int:
    """Bytes per loop when the HCCL buffer is cut into ``parts`` slots (128-byte multiple, EX05)."""
    return max(128, min(cap, ctx.ccl_size // parts // 128 * 128))
