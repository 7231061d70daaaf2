"""Perfetto / Chrome trace JSON of a :class:`~pyhcomm.timing.timeline.Timeline`.

Layout (the Trace Event Format that ui.perfetto.dev and chrome://tracing open):

* a process per rank (``rank 3 (device 3)``; entries tied to no rank: a process per device);
* a track (thread) per stream, named after the HCOMM thread that issued on it when there is one
  (``thread 0x7410... / stream 0x5710...``; a CCU mission's lanes say ``(CCU)``), a track per block
  of each AIV kernel (``AIV kernel #41 block 0``: its loads, stores, flags and barriers), a track per
  CCU mission for its instructions (``CCU mission (launch #k)``), a ``host`` track per rank for host effects (a
  synchronize spans from its call to its return), an ``incoming`` track per rank where every
  write that lands in the rank's memory shows up, and an ``outgoing`` track where every read
  another rank makes of its memory shows up;
* a slice (``"ph": "X"``) per entry from start to end, named after its kind; ``args`` carry the
  seq, ``file:line`` of the call, the engine that ran it (when one did), bytes, peer, protocol,
  notify and generation;
* flow arrows (``"ph": "s"``/``"f"``), the way the data or the signal goes: a notify record to the
  wait that consumed it, a write to its ``incoming`` slice on the destination rank, a read's
  ``outgoing`` slice on the source rank to the read;
* a slice per collective call on a ``collectives`` track of each rank taking part (the entries
  whose kind's trace category is ``call``, :mod:`pyhcomm.sim.kinds`, are drawn there only).

Times are microseconds of the virtual clock (floats). The output is deterministic: the same
timeline gives the same bytes.
"""
from __future__ import annotations

import json
import os

from ..sim.kinds import Trace, Unit

_ARG_FIELDS = ("nbytes", "peer", "protocol", "dtype", "op", "count", "direction", "name", "result", "gen", "block",
               "remote", "value")
HOST_TID = 1
CALLS_TID = 2
INCOMING_TID = 3
OUTGOING_TID = 4


def rank_of_device(events) -> dict:
    """device -> rank, from the entries that name both (entries tied to no rank, a synchronize
    say, go to the process of their device's rank)."""
    out: dict = {}
    for ev in events:
        if ev.rank is not None and ev.device is not None:
            out.setdefault(ev.device, ev.rank)
    return out


def trace_events(tl) -> list:
    """The trace events of ``tl`` (a list of dicts, metadata first)."""
    t = _Trace(tl)
    for i, ev in enumerate(tl.events):
        end = tl.end[i]
        if end != end or end == float("inf") or ev.kind.trace is Trace.CALL:
            continue                          # never ran; call markers: the collectives track
        t.entry(i, ev, end)
    t.notify_arrows()
    t.calls()
    return t.meta + t.body


class _Trace:
    """The trace of one timeline while it is made: processes, tracks, slices, arrows."""

    def __init__(self, tl):
        self.tl = tl
        self.rank_of = rank_of_device(tl.events)
        self.meta: list = []
        self.body: list = []
        self.procs: dict = {}
        self.tracks: dict = {}          # (pid, stream) -> tid
        self.where: list = [None] * len(tl.events)     # (pid, tid, ts) of each slice

    def proc(self, rank, device) -> int:
        """The process of ``rank`` (or, with none, of ``device``), named on first use."""
        pid = rank + 1 if rank is not None else 100000 + (device or 0)
        if pid not in self.procs:
            label = f"rank {rank} (device {device})" if rank is not None else f"device {device}"
            self.procs[pid] = label
            self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
            self.meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                              "args": {"sort_index": pid}})
        return pid

    def track(self, pid, key, label) -> int:
        tid = self.tracks.get((pid, key))
        if tid is None:
            tid = self.tracks[(pid, key)] = len([k for k in self.tracks if k[0] == pid]) + 10
            self._name_thread(pid, tid, label)
        return tid

    def fixed_track(self, pid, tid, label) -> int:
        if (pid, -tid) not in self.tracks:
            self.tracks[(pid, -tid)] = tid
            self._name_thread(pid, tid, label)
        return tid

    def _name_thread(self, pid, tid, label) -> None:
        self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
        self.meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                          "args": {"sort_index": tid}})

    def entry(self, i, ev, end) -> None:
        """The slice of entry ``i`` on its track, and its transfer's slice on the other rank."""
        tl = self.tl
        rank = ev.rank if ev.rank is not None else self.rank_of.get(ev.device)
        pid = self.proc(rank, ev.device)
        ccu = ev.kind.unit is Unit.CCU
        if ev.kind.unit is Unit.AIV and ev.entry == "host":     # a block of an AIV kernel: a track each
            block = getattr(ev, "block", None)
            tid = self.track(pid, ("aiv", ev.kernel, block), f"AIV kernel #{ev.kernel} block {block}")
            begin = tl.issue[i]
        elif ev.entry == "host" and ccu and ev.kernel:     # a CCU mission's instructions: its own track
            tid = self.track(pid, ("ccu", ev.kernel), f"CCU mission (launch #{ev.kernel})")
            begin = tl.issue[i]
        elif ev.entry == "host":
            tid = self.fixed_track(pid, HOST_TID, "host")
            begin = tl.issue[i]
        else:
            label = (f"thread 0x{ev.thread:x} / stream 0x{ev.stream:x}" if ev.thread
                     else f"stream 0x{(ev.stream or 0):x}")
            if ev.side == "device":
                label += " (CCU)" if ccu else " (AI CPU)"
            tid = self.track(pid, ev.stream, label)
            begin = tl.start[i]
        ts, dur = _span(begin, end)
        self.body.append({"ph": "X", "name": ev.kind, "cat": ev.entry, "pid": pid, "tid": tid, "ts": ts,
                          "dur": dur, "args": _args(ev)})
        self.where[i] = (pid, tid, ts)
        for ends, outward in ((tl.destinations, True), (tl.sources, False)):
            other = ends.get(i)
            if other is not None:
                self.transfer(ev, pid, tid, ts, dur, other, outward)

    def transfer(self, ev, pid, tid, ts, dur, other, outward) -> None:
        """A write from this slice to the destination's incoming track, or a read from the
        source's outgoing track to this slice: the other end's slice and the arrow."""
        orank, odev = other
        opid = orank + 1 if orank is not None else 100000 + (odev or 0)
        if opid not in self.procs:
            label = f"rank {orank} (device {odev})" if orank is not None else f"device {odev}"
            self.procs[opid] = label
            self.meta.append({"ph": "M", "name": "process_name", "pid": opid, "tid": 0, "args": {"name": label}})
        if outward:
            otid = self.fixed_track(opid, INCOMING_TID, "incoming")
            name, cat = f"{ev.kind} from rank {ev.rank}", "incoming"
        else:
            otid = self.fixed_track(opid, OUTGOING_TID, "outgoing")
            name, cat = f"{ev.kind} by rank {ev.rank}", "outgoing"
        fields = ev._fields
        self.body.append({"ph": "X", "name": name, "cat": cat, "pid": opid, "tid": otid, "ts": ts, "dur": dur,
                          "args": {"seq": ev.seq, "bytes": ev.nbytes if "nbytes" in fields else 0, "site": ev.site}})
        (a_pid, a_tid), (b_pid, b_tid) = ((pid, tid), (opid, otid)) if outward else ((opid, otid), (pid, tid))
        self.body.append({"ph": "s", "id": 2 * ev.seq, "name": "transfer", "cat": "transfer", "pid": a_pid,
                          "tid": a_tid, "ts": ts})
        self.body.append({"ph": "f", "bp": "e", "id": 2 * ev.seq, "name": "transfer", "cat": "transfer",
                          "pid": b_pid, "tid": b_tid, "ts": ts})

    def notify_arrows(self) -> None:
        """A flow arrow from each notify record to the wait that consumed it."""
        tl, where, us = self.tl, self.where, 1e6
        flow = 0
        for a in tl.arrows:
            if a.kind != "notify" or where[a.src] is None or where[a.dst] is None:
                continue
            flow += 1
            spid, stid, sts = where[a.src]
            dpid, dtid, dts = where[a.dst]
            # the arrow ends where the signal reaches the wait (inside the wait's slice, never before
            # the record's start: a wait often starts long before its record)
            arrive = min(tl.end[a.dst], max(tl.end[a.src], dts / us))
            dts = _span(arrive, arrive)[0]
            self.body.append({"ph": "s", "id": 2 * flow + 1, "name": "notify", "cat": "notify", "pid": spid,
                              "tid": stid, "ts": sts})
            self.body.append({"ph": "f", "bp": "e", "id": 2 * flow + 1, "name": "notify", "cat": "notify",
                              "pid": dpid, "tid": dtid, "ts": dts})

    def calls(self) -> None:
        """A slice per collective call on the ``collectives`` track of each rank taking part."""
        for k, call in enumerate(self.tl.calls):
            for rank in call.ranks:
                pid = rank + 1
                if pid not in self.procs:
                    continue
                tid = self.fixed_track(pid, CALLS_TID, "collectives")
                ts, dur = _span(call.begin, call.end)
                self.body.append({"ph": "X", "name": call.name, "cat": "collective", "pid": pid, "tid": tid,
                                  "ts": ts, "dur": dur,
                                  "args": {"call": k, "modeled_us": round(call.seconds * 1e6, 3), **_call_args(call)}})


def _call_args(call) -> dict:
    """A call slice's facts beyond its time: its algorithm, collective, bytes and bandwidths."""
    out = {}
    if call.algorithm:
        out["algorithm"] = call.algorithm
    if call.op:
        out["op"] = call.op
    if call.nbytes:
        out["bytes"] = call.nbytes
        out["algbw_GBps"] = round(call.algbw / 1e9, 4)
        out["busbw_GBps"] = round(call.busbw / 1e9, 4)
    return out


def _args(ev) -> dict:
    """A slice's ``args``: seq, call site, engine, bytes, peer, protocol, notify and generation ..."""
    args = {"seq": ev.seq}
    if ev.site:
        args["site"] = ev.site
    if ev.engine is not None:
        args["engine"] = ev.engine
    fields = ev._fields
    for f in _ARG_FIELDS:
        v = getattr(ev, f) if f in fields else None
        if v is not None and v != "":
            args["bytes" if f == "nbytes" else f] = v
    notify = ev.notify if "notify" in fields else None
    if notify is not None:
        args["notify"] = f"{notify.owner} #{notify.index}"
    if ev.api:
        args["api"] = ev.api
    return args


def _span(begin: float, end: float) -> tuple:
    """``(ts, dur)`` in microseconds, both whole nanoseconds: the end of one slice and the start of
    the next on a stream round alike, so FIFO slices never overlap by a rounding error."""
    b, e = round(begin * 1e9), round(end * 1e9)
    return b / 1000, max(0, e - b) / 1000


def trace_dict(tl) -> dict:
    """The whole trace document: ``{"traceEvents": [...], "displayTimeUnit": "ns", ...}``."""
    model = tl.model
    other = {"clock": "pyhcomm virtual clock (microseconds)"}
    if model is not None:
        other["product"] = model.product
    return {"traceEvents": trace_events(tl), "displayTimeUnit": "ns", "otherData": other}


def write_trace(tl, dest) -> int:
    """Write the trace JSON of ``tl`` to ``dest`` (a path or an open text file); returns bytes written."""
    text = json.dumps(trace_dict(tl), separators=(",", ":"), ensure_ascii=False)
    if isinstance(dest, (str, os.PathLike)):
        with open(dest, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        dest.write(text)
    return len(text.encode("utf-8"))
