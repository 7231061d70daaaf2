"""Scale: collectives on 8 .. 1024 in-process ranks, cost per task, peak memory, against baselines.

Each case runs in a fresh subprocess (so its peak RSS is its own): ``pyhcomm.launch`` of N ranks,
end to end (communicator init, channel connect, the collective, synchronize, teardown), on the
cooperative scheduler unless ``--scheduler threaded``. A short case is run several times, each
in a fresh Sim, and its typical run kept (see ``MIN_SECONDS``). Printed per case: tasks (every
enqueued task, from the Sim's record counter), runs, wall time of one run, us per task all in,
peak RSS, and the ratio of us per task to the same collective at the smallest rank count (flat
cost = 1.0).

Baselines, measured in the same run:

* ``loop``: a plain single-thread Python loop that enqueues and runs the same number of tasks as
  tuples on one deque per rank (the floor of any Python task simulator); ``x loop`` is ours / it.
* ``16 x 1 MiB AllReduce`` with data vs numpy doing the same data movement on one thread.
* ``16 x 1 KiB AllGather`` vs its number of tasks times the single-rank cost of one
  ``HcommLocalCopyOnThread`` enqueue + execute.

    python benchmarks/scale.py [--ranks 8,64,256,1024] [--collectives ring_allgather,...]
                               [--size 4096] [--data 0|1] [--scheduler coop|threaded]
    python benchmarks/scale.py --cluster-allreduce 512,4096 [--product "Atlas A3"] [--limit 600]

``--cluster-allreduce``: an ``HcclAllReduce`` of 1 MiB per rank on a cluster (Atlas A2: servers of
eight NPUs; Atlas A3: super pods of 256 dies) data-less, run and replayed in a subprocess per rank
count: the algorithm the selection picked, tasks, seconds of the run and of the replay, the
subprocess's wall time all told (start, rank table, run, replay), peak RSS, the modeled time and
busbw (docs/timing.md, "Scale").
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections import deque

COLLECTIVES = ("ring_allgather", "ring_allreduce", "mesh_allgather", "alltoall")
MORE = ("reduce_scatter", "broadcast", "scatter")   # --collectives all: these too


# -- one case, in a subprocess ---------------------------------------------------------------------
def run_case(name: str, nranks: int, size: int, data: bool, scheduler: str) -> dict:
    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.capi import hccl_ops as ops
    from pyhcomm.collectives import allgather_ring, run
    from pyhcomm.enums import HcclDataType, HcclReduceOp

    fp32, total = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)

    def body(comm):
        n, me = comm.size, comm.rank
        per = size if name in ("ring_allgather", "mesh_allgather") else size * n
        send, _ = acl.rt.malloc(max(per, size), 0)
        recv, _ = acl.rt.malloc(size * n, 0)
        stream, _ = acl.rt.create_stream()
        h = comm.handle
        if name == "ring_allgather":
            ring = sorted({(me - 1) % n, (me + 1) % n} - {me})
            run(h, stream, 0, allgather_ring, send, recv, size, peers=ring)
        elif name == "ring_allreduce":
            ret = ops.HcclAllReduce(send, recv, size * n // 4, fp32, total, h, stream)
            assert ret == 0, ret
        elif name == "mesh_allgather":
            ret = ops.HcclAllGather(send, recv, size // 4, fp32, h, stream)
            assert ret == 0, ret
        elif name == "alltoall":
            ret = ops.HcclAlltoAll(send, size // 4, fp32, recv, size // 4, fp32, h, stream)
            assert ret == 0, ret
        elif name == "reduce_scatter":
            ret = ops.HcclReduceScatter(recv, send, size // 4, fp32, total, h, stream)
            assert ret == 0, ret
        elif name == "broadcast":
            ret = ops.HcclBroadcast(send, size // 4, fp32, 0, h, stream)
            assert ret == 0, ret
        elif name == "scatter":
            ret = ops.HcclScatter(recv, send, size // 4, fp32, 0, h, stream)
            assert ret == 0, ret
        assert acl.rt.synchronize_stream(stream) == 0
        acl.rt.destroy_stream(stream)

    walls, tasks, spent = [], None, 0.0
    while not walls or (spent < MIN_SECONDS and len(walls) < MAX_REPEATS):
        sim = pyhcomm.Sim(scheduler=scheduler, data=data)
        t0 = time.perf_counter()
        pyhcomm.launch(body, nranks, sim=sim)
        walls.append(time.perf_counter() - t0)
        spent += walls[-1]
        n = next(sim.record.counter) - 1
        assert tasks in (None, n), f"{name} {nranks}: {n} tasks, {tasks} before"
        tasks = n
        del sim
        gc.collect()   # the last Sim's cycles: not left to a collection inside the next run
    return {"name": name, "ranks": nranks, "wall": typical(walls), "tasks": tasks, "repeats": len(walls),
            "rss": peak_rss()}


#: A case shorter than this is run again (each run a fresh Sim) until this much time was measured
#: or ``MAX_REPEATS`` runs were made; its wall time is then the median run, the first left out
#: (it pays for the first calls of every code path). An 8-rank case is ~600 tasks in ~10 ms: one
#: run alone is noise.
MIN_SECONDS = 2.0
MAX_REPEATS = 200


def typical(walls: list) -> float:
    """The median of ``walls`` without the first (warm-up) run when there are three or more."""
    rest = sorted(walls[1:] if len(walls) >= 3 else walls)
    mid = len(rest) // 2
    return rest[mid] if len(rest) % 2 else (rest[mid - 1] + rest[mid]) / 2


def peak_rss() -> int:
    """This process's peak RSS in bytes: ``VmHWM`` (of this program alone; ``ru_maxrss`` on Linux
    also counts the parent's memory before ``exec``), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def loop_baseline(ntasks: int, streams: int) -> float:
    """Seconds for a plain loop to enqueue and run ``ntasks`` tuple tasks on ``streams`` deques
    (the best of runs repeated for at least 0.2 s: a few hundred tasks take microseconds)."""
    best, spent = None, 0.0
    while best is None or spent < 0.2:
        queues = [deque() for _ in range(streams)]
        done = {}
        t0 = time.perf_counter()
        for i in range(ntasks):
            queues[i % streams].append(("Write", i % streams, i, 4096, i + 1))
        for q in queues:
            while q:
                kind, rank, src, n, dst = q.popleft()
                done[rank] = dst
        t = time.perf_counter() - t0
        spent += t
        best = t if best is None else min(best, t)
    return best


def allreduce_vs_numpy(nranks=16, nbytes=1 << 20) -> tuple[float, float]:
    """(pyhcomm seconds, numpy seconds) for one AllReduce of ``nbytes`` per rank, with data."""
    import numpy as np

    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.capi import hccl_ops as ops
    from pyhcomm.enums import HcclDataType, HcclReduceOp

    count = nbytes // 4
    calls = 21
    starts, ends = [None] * calls, [None] * calls

    def body(comm):
        send, _ = acl.rt.malloc(nbytes, 0)
        recv, _ = acl.rt.malloc(nbytes, 0)
        stream, _ = acl.rt.create_stream()
        for i in range(calls):  # the first call connects and first-touches the buffers
            comm.barrier()
            t0 = time.perf_counter()
            assert ops.HcclAllReduce(send, recv, count, int(HcclDataType.HCCL_DATA_TYPE_FP32),
                                     int(HcclReduceOp.HCCL_REDUCE_SUM), comm.handle, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            comm.barrier()
            t1 = time.perf_counter()
            # from the first rank out of one barrier to the first out of the next (the others
            # may resume later, on the cooperative scheduler)
            starts[i] = t0 if starts[i] is None else min(starts[i], t0)
            ends[i] = t1 if ends[i] is None else min(ends[i], t1)

    pyhcomm.launch(body, nranks)
    times = [e - s for s, e in zip(starts[1:], ends[1:])]
    inputs = [np.random.default_rng(r).random(count, dtype=np.float32) for r in range(nranks)]
    numpy_times = []
    for _ in range(calls - 1):
        t0 = time.perf_counter()
        acc = inputs[0].copy()
        for x in inputs[1:]:
            acc += x
        outs = [acc.copy() for _ in range(nranks)]
        numpy_times.append(time.perf_counter() - t0)
        del outs
    return min(times), min(numpy_times)  # the best of twenty each: this machine is shared


def small_allgather_vs_copy(nranks=16, nbytes=1024) -> tuple[float, int, float]:
    """(seconds of one 16 x 1 KiB mesh AllGather, its tasks, seconds of one local copy
    enqueue + execute). The AllGather's cost is the difference between a launch making eleven calls
    and one making one (the same init, connect and teardown), divided by ten."""
    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.capi import hccl_ops as ops
    from pyhcomm.enums import HcclDataType

    def body(comm, calls):
        send, _ = acl.rt.malloc(nbytes, 0)
        recv, _ = acl.rt.malloc(nbytes * comm.size, 0)
        stream, _ = acl.rt.create_stream()
        for _ in range(calls):
            assert ops.HcclAllGather(send, recv, nbytes // 4, int(HcclDataType.HCCL_DATA_TYPE_FP32),
                                     comm.handle, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0

    def measure(calls):
        best = None
        for _ in range(3):
            sim = pyhcomm.Sim(scheduler="coop")
            t0 = time.perf_counter()
            pyhcomm.launch(body, nranks, calls, sim=sim)
            t = time.perf_counter() - t0
            best = t if best is None else min(best, t)
        return best, next(sim.record.counter) - 1

    (t1, n1), (t2, n2) = measure(1), measure(11)
    return (t2 - t1) / 10, (n2 - n1) // 10, local_copy_cost()


def local_copy_cost(n=20000) -> float:
    """Seconds per ``HcommLocalCopyOnThread`` of 256 bytes, enqueue + execute, on one rank."""
    import pyhcomm
    from pyhcomm import acl

    pyhcomm.reset()
    acl.rt.set_device(0)
    _, comms = pyhcomm.HcclCommInitAll([0])
    stream, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 0)
    a, _ = acl.rt.malloc(1 << 20, 0)
    b, _ = acl.rt.malloc(1 << 20, 0)
    copy = pyhcomm.HcommLocalCopyOnThread
    t0 = time.perf_counter()
    for i in range(n):
        copy(thread, a + (i % 4096) * 256, b, 256)
    acl.rt.synchronize_stream(stream)
    dt = (time.perf_counter() - t0) / n
    pyhcomm.reset()
    return dt


# -- a hierarchical AllReduce on a cluster, timed ---------------------------------------------------------
def cluster_allreduce(nranks: int, product: str, nbytes: int = 1 << 20) -> dict:
    """``HcclAllReduce`` of ``nbytes`` per rank on ``nranks`` ranks of a cluster (Atlas A2: servers of
    eight NPUs; Atlas A3: super pods of 256 dies, servers of sixteen), data-less, then its replay:
    what the selection picked, tasks, wall seconds of the run and of the replay, peak RSS, and the
    modeled time of the call."""
    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.capi import hccl_ops as ops
    from pyhcomm.config import Config
    from pyhcomm.enums import HcclDataType, HcclReduceOp
    from pyhcomm.timing.replay import replay
    from pyhcomm.topology import RankTable

    fp32, total = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)

    def body(comm):
        send, _ = acl.rt.malloc(nbytes, 0)
        recv, _ = acl.rt.malloc(nbytes, 0)
        stream, _ = acl.rt.create_stream()
        assert ops.HcclAllReduce(send, recv, nbytes // 4, fp32, total, comm.handle, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0

    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=0), product=product, data=False,
                      scheduler="coop")
    with _entered(sim):
        per = sim.runtime.product.devices_per_server
        table = RankTable.cluster(nranks // per, super_pods=max(1, nranks // 256) if per == 16 else 1)
    t0 = time.perf_counter()
    pyhcomm.launch(body, nranks, sim=sim, rank_table=table)
    t1 = time.perf_counter()
    tasks = sim.record.next_seq() - 1      # (entries: tasks and host effects)
    tl = replay(sim)
    t2 = time.perf_counter()
    call = next(c for c in tl.calls if c.name == "HcclAllReduce")
    return {"name": f"{product} allreduce", "ranks": nranks, "servers": table.servers, "super_pods": table.super_pods,
            "algorithm": call.algorithm, "tasks": tasks, "run": t1 - t0, "replay": t2 - t1, "rss": peak_rss(),
            "modeled_us": call.seconds * 1e6, "busbw": call.busbw / 1e9}


class _entered:
    """``with``: the Sim current inside the block."""

    def __init__(self, sim):
        self.sim = sim

    def __enter__(self):
        from pyhcomm import sim as sim_mod
        self.token = sim_mod.enter(self.sim)

    def __exit__(self, *exc):
        from pyhcomm import sim as sim_mod
        sim_mod.leave(self.token)


# -- the driver ------------------------------------------------------------------------------------
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="8,64,256,1024")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated, or all")
    ap.add_argument("--size", type=int, default=4096, help="bytes per rank (per rank pair for AlltoAll)")
    ap.add_argument("--data", type=int, default=0, help="1: move bytes (default: data-less)")
    ap.add_argument("--scheduler", default="coop")
    ap.add_argument("--goals", type=int, default=1, help="0: skip the AllReduce and small AllGather goals")
    ap.add_argument("--cluster-allreduce", help="comma-separated rank counts: HcclAllReduce of --cluster-bytes per rank "
                    "on a cluster of --product, data-less, replayed (one subprocess each)")
    ap.add_argument("--product", default="Atlas 800T A2", help="the cluster's product (default Atlas 800T A2)")
    ap.add_argument("--cluster-bytes", type=int, default=1 << 20, help="bytes per rank (default 1 MiB)")
    ap.add_argument("--limit", type=float, default=None, help="seconds a cluster case may run (default: no limit)")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case and args.case.startswith("cluster:"):
        _, n, product = args.case.split(":", 2)
        print(json.dumps(cluster_allreduce(int(n), product, args.cluster_bytes)))
        return
    if args.cluster_allreduce:
        print(f"# {args.product}: HcclAllReduce of {args.cluster_bytes} bytes per rank, data-less, run then replayed")
        for n in [int(x) for x in args.cluster_allreduce.split(",")]:
            cmd = [sys.executable, __file__, "--case", f"cluster:{n}:{args.product}",
                   "--cluster-bytes", str(args.cluster_bytes)]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.limit)
            except subprocess.TimeoutExpired:
                print(f"{n:>6} ranks: not done after {time.perf_counter() - t0:.0f} s (--limit)", flush=True)
                continue
            if proc.returncode != 0:
                print(f"{n:>6} ranks: failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:200]}", flush=True)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{n:>6} ranks ({r['servers']} servers, {r['super_pods']} super pod(s)): {r['algorithm']}, "
                  f"{r['tasks']:,} tasks, run {r['run']:.1f} s + replay {r['replay']:.1f} s "
                  f"(wall {time.perf_counter() - t0:.1f} s all told), peak RSS {r['rss'] / 2**30:.2f} GiB; "
                  f"modeled {r['modeled_us']:.1f} us, busbw {r['busbw']:.2f} GB/s", flush=True)
        return
    if args.case:
        name, n = args.case.split(":")
        print(json.dumps(run_case(name, int(n), args.size, bool(args.data), args.scheduler)))
        return
    import pyhcomm
    print(f"# pyhcomm {pyhcomm.__version__}: scale, {args.size} B per rank, data {'on' if args.data else 'off'}, "
          f"{args.scheduler} scheduler, {os.cpu_count()} cores")
    print(f"{'collective':>15} {'ranks':>6} {'tasks':>10} {'runs':>4} {'wall s':>9} {'us/task':>8} {'loop us':>8} "
          f"{'x loop':>7} {'vs 8':>6} {'peak RSS':>9}")
    names = COLLECTIVES + MORE if args.collectives == "all" else args.collectives.split(",")
    for name in names:
        first = None
        for n in [int(x) for x in args.ranks.split(",")]:
            cmd = [sys.executable, __file__, "--case", f"{name}:{n}", "--size", str(args.size),
                   "--data", str(args.data), "--scheduler", args.scheduler]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{name:>15} {n:>6}  failed: {tail[:150]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            us = r["wall"] / r["tasks"] * 1e6
            loop_us = loop_baseline(r["tasks"], n) / r["tasks"] * 1e6
            first = first or us
            print(f"{name:>15} {n:>6} {r['tasks']:>10,} {r['repeats']:>4} {r['wall']:>9.3f} {us:>8.2f} "
                  f"{loop_us:>8.2f} {us / loop_us:>6.1f}x {us / first:>5.2f}x {r['rss'] / 2**20:>7.0f} MB",
                  flush=True)
    if not args.goals:
        return
    ours, base = allreduce_vs_numpy()
    print(f"\n16 ranks x 1 MiB AllReduce, data on: pyhcomm {ours * 1e3:.1f} ms, numpy {base * 1e3:.1f} ms, "
          f"ratio {ours / base:.2f}x (goal <= 2x)")
    t, tasks, copy = small_allgather_vs_copy()
    print(f"16 ranks x 1 KiB AllGather: {t * 1e3:.1f} ms for {tasks} tasks; {tasks} x one local copy "
          f"({copy * 1e6:.2f} us) = {tasks * copy * 1e3:.1f} ms; ratio {t / (tasks * copy):.2f}x (goal <= 3x)")


if __name__ == "__main__":
    main()
