"""``python -m pyhcomm verify script.py [--ranks N] [--product P] [--schedules K] [--data off]
[--json out.json]``: run a program under several schedules and report every finding; the exit
status is 1 when there is one.

Two kinds of script:

* one that defines a rank body at its top level, ``def main(comm): ...`` (or the function
  ``--function`` names): it runs on ``--ranks`` ranks (default 2) under each schedule
  (:func:`pyhcomm.verify.check`);
* any other script runs whole, as ``__main__``, once per schedule: every ``pyhcomm.launch`` it
  makes is checked (each on the schedule's policy), and so is its default simulation when it
  used one (the cooperative scheduler is used for it).

``--replay TOKEN`` runs the one schedule a finding printed (its replay command). The exit status
is 1 when a finding is not labelled deliberate in the program (:mod:`.labels`).
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys

from .explore import STRATEGIES


def _parser():
    p = argparse.ArgumentParser(prog="python -m pyhcomm verify",
                                description="check a program for races, lost notifies and hangs under explored "
                                            "schedules (exit status 1 on findings)")
    p.add_argument("script", help="the Python script: a rank body (def main(comm)) or a whole program")
    p.add_argument("--ranks", type=int, default=2, help="ranks for a rank body (default 2)")
    p.add_argument("--product", help="the product to simulate (default: PYHCOMM_PRODUCT, else Atlas 800T A2)")
    p.add_argument("--schedules", type=int, default=8, help="schedules to explore at most (default 8)")
    p.add_argument("--strategy", choices=STRATEGIES, default="auto",
                   help="how to choose them: auto (default), random, pct, dfs (bounded exhaustive)")
    p.add_argument("--depth", type=int, default=3, help="PCT depth (default 3)")
    p.add_argument("--bound", type=int, default=2, help="dfs: deviations from the default schedule (default 2)")
    p.add_argument("--data", choices=("on", "off"), default="on", help="off: data-less (faster; no byte moves)")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--function", help="the rank body's name (default main; a script without it runs whole)")
    p.add_argument("--replay", metavar="SCHEDULE", help="run this one schedule (fifo, random:S, pct:D:S:N, dfs:...)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run (default 120)")
    p.add_argument("--no-races", action="store_true", help="skip the race detector (notify checks and hangs only)")
    return p


def main(argv) -> int:
    args = _parser().parse_args(list(argv))
    if not os.path.isfile(args.script):
        print(f"verify: no such script: {args.script}", file=sys.stderr)
        return 2
    if args.ranks < 1 or args.schedules < 1:
        print("verify: --ranks and --schedules must be at least 1", file=sys.stderr)
        return 2
    from ..products import find_product
    from .check import quiet_log
    from .explore import parse
    if args.replay:
        try:
            parse(args.replay)
        except ValueError as exc:
            print(f"verify: {exc}", file=sys.stderr)
            return 2
    if args.product:
        try:
            args.product = find_product(args.product).name
        except ValueError as exc:
            print(f"verify: {exc}", file=sys.stderr)
            return 2
    script = args.script                        # as given: call sites print the path the user typed
    where = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, where)
    try:
        with quiet_log():
            report = _run(script, args)
    finally:
        sys.path.remove(where)
    if report is None:
        return 2
    print(report.text())
    if args.json:
        report.write_json(args.json)
    return 0 if report.ok else 1


def _run(script: str, args):
    """The report of ``script`` (a rank body, else a whole program); None: no such function."""
    from .check import check
    function = args.function or "main"
    fn = None
    if _defines(script, function):      # a rank body (a whole program is not run to find out)
        fn = runpy.run_path(script, run_name="pyhcomm_verify_target").get(function)
    if args.function and not callable(fn):
        print(f"verify: {args.script} defines no function {args.function!r}", file=sys.stderr)
        return None
    options = dict(product=args.product, schedules=args.schedules, strategy=args.strategy, depth=args.depth,
                   bound=args.bound, data=args.data == "on", replay=args.replay, timeout=args.timeout,
                   races=not args.no_races)
    if callable(fn):
        return check(fn, args.ranks, script=f"{args.script} --function {function}", **options)
    return _whole_program(script, args, options)


def _defines(script: str, name: str) -> bool:
    """Whether ``script`` defines or imports ``name`` at its top level (read, not run)."""
    import ast
    with open(script, encoding="utf-8") as f:
        tree = ast.parse(f.read(), script)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in node.names):
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def _whole_program(script: str, args, options):
    """Run ``script`` as ``__main__`` once per schedule; check every Sim it ran in."""
    import pyhcomm
    from .check import Report, error_findings, replay_command, run_findings
    from .env import session
    from .explore import Explorer, parse
    product = options["product"] or pyhcomm.get_product().name
    report = Report(args.script, 0, product)
    replay_of = replay_command(None, 0, options["product"], options["data"], script=args.script)
    explorer = Explorer(options["strategy"], options["depth"], options["bound"])
    token = options["replay"] or explorer.first()
    for _ in range(options["schedules"]):
        last: list = []

        def fresh():
            policy = parse(token)
            last.append(policy)
            return policy

        chosen = {"product": options["product"], "product_chosen": True} if options["product"] else {}
        default = pyhcomm.reset(scheduler="coop", data=options["data"], **chosen)
        default.scheduler.set_policy(fresh())
        argv_before = sys.argv
        sys.argv = [script]
        found, failure = [], None
        with session(fresh) as s:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit:
                pass
            except Exception as exc:  # noqa: BLE001 - the program failed: a finding, as a rank's failure
                failure = exc
            finally:
                sys.argv = argv_before
        for sim, error in s.launches:
            found += run_findings(sim, error, options["races"])
        if len(default.record) or default.record.host_effects():
            found += run_findings(default, None, options["races"])
        if failure is not None and not any(error is failure or getattr(failure, "__cause__", None) is error
                                           for _sim, error in s.launches):
            found += error_findings(failure, found)
        report.add(found, token, replay_of)
        report.schedules.append((token, len(found), 0.0))
        if options["replay"]:
            break
        if last:
            explorer.after(last[0])
        token = explorer.next_token()
        if token is None:
            report.complete = True
            break
    return report


__all__ = ["main"]
