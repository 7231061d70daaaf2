"""Analyses of a Sim's record (tools: they read the record; the core never imports them).

* :mod:`.happens_before`: the happens-before graph of a record (what the race detector, the
  notify checks and the timing model replay);
* :mod:`.race`: data races over that graph (vector clocks, FastTrack-style shadow memory);
* :mod:`.notifies`: lost records, late waits, notifies left set, waits never satisfied;
* :mod:`.completion`: work a program never waited for;
* :mod:`.findings`: what they report.

:func:`analyze` runs them all on one record.
"""
from __future__ import annotations

import gc


def analyze(source, *, races: bool = True, deadlock_report: str | None = None) -> list:
    """Every finding of the checks on ``source`` (a Sim or a record), in a stable order: hangs,
    races, notify findings, work never waited for. ``races`` False skips the race detector (and
    the completion check, which reads its clocks). ``deadlock_report``: the scheduler's hang
    report to show with a hang (default: a Sim's last one)."""
    from .completion import completion_findings
    from .findings import Describer
    from .happens_before import build
    from .notifies import hang_findings, notify_findings, notify_queries, notify_uses
    from .race import RaceDetector, race_findings

    if deadlock_report is None:     # a Sim: its scheduler's last hang report, shown with the hang
        deadlock_report = getattr(getattr(source, "scheduler", None), "last_deadlock", None)
    graph = build(source)
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        d = Describer(graph)
        uses = notify_uses(graph)
        out = hang_findings(graph, d, uses, deadlock_report)
        detector = None
        if races:
            detector = RaceDetector(graph, notify_queries(graph, uses)).run()
            out += race_findings(detector, d)
        out += notify_findings(graph, d, uses, detector)
        if detector is not None:
            out += completion_findings(graph, detector, d)
        return out
    finally:
        if paused:
            gc.enable()
