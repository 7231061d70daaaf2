"""Broadcast, Scatter, AlltoAll and Send/Recv move the right bytes (checked against numpy oracles).

Every rank runs in :func:`pyhcomm.launch`: Atlas 800T A2 orchestrates on the host (CPU_TS
threads on the user's stream), Atlas A3 and Atlas 350 in an AI CPU kernel (batch mode, AICPU_TS).
These collectives move bytes, so any data type works through its element size: the data are
random bytes, the oracles numpy slicing. Each launch issues several calls back to back on one
stream of one communicator (every root for small worlds, several data types and counts) and
synchronises once, so a call reuses the HCCL buffer while its predecessor's handshakes are still
in the queue. ``HCCL_BUFFSIZE=1`` makes the HCCL buffer 2 MB, so ~3 MB inputs take several loops.
"""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import support
from pyhcomm.topology import server_of
from hcomm_testutil import malloc, read, write

pytestmark = pytest.mark.timeout(120)

R = pyhcomm.HcclResult
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
T = pyhcomm
#: Every data type HCCL moves on Atlas A2/A3 (pyhcomm.collectives.support), mixed sizes in turn.
DTYPES = [T.HCCL_DATA_TYPE_INT8, T.HCCL_DATA_TYPE_BFP16, T.HCCL_DATA_TYPE_FP32, T.HCCL_DATA_TYPE_UINT16,
          T.HCCL_DATA_TYPE_INT64, T.HCCL_DATA_TYPE_FP16, T.HCCL_DATA_TYPE_FP64, T.HCCL_DATA_TYPE_UINT8,
          T.HCCL_DATA_TYPE_INT16, T.HCCL_DATA_TYPE_UINT32, T.HCCL_DATA_TYPE_INT32, T.HCCL_DATA_TYPE_UINT64]
SIZE = pyhcomm.enums.DATA_TYPE_SIZE
COUNTS = [1, 13, 1001]
RANKS = [1, 2, 3, 4, 8, 16]
WORLDS = [(A2, n) for n in RANKS] + [(A3, 2), (A3, 3), (A350, 1), (A350, 4), (A350, 8)]
MB = 1 << 20


def ids(world):
    product, n = world
    return f"{product.split()[-1]}-{n}"


def data(seed: int, nbytes: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def stream() -> int:
    s, ret = acl.rt.create_stream()
    assert ret == 0
    return s


def sync(s: int) -> None:
    """Synchronise ``s``; raise with the runtime's message (the hang report) on failure."""
    ret = acl.rt.synchronize_stream(s)
    if ret != 0:
        raise RuntimeError(f"synchronize_stream returned {ret}: {acl.get_recent_err_msg()}")


def device_buffer(content: np.ndarray) -> int:
    buf = malloc(max(1, content.nbytes))
    if content.nbytes:
        write(buf, content)
    return buf


def launch(world, body, *args):
    product, n = world
    return pyhcomm.launch(body, n, *args, product=product, timeout=60, sim=pyhcomm.current_sim())


def rooted_cases(n: int):
    """(root, data type, count): every root in small worlds, two calls each; a few in big ones."""
    roots = list(range(n)) if n <= 4 else [0, n // 2, n - 1]
    return [(roots[i // 2], DTYPES[i % len(DTYPES)], COUNTS[i % len(COUNTS)]) for i in range(2 * len(roots))]


# -- Broadcast -------------------------------------------------------------------------------------------
def broadcast_body(comm, cases):
    s, r = stream(), comm.rank
    bufs = []
    for i, (root, dt, count) in enumerate(cases):
        buf = device_buffer(data(100 * i + r, count * SIZE[dt]))
        assert pyhcomm.HcclBroadcast(buf, count, dt, root, comm.handle, s) == 0
        bufs.append((buf, count * SIZE[dt]))
    sync(s)
    return [read(buf, nbytes) for buf, nbytes in bufs]


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_broadcast_copies_the_root_buffer_to_every_rank(world):
    n = world[1]
    cases = rooted_cases(n)
    out = launch(world, broadcast_body, cases)
    for i, (root, dt, count) in enumerate(cases):
        expect = data(100 * i + root, count * SIZE[dt])
        for r in range(n):
            np.testing.assert_array_equal(out[r][i], expect, err_msg=f"call {i} root {root} rank {r}")


# -- Scatter ---------------------------------------------------------------------------------------------
def scatter_body(comm, cases, algorithm=None):
    """HcclScatter of every case (or, given ``algorithm``, that algorithm of the catalogue by name)."""
    from pyhcomm.collectives import dispatch
    s, r, n = stream(), comm.rank, comm.size
    outs = []
    for i, (root, dt, count) in enumerate(cases):
        nbytes = count * SIZE[dt]
        if r == root or i % 2:  # a non-root rank may pass sendBuf NULL (HcclScatter's contract)
            send = device_buffer(data(100 * i + r, n * nbytes))
        else:
            send = 0
        recv = device_buffer(np.full(nbytes, 0xEE, np.uint8))
        if algorithm is None:
            assert pyhcomm.HcclScatter(send, recv, count, dt, root, comm.handle, s) == 0
        else:
            h = comm.handle
            dispatch.run_algorithm("HcclScatter", h, s, algorithm,
                                   dispatch.describe(h, pyhcomm.HCCL_CMD_SCATTER, nbytes, root=root),
                                   (send, recv, nbytes, root))
        outs.append((send, recv, nbytes))
    sync(s)
    return [(read(send, n * nbytes) if send else None, read(recv, nbytes)) for send, recv, nbytes in outs]


def check_scatter(out, cases, n):
    for i, (root, dt, count) in enumerate(cases):
        nbytes = count * SIZE[dt]
        whole = data(100 * i + root, n * nbytes)
        for r in range(n):
            send, recv = out[r][i]
            np.testing.assert_array_equal(recv, whole[r * nbytes:(r + 1) * nbytes], err_msg=f"call {i} rank {r}")
            if send is not None:  # the input is not touched
                np.testing.assert_array_equal(send, data(100 * i + r, n * nbytes))


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_scatter_ring_gives_rank_r_slice_r_of_the_root_input(world):
    n = world[1]
    cases = rooted_cases(n)
    check_scatter(launch(world, scatter_body, cases), cases, n)


def test_scatter_ring_pushes_over_roce_and_pulls_over_hccs(monkeypatch, env):
    """The ring scatter (hcomm-api S4) by name on two NPUs a server: links 0-1 and 2-3 are HCCS
    (the receiver reads), 1-2 and 3-0 RoCE (the sender writes); every root, so every link carries
    slices both ways round the ring."""
    env("PYHCOMM_DEVICES_PER_SERVER", "2")
    cases = [(root, DTYPES[root], 7 + root) for root in range(4)]
    check_scatter(launch((A2, 4), scatter_body, cases, "ring"), cases, 4)
    writes, reads = pyhcomm.record.tasks(kind="Write"), pyhcomm.record.tasks(kind="Read")
    assert writes and reads
    assert all(server_of(w.rank) != server_of(w.detail[1]) for w in writes)   # RoCE: between servers
    assert all(server_of(x.rank) == server_of(x.detail[1]) for x in reads)    # HCCS: inside a server
    assert all(x.detail[1] == (x.rank - 1) % 4 for x in reads)                # pulled from the left
    assert all(w.detail[1] == (w.rank + 1) % 4 for w in writes)               # pushed to the right


# -- AllGather ---------------------------------------------------------------------------------------------
def allgather_cases(product: str):
    """Every data type the product moves (its MOVE_DTYPES, 8-bit floats on Atlas 350), in turn with
    the counts 0 (nothing moves), 1, 13, 1001."""
    family = pyhcomm.find_product(product).family
    return [(dt, [0, *COUNTS][i % 4]) for i, dt in enumerate(sorted(support.MOVE_DTYPES[family]))]


def allgather_body(comm, cases):
    s, r, n = stream(), comm.rank, comm.size
    outs = []
    for i, (dt, count) in enumerate(cases):
        nbytes = count * SIZE[dt]
        send = device_buffer(data(100 * i + r, nbytes))
        recv = device_buffer(np.full(n * nbytes, 0xEE, np.uint8))
        assert pyhcomm.HcclAllGather(send, recv, count, dt, comm.handle, s) == 0
        outs.append((recv, n * nbytes))
    sync(s)
    return [read(recv, size) if size else np.zeros(0, np.uint8) for recv, size in outs]


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_allgather_puts_rank_q_block_at_q_for_every_data_type(world):
    product, n = world
    cases = allgather_cases(product)
    out = launch(world, allgather_body, cases)
    for i, (dt, count) in enumerate(cases):
        expect = np.concatenate([data(100 * i + q, count * SIZE[dt]) for q in range(n)])
        for r in range(n):
            np.testing.assert_array_equal(out[r][i], expect, err_msg=f"call {i} {dt!r} rank {r}")


# -- AlltoAll --------------------------------------------------------------------------------------------
def alltoall_cases():
    """(send type, send count, recv type, recv count): HCCL wants the same type and count."""
    i64 = T.HCCL_DATA_TYPE_INT64
    return [(dt, c, dt, c) for dt, c in zip(DTYPES[:3], COUNTS)] + [(i64, 5, i64, 5)]


def alltoall_body(comm, cases):
    s, r, n = stream(), comm.rank, comm.size
    outs = []
    for i, (st, sc, rt, rc) in enumerate(cases):
        nbytes = sc * SIZE[st]
        send = device_buffer(data(100 * i + r, n * nbytes))
        recv = device_buffer(np.zeros(n * nbytes, np.uint8))
        assert pyhcomm.HcclAlltoAll(send, sc, st, recv, rc, rt, comm.handle, s) == 0
        outs.append((recv, n * nbytes))
    sync(s)
    return [read(recv, size) for recv, size in outs]


def check_alltoall(out, cases, n):
    for i, (st, sc, _rt, _rc) in enumerate(cases):
        nbytes = sc * SIZE[st]
        inputs = [data(100 * i + q, n * nbytes).reshape(n, nbytes) for q in range(n)]
        for r in range(n):
            expect = np.concatenate([inputs[q][r] for q in range(n)])  # slice r of every rank, in rank order
            np.testing.assert_array_equal(out[r][i], expect, err_msg=f"call {i} rank {r}")


@pytest.mark.parametrize("world", WORLDS, ids=ids)
def test_alltoall_sends_slice_j_to_rank_j(world):
    n = world[1]
    cases = alltoall_cases()
    check_alltoall(launch(world, alltoall_body, cases), cases, n)


# -- Send / Recv -----------------------------------------------------------------------------------------
def exchange_body(comm, cases):
    """Pairs (0,1), (2,3), ... swap data, then every rank sends to its right and receives from its
    left; even ranks send first, odd ranks receive first (a Send completes when its Recv read)."""
    s, r, n = stream(), comm.rank, comm.size
    outs = []

    def both(to, frm, i, dt, count):
        nbytes = count * SIZE[dt]
        send = device_buffer(data(1000 * i + 32 * r + to, nbytes))
        recv = device_buffer(np.zeros(nbytes, np.uint8))
        calls = [lambda: pyhcomm.HcclSend(send, count, dt, to, comm.handle, s),
                 lambda: pyhcomm.HcclRecv(recv, count, dt, frm, comm.handle, s)]
        for call in calls if r % 2 == 0 else calls[::-1]:
            assert call() == 0
        outs.append((i, frm, recv, nbytes))

    for i, (dt, count) in enumerate(cases):
        if r ^ 1 < n:
            both(r ^ 1, r ^ 1, i, dt, count)
        both((r + 1) % n, (r - 1) % n, i + len(cases), dt, count)
    sync(s)
    return [(i, frm, read(recv, nbytes)) for i, frm, recv, nbytes in outs]


SEND_WORLDS = [(A2, n) for n in RANKS[1:]] + [(A3, 2), (A350, 4)]


@pytest.mark.parametrize("world", SEND_WORLDS, ids=ids)
def test_send_recv_pairs_exchange_in_both_directions(world):
    n = world[1]
    cases = [(T.HCCL_DATA_TYPE_FP32, 13), (T.HCCL_DATA_TYPE_BFP16, 1001)]
    out = launch(world, exchange_body, cases)
    for r in range(n):
        assert len(out[r]) == len(cases) * (2 if r ^ 1 < n else 1)
        for i, frm, got in out[r]:
            dt, count = cases[i % len(cases)]
            np.testing.assert_array_equal(got, data(1000 * i + 32 * frm + r, count * SIZE[dt]),
                                          err_msg=f"call {i} rank {r} from {frm}")


def recv_recv_body(comm):
    s = stream()
    buf = device_buffer(np.zeros(64, np.uint8))
    assert pyhcomm.HcclRecv(buf, 16, T.HCCL_DATA_TYPE_FP32, 1 - comm.rank, comm.handle, s) == 0
    sync(s)


@pytest.mark.parametrize("product", [A2, A350])
def test_two_receivers_fail_with_the_hang_report_instead_of_hanging(product):
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(recv_recv_body, 2, product=product, timeout=60, sim=pyhcomm.current_sim())
    msg = str(info.value)
    assert "deadlock" in msg
    for r in (0, 1):  # each rank waits for its ACK (notify 0) on its channel to the other
        assert f"notify 0 of rank {r} channel" in msg and f"(to rank {1 - r})" in msg
    assert "ChannelNotifyWait" in msg and "nobody ever records it" in msg


def send_twice_recv_once_body(comm):
    s = stream()
    buf = device_buffer(np.zeros(64, np.uint8))
    for _ in range(2 if comm.rank == 0 else 1):
        call = pyhcomm.HcclSend if comm.rank == 0 else pyhcomm.HcclRecv
        assert call(buf, 16, T.HCCL_DATA_TYPE_FP32, 1 - comm.rank, comm.handle, s) == 0
    sync(s)


def test_a_send_nobody_receives_fails_with_the_hang_report_although_the_peer_returned():
    """Rank 1 returns after one Recv; rank 0's second Send waits for DATA forever."""
    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(send_twice_recv_once_body, 2, product=A2, timeout=60, sim=pyhcomm.current_sim())
    msg = str(info.value)
    assert info.value.rank == 0 and "deadlock" in msg
    assert "notify 1 of rank 0 channel" in msg and "(to rank 1)" in msg   # DATA = 1: "I have read it"


# -- larger than the HCCL buffer ---------------------------------------------------------------------------
def large_body(comm):
    """~3 MB through a 2 MB HCCL buffer: every collective loops; all on one stream."""
    s, r, n = stream(), comm.rank, comm.size
    ret, _addr, size = pyhcomm.HcclGetHcclBuffer(comm.handle)
    assert ret == 0 and size == 2 * MB
    big = 3 * MB + 5
    bc = device_buffer(data(1 + r, big))
    assert pyhcomm.HcclBroadcast(bc, big, T.HCCL_DATA_TYPE_UINT8, n - 1, comm.handle, s) == 0
    per = (3 * MB) // n // 4 + 3  # float32 elements per rank: root input ~3 MB
    sc_send = device_buffer(data(2 + r, n * per * 4))
    sc_recv = device_buffer(np.zeros(per * 4, np.uint8))
    assert pyhcomm.HcclScatter(sc_send, sc_recv, per, T.HCCL_DATA_TYPE_FP32, 0, comm.handle, s) == 0
    a_send = device_buffer(data(3 + r, n * per * 4))
    a_recv = device_buffer(np.zeros(n * per * 4, np.uint8))
    assert pyhcomm.HcclAlltoAll(a_send, per, T.HCCL_DATA_TYPE_FP32, a_recv, per, T.HCCL_DATA_TYPE_FP32,
                                comm.handle, s) == 0
    p_send, p_recv = device_buffer(data(4 + r, big)), device_buffer(np.zeros(big, np.uint8))
    if r < 2 and n > 1:
        calls = [lambda: pyhcomm.HcclSend(p_send, big, T.HCCL_DATA_TYPE_UINT8, 1 - r, comm.handle, s),
                 lambda: pyhcomm.HcclRecv(p_recv, big, T.HCCL_DATA_TYPE_UINT8, 1 - r, comm.handle, s)]
        for call in calls if r == 0 else calls[::-1]:
            assert call() == 0
    sync(s)
    return read(bc, big), read(sc_recv, per * 4), read(a_recv, n * per * 4), read(p_recv, big)


@pytest.mark.parametrize("world", [(A2, 4), (A350, 3)], ids=ids)
def test_inputs_larger_than_the_hccl_buffer_loop(world, monkeypatch, env):
    env("HCCL_BUFFSIZE", "1")              # 2 x 1 MB
    env("PYHCOMM_DEVICES_PER_SERVER", "2")  # A2: RoCE and HCCS links in the ring
    n = world[1]
    out = launch(world, large_body)
    big, per = 3 * MB + 5, (3 * MB) // n // 4 + 3
    scatter_in = data(2, n * per * 4)
    a_in = [data(3 + q, n * per * 4).reshape(n, per * 4) for q in range(n)]
    for r in range(n):
        bc, sc, a2a, p2p = out[r]
        np.testing.assert_array_equal(bc, data(1 + n - 1, big))
        np.testing.assert_array_equal(sc, scatter_in[r * per * 4:(r + 1) * per * 4])
        np.testing.assert_array_equal(a2a, np.concatenate([a_in[q][r] for q in range(n)]))
        if r < 2:
            np.testing.assert_array_equal(p2p, data(4 + (1 - r), big))
    # the loops: no transfer is larger than the 2 MB buffer, and every non-root rank received the
    # broadcast's bytes (HCCL's selection: the mesh, or levels of mesh and H-D_R / NHR: Writes)
    from pyhcomm.sim.task import site_text
    writes = pyhcomm.record.tasks(kind="Write")
    assert writes and max(t.writes[0][1] for t in writes) <= 2 * MB
    bcast_site = next(e.site for e in pyhcomm.record.events() if e.kind == "Collective" and e.name == "HcclBroadcast")
    for r in range(n - 1):
        got = sum(t.writes[0][1] for t in writes if t.detail[1] == r and site_text(t.site) == bcast_site)
        assert got >= big, (r, got)


# -- argument checks ---------------------------------------------------------------------------------------
def bad_args_body(comm):
    """Every bad call fails before it enqueues anything; a good call afterwards still works."""
    s, r, n = stream(), comm.rank, comm.size
    h, f32 = comm.handle, T.HCCL_DATA_TYPE_FP32
    buf = device_buffer(data(r, 4 * n * 4))
    before = len(pyhcomm.record.tasks(rank=r))
    with pytest.raises(TypeError):           # a bool is no rank (docs/errors.md)
        pyhcomm.HcclBroadcast(buf, 4, f32, True, h, s)
    codes = {
        "bcast root -1": pyhcomm.HcclBroadcast(buf, 4, f32, -1, h, s),
        "bcast root n": pyhcomm.HcclBroadcast(buf, 4, f32, n, h, s),
        "bcast NULL": pyhcomm.HcclBroadcast(0, 4, f32, 0, h, s),
        "scatter root n": pyhcomm.HcclScatter(buf, buf, 4, f32, n, h, s),
        "scatter NULL recv": pyhcomm.HcclScatter(buf, 0, 4, f32, 0, h, s),
        "scatter root NULL send": pyhcomm.HcclScatter(0, buf, 4, f32, r, h, s),
        "a2a NULL send": pyhcomm.HcclAlltoAll(0, 4, f32, buf, 4, f32, h, s),
        "a2a NULL recv": pyhcomm.HcclAlltoAll(buf, 4, f32, 0, 4, f32, h, s),
        "a2a bytes differ": pyhcomm.HcclAlltoAll(buf, 4, f32, buf + 64, 4, T.HCCL_DATA_TYPE_INT16, h, s),
        "send to self": pyhcomm.HcclSend(buf, 4, f32, r, h, s),
        "send to n": pyhcomm.HcclSend(buf, 4, f32, n, h, s),
        "send NULL": pyhcomm.HcclSend(0, 4, f32, 1 - r, h, s),
        "recv from -1": pyhcomm.HcclRecv(buf, 4, f32, -1, h, s),
        "recv NULL": pyhcomm.HcclRecv(0, 4, f32, 1 - r, h, s),
        "recv NULL stream": pyhcomm.HcclRecv(buf, 4, f32, 1 - r, h, 0),
        "bcast count 0": pyhcomm.HcclBroadcast(buf, 0, f32, 0, h, s),
    }
    after = len(pyhcomm.record.tasks(rank=r))
    recv = device_buffer(np.zeros(4 * 4, np.uint8))
    # the non-root rank passes sendBuf NULL: allowed
    assert pyhcomm.HcclScatter(buf if r == 0 else 0, recv, 4, f32, 0, h, s) == 0
    sync(s)
    return codes, before, after, read(recv, 16)


def test_bad_root_rank_and_null_pointers_fail_before_anything_is_enqueued():
    out = pyhcomm.launch(bad_args_body, 2, product=A2, timeout=60, sim=pyhcomm.current_sim())
    for r, (codes, before, after, recv) in enumerate(out):
        assert after == before, f"rank {r} enqueued tasks for a failing call"
        ptr = {"bcast NULL", "scatter NULL recv", "scatter root NULL send", "a2a NULL send", "a2a NULL recv",
               "send NULL", "recv NULL", "recv NULL stream"}
        for what, code in codes.items():
            expect = R.HCCL_SUCCESS if what == "bcast count 0" else R.HCCL_E_PTR if what in ptr else R.HCCL_E_PARA
            assert code == expect, (r, what, code)
        np.testing.assert_array_equal(recv, data(0, 4 * 2 * 4)[r * 16:(r + 1) * 16])
