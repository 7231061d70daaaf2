"""Benchmark thread notifies and batch mode against baselines measured in the same run.

(a) record-to-wait latency between two threads of one device: a ping-pong of N rounds (A records
    B.n0, B waits n0, B records A.n0, A waits n0), all enqueued, then one synchronize; microseconds
    per round trip (enqueue + execution). Baseline: the same ping-pong between two Python OS
    threads with ``threading.Event``.
(b) primitives per second, eager versus batch mode (HcommBatchModeStart/End around the same
    calls): per iteration A copies 256 B, records B; B waits, copies 256 B, records A; A waits
    (6 primitives), K iterations then one synchronize. Eager is the baseline.

Timings are the best of ``--repeat`` runs; read the ratios (these machines are noisy). The task
record is switched off, as in benchmarks/local_copy.py.

    python benchmarks/notify.py [--rounds 20000] [--iters 5000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import threading
import time

import pyhcomm
from pyhcomm import acl
from pyhcomm import (ACL_MEM_MALLOC_HUGE_FIRST, COMM_ENGINE_CPU_TS, HcclCommInitAll, HcclThreadAcquire,
                     HcommBatchModeEnd, HcommBatchModeStart, HcommLocalCopyOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread)


def best(fn, repeat):
    """Best wall time of ``repeat`` calls; ``fn`` returns (seconds, extra) or seconds."""
    runs = [fn() for _ in range(repeat)]
    return min(runs, key=lambda r: r[0] if isinstance(r, tuple) else r)


def ping_pong_pyhcomm(a, b, n):
    record, wait, sync = HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, acl.rt.synchronize_device
    t0 = time.perf_counter()
    for _ in range(n):
        record(a, b, 0)
        wait(b, 0, 0)
        record(b, a, 0)
        wait(a, 0, 0)
    t1 = time.perf_counter()
    ret = sync()
    t2 = time.perf_counter()
    assert ret == 0, ret
    return t2 - t0, t1 - t0


def ping_pong_events(n):
    ping, pong = threading.Event(), threading.Event()

    def other():
        for _ in range(n):
            ping.wait()
            ping.clear()
            pong.set()

    th = threading.Thread(target=other, name="bench-pong")
    th.start()
    t0 = time.perf_counter()
    for _ in range(n):
        ping.set()
        pong.wait()
        pong.clear()
    t1 = time.perf_counter()
    th.join(60)
    assert not th.is_alive()
    return t1 - t0


def mix(a, b, bufs, iters, batch):
    """The primitive mix of (b); returns (total seconds, issue seconds)."""
    copy, record, wait = HcommLocalCopyOnThread, HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread
    src, da, db = bufs
    t0 = time.perf_counter()
    if batch:
        HcommBatchModeStart("bench")
    for i in range(iters):
        off = (i & 255) * 256
        copy(a, da + off, src + off, 256)
        record(a, b, 0)
        wait(b, 0, 0)
        copy(b, db + off, da + off, 256)
        record(b, a, 0)
        wait(a, 0, 0)
    if batch:
        HcommBatchModeEnd("bench")
    t1 = time.perf_counter()
    ret = acl.rt.synchronize_device()
    t2 = time.perf_counter()
    assert ret == 0, ret
    return t2 - t0, t1 - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20_000, help="ping-pong round trips")
    ap.add_argument("--iters", type=int, default=5_000, help="iterations of the 6-primitive mix")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    pyhcomm.record.enabled = False
    acl.init()
    acl.rt.set_device(0)
    _, (comm,) = HcclCommInitAll([0])
    _, (a, b) = HcclThreadAcquire(comm, COMM_ENGINE_CPU_TS, 2, 1)
    print(f"pyhcomm {pyhcomm.__version__}, product {pyhcomm.get_product().name}, two CPU_TS threads on device 0")

    n = args.rounds
    total, issue = best(lambda: ping_pong_pyhcomm(a, b, n), args.repeat)
    base = best(lambda: ping_pong_events(n), args.repeat)
    print(f"\n(a) ping-pong, {n} round trips (4 primitives each), enqueued then one synchronize")
    print(f"{'':<38}{'us/round trip':>14}{'speed vs Event':>16}")
    print(f"{'pyhcomm record -> wait (total)':<38}{total / n * 1e6:>14.2f}{base / total:>15.2f}x")
    print(f"{'  of which enqueue':<38}{issue / n * 1e6:>14.2f}")
    print(f"{'  of which synchronize (execution)':<38}{(total - issue) / n * 1e6:>14.2f}")
    print(f"{'threading.Event, 2 OS threads':<38}{base / n * 1e6:>14.2f}{1:>15.2f}x")
    print(f"  ratio Event time / pyhcomm time: {base / total:.2f}x (> 1: pyhcomm's round trip is faster)")

    k = args.iters
    prims = 6 * k
    src, _ = acl.rt.malloc(256 * 256, ACL_MEM_MALLOC_HUGE_FIRST)
    da, _ = acl.rt.malloc(256 * 256, ACL_MEM_MALLOC_HUGE_FIRST)
    db, _ = acl.rt.malloc(256 * 256, ACL_MEM_MALLOC_HUGE_FIRST)
    bufs = (src, da, db)
    for dst in bufs:
        acl.rt.memset(dst, 256 * 256, 1, 256 * 256)
    eager_total, eager_issue = best(lambda: mix(a, b, bufs, k, False), args.repeat)
    batch_total, batch_issue = best(lambda: mix(a, b, bufs, k, True), args.repeat)
    print(f"\n(b) {k} x (copy, record, wait, copy, record, wait) = {prims} primitives, then one synchronize")
    print(f"{'':<10}{'prims/s (total)':>16}{'prims/s (issue)':>17}{'ratio vs eager':>16}")
    print(f"{'eager':<10}{prims / eager_total:>16,.0f}{prims / eager_issue:>17,.0f}{1:>15.2f}x")
    print(f"{'batch':<10}{prims / batch_total:>16,.0f}{prims / batch_issue:>17,.0f}"
          f"{eager_total / batch_total:>15.2f}x")
    print(f"  batch / eager throughput: {eager_total / batch_total:.2f}x total, "
          f"{eager_issue / batch_issue:.2f}x issue only")
    acl.finalize()


if __name__ == "__main__":
    main()
