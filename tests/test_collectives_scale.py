"""Collectives past 64 ranks: every collective with data at 128 ranks, and the plans at 1024.

A thread has at most 64 notifies, so a call gets at most 63 slaves and the mesh algorithms
(AllGather, AlltoAll, ReduceScatter) serve their peers in groups (collectives.patterns.mesh);
the ring ones (AllReduce, Scatter) and Broadcast need no slaves. Each 128-rank test is one
pyhcomm.launch with tiny sizes (4..64 bytes per rank, FP32) checked byte for byte against numpy.

Cost (measured on 2 cores): a 128-rank mesh call is ~160-180k tasks, 3.5-5 s (AllGather on A3,
AlltoAll on A2, ReduceScatter on Atlas 350); the ring AllReduce ~3 s, the two Scatters ~2 s, the
two Broadcasts under 0.5 s, the 1024-rank deadlock model ~1 s: ~25 s for the module.

HCCL_BUFFSIZE=1 (a 2 MB HCCL buffer per rank) in the 128-rank runs keeps the slots small; the
default buffer's slot math is checked at 1024 ranks without a launch.
"""
import numpy as np
import pytest

import pyhcomm
from pyhcomm.collectives.context import MAX_SLAVES, slot_bytes
from pyhcomm.collectives.patterns import mesh_groups
from pyhcomm.errors import HcclError
from pyhcomm.hccl import comm as comm_mod
from test_collectives_data import (alltoall_body, broadcast_body, check_alltoall, check_scatter, data,
                                   device_buffer, scatter_body, stream, sync)
from test_collectives_reduce import (all_reduce, assert_same, make_input, mesh_reduce_scatter_oracle,
                                     reduce_scatter, ring_all_reduce_oracle)
from hcomm_testutil import read

# SLOW: the three 128-rank mesh tests (AllGather, AlltoAll, ReduceScatter), 3.5-5 s each.
pytestmark = pytest.mark.timeout(300)

A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
N = 128
MB = 1 << 20
F32 = pyhcomm.HCCL_DATA_TYPE_FP32
SUM = pyhcomm.HcclReduceOp.HCCL_REDUCE_SUM
R = pyhcomm.HcclResult


@pytest.fixture
def small_buffer(env):
    env("HCCL_BUFFSIZE", "1")


def launch(body, n, product, *args):
    def wrapped(comm):
        s = stream()
        return body(comm, s, *args)
    return pyhcomm.launch(wrapped, n, product=product, timeout=240, sim=pyhcomm.current_sim())


# -- the 128-rank runs ---------------------------------------------------------------------------------
def allgather_body(comm, s, count):
    nbytes = count * 4
    send = device_buffer(data(7 + comm.rank, nbytes))
    recv = device_buffer(np.full(comm.size * nbytes, 0xEE, np.uint8))
    assert pyhcomm.HcclAllGather(send, recv, count, F32, comm.handle, s) == 0
    sync(s)
    return read(recv, comm.size * nbytes)


def test_mesh_allgather_at_128_ranks_in_an_ai_cpu_kernel(small_buffer):
    """A3: the AI CPU main thread has 63 fan-in notifies + the host-sync one = 64."""
    count = 5
    out = launch(allgather_body, N, A3, count)
    want = np.concatenate([data(7 + q, count * 4) for q in range(N)])
    for r in range(N):
        np.testing.assert_array_equal(out[r], want, err_msg=f"rank {r}")
    # 127 peers on the main thread and 63 slaves: groups of 64 and 63 peers
    writes = pyhcomm.record.tasks(rank=0, kind="Write")
    assert sorted(w.detail[1] for w in writes) == list(range(1, N))
    assert len({w.thread for w in writes}) == 1 + MAX_SLAVES == 64


def test_mesh_alltoall_at_128_ranks(small_buffer):
    cases = [(F32, 3, F32, 3)]
    out = launch(lambda comm, s: alltoall_body(comm, cases), N, A2)
    check_alltoall(out, cases, N)


def test_mesh_reduce_scatter_at_128_ranks_is_bit_exact(small_buffer):
    """Random FP32 sums: a different reduce order would show in the bits."""
    count, seed = 2, ("scale", N)
    out = launch(lambda comm, s: reduce_scatter(comm, s, seed, count, F32, SUM), N, A350)
    xs = [make_input(seed, r, count * N, F32, SUM) for r in range(N)]
    for r in range(N):
        assert_same(out[r], mesh_reduce_scatter_oracle(xs, r, count, SUM), f"ReduceScatter rank {r}")


def test_ring_all_reduce_at_128_ranks_is_bit_exact(small_buffer):
    """16 elements (64 bytes) over 128 ranks: 16 ring slices of one element, the others empty."""
    counts = [16]

    def body(comm, s):
        return [all_reduce(comm, s, ("scale-ar", c), c, F32, SUM) for c in counts]
    out = launch(body, N, A2)
    for i, c in enumerate(counts):
        want = ring_all_reduce_oracle([make_input(("scale-ar", c), r, c, F32, SUM) for r in range(N)], SUM)
        for r in range(N):
            assert_same(out[r][i], want, f"AllReduce count {c} rank {r}")


def test_broadcast_at_128_ranks(small_buffer):
    cases = [(77, F32, 13), (0, F32, 1)]
    out = launch(lambda comm, s: broadcast_body(comm, cases), N, A3)
    for i, (root, dt, count) in enumerate(cases):
        for r in range(N):
            np.testing.assert_array_equal(out[r][i], data(100 * i + root, count * 4), err_msg=f"call {i} rank {r}")


def test_ring_scatter_at_128_ranks(small_buffer):
    """8 devices a server: HCCS inside (the receiver reads), RoCE between (the sender writes)."""
    cases = [(5, F32, 3), (127, F32, 16)]
    check_scatter(launch(lambda comm, s: scatter_body(comm, cases), N, A2), cases, N)


# -- the plans at 1024 ranks ----------------------------------------------------------------------------
def test_alltoall_slots_at_1024_ranks_with_the_default_and_the_smallest_buffer():
    """2 * 1024 slots: 200 KiB each in the default 400 MB buffer, 1 KiB in the 2 MB one."""
    parts = 2 * 1024
    assert slot_bytes(2 * 200 * MB, parts, 1024) == 200 * 1024
    assert slot_bytes(2 * 1 * MB, parts, 1024) == 1024
    assert slot_bytes(2 * 1 * MB, 1024, 1024) == 2048            # AllGather mesh: 1024 slots
    assert slot_bytes(2 * 1 * MB, 2 * 8192, 8192) == 128          # the last rank count that fits
    assert slot_bytes(2 * 200 * MB, 1, 2) == 256 * MB             # one slot: capped at 256 MB


def test_a_buffer_too_small_for_the_slots_is_refused_naming_hccl_buffsize():
    with pytest.raises(HcclError) as info:
        slot_bytes(2 * MB, 2 * 8193, 8193, api="HcclAlltoAll")
    e = info.value
    assert e.code == R.HCCL_E_MEMORY and e.api == "HcclAlltoAll"
    assert "HCCL_BUFFSIZE" in e.message and "8193 ranks" in e.message and "at least 2" in e.message


def _completes(groups) -> bool:
    """Model of the grouped mesh (``groups[r]``: rank r's groups of peers): an exchange completes
    once both ranks started it; a rank starts its next group when its current one completed."""
    n = len(groups)
    at, need = [-1] * n, [0] * n        # current group; its peers that have not started their side
    started, waits = bytearray(n * n), bytearray(n * n)  # [a * n + b]: a started / b waits for a
    todo = list(range(n))
    while todo:
        r = todo.pop()
        while need[r] == 0 and at[r] + 1 < len(groups[r]):
            at[r] += 1
            group = groups[r][at[r]]
            for p in group:
                started[r * n + p] = 1
                if waits[r * n + p]:
                    waits[r * n + p] = 0
                    need[p] -= 1
                    if need[p] == 0:
                        todo.append(p)
            for p in group:
                if not started[p * n + r]:
                    waits[p * n + r] = 1
                    need[r] += 1
    return all(need[r] == 0 and at[r] + 1 == len(groups[r]) for r in range(n))


@pytest.mark.parametrize("n", [3, 65, 66, 127, 128, 129, 1024])
def test_mesh_groups_cannot_deadlock_and_no_port_receives_more_than_it_sends(n):
    """The groups (rounds of a round-robin schedule) complete at any scale (64 threads: AllGather,
    AlltoAll; 63 slaves: ReduceScatter, rotated inside a group); a pair meets in the same group on
    both sides, so in every group each rank is written by as many peers as it writes to (no
    incast). Cutting the rotated order instead would deadlock; consecutive groups of the ascending
    peers (the earlier cut) made every rank write to rank ``n - 1`` in its last group."""
    for width, order in ((64, None), (63, lambda me: (lambda p: (p - me) % n))):
        plan = [mesh_groups(me, n, [p for p in range(n) if p != me], width, order and order(me)) for me in range(n)]
        assert _completes(plan)
        assert len({len(gs) for gs in plan}) == 1
        assert all(len(g) <= width for gs in plan for g in gs)
        assert all(sorted(sum(gs, [])) == [p for p in range(n) if p != me] for me, gs in enumerate(plan))
        for me, gs in enumerate(plan):
            for g, group in enumerate(gs):
                assert all(me in plan[p][g] for p in group)      # both ends in group g
    if n <= 128:
        rotated = [[[(me + k) % n] for k in range(1, n)] for me in range(n)]
        assert not _completes(rotated)
        ascending = [[peers[i:i + 63] for i in range(0, n - 1, 63)]
                     for peers in ([p for p in range(n) if p != me] for me in range(n))]
        if n > 64:      # the earlier cut: every rank writes to rank n - 1 in its last group
            assert all(n - 1 in ascending[me][-1] for me in range(n - 1))


# -- refusal through the API ------------------------------------------------------------------------------
def tiny_buffer_body(comm, s):
    """A 1000-byte HCCL buffer on 4 ranks: 8 AlltoAll slots of 128 bytes do not fit, 4 AllGather
    slots do. The refusal comes before anything is enqueued (on A3 too: before the kernel)."""
    comm_mod.get_comm(comm.handle, "test").buffer_size = 1000
    n, h = comm.size, comm.handle
    send = device_buffer(data(comm.rank, 4 * n))
    recv = device_buffer(np.zeros(4 * n, np.uint8))
    before = len(pyhcomm.record.tasks(rank=comm.rank))
    code = pyhcomm.HcclAlltoAll(send, 1, F32, recv, 1, F32, h, s)
    after = len(pyhcomm.record.tasks(rank=comm.rank))
    assert pyhcomm.HcclAllGather(send, recv, 1, F32, h, s) == 0
    sync(s)
    return code, after - before, read(recv, 4 * n)


@pytest.mark.parametrize("product", [A2, A3])
def test_an_alltoall_the_hccl_buffer_cannot_hold_fails_with_hccl_e_memory(product):
    out = launch(tiny_buffer_body, 4, product)
    want = np.concatenate([data(q, 16)[:4] for q in range(4)])
    for r, (code, enqueued, gathered) in enumerate(out):
        assert code == R.HCCL_E_MEMORY and enqueued == 0, (r, code, enqueued)
        np.testing.assert_array_equal(gathered, want)
