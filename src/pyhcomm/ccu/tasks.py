"""The tasks a CCU mission issues onto its lanes (streams of its own): moves, the event bits they set,
the waits of loop bodies.

A move's operands are resolved when the mission issues it (the registers' values then): local memory
as an allocation and an offset, a CCU buffer as its die's buffer storage at the slice's offset (its
``addr`` a pseudo device address: what the record and the race detector see), the peer's memory as
an address the transport reaches (:meth:`~pyhcomm.transport.base.Transport.ccu_move`).
"""
from __future__ import annotations

from ..errors import HcclResult, HcclRuntimeError
from ..sim import current_sim, kinds
from ..sim.notify import NotifyRecordTask, NotifyWaitTask
from ..sim.task import SiteTask
from ..transport.base import TransportError


class Place:
    """Where a move reads or writes: ``addr`` (a device address, or a CCU buffer's pseudo one) and,
    locally, the storage holder (an allocation, or a CCU die: its ``storage``) and the offset in it."""

    __slots__ = ("addr", "holder", "off")

    def __init__(self, addr: int, holder=None, off: int = 0):
        self.addr, self.holder, self.off = addr, holder, off

    @property
    def storage(self):
        return self.holder.storage


class BufferStore:
    """A CCU die's buffers as an allocation-like holder (``storage``)."""

    __slots__ = ("die",)

    def __init__(self, die):
        self.die = die

    @property
    def storage(self):
        return self.die.ms()


def _freed(api: str):
    return HcclRuntimeError(HcclResult.HCCL_E_MEMORY, api, "memory was freed before the CCU move ran")


class CcuLocalTask(SiteTask):
    """A local copy or reduce of the CCU (``kind``: CcuLocalCopy / CcuLocalReduce): ``nbytes`` from
    ``src`` (one Place, or several for a reduce of CCU buffers) into ``dst``."""

    __slots__ = ("kind", "dst", "src", "nbytes", "count", "dtype", "op")

    def __init__(self, kind, lane, mission, dst, src, nbytes, count=None, dtype=None, op=None):
        self.kind = kind
        mission.place(self, lane)
        self.dst, self.src, self.nbytes, self.count, self.dtype, self.op = dst, src, nbytes, count, dtype, op

    @property
    def reads(self) -> tuple:
        srcs = self.src if isinstance(self.src, list) else [self.src]
        out = tuple((s.addr, self.nbytes) for s in srcs)
        return out + ((self.dst.addr, self.nbytes),) if self.dtype is not None else out

    @property
    def writes(self) -> tuple:
        return ((self.dst.addr, self.nbytes),)

    def run(self) -> None:
        backend = current_sim().backend
        dst = self.dst.storage
        if self.dtype is None:
            src = self.src.storage
            if dst is None or src is None:
                raise _freed(str(self.kind))
            backend.copy(dst, self.dst.off, src, self.src.off, self.nbytes)
            return
        for s in self.src if isinstance(self.src, list) else [self.src]:
            if dst is None or s.storage is None:
                raise _freed(str(self.kind))
            backend.reduce(dst, self.dst.off, s.storage, s.off, self.count, self.dtype, self.op)


class CcuTransferTask(SiteTask):
    """A move between local memory (or a CCU buffer) and the peer's memory over a channel: CcuWrite,
    CcuRead, CcuWriteReduce, CcuReadReduce (the slots the transfer kinds' accessors read)."""

    __slots__ = ("kind", "local", "peer", "remote", "nbytes", "count", "dtype", "op", "write", "channel",
                 "peer_rank", "transport")
    notify = None
    gen = None

    def __init__(self, kind, lane, mission, end, local, remote, nbytes, write, count=None, dtype=None, op=None):
        self.kind = kind
        mission.place(self, lane)
        self.local, self.remote, self.nbytes, self.write = local, remote, nbytes, write
        self.count, self.dtype, self.op = count, dtype, op
        self.peer, self.channel, self.peer_rank = end.peer.ref, end.handle, end.peer_rank
        self.transport = current_sim().transport

    @property
    def reads(self) -> tuple:
        src = self.local.addr if self.write else self.remote
        out = ((src, self.nbytes),)
        if self.dtype is not None:
            out += (((self.remote if self.write else self.local.addr), self.nbytes),)
        return out

    @property
    def writes(self) -> tuple:
        return (((self.remote if self.write else self.local.addr), self.nbytes),)

    @property
    def detail(self) -> tuple:
        return (self.channel, self.peer_rank)

    def run(self) -> None:
        storage = self.local.storage
        if storage is None:
            raise _freed(str(self.kind))
        n = self.nbytes if self.dtype is None else self.count
        try:
            self.transport.ccu_move(self.peer, self.remote, _Local(storage), self.local.off, n, self.write,
                                    self.dtype, self.op)
        except TransportError as why:
            raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, str(self.kind), f"the CCU move did not land: {why}") \
                from None


class _Local:
    """What the transport reads of a local holder: its ``storage``."""

    __slots__ = ("storage",)

    def __init__(self, storage):
        self.storage = storage


class EventSetTask(NotifyRecordTask):
    """A move's completion: sets one bit of its event (CcuEventSet), after the move on its lane."""

    __slots__ = ()

    def __init__(self, lane, mission, notify, cke: int):
        NotifyRecordTask.__init__(self, kinds.CCU_EVENT_SET, lane, mission.thread.handle, mission.thread.rank,
                                  "device", notify, ("cke", cke), engine=mission.thread.engine)
        mission.own(self)


class LoopWaitTask(NotifyWaitTask):
    """A loop body's wait for one bit of a sync register (CcuLoopWait), on the loop's lane."""

    __slots__ = ("cke", "mask")

    def __init__(self, lane, mission, notify, cke: int, mask: int, timeout: float):
        NotifyWaitTask.__init__(self, kinds.CCU_LOOP_WAIT, lane, mission.thread.handle, mission.thread.rank,
                                "device", notify, ("cke", cke), timeout, engine=mission.thread.engine)
        self.cke, self.mask = cke, mask
        mission.own(self)

    def blocker(self) -> str:
        return (f"a CCU loop waits for bit {self.notify.index} of {self.notify.owner} (mask 0x{self.mask:04x}); "
                + current_sim().hang_report.wait(self))
