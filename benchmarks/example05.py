"""HCCL's example 05 (a custom AllGather) on the timing model, its variants side by side.

Each variant is the port in ``tests/hccl_examples`` (``ex05_custom_allgather_<variant>``), called
once per size on every rank with real bytes (the AIV kernel reads its flags), the record replayed
on the product's cost model (:mod:`pyhcomm.timing`; the AIV and CCU parameters from HCCL's
``cost_model.cc``, docs/timing.md). The variants: ``aicpu`` (an AI CPU kernel driving AICPU_TS
threads), ``aiv`` (an AIV kernel's blocks, flags in memory), ``ccu`` (a CCU kernel registered once
per communicator, launched on a CCU thread). The columns are hccl_test's for an AllGather: ``data_size(Bytes)`` is the
gathered output per NPU; ``aveg_time(us)`` the modeled time of the call on the slowest rank, from
its first entry to the return of the stream synchronize after it; ``alg_bandwidth(GB/s)``
``data_size / aveg_time``; ``check_result`` whether every rank gathered what it should.

    python benchmarks/example05.py [--ranks 8] [-b 8K] [-e 16M] [-f 4] [--variant aicpu,aiv,ccu]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.spmd import observe_launches
from pyhcomm.timing.replay import replay

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = os.path.join(HERE, "..", "tests", "hccl_examples")
VARIANTS = ("aicpu", "aiv", "ccu")
FP32, H2D, D2H = 4, 1, 2


def _port(variant: str):
    if PORTS not in sys.path:
        sys.path.insert(0, PORTS)
    return __import__(f"ex05_custom_allgather_{variant}")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def _body(variant: str, count: int, spans: dict):
    """A rank: its input (``count`` floats of value ``rank``), one call, the synchronize after
    it; ``spans[rank]`` = (first seq of the call, seq of the synchronize, gathered correctly)."""
    port = _port(variant)

    def body(comm):
        n, me = comm.size, comm.rank
        stream, _ = acl.rt.create_stream()
        send, _ = acl.rt.malloc(count * 4, 0)
        recv, _ = acl.rt.malloc(count * 4 * n, 0)
        x = np.full(count, me, np.float32)
        acl.rt.memcpy(send, x.nbytes, acl.util.numpy_to_ptr(x), x.nbytes, H2D)
        record = pyhcomm.current_sim().record
        first = record.next_seq()
        nbytes = count * 4 if variant == "aiv" else count     # the AIV port takes bytes, the others a count
        assert port.HcclAllGatherCustom(send, recv, nbytes, FP32, comm.handle, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        last = record.next_seq() - 1
        out = np.zeros(count * n, np.float32)
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, recv, out.nbytes, D2H)
        spans[me] = (first, last, bool((out == np.repeat(np.arange(n, dtype=np.float32), count)).all()))
    return body


def one(variant: str, product: str, nranks: int, size: int) -> tuple:
    """``(aveg_time seconds, check ok)`` of one call gathering ``size`` bytes per NPU."""
    spans: dict = {}
    sims: list = []
    with observe_launches(sims.append):
        pyhcomm.launch(_body(variant, max(1, size // 4 // nranks), spans), nranks, product=product)
    tl = replay(sims[-1])
    seqs = np.array([ev.seq for ev in tl.events])
    issue, end = np.asarray(tl.issue, dtype=float), np.asarray(tl.end, dtype=float)
    worst = 0.0
    for first, last, _ok in spans.values():
        at = np.flatnonzero((seqs >= first) & (seqs <= last))
        worst = max(worst, float(np.nanmax(end[at]) - np.nanmin(issue[at])))
    return worst, all(ok for _f, _l, ok in spans.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--product", default="Atlas 350")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--variant", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("-b", "--minbytes", default="8K")
    parser.add_argument("-e", "--maxbytes", default="16M")
    parser.add_argument("-f", "--stepfactor", type=int, default=4)
    a = parser.parse_args(argv)
    variants = a.variant.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variant {sorted(unknown)[0]!r} (known: {', '.join(VARIANTS)})")
    sizes, size = [], parse_size(a.minbytes)
    while size <= parse_size(a.maxbytes):
        sizes.append(size)
        size *= a.stepfactor
    print(f"example 05 AllGather, {a.product}, {a.ranks} ranks (timing model)")
    print(f"{'variant':>8} {'data_size(Bytes)':>17} {'aveg_time(us)':>14} {'alg_bandwidth(GB/s)':>20} {'check_result':>13}")
    for size in sizes:
        for variant in variants:
            t, ok = one(variant, a.product, a.ranks, size)
            print(f"{variant:>8} {size:>17} {t * 1e6:>14.2f} {size / t / 1e9:>20.4f} "
                  f"{'success' if ok else 'failed':>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
