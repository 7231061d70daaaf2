"""Perfetto / Chrome trace JSON of a :class:`~pyhcomm.timing.timeline.Timeline`.

Layout (the Trace Event Format that ui.perfetto.dev and chrome://tracing open):

* a process per rank (``rank 3 (device 3)``; entries tied to no rank: a process per device);
* a track (thread) per stream, named after the HCOMM thread that issued on it when there is one
  (``thread 0x7410... / stream 0x5710...``), a ``host`` track per rank for host effects (a
  synchronize spans from its call to its return), an ``incoming`` track per rank where every
  write that lands in the rank's memory shows up, and an ``outgoing`` track where every read
  another rank makes of its memory shows up;
* a slice (``"ph": "X"``) per entry from start to end, named after its kind; ``args`` carry the
  seq, ``file:line`` of the call, bytes, peer, protocol, notify and generation;
* flow arrows (``"ph": "s"``/``"f"``), the way the data or the signal goes: a notify record to the
  wait that consumed it, a write to its ``incoming`` slice on the destination rank, a read's
  ``outgoing`` slice on the source rank to the read;
* a slice per collective call on a ``collectives`` track of each rank taking part.

Times are microseconds of the virtual clock (floats). The output is deterministic: the same
timeline gives the same bytes.
"""
from __future__ import annotations

import json
import os

_ARG_FIELDS = ("nbytes", "peer", "protocol", "dtype", "op", "count", "direction", "name", "result", "gen")
HOST_TID = 1
CALLS_TID = 2
INCOMING_TID = 3
OUTGOING_TID = 4


def _rank_of(events) -> dict:
    """device -> rank, from the entries that name both (entries tied to no rank, a synchronize
    say, go to the process of their device's rank)."""
    out: dict = {}
    for ev in events:
        if ev.rank is not None and ev.device is not None:
            out.setdefault(ev.device, ev.rank)
    return out


def trace_events(tl) -> list:
    """The trace events of ``tl`` (a list of dicts, metadata first)."""
    events = tl.events
    rank_of = _rank_of(events)
    meta: list = []
    body: list = []
    procs: dict = {}
    tracks: dict = {}          # (pid, stream) -> tid
    names: dict = {}

    def proc(ev):
        rank = ev.rank if ev.rank is not None else rank_of.get(ev.device)
        pid = rank + 1 if rank is not None else 100000 + (ev.device or 0)
        if pid not in procs:
            label = f"rank {rank} (device {ev.device})" if rank is not None else f"device {ev.device}"
            procs[pid] = label
            meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
            meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                         "args": {"sort_index": pid}})
        return pid

    def track(pid, key, label):
        tid = tracks.get((pid, key))
        if tid is None:
            tid = tracks[(pid, key)] = len([k for k in tracks if k[0] == pid]) + 10
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}})
        return tid

    def fixed_track(pid, tid, label):
        if (pid, -tid) not in tracks:
            tracks[(pid, -tid)] = tid
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}})
        return tid

    where: list = [None] * len(events)     # (pid, tid, ts) of each slice
    destinations, sources = tl.destinations, tl.sources
    us = 1e6
    for i, ev in enumerate(events):
        end = tl.end[i]
        if end != end or end == float("inf") or ev.kind == "Collective":
            continue                          # never ran; call markers: the collectives track
        pid = proc(ev)
        if ev.entry == "host":
            tid = fixed_track(pid, HOST_TID, "host")
            begin = tl.issue[i]
        else:
            key = ev.stream
            label = (f"thread 0x{ev.thread:x} / stream 0x{ev.stream:x}" if ev.thread
                     else f"stream 0x{(ev.stream or 0):x}")
            if ev.side == "device":
                label += " (AI CPU)"
            tid = track(pid, key, label)
            begin = tl.start[i]
        args = {"seq": ev.seq}
        if ev.site:
            args["site"] = ev.site
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
        ts, dur = _span(begin, end)
        body.append({"ph": "X", "name": ev.kind, "cat": ev.entry, "pid": pid, "tid": tid, "ts": ts,
                     "dur": dur, "args": args})
        where[i] = (pid, tid, ts)
        for ends, outward in ((destinations, True), (sources, False)):
            other = ends.get(i)
            if other is None:
                continue
            orank, odev = other
            opid = orank + 1 if orank is not None else 100000 + (odev or 0)
            if opid not in procs:
                label = f"rank {orank} (device {odev})" if orank is not None else f"device {odev}"
                procs[opid] = label
                meta.append({"ph": "M", "name": "process_name", "pid": opid, "tid": 0, "args": {"name": label}})
            if outward:     # a write: from this slice to the destination's incoming track
                otid = fixed_track(opid, INCOMING_TID, "incoming")
                name, cat = f"{ev.kind} from rank {ev.rank}", "incoming"
            else:           # a read: from the source's outgoing track to this slice
                otid = fixed_track(opid, OUTGOING_TID, "outgoing")
                name, cat = f"{ev.kind} by rank {ev.rank}", "outgoing"
            body.append({"ph": "X", "name": name, "cat": cat, "pid": opid, "tid": otid, "ts": ts, "dur": dur,
                         "args": {"seq": ev.seq, "bytes": ev.nbytes if "nbytes" in fields else 0, "site": ev.site}})
            (a_pid, a_tid), (b_pid, b_tid) = ((pid, tid), (opid, otid)) if outward else ((opid, otid), (pid, tid))
            body.append({"ph": "s", "id": 2 * ev.seq, "name": "transfer", "cat": "transfer", "pid": a_pid,
                         "tid": a_tid, "ts": ts})
            body.append({"ph": "f", "bp": "e", "id": 2 * ev.seq, "name": "transfer", "cat": "transfer",
                         "pid": b_pid, "tid": b_tid, "ts": ts})
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
        body.append({"ph": "s", "id": 2 * flow + 1, "name": "notify", "cat": "notify", "pid": spid, "tid": stid,
                     "ts": sts})
        body.append({"ph": "f", "bp": "e", "id": 2 * flow + 1, "name": "notify", "cat": "notify", "pid": dpid,
                     "tid": dtid, "ts": dts})
    for k, call in enumerate(tl.calls):
        for rank in call.ranks:
            pid = rank + 1
            if pid not in procs:
                continue
            tid = fixed_track(pid, CALLS_TID, "collectives")
            ts, dur = _span(call.begin, call.end)
            body.append({"ph": "X", "name": call.name, "cat": "collective", "pid": pid, "tid": tid,
                         "ts": ts, "dur": dur,
                         "args": {"call": k, "modeled_us": round(call.seconds * us, 3),
                                  **({"algorithm": call.algorithm} if call.algorithm else {})}})
    return meta + body


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
