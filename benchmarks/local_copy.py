"""Benchmark HcommLocalCopyOnThread against its baselines, measured in the same run.

(a) big copies: HcommLocalCopyOnThread + aclrtSynchronizeStream, 16 MiB .. 1 GiB, against one
    ``ctypes.memmove`` of the same size (one core). Goal: >= 1.5x, never below 0.9x; the ceiling
    is how much two threads beat one at memmove on this machine, which the script prints first.
(b) small copies: 100k copies of 256 bytes enqueued, then one synchronize, in microseconds per
    copy, against a Python loop of ``numpy.copyto`` on two fixed 256-byte arrays (goal: <= 5x),
    and against the same loop copying the same slices as ours (views at a moving offset).

Both sides copy between buffers that were touched before timing. Timings are the best of
``--repeat`` runs, the two sides measured alternately; the ratio is what to read (these machines
are noisy).

    python benchmarks/local_copy.py [--max-mib 1024] [--repeat 3] [--small 100000]
"""
from __future__ import annotations

import argparse
import ctypes
import threading
import time

import numpy as np

import pyhcomm
import pyhcomm.backend
from pyhcomm import acl
from pyhcomm import (ACL_MEM_MALLOC_HUGE_FIRST, COMM_ENGINE_CPU_TS, HcclCommInitAll,
                     HcclThreadAcquireWithStream, HcommLocalCopyOnThread)

MiB = 1 << 20


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_pair(ours, base, repeat):
    """Best times of two functions measured alternately (memory bandwidth drifts on shared VMs)."""
    t_ours, t_base = [], []
    for _ in range(repeat):
        t_ours.append(best(ours, 1))
        t_base.append(best(base, 1))
    return min(t_ours), min(t_base)


def two_thread_memmove_scaling(size: int, repeat: int) -> float:
    """How much faster two OS threads copy ``size`` bytes than one, on this machine, now."""
    a, b = np.ones(size, np.uint8), np.zeros(size, np.uint8)
    pa, pb, half = a.ctypes.data, b.ctypes.data, size // 2

    def one():
        ctypes.memmove(pb, pa, size)

    def two():
        t = threading.Thread(target=ctypes.memmove, args=(pb + half, pa + half, size - half))
        t.start()
        ctypes.memmove(pb, pa, half)
        t.join()

    t_two, t_one = best_pair(two, one, repeat)
    return t_one / t_two


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", type=int, default=100_000)
    args = ap.parse_args()

    pyhcomm.record.enabled = False  # measure the data plane, not the task record
    acl.init()
    acl.rt.set_device(0)
    _, comms = HcclCommInitAll([0])
    stream, _ = acl.rt.create_stream()
    _, thread = HcclThreadAcquireWithStream(comms[0], COMM_ENGINE_CPU_TS, stream, 2)
    backend = pyhcomm.current_sim().backend
    print(f"pyhcomm {pyhcomm.__version__}, product {pyhcomm.get_product().name}, "
          f"copy threads {backend.threads}")
    print(f"this machine now: two threads memmove 256 MiB {two_thread_memmove_scaling(256 * MiB, 5):.2f}x "
          "as fast as one (the ceiling for (a))")

    print("\n(a) big copies: HcommLocalCopyOnThread + synchronize vs ctypes.memmove (1 core)")
    print(f"{'size':>10} {'pyhcomm GB/s':>13} {'memmove GB/s':>13} {'ratio':>7}")
    size = 16 * MiB
    while size <= args.max_mib * MiB:
        src, _ = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        dst, _ = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        acl.rt.memset(src, size, 1, size)
        acl.rt.memset(dst, size, 0, size)
        a = np.ones(size, np.uint8)
        b = np.zeros(size, np.uint8)
        pa, pb = a.ctypes.data, b.ctypes.data

        def ours():
            HcommLocalCopyOnThread(thread, dst, src, size)
            acl.rt.synchronize_stream(stream)

        def base():
            ctypes.memmove(pb, pa, size)

        t_ours, t_base = best_pair(ours, base, args.repeat)
        print(f"{size // MiB:>7} MiB {size / t_ours / 1e9:>13.2f} {size / t_base / 1e9:>13.2f} "
              f"{t_base / t_ours:>6.2f}x")
        acl.rt.free(src)
        acl.rt.free(dst)
        del a, b
        size *= 4

    n = args.small
    print(f"\n(b) {n} copies of 256 B enqueued, then one synchronize, vs a Python loop of numpy.copyto")
    src, _ = acl.rt.malloc(256 * 1024, ACL_MEM_MALLOC_HUGE_FIRST)
    dst, _ = acl.rt.malloc(256 * 1024, ACL_MEM_MALLOC_HUGE_FIRST)
    x, y = np.zeros(256, np.uint8), np.ones(256, np.uint8)
    xb, yb = np.zeros(256 * 1024, np.uint8), np.ones(256 * 1024, np.uint8)

    def ours_small():
        copy = HcommLocalCopyOnThread
        for i in range(n):
            off = (i & 1023) * 256
            copy(thread, dst + off, src + off, 256)
        acl.rt.synchronize_stream(stream)

    def base_small():
        copyto = np.copyto
        for i in range(n):
            off = (i & 1023) * 256  # noqa: F841 - the same loop arithmetic as ours
            copyto(x, y)

    def base_views():
        copyto = np.copyto
        for i in range(n):
            off = (i & 1023) * 256  # the same copies as ours: 256 bytes at a moving offset
            copyto(xb[off:off + 256], yb[off:off + 256])

    t_ours, t_base = best_pair(ours_small, base_small, args.repeat)
    _, t_views = best_pair(ours_small, base_views, 1)
    print(f"  pyhcomm {t_ours / n * 1e6:.2f} us/copy")
    print(f"  numpy.copyto, two fixed 256-byte arrays: {t_base / n * 1e6:.2f} us/copy, "
          f"ratio {t_ours / t_base:.2f}x (goal <= 5x)")
    print(f"  numpy.copyto of the same 256-byte slices: {t_views / n * 1e6:.2f} us/copy, "
          f"ratio {t_ours / t_views:.2f}x")
    acl.finalize()


if __name__ == "__main__":
    main()
