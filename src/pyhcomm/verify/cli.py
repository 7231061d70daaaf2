"""``python -m pyhcomm verify script.py [--ranks N] [--product P] [--schedules K] [--data off]
[--json out.json]``: run a program under several schedules and report every finding; the exit
status is 1 when there is one.

Two kinds of script:

* one that defines a rank body at its top level, ``def main(comm): ...`` (or the function
  ``--function`` names): it runs on ``--ranks`` ranks (default 2) under each schedule
  (:func:`pyhcomm.verify.check`);
* any other script runs whole, as ``python script.py`` runs it, once per schedule: one without
  ``main``, one whose ``main()`` takes no parameter (the usual ``def main(): ...`` with
  ``if __name__ == "__main__": main()``; without that block the verifier calls ``main()``), and
  any script with ``--whole``. Every ``pyhcomm.launch`` it makes is checked (each on the
  schedule's policy), and so is each default simulation it used: the first, and every one a
  ``pyhcomm.reset()`` made (all on the cooperative scheduler unless the program chose another).
  The report names the products they ran on.

``--replay TOKEN`` runs the one schedule a finding printed (its replay command). The exit status
is 1 when a finding is not labelled deliberate in the program (:mod:`.labels`).
"""
from __future__ import annotations

import argparse
import ast
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
    p.add_argument("--function", help="the rank body's name (default main; a script without it, or whose main() "
                                      "takes no parameter, runs whole)")
    p.add_argument("--whole", action="store_true",
                   help="run the script whole, as python runs it (also when it defines main(comm))")
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
    """The report of ``script`` (a rank body, else a whole program); None: no such function, or
    one that takes no rank's comm."""
    from .check import check
    function = args.function or "main"
    tree = _parse(script)
    options = dict(product=args.product, schedules=args.schedules, strategy=args.strategy, depth=args.depth,
                   bound=args.bound, data=args.data == "on", replay=args.replay, timeout=args.timeout,
                   races=not args.no_races)
    if args.whole:
        return _whole_program(script, args, options, _main_to_call(tree, "main"))
    node = _definition(tree, function)
    if node is None and not args.function:
        return _whole_program(script, args, options, None)
    if isinstance(node, ast.FunctionDef) and not _takes_an_argument(node):
        if args.function:
            print(f"verify: {args.script}'s {function}() takes no parameter: a rank body takes its rank's comm "
                  "(to run the script whole: --whole)", file=sys.stderr)
            return None
        return _whole_program(script, args, options, _main_to_call(tree, function))
    fn = runpy.run_path(script, run_name="pyhcomm_verify_target").get(function)
    if not callable(fn):
        print(f"verify: {args.script} defines no function {function!r}", file=sys.stderr)
        return None
    return check(fn, args.ranks, script=f"{args.script} --function {function}", **options)


def _parse(script: str):
    with open(script, encoding="utf-8") as f:
        return ast.parse(f.read(), script)


def _definition(tree, name: str):
    """The top-level statement of ``tree`` that defines or imports ``name`` (the last one; read,
    not run), or None."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in node.names):
            found = node
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node
    return found


def _takes_an_argument(node) -> bool:
    """Whether the function ``node`` defines can be called with one positional argument (a comm)."""
    a = node.args
    return bool(a.posonlyargs or a.args or a.vararg)


def _main_to_call(tree, name: str):
    """``name`` when ``tree`` defines a function ``name`` that takes no argument and has no
    ``if __name__ == "__main__":`` block (the verifier calls it after running the script); else
    None (running the script as ``__main__`` runs the program)."""
    node = _definition(tree, name)
    if not isinstance(node, ast.FunctionDef) or _takes_an_argument(node):
        return None
    guarded = any(isinstance(n, ast.If) and any(isinstance(x, ast.Name) and x.id == "__name__" for x in ast.walk(n.test))
                  for n in tree.body)
    return None if guarded else name


def _whole_program(script: str, args, options, call):
    """Run ``script`` as ``__main__`` once per schedule (then ``call()``, the function it names,
    when given); check every Sim it ran in: its launches' and the default Sims it used (the
    verifier's, and each one ``pyhcomm.reset()`` made). The report names the products they ran."""
    import pyhcomm
    from .check import Report, replay_command
    from .explore import Explorer
    report = Report(args.script, 0, options["product"] or pyhcomm.get_product().name)
    replay_of = replay_command(None, 0, options["product"], options["data"],
                               script=args.script + (" --whole" if args.whole else ""))
    explorer = Explorer(options["strategy"], options["depth"], options["bound"])
    token = options["replay"] or explorer.first()
    products: list = []
    for _ in range(options["schedules"]):
        found, policy = _whole_run(script, options, token, call, products)
        report.add(found, token, replay_of)
        report.schedules.append((token, len(found), 0.0))
        if options["replay"]:
            break
        if policy is not None:
            explorer.after(policy)
        token = explorer.next_token()
        if token is None:
            report.complete = True
            break
    if products:
        report.product = ", ".join(products)
    return report


def _whole_run(script: str, options, token, call, products: list):
    """One run of a whole program on schedule ``token``: ``(its findings, the first policy made)``;
    adds the products of the Sims that ran something to ``products``."""
    import pyhcomm
    from .check import error_findings, run_findings
    from .env import session
    from .explore import parse
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
    with session(fresh, {"scheduler": "coop", "data": options["data"]}) as s:
        try:
            namespace = runpy.run_path(script, run_name="__main__")
            if call is not None:
                namespace[call]()
        except SystemExit:
            pass
        except Exception as exc:  # noqa: BLE001 - the program failed: a finding, as a rank's failure
            failure = exc
        finally:
            sys.argv = argv_before
    ran = [(sim, error) for sim, error in s.launches]
    ran += [(sim, None) for sim in [default] + s.defaults if len(sim.record) or sim.record.host_effects()]
    for sim, error in ran:
        found += run_findings(sim, error, options["races"])
        if sim.product.name not in products:
            products.append(sim.product.name)
    if failure is not None and not any(error is failure or getattr(failure, "__cause__", None) is error
                                       for _sim, error in s.launches):
        found += error_findings(failure, found)
    return found, (last[0] if last else None)


__all__ = ["main"]
