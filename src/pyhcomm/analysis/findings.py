"""Findings: what the verifier's checks report, in words a user understands.

A :class:`Finding` has a ``kind`` (:data:`KINDS`), a one-line ``title``, the lines of its
explanation (``lines``: who did what where, and what would fix it), the seqs of the record entries
it is about, and a ``key`` that is the same for the same defect in another schedule (the call
sites and kinds, not the seqs), so that exploration reports each defect once.

:class:`Describer` names entries (``Write task #57 of rank 0 thread 0x7410...00080, queued at
algo.py:12``), programs and memory (``rank 1's HCCL buffer [+0x1000, +0x1040)``) for the checks.
"""
from __future__ import annotations

import bisect

RACE, LOST_RECORD, LATE_WAIT, NOTIFY_LEFT_SET = "race", "lost-record", "late-wait", "notify-left-set"
HANG, UNSYNCHRONIZED, ERROR = "hang", "unsynchronized", "error"
#: Every kind of finding: a data race; a notify record lost (two records before one wait); a wait
#: satisfied by the record of a later round; a notify still set at the end; waits that can never be
#: satisfied; work the issuing program never waited for; a rank that failed.
KINDS = (RACE, LOST_RECORD, LATE_WAIT, NOTIFY_LEFT_SET, HANG, UNSYNCHRONIZED, ERROR)


class Finding:
    """One defect found in a run (see the module docstring)."""

    __slots__ = ("kind", "title", "lines", "seqs", "key", "details", "schedule", "replay", "count")

    def __init__(self, kind: str, title: str, lines=(), seqs=(), key=None, details=None):
        self.kind = kind
        self.title = title
        self.lines = list(lines)
        self.seqs = tuple(seqs)
        self.key = key if key is not None else (kind, title)
        self.details = dict(details or {})
        self.schedule = None        # the schedule that found it (set by the explorer)
        self.replay = None          # a command that replays that schedule
        self.count = 1              # how many times it occurred in that run

    def text(self) -> str:
        """The finding as a few lines of text (title, explanation, how to replay it)."""
        out = [f"{self.kind}: {self.title}"] + [f"  {line}" for line in self.lines]
        if self.schedule is not None:
            out.append(f"  found in schedule {self.schedule}" + (f"; replay: {self.replay}" if self.replay else ""))
        return "\n".join(out)

    __str__ = text

    def to_json(self) -> dict:
        return {"kind": self.kind, "title": self.title, "lines": self.lines, "seqs": list(self.seqs),
                "count": self.count, "schedule": self.schedule, "replay": self.replay,
                "details": _plain(self.details)}

    def __repr__(self):
        return f"<Finding {self.kind}: {self.title}>"


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


_OWNERS = {"hccl": "HCCL buffer", "engine_ctx": "engine context", "user": "device memory"}


class Describer:
    """Names entries, programs and memory of one record, for messages."""

    def __init__(self, graph):
        self.g = graph
        rec = graph.record
        self.allocs = sorted(rec.allocations)
        self.starts = [a[0] for a in self.allocs]
        self._rank_of_device = None

    @property
    def rank_of_device(self) -> dict:
        """device -> the rank of the first entry on it (made on first use: naming memory)."""
        if self._rank_of_device is None:
            found = self._rank_of_device = {}
            for e in self.g.entries:
                if e.rank is not None and e.device is not None:
                    found.setdefault(e.device, e.rank)
            programs = self.g.programs
            for e in self.g.entries:    # else: the rank of the host program that used the device
                p = programs.get(e.program)
                if e.device is not None and e.device not in found and p is not None and len(p.ranks) == 1:
                    found[e.device] = p.ranks[0]
        return self._rank_of_device

    # -- entries ---------------------------------------------------------------------------------
    def where(self, e) -> str:
        return e.where if e.site else "<inside pyhcomm>"

    def who(self, e) -> str:
        """``rank 0 thread 0x...`` / ``stream 0x... of device 0`` / a program's label."""
        if e.entry == "task":
            rank = f"rank {e.rank} " if e.rank is not None else ""
            if e.thread:
                return f"{rank}thread 0x{e.thread:x}"
            return f"{rank}stream 0x{e.stream.handle:x} of device {e.device}"
        return self.program_label(e.program)

    def program_label(self, program) -> str:
        p = self.g.programs.get(program)
        return p.label if p is not None else "an unknown program"

    def entry(self, e) -> str:
        """``Write task #57 on rank 0 thread 0x..., queued at algo.py:12`` (tasks) or
        ``aclrtMemcpy #60 by rank 1's host program at prog.py:30`` (host effects)."""
        if e.entry == "task":
            inside = ""
            if e.side == "device" and e.kernel:
                p = self.g.programs.get(e.program)
                inside = f" by {p.label}" if p is not None else f" by the kernel of launch #{e.kernel}"
            return f"{e.kind} task #{e.seq} on {self.who(e)}{inside}, queued at {self.where(e)}"
        return f"{e.api or e.kind} #{e.seq} by {self.program_label(e.program)} at {self.where(e)}"

    def short(self, e) -> str:
        """``Write (algo.py:12)``."""
        return f"{e.kind if e.entry == 'task' else (e.api or e.kind)} at {self.where(e)}"

    # -- memory ----------------------------------------------------------------------------------
    def memory(self, space, lo: int, hi: int) -> str:
        """The bytes ``[lo, hi)``: whose memory, which part of it."""
        n = hi - lo
        if space != 0:
            return f"{n} bytes of host memory at 0x{lo:x}"
        k = bisect.bisect_right(self.starts, lo) - 1
        if k >= 0:
            addr, size, device, owner = self.allocs[k]
            if lo < addr + size:
                rank = self.rank_of_device.get(device)
                whose = f"rank {rank}'s" if rank is not None else f"device {device}'s"
                name = _OWNERS.get(owner, owner)
                if owner == "user":
                    return (f"{n} bytes of {whose} device memory at 0x{lo:x} (+0x{lo - addr:x} in the {size}-byte "
                            f"allocation at 0x{addr:x})")
                return f"{n} bytes of {whose} {name} [+0x{lo - addr:x}, +0x{hi - addr:x})"
        return f"{n} bytes at 0x{lo:x}"


__all__ = ["Finding", "Describer", "KINDS", "RACE", "LOST_RECORD", "LATE_WAIT", "NOTIFY_LEFT_SET", "HANG",
           "UNSYNCHRONIZED", "ERROR"]
