"""``python -m pyhcomm trace script.py [args ...] -o trace.json [--png timeline.png]``.

Runs ``script.py`` as ``__main__`` (with ``args`` in ``sys.argv``: every argument that is not
one of the options below, and everything after ``--``) in a fresh default Sim,
replays the record of every Sim it ran in (the default one, and one per ``pyhcomm.launch``) on
the product's cost model, writes a Perfetto / Chrome trace per Sim (``trace.json``, then
``trace.1.json`` ...) and optionally a PNG timeline, and prints the modeled time of every
collective call. The script's own output and exit status come first; a script that raises is
reported and the records so far are still written.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback


def _paths(path: str, count: int) -> list:
    root, ext = os.path.splitext(path)
    return [path] + [f"{root}.{k}{ext or '.json'}" for k in range(1, count)]


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyhcomm trace",
                                     description="run a script and write the modeled timeline of what it did")
    parser.add_argument("script", help="the Python script to run (its own arguments follow; after -- verbatim)")
    parser.add_argument("-o", "--output", default="trace.json", help="trace JSON path (default trace.json)")
    parser.add_argument("--png", help="also draw a PNG timeline (needs pyhcomm[plot])")
    parser.add_argument("--product", help="cost model of another product than the one simulated")
    argv = list(argv)
    tail = argv[argv.index("--") + 1:] if "--" in argv else []
    head = argv[:argv.index("--")] if "--" in argv else argv
    ns, rest = parser.parse_known_args(head)
    ns.args = rest + tail
    if not os.path.isfile(ns.script):
        parser.error(f"no such script: {ns.script}")

    import pyhcomm
    from ..spmd import observe_launches
    from .costs import cost_model
    from .png import write_png
    from .replay import replay
    from .trace import write_trace

    sims = [pyhcomm.reset()]
    status = 0
    argv_before = sys.argv
    sys.argv = [ns.script] + list(ns.args)
    try:
        with observe_launches(sims.append):
            runpy.run_path(ns.script, run_name="__main__")
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - report the script's failure, still write what it did
        traceback.print_exc()
        status = 1
    finally:
        sys.argv = argv_before
    sims = [s for s in sims if len(s.record) or s.record.host_effects()]
    if not sims:
        print("trace: the script recorded nothing (no task, no host effect)", file=sys.stderr)
        return status or 1
    for k, (sim, path) in enumerate(zip(sims, _paths(ns.output, len(sims)))):
        model = cost_model(ns.product) if ns.product else None
        try:
            tl = replay(sim, model)
        except ValueError as exc:
            print(f"trace: {exc}", file=sys.stderr)
            status = status or 1
            continue
        size = write_trace(tl, path)
        print(f"trace: {path} ({size} bytes, {len(tl)} entries, {tl.model.product} cost model)")
        for call in tl.calls:
            print(f"  {call_line(call)}")
        if not tl.calls:
            print(f"  no collective call; last entry ends at {tl.makespan * 1e6:.2f} us")
        if ns.png and k == 0:
            rows = write_png(tl, ns.png)
            print(f"timeline: {ns.png} ({rows} rows)")
    return status


def call_line(call) -> str:
    """One call as ``trace`` prints it: name, ranks, modeled time, algorithm, and, where the call
    says its data size, bytes, algbw and busbw (GB/s)."""
    algorithm = f" ({call.algorithm})" if call.algorithm else ""
    line = f"{call.name} on ranks {_ranks(call.ranks)}: {call.seconds * 1e6:.2f} us modeled{algorithm}"
    if call.algbw is not None:
        line += f", {call.nbytes} bytes, algbw {call.algbw / 1e9:.2f} GB/s, busbw {call.busbw / 1e9:.2f} GB/s"
    return line


def _ranks(ranks) -> str:
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}..{ranks[-1]}"
    return ", ".join(str(r) for r in ranks)
