"""hccl_test's table from the timing model: how long each collective would take on a real cluster.

For every product, rank count, collective and size, the ranks run the ``hccl.h`` call on their
stream (data-less unless ``--check``), the record is replayed on the product's cost model
(:mod:`pyhcomm.timing`), and the table has hccl_test's columns (CANN's HCCL Test tool):

* ``data_size(Bytes)``: hccl_test's ``-b``..``-e`` size per NPU (AllGather[V]: the gathered
  output, ``sendCount = data_size / ranks``; ReduceScatter[V] and Scatter: the input,
  ``data_size / ranks`` per rank out; AllReduce, Reduce (root 0), Broadcast (root 0): the buffer;
  AlltoAll[V|VC]: each rank's send buffer, ``data_size / ranks`` to every rank; the V variants
  with equal counts, as hccl_test's ``*v_test`` programs);
* ``aveg_time(us)``: the modeled time of one call, averaged over ``--iters`` calls issued back to
  back on the stream (from the first measured call's first entry to the last one's end);
* ``alg_bandwidth(GB/s)``: ``data_size / aveg_time`` (hccl_test's algorithm bandwidth);
* ``check_result``: ``success`` / ``failed`` when ``--check`` moved real bytes (inputs of rank
  ``r`` all ``r + 1``) and compared every rank's output with the expected values; ``NULL``
  otherwise, as hccl_test with ``-c 0``.

Each table ends with the measured cost of the model itself: seconds of the plain data-less run,
of the replay, and their ratio (the replay is on top of the run).

    python benchmarks/hccl_test.py [--product "Atlas 800T A2"] [--ranks 8] [--op all_reduce]
                                   [-b 8K] [-e 64M] [-f 2] [--iters 1] [--check]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.config import Config
from pyhcomm.enums import HcclDataType, HcclReduceOp
from pyhcomm.timing.replay import replay

FP32, SUM = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)
H2D, D2H = 1, 2
PRODUCTS = ("Atlas 800T A2", "Atlas A3", "Atlas 350")
CHECK_LIMIT = 16 << 20        # bytes per rank moved for real at most with --check


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


# op: (send bytes, recv bytes, call, expected output of rank r or None: not checked on r, read back from
# the send buffer) per rank, from data_size and ranks; sizes as hccl_test sets them (the V variants
# with equal counts, as its *v_test programs do)
def _ops():
    hccl = pyhcomm

    def ar(c, s, r, size, n, st):
        return hccl.HcclAllReduce(s, r, size // 4, FP32, SUM, c, st)

    def ag(c, s, r, size, n, st):
        return hccl.HcclAllGather(s, r, size // 4 // n, FP32, c, st)

    def agv(c, s, r, size, n, st):
        k = size // 4 // n
        return hccl.HcclAllGatherV(s, k, r, [k] * n, [i * k for i in range(n)], FP32, c, st)

    def rs(c, s, r, size, n, st):
        return hccl.HcclReduceScatter(s, r, size // 4 // n, FP32, SUM, c, st)

    def rsv(c, s, r, size, n, st):
        k = size // 4 // n
        return hccl.HcclReduceScatterV(s, [k] * n, [i * k for i in range(n)], r, k, FP32, SUM, c, st)

    def red(c, s, r, size, n, st):
        return hccl.HcclReduce(s, r, size // 4, FP32, SUM, 0, c, st)

    def bc(c, s, r, size, n, st):
        return hccl.HcclBroadcast(s, size // 4, FP32, 0, c, st)

    def sc(c, s, r, size, n, st):
        return hccl.HcclScatter(s, r, size // 4 // n, FP32, 0, c, st)

    def a2a(c, s, r, size, n, st):
        return hccl.HcclAlltoAll(s, size // 4 // n, FP32, r, size // 4 // n, FP32, c, st)

    def a2av(c, s, r, size, n, st):
        k = size // 4 // n
        d = [i * k for i in range(n)]
        return hccl.HcclAlltoAllV(s, [k] * n, d, FP32, r, [k] * n, d, FP32, c, st)

    def a2avc(c, s, r, size, n, st):
        k = size // 4 // n
        return hccl.HcclAlltoAllVC(s, [[k] * n for _ in range(n)], FP32, r, FP32, c, st)

    total = lambda n: n * (n + 1) / 2  # noqa: E731
    whole = lambda z, n: z  # noqa: E731
    part = lambda z, n: z // n  # noqa: E731
    reduced = lambda r, z, n: np.full(z // 4, total(n))  # noqa: E731
    gathered = lambda r, z, n: np.repeat(np.arange(1, n + 1, dtype=np.float32), z // 4 // n)  # noqa: E731
    scattered = lambda r, z, n: np.full(z // 4 // n, total(n))  # noqa: E731
    return {
        "all_reduce": (whole, whole, ar, reduced),
        "all_gather": (part, whole, ag, gathered),
        "all_gather_v": (part, whole, agv, gathered),
        "reduce_scatter": (whole, part, rs, scattered),
        "reduce_scatter_v": (whole, part, rsv, scattered),
        "reduce": (whole, whole, red, lambda r, z, n: reduced(r, z, n) if r == 0 else None),
        "broadcast": (whole, lambda z, n: 4, bc, "root"),
        "scatter": (whole, part, sc, lambda r, z, n: np.full(z // 4 // n, 1.0)),
        "alltoall": (whole, whole, a2a, gathered),
        "alltoallv": (whole, whole, a2av, gathered),
        "alltoallvc": (whole, whole, a2avc, gathered),
    }


OPS = _ops()


def one(product: str, nranks: int, op: str, size: int, iters: int, check: bool):
    """``(aveg_time seconds, check_result, run seconds, replay seconds)`` of one table row."""
    send_bytes, recv_bytes, call, expect = OPS[op]
    data = check and size <= CHECK_LIMIT

    def body(comm):
        n, me = comm.size, comm.rank
        sb, rb = max(4, send_bytes(size, n)), max(4, recv_bytes(size, n))
        send, _ = acl.rt.malloc(sb, 0)
        recv, _ = acl.rt.malloc(rb, 0)
        stream, _ = acl.rt.create_stream()
        if data:
            host = np.full(sb // 4, me + 1, dtype=np.float32)
            acl.rt.memcpy(send, sb, acl.util.numpy_to_ptr(host), sb, H2D)
        for _ in range(iters):
            ret = call(comm.handle, send, recv, size, n, stream)
            assert ret == 0, f"{op}: {ret}"
        acl.rt.synchronize_stream(stream)
        if not data:
            return None
        from_send = expect == "root"            # broadcast: every rank's buffer holds the root's input
        want = np.full(sb // 4, 1.0) if from_send else expect(me, size, n)
        if want is None:
            return True
        out = np.zeros(want.size, dtype=np.float32)
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, send if from_send else recv, out.nbytes, D2H)
        return bool(np.array_equal(out, want.astype(np.float32)))

    # launch's cooperative scheduler, and the whole record (a replay needs every entry)
    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=0), product=product, data=data,
                      scheduler="coop")
    t0 = time.perf_counter()
    oks = pyhcomm.launch(body, nranks, sim=sim)
    t1 = time.perf_counter()
    tl = replay(sim)
    t2 = time.perf_counter()
    calls = tl.calls[-iters:]
    seconds = (max(c.end for c in calls) - min(c.begin for c in calls)) / iters
    result = "NULL" if not data else ("success" if all(oks) else "failed")
    return seconds, result, t1 - t0, t2 - t1


def table(product: str, nranks: int, op: str, sizes, iters: int, check: bool, out=None) -> None:
    out = out or sys.stdout
    print(f"# {op}_test (modeled): {product}, {nranks} ranks, fp32"
          f"{', sum' if op in ('all_reduce', 'reduce_scatter') else ''}, iters {iters}", file=out)
    print(f"{'data_size(Bytes):':<15} | {'aveg_time(us):':<12} | {'alg_bandwidth(GB/s):':<18} | check_result:", file=out)
    run_s = replay_s = 0.0
    for size in sizes:
        seconds, result, r, p = one(product, nranks, op, size, iters, check)
        run_s += r
        replay_s += p
        us = seconds * 1e6
        print(f"{size:<17} | {us:<14.2f} | {size / seconds / 1e9:<20.5f} | {result}", file=out)
    print(f"# model cost: run {run_s:.2f} s, replay {replay_s:.2f} s, replay / run {replay_s / run_s:.2f}\n",
          file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--product", action="append", help=f"repeatable (default: {', '.join(PRODUCTS)})")
    parser.add_argument("--ranks", default="8", help="comma-separated rank counts (default 8)")
    parser.add_argument("--op", default=",".join(OPS), help=f"comma-separated, of {', '.join(OPS)}")
    parser.add_argument("-b", "--minbytes", default="8K")
    parser.add_argument("-e", "--maxbytes", default="64M")
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("--iters", type=int, default=1)
    parser.add_argument("--check", action="store_true", help=f"move real bytes (up to {CHECK_LIMIT >> 20} MiB) "
                        "and check every rank's output")
    args = parser.parse_args(argv)
    sizes, size = [], parse_size(args.minbytes)
    while size <= parse_size(args.maxbytes):
        sizes.append(size)
        size *= max(2, args.stepfactor)
    for product in args.product or PRODUCTS:
        for nranks in (int(x) for x in args.ranks.split(",")):
            for op in args.op.split(","):
                table(product, nranks, op, [s for s in sizes if s >= 4 * nranks], args.iters, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
