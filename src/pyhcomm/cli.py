"""Command line: ``python -m pyhcomm demo | products | version | trace | verify | bench``."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyhcomm", description="HCOMM data plane simulator")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="run both seed examples and show the calls, codes and bytes")
    sub.add_parser("products", help="list the simulated products, what each supports and its engines")
    sub.add_parser("version", help="print the version")
    sub.add_parser("trace", help="run a script and write its modeled timeline (Perfetto trace, PNG)",
                   add_help=False)
    sub.add_parser("verify", help="check a script for races, lost notifies and hangs under explored schedules",
                   add_help=False)
    sub.add_parser("bench", help="hccl_test's table, modeled: time, algbw, busbw per size and algorithm",
                   add_help=False)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["trace"]:
        from .timing.cli import main as trace
        return trace(argv[1:])
    if argv[:1] == ["bench"]:
        from .timing.bench import main as bench
        return bench(argv[1:])
    if argv[:1] == ["verify"]:
        from .verify.cli import main as verify
        return verify(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import main as demo
        return demo()
    if args.command == "products":
        from .hcomm.resources.engines import engines_text
        from .products import PRODUCTS, catalogue_text
        print(catalogue_text())
        print()
        print("Engines (side: where its handles are used; threads: the calls that make them, or exported handles")
        print("of other engines' threads only; context: where its engine contexts live; runs: the task kinds it")
        print("executes; submit cost: the timing-model parameter per entry issued):")
        print(engines_text(PRODUCTS))
        from .hcomm.resources.engines.ccu import resources_text
        print()
        print("CCU resources per IO die (HcommCcuQueryRemainResDesc; docs/ccu.md: their sources):")
        print(resources_text(PRODUCTS))
        return 0
    if args.command == "version":
        from . import __version__
        print(__version__)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
