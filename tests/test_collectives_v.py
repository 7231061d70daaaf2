"""Per-rank counts and batched point-to-point against numpy oracles: HcclAllGatherV,
HcclReduceScatterV, HcclAlltoAllV, HcclAlltoAllVC and HcclBatchSendRecv.

Counts are uneven on purpose (zeros, fewer elements than ranks, blocks out of rank order in the
buffers). Each rank body issues several calls back to back on one stream and synchronises
once; the checks run in the test thread. ReduceScatterV reduces in the ring's order (slice ``c``:
``x[c+1] op x[c+2] op ... op x[c]``, one backend step at a time), so the oracle is byte-exact.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import support
from test_collectives_reduce import (NP, SUM, assert_same, from_device, make_input, sentinel, step,
                                     to_device)

pytestmark = pytest.mark.timeout(120)

A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
D = pyhcomm.HcclDataType
R = pyhcomm.HcclResult
WORLDS = [(A2, 1), (A2, 2), (A2, 3), (A2, 5), (A2, 8), (A2, 16), (A3, 3), (A350, 4), (A350, 16)]


def ids(world):
    return f"{world[0].split()[-1]}-{world[1]}"


def launch(world, body, *args):
    product, n = world

    def wrapped(comm):
        s, ret = acl.rt.create_stream()
        assert ret == 0
        out = body(comm, s, *args)
        ret = acl.rt.synchronize_stream(s)
        assert ret == 0, acl.get_recent_err_msg()
        return resolve(out)
    return pyhcomm.launch(wrapped, n, product=product, timeout=60, sim=pyhcomm.current_sim())


def resolve(x):
    """Call the readers (after the stream was synchronised), inside lists and tuples too."""
    if callable(x):
        return x()
    if isinstance(x, (list, tuple)):
        return type(x)(resolve(y) for y in x)
    return x


def uneven(n: int, seed: int, zero_every: int = 3) -> list[int]:
    """``n`` block sizes 0..9, every ``zero_every``-th one empty (reproducible)."""
    rng = np.random.default_rng(seed)
    return [0 if (i + seed) % zero_every == 0 else int(rng.integers(1, 10)) for i in range(n)]


def scattered(sizes, seed: int):
    """Displacements for blocks of ``sizes`` laid out in a shuffled order with gaps; and the extent."""
    order = np.random.default_rng(seed).permutation(len(sizes))
    displs, at = [0] * len(sizes), 0
    for i in order:
        displs[i] = at
        at += sizes[i] + 1
    return displs, max(1, at)


def reader(ptr: int, n: int, dtype):
    return lambda: from_device(ptr, n, dtype)


# -- AllGatherV --------------------------------------------------------------------------------------------
def allgatherv_body(comm, s, cases):
    n, r = comm.size, comm.rank
    out = []
    for i, (dt, seed) in enumerate(cases):
        sizes = uneven(n, seed)
        displs, extent = scattered(sizes, seed)
        x = make_input(("agv", seed), r, sizes[r], dt, SUM)
        send = to_device(x, extra=1)
        recv = to_device(sentinel(extent, NP[dt]))
        assert pyhcomm.HcclAllGatherV(send, sizes[r], recv, sizes, displs, dt, comm.handle, s) == 0
        out.append(reader(recv, extent, NP[dt]))
    return out


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_allgatherv_places_every_ranks_block_at_its_displacement(world):
    n = world[1]
    cases = [(D.HCCL_DATA_TYPE_FP32, 1), (D.HCCL_DATA_TYPE_INT8, 2), (D.HCCL_DATA_TYPE_BFP16, 4)]
    res = launch(world, allgatherv_body, cases)
    for i, (dt, seed) in enumerate(cases):
        sizes = uneven(n, seed)
        displs, extent = scattered(sizes, seed)
        want = sentinel(extent, NP[dt]).copy()
        for q in range(n):
            want[displs[q]:displs[q] + sizes[q]] = make_input(("agv", seed), q, sizes[q], dt, SUM)
        for r in range(n):
            assert_same(res[r][i], want, f"AllGatherV {world} rank {r} case {i}")


# -- ReduceScatterV ----------------------------------------------------------------------------------------
def ring_slice_oracle(xs, c: int, op):
    n = len(xs)
    acc = xs[(c + 1) % n].copy()
    for j in range(2, n + 1):
        acc = step(acc, xs[(c + j) % n], op)
    return acc


def rsv_body(comm, s, cases):
    n, r = comm.size, comm.rank
    out = []
    for i, (dt, op, seed) in enumerate(cases):
        sizes = uneven(n, seed, zero_every=4)
        displs, extent = scattered(sizes, seed)
        x = make_input(("rsv", seed), r, extent, dt, op)
        send = to_device(x)
        recv = to_device(sentinel(sizes[r], NP[dt]), extra=1)
        assert pyhcomm.HcclReduceScatterV(send, sizes, displs, recv, sizes[r], dt, op, comm.handle, s) == 0
        out.append(reader(recv, sizes[r], NP[dt]))
    return out


def rsv_cases(family: str):
    pairs = sorted(support.REDUCE_SCATTER_V_PAIRS[family])
    return [(dt, op, 10 + k) for k, (dt, op) in enumerate(pairs)]


@pytest.mark.parametrize("world, family", [((A2, 3), "A2"), ((A2, 1), "A2"), ((A3, 4), "A3"), ((A350, 3), "950"),
                                           ((A2, 16), None)], ids=["A2-3", "A2-1", "A3-4", "350-3", "A2-16"])
def test_reduce_scatterv_every_pair_hccl_lists(world, family):
    n = world[1]
    cases = rsv_cases(family) if family else [(D.HCCL_DATA_TYPE_FP16, SUM, 3)]
    res = launch(world, rsv_body, cases)
    for i, (dt, op, seed) in enumerate(cases):
        sizes = uneven(n, seed, zero_every=4)
        displs, extent = scattered(sizes, seed)
        xs = [make_input(("rsv", seed), q, extent, dt, op) for q in range(n)]
        for r in range(n):
            block = [x[displs[r]:displs[r] + sizes[r]] for x in xs]
            assert_same(res[r][i], ring_slice_oracle(block, r, op), f"ReduceScatterV {world} rank {r} case {i}")


# -- AlltoAllV / AlltoAllVC ----------------------------------------------------------------------------------
def matrix(n: int, seed: int) -> np.ndarray:
    """``m[i][j]``: elements rank i sends to rank j (zeros included)."""
    return np.array([uneven(n, seed * 31 + i, zero_every=3) for i in range(n)], dtype=np.uint64)


def a2av_body(comm, s, cases, vc: bool):
    n, r = comm.size, comm.rank
    out = []
    for i, (dt, seed) in enumerate(cases):
        m = matrix(n, seed)
        sc, rc = [int(v) for v in m[r]], [int(v) for v in m[:, r]]
        if vc:
            sd, send_extent = [sum(sc[:p]) for p in range(n)], max(1, sum(sc))
            rd, recv_extent = [sum(rc[:q]) for q in range(n)], max(1, sum(rc))
        else:
            sd, send_extent = scattered(sc, seed)
            rd, recv_extent = scattered(rc, seed + 1)
        x = make_input(("a2av", seed), r, send_extent, dt, SUM)
        send, recv = to_device(x), to_device(sentinel(recv_extent, NP[dt]))
        if vc:
            ret = pyhcomm.HcclAlltoAllVC(send, m.tolist() if i % 2 else m, dt, recv, dt, comm.handle, s)
        else:
            ret = pyhcomm.HcclAlltoAllV(send, sc, sd, dt, recv, rc, rd, dt, comm.handle, s)
        assert ret == 0
        out.append((x, sd, rd, reader(recv, recv_extent, NP[dt])))
    return out


def check_a2av(res, cases, n, what):
    """Block ``q -> r`` of rank ``q``'s input at ``rank r``'s ``rdispls[q]``; nothing else written."""
    for i, (dt, seed) in enumerate(cases):
        m = matrix(n, seed)
        for r in range(n):
            _x, _sd, rd, got = res[r][i]
            want = sentinel(len(got), NP[dt]).copy()
            for q in range(n):
                x_q, sd_q = res[q][i][0], res[q][i][1]
                count = int(m[q][r])
                want[rd[q]:rd[q] + count] = x_q[sd_q[r]:sd_q[r] + count]
            assert_same(got, want, f"{what} rank {r} case {i}")


A2AV_CASES = [(D.HCCL_DATA_TYPE_FP32, 1), (D.HCCL_DATA_TYPE_UINT8, 2), (D.HCCL_DATA_TYPE_INT64, 3)]


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_alltoallv_moves_block_i_j_from_rank_i_to_rank_j(world):
    check_a2av(launch(world, a2av_body, A2AV_CASES, False), A2AV_CASES, world[1], "AlltoAllV")


@pytest.mark.parametrize("world", [(A2, 1), (A2, 4), (A2, 7), (A3, 3), (A350, 5)], ids=ids)
def test_alltoallvc_reads_the_counts_from_one_matrix(world):
    check_a2av(launch(world, a2av_body, A2AV_CASES, True), A2AV_CASES, world[1], "AlltoAllVC")


def test_alltoallv_larger_than_the_hccl_buffer(env):
    """HCCL_BUFFSIZE=1: 2 MB cut into 2 x 3 slots; 700 KB blocks take two loops, small ones one."""
    env("HCCL_BUFFSIZE", "1")
    n, big = 3, 180_000   # FP32: 720 KB

    def body(comm, s):
        r = comm.rank
        sc = [big if (r + p) % 2 else 5 for p in range(n)]
        rc = [big if (q + r) % 2 else 5 for q in range(n)]
        sd, rd = [sum(sc[:p]) for p in range(n)], [sum(rc[:q]) for q in range(n)]
        x = make_input("big-a2av", r, sum(sc), D.HCCL_DATA_TYPE_FP32, SUM)
        send, recv = to_device(x), to_device(sentinel(sum(rc), np.float32))
        assert pyhcomm.HcclAlltoAllV(send, sc, sd, D.HCCL_DATA_TYPE_FP32, recv, rc, rd, D.HCCL_DATA_TYPE_FP32,
                                     comm.handle, s) == 0
        return [x, sd, rd, reader(recv, sum(rc), np.float32)]

    res = launch((A2, n), body)
    for r in range(n):
        for q in range(n):
            count = big if (q + r) % 2 else 5
            x_q, sd_q = res[q][0], res[q][1]
            assert_same(res[r][3][res[r][2][q]:res[r][2][q] + count], x_q[sd_q[r]:sd_q[r] + count], f"{q}->{r}")
    assert len(pyhcomm.record.tasks(rank=0, kind="Write")) > 2


# -- BatchSendRecv -----------------------------------------------------------------------------------------
def batch_body(comm, s, rounds):
    """Ring: send to the right, receive from the left, ``rounds`` items of each per call, the
    receives listed first on odd ranks; plus one pair exchange (r, r ^ 1) when it exists."""
    n, r = comm.size, comm.rank
    right, left = (r + 1) % n, (r - 1) % n
    items, out = [], []
    for k in range(rounds):
        count = 3 + k
        x = make_input(("batch", k), r, count, D.HCCL_DATA_TYPE_FP16, SUM)
        send, recv = to_device(x), to_device(sentinel(count, np.float16))
        pair = [pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_SEND, send, count, D.HCCL_DATA_TYPE_FP16, right),
                pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_RECV, recv, count, D.HCCL_DATA_TYPE_FP16, left)]
        items += pair[::-1] if r % 2 else pair
        out.append(reader(recv, count, np.float16))
    if r ^ 1 < n:
        x = make_input("batch-pair", r, 4, D.HCCL_DATA_TYPE_INT32, SUM)
        send, recv = to_device(x), to_device(sentinel(4, np.int32))
        items.append(pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_SEND, send, 4, D.HCCL_DATA_TYPE_INT32, r ^ 1))
        items.append(pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_RECV, recv, 4, D.HCCL_DATA_TYPE_INT32, r ^ 1))
        out.append(reader(recv, 4, np.int32))
    assert pyhcomm.HcclBatchSendRecv(items, comm.handle, s) == 0
    return out


@pytest.mark.parametrize("world", [(A2, 2), (A2, 3), (A2, 8), (A2, 16), (A3, 4), (A350, 3)], ids=ids)
def test_batch_send_recv_ring_needs_no_call_order(world):
    n, rounds = world[1], 2
    res = launch(world, batch_body, rounds)
    for r in range(n):
        left = (r - 1) % n
        for k in range(rounds):
            assert_same(res[r][k], make_input(("batch", k), left, 3 + k, D.HCCL_DATA_TYPE_FP16, SUM), f"r{r} k{k}")
        if r ^ 1 < n:
            assert_same(res[r][rounds], make_input("batch-pair", r ^ 1, 4, D.HCCL_DATA_TYPE_INT32, SUM), f"pair {r}")


# -- argument checks: nothing is enqueued -------------------------------------------------------------------
def bad_args_body(comm, s):
    n, r, h = comm.size, comm.rank, comm.handle
    f32, i8 = D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_INT8
    a, b = to_device(np.zeros(4 * n, np.float32)), to_device(np.zeros(4 * n, np.float32))
    ones, disp = [1] * n, list(range(n))
    item = pyhcomm.HcclSendRecvItem
    before = len(pyhcomm.record.tasks(rank=r))
    codes = {
        "agv NULL recvCounts": pyhcomm.HcclAllGatherV(a, 1, b, None, disp, f32, h, s),
        "agv short recvCounts": pyhcomm.HcclAllGatherV(a, 1, b, ones[1:], disp, f32, h, s),
        "agv negative displ": pyhcomm.HcclAllGatherV(a, 1, b, ones, [-1] * n, f32, h, s),
        "agv sendCount != recvCounts[me]": pyhcomm.HcclAllGatherV(a, 2, b, ones, disp, f32, h, s),
        "agv in place": pyhcomm.HcclAllGatherV(a, 1, a, ones, disp, f32, h, s),
        "agv past the buffer": pyhcomm.HcclAllGatherV(a, 1, b, ones, [4 * n] * n, f32, h, s),
        "agv INT128": pyhcomm.HcclAllGatherV(a, 1, b, ones, disp, D.HCCL_DATA_TYPE_INT128, h, s),
        "rsv recvCount != sendCounts[me]": pyhcomm.HcclReduceScatterV(a, ones, disp, b, 2, f32, SUM, h, s),
        "rsv PROD (A2)": pyhcomm.HcclReduceScatterV(a, ones, disp, b, 1, f32, pyhcomm.HCCL_REDUCE_PROD, h, s),
        "rsv NULL sendBuf": pyhcomm.HcclReduceScatterV(0, ones, disp, b, 1, f32, SUM, h, s),
        "a2av types differ": pyhcomm.HcclAlltoAllV(a, ones, disp, f32, b, ones, disp, i8, h, s),
        "a2av self counts differ": pyhcomm.HcclAlltoAllV(a, ones, disp, f32, b, [2] * n, disp, f32, h, s),
        "a2av NULL sdispls": pyhcomm.HcclAlltoAllV(a, ones, None, f32, b, ones, disp, f32, h, s),
        "a2av NULL stream": pyhcomm.HcclAlltoAllV(a, ones, disp, f32, b, ones, disp, f32, h, 0),
        "a2avc short matrix": pyhcomm.HcclAlltoAllVC(a, [ones] * (n - 1), f32, b, f32, h, s),
        "a2avc NULL matrix": pyhcomm.HcclAlltoAllVC(a, None, f32, b, f32, h, s),
        "batch NULL": pyhcomm.HcclBatchSendRecv(None, h, s),
        "batch to self": pyhcomm.HcclBatchSendRecv([item(pyhcomm.HCCL_SEND, a, 1, f32, r)], h, s),
        "batch bad type": pyhcomm.HcclBatchSendRecv([item(7, a, 1, f32, 1 - r)], h, s),
        "batch NULL buf": pyhcomm.HcclBatchSendRecv([item(pyhcomm.HCCL_RECV, 0, 1, f32, 1 - r)], h, s),
        "batch rank n": pyhcomm.HcclBatchSendRecv([item(pyhcomm.HCCL_RECV, a, 1, f32, n)], h, s),
        "a2av nothing, NULL buffers": pyhcomm.HcclAlltoAllV(0, [0] * n, disp, f32, 0, [0] * n, disp, f32, h, s),
        "batch empty": pyhcomm.HcclBatchSendRecv([], h, s),
    }
    enqueued = len(pyhcomm.record.tasks(rank=r)) - before
    with pytest.raises(TypeError):
        pyhcomm.HcclAlltoAllV(a, 5, disp, f32, b, ones, disp, f32, h, s)
    with pytest.raises(TypeError):
        pyhcomm.HcclBatchSendRecv([(0, a, 1, f32, 1 - r)], h, s)
    return [codes, enqueued]


def test_bad_arrays_and_items_fail_before_anything_is_enqueued():
    ok = {"a2av nothing, NULL buffers", "batch empty"}
    ptr = {"agv NULL recvCounts", "a2av NULL sdispls", "a2av NULL stream", "a2avc NULL matrix", "batch NULL",
           "rsv NULL sendBuf", "batch NULL buf"}
    ns = {"agv INT128", "rsv PROD (A2)"}
    for codes, enqueued in launch((A2, 2), bad_args_body):
        assert enqueued == 0
        for what, code in codes.items():
            want = (R.HCCL_SUCCESS if what in ok else R.HCCL_E_PTR if what in ptr
                    else R.HCCL_E_NOT_SUPPORT if what in ns else R.HCCL_E_PARA)
            assert code == want, (what, code)


def test_atlas_350_moves_its_8_bit_float_types():
    cases = [(D.HCCL_DATA_TYPE_FP8E4M3, 5), (D.HCCL_DATA_TYPE_HIF8, 6), (D.HCCL_DATA_TYPE_FP8E8M0, 7)]
    check_a2av(launch((A350, 3), a2av_body, cases, False), cases, 3, "AlltoAllV FP8")
