"""HcommLocalCopyOnThread from the host: enqueue semantics, FIFO order, every error code and its
precedence, the never-write-outside-dst guarantee, and concurrent host threads."""
import logging
import threading

import numpy as np
import pytest

import pyhcomm
from pyhcomm import HcommLocalCopyOnThread, acl
from hcomm_testutil import JOIN_TIMEOUT, host_setup, malloc, pattern, read, run_threads, write

R = pyhcomm.HcclResult
API = "HcommLocalCopyOnThread"


@pytest.fixture
def seed():
    """Seed example 1: Atlas 800T A2, CPU_TS thread on a user stream, two 256-byte buffers."""
    comm, stream, thread = host_setup()
    src, dst = malloc(256), malloc(256)
    data = write(src, pattern(256))
    return {"comm": comm, "stream": stream, "thread": thread, "src": src, "dst": dst, "data": data}


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "pyhcomm"]


# -- success path ------------------------------------------------------------------------------------
def test_seed_example_copies_256_bytes(seed):
    ret = HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], 256)
    assert ret == 0 and isinstance(ret, int)
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert (read(seed["dst"], 256) == seed["data"]).all()
    assert (read(seed["src"], 256) == seed["data"]).all()


def test_returns_without_waiting_bytes_land_after_synchronize(seed):
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], 256) == 0
    assert (read(seed["dst"], 256) == 0).all()           # enqueued, not run
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.state == "pending"
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert task.state == "done"
    assert (read(seed["dst"], 256) == seed["data"]).all()


def test_copies_land_in_fifo_order(seed):
    t, s = seed["thread"], seed["stream"]
    a, b, c, d = seed["src"], malloc(256), malloc(256), malloc(256)
    # a chain only works if each copy runs after the one before it
    assert HcommLocalCopyOnThread(t, b, a, 256) == 0
    assert HcommLocalCopyOnThread(t, c, b, 256) == 0
    assert HcommLocalCopyOnThread(t, d, c, 256) == 0
    # two writers of one destination: the later one wins
    x = malloc(64)
    write(x, np.full(64, 0xA1, dtype=np.uint8))
    assert HcommLocalCopyOnThread(t, seed["dst"], a, 64) == 0
    assert HcommLocalCopyOnThread(t, seed["dst"], x, 64) == 0
    assert (read(d, 256) == 0).all()
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(d, 256) == seed["data"]).all()
    assert (read(seed["dst"], 64) == 0xA1).all()


def test_copy_waits_behind_earlier_tasks_of_the_same_stream(seed):
    """The thread is the user's stream: a copy runs after a memset queued before it."""
    t, s = seed["thread"], seed["stream"]
    assert acl.rt.memset_async(seed["src"], 256, 0x3C, 256, s) == 0
    assert HcommLocalCopyOnThread(t, seed["dst"], seed["src"], 256) == 0
    assert acl.rt.memset_async(seed["src"], 256, 0x00, 256, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(seed["dst"], 256) == 0x3C).all()


def test_len_zero_is_a_valid_no_op_task(seed):
    before = read(seed["dst"], 256)
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], 0) == 0
    tasks = pyhcomm.record.tasks(kind="LocalCopy")
    assert len(tasks) == 1
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert tasks[0].state == "done"
    assert (read(seed["dst"], 256) == before).all()


def test_len_zero_at_the_end_of_an_allocation(seed):
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"] + 255, seed["src"] + 255, 0) == 0
    assert acl.rt.synchronize_stream(seed["stream"]) == 0


def test_src_equal_dst_is_accepted(seed):
    assert HcommLocalCopyOnThread(seed["thread"], seed["src"], seed["src"], 256) == 0
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert (read(seed["src"], 256) == seed["data"]).all()


def test_adjacent_ranges_in_one_allocation(seed):
    buf = malloc(512)
    data = write(buf, pattern(512, 4))
    assert HcommLocalCopyOnThread(seed["thread"], buf + 256, buf, 256) == 0     # touching, not overlapping
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    got = read(buf, 512)
    assert (got[:256] == data[:256]).all() and (got[256:] == data[:256]).all()


def test_copy_into_and_out_of_the_hccl_buffer(seed):
    _, ccl, size = pyhcomm.HcclGetHcclBuffer(seed["comm"])
    t = seed["thread"]
    assert HcommLocalCopyOnThread(t, ccl + size - 256, seed["src"], 256) == 0
    assert HcommLocalCopyOnThread(t, seed["dst"], ccl + size - 256, 256) == 0
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert (read(seed["dst"], 256) == seed["data"]).all()


def test_large_copy(seed):
    n = 5 << 20 | 123                   # above the multi-core split size, not page aligned
    _, ccl, _ = pyhcomm.HcclGetHcclBuffer(seed["comm"])
    src = malloc(n)
    data = write(src, (np.arange(n) % 253).astype(np.uint8))
    assert HcommLocalCopyOnThread(seed["thread"], ccl + 1, src, n) == 0
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    got = read(ccl, n + 2)
    assert got[0] == 0 and got[-1] == 0
    assert (got[1:-1] == data).all()


# -- NULL pointers and their order ---------------------------------------------------------------------
@pytest.mark.parametrize("dst_null,src_null,thread_null,named", [
    (True, True, True, "dst"),
    (True, False, True, "dst"),
    (True, True, False, "dst"),
    (True, False, False, "dst"),
    (False, True, True, "src"),
    (False, True, False, "src"),
    (False, False, True, "thread"),
])
def test_null_arguments_are_ptr_in_order_dst_src_thread(seed, caplog, dst_null, src_null, thread_null, named):
    dst = 0 if dst_null else seed["dst"]
    src = 0 if src_null else seed["src"]
    thread = 0 if thread_null else seed["thread"]
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = HcommLocalCopyOnThread(thread, dst, src, 256)
    assert ret == R.HCCL_E_PTR == 2
    msgs = _messages(caplog)
    assert len(msgs) == 1
    assert msgs[0].startswith(API) and named in msgs[0].split(":", 1)[1].split()[0], msgs
    assert not pyhcomm.record.tasks()


def test_null_pointer_beats_unknown_thread(seed):
    assert HcommLocalCopyOnThread(0x1234, 0, seed["src"], 256) == R.HCCL_E_PTR
    assert HcommLocalCopyOnThread(0x1234, seed["dst"], 0, 256) == R.HCCL_E_PTR


def test_null_pointer_beats_bad_length_and_bad_range(seed):
    assert HcommLocalCopyOnThread(seed["thread"], 0, seed["src"], 1 << 40) == R.HCCL_E_PTR
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"], 0, 100000) == R.HCCL_E_PTR


def test_none_pointer_is_null(seed):
    assert HcommLocalCopyOnThread(seed["thread"], None, seed["src"], 256) == R.HCCL_E_PTR


# -- unknown threads -----------------------------------------------------------------------------------
@pytest.mark.parametrize("handle", [1, 0x1234, 0x7410_0000_0000 + 0x40 * 999, (1 << 64) - 1])
def test_non_live_handle_is_not_found(seed, caplog, handle):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommLocalCopyOnThread(handle, seed["dst"], seed["src"], 256) == R.HCCL_E_NOT_FOUND == 6
    (msg,) = _messages(caplog)
    assert msg.startswith(API) and "thread" in msg and f"{handle:x}" in msg


def test_stream_or_comm_handle_is_not_a_thread(seed):
    assert HcommLocalCopyOnThread(seed["stream"], seed["dst"], seed["src"], 256) == R.HCCL_E_NOT_FOUND
    assert HcommLocalCopyOnThread(seed["comm"], seed["dst"], seed["src"], 256) == R.HCCL_E_NOT_FOUND


def test_thread_of_destroyed_comm_is_not_found(seed):
    assert pyhcomm.HcclCommDestroy(seed["comm"]) == 0
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], 256) == R.HCCL_E_NOT_FOUND


# -- bad ranges: HCCL_E_PARA ---------------------------------------------------------------------------
def _check_para(caplog, call, name, *words):
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = call()
    assert ret == R.HCCL_E_PARA == 1
    (msg,) = _messages(caplog)
    assert msg.startswith(API + ":"), msg
    assert name in msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.mark.parametrize("which", ["dst", "src"])
def test_host_memory_from_malloc_host_is_para(seed, caplog, which):
    h, ret = acl.rt.malloc_host(256)
    assert ret == 0
    dst, src = (h, seed["src"]) if which == "dst" else (seed["dst"], h)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], dst, src, 256), which, "host")


@pytest.mark.parametrize("which", ["dst", "src"])
def test_numpy_array_address_is_para(seed, caplog, which):
    arr = np.zeros(256, dtype=np.uint8)
    p = acl.util.numpy_to_ptr(arr)
    dst, src = (p, seed["src"]) if which == "dst" else (seed["dst"], p)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], dst, src, 256), which)
    assert (arr == 0).all()
    # the raw address numpy reports, registered or not
    raw = np.ones(256, dtype=np.uint8)
    rp = raw.__array_interface__["data"][0]
    dst, src = (rp, seed["src"]) if which == "dst" else (seed["dst"], rp)
    assert HcommLocalCopyOnThread(seed["thread"], dst, src, 256) == R.HCCL_E_PARA
    assert (raw == 1).all()


@pytest.mark.parametrize("which", ["dst", "src"])
def test_freed_memory_is_para(seed, caplog, which):
    gone = malloc(256)
    assert acl.rt.free(gone) == 0
    dst, src = (gone, seed["src"]) if which == "dst" else (seed["dst"], gone)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], dst, src, 256), which, "freed")


@pytest.mark.parametrize("which", ["dst", "src"])
@pytest.mark.parametrize("offset,length", [(0, 257), (1, 256), (200, 100), (255, 2), (256, 1), (-64, 64),
                                           (-1, 2)])
def test_out_of_bounds_is_para(seed, caplog, which, offset, length):
    big = malloc(1 << 20)  # a source/destination that is always long enough
    dst, src = (seed["dst"] + offset, big) if which == "dst" else (big, seed["src"] + offset)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], dst, src, length), which)
    assert not pyhcomm.record.tasks(kind="LocalCopy")


@pytest.mark.parametrize("which", ["dst", "src"])
def test_wild_pointer_is_para(seed, caplog, which):
    wild = 0xDEAD_BEEF
    dst, src = (wild, seed["src"]) if which == "dst" else (seed["dst"], wild)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], dst, src, 16), which)


def test_range_spanning_two_allocations_is_para(seed):
    a = malloc(256)
    b = malloc(256)
    lo, hi = sorted((a, b))
    span = hi + 256 - lo
    assert HcommLocalCopyOnThread(seed["thread"], lo, malloc(span), span) == R.HCCL_E_PARA


@pytest.mark.parametrize("length", [-1, 1 << 64])
def test_length_outside_uint64_is_para(seed, length):
    assert HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], length) == R.HCCL_E_PARA


@pytest.mark.parametrize("which", ["dst", "src"])
def test_another_ranks_device_memory_is_para(caplog, which):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    stream, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
    mine = malloc(256)
    assert acl.rt.set_device(1) == 0
    theirs = malloc(256, fill=0x44)
    _, their_ccl, _ = pyhcomm.HcclGetHcclBuffer(comms[1])
    assert acl.rt.set_device(0) == 0
    for other in (theirs, their_ccl):
        dst, src = (other, mine) if which == "dst" else (mine, other)
        _check_para(caplog, lambda: HcommLocalCopyOnThread(thread, dst, src, 256), which, "device 1")
    assert acl.rt.synchronize_device() == 0
    assert (read(theirs, 256) == 0x44).all()


@pytest.mark.parametrize("shift", [1, 16, 128, 255, -1, -16, -255])
def test_partial_overlap_is_para(seed, caplog, shift):
    buf = malloc(1024, fill=0x12)
    base = buf + 300
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], base + shift, base, 256), "overlap")
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert (read(buf, 1024) == 0x12).all()


# -- products and sides: HCCL_E_NOT_SUPPORT -------------------------------------------------------------
@pytest.mark.parametrize("engine", [pyhcomm.COMM_ENGINE_AICPU_TS, pyhcomm.COMM_ENGINE_CPU_TS])
def test_atlas_350_refuses_host_side_calls(caplog, engine):
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, threads = pyhcomm.HcclThreadAcquire(comms[0], engine, 1, 1)
    _, ccl, _ = pyhcomm.HcclGetHcclBuffer(comms[0])
    user_in = malloc(256)
    write(user_in, pattern(256))
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommLocalCopyOnThread(threads[0], ccl, user_in, 256) == R.HCCL_E_NOT_SUPPORT
    (msg,) = _messages(caplog)
    assert msg.startswith(API) and "Atlas 350" in msg and "device side" in msg
    assert acl.rt.synchronize_device() == 0
    assert (read(ccl, 256) == 0).all()


def test_atlas_350_refuses_host_side_calls_on_user_stream_threads():
    pyhcomm.set_product("Atlas 350")
    _comm, stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(thread, dst, src, 64) == R.HCCL_E_NOT_SUPPORT


def test_device_engine_thread_used_from_host_is_not_supported_on_a2(caplog):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, threads = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    src, dst = malloc(64), malloc(64)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommLocalCopyOnThread(threads[0], dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    assert "COMM_ENGINE_AICPU_TS" in caplog.text


def test_cpu_ts_threads_from_hccl_thread_acquire_work_on_the_host():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, threads = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, 2, 1)
    src, mid, dst = malloc(128), malloc(128), malloc(128)
    data = write(src, pattern(128))
    assert HcommLocalCopyOnThread(threads[0], mid, src, 128) == 0
    assert acl.rt.synchronize_device() == 0      # library-owned streams belong to the device
    assert HcommLocalCopyOnThread(threads[1], dst, mid, 128) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 128) == data).all()


# -- never a write outside dst -------------------------------------------------------------------------
def test_bytes_around_dst_stay_untouched(seed):
    region = malloc(1024, fill=0xEE)
    dst = region + 100
    assert HcommLocalCopyOnThread(seed["thread"], dst, seed["src"], 200) == 0
    assert HcommLocalCopyOnThread(seed["thread"], region + 1023, seed["src"], 1) == 0
    assert HcommLocalCopyOnThread(seed["thread"], region, seed["src"] + 255, 1) == 0
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    got = read(region, 1024)
    assert got[0] == seed["data"][255]
    assert (got[1:100] == 0xEE).all()
    assert (got[100:300] == seed["data"][:200]).all()
    assert (got[300:1023] == 0xEE).all()
    assert got[1023] == seed["data"][0]


def test_refused_copies_write_nothing_anywhere(seed):
    region = malloc(512, fill=0xEE)
    neighbour = malloc(512, fill=0xDD)
    t = seed["thread"]
    assert HcommLocalCopyOnThread(t, region + 400, seed["src"], 256) == R.HCCL_E_PARA    # runs past
    assert HcommLocalCopyOnThread(t, region + 512, seed["src"], 16) == R.HCCL_E_PARA     # one past the end
    assert HcommLocalCopyOnThread(t, region - 16, seed["src"], 16) == R.HCCL_E_PARA      # just before
    assert HcommLocalCopyOnThread(t, region + 10, region, 256) == R.HCCL_E_PARA          # overlap
    assert acl.rt.synchronize_stream(seed["stream"]) == 0
    assert (read(region, 512) == 0xEE).all()
    assert (read(neighbour, 512) == 0xDD).all()


def test_memory_freed_before_the_copy_runs_fails_the_stream_untouched(seed, caplog):
    t, s = seed["thread"], seed["stream"]
    gone = malloc(256)
    write(gone, pattern(256, 2))
    assert HcommLocalCopyOnThread(t, seed["dst"], gone, 256) == 0
    assert acl.rt.free(gone) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = acl.rt.synchronize_stream(s)
    assert ret != 0
    assert ret == pyhcomm.ACL_ERROR_RT_DEVICE_MEM_ERROR
    assert "aclrtSynchronizeStream" in caplog.text and "freed" in caplog.text
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.state == "failed"                    # the record names the task that failed
    assert (read(seed["dst"], 256) == 0).all()


# -- errors are codes, never exceptions ----------------------------------------------------------------
def test_errors_are_return_codes_not_exceptions(seed):
    t, d, s = seed["thread"], seed["dst"], seed["src"]
    cases = [(0, 0, 0, 0), (t, d, s, -5), (t, d, s, 1 << 70), (0xFFFF, d, s, 1), (t, 0x10, s, 1),
             (t, d, 0x10, 1), (t, d, d + 1, 2), (t, 1 << 63, s, 1)]
    for args in cases:
        ret = HcommLocalCopyOnThread(*args)
        assert isinstance(ret, int) and ret != 0, args


# -- concurrent host threads ---------------------------------------------------------------------------
def test_host_threads_on_one_device_each_with_its_own_hcomm_thread():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    comm = comms[0]
    nworkers, hops, n = 6, 64, 4096
    results = {}

    def worker(i):
        def body():
            assert acl.rt.set_device(0) == 0
            stream, ret = acl.rt.create_stream()
            assert ret == 0
            ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
            assert ret == 0
            bufs = [malloc(n) for _ in range(hops + 1)]
            data = write(bufs[0], pattern(n, i + 10))
            for k in range(hops):
                assert HcommLocalCopyOnThread(thread, bufs[k + 1], bufs[k], n) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            results[i] = all((read(b, n) == data).all() for b in bufs)
            assert acl.rt.destroy_stream(stream) == 0
            assert acl.rt.reset_device(0) == 0
        return body

    run_threads([worker(i) for i in range(nworkers)])
    assert results == {i: True for i in range(nworkers)}
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == nworkers * hops


def test_ranks_on_their_own_host_threads_copy_concurrently():
    assert acl.init() == 0
    nranks, hops, n = 4, 8, 2048
    _, root = pyhcomm.HcclGetRootInfo()
    results = {}
    done = threading.Barrier(nranks, timeout=JOIN_TIMEOUT)

    def rank_main(rank):
        def body():
            assert acl.rt.set_device(rank) == 0
            ret, comm = pyhcomm.HcclCommInitRootInfo(nranks, root, rank)
            assert ret == 0
            stream, _ = acl.rt.create_stream()
            ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CPU_TS, stream, 2)
            assert ret == 0
            _, ccl, _ = pyhcomm.HcclGetHcclBuffer(comm)
            src = malloc(n)
            data = write(src, pattern(n, rank))
            for k in range(hops):
                assert HcommLocalCopyOnThread(thread, ccl + k * n, src if k == 0 else ccl + (k - 1) * n, n) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            results[rank] = all((read(ccl + k * n, n) == data).all() for k in range(hops))
            done.wait()
            assert pyhcomm.HcclCommDestroy(comm) == 0
            assert acl.rt.reset_device(rank) == 0
        return body

    run_threads([rank_main(r) for r in range(nranks)])
    assert results == {r: True for r in range(nranks)}
    for r in range(nranks):
        tasks = pyhcomm.record.tasks(rank=r, kind="LocalCopy")
        assert len(tasks) == hops and {t.device for t in tasks} == {r}


def test_huge_length_is_para(seed, caplog):
    _check_para(caplog, lambda: HcommLocalCopyOnThread(seed["thread"], seed["dst"], seed["src"], 1 << 40),
                "dst", "runs past")


# -- pointers checked on every call, even after earlier successful calls on the same thread ----------
@pytest.mark.parametrize("which", ["dst", "src"])
def test_memory_freed_after_an_earlier_copy_is_para(seed, caplog, which):
    t, s = seed["thread"], seed["stream"]
    victim = malloc(256)
    dst, src = (victim, seed["src"]) if which == "dst" else (seed["dst"], victim)
    assert HcommLocalCopyOnThread(t, dst, src, 256) == 0
    assert HcommLocalCopyOnThread(t, dst + 16, src + 16, 128) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert acl.rt.free(victim) == 0
    _check_para(caplog, lambda: HcommLocalCopyOnThread(t, dst, src, 256), which, "freed")
    _check_para(caplog, lambda: HcommLocalCopyOnThread(t, dst + 16, src + 16, 16), which, "freed")
    assert acl.rt.synchronize_stream(s) == 0


@pytest.mark.parametrize("which", ["dst", "src"])
def test_bounds_checked_after_an_earlier_copy_in_the_same_allocation(seed, caplog, which):
    t = seed["thread"]
    buf = malloc(256)
    other = malloc(1024)
    dst, src = (buf, other) if which == "dst" else (other, buf)
    assert HcommLocalCopyOnThread(t, dst, src, 64) == 0
    off = 200
    dst2, src2 = (buf + off, other) if which == "dst" else (other, buf + off)
    _check_para(caplog, lambda: HcommLocalCopyOnThread(t, dst2, src2, 64), which, "runs past")
    dst3, src3 = (buf - 8, other) if which == "dst" else (other, buf - 8)
    assert HcommLocalCopyOnThread(t, dst3, src3, 8) == R.HCCL_E_PARA


def test_hccl_buffer_of_a_destroyed_comm_is_para_after_earlier_use(seed, caplog):
    t, s = seed["thread"], seed["stream"]
    _, others = pyhcomm.HcclCommInitAll([0])       # a second communicator on the same device
    _, ccl, _ = pyhcomm.HcclGetHcclBuffer(others[0])
    assert HcommLocalCopyOnThread(t, ccl, seed["src"], 256) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert pyhcomm.HcclCommDestroy(others[0]) == 0
    _check_para(caplog, lambda: HcommLocalCopyOnThread(t, ccl, seed["src"], 256), "dst", "freed")


def test_other_device_memory_is_para_after_earlier_local_use():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    stream, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
    a, b = malloc(256), malloc(256)
    assert HcommLocalCopyOnThread(thread, b, a, 256) == 0
    assert acl.rt.set_device(1) == 0
    far = malloc(256)
    assert acl.rt.set_device(0) == 0
    assert HcommLocalCopyOnThread(thread, far, a, 256) == R.HCCL_E_PARA
    assert HcommLocalCopyOnThread(thread, b, far, 256) == R.HCCL_E_PARA


def test_thread_whose_stream_was_destroyed_refuses_copies(seed, caplog):
    """A copy on a thread whose user stream is gone can never run: it must not be accepted with 0
    and then silently never land."""
    t = seed["thread"]
    assert HcommLocalCopyOnThread(t, seed["dst"], seed["src"], 256) == 0
    assert acl.rt.destroy_stream(seed["stream"]) == 0           # waits for the first copy
    assert (read(seed["dst"], 256) == seed["data"]).all()
    other = malloc(256, fill=0x19)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = HcommLocalCopyOnThread(t, other, seed["src"], 256)
    assert ret != R.HCCL_SUCCESS, "copy accepted on a destroyed stream"
    assert any(m.startswith(API) for m in _messages(caplog))
    assert acl.rt.synchronize_device() == 0
    assert (read(other, 256) == 0x19).all()
    assert [x.state for x in pyhcomm.record.tasks(kind="LocalCopy")] == ["done"]
