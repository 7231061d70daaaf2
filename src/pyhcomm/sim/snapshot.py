"""One process's record as values: what merging the records of several processes starts from.

:func:`snapshot` turns a Sim's record into a :class:`ProcessRecord`: the entries as values (no
object of the Sim: streams, memory and notifies become small stand-ins; a task keeps the common
fields and the fields its kind's accessors read, :attr:`pyhcomm.sim.kinds.Kind.fields`; an engine
becomes its name), both logs, and what the MPI transport noted for merging (which remote notify
records it sent, the generation each one that arrived set, where its ranks met the others:
communicator init, ``Comm.barrier``). Picklable: it crosses processes
(:func:`pyhcomm.sim.merge.gather`) or goes to a file (:meth:`ProcessRecord.save`).
:mod:`.merge` makes one record of the snapshots of every process of a job.
"""
from __future__ import annotations

import enum
import pickle

import numpy as np

from .kinds import Kind, engine_name
from .record import Record

#: Optional entry fields that read None while unset (as on the task objects).
_OPTIONAL = frozenset(("kernel", "batch", "program", "gen", "engine"))
#: The fields every task keeps (its kind's own come with them: ``Kind.fields``).
_TASK_FIELDS = ("seq", "kind", "stream", "thread", "rank", "device", "state", "side", "engine", "kernel", "batch",
                "program", "reads", "writes")
_HOST_FIELDS = ("seq", "kind", "api", "state", "rank", "device", "side", "engine", "thread", "stream", "kernel",
                "reads", "writes", "extra", "program")


# -- stand-ins for the objects of a Sim ---------------------------------------------------------------
class Entry:
    """A task or host effect as values: the fields its readers use (``entry`` says which).
    ``where``: the user's ``file:line``; ``site`` is that text too (None: inside pyhcomm)."""

    def __init__(self, fields: dict):
        self.__dict__.update(fields)

    def __getattr__(self, name):
        if name in _OPTIONAL:
            return None
        raise AttributeError(f"{self.__dict__.get('kind', 'entry')} entry has no field {name!r}")

    @property
    def where(self) -> str:
        return self.__dict__.get("site") or "<unknown>"

    def describe(self) -> str:
        who = f"rank {self.rank} " if self.rank is not None else ""
        return f"{self.kind} {self.entry} #{self.seq} on {who}device {self.device}, at {self.where}"

    def __repr__(self):
        return f"<Entry #{self.seq} {self.kind} {self.state}>"


class StreamRef:
    """A stream: its handle and device."""

    __slots__ = ("handle", "device", "label", "destroyed")

    def __init__(self, handle, device, label="stream", destroyed=False):
        self.handle, self.device, self.label, self.destroyed = handle, device, label, destroyed

    def __getstate__(self):
        return (self.handle, self.device, self.label, self.destroyed)

    def __setstate__(self, state):
        self.handle, self.device, self.label, self.destroyed = state

    def __repr__(self):
        return f"<StreamRef 0x{self.handle:x} device={self.device}>"


class MemoryRef:
    """An allocation: where it was, on which device (None: host memory), whose; no bytes."""

    __slots__ = ("addr", "size", "end", "device", "kind", "owner", "freed", "storage")

    def __init__(self, addr, size, device, kind, owner, freed):
        self.addr, self.size, self.end, self.device = addr, size, addr + size, device
        self.kind, self.owner, self.freed, self.storage = kind, owner, freed, None

    def __getstate__(self):
        return (self.addr, self.size, self.device, self.kind, self.owner, self.freed)

    def __setstate__(self, state):
        self.__init__(*state)

    def __repr__(self):
        return f"<MemoryRef 0x{self.addr:x} {self.size} B ({self.owner})>"


class NotifyRef:
    """A notify: ``owner`` and ``index`` (how its rank names it); ``process`` holds it, ``end`` is the
    transport's id of the channel end it belongs to when it was recorded from another process;
    ``counting``: it counts records (``pyhcomm.set_notify_counting``) instead of holding one bit
    (known of the notify objects of the process that holds it; False for a notify named by value,
    as ``RemoteNotify`` reads)."""

    __slots__ = ("owner", "index", "process", "end", "counting")

    def __init__(self, owner, index, process=0, end=None, counting=False):
        self.owner, self.index, self.process, self.end, self.counting = owner, index, process, end, counting

    def __getstate__(self):
        return (self.owner, self.index, self.process, self.end, self.counting)

    def __setstate__(self, state):
        self.owner, self.index, self.process, self.end, self.counting = state

    def __eq__(self, other):
        return isinstance(other, NotifyRef) and (other.owner, other.index) == (self.owner, self.index)

    def __hash__(self):
        return hash((self.owner, self.index))

    def __repr__(self):
        return f"<NotifyRef {self.owner}[{self.index}]>"


# -- one process's record as values -------------------------------------------------------------------
class ProcessRecord:
    """The record of one process's Sim as values (see the module docstring): picklable."""

    def __init__(self, process, processes, product, entries, xlog, whole, registries, facts):
        self.process = process          # its MPI rank (0 outside a job)
        self.processes = processes      # processes of the job
        self.product = product          # the product's name
        self.entries = entries          # Entry values, in seq order
        self.xlog = xlog                # [(step, execution-log value)]
        self.whole = whole              # Record.whole() of the record
        self.thread_engines, self.channel_info, self.batches, self.allocations = registries
        self.facts = facts              # the MPI transport's record_facts(), or None

    def save(self, path) -> None:
        """Write it to ``path`` (pickle)."""
        with open(path, "wb") as f:
            pickle.dump(self, f, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def load(path) -> "ProcessRecord":
        """Read one :meth:`save` wrote (a pickle: load only files you trust)."""
        with open(path, "rb") as f:
            part = pickle.load(f)
        if not isinstance(part, ProcessRecord):
            raise ValueError(f"{path}: not a pyhcomm process record")
        return part


class _Porter:
    """Turns the values an entry holds into stand-ins (one per object, so identity is kept)."""

    def __init__(self, process: int, mpi: bool):
        self.process, self.mpi = process, mpi
        self.memo: dict = {}

    def value(self, v):
        c = v.__class__
        if v is None or c is int or c is str or c is float or c is bool or c is Kind:
            return v
        if c is tuple:
            return tuple([self.value(x) for x in v])
        if c is list:
            return [self.value(x) for x in v]
        if c is dict:
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, enum.Enum) or isinstance(v, np.dtype):
            return v
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        key = id(v)
        got = self.memo.get(key)
        if got is not None:
            return got[1]
        out = self._object(v)
        self.memo[key] = (v, out)       # keeps v alive: ids stay unique while porting
        return out

    def _object(self, v):
        from .memory import Allocation
        from .notify import Notify
        from .stream import Stream
        if isinstance(v, type):     # a class (a data type): pickled by name
            return v
        if isinstance(v, Allocation):
            return MemoryRef(v.addr, v.size, v.device, v.kind, v.owner, v.freed)
        if isinstance(v, Stream):
            return StreamRef(v.handle, v.device, v.label, v.destroyed)
        if isinstance(v, Notify):
            return NotifyRef(v.owner, v.index, self.process, None, v.counting)
        if hasattr(v, "owner") and hasattr(v, "index"):     # a notify named as a value (RemoteNotify)
            peer = getattr(v, "peer", None)
            end = getattr(peer, "end", None)
            if end is None:
                return NotifyRef(v.owner, v.index, self.process)
            return NotifyRef(v.owner, v.index, end >> 32 if self.mpi else self.process, end)
        if isinstance(v, int):      # IntEnum and other int subclasses
            return int(v)
        return None                 # functions, arrays, tasks, peers: nothing a reader of the record uses

    def entry(self, e) -> Entry:
        missing = object()
        fields = {"entry": e.entry}
        names = _HOST_FIELDS if e.entry == "host" else _TASK_FIELDS + e.kind.fields
        for name in names:
            v = getattr(e, name, missing)
            if v is not missing:
                fields[name] = engine_name(v) if name == "engine" else self.value(v)
        if e.entry == "host":
            fields["batch"] = None
        fields["site"] = e.where if e.site else None
        return Entry(fields)


def snapshot(source) -> ProcessRecord:
    """The record of ``source`` (a Sim, or a bare Record: then no MPI facts) as a
    :class:`ProcessRecord`."""
    record = getattr(source, "record", source)
    if not isinstance(record, Record):
        raise TypeError(f"snapshot: {source!r} is neither a Sim nor a Record")
    facts = None if source is record else source.transport.record_facts()
    process = facts["process"] if facts else 0
    runtime = getattr(source, "runtime", None)
    product = runtime.product.name if runtime is not None else None
    porter = _Porter(process, facts is not None)
    entries = [porter.entry(e) for e in record.entries()]
    base = record.step_count() - len(record.xlog)
    xlog = [(base + i + 1, v) for i, v in enumerate(record.xlog)]
    registries = (dict(record.thread_engines), dict(record.channel_info), list(record.batches),
                  list(record.allocations))
    return ProcessRecord(process, facts["processes"] if facts else 1, product, entries, xlog, record.whole(),
                         registries, facts)


__all__ = ["ProcessRecord", "Entry", "StreamRef", "MemoryRef", "NotifyRef", "snapshot"]
