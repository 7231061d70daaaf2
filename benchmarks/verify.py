"""Benchmark the verifier, side by side in one run.

(a) the mutation suite (tests/mutation_suite.py): every mutant checked until a finding of its
    kind, at most 32 schedules; goal: 100% detected within 32 schedules. Also: the correct
    counterparts and every collective of the library give no finding (one schedule each).
(b) checking cost: the same program run plain (``pyhcomm.launch``) and run then checked
    (``pyhcomm.analysis.analyze`` of its record: graph, races, notify checks, completion), the two
    measured alternately, best of ``--repeat``; goal: checked <= 3x plain. Programs: collectives
    at 16 ranks with data, ring AllGathers at 64 and 256 ranks data-less.
(c) a 256-rank ring AllGather verified data-less (run + every check), wall time; goal <= 60 s.

The ratios are what to read (these machines are noisy).

    python benchmarks/verify.py [--repeat 3] [--ranks 256] [--skip-mutants]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import pyhcomm  # noqa: E402
from pyhcomm import acl  # noqa: E402
from pyhcomm.analysis import analyze  # noqa: E402
from pyhcomm.collectives import allgather_ring, ring_peers, run  # noqa: E402


def ring_allgather(comm, nbytes=4096):
    n, me = comm.size, comm.rank
    send, _ = acl.rt.malloc(nbytes, 0)
    recv, _ = acl.rt.malloc(nbytes * n, 0)
    stream, _ = acl.rt.create_stream()
    run(comm.handle, stream, 0, allgather_ring, send, recv, nbytes, peers=ring_peers(me, n))
    assert acl.rt.synchronize_stream(stream) == 0
    acl.rt.destroy_stream(stream)


def mutants(schedules: int) -> None:
    from mutation_suite import CORRECT, MUTANTS, rejected, verify
    from verify_programs import OPS, PRODUCTS, collective
    print(f"(a) mutation suite: {len(MUTANTS)} mutants, at most {schedules} schedules each")
    print(f"  {'mutant':34} {'expected':24} {'found in':>9}  {'s':>6}  findings")
    found = 0
    t_all = time.perf_counter()
    for m in MUTANTS:
        t0 = time.perf_counter()
        report = verify(m, schedules)
        ok = rejected(m, report)
        found += ok
        n = len(report.schedules)
        print(f"  {m.name:34} {'/'.join(m.expect):24} {n if ok else 'MISSED':>9}  {time.perf_counter() - t0:6.2f}  "
              f"{', '.join(sorted(report.kinds()))}")
    print(f"  detected {found}/{len(MUTANTS)} ({100 * found / len(MUTANTS):.0f}%) within {schedules} schedules, "
          f"{time.perf_counter() - t_all:.1f} s (goal: 100%)")
    clean = sum(pyhcomm.verify.check(p, n, product=prod, schedules=2, data=False).ok for _name, p, n, prod in CORRECT)
    runs = 0
    false = 0
    for product in PRODUCTS:
        for op in OPS:
            for n in (2, 5):
                runs += 1
                false += not pyhcomm.verify.check(collective(op), n, product=product, schedules=1, data=False).ok
    print(f"  correct counterparts clean: {clean}/{len(CORRECT)}; library collectives with findings: {false}/{runs} "
          f"({len(OPS)} collectives x {len(PRODUCTS)} products x 2, 5 ranks; goal: 0)")


def cost(label, fn, nranks, repeat, product=None, data=True) -> None:
    """Plain vs checked, alternately; best of ``repeat``."""
    plain, checked, entries = [], [], 0
    for _ in range(repeat):
        sim = pyhcomm.Sim(scheduler="coop", data=data, product=product)
        gc.collect()
        t0 = time.perf_counter()
        pyhcomm.launch(fn, nranks, sim=sim)
        plain.append(time.perf_counter() - t0)
        del sim
        sim = pyhcomm.Sim(scheduler="coop", data=data, product=product)
        gc.collect()
        t0 = time.perf_counter()
        pyhcomm.launch(fn, nranks, sim=sim)
        findings = analyze(sim)
        checked.append(time.perf_counter() - t0)
        entries = len(sim.record) + len(sim.record.host_effects())
        assert not findings, findings[0].text()
        del sim
    p, c = min(plain), min(checked)
    print(f"  {label:38} {entries:>9,} {p:9.3f} {c:9.3f} {c / p:7.2f}x {(c - p) / entries * 1e6:9.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=256, help="ranks of the large ring AllGather (c)")
    ap.add_argument("--schedules", type=int, default=32)
    ap.add_argument("--skip-mutants", action="store_true")
    args = ap.parse_args(argv)
    print(f"# pyhcomm {pyhcomm.__version__}: verifier, {os.cpu_count()} cores")
    if not args.skip_mutants:
        mutants(args.schedules)
    from verify_programs import collective
    print("(b) checking cost: plain run vs run + checks (best of %d, alternately)" % args.repeat)
    print(f"  {'program':38} {'entries':>9} {'plain s':>9} {'checked':>9} {'ratio':>8} {'us/entry':>9}")
    cost("16 x AllReduce 64 KiB, A2, data", collective("allreduce", 16384), 16, args.repeat)
    cost("16 x AllGather 4 KiB, A3 (AI CPU), data", collective("allgather", 1024), 16, args.repeat, "Atlas A3")
    cost("8 x AlltoAll 16 KiB, A2, data", collective("alltoall", 4096), 8, args.repeat)
    cost("64 x ring AllGather 4 KiB, data-less", ring_allgather, 64, args.repeat, data=False)
    cost(f"{args.ranks} x ring AllGather 4 KiB, data-less", ring_allgather, args.ranks, 1, data=False)
    print(f"(c) {args.ranks}-rank ring AllGather verified data-less (pyhcomm.verify.check, one schedule)")
    t0 = time.perf_counter()
    report = pyhcomm.verify.check(ring_allgather, args.ranks, data=False, schedules=1)
    wall = time.perf_counter() - t0
    print(f"  {wall:.1f} s, {len(report.findings)} finding(s) (goal: <= 60 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
