"""Typed events: what the record says about each entry, as frozen values.

The hot path keeps only task objects (:mod:`pyhcomm.sim.task`) and host-effect objects
(:class:`pyhcomm.sim.record.HostEffect`); :meth:`pyhcomm.sim.record.Record.events` turns them
into the events of this module when the record is read, and
:meth:`~pyhcomm.sim.record.Record.export_jsonl` writes them as JSON lines (schema: docs/record.md).

Events are NamedTuples (immutable, cheap to build) with :class:`Event` mixed in. Every event has
the fields of :data:`COMMON`; each family of kinds adds its own (:data:`EVENT_TYPES` says which
class a kind gets). Byte ranges are :class:`Range` values; a
notify is named by :class:`NotifyId` (its owner and index) and the generation the entry set or
consumed (``gen``: the notify's record count, see :class:`pyhcomm.sim.notify.Notify`).
"""
from __future__ import annotations

import types
from typing import NamedTuple, Optional

from ..enums import NUMPY_DTYPE, HcommDataType, HcommReduceOp, aclrtMemcpyKind


class Range(NamedTuple):
    """``size`` bytes at ``addr``. Device memory: ``host`` is None and ``addr`` is the simulated
    device address. Host memory: ``addr`` is the real process address (it differs between runs),
    ``host`` the number of its host region in this record (0, 1, ... by first appearance) and
    ``offset`` the offset in that region."""

    addr: int
    size: int
    host: int | None = None
    offset: int = 0

    def symbol(self) -> str:
        """``0x...`` for device memory, ``host#<k>+<offset>`` for host memory (deterministic)."""
        if self.host is None:
            return f"0x{self.addr:x}"
        return f"host#{self.host}+{self.offset}"


class NotifyId(NamedTuple):
    """A notify register: ``owner`` (who waits on it, e.g. ``rank 0 thread 0x7410...``) and its index."""

    owner: str
    index: int


class Event:
    """What every event is (a mixin of the event NamedTuples below: ``isinstance(ev, Event)``)."""

    __slots__ = ()
    _hex: frozenset = frozenset()

    def to_json(self) -> dict:
        """The event as a JSON-ready dict, keys in field order (stable), addresses symbolic,
        handles as hex strings."""
        hexed = self._hex
        out = {}
        for name, v in zip(self._fields, self):
            c = v.__class__
            if c is int:
                out[name] = f"0x{v:x}" if name in hexed else v
            elif v is None or c in _PLAIN:
                out[name] = v
            else:
                out[name] = _json_value(v, name in hexed)
        return out


#: The fields every event has, in order: (name, type, default, hex in JSON). Meanings and units:
#: docs/record.md.
COMMON = (
    ("seq", int, 0, False),                 # issue order (the record's counter), from 1
    ("kind", str, "", False),               # LocalCopy, Write, ThreadNotifyWait, Memcpy, Synchronize, ...
    ("entry", str, "task", False),          # "task" (ran on a stream) or "host" (a host effect, done at once)
    ("api", Optional[str], None, False),    # the API call of a host effect (tasks: None)
    ("state", str, "pending", False),       # pending, running, done, failed, skipped
    ("step", Optional[int], None, False),   # execution step (1, 2, ...): when it ran, failed or was skipped
    ("rank", Optional[int], None, False),
    ("device", Optional[int], None, False),
    ("side", Optional[str], None, False),   # "host" or "device" (issued inside an AI CPU kernel)
    ("engine", Optional[str], None, False),  # CommEngine name of the thread (or engine context)
    ("thread", Optional[int], None, True),
    ("stream", Optional[int], None, True),
    ("kernel", Optional[int], None, False),  # seq of the KernelLaunch whose kernel issued it
    ("batch", Optional[int], None, False),   # id of the HCOMM batch it was launched from
    ("program", Optional[int], None, False),  # the host program or kernel that issued it
    ("site", Optional[str], None, False),    # file:line of the user's call
    ("reads", tuple, (), False),             # Range values
    ("writes", tuple, (), False),            # Range values
)

_CHANNEL = (("channel", Optional[int], None, True),   # the channel handle of this end
            ("peer", Optional[int], None, False),     # the rank at the other end
            ("protocol", Optional[str], None, False))  # CommProtocol name


def _event_type(name: str, doc: str, extra=()):
    """A NamedTuple of the common fields plus ``extra``, with :class:`Event` mixed in."""
    spec = COMMON + tuple(extra)
    ns = {"__annotations__": {f: t for f, t, _d, _h in spec}, "__module__": __name__}
    ns.update({f: d for f, _t, d, _h in spec})
    base = types.new_class(f"_{name}", (NamedTuple,), {}, lambda body: body.update(ns))
    return type(name, (base, Event), {"__slots__": (), "__doc__": doc, "__module__": __name__,
                                      "_hex": frozenset(f for f, _t, _d, h in spec if h)})


#: An entry of a kind with no event type of its own: the common fields only.
TaskEvent = _event_type("TaskEvent", "An entry of a kind without an event type of its own.")
LocalCopyEvent = _event_type("LocalCopyEvent", "``HcommLocalCopyOnThread``.", (("nbytes", int, 0, False),))
LocalReduceEvent = _event_type("LocalReduceEvent", "``HcommLocalReduceOnThread``.", (
    ("nbytes", int, 0, False),
    ("count", int, 0, False),                  # elements
    ("dtype", Optional[str], None, False),     # HcommDataType name
    ("op", Optional[str], None, False)))       # HcommReduceOp name
TransferEvent = _event_type("TransferEvent", "One-sided transfers over a channel (also the host NBI calls).",
                            _CHANNEL + (
    ("nbytes", int, 0, False),
    ("count", Optional[int], None, False),     # reduce kinds: elements
    ("dtype", Optional[str], None, False),
    ("op", Optional[str], None, False),
    ("notify", Optional[NotifyId], None, False),  # WithNotify kinds: the peer's notify it sets
    ("gen", Optional[int], None, False)))      # the generation it set (None until it ran)
NotifyEvent = _event_type("NotifyEvent", "Notify records and waits (thread, runtime and channel notifies, and "
                          "the thread-less channel calls).", (
    ("waits", bool, False, False),
    ("notify", Optional[NotifyId], None, False),
    ("gen", Optional[int], None, False),       # record: the generation it set; wait: the one it consumed
    ("timeout", Optional[float], None, False)) + _CHANNEL)  # waits: seconds, 0 = forever
MemcpyEvent = _event_type("MemcpyEvent", "``aclrtMemcpyAsync`` (task) and ``aclrtMemcpy`` (host effect).", (
    ("nbytes", int, 0, False),
    ("direction", Optional[str], None, False)))  # the aclrtMemcpyKind name given
MemsetEvent = _event_type("MemsetEvent", "``aclrtMemsetAsync`` (task) and ``aclrtMemset`` (host effect).", (
    ("nbytes", int, 0, False),
    ("value", int, 0, False)))                 # the byte written
EngineCtxCopyEvent = _event_type("EngineCtxCopyEvent", "``HcclEngineCtxCopy``: host bytes into an engine context.", (
    ("nbytes", int, 0, False),
    ("tag", Optional[str], None, False),
    ("source", Optional[str], None, False)))   # "pointer" (host memory, in reads) or "object" (bytes-like)
KernelLaunchEvent = _event_type("KernelLaunchEvent", "An AI CPU kernel launch.", (
    ("name", Optional[str], None, False),
    ("blocks", int, 1, False),
    ("issued", tuple, (), False)))             # seqs of the entries its kernel issued
CollectiveEvent = _event_type("CollectiveEvent", "The marker of a collective call (``pyhcomm.collectives``): "
                              "recorded when the call returns, every entry of the call enqueued.", (
    ("name", Optional[str], None, False),      # the API (HcclAllGather ...) or the caller's tag
    ("first", int, 0, False),                  # the first seq of the call
    ("algorithm", Optional[str], None, False)))  # the algorithm it ran (pyhcomm.collectives.algorithms)
SyncEvent = _event_type("SyncEvent", "Blocking host calls, recorded when they return: ``Synchronize`` (stream and "
                        "device synchronize, stream destroy), ``ThreadJoin``, ``ChannelDrain``, ``Fence``.", (
    ("streams", tuple, (), True),
    ("timeout", Optional[float], None, False),  # seconds (None: forever)
    ("result", Optional[str], None, False)) + _CHANNEL)  # done, timeout, stuck, aborted, or an error code name
RendezvousEvent = _event_type("RendezvousEvent", "A host rendezvous of several host programs (communicator init, "
                              "``Comm.barrier``), recorded once, by the program that completed it.", (
    ("group", Optional[str], None, False),      # the communicator's name
    ("ranks", tuple, (), False),                # the ranks that met
    ("programs", tuple, (), False)))            # their host programs, in rank order


#: The event class of each kind (any other kind gets :class:`TaskEvent`).
EVENT_TYPES = {
    "LocalCopy": LocalCopyEvent,
    "LocalReduce": LocalReduceEvent,
    **{k: TransferEvent for k in ("Write", "Read", "WriteReduce", "ReadReduce", "WriteWithNotify",
                                  "WriteReduceWithNotify", "WriteNbi", "ReadNbi", "WriteWithNotifyNbi")},
    **{k: NotifyEvent for k in ("ThreadNotifyRecord", "ThreadNotifyWait", "AclrtNotifyRecord", "AclrtNotifyWait",
                                "ChannelNotifyRecord", "ChannelNotifyWait", "ChannelNotifyRecordNow",
                                "ChannelNotifyWaitNow")},
    "MemcpyAsync": MemcpyEvent,
    "Memcpy": MemcpyEvent,
    "MemsetAsync": MemsetEvent,
    "Memset": MemsetEvent,
    "EngineCtxCopy": EngineCtxCopyEvent,
    "KernelLaunch": KernelLaunchEvent,
    "Collective": CollectiveEvent,
    "Synchronize": SyncEvent,
    "ThreadJoin": SyncEvent,
    "ChannelDrain": SyncEvent,
    "Fence": SyncEvent,
    "Rendezvous": RendezvousEvent,
}


_PLAIN = {str, bool, float}


def _json_value(v, hexa: bool):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, Range):
        return [v.symbol(), v.size]
    if isinstance(v, NotifyId):
        return {"owner": v.owner, "index": v.index}
    if isinstance(v, int):
        return f"0x{v:x}" if hexa else int(v)
    if isinstance(v, float):
        return v
    if isinstance(v, (tuple, list)):
        return [_json_value(x, hexa) for x in v]
    return str(v)  # not reached for the kinds above: no object reprs in an export


# -- building events from entries ------------------------------------------------------------------
_DTYPE_OF = {np_dtype: HcommDataType(dt) for dt, np_dtype in NUMPY_DTYPE.items()}


def _enum_name(enum, value):
    if value is None:
        return None
    try:
        return enum(value).name
    except ValueError:
        return str(value)


class Builder:
    """Turns entries into events; owns the host-region numbering of one read of the record."""

    def __init__(self, record, steps, issued):
        self.record = record
        self.steps = steps          # seq -> first execution step
        self.issued = issued        # kernel seq -> seqs it issued
        self.regions = {}           # id(host allocation) -> (number, allocation)

    # -- fields ------------------------------------------------------------------------------------
    def range(self, addr, size, alloc=None) -> Range:
        """A Range; ``alloc`` is the allocation holding it, when known (host memory is numbered)."""
        if alloc is None or getattr(alloc, "kind", "device") != "host":
            return Range(addr, size)
        entry = self.regions.get(id(alloc))
        if entry is None:
            entry = self.regions[id(alloc)] = (len(self.regions), alloc)  # keeps alloc alive: ids stay unique
        return Range(addr, size, entry[0], addr - alloc.addr)

    def ranges(self, spans) -> tuple:
        out = []
        for span in spans:
            if isinstance(span, Range):
                out.append(span)
            elif len(span) > 2:
                out.append(self.range(span[0], span[1], span[2]))
            else:
                out.append(Range(span[0], span[1]))
        return tuple(out)

    def common(self, e) -> dict:
        """The :class:`Event` fields of a task or host effect."""
        rec = self.record
        stream = e.stream
        if stream is not None and not isinstance(stream, int):
            stream = stream.handle
        thread = e.thread or None
        engine = getattr(e, "engine", None) if e.entry == "host" else None
        if engine is None and thread is not None:
            engine = rec.thread_engines.get(thread)
        return dict(seq=e.seq, kind=e.kind, state=e.state, step=self.steps.get(e.seq), rank=e.rank,
                    device=e.device, side=e.side, engine=engine, thread=thread, stream=stream,
                    kernel=getattr(e, "kernel", None), batch=getattr(e, "batch", None),
                    program=getattr(e, "program", None), site=e.where if e.site else None)

    def channel(self, handle) -> dict:
        info = self.record.channel_info.get(handle)
        if info is None:
            return dict(channel=handle)
        protocol, peer = info
        return dict(channel=handle, peer=peer, protocol=protocol)

    @staticmethod
    def notify_id(n):
        return None if n is None else NotifyId(n.owner, n.index)

    # -- one entry ---------------------------------------------------------------------------------
    def build(self, e) -> Event:
        if e.entry == "host":
            return self.host(e)
        kind = e.kind
        f = self.common(e)
        f["entry"] = "task"
        fn = _TASKS.get(kind)
        if fn is None:
            return TaskEvent(reads=self.ranges(e.reads), writes=self.ranges(e.writes), **f)
        return fn(self, e, f)

    def host(self, e) -> Event:
        f = self.common(e)
        f.update(entry="host", api=e.api, reads=self.ranges(e.reads), writes=self.ranges(e.writes))
        extra = dict(e.extra) if e.extra else {}
        if "notify" in extra:
            extra["notify"] = self.notify_id(extra["notify"])
        if "channel" in extra:
            extra.update(self.channel(extra["channel"]))
        cls = EVENT_TYPES.get(e.kind, TaskEvent)
        return cls(**f, **extra)


# -- per-kind builders for tasks --------------------------------------------------------------------
def _local_copy(b, t, f):
    return LocalCopyEvent(reads=b.ranges(t.reads), writes=b.ranges(t.writes), nbytes=t.n, **f)


def _local_reduce(b, t, f):
    dt, op = t.detail if t.detail else (None, None)
    count = t.args[4]
    return LocalReduceEvent(reads=b.ranges(t.reads), writes=b.ranges(t.writes), nbytes=t.writes[0][1],
                            count=count, dtype=_enum_name(HcommDataType, dt), op=_enum_name(HcommReduceOp, op), **f)


def _transfer(b, t, f):
    args = t.args
    ch, _peer = t.detail
    if "Reduce" not in t.kind:  # copy: (api, peer, remote, alloc, off, nbytes, notify, write)
        nbytes, count, dtype, op = args[5], None, None, None
    else:               # reduce: (api, peer, remote, alloc, off, count, np_dtype, op, notify, into_peer)
        count, dtype, op = args[5], _DTYPE_OF.get(args[6]), args[7]
        nbytes = t.writes[0][1]
        dtype, op = _enum_name(HcommDataType, dtype), _enum_name(HcommReduceOp, op)
    notify = getattr(t, "notify", None)
    info = b.channel(ch)
    info.setdefault("peer", _peer)
    return TransferEvent(reads=b.ranges(t.reads), writes=b.ranges(t.writes), nbytes=nbytes, count=count,
                         dtype=dtype, op=op, notify=b.notify_id(notify), gen=getattr(t, "gen", None),
                         **info, **f)


def _notify(b, t, f):
    extra = {}
    if t.kind.startswith("Channel"):
        extra = b.channel(t.target[0])
        if t.kind == "ChannelNotifyRecord":
            extra["peer"] = t.target[1]
    return NotifyEvent(waits=t.waits, notify=b.notify_id(t.notify), gen=getattr(t, "gen", None),
                       timeout=t.timeout if t.waits else None, **extra, **f)


def _memcpy_async(b, t, f):
    d, d_off, s, s_off, n, _keep = t.args
    return MemcpyEvent(reads=(b.range(s.addr + s_off, n, s),), writes=(b.range(d.addr + d_off, n, d),),
                       nbytes=n, direction=_enum_name(aclrtMemcpyKind, t.detail), **f)


def _memset_async(b, t, f):
    a, off, value, n = t.args
    return MemsetEvent(writes=(b.range(a.addr + off, n, a),), nbytes=n, value=value, **f)


def _kernel_launch(b, t, f):
    _task, name, _fn, _args, _stream, blocks, _timeout = t.args
    return KernelLaunchEvent(name=name, blocks=blocks, issued=tuple(b.issued.get(t.seq, ())), **f)


_TASKS = {
    "LocalCopy": _local_copy,
    "LocalReduce": _local_reduce,
    **{k: _transfer for k in ("Write", "Read", "WriteReduce", "ReadReduce", "WriteWithNotify",
                              "WriteReduceWithNotify")},
    **{k: _notify for k in ("ThreadNotifyRecord", "ThreadNotifyWait", "AclrtNotifyRecord", "AclrtNotifyWait",
                            "ChannelNotifyRecord", "ChannelNotifyWait")},
    "MemcpyAsync": _memcpy_async,
    "MemsetAsync": _memset_async,
    "KernelLaunch": _kernel_launch,
}


# -- sizes without events (the timing model) --------------------------------------------------------
def _device_of(span):
    alloc = span[2] if len(span) > 2 else None
    if alloc is not None:
        return getattr(alloc, "device", None)
    from .memory import device_of_address
    return device_of_address(span[0])


def transfer_view(record, e) -> tuple:
    """``(nbytes, protocol name, remote device)`` of a transfer entry (task or NBI host effect),
    read straight from the entry, without building its event: what the timing model needs of the
    millions of transfers of a large run. ``remote device`` is where a write lands or a read reads
    (None when unknown)."""
    kind = e.kind
    if e.entry == "host":
        extra = e.extra or {}
        info = record.channel_info.get(extra.get("channel"))
        spans = e.writes if kind.startswith("Write") else e.reads
        nbytes = extra.get("nbytes") or (spans[0][1] if spans else 0)
    else:
        info = record.channel_info.get(e.detail[0])
        spans = e.writes if kind.startswith("Write") else e.reads
        nbytes = e.args[5] if "Reduce" not in kind else e.writes[0][1]
    remote = _device_of(spans[0]) if spans else None
    return nbytes, (info[0] if info else None), remote


def local_bytes(e) -> int:
    """Bytes a local operation moves or writes (LocalCopy, LocalReduce, MemcpyAsync, MemsetAsync,
    and the synchronous host effects), without building its event."""
    kind = e.kind
    if e.entry == "host":
        extra = e.extra or {}
        return extra.get("nbytes", 0)
    if kind == "LocalCopy":
        return e.n
    if kind == "MemcpyAsync":
        return e.args[4]
    if kind == "MemsetAsync":
        return e.args[3]
    return e.writes[0][1] if e.writes else 0
