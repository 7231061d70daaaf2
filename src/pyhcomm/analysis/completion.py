"""Work a program never waited for: tasks a host program queued (itself, or through the kernels it
launched) whose end is not ordered before the program's last call, and tasks that never ran
because their stream was destroyed or the run ended first (not behind a failure).

On hardware the program would go on (read its results, free its buffers, exit) while that work
still runs: a missing final synchronize. Kernels are not programs that must wait: the stream
their launch is on waits for them, and what they queue is covered by the launch stream's protocol
(checked through the races it leaves).
"""
from __future__ import annotations

from .findings import UNSYNCHRONIZED, Describer, Finding


def completion_findings(graph, detector, describer: Describer) -> list:
    """See the module docstring; ``detector`` is a :class:`pyhcomm.analysis.race.RaceDetector`
    that ran over ``graph``."""
    entries = graph.entries
    owner = graph.host_program
    kernels = graph.kernel_of
    last: dict = {}     # (host program, stream chain) -> index of the last task of it that ran
    for (p, c), i in detector.last_task.items():
        hp = owner(p)
        j = last.get((hp, c))
        if j is None or detector.pos[i] > detector.pos[j]:
            last[(hp, c)] = i
    # tasks that never ran while nothing failed before them on their stream: dropped, or still queued
    dropped: dict = {}  # host program -> [those tasks]
    for i in detector.never_ran:
        e = entries[i]
        dropped.setdefault(owner(e.program), []).append(e)
    d = describer
    out: dict = {}
    for (p, _c), i in last.items():
        if p is None or p in kernels:
            continue
        if detector.ordered_before_end(i, p):
            continue
        e = entries[i]
        key = (UNSYNCHRONIZED, e.kind, d.where(e))
        f = out.get(key)
        if f is not None:
            f.count += 1
            continue
        lines = [f"last task: {d.entry(e)}",
                 f"is not ordered before anything {d.program_label(p)} did after queueing it",
                 _fix(e, d)]
        out[key] = Finding(UNSYNCHRONIZED, f"{d.program_label(p)} never waited for its work on {d.who(e)}",
                           lines, (e.seq,), key, {"program": p, "task": e.seq})
    for p, tasks in dropped.items():
        e = tasks[0]
        key = (UNSYNCHRONIZED, "dropped", d.where(e))
        if key in out:
            out[key].count += 1
            continue
        lines = [f"first: {d.entry(e)}",
                 "nothing waited for them before the run ended (or their stream was destroyed): synchronize "
                 "before reading their results, destroying streams or ending the program"]
        out[key] = Finding(UNSYNCHRONIZED, f"{len(tasks)} task(s) of {d.program_label(p)} never ran",
                           lines, tuple(t.seq for t in tasks[:16]), key, {"program": p, "tasks": len(tasks)})
    found = list(out.values())
    for f in found:
        if f.count > 1:
            f.lines.append(f"(and the same in {f.count - 1} more program(s) or stream(s))")
    return found


def _fix(e, d) -> str:
    if e.side == "device" and e.kernel:
        return (f"the host synchronized (at most) the kernel's launch stream, which does not wait for what the "
                f"kernel queued on {d.who(e)}: make the launch stream wait for it (a notify the kernel records "
                f"after it, as HCCL's collectives do), or synchronize stream 0x{e.stream.handle:x} or the device")
    return f"synchronize stream 0x{e.stream.handle:x} (aclrtSynchronizeStream) before the program ends"


__all__ = ["completion_findings"]
