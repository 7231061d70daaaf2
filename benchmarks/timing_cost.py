"""The cost of timing a run: the plain data-less run against the happens-before graph and the replay.

For each rank count, one process per case (so its peak RSS is its own): a data-less collective of
``--bytes`` per rank on ``--product`` (uniform links: one server, one super pod), cooperative
scheduler, the whole record kept; then :func:`pyhcomm.analysis.happens_before.build` of its
record, then :func:`pyhcomm.timing.replay.replay` with that graph. Printed: entries, CPU seconds
(``time.process_time``) of the run, the graph and the replay, ``(graph + replay) / run`` (issue
goal at 1024 ranks: <= 0.5), peak RSS after each step, the modeled time of the call; then the
same ratio in user CPU time alone, and the system (kernel) CPU seconds of the run and of the
graph + replay (on the development VM, mostly page faults on the memory each step adds:
docs/timing.md).

    python benchmarks/timing_cost.py [--ranks 256,1024] [--algorithm ring_allgather]
                                     [--product "Atlas A3"] [--bytes 1024] [--repeat 1]

``--repeat N`` measures each rank count N times (a process each) and then prints the median
ratios: on a shared machine one run's ratio moves with the plain run's own time (at 1024 ranks
0.45 to 0.62 for one version on the development VM).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tests")))


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _cpu() -> tuple:
    """``(user, system)`` CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def case(product: str, algorithm: str, nranks: int, nbytes: int) -> dict:
    """One measurement, in this process."""
    import pyhcomm
    from pyhcomm.analysis import happens_before
    from pyhcomm.config import Config
    from pyhcomm.timing.replay import replay
    from timing_cases import _body

    config = Config.from_env().with_values(devices_per_server=max(nranks, 16), super_pod_size=max(nranks, 768),
                                           record_capacity=0)
    sim = pyhcomm.Sim(config, product=product, data=False, scheduler="coop")
    t0, c0 = time.process_time(), _cpu()
    pyhcomm.launch(_body(algorithm, nbytes), nranks, sim=sim)
    t1, c1 = time.process_time(), _cpu()
    rss_run = _rss_gib()
    graph = happens_before.build(sim.record)
    t2 = time.process_time()
    rss_graph = _rss_gib()
    calls = replay(sim, graph=graph).calls
    t3, c3 = time.process_time(), _cpu()
    return dict(entries=len(sim.record) + len(sim.record.host_effects()), run=t1 - t0, graph=t2 - t1,
                replay=t3 - t2, rss=(rss_run, rss_graph, _rss_gib()),
                user=(c1[0] - c0[0], c3[0] - c1[0]), system=(c1[1] - c0[1], c3[1] - c1[1]),
                modeled_us=(max(c.end for c in calls) - min(c.begin for c in calls)) * 1e6)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="256,1024")
    ap.add_argument("--algorithm", default="ring_allgather")
    ap.add_argument("--product", default="Atlas A3")
    ap.add_argument("--bytes", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=1, help="runs per rank count (then the median ratios)")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        print(json.dumps(case(args.product, args.algorithm, int(args.case), args.bytes)))
        return 0
    print(f"# timing cost: {args.algorithm}, {args.bytes} B per rank, {args.product}, data-less, coop; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'ranks':>6} {'entries':>11} {'run s':>8} {'graph s':>8} {'replay s':>9} {'ratio':>6} "
          f"{'RSS run/graph/replay GiB':>26} {'modeled us':>11} {'user ratio':>10} {'system s run/model':>19}")
    medians = []
    for n in (int(x) for x in args.ranks.split(",")):
        ratios, users = [], []
        for _ in range(max(1, args.repeat)):
            out = subprocess.run([sys.executable, __file__, "--case", str(n), "--algorithm", args.algorithm,
                                  "--product", args.product, "--bytes", str(args.bytes)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rss = "/".join(f"{x:.2f}" for x in r["rss"])
            ratios.append((r['graph'] + r['replay']) / max(r['run'], 1e-9))
            users.append(r['user'][1] / max(r['user'][0], 1e-9))
            print(f"{n:>6} {r['entries']:>11,} {r['run']:>8.2f} {r['graph']:>8.2f} {r['replay']:>9.2f} "
                  f"{ratios[-1]:>6.2f} {rss:>26} {r['modeled_us']:>11.2f} "
                  f"{users[-1]:>10.2f} {r['system'][0]:>9.2f}/{r['system'][1]:<9.2f}", flush=True)
        medians.append((n, len(ratios), statistics.median(ratios), statistics.median(users)))
    if args.repeat > 1:
        for n, k, ratio, user in medians:
            print(f"# {n} ranks, median of {k} runs: ratio {ratio:.2f}, in user time {user:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
