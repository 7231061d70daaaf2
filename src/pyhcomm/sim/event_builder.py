"""Building the typed events (:mod:`.events`) of a record's entries, when the record is read.

A task's event fields come from its kind's accessors (:mod:`.kinds`), a host effect's from its
``extra``; the common fields from the entry itself. One :class:`Builder` serves one read of the
record: it numbers the host memory regions the entries touch in the order it meets them.
"""
from __future__ import annotations

from .events import NotifyId, Range
from .kinds import engine_name


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
        """The :class:`~.events.Event` fields of a task or host effect."""
        stream = e.stream
        if stream is not None and not isinstance(stream, int):
            stream = stream.handle
        thread = e.thread or None
        engine = engine_name(e.engine)
        if engine is None and thread is not None:
            engine = self.record.thread_engines.get(thread)
        return dict(seq=e.seq, kind=e.kind, state=e.state, step=self.steps.get(e.seq), rank=e.rank,
                    device=e.device, side=e.side, engine=engine, thread=thread, stream=stream,
                    kernel=e.kernel, batch=e.batch, program=e.program, site=e.where if e.site else None)

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
    def build(self, e):
        """The event of entry ``e`` (a task, a host effect, or a stand-in of either)."""
        kind = e.kind
        f = self.common(e)
        if e.entry == "host":
            f.update(entry="host", api=e.api, reads=self.ranges(e.reads), writes=self.ranges(e.writes))
            fields = dict(e.extra) if e.extra else {}
        else:
            f["entry"] = "task"
            fields = {name: get(e) for name, get in kind.event_getters}
            fields["reads"] = self.ranges(fields["reads"])
            fields["writes"] = self.ranges(fields["writes"])
            if "issued" in kind.event._fields:
                fields["issued"] = tuple(self.issued.get(e.seq, ()))
        if "notify" in fields:
            fields["notify"] = self.notify_id(fields["notify"])
        if "channel" in fields:                     # the record's peer and protocol of the channel
            peer = fields.pop("peer", None) if e.entry == "task" else None
            fields.update(self.channel(fields["channel"]))
            if peer is not None:
                fields.setdefault("peer", peer)     # (a task's own peer when the record has none)
        return kind.event(**f, **fields)


__all__ = ["Builder"]
