"""Benchmark the verifier, side by side in one run.

(a) the mutation suite (tests/mutation_suite.py): every mutant checked until a finding of its
    kind, at most 32 schedules; goal: 100% detected within 32 schedules. Also: the correct
    counterparts and every collective of the library give no finding (one schedule each, both
    schedulers; how many of those runs the product refused with HCCL_E_NOT_SUPPORT is shown).
(b) checking cost: the same program run plain (``pyhcomm.launch``) and run then checked
    (``pyhcomm.analysis.analyze`` of its record: graph, races, notify checks, completion), the two
    measured alternately, best of ``--repeat``, in wall and in CPU seconds of this process (what
    the other processes of a shared machine disturb least); goal: checked <= 3x plain. Programs:
    collectives at 16 ranks with data, ring AllGathers at 64 and 256 ranks data-less.
(c) a 256-rank ring AllGather verified data-less (``pyhcomm.verify.check``, one schedule: run and
    every check), wall time; goal <= 60 s.

The ratios are what to read (these machines are noisy); the load average is printed before and after.

    python benchmarks/verify.py [--repeat 3] [--ranks 256] [--skip-mutants]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tests")))

import pyhcomm  # noqa: E402
from pyhcomm import acl  # noqa: E402
from pyhcomm.analysis import analyze  # noqa: E402
from pyhcomm.collectives import allgather_ring, ring_peers, run  # noqa: E402
from pyhcomm.verify.check import quiet_log  # noqa: E402


def ring_allgather(comm, nbytes=4096):
    n, me = comm.size, comm.rank
    send, _ = acl.rt.malloc(nbytes, 0)
    recv, _ = acl.rt.malloc(nbytes * n, 0)
    stream, _ = acl.rt.create_stream()
    run(comm.handle, stream, 0, allgather_ring, send, recv, nbytes, peers=ring_peers(me, n))
    assert acl.rt.synchronize_stream(stream) == 0
    acl.rt.destroy_stream(stream)


def _load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def mutants(schedules: int) -> None:
    from mutation_suite import CORRECT, MUTANTS, rejected, verify
    from verify_programs import OPS, PRODUCTS, collective
    print(f"(a) mutation suite: {len(MUTANTS)} mutants, at most {schedules} schedules each")
    print(f"  {'mutant':30} {'rejects it':24} {'found in':>8} {'s':>6}  every kind found (schedule of the first "
          f"rejecting one)")
    found = 0
    t_all = time.perf_counter()
    for m in MUTANTS:
        t0 = time.perf_counter()
        report = verify(m, schedules)
        ok = rejected(m, report)
        found += ok
        n = len(report.schedules)
        first = next((f for f in report.findings if f.kind in m.expect), None)
        where = f" ({first.kind} in {first.schedule})" if first is not None else ""
        print(f"  {m.name:30} {'/'.join(m.expect):24} {n if ok else 'MISSED':>8} {time.perf_counter() - t0:6.2f}  "
              f"{', '.join(sorted(report.kinds()))}{where}")
    print(f"  detected {found}/{len(MUTANTS)} ({100 * found / len(MUTANTS):.0f}%) within {schedules} schedules, "
          f"{time.perf_counter() - t_all:.1f} s (goal: 100%)")
    clean = sum(pyhcomm.verify.check(p, n, product=prod, schedules=2, data=False).ok for _name, p, n, prod in CORRECT)
    runs = false = refused = 0
    codes: list = []

    def body_of(op):
        inner = collective(op)

        def body(comm):
            codes.append(inner(comm))
        return body

    t0 = time.perf_counter()
    for scheduler in ("coop", "threaded"):
        for product in PRODUCTS:
            for op in OPS:
                for n in (2, 5):
                    runs += 1
                    codes.clear()
                    false += not pyhcomm.verify.check(body_of(op), n, product=product, schedules=1, data=False,
                                                      scheduler=scheduler).ok
                    refused += any(codes)
    print(f"  correct counterparts clean: {clean}/{len(CORRECT)}; library collectives with findings: {false}/{runs} "
          f"({len(OPS)} collectives x {len(PRODUCTS)} products x 2, 5 ranks x coop, threaded; {refused} of the runs "
          f"refused by their product; {time.perf_counter() - t0:.1f} s; goal: 0)")


def cost(label, fn, nranks, repeat, product=None, data=True) -> None:
    """Plain vs checked, alternately; best of ``repeat``, wall and CPU."""
    plain, checked, plain_cpu, checked_cpu, entries = [], [], [], [], 0
    for _ in range(repeat):
        for out, out_cpu, check in ((plain, plain_cpu, False), (checked, checked_cpu, True)):
            sim = pyhcomm.Sim(scheduler="coop", data=data, product=product)
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            pyhcomm.launch(fn, nranks, sim=sim)
            if check:
                findings = analyze(sim)
            out.append(time.perf_counter() - t0)
            out_cpu.append(time.process_time() - c0)
            if check:
                entries = len(sim.record) + len(sim.record.host_effects())
                assert not findings, findings[0].text()
            del sim
    p, c, pc, cc = min(plain), min(checked), min(plain_cpu), min(checked_cpu)
    print(f"  {label:38} {entries:>9,} {p:8.3f} {c:8.3f} {c / p:6.2f}x {pc:8.3f} {cc:8.3f} {cc / pc:6.2f}x "
          f"{(cc - pc) / entries * 1e6:8.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=256, help="ranks of the large ring AllGather (b, c)")
    ap.add_argument("--schedules", type=int, default=32)
    ap.add_argument("--skip-mutants", action="store_true")
    args = ap.parse_args(argv)
    print(f"# pyhcomm {pyhcomm.__version__}: verifier, {os.cpu_count()} cores, {_load()}")
    with quiet_log():
        if not args.skip_mutants:
            mutants(args.schedules)
        from verify_programs import collective
        print(f"(b) checking cost: plain run vs run + checks (best of {args.repeat}, alternately; wall, then CPU "
              "seconds of this process)")
        print(f"  {'program':38} {'entries':>9} {'plain s':>8} {'checked':>8} {'ratio':>7} {'plain':>8} {'checked':>8} "
              f"{'ratio':>7} {'us/entry':>8}")
        cost("16 x AllReduce 64 KiB, A2, data", collective("allreduce", 16384), 16, args.repeat)
        cost("16 x AllGather 4 KiB, A3 (AI CPU), data", collective("allgather", 1024), 16, args.repeat, "Atlas A3")
        cost("8 x AlltoAll 16 KiB, A2, data", collective("alltoall", 4096), 8, args.repeat)
        cost("64 x ring AllGather 4 KiB, data-less", ring_allgather, 64, args.repeat, data=False)
        cost(f"{args.ranks} x ring AllGather 4 KiB, data-less", ring_allgather, args.ranks, min(2, args.repeat),
             data=False)
        print(f"(c) {args.ranks}-rank ring AllGather verified data-less (pyhcomm.verify.check, one schedule)")
        t0 = time.perf_counter()
        report = pyhcomm.verify.check(ring_allgather, args.ranks, data=False, schedules=1)
        wall = time.perf_counter() - t0
    print(f"  {wall:.1f} s, {len(report.findings)} finding(s) (goal: <= 60 s)")
    print(f"# {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
