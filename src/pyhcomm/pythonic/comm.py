"""Communicators as objects (``HcclComm``): one rank's view, its threads, channels, registered
memory, engine contexts and HCCL buffer."""
from __future__ import annotations

import numpy as np

from ..defs.res_defs import CommMem, CommMemType, CommProtocol
from ..enums import CommEngine
from ..errors import not_found as _not_found
from ..hccl import comm as _comm
from ..hccl import rank_graph as _rank_graph
from ..hcomm import comm_lock as _comm_lock
from ..hcomm.resources import channel as _ch
from ..hcomm.resources import engine_ctx as _ectx
from ..hcomm.resources.engines import check_engine
from ..hcomm.resources import thread as _thread
from ..sim import current_sim as _sim
from ._common import Closable, public_engine
from .channel import Channel
from .device import Stream
from .memory import Buffer
from .thread import Thread


class Comm(Closable):
    """One rank of a communicator (``HcclComm``); ``handle`` is the int the C tier takes."""

    def __init__(self, nranks: int, root_info: bytes, rank: int):
        """Join rank ``rank`` of ``nranks`` (collective: blocks until every rank joined)."""
        self._c = _comm.init_root_info(nranks, root_info, rank)
        self.handle = self._c.handle

    @staticmethod
    def root_info() -> bytes:
        return _comm.get_root_info()

    @classmethod
    def _wrap(cls, c) -> "Comm":
        obj = cls.__new__(cls)
        obj._c, obj.handle = c, c.handle
        return obj

    @classmethod
    def from_cluster_info(cls, rank_table_path: str, rank: int) -> "Comm":
        """Join rank ``rank`` of the cluster a rank-table file describes (``HcclCommInitClusterInfo``;
        collective: blocks until every rank joined)."""
        return cls._wrap(_comm.init_cluster_info(rank_table_path, rank))

    @classmethod
    def init_all(cls, devices) -> list["Comm"]:
        """One communicator per device, all created by this call (``HcclCommInitAll``)."""
        return [cls._wrap(c) for c in _comm.init_all(devices)]

    @property
    def rank(self) -> int:
        return self._c.rank

    @property
    def size(self) -> int:
        return self._c.nranks

    @property
    def name(self) -> str:
        return self._c.name

    @property
    def device(self) -> int:
        return self._c.device

    def barrier(self) -> None:
        """Wait until every rank called ``barrier`` (a host-side rendezvous, not a collective:
        nothing is enqueued). Use it, not ``threading.Barrier``, inside ``pyhcomm.launch``: on
        the cooperative scheduler the ranks share one OS thread."""
        _comm.host_barrier(_comm.get_comm(self.handle, "Comm.barrier"))

    def hccl_buffer(self) -> Buffer:
        """The rank's HCCL buffer (library-owned: closing the Buffer does nothing)."""
        a = _comm.hccl_buffer(_comm.get_comm(self.handle, "HcclGetHcclBuffer"), "HcclGetHcclBuffer")
        return Buffer(a.addr, a.size, a.device, owned=False)

    # -- threads -----------------------------------------------------------------------------------
    def thread(self, engine=CommEngine.COMM_ENGINE_CPU_TS, stream: Stream | None = None,
               notify_num: int = 0) -> Thread:
        """One thread: wrapping ``stream`` (``HcclThreadAcquireWithStream``) or with its own stream."""
        if stream is not None:
            h = _thread.acquire_with_stream(self.handle, engine, stream.handle, notify_num).handle
            return Thread(h)
        return self.threads(engine, 1, notify_num)[0]

    def threads(self, engine, count: int, notify_num: int = 0) -> list[Thread]:
        """``count`` threads with their own streams (``HcclThreadAcquire``)."""
        return [Thread(t.handle) for t in _thread.acquire(self.handle, engine, count, notify_num)]

    # -- channels ----------------------------------------------------------------------------------
    def links(self, peer: int) -> list:
        """The protocols of the rank graph's links from this rank to ``peer``, layer by layer
        (``HcclRankGraphGetLayers``, ``...GetRanksByLayer``, ``...GetLinks``), best first, each
        once: ``[COMM_PROTOCOL_HCCS, COMM_PROTOCOL_HCCS_ONLY, COMM_PROTOCOL_ROCE]`` between two
        NPUs of one Atlas A2 server, ``[COMM_PROTOCOL_ROCE]`` between servers."""
        return list(dict.fromkeys(CommProtocol(link.linkAttr.linkProtocol) for link in self._links(peer)))

    def _links(self, peer: int) -> list:
        out = []
        for layer in _rank_graph.get_layers(self.handle):
            if peer in _rank_graph.ranks_by_layer(self.handle, layer):
                out += _rank_graph.links(self.handle, layer, self.rank, peer)
        return out

    def channel(self, peer: int, engine=CommEngine.COMM_ENGINE_CPU_TS, notify_num: int = 0, protocol=None,
                mems=()) -> Channel:
        """This rank's end of a channel to ``peer`` (``HcclChannelAcquire``); the peer acquires
        the other end (acquiring does not block; the first call that needs the peer does).

        Args:
            peer: the remote rank.
            engine: the engine that uses the channel (``COMM_ENGINE_CPU_TS``: the host on Atlas
                A2; ``COMM_ENGINE_AICPU_TS``: inside AI CPU kernels).
            notify_num: channel notifies at each end (0..64).
            protocol: a ``CommProtocol``; default: the first link of the rank graph to ``peer``
                (:meth:`links`, best first) that ``engine``'s channels speak on this product, with
                its endpoints, as HCCL's custom operators fill the descriptor.
            mems: memories registered with :meth:`register` that the peer may reach.

        Acquiring the same ``(peer, engine, protocol)`` again gives the same end.
        """
        api = "HcclChannelAcquire"
        desc = _ch.HcclChannelDesc()
        _ch.desc_init(desc)
        desc.remoteRank, desc.notifyNum = peer, notify_num
        handles = [getattr(m, "handle", m) for m in mems]
        desc.memHandles, desc.memHandleNum = handles, len(handles)
        if protocol is None:
            link = self._pick_link(peer, engine, api)
            if link is not None:
                desc.channelProtocol = link.linkAttr.linkProtocol
                desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
        else:
            desc.channelProtocol = protocol
        return Channel(self, _ch.acquire(self.handle, engine, [desc], 1)[0].handle)

    def _pick_link(self, peer, engine, api):
        """The first link to ``peer`` whose protocol ``engine``'s channels speak; None where the
        acquire itself refuses the engine or the peer (it then says why)."""
        engine = check_engine(engine, api)
        spoken = _ch.channel_protocols(engine)
        if not spoken or not isinstance(peer, int) or not 0 <= peer < self.size or peer == self.rank:
            return None
        links = self._links(peer)
        for link in links:
            if link.linkAttr.linkProtocol in spoken:
                return link
        have = ", ".join(p.name for p in dict.fromkeys(CommProtocol(link.linkAttr.linkProtocol) for link in links))
        names = ", ".join(sorted(p.name for p in spoken))
        raise _not_found(api, f"no link of the rank graph from rank {self.rank} to rank {peer} speaks a protocol of "
                              f"{engine.name} channels on {_sim().runtime.product.name} ({names}); "
                              f"the links: {have}")

    def register(self, buffer: Buffer, tag: str) -> "Registered":
        """Register ``buffer`` (device memory of this rank) under ``tag`` (``HcclCommMemReg``):
        a channel that lists it (``channel(..., mems=[...])``) lets the peer reach it."""
        mem = CommMem(type=CommMemType.COMM_MEM_TYPE_DEVICE, addr=buffer.addr, size=buffer.size)
        return Registered(_ch.mem_reg(self.handle, tag, mem), tag, buffer)

    # -- engine contexts ---------------------------------------------------------------------------
    def engine_ctx_create(self, tag: str, engine, size: int) -> "EngineCtx":
        """A new zero-filled engine context (``HcclEngineCtxCreate``): host memory for CPU, CPU_TS
        and CCU, device memory for AICPU, AICPU_TS and AIV; owned by the communicator."""
        return EngineCtx(self, _ectx.create(self.handle, tag, engine, size))

    def engine_ctx_get(self, tag: str, engine) -> "EngineCtx":
        """The existing engine context (``HcclEngineCtxGet``; ``HCCL_E_NOT_FOUND`` if absent)."""
        return EngineCtx(self, _ectx.get(self.handle, tag, engine))

    def engine_ctx_copy(self, tag: str, engine, data, offset: int = 0, nbytes: int | None = None) -> None:
        """Copy host ``data`` (bytes-like, or a host pointer with ``nbytes``) into the context now."""
        if nbytes is None:
            if isinstance(data, int):
                raise TypeError("HcclEngineCtxCopy: give nbytes with a host pointer")
            nbytes = memoryview(data).nbytes
        _ectx.copy(self.handle, engine, tag, data, nbytes, offset)

    def engine_ctx_destroy(self, tag: str, engine) -> None:
        """Release one engine context (``HcclEngineCtxDestroy``)."""
        _ectx.destroy(self.handle, tag, engine)

    def lock(self) -> "_CommLock":
        """Inside an AI CPU kernel: ``with comm.lock():`` brackets the body with
        ``HcommAcquireComm`` / ``HcommReleaseComm`` on this communicator's name."""
        return _CommLock(self.name)

    def close(self) -> None:
        """Destroy the communicator (``HcclCommDestroy``) and with it its threads, channels,
        registrations and engine contexts; idempotent."""
        if not self._c.destroyed:
            _comm.destroy(self._c)

    def __repr__(self):
        return f"<Comm {self.name} rank {self.rank}/{self.size}>"


class Registered:
    """Memory registered on a communicator (``HcclMemHandle``): ``handle``, ``tag``, ``buffer``.
    Released with the communicator."""

    def __init__(self, handle: int, tag: str, buffer: Buffer):
        self.handle, self.tag, self.buffer = handle, tag, buffer

    def __repr__(self):
        return f"<Registered {self.tag!r} {self.buffer!r}>"


class EngineCtx(Closable):
    """An engine context of a :class:`Comm`: ``size`` bytes at ``addr`` (host or device memory).

    ``close()`` destroys it (idempotent); otherwise it lives until the communicator is destroyed.
    """

    def __init__(self, comm: Comm, ctx):
        self.comm, self._ctx = comm, ctx
        self.tag, self.engine, self.addr, self.size = ctx.tag, public_engine(ctx.engine), ctx.addr, ctx.size

    @property
    def on_device(self) -> bool:
        """True for device memory (AICPU, AICPU_TS, AIV), False for host memory."""
        return self._ctx.on_device

    @property
    def alive(self) -> bool:
        return self.comm._c.engine_ctx.get((self.tag, self.engine)) is self._ctx

    def write(self, data, offset: int = 0) -> None:
        """Copy bytes-like ``data`` into the context at ``offset`` now (``HcclEngineCtxCopy``)."""
        _ectx.copy(self.comm.handle, self.engine, self.tag, data, memoryview(data).nbytes, offset)

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """A live numpy view of the context's memory."""
        if not self.alive:
            raise _not_found("EngineCtx.numpy", f"engine context {self.tag!r} was destroyed")
        storage = self._ctx.alloc.storage
        return _sim().backend.view(storage, 0, storage.size, dtype)

    def read(self) -> bytes:
        """A copy of the context's bytes."""
        return self.numpy().tobytes()

    def close(self) -> None:
        """Destroy the context (``HcclEngineCtxDestroy``); nothing if it is already gone."""
        if not self.comm._c.destroyed and self.alive:
            _ectx.destroy(self.comm.handle, self.tag, self.engine)

    def __repr__(self):
        return f"<EngineCtx {self.tag!r} {self.engine.name} 0x{self.addr:x} {self.size} B>"


class _CommLock:
    """``with comm.lock():`` inside an AI CPU kernel (``HcommAcquireComm`` / ``HcommReleaseComm``)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        _comm_lock.acquire_comm(self.name)
        return self

    def __exit__(self, *exc):
        _comm_lock.release_comm(self.name)
