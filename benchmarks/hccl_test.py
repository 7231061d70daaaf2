"""hccl_test's table from the timing model: ``python -m pyhcomm bench`` under this script's older flags.

    python benchmarks/hccl_test.py [--product "Atlas 800T A2"] [--ranks 8] [--op all_reduce]
                                   [-b 8K] [-e 64M] [-f 2] [--iters 1] [--check]

runs ``python -m pyhcomm bench`` (:mod:`pyhcomm.timing.bench`, where the columns are described) for
every product (default: Atlas 800T A2, Atlas A3, Atlas 350), rank count (``--ranks``, comma-separated:
NPUs of one server) and collective (``--op``, comma-separated; default every collective hccl_test
measures).
"""
from __future__ import annotations

import argparse
import sys

from pyhcomm.timing import bench

PRODUCTS = ("Atlas 800T A2", "Atlas A3", "Atlas 350")
OPS = ("all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "reduce_scatter_v", "reduce", "broadcast",
       "scatter", "alltoall", "alltoallv", "alltoallvc")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--product", action="append", help=f"repeatable (default: {', '.join(PRODUCTS)})")
    parser.add_argument("--ranks", default="8", help="comma-separated rank counts (default 8)")
    parser.add_argument("--op", default=",".join(OPS), help=f"comma-separated, of {', '.join(OPS)}")
    parser.add_argument("-b", "--minbytes", default="8K")
    parser.add_argument("-e", "--maxbytes", default="64M")
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("--iters", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="move real bytes and check every rank's output")
    args = parser.parse_args(argv)
    status = 0
    for product in args.product or PRODUCTS:
        for ranks in args.ranks.split(","):
            for op in args.op.split(","):
                status = status or bench.main(["--product", product, "-p", ranks.strip(), "-o", op.strip(),
                                               "-b", args.minbytes, "-e", args.maxbytes, "-f", str(args.stepfactor),
                                               "-n", str(args.iters), "-c", "1" if args.check else "0"])
    return status


if __name__ == "__main__":
    sys.exit(main())
