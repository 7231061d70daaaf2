"""Benchmark the collectives on N in-process ranks, in the nccl-tests table format.

For each collective and size, every rank runs the ``hccl.h`` call on its stream and synchronises;
``time`` is the best of ``--iters`` calls, each timed from the first rank out of a host barrier
before it to the first rank out of one after it (every rank had finished the call by then; the
machines are shared, and the best of a few is what repeats). ``size`` is the bytes of the larger
user buffer (as nccl-tests: the output of AllGather, the input of ReduceScatter and AlltoAll).
``algbw = size / time``; ``busbw`` applies nccl-tests' factor. The baseline, in the same run, is
numpy doing the same data movement on one thread (every rank's output built from every rank's
input), the best of ``--iters`` too; ``ratio = pyhcomm time / numpy time``.

    python benchmarks/collectives.py [--ranks 16] [--min-size 1024] [--max-size 64M] [--iters 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.capi import hccl_ops as ops
from pyhcomm.enums import HcclDataType, HcclReduceOp

FP32 = int(HcclDataType.HCCL_DATA_TYPE_FP32)
SUM = int(HcclReduceOp.HCCL_REDUCE_SUM)
H2D, D2H = 1, 2


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


# name: (bytes of send buffer, bytes of recv buffer, call, busbw factor, numpy baseline) per rank
def collectives(n):
    def ag(c, s, r, b, st):
        return ops.HcclAllGather(s, r, b // 4 // n, FP32, c, st)

    def rs(c, s, r, b, st):
        return ops.HcclReduceScatter(s, r, b // 4 // n, FP32, SUM, c, st)

    def ar(c, s, r, b, st):
        return ops.HcclAllReduce(s, r, b // 4, FP32, SUM, c, st)

    def bc(c, s, r, b, st):
        return ops.HcclBroadcast(s, b // 4, FP32, 0, c, st)

    def sc(c, s, r, b, st):
        return ops.HcclScatter(s, r, b // 4 // n, FP32, 0, c, st)

    def a2a(c, s, r, b, st):
        return ops.HcclAlltoAll(s, b // 4 // n, FP32, r, b // 4 // n, FP32, c, st)

    def sr(c, s, r, b, st):  # pairs: even ranks send to the next odd rank
        _, me = pyhcomm.HcclGetRankId(c)
        peer = me ^ 1
        if peer >= n:
            return 0
        if me % 2 == 0:
            return ops.HcclSend(s, b // 4, FP32, peer, c, st)
        return ops.HcclRecv(r, b // 4, FP32, peer, c, st)

    def np_sr(ins, outs):
        for r in range(1, len(outs), 2):
            outs[r][:] = ins[r - 1]

    def np_ag(ins, outs):
        for o in outs:
            np.concatenate(ins, out=o)

    def np_rs(ins, outs):
        total = np.sum(ins, axis=0)
        for i, o in enumerate(outs):
            o[:] = total.reshape(len(outs), -1)[i]

    def np_ar(ins, outs):
        total = np.sum(ins, axis=0)
        for o in outs:
            o[:] = total

    def np_bc(ins, outs):
        for o in outs:
            o[:] = ins[0]

    def np_sc(ins, outs):
        parts = ins[0].reshape(len(outs), -1)
        for i, o in enumerate(outs):
            o[:] = parts[i]

    def np_a2a(ins, outs):
        for j, o in enumerate(outs):
            o.reshape(len(ins), -1)[:] = [x.reshape(len(outs), -1)[j] for x in ins]

    f = (n - 1) / n
    return {
        "AllGather": (lambda b: b // n, lambda b: b, ag, f, np_ag, "none"),
        "ReduceScatter": (lambda b: b, lambda b: b // n, rs, f, np_rs, "sum"),
        "AllReduce": (lambda b: b, lambda b: b, ar, 2 * f, np_ar, "sum"),
        "Broadcast": (lambda b: b, lambda b: b, bc, 1.0, np_bc, "none"),
        "Scatter": (lambda b: b, lambda b: b // n, sc, 1.0, np_sc, "none"),
        "AlltoAll": (lambda b: b, lambda b: b, a2a, f, np_a2a, "none"),
        "SendRecv": (lambda b: b, lambda b: b, sr, 1.0, np_sr, "none"),
    }


def bench_rank(comm, name, sizes, iters, times):
    n = comm.size
    send_of, recv_of, call, _f, _np, _op = collectives(n)[name]
    stream, _ = acl.rt.create_stream()
    for size in sizes:
        sb, rb = max(4, send_of(size)), max(4, recv_of(size))
        send, _ = acl.rt.malloc(sb, 0)
        recv, _ = acl.rt.malloc(rb, 0)
        acl.rt.memset(send, sb, comm.rank + 1, sb)
        assert call(comm.handle, send, recv, size, stream) == 0          # warm-up (connects)
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
        spans = times.setdefault(size, [[None, None] for _ in range(iters)])
        for i in range(iters):
            comm.barrier()
            t0 = time.perf_counter()
            assert call(comm.handle, send, recv, size, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
            comm.barrier()
            t1 = time.perf_counter()
            # The first rank out of each barrier marks the moment every rank got there (on the
            # cooperative scheduler the others resume later, maybe after running into the next call).
            span = spans[i]
            span[0] = t0 if span[0] is None else min(span[0], t0)
            span[1] = t1 if span[1] is None else min(span[1], t1)
        acl.rt.free(send)
        acl.rt.free(recv)
    acl.rt.destroy_stream(stream)


def numpy_time(name, n, size, iters):
    send_of, recv_of, _c, _f, fn, _op = collectives(n)[name]
    sb, rb = max(4, send_of(size)), max(4, recv_of(size))
    ins = [np.full(sb // 4, r + 1, np.float32) for r in range(n)]
    outs = [np.empty(rb // 4, np.float32) for _ in range(n)]
    fn(ins, outs)
    best = None
    for _ in range(iters):
        t0 = time.perf_counter()
        fn(ins, outs)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--min-size", default="1K")
    ap.add_argument("--max-size", default="64M")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--product", default="Atlas 800T A2")
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    n = args.ranks
    sizes, s = [], parse_size(args.min_size)
    while s <= parse_size(args.max_size):
        sizes.append(-(-s // (4 * n)) * 4 * n)  # whole fp32 elements for every rank
        s *= 4
    pyhcomm.record.enabled = False
    print(f"# pyhcomm {pyhcomm.__version__}: {n} ranks, {args.product}, fp32, best of {args.iters} calls per size")
    for name in args.only or collectives(n):
        times: dict = {}
        pyhcomm.launch(bench_rank, n, name, sizes, args.iters, times, product=args.product)
        factor, op = collectives(n)[name][3], collectives(n)[name][5]
        print(f"\n# {name}")
        print(f"{'size':>10} {'count':>10} {'type':>6} {'redop':>6} {'time(us)':>10} {'algbw':>7} {'busbw':>7}"
              f" {'numpy(us)':>10} {'ratio':>7}")
        for size in sizes:
            t = min(end - start for start, end in times[size])
            t_np = numpy_time(name, n, size, args.iters)
            algbw = size / t / 1e9
            print(f"{size:>10} {size // 4:>10} {'float':>6} {op:>6} {t * 1e6:>10.1f} {algbw:>7.2f} "
                  f"{algbw * factor:>7.2f} {t_np * 1e6:>10.1f} {t / t_np:>6.1f}x")


if __name__ == "__main__":
    main()
