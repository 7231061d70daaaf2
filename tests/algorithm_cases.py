"""Run one algorithm of the catalogue on real bytes and compare every rank's output with numpy.

``run_case(algorithm, op, nranks, count, ...)`` runs the collective ``op`` with int32 data (SUM) by
name (:func:`pyhcomm.collectives.dispatch.run_algorithm`), on ``nranks`` ranks of ``product``
(servers of ``per_server`` ranks, ``pod`` ranks a super pod), and returns ``(outputs, expected,
sim)``: every rank's output bytes and numpy's. ``check_case`` asserts they are equal.
"""
from __future__ import annotations

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import dispatch
from pyhcomm.collectives.algorithm import Op
from pyhcomm.config import Config
from hcomm_testutil import malloc, read, write

I32, SUM = int(pyhcomm.HCCL_DATA_TYPE_INT32), int(pyhcomm.HCCL_REDUCE_SUM)
AG, AGV, RS, RSV, AR = (Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V, Op.HCCL_CMD_REDUCE_SCATTER,
                        Op.HCCL_CMD_REDUCE_SCATTER_V, Op.HCCL_CMD_ALLREDUCE)
BCAST, SCATTER, REDUCE = Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_SCATTER, Op.HCCL_CMD_REDUCE
A2A, A2AV, A2AVC = Op.HCCL_CMD_ALLTOALL, Op.HCCL_CMD_ALLTOALLV, Op.HCCL_CMD_ALLTOALLVC


def _counts(p: int, count: int) -> list:
    """Per-rank element counts of the V calls: unequal, one rank with none when p > 2."""
    return [0 if (p > 2 and r == 1) else count + (r * 5) % 7 for r in range(p)]


def _inputs(op, p: int, count: int):
    """(per-rank input arrays, per-rank expected outputs) for int32 SUM."""
    def x(r, n):
        return (np.arange(n, dtype=np.int64) * (r + 3) + 17 * r - 5).astype(np.int32)
    if op == AG:
        ins = [x(r, count) for r in range(p)]
        return ins, [np.concatenate(ins)] * p
    if op == AGV:
        cs = _counts(p, count)
        ins = [x(r, cs[r]) for r in range(p)]
        return ins, [np.concatenate(ins)] * p
    if op in (AR, REDUCE):
        ins = [x(r, count) for r in range(p)]
        return ins, [np.sum(ins, axis=0, dtype=np.int32)] * p
    if op == RS:
        ins = [x(r, p * count) for r in range(p)]
        total = np.sum(ins, axis=0, dtype=np.int32)
        return ins, [total[r * count:(r + 1) * count] for r in range(p)]
    if op == RSV:
        cs = _counts(p, count)
        ins = [x(r, sum(cs)) for r in range(p)]
        total, d = np.sum(ins, axis=0, dtype=np.int32), np.cumsum([0] + cs)
        return ins, [total[d[r]:d[r + 1]] for r in range(p)]
    if op in (BCAST, SCATTER):
        n = count * (p if op == SCATTER else 1)
        ins = [x(0, n)] * p
        return ins, ([ins[0]] * p if op == BCAST else [ins[0][r * count:(r + 1) * count] for r in range(p)])
    if op in (A2A, A2AV, A2AVC):
        sizes = [[count + ((i + 2 * j) % 3 if op != A2A else 0) for j in range(p)] for i in range(p)]
        ins = [np.concatenate([x(i * p + j, sizes[i][j]) for j in range(p)]) for i in range(p)]
        outs = []
        for r in range(p):
            parts = []
            for j in range(p):
                off = sum(sizes[j][:r])
                parts.append(ins[j][off:off + sizes[j][r]])
            outs.append(np.concatenate(parts))
        return (ins, sizes), outs
    raise ValueError(op)


def run_case(algorithm, op, nranks: int, count: int, product: str = "Atlas 800T A2", per_server: int = 0,
             pod: int = 0, root: int = 0, data: bool = True, buffsize_mb: int = 0, seed: int = 0):
    """Run ``algorithm`` (a name or an :class:`~pyhcomm.collectives.algorithm.Algorithm`) for
    ``op`` on ``nranks`` ranks; ``per_server``: devices a server (0: the product's); ``pod``:
    devices a super pod (0: 768). Returns (outputs, expected, sim)."""
    cfg = Config.from_env().with_values(record_capacity=0, seed=seed)
    if per_server:
        cfg = cfg.with_values(devices_per_server=per_server)
    if pod:
        cfg = cfg.with_values(super_pod_size=pod)
    if buffsize_mb:
        cfg = cfg.with_values(buffsize_mb=buffsize_mb)
    sim = pyhcomm.Sim(cfg, product=product, data=data)
    p = nranks
    ins, want = _inputs(op, p, count)
    out = {}

    def body(comm):
        me, h = comm.rank, comm.handle
        stream, _ = acl.rt.create_stream()
        if op in (A2A, A2AV, A2AVC):
            arrays, sizes = ins
            sb = malloc(max(4, arrays[me].nbytes))
            if arrays[me].nbytes:
                write(sb, arrays[me].view(np.uint8))
            rsz = [sizes[j][me] * 4 for j in range(p)]
            rb = malloc(max(4, sum(rsz)))
            ssz = [s * 4 for s in sizes[me]]
            sd = [sum(ssz[:j]) for j in range(p)]
            rd = [sum(rsz[:j]) for j in range(p)]
            args = (sb, rb, count * 4) if op == A2A else (sb, ssz, sd, rb, rsz, rd)
            nbytes, outn = count * 4, sum(rsz)
        else:
            x = ins[me]
            n_out = want[me].nbytes
            sb = malloc(max(4, x.nbytes))
            if x.nbytes:
                write(sb, x.view(np.uint8))
            rb = malloc(max(4, n_out)) if op != BCAST else sb
            outn = n_out
            if op == AG:
                args, nbytes = (sb, rb, x.nbytes), x.nbytes
            elif op == AGV:
                cs = [c * 4 for c in _counts(p, count)]
                args, nbytes = (sb, rb, cs, [sum(cs[:r]) for r in range(p)]), max(cs)
            elif op in (AR, RS):
                args, nbytes = (sb, rb, count, I32, SUM), count * 4
            elif op == RSV:
                cs = _counts(p, count)
                args, nbytes = (sb, rb, cs, [sum(cs[:r]) for r in range(p)], I32, SUM), max(cs) * 4
            elif op == REDUCE:
                args, nbytes = (sb, rb, count, I32, SUM, root), count * 4
            elif op == BCAST:
                if me != root:
                    write(sb, np.full(x.nbytes, 0xEE, np.uint8))
                args, nbytes = (sb, x.nbytes, root), x.nbytes
            elif op == SCATTER:
                args, nbytes = (sb, rb, count * 4, root), count * 4
            else:
                raise ValueError(op)
        call = dispatch.describe(h, op, nbytes, root=root if op in (BCAST, SCATTER, REDUCE) else None,
                                 data_type=I32, reduce_op=SUM)
        dispatch.run_algorithm("case", h, stream, algorithm, call, args)
        assert acl.rt.synchronize_stream(stream) == 0
        if data and (op != REDUCE or me == root):
            out[me] = read(rb, outn).view(np.int32).copy() if outn else np.zeros(0, np.int32)

    pyhcomm.launch(body, p, sim=sim)
    if op == REDUCE:
        want = {root: want[root]}
    return out, want, sim


def check_case(*a, **k):
    out, want, sim = run_case(*a, **k)
    ranks = want.keys() if isinstance(want, dict) else range(len(want))
    for r in ranks:
        np.testing.assert_array_equal(out[r], want[r], err_msg=f"rank {r}")
    return sim


def level_algorithm(level):
    """A test algorithm running every collective a level has a core for, flat (the drivers)."""
    from pyhcomm.collectives import drive
    from pyhcomm.collectives.algorithm import Algorithm
    return Algorithm(f"{level.name}-level", "", drive.implementations(level))
