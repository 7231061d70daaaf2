"""Typed events: what the record says about each entry, as frozen values.

The hot path keeps only task objects (:mod:`pyhcomm.sim.task`) and host-effect objects
(:class:`pyhcomm.sim.record.HostEffect`); :meth:`pyhcomm.sim.record.Record.events` turns them
into the events of this module when the record is read (:mod:`.event_builder`), and
:meth:`~pyhcomm.sim.record.Record.export_jsonl` writes them as JSON lines (schema: docs/record.md).

Events are NamedTuples (immutable, cheap to build) with :class:`Event` mixed in. Every event has
the fields of :data:`COMMON`; each family of kinds adds its own (a kind's ``event`` says which
class it gets: :mod:`pyhcomm.sim.kinds`). An event's ``kind`` is that :class:`~pyhcomm.sim.kinds.Kind`
(a ``str``: its name), so the event carries the kind's traits. Byte ranges are :class:`Range` values; a
notify is named by :class:`NotifyId` (its owner and index) and the generation the entry set or
consumed (``gen``: the notify's record count, see :class:`pyhcomm.sim.notify.Notify`).
"""
from __future__ import annotations

import types
from typing import NamedTuple, Optional



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
    ("engine", Optional[str], None, False),  # the engine's name (or int value) of the issuing thread, channel,
                                             # engine context
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
CcuNotifyEvent = _event_type("CcuNotifyEvent", "A CCU mission's event and notify instructions (one entry per bit "
                              "of their mask).", (
    ("waits", bool, False, False),
    ("notify", Optional[NotifyId], None, False),   # the bit's register: index = the bit, owner names the CKE
    ("gen", Optional[int], None, False),
    ("timeout", Optional[float], None, False),
    ("cke", Optional[int], None, False),           # the sync register (CKE): an event's id, a channel's notify index
    ("mask", Optional[int], None, False),          # the instruction's whole mask
    ("variable", Optional[int], None, False),      # WriteVariableWithNotify: the peer's variable slot
    ("value", Optional[int], None, False)) + _CHANNEL)  # ... and the value written there
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
KernelLaunchEvent = _event_type("KernelLaunchEvent", "A kernel launch (an AI CPU kernel, or an AIV kernel's blocks).", (
    ("name", Optional[str], None, False),
    ("blocks", int, 1, False),
    ("issued", tuple, (), False)))             # seqs of the entries its kernel issued
AivEvent = _event_type("AivEvent", "What a block of an AIV kernel did to global memory (``AivLoad``, ``AivStore``, "
                        "``AivFlagStore``, ``AivFlagLoad``), its barrier (``AivSyncAll``) and the kernel's end.", (
    ("block", Optional[int], None, False),     # the block's index
    ("nbytes", int, 0, False),
    ("remote", Optional[int], None, False),    # the device reached over an AIV channel (None: its own)
    ("protocol", Optional[str], None, False),  # that channel's CommProtocol name
    ("value", Optional[int], None, False),     # a flag's value, stored or awaited
    ("after", tuple, (), False)))              # seqs of the entries ordered just before it (AivFlagLoad:
                                               # the flag store it read; AivSyncAll: the blocks' arrivals)
CollectiveEvent = _event_type("CollectiveEvent", "The marker of a collective call (``pyhcomm.collectives``): "
                              "recorded when the call returns, every entry of the call enqueued.", (
    ("name", Optional[str], None, False),      # the API (HcclAllGather ...) or the caller's tag
    ("first", int, 0, False),                  # the first seq of the call
    ("algorithm", Optional[str], None, False),  # the algorithm it ran (pyhcomm.collectives.algorithms)
    ("op", Optional[str], None, False),         # the collective (allreduce, allgather ...; None: not said)
    ("nbytes", Optional[int], None, False)))    # its data size as hccl_test counts it (None: not said)
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


_PLAIN = {str, bool, float}


def _json_value(v, hexa: bool):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return str(v)       # a Kind: its name
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
