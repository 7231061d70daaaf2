"""Reduce collectives built from HCOMM primitives: HcclReduceScatter (mesh, S5), HcclAllReduce
(ring ReduceScatter + ring AllGather) and the ring AllGather, against numpy oracles.

Oracle: the bytes must match exactly, so the oracle reduces in the order each algorithm documents,
one backend step at a time (``step``: integers wrap in their own type, FP32/FP64 in their own
width, FP16/BFP16 computed in FP32 and rounded once per step):

* mesh ReduceScatter, rank r: ``x[r]``, then ``op`` with ``x[t]`` for t = 0, 1, ... skipping r;
* ring AllReduce, slice c: ``x[c+1]``, then ``op`` with ``x[c+2]``, ..., ``x[c]`` (ranks mod N).

The Hccl* calls run the algorithm HCCL's selection chooses (collectives/selector.py: the mesh, its
one-shot form, hierarchies of levels, ...), each reducing in its own order: their float inputs
are exact in every order (small integers, products of +-1 and +-0.5), MAX and MIN any floats,
integers their whole range (wrapping), so the oracle's bytes are every algorithm's. The ring
AllReduce and the mesh ReduceScatter run by name keep random floats, where a different order
would show up (``test_order_matters_for_the_oracle``, ``test_the_ring_and_the_mesh_reduce_in_their_documented_order``).

Every rank body runs its calls back to back on one communicator and stream (the second and later
calls take the resource-reuse path), reads the results with ``acl.rt.memcpy`` D2H and returns
them; the checks run in the test thread.
"""
from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import allgather_ring, ring_peers, run, support

H2D = pyhcomm.ACL_MEMCPY_HOST_TO_DEVICE
D2H = pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST
TIMEOUT = 60.0

A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"

D = pyhcomm.HcclDataType
O = pyhcomm.HcclReduceOp
SUM, PROD, MAX, MIN = O.HCCL_REDUCE_SUM, O.HCCL_REDUCE_PROD, O.HCCL_REDUCE_MAX, O.HCCL_REDUCE_MIN
NP = {D.HCCL_DATA_TYPE_INT8: np.int8, D.HCCL_DATA_TYPE_INT16: np.int16, D.HCCL_DATA_TYPE_INT32: np.int32,
      D.HCCL_DATA_TYPE_FP16: np.float16, D.HCCL_DATA_TYPE_FP32: np.float32,
      D.HCCL_DATA_TYPE_BFP16: ml_dtypes.bfloat16, D.HCCL_DATA_TYPE_UINT8: np.uint8,
      D.HCCL_DATA_TYPE_UINT16: np.uint16, D.HCCL_DATA_TYPE_UINT32: np.uint32,
      D.HCCL_DATA_TYPE_INT64: np.int64, D.HCCL_DATA_TYPE_UINT64: np.uint64, D.HCCL_DATA_TYPE_FP64: np.float64,
      D.HCCL_DATA_TYPE_FP8E4M3: ml_dtypes.float8_e4m3fn, D.HCCL_DATA_TYPE_FP8E5M2: ml_dtypes.float8_e5m2,
      D.HCCL_DATA_TYPE_FP8E8M0: ml_dtypes.float8_e8m0fnu, D.HCCL_DATA_TYPE_HIF8: np.uint8}

#: HCCL's (dataType, op) pairs per product family (pyhcomm.collectives.support).
PAIRS = support.REDUCE_PAIRS


def dtypes_of(family: str) -> list:
    return sorted({d for d, _ in PAIRS[family]})


def ops_of(family: str, dt) -> list:
    return sorted(o for d, o in PAIRS[family] if d == dt)


def _name(dt) -> str:
    return D(dt).name.replace("HCCL_DATA_TYPE_", "")


# -- data and oracles ---------------------------------------------------------------------------------
def make_input(seed, rank: int, n: int, dt, op, exact: bool = True) -> np.ndarray:
    """Rank ``rank``'s ``n`` random elements for case ``seed`` (reproducible in the test thread).

    ``exact``: floats whose sums and products are exact in every order (small integers; products
    of +-1 and +-0.5), so the result does not depend on the order in which the algorithm the
    selector chose reduces; else any float (:func:`test_order_matters_for_the_oracle`, and the
    tests that run one algorithm by name against its documented order)."""
    rng = np.random.default_rng([zlib.crc32(repr(seed).encode()), rank])
    t = np.dtype(NP[dt])
    if t.kind in "iu":
        info = np.iinfo(t)
        return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=t)
    if exact and op == PROD:
        x = rng.choice([-1.0, -0.5, 0.5, 1.0], n)
    elif exact and op == SUM:
        x = rng.integers(-4, 4, n, endpoint=True).astype(np.float64)
    elif op == PROD:
        x = rng.uniform(0.8, 1.25, n) * rng.choice([-1.0, 1.0], n)
    else:
        x = rng.uniform(-2.0, 2.0, n)
    return x.astype(t)


_UFUNC = {SUM: np.add, PROD: np.multiply, MAX: np.maximum, MIN: np.minimum}


def step(acc: np.ndarray, x: np.ndarray, op) -> np.ndarray:
    """One reduce as the backend does it: ``op(acc, x)``; 16-bit floats via FP32, rounded once."""
    t = acc.dtype
    wide = np.float32 if t in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)) else t
    with np.errstate(all="ignore"):
        return _UFUNC[op](acc.astype(wide), x.astype(wide)).astype(t)


def mesh_reduce_scatter_oracle(xs, rank: int, count: int, op) -> np.ndarray:
    part = [x[rank * count:(rank + 1) * count] for x in xs]
    acc = part[rank].copy()
    for t in range(len(xs)):
        if t != rank:
            acc = step(acc, part[t], op)
    return acc


def slices(count: int, n: int):
    base, extra = divmod(count, n)
    counts = [base + (r < extra) for r in range(n)]
    return counts, [sum(counts[:r]) for r in range(n)]


def ring_all_reduce_oracle(xs, op) -> np.ndarray:
    n = len(xs)
    out = xs[0].copy()
    counts, displs = slices(len(out), n)
    for c in range(n):
        seg = slice(displs[c], displs[c] + counts[c])
        acc = xs[(c + 1) % n][seg].copy()
        for j in range(2, n + 1):
            acc = step(acc, xs[(c + j) % n][seg], op)
        out[seg] = acc
    return out


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Byte-exact comparison with a readable first mismatch."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    size = got.dtype.itemsize
    differ = (got.view(np.uint8).reshape(len(got), size) != want.view(np.uint8).reshape(len(want), size)).any(axis=1)
    bad = np.flatnonzero(differ)
    assert bad.size == 0, (f"{what}: {bad.size} of {len(got)} elements differ; first at {bad[0]}: "
                           f"got {got[bad[0]]!r}, want {want[bad[0]]!r}")


# -- device helpers (acl facade) --------------------------------------------------------------------------
def to_device(arr: np.ndarray, extra: int = 0) -> int:
    """New device memory holding ``arr`` (plus ``extra`` bytes filled with 0xEE)."""
    size = max(1, arr.nbytes + extra)
    ptr, ret = acl.rt.malloc(size, 0)
    assert ret == 0 and ptr
    assert acl.rt.memset(ptr, size, 0xEE, size) == 0
    if arr.nbytes:
        host = np.ascontiguousarray(arr)
        assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(host), arr.nbytes, H2D) == 0
    return ptr


def from_device(ptr: int, n: int, dtype) -> np.ndarray:
    out = np.zeros(n, dtype=dtype)
    if out.nbytes:
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, D2H) == 0
    return out


def sentinel(n: int, dtype) -> np.ndarray:
    return np.full(n * np.dtype(dtype).itemsize, 0xEE, np.uint8).view(dtype)


# -- one collective on one rank ----------------------------------------------------------------------------
def all_reduce(comm, stream, seed, count, dt, op, in_place=False) -> np.ndarray:
    x = make_input(seed, comm.rank, count, dt, op)
    send = to_device(x)
    recv = send if in_place else to_device(sentinel(count, NP[dt]))
    ret = pyhcomm.HcclAllReduce(send, recv, count, dt, op, comm.handle, stream)
    assert ret == 0, (ret, seed)
    assert acl.rt.synchronize_stream(stream) == 0
    out = from_device(recv, count, NP[dt])
    for p in {send, recv}:
        assert acl.rt.free(p) == 0
    return out


def reduce_scatter(comm, stream, seed, count, dt, op, in_place=False) -> np.ndarray:
    n, r = comm.size, comm.rank
    x = make_input(seed, r, count * n, dt, op)
    send = to_device(x)
    size = np.dtype(NP[dt]).itemsize
    recv = send + r * count * size if in_place else to_device(sentinel(count, NP[dt]))
    ret = pyhcomm.HcclReduceScatter(send, recv, count, dt, op, comm.handle, stream)
    assert ret == 0, (ret, seed)
    assert acl.rt.synchronize_stream(stream) == 0
    out = from_device(recv, count, NP[dt])
    assert acl.rt.free(send) == 0
    if not in_place:
        assert acl.rt.free(recv) == 0
    return out


def gather_input(seed, rank: int, nbytes: int) -> np.ndarray:
    return make_input(seed, rank, nbytes, D.HCCL_DATA_TYPE_UINT8, SUM)


def all_gather_ring(comm, stream, seed, nbytes, in_place=False) -> np.ndarray:
    """The ring AllGather through collectives.run (HcclAllGather itself uses the mesh)."""
    n, r = comm.size, comm.rank
    x = gather_input(seed, r, nbytes)
    if in_place:
        whole = np.full(n * nbytes, 0xEE, np.uint8)
        whole[r * nbytes:(r + 1) * nbytes] = x
        recv = to_device(whole)
        send = recv + r * nbytes
    else:
        send, recv = to_device(x), to_device(sentinel(n * nbytes, np.uint8))
    run(comm.handle, stream, 0, allgather_ring, send, recv, nbytes, tag="test_allgather_ring",
        peers=ring_peers(r, n))
    assert acl.rt.synchronize_stream(stream) == 0
    out = from_device(recv, n * nbytes, np.uint8)
    for p in {send, recv} if not in_place else {recv}:
        assert acl.rt.free(p) == 0
    return out


def launch(body, n: int, product: str):
    def wrapped(comm):
        stream, ret = acl.rt.create_stream()
        assert ret == 0
        try:
            return body(comm, stream)
        finally:
            assert acl.rt.destroy_stream(stream) == 0
    return pyhcomm.launch(wrapped, n, product=product, timeout=TIMEOUT, sim=pyhcomm.current_sim())


# -- checks ------------------------------------------------------------------------------------------------
def check_all_reduce(product, n, cases, in_place=False):
    """``cases``: list of (count, dt, op), run in this order on one communicator per rank."""
    def body(comm, stream):
        return [all_reduce(comm, stream, (product, n, i), c, dt, op, in_place) for i, (c, dt, op) in enumerate(cases)]
    res = launch(body, n, product)
    for i, (count, dt, op) in enumerate(cases):
        xs = [make_input((product, n, i), r, count, dt, op) for r in range(n)]
        want = ring_all_reduce_oracle(xs, op)
        for r in range(n):
            assert_same(res[r][i], want, f"AllReduce {product} n={n} rank {r} count={count} "
                                         f"{_name(dt)} {O(op).name}")


def check_reduce_scatter(product, n, cases, in_place=False):
    def body(comm, stream):
        return [reduce_scatter(comm, stream, (product, n, i), c, dt, op, in_place)
                for i, (c, dt, op) in enumerate(cases)]
    res = launch(body, n, product)
    for i, (count, dt, op) in enumerate(cases):
        xs = [make_input((product, n, i), r, count * n, dt, op) for r in range(n)]
        for r in range(n):
            assert_same(res[r][i], mesh_reduce_scatter_oracle(xs, r, count, op),
                        f"ReduceScatter {product} n={n} rank {r} recvCount={count} {_name(dt)} {O(op).name}")


def ar_counts(n):
    """0, fewer than n, not divisible by n, and a few more."""
    return sorted({0, 1, max(0, n - 1), n + 1, 2 * n + 3, 37})


# -- HcclAllReduce ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", dtypes_of("A2"), ids=_name)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_all_reduce_a2_every_dtype_and_op(n, dt):
    """Every pair HCCL lists for Atlas A2: the SDMA ones through HcommLocalReduceOnThread, INT64
    and PROD through HCCL's own reduce (hcomm.reduce.hccl_reduce)."""
    check_all_reduce(A2, n, [(c, dt, op) for op in ops_of("A2", dt) for c in ar_counts(n)])


@pytest.mark.parametrize("n, cases", [
    (8, [(19, D.HCCL_DATA_TYPE_FP16, SUM), (5, D.HCCL_DATA_TYPE_INT8, SUM), (8, D.HCCL_DATA_TYPE_BFP16, MAX)]),
    (16, [(35, D.HCCL_DATA_TYPE_FP16, SUM), (7, D.HCCL_DATA_TYPE_INT32, MIN), (5, D.HCCL_DATA_TYPE_INT64, PROD)]),
])
def test_all_reduce_a2_many_ranks(n, cases):
    check_all_reduce(A2, n, cases)


@pytest.mark.parametrize("dt", dtypes_of("A3"), ids=_name)
def test_all_reduce_a3(dt):
    check_all_reduce(A3, 3, [(c, dt, op) for op in ops_of("A3", dt) for c in (2, 10)])


@pytest.mark.parametrize("dt", dtypes_of("950"), ids=_name)
def test_all_reduce_350_every_dtype_and_op(dt):
    check_all_reduce(A350, 3, [(c, dt, op) for op in ops_of("950", dt) for c in (2, 10)])


@pytest.mark.parametrize("product, n", [(A3, 8), (A350, 8), (A350, 16)])
def test_all_reduce_device_many_ranks(product, n):
    check_all_reduce(product, n, [(n + 3, D.HCCL_DATA_TYPE_BFP16, SUM), (3, D.HCCL_DATA_TYPE_INT16, MAX)])


@pytest.mark.parametrize("product, n", [(A2, 3), (A2, 4), (A3, 2), (A350, 4)])
def test_all_reduce_in_place(product, n):
    check_all_reduce(product, n, [(2 * n + 1, D.HCCL_DATA_TYPE_FP16, SUM), (n - 1, D.HCCL_DATA_TYPE_INT32, MIN)],
                     in_place=True)


# -- HcclReduceScatter -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", dtypes_of("A2"), ids=_name)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_reduce_scatter_a2_every_dtype_and_op(n, dt):
    check_reduce_scatter(A2, n, [(c, dt, op) for op in ops_of("A2", dt) for c in (0, 1, 5)])


@pytest.mark.parametrize("n, cases", [
    (8, [(3, D.HCCL_DATA_TYPE_FP16, SUM), (2, D.HCCL_DATA_TYPE_INT8, MIN), (5, D.HCCL_DATA_TYPE_FP32, SUM)]),
    (16, [(3, D.HCCL_DATA_TYPE_BFP16, SUM), (1, D.HCCL_DATA_TYPE_INT16, MAX), (2, D.HCCL_DATA_TYPE_FP32, PROD)]),
])
def test_reduce_scatter_a2_many_ranks(n, cases):
    check_reduce_scatter(A2, n, cases)


@pytest.mark.parametrize("dt", dtypes_of("A3"), ids=_name)
def test_reduce_scatter_a3(dt):
    check_reduce_scatter(A3, 3, [(c, dt, op) for op in ops_of("A3", dt) for c in (1, 4)])


@pytest.mark.parametrize("dt", dtypes_of("950"), ids=_name)
def test_reduce_scatter_350_every_dtype_and_op(dt):
    check_reduce_scatter(A350, 3, [(c, dt, op) for op in ops_of("950", dt) for c in (1, 4)])


@pytest.mark.parametrize("product, n, small", [(A3, 8, D.HCCL_DATA_TYPE_INT8), (A350, 8, D.HCCL_DATA_TYPE_INT8),
                                               (A350, 16, D.HCCL_DATA_TYPE_INT64)])
def test_reduce_scatter_device_many_ranks(product, n, small):
    check_reduce_scatter(product, n, [(3, D.HCCL_DATA_TYPE_FP16, SUM), (2, small, MAX)])


@pytest.mark.parametrize("product, n", [(A2, 3), (A3, 4), (A350, 2)])
def test_reduce_scatter_in_place(product, n):
    """``recvBuf = sendBuf + rank * recvCount``: the rank's own slice is reduced where it lies."""
    check_reduce_scatter(product, n, [(5, D.HCCL_DATA_TYPE_FP16, SUM), (3, D.HCCL_DATA_TYPE_INT8, MAX)],
                         in_place=True)


# -- ring AllGather -----------------------------------------------------------------------------------------
def check_all_gather_ring(product, n, sizes, in_place=False):
    def body(comm, stream):
        return [all_gather_ring(comm, stream, (product, n, i), nb, in_place) for i, nb in enumerate(sizes)]
    res = launch(body, n, product)
    for i, nbytes in enumerate(sizes):
        want = np.concatenate([gather_input((product, n, i), r, nbytes) for r in range(n)])
        for r in range(n):
            assert_same(res[r][i], want, f"AllGather ring {product} n={n} rank {r} {nbytes} bytes")


@pytest.mark.parametrize("product, n", [(A2, 1), (A2, 2), (A2, 3), (A2, 4), (A2, 8), (A2, 16),
                                        (A3, 3), (A350, 2), (A350, 5)])
def test_all_gather_ring(product, n):
    check_all_gather_ring(product, n, [0, 1, 7, 100])


@pytest.mark.parametrize("product", [A2, A350])
def test_all_gather_ring_in_place(product):
    check_all_gather_ring(product, 3, [1, 33], in_place=True)


# -- calls in a row, mixed, on one communicator --------------------------------------------------------------
@pytest.mark.parametrize("product, n", [(A2, 4), (A3, 3), (A350, 3)])
def test_mixed_calls_in_a_row_reuse_resources(product, n):
    """AllReduce, ReduceScatter, ring and mesh AllGather, twice over, on one communicator."""
    fp16, i32 = D.HCCL_DATA_TYPE_FP16, D.HCCL_DATA_TYPE_INT32

    def body(comm, stream):
        out = []
        for rnd in range(2):
            out.append(all_reduce(comm, stream, ("mix-ar", rnd), 11, fp16, SUM))
            out.append(reduce_scatter(comm, stream, ("mix-rs", rnd), 3, i32, MAX))
            out.append(all_gather_ring(comm, stream, ("mix-ag", rnd), 9))
            x = gather_input(("mix-mesh", rnd), comm.rank, 6)
            send, recv = to_device(x), to_device(sentinel(6 * n, np.uint8))
            assert pyhcomm.HcclAllGather(send, recv, 6, D.HCCL_DATA_TYPE_UINT8, comm.handle, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            out.append(from_device(recv, 6 * n, np.uint8))
        return out

    res = launch(body, n, product)
    for rnd in range(2):
        ar = ring_all_reduce_oracle([make_input(("mix-ar", rnd), r, 11, fp16, SUM) for r in range(n)], SUM)
        rs_in = [make_input(("mix-rs", rnd), r, 3 * n, i32, MAX) for r in range(n)]
        ag = np.concatenate([gather_input(("mix-ag", rnd), r, 9) for r in range(n)])
        mesh = np.concatenate([gather_input(("mix-mesh", rnd), r, 6) for r in range(n)])
        for r in range(n):
            got = res[r][4 * rnd:4 * rnd + 4]
            assert_same(got[0], ar, f"round {rnd} AllReduce rank {r}")
            assert_same(got[1], mesh_reduce_scatter_oracle(rs_in, r, 3, MAX), f"round {rnd} ReduceScatter rank {r}")
            assert_same(got[2], ag, f"round {rnd} AllGather ring rank {r}")
            assert_same(got[3], mesh, f"round {rnd} AllGather mesh rank {r}")


def test_order_matters_for_the_oracle():
    """The oracles follow the algorithms' reduction order: for FP16 sums of any floats another
    order differs (with the exact inputs of the Hccl* tests it does not)."""
    xs = [make_input("order", r, 64, D.HCCL_DATA_TYPE_FP16, SUM, exact=False) for r in range(8)]
    ring = ring_all_reduce_oracle(xs, SUM)
    in_rank_order = xs[0]
    for x in xs[1:]:
        in_rank_order = step(in_rank_order, x, SUM)
    assert not np.array_equal(ring, in_rank_order)
    exact = [make_input("order", r, 64, D.HCCL_DATA_TYPE_FP16, SUM) for r in range(8)]
    in_rank_order = exact[0]
    for x in exact[1:]:
        in_rank_order = step(in_rank_order, x, SUM)
    assert np.array_equal(ring_all_reduce_oracle(exact, SUM), in_rank_order)


@pytest.mark.parametrize("product", [A2, A3])
@pytest.mark.parametrize("dt", [D.HCCL_DATA_TYPE_FP16, D.HCCL_DATA_TYPE_BFP16, D.HCCL_DATA_TYPE_FP32], ids=_name)
def test_the_ring_and_the_mesh_reduce_in_their_documented_order(product, dt):
    """The ring AllReduce and the mesh ReduceScatter, run by name on random floats: the bytes of
    the oracles' orders (a slice's ring order; the mesh's own input first, then rank order)."""
    from pyhcomm.collectives import dispatch
    n, count = 5, 23
    size = np.dtype(NP[dt]).itemsize

    def body(comm, stream):
        r, h = comm.rank, comm.handle
        x = make_input(("order", dt), r, count, dt, SUM, exact=False)
        y = make_input(("order-rs", dt), r, count * n, dt, SUM, exact=False)
        sx, rx = to_device(x), to_device(sentinel(count, NP[dt]))
        sy, ry = to_device(y), to_device(sentinel(count, NP[dt]))
        dispatch.run_algorithm("ar", h, stream, "ring", dispatch.describe(h, pyhcomm.HCCL_CMD_ALLREDUCE, count * size),
                               (sx, rx, count, dt, SUM))
        dispatch.run_algorithm("rs", h, stream, "mesh",
                               dispatch.describe(h, pyhcomm.HCCL_CMD_REDUCE_SCATTER, count * size),
                               (sy, ry, count, dt, SUM))
        assert acl.rt.synchronize_stream(stream) == 0
        return from_device(rx, count, NP[dt]), from_device(ry, count, NP[dt])

    res = launch(body, n, product)
    xs = [make_input(("order", dt), r, count, dt, SUM, exact=False) for r in range(n)]
    ys = [make_input(("order-rs", dt), r, count * n, dt, SUM, exact=False) for r in range(n)]
    for r in range(n):
        assert_same(res[r][0], ring_all_reduce_oracle(xs, SUM), f"ring AllReduce rank {r}")
        assert_same(res[r][1], mesh_reduce_scatter_oracle(ys, r, count, SUM), f"mesh ReduceScatter rank {r}")


# -- larger than the HCCL buffer (HCCL_BUFFSIZE=1: 2 MB) -------------------------------------------------------
def writes_of_rank0() -> int:
    return len(pyhcomm.record.tasks(rank=0, kind="Write"))


@pytest.mark.parametrize("product, n, count, dt", [
    (A2, 2, 786433, D.HCCL_DATA_TYPE_FP32),     # 3 MB + 4 B; slices of 1.5 MB in 1 MB slots
    (A2, 3, 1572869, D.HCCL_DATA_TYPE_BFP16),   # 3 MB + 10 B, uneven slices
    (A350, 2, 786433, D.HCCL_DATA_TYPE_FP32),
])
def test_all_reduce_larger_than_hccl_buffer(monkeypatch, env, product, n, count, dt):
    env("HCCL_BUFFSIZE", "1")
    check_all_reduce(product, n, [(count, dt, SUM)])
    assert writes_of_rank0() > 2 * (n - 1)  # more than one loop in each phase


@pytest.mark.parametrize("product, n, count", [(A2, 4, 200003), (A3, 2, 393217)])
def test_reduce_scatter_larger_than_hccl_buffer(monkeypatch, env, product, n, count):
    """Inputs of about 3.2 MB: slices larger than the 2 MB / (2 N) slots."""
    env("HCCL_BUFFSIZE", "1")
    check_reduce_scatter(product, n, [(count, D.HCCL_DATA_TYPE_FP32, SUM)])
    assert writes_of_rank0() > n - 1


def test_all_gather_ring_larger_than_hccl_buffer(monkeypatch, env):
    env("HCCL_BUFFSIZE", "1")
    check_all_gather_ring(A2, 3, [3 * 2**20 + 5])
    assert writes_of_rank0() > 2


# -- argument checks: nothing is enqueued ------------------------------------------------------------------------
NS = "HCCL_E_NOT_SUPPORT"
UNSUPPORTED = {   # HCCL's CheckDataType / CheckReduceOp answer HCCL_E_NOT_SUPPORT
    A2: [(D.HCCL_DATA_TYPE_FP64, SUM, NS), (D.HCCL_DATA_TYPE_INT16, PROD, NS), (D.HCCL_DATA_TYPE_UINT8, SUM, NS),
         (D.HCCL_DATA_TYPE_BFP16, PROD, NS), (D.HCCL_DATA_TYPE_FP32, 255, NS), (13, SUM, NS)],
    A3: [(D.HCCL_DATA_TYPE_FP64, SUM, NS), (D.HCCL_DATA_TYPE_BFP16, PROD, NS), (D.HCCL_DATA_TYPE_UINT32, MIN, NS)],
    A350: [(D.HCCL_DATA_TYPE_FP8E4M3, SUM, NS), (D.HCCL_DATA_TYPE_HIF8, MAX, NS), (D.HCCL_DATA_TYPE_INT128, SUM, NS),
           (D.HCCL_DATA_TYPE_UINT8, SUM, NS), (D.HCCL_DATA_TYPE_FP32, 4, NS), (13, SUM, NS)],
}


@pytest.mark.parametrize("product", [A2, A3, A350])
def test_unsupported_dtype_or_op_fails_before_enqueuing(product):
    cases = UNSUPPORTED[product]

    def body(comm, stream):
        send = to_device(np.zeros(0, np.uint8), extra=256 * comm.size)
        recv = to_device(np.zeros(0, np.uint8), extra=256 * comm.size)
        codes = []
        for dt, op, _ in cases:
            codes.append(pyhcomm.HcclAllReduce(send, recv, 4, dt, op, comm.handle, stream))
            codes.append(pyhcomm.HcclReduceScatter(send, recv, 4, dt, op, comm.handle, stream))
        assert acl.rt.synchronize_stream(stream) == 0
        return codes, from_device(recv, 256 * comm.size, np.uint8)

    res = launch(body, 2, product)
    want = [getattr(pyhcomm.HcclResult, code) for _, _, code in cases for _call in range(2)]
    for codes, recv in res:
        assert codes == want
        assert (recv == 0xEE).all()
    assert pyhcomm.record.tasks() == []


def test_pointer_and_size_checks():
    fp32 = D.HCCL_DATA_TYPE_FP32

    def body(comm, stream):
        buf = to_device(np.zeros(8, np.float32))
        h = comm.handle
        return [
            pyhcomm.HcclAllReduce(0, buf, 8, fp32, SUM, h, stream),              # NULL sendBuf
            pyhcomm.HcclAllReduce(buf, buf, 8, fp32, SUM, h, 0),                 # NULL stream
            pyhcomm.HcclAllReduce(buf, buf, 9, fp32, SUM, h, stream),            # past the allocation
            pyhcomm.HcclAllReduce(buf, buf, -1, fp32, SUM, h, stream),           # negative count
            pyhcomm.HcclReduceScatter(buf, buf, 5, fp32, SUM, h, stream),        # sendBuf needs 2 x 5
            pyhcomm.HcclReduceScatter(buf, 0, 4, fp32, SUM, h, stream),          # NULL recvBuf
            pyhcomm.HcclAllReduce(buf, buf, 0, fp32, SUM, h, stream),            # count 0: success
            pyhcomm.HcclReduceScatter(buf, buf, 0, fp32, SUM, h, stream),        # count 0: success
        ]

    R = pyhcomm.HcclResult
    want = [R.HCCL_E_PTR, R.HCCL_E_PTR, R.HCCL_E_PARA, R.HCCL_E_PARA, R.HCCL_E_PARA, R.HCCL_E_PTR,
            R.HCCL_SUCCESS, R.HCCL_SUCCESS]
    assert launch(body, 2, A2) == [want, want]
    assert pyhcomm.record.tasks() == []


# -- HcclReduce ----------------------------------------------------------------------------------------------
def root_reduce_oracle(xs, root: int, op) -> np.ndarray:
    """The root's input, then ``op`` with every other rank's, ascending (reduce.reduce_to_root)."""
    acc = xs[root].copy()
    for p in range(len(xs)):
        if p != root:
            acc = step(acc, xs[p], op)
    return acc


def check_reduce(product, n, cases, in_place=False):
    """``cases``: (count, dt, op, root); the non-root ranks pass recvBuf NULL on odd cases."""
    def body(comm, stream):
        out = []
        for i, (count, dt, op, root) in enumerate(cases):
            x = make_input((product, n, "reduce", i), comm.rank, count, dt, op)
            send = to_device(x)
            mine = comm.rank == root
            recv = send if in_place and mine else 0 if (i % 2 and not mine) else to_device(sentinel(count, NP[dt]))
            assert pyhcomm.HcclReduce(send, recv, count, dt, op, root, comm.handle, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            out.append((from_device(recv, count, NP[dt]) if recv else None, from_device(send, count, NP[dt])))
        return out
    res = launch(body, n, product)
    for i, (count, dt, op, root) in enumerate(cases):
        xs = [make_input((product, n, "reduce", i), r, count, dt, op) for r in range(n)]
        for r in range(n):
            got, send = res[r][i]
            if r == root:
                assert_same(got, root_reduce_oracle(xs, root, op), f"Reduce {product} n={n} root {root} case {i}")
            else:
                assert got is None or (got.view(np.uint8) == 0xEE).all(), f"rank {r} recvBuf was written"
                assert_same(send, xs[r], f"rank {r} sendBuf changed")


@pytest.mark.parametrize("dt", dtypes_of("A2"), ids=_name)
def test_reduce_a2_every_dtype_and_op_every_root(dt):
    n = 3
    check_reduce(A2, n, [(c, dt, op, (k + c) % n) for k, op in enumerate(ops_of("A2", dt)) for c in (1, 6)])


@pytest.mark.parametrize("product, family, n", [(A3, "A3", 3), (A350, "950", 2)])
def test_reduce_device_every_dtype_and_op(product, family, n):
    check_reduce(product, n, [(5, dt, op, k % n) for k, (dt, op) in enumerate(sorted(PAIRS[family]))])


@pytest.mark.parametrize("product, n", [(A2, 1), (A2, 8), (A2, 16), (A350, 16)])
def test_reduce_many_ranks_and_one(product, n):
    check_reduce(product, n, [(7, D.HCCL_DATA_TYPE_FP16, SUM, n - 1), (3, D.HCCL_DATA_TYPE_INT32, MAX, 0)])


def test_reduce_in_place_on_the_root_and_larger_than_the_hccl_buffer(env):
    env("HCCL_BUFFSIZE", "1")   # 2 MB in 3 slots: 680 KB per loop
    check_reduce(A2, 3, [(300_001, D.HCCL_DATA_TYPE_FP32, SUM, 1), (5, D.HCCL_DATA_TYPE_INT8, MIN, 2)], in_place=True)
    assert len(pyhcomm.record.tasks(rank=0, kind="Write")) >= 2
