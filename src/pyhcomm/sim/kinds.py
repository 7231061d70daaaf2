"""Task kinds: every kind of record entry declared once, with its traits and its field accessors.

A :class:`Kind` is what a task or host effect is (``LocalCopy``, ``Write``, ``Synchronize`` ...).
It is a ``str``: it compares, hashes, prints and exports as its name, so ``task.kind == "Write"``
and the JSON record read as before; and it carries what every reader of the record needs to know
about entries of that kind, so that none of them classifies kind names or reads a task's raw
operands:

* ``entry``: ``"task"`` (runs on a stream) or ``"host"`` (a host effect, done when issued);
* ``role``: its synchronisation role (:class:`Role`): it records a notify, waits for one, moves
  bytes to or from a peer, fences, launches a kernel, blocks its host program until streams end
  (``sync_edge``: the happens-before edge its return gets: ``"sync"``, ``"join"``, ``"drain"``),
  joins a rendezvous, marks a collective call, or none of these;
* ``notify``: how it uses a notify (:class:`NotifyUse`: records, waits, or None); ``link_signal``:
  its record crosses a channel's link (a channel notify, a ``WithNotify`` write);
* ``moves``: a transfer's direction (``"write"``: to the peer's memory, ``"read"``: from it);
  ``at_fence``: the transfer completes at a fence (the NBI family), not when it is issued;
* ``accesses``: whether it reads or writes memory (the race detector visits it);
* ``cost``: its cost class (:class:`Cost`: what the timing replay charges); ``unit``: the unit
  that runs it (:class:`Unit`: where its bytes flow, if any);
* ``trace``: its trace category (:class:`Trace`: how the trace and the PNG draw it);
* ``event``: the class of its typed event (:mod:`pyhcomm.sim.events`), and ``fields``: the
  attributes of its entries that its accessors read (a snapshot keeps them: :mod:`.snapshot`).

Accessors read one field of an entry as its event has it (:meth:`Kind.get`, :meth:`Kind.getter`;
reads and writes as ``(addr, size[, allocation])`` spans, a notify as the notify object, a channel
as its handle; a host effect's fields are its ``extra``), and ``kind.spans(entry)`` gives the
memory an entry touches, for the race detector. They work on the task objects of a Sim and on
the stand-ins of a snapshot alike. An entry's ``engine`` (the issuing HCOMM thread's, whatever
object it is) is named by :func:`engine_name`.

Kinds are immutable, made here and nowhere else. :data:`KINDS` lists them all; a kind is found by
name (records read back, merged from MPI processes, unpickled) with :func:`named`, from that table.
"""
from __future__ import annotations

import enum
from operator import attrgetter

from ..enums import NUMPY_DTYPE, HcommDataType, HcommReduceOp, aclrtMemcpyKind
from . import events as ev


class Role(str, enum.Enum):
    """The synchronisation role of a kind."""

    NONE = "none"               # a local operation (a copy, a reduce, a memset)
    RECORD = "record"           # sets a notify
    WAIT = "wait"               # waits for a notify and clears it
    TRANSFER = "transfer"       # moves bytes to or from a peer (a WithNotify one records too)
    FENCE = "fence"             # completes the NBI transfers its program posted
    LAUNCH = "launch"           # starts an AI CPU kernel when its stream reaches it
    HOST_SYNC = "host sync"     # blocks its program until streams ended (see ``sync_edge``)
    RENDEZVOUS = "rendezvous"   # a meeting of several host programs
    MARKER = "marker"           # marks a collective call (no effect of its own)
    ACQUIRE = "acquire"         # ordered after the entries its ``after`` field names (``sync_edge``: the
                                # edge's kind): an AIV flag load after the store whose value it read, a
                                # block barrier after every block's arrival


class NotifyUse(str, enum.Enum):
    """How an entry uses a notify."""

    RECORD = "record"
    WAIT = "wait"


class Cost(str, enum.Enum):
    """What the timing replay charges for an entry (docs/timing.md)."""

    NONE = "none"               # only its dispatch (tasks) and its program's submit cost
    FREE = "free"               # nothing at all: not even its program's submit cost
    NOTIFY_RECORD = "notify record"
    NOTIFY_WAIT = "notify wait"
    RETURN = "return"           # a blocking call returning
    TRANSFER = "transfer"       # a flow over a link (see ``moves``)
    COPY = "copy"               # a flow through device memory
    REDUCE = "reduce"           # a flow through device memory at the reduce bandwidth
    MEMSET = "memset"           # half its bytes through device memory
    MEMCPY = "memcpy"           # device memory, or the host link for a copy from or to the host
    HOST_COPY = "host copy"     # the host link
    AIV = "aiv"                 # an AIV block's move: its device's memory, or the link to another device's


class Unit(str, enum.Enum):
    """The unit that runs an entry."""

    STREAM = "stream"           # the stream's task scheduler (notifies)
    MEMORY = "memory"           # the device's copy engine (SDMA): bytes through device memory
    LINK = "link"               # a channel's link to the peer
    HOST_LINK = "host link"     # the host-device link (PCIe)
    AICPU = "aicpu"             # the device's AI CPU (a kernel)
    AIV = "aiv"                 # the device's vector cores (an AIV kernel's blocks)
    CCU = "ccu"                 # the device's CCU: a mission's instruction flow, its copy and reduce units
    HOST = "host"               # the host CPU


class Trace(str, enum.Enum):
    """How the trace and the PNG timeline draw an entry."""

    TRANSFER = "transfer"
    COPY = "copy"
    REDUCE = "reduce"
    RECORD = "record"
    WAIT = "wait"
    KERNEL = "kernel"
    HOST = "host"
    CALL = "call"               # drawn on the collectives track, not as a slice
    OTHER = "other"


TASK, HOST = "task", "host"


def engine_name(engine):
    """How the record names an engine: None, the engine's ``name`` when it has one, else its int
    value (a name kept by a snapshot stays as it is)."""
    if engine is None or engine.__class__ is str:
        return engine
    name = getattr(engine, "name", None)
    return name if name is not None else int(engine)


class Kind(str):
    """A kind of record entry (see the module docstring). Immutable; made only in this module.

    Besides the traits: ``fields``, the attributes of its entries its accessors read; ``get``,
    event field -> accessor (a function of an entry; a host effect's other fields are read from
    its ``extra``, a task's other fields are None); ``spans``, the race detector's accessor (the
    default reads ``reads`` and ``writes``); ``unit_of``, the unit of one entry when it depends on
    the entry (``unit`` otherwise)."""

    def __new__(cls, name: str, entry: str, *, role=Role.NONE, notify=None, link_signal=False, moves=None,
                at_fence=False, sync_edge=None, accesses=False, cost=Cost.NONE, unit=Unit.STREAM,
                trace=Trace.OTHER, event=None, fields=(), get=None, spans=None, unit_of=None):
        self = super().__new__(cls, name)
        event = event or ev.TaskEvent
        getters = {"reads": _READS, "writes": _WRITES, **(get or {})}
        vars(self).update(
            name=str(name), entry=entry, role=role, notify=notify, link_signal=link_signal, moves=moves,
            at_fence=at_fence, sync_edge=sync_edge, accesses=accesses, cost=cost, unit=unit, trace=trace,
            event=event, fields=tuple(fields), spans=spans or (_host_spans if entry == HOST else _task_spans),
            _getters=getters, _unit_of=unit_of, _extras={},
            event_getters=tuple((f, g) for f, g in getters.items() if f in event._fields))
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"kind {str(self)!r} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"kind {str(self)!r} is immutable")

    def __reduce__(self):
        return named, (str(self),)

    def getter(self, field: str):
        """A function of an entry of this kind giving its event field ``field`` (see the module
        docstring; None for a field the kind does not have)."""
        got = self._getters.get(field)
        if got is None:
            got = self._extras.get(field)
            if got is None:     # (made once per field: the kind's own memo, not a trait)
                got = self._extras[field] = _extra(field) if self.entry == HOST else _none
        return got

    def get(self, e, field: str, default=None):
        """Event field ``field`` of entry ``e`` of this kind (``default`` when it has none)."""
        v = self.getter(field)(e)
        return default if v is None else v

    def unit_of(self, e) -> Unit:
        """The unit that runs entry ``e`` (a memcpy's depends on its direction)."""
        return self._unit_of(self, e) if self._unit_of is not None else self.unit



# -- accessors ------------------------------------------------------------------------------------------
_READS, _WRITES = attrgetter("reads"), attrgetter("writes")
_DTYPE_OF = {np_dtype: HcommDataType(dt) for dt, np_dtype in NUMPY_DTYPE.items()}


def _none(_e):
    return None


def _extra(name: str):
    """A host effect's field: its ``extra`` entry ``name``."""
    def get(e):
        extra = e.extra
        return extra.get(name) if extra else None
    get.__qualname__ = f"extra[{name!r}]"
    return get


def _enum_name(enum_cls, value):
    if value is None:
        return None
    try:
        return enum_cls(value).name
    except ValueError:
        return str(value)


def _const(value):
    def get(_e):
        return value
    return get


def _space(alloc) -> int:
    """The address space of an allocation: 0 for device memory (device addresses are unique), the
    identity of a host allocation for host memory (host addresses are reused)."""
    return id(alloc) if getattr(alloc, "kind", "device") == HOST else 0


def _task_spans(e):
    """``((space, lo, hi), write)`` of what a task reads and writes, reads first (device memory)."""
    reads, writes = e.reads, e.writes
    if len(reads) == 1 and len(writes) == 1:       # most transfers: one source, one destination
        (a, n), = reads
        (b, m), = writes
        return (((0, a, a + n), False), ((0, b, b + m), True))
    out = [((0, a, a + n), False) for a, n in reads]
    out += [((0, a, a + n), True) for a, n in writes]
    return out


def _host_spans(e):
    """The same for a host effect: its spans name their allocation when known (host memory)."""
    out = []
    for spans, write in ((e.reads, False), (e.writes, True)):
        for span in spans:
            a, n = span[0], span[1]
            space = _space(span[2]) if len(span) > 2 else 0
            out.append(((space, a, a + n), write))
    return out


# LocalCopy (hcomm.local.LocalCopyTask): n bytes from src_alloc + src_off to dst_alloc + dst_off
def _copy_spans(e):
    s, d, n = e.src_alloc.addr + e.src_off, e.dst_alloc.addr + e.dst_off, e.n
    return (((0, s, s + n), False), ((0, d, d + n), True))


# LocalReduce (a Task): args (dst_alloc, dst_off, src_alloc, src_off, count, np_dtype, op), detail (dtype, op)
def _written(e) -> int:
    w = e.writes
    return w[0][1] if w else 0


def _reduce_dtype(e):
    return _enum_name(HcommDataType, e.detail[0]) if e.detail else None


def _reduce_op(e):
    return _enum_name(HcommReduceOp, e.detail[1]) if e.detail else None


def _reduce_count(e):
    return e.args[4]


# one-sided transfers (hcomm.channel_ops.TransferTask): slots nbytes, count, dtype (numpy), op, channel,
# peer_rank, remote (the peer's address)
def _transfer_dtype(e):
    return _enum_name(HcommDataType, _DTYPE_OF.get(e.dtype))


def _transfer_op(e):
    return _enum_name(HcommReduceOp, e.op)


def _nbi_getters(write: bool) -> dict:
    """An NBI transfer's bytes (``extra`` says them, else its first span on the peer's side) and
    the peer's address."""
    spans_of = _WRITES if write else _READS

    def nbytes(e):
        extra = e.extra or {}
        spans = spans_of(e)
        return extra.get("nbytes") or (spans[0][1] if spans else 0)

    def remote(e):
        spans = spans_of(e)
        return spans[0][0] if spans else None
    return {"nbytes": nbytes, "remote": remote}


# notify tasks (sim.notify.NotifyRecordTask, NotifyWaitTask): notify, gen, target, timeout
def _target_channel(e):
    return e.target[0]


def _target_peer(e):
    return e.target[1]


def _wait_timeout(e):
    return e.timeout


# MemcpyAsync (a Task): args (dst_alloc, dst_off, src_alloc, src_off, n, keep), detail (the aclrtMemcpyKind)
def _memcpy_reads(e):
    _d, _d_off, s, s_off, n, _keep = e.args
    return ((s.addr + s_off, n, s),)


def _memcpy_writes(e):
    d, d_off, _s, _s_off, n, _keep = e.args
    return ((d.addr + d_off, n, d),)


def _memcpy_nbytes(e):
    return e.args[4]


def _memcpy_spans(e):
    d, d_off, s, s_off, n, _keep = e.args
    return (((_space(s), s.addr + s_off, s.addr + s_off + n), False),
            ((_space(d), d.addr + d_off, d.addr + d_off + n), True))


def _memcpy_direction(e):
    return _enum_name(aclrtMemcpyKind, e.detail)


_HOST_LINK = frozenset(("ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST", "ACL_MEMCPY_HOST_TO_HOST",
                        "ACL_MEMCPY_DEFAULT"))


def _memcpy_unit(kind, e):
    """A memcpy from or to the host crosses the host link; a device-to-device one stays in memory."""
    direction = kind.get(e, "direction")
    if direction is not None and not isinstance(direction, str):
        direction = _enum_name(aclrtMemcpyKind, direction)
    return Unit.HOST_LINK if direction in _HOST_LINK else Unit.MEMORY


# MemsetAsync (a Task): args (alloc, off, value, n)
def _memset_writes(e):
    a, off, _value, n = e.args
    return ((a.addr + off, n, a),)


def _memset_spans(e):
    a, off, _value, n = e.args
    return (((_space(a), a.addr + off, a.addr + off + n), True),)


def _memset_value(e):
    return e.args[2]


def _memset_nbytes(e):
    return e.args[3]


# KernelLaunch (a Task): args (task, name, fn, args, stream, blocks, timeout)
def _launch_name(e):
    return e.args[1]


def _launch_blocks(e):
    return e.args[5]


def _host_nbytes(e):
    extra = e.extra
    return extra.get("nbytes", 0) if extra else 0


def _aiv(name, role=Role.NONE, accesses=False, cost=Cost.AIV, trace=Trace.COPY, edge=None):
    """A kind of what a block of an AIV kernel does, at once (``sim.aiv``): a host-entry kind of the
    block's program (its fields are its ``extra``: ``block``, ``nbytes``, ``remote``, ``value``, ``after``)."""
    return Kind(name, HOST, role=role, sync_edge=edge, accesses=accesses, cost=cost, unit=Unit.AIV, trace=trace,
                event=ev.AivEvent, get={"nbytes": _host_nbytes})


_GENERIC = ("args", "detail")                       # what the accessors of a generic Task read
_GEN, _NOTIFY_OF = attrgetter("gen"), attrgetter("notify")     # (one accessor for every task kind: one pass)
_NOTIFY = ("notify", "gen", "target")
_TRANSFER = ("nbytes", "count", "dtype", "op", "channel", "peer_rank", "remote", "notify", "gen")
_TRANSFER_GET = {"nbytes": attrgetter("nbytes"), "count": attrgetter("count"), "dtype": _transfer_dtype,
                 "op": _transfer_op, "channel": attrgetter("channel"), "peer": attrgetter("peer_rank"),
                 "remote": attrgetter("remote"), "notify": _NOTIFY_OF, "gen": _GEN}
_RECORD_GET = {"waits": _const(False), "notify": _NOTIFY_OF, "gen": _GEN}
_WAIT_GET = {**_RECORD_GET, "waits": _const(True), "timeout": _wait_timeout}
_CHANNEL_GET = {"channel": _target_channel}


def _transfer(name, moves, notify=None):
    return Kind(name, TASK, role=Role.TRANSFER, moves=moves, notify=notify, link_signal=notify is not None,
                accesses=True, cost=Cost.TRANSFER, unit=Unit.LINK, trace=Trace.TRANSFER, event=ev.TransferEvent,
                fields=_TRANSFER, get=_TRANSFER_GET)


def _nbi(name, moves, notify=None):
    return Kind(name, HOST, role=Role.TRANSFER, moves=moves, notify=notify, link_signal=notify is not None,
                at_fence=True, accesses=True, cost=Cost.TRANSFER, unit=Unit.LINK, trace=Trace.HOST,
                event=ev.TransferEvent, get=_nbi_getters(moves == "write"))


def _record(name, entry=TASK, link=False, unit=Unit.STREAM):
    get = dict(_RECORD_GET) if entry == TASK else {}
    if link and entry == TASK:
        get.update(_CHANNEL_GET, peer=_target_peer)
    return Kind(name, entry, role=Role.RECORD, notify=NotifyUse.RECORD, link_signal=link, cost=Cost.NOTIFY_RECORD,
                unit=unit,
                trace=Trace.RECORD if entry == TASK else Trace.HOST, event=ev.NotifyEvent,
                fields=_NOTIFY if entry == TASK else (), get=get)


def _wait(name, entry=TASK, link=False, unit=Unit.STREAM):
    get = dict(_WAIT_GET) if entry == TASK else {}
    if link and entry == TASK:
        get.update(_CHANNEL_GET)
    return Kind(name, entry, role=Role.WAIT, notify=NotifyUse.WAIT, link_signal=link, cost=Cost.NOTIFY_WAIT,
                unit=unit,
                trace=Trace.WAIT if entry == TASK else Trace.HOST, event=ev.NotifyEvent,
                fields=_NOTIFY + ("timeout",) if entry == TASK else (), get=get)


def _blocking(name, edge):
    return Kind(name, HOST, role=Role.HOST_SYNC, sync_edge=edge, cost=Cost.RETURN, unit=Unit.HOST,
                trace=Trace.HOST, event=ev.SyncEvent)


# -- the kinds ----------------------------------------------------------------------------------------------
#: A task of no kind of its own (reads and writes as it says; no cost beyond its dispatch).
TASK_KIND = Kind("Task", TASK, accesses=True, fields=_GENERIC)
LOCAL_COPY = Kind("LocalCopy", TASK, accesses=True, cost=Cost.COPY, unit=Unit.MEMORY, trace=Trace.COPY,
                  event=ev.LocalCopyEvent, fields=("n", "src_alloc", "src_off", "dst_alloc", "dst_off"),
                  get={"nbytes": attrgetter("n")}, spans=_copy_spans)
LOCAL_REDUCE = Kind("LocalReduce", TASK, accesses=True, cost=Cost.REDUCE, unit=Unit.MEMORY, trace=Trace.REDUCE,
                    event=ev.LocalReduceEvent, fields=_GENERIC,
                    get={"nbytes": _written, "count": _reduce_count, "dtype": _reduce_dtype, "op": _reduce_op})
WRITE = _transfer("Write", "write")
READ = _transfer("Read", "read")
WRITE_REDUCE = _transfer("WriteReduce", "write")
READ_REDUCE = _transfer("ReadReduce", "read")
WRITE_WITH_NOTIFY = _transfer("WriteWithNotify", "write", NotifyUse.RECORD)
WRITE_REDUCE_WITH_NOTIFY = _transfer("WriteReduceWithNotify", "write", NotifyUse.RECORD)
WRITE_NBI = _nbi("WriteNbi", "write")
READ_NBI = _nbi("ReadNbi", "read")
WRITE_WITH_NOTIFY_NBI = _nbi("WriteWithNotifyNbi", "write", NotifyUse.RECORD)
THREAD_NOTIFY_RECORD = _record("ThreadNotifyRecord")
THREAD_NOTIFY_WAIT = _wait("ThreadNotifyWait")
ACLRT_NOTIFY_RECORD = _record("AclrtNotifyRecord")
ACLRT_NOTIFY_WAIT = _wait("AclrtNotifyWait")
CHANNEL_NOTIFY_RECORD = _record("ChannelNotifyRecord", link=True)
CHANNEL_NOTIFY_WAIT = _wait("ChannelNotifyWait", link=True)
CHANNEL_NOTIFY_RECORD_NOW = _record("ChannelNotifyRecordNow", HOST, link=True)
CHANNEL_NOTIFY_WAIT_NOW = _wait("ChannelNotifyWaitNow", HOST, link=True)
MEMCPY_ASYNC = Kind("MemcpyAsync", TASK, accesses=True, cost=Cost.MEMCPY, unit=Unit.MEMORY, trace=Trace.COPY,
                    event=ev.MemcpyEvent, fields=_GENERIC, spans=_memcpy_spans, unit_of=_memcpy_unit,
                    get={"reads": _memcpy_reads, "writes": _memcpy_writes, "nbytes": _memcpy_nbytes,
                         "direction": _memcpy_direction})
MEMCPY = Kind("Memcpy", HOST, accesses=True, cost=Cost.MEMCPY, unit=Unit.MEMORY, trace=Trace.HOST,
              event=ev.MemcpyEvent, unit_of=_memcpy_unit, get={"nbytes": _host_nbytes})
MEMSET_ASYNC = Kind("MemsetAsync", TASK, accesses=True, cost=Cost.MEMSET, unit=Unit.MEMORY, trace=Trace.COPY,
                    event=ev.MemsetEvent, fields=_GENERIC, spans=_memset_spans,
                    get={"reads": _const(()), "writes": _memset_writes, "nbytes": _memset_nbytes,
                         "value": _memset_value})
MEMSET = Kind("Memset", HOST, accesses=True, cost=Cost.MEMSET, unit=Unit.MEMORY, trace=Trace.HOST,
              event=ev.MemsetEvent, get={"nbytes": _host_nbytes})
ENGINE_CTX_COPY = Kind("EngineCtxCopy", HOST, accesses=True, cost=Cost.HOST_COPY, unit=Unit.HOST_LINK,
                       trace=Trace.HOST, event=ev.EngineCtxCopyEvent, get={"nbytes": _host_nbytes})
KERNEL_LAUNCH = Kind("KernelLaunch", TASK, role=Role.LAUNCH, unit=Unit.AICPU, trace=Trace.KERNEL,
                     event=ev.KernelLaunchEvent, fields=_GENERIC,
                     get={"reads": _const(()), "writes": _const(()), "name": _launch_name, "blocks": _launch_blocks})
AIV_KERNEL_LAUNCH = Kind("AivKernelLaunch", TASK, role=Role.LAUNCH, unit=Unit.AIV, trace=Trace.KERNEL,
                         event=ev.KernelLaunchEvent, fields=_GENERIC,
                         get={"reads": _const(()), "writes": _const(()), "name": _launch_name,
                              "blocks": _launch_blocks})
#: What a block of an AIV kernel does to global memory: a DataCopy in (a load) or out (a store) of its
#: local buffer (data: the race detector sees them); a flag stored (a release) or read (an acquire:
#: ordered after the flag store whose value it read); the block barrier (``SyncAll``: after every
#: block's arrival); the kernel's end (after every block's last entry: its stream goes on from there).
AIV_LOAD = _aiv("AivLoad", accesses=True)
AIV_STORE = _aiv("AivStore", accesses=True)
#: ... and a scalar read or write of global memory (``GlobalTensor::GetValue`` / ``SetValue``, a
#: dereferenced ``__gm__`` pointer): data too, but no task of the block's pipes (it costs nothing).
AIV_SCALAR_LOAD = _aiv("AivScalarLoad", accesses=True, cost=Cost.FREE)
AIV_SCALAR_STORE = _aiv("AivScalarStore", accesses=True, cost=Cost.FREE)
AIV_FLAG_STORE = _aiv("AivFlagStore", trace=Trace.RECORD)
AIV_FLAG_LOAD = _aiv("AivFlagLoad", role=Role.ACQUIRE, trace=Trace.WAIT, edge="flag")
AIV_SYNC_ALL = _aiv("AivSyncAll", role=Role.ACQUIRE, cost=Cost.FREE, trace=Trace.WAIT, edge="block")
AIV_KERNEL_END = _aiv("AivKernelEnd", role=Role.ACQUIRE, cost=Cost.FREE, trace=Trace.OTHER, edge="block")
COLLECTIVE = Kind("Collective", HOST, role=Role.MARKER, cost=Cost.FREE, unit=Unit.HOST, trace=Trace.CALL,
                  event=ev.CollectiveEvent)
SYNCHRONIZE = _blocking("Synchronize", "sync")
THREAD_JOIN = _blocking("ThreadJoin", "join")
CHANNEL_DRAIN = _blocking("ChannelDrain", "drain")
FENCE = Kind("Fence", HOST, role=Role.FENCE, unit=Unit.HOST, trace=Trace.HOST, event=ev.SyncEvent)
RENDEZVOUS = Kind("Rendezvous", HOST, role=Role.RENDEZVOUS, cost=Cost.FREE, unit=Unit.HOST, trace=Trace.HOST,
                  event=ev.RendezvousEvent)

# -- the CCU (pyhcomm.ccu): a mission's instructions are host effects of its program (it runs them in
# order, blocking at waits); its data moves, the event bits they set and its loops run on lanes (streams)
def _ccu_sync(name, role, notify, link=False, accesses=False):
    """A CCU mission's event / notify instruction (a host effect of its program): per bit of its mask,
    one entry with that bit's register (``notify``), ``cke`` (the register's number) and ``mask``."""
    return Kind(name, HOST, role=role, notify=notify, link_signal=link, accesses=accesses,
                cost=Cost.NOTIFY_RECORD if role is Role.RECORD else Cost.NOTIFY_WAIT, unit=Unit.CCU,
                trace=Trace.RECORD if role is Role.RECORD else Trace.WAIT, event=ev.CcuNotifyEvent)


def _ccu_join(name):
    return Kind(name, HOST, role=Role.HOST_SYNC, sync_edge="join", unit=Unit.CCU, trace=Trace.HOST,
                event=ev.SyncEvent)


_CCU_MOVE = ("nbytes", "reads", "writes")
CCU_KERNEL_LAUNCH = Kind("CcuKernelLaunch", TASK, role=Role.LAUNCH, unit=Unit.CCU, trace=Trace.KERNEL,
                         event=ev.KernelLaunchEvent, fields=("name",),
                         get={"reads": _const(()), "writes": _const(()), "name": attrgetter("name"),
                              "blocks": _const(1)})
CCU_LOCAL_COPY = Kind("CcuLocalCopy", TASK, accesses=True, cost=Cost.COPY, unit=Unit.CCU, trace=Trace.COPY,
                      event=ev.LocalCopyEvent, fields=_CCU_MOVE, get={"nbytes": attrgetter("nbytes")})
CCU_LOCAL_REDUCE = Kind("CcuLocalReduce", TASK, accesses=True, cost=Cost.REDUCE, unit=Unit.CCU, trace=Trace.REDUCE,
                        event=ev.LocalReduceEvent, fields=_CCU_MOVE + ("count", "dtype", "op"),
                        get={"nbytes": attrgetter("nbytes"), "count": attrgetter("count"), "dtype": _transfer_dtype,
                             "op": _transfer_op})
CCU_WRITE = _transfer("CcuWrite", "write")
CCU_READ = _transfer("CcuRead", "read")
CCU_WRITE_REDUCE = _transfer("CcuWriteReduce", "write")
CCU_READ_REDUCE = _transfer("CcuReadReduce", "read")
CCU_EVENT_SET = _record("CcuEventSet", unit=Unit.CCU)
CCU_LOOP_WAIT = _wait("CcuLoopWait", unit=Unit.CCU)
CCU_EVENT_RECORD = _ccu_sync("CcuEventRecord", Role.RECORD, NotifyUse.RECORD)
CCU_EVENT_WAIT = _ccu_sync("CcuEventWait", Role.WAIT, NotifyUse.WAIT)
CCU_NOTIFY_RECORD = _ccu_sync("CcuNotifyRecord", Role.RECORD, NotifyUse.RECORD, link=True)
CCU_NOTIFY_WAIT = _ccu_sync("CcuNotifyWait", Role.WAIT, NotifyUse.WAIT, link=True)
CCU_WRITE_VARIABLE = _ccu_sync("CcuWriteVariableWithNotify", Role.RECORD, NotifyUse.RECORD, link=True,
                               accesses=True)      # (writes the peer's variable slot: a pseudo address)
#: An instruction of a mission read a variable slot of a channel (what its peer writes): its ``reads``.
CCU_READ_VARIABLE = Kind("CcuReadVariable", HOST, accesses=True, unit=Unit.CCU, trace=Trace.HOST,
                         event=ev.CcuNotifyEvent)
CCU_LOOP_GROUP = _ccu_join("CcuLoopGroup")
CCU_MISSION_END = _ccu_join("CcuMissionEnd")
#: The CCU's kinds (a CCU engine runs them).
CCU_KINDS = (CCU_KERNEL_LAUNCH, CCU_LOCAL_COPY, CCU_LOCAL_REDUCE, CCU_WRITE, CCU_READ, CCU_WRITE_REDUCE,
             CCU_READ_REDUCE, CCU_EVENT_SET, CCU_LOOP_WAIT, CCU_EVENT_RECORD, CCU_EVENT_WAIT, CCU_NOTIFY_RECORD,
             CCU_NOTIFY_WAIT, CCU_WRITE_VARIABLE, CCU_READ_VARIABLE, CCU_LOOP_GROUP, CCU_MISSION_END)

#: Every kind, in the order of docs/record.md.
KINDS = (TASK_KIND, LOCAL_COPY, LOCAL_REDUCE, WRITE, READ, WRITE_REDUCE, READ_REDUCE, WRITE_WITH_NOTIFY,
         WRITE_REDUCE_WITH_NOTIFY, WRITE_NBI, READ_NBI, WRITE_WITH_NOTIFY_NBI, THREAD_NOTIFY_RECORD, THREAD_NOTIFY_WAIT,
         ACLRT_NOTIFY_RECORD, ACLRT_NOTIFY_WAIT, CHANNEL_NOTIFY_RECORD, CHANNEL_NOTIFY_WAIT, CHANNEL_NOTIFY_RECORD_NOW,
         CHANNEL_NOTIFY_WAIT_NOW, MEMCPY_ASYNC, MEMCPY, MEMSET_ASYNC, MEMSET, ENGINE_CTX_COPY, KERNEL_LAUNCH,
         AIV_KERNEL_LAUNCH, AIV_LOAD, AIV_STORE, AIV_SCALAR_LOAD, AIV_SCALAR_STORE, AIV_FLAG_STORE, AIV_FLAG_LOAD, AIV_SYNC_ALL, AIV_KERNEL_END,
         COLLECTIVE, SYNCHRONIZE, THREAD_JOIN, CHANNEL_DRAIN, FENCE, RENDEZVOUS) + CCU_KINDS
_BY_NAME = {str(k): k for k in KINDS}


def named(name) -> Kind:
    """The kind called ``name`` (a str, or a Kind: itself); ``KeyError`` for a name no kind has."""
    if name.__class__ is Kind:
        return name
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no task kind is called {name!r} (pyhcomm.sim.kinds.KINDS)") from None


def kinds_where(test) -> frozenset:
    """The kinds for which ``test(kind)`` holds."""
    return frozenset(k for k in KINDS if test(k))


__all__ = ["Kind", "Role", "NotifyUse", "Cost", "Unit", "Trace", "KINDS", "named", "kinds_where", "engine_name"]
