"""Communicators: root info with N ranks on N host threads, HcclCommInitAll, the rank queries,
HcclCommDestroy and the HCCL buffer (size, stability, lazy commitment)."""
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from hcomm_testutil import JOIN_TIMEOUT, D2D, malloc, pattern, read, run_threads, write

R = pyhcomm.HcclResult
MB = 1 << 20
DEVICE_VA_BASE = 0x12C0_0000_0000
DEVICE_VA_STRIDE = 1 << 40


@pytest.fixture
def dev0():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield 0


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# -- root info ---------------------------------------------------------------------------------------
def test_get_root_info_returns_a_fresh_hccl_root_info():
    ret, root = pyhcomm.HcclGetRootInfo()
    assert ret == R.HCCL_SUCCESS
    assert isinstance(root, pyhcomm.HcclRootInfo)
    assert isinstance(root.internal, bytes) and len(root.internal) == pyhcomm.HCCL_ROOT_INFO_BYTES == 4108
    assert bytes(root) == root.internal
    ret2, root2 = pyhcomm.HcclGetRootInfo()
    assert ret2 == 0 and root2 != root and root2.internal != root.internal


def test_root_info_travels_as_its_bytes():
    """A root handed to the other ranks as bytes (as over MPI) and rebuilt names the same root."""
    _, root = pyhcomm.HcclGetRootInfo()
    copy = pyhcomm.HcclRootInfo()
    assert copy.internal == bytes(4108)                      # pyhccl's zero default
    copy.internal = root.internal
    assert copy == root
    blank = pyhcomm.HcclRootInfo()
    assert pyhcomm.HcclCommInitRootInfo(1, blank, 0) == (R.HCCL_E_PARA, 0)   # not from HcclGetRootInfo


def _join_root(root):
    """A rank body that joins ``root`` beside the communicator ``launch`` hands it: what the rank
    sees of the one it joined (size, rank, name), and the launch's communicator's name."""
    def body(comm, nranks):
        ret, handle = pyhcomm.HcclCommInitRootInfo(nranks, root, comm.rank)
        assert ret == 0, ret
        seen = (pyhcomm.HcclGetRankSize(handle)[1], pyhcomm.HcclGetRankId(handle)[1],
                pyhcomm.HcclGetCommName(handle)[1], comm.name)
        assert pyhcomm.HcclCommDestroy(handle) == 0
        return seen
    return body


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_a_root_info_made_before_a_launch_names_a_communicator_of_its_ranks(scheduler):
    """HCCL's examples make the root info in ``main()`` and join it in each host thread. With
    ``pyhcomm.launch`` starting the ranks instead (in a Sim of its own, whose first communicator
    is the one launch hands each rank), the root info names a second communicator of the ranks."""
    _, root = pyhcomm.HcclGetRootInfo()
    got = pyhcomm.launch(_join_root(root), 4, 4, scheduler=scheduler)
    assert got == [(4, r, "hccl_world_1", "hccl_world_0") for r in range(4)]


def test_two_launches_at_once_each_join_the_root_info_made_for_it():
    _, a = pyhcomm.HcclGetRootInfo()
    _, b = pyhcomm.HcclGetRootInfo()
    got = {}

    def start(name, root, nranks):
        return lambda: got.__setitem__(name, pyhcomm.launch(_join_root(root), nranks, nranks, timeout=JOIN_TIMEOUT))

    run_threads([start("a", a, 2), start("b", b, 3)])
    assert got == {"a": [(2, r, "hccl_world_1", "hccl_world_0") for r in range(2)],
                   "b": [(3, r, "hccl_world_1", "hccl_world_0") for r in range(3)]}


def test_bytes_that_are_no_root_info_get_para_saying_what_is_wrong(dev0, caplog):
    """What is wrong with bytes that are no root info, in the message of ``HCCL_E_PARA``; the
    root they were made from still works after."""
    _, root = pyhcomm.HcclGetRootInfo()
    flipped = bytearray(root.internal)
    flipped[20] ^= 1                                  # a bit of the root's key
    cases = [(bytes(4108), "rootInfo is all zeros: it was not filled by HcclGetRootInfo"),
             (b"not a root info".ljust(4108, b"\0"), "rootInfo was not produced by HcclGetRootInfo"),
             (bytes(flipped), "rootInfo is corrupted (its checksum does not match)"),
             (root.internal[:40], "rootInfo is corrupted (its checksum does not match)")]   # cut short
    for raw, why in cases:
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="pyhcomm"):
            assert pyhcomm.HcclCommInitRootInfo(1, raw, 0) == (R.HCCL_E_PARA, 0)
        assert caplog.messages == [f"HcclCommInitRootInfo: {why}"]
    ret, comm = pyhcomm.HcclCommInitRootInfo(1, root, 0)
    assert ret == 0 and pyhcomm.HcclCommDestroy(comm) == 0


def test_a_root_info_of_another_process_names_no_communicator_here(dev0, caplog):
    """Without MPI the ranks of one communicator live in one process: a root info made in another
    one names none here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYHCOMM_")}
    made = subprocess.Popen([sys.executable, "-c", "import sys, pyhcomm; "
                             "sys.stdout.buffer.write(pyhcomm.HcclGetRootInfo()[1].internal)"],
                            stdout=subprocess.PIPE, env=env)
    raw, _ = made.communicate(timeout=JOIN_TIMEOUT)
    assert made.returncode == 0 and len(raw) == 4108
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclCommInitRootInfo(2, raw, 0) == (R.HCCL_E_PARA, 0)
    assert caplog.messages == [f"HcclCommInitRootInfo: rootInfo names no communicator here: it was made in process "
                               f"{made.pid}, and ranks of another process join only over MPI (mpiexec)"]


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_init_root_info_n_ranks_each_on_its_own_host_thread(nranks):
    assert acl.init() == 0
    ret, root = pyhcomm.HcclGetRootInfo()
    assert ret == 0
    results = {}
    all_joined = threading.Barrier(nranks, timeout=JOIN_TIMEOUT)

    def rank_main(rank):
        def body():
            assert acl.rt.set_device(rank) == 0
            ret, comm = pyhcomm.HcclCommInitRootInfo(nranks, root, rank)
            assert ret == 0 and comm
            out = {"comm": comm}
            out["size"] = pyhcomm.HcclGetRankSize(comm)
            out["id"] = pyhcomm.HcclGetRankId(comm)
            out["name"] = pyhcomm.HcclGetCommName(comm)
            out["buffer"] = pyhcomm.HcclGetHcclBuffer(comm)
            results[rank] = out
            all_joined.wait()
            assert pyhcomm.HcclCommDestroy(comm) == 0
            assert acl.rt.reset_device(rank) == 0
        return body

    run_threads([rank_main(r) for r in range(nranks)])
    assert sorted(results) == list(range(nranks))
    names = {results[r]["name"] for r in results}
    assert len(names) == 1
    ret, name = names.pop()
    assert ret == 0 and isinstance(name, str) and 0 < len(name) < pyhcomm.COMM_NAME_MAX_LENGTH
    assert len({results[r]["comm"] for r in results}) == nranks
    for r, out in results.items():
        assert out["size"] == (0, nranks)
        assert out["id"] == (0, r)
        ret, addr, size = out["buffer"]
        assert ret == 0 and size == 400 * MB
        base = DEVICE_VA_BASE + r * DEVICE_VA_STRIDE
        assert base <= addr < base + DEVICE_VA_STRIDE      # on the rank's own device


@pytest.mark.parametrize("nranks", [3])
def test_a_rank_may_destroy_its_comm_while_others_still_return_from_init(nranks, monkeypatch, env):
    """Once the last rank joined, every rank's HcclCommInitRootInfo succeeds, even if a rank that
    returned first destroys its communicator at once (no barrier between init and destroy)."""
    env("HCCL_CONNECT_TIMEOUT", "1")   # a wrongly stuck rank fails fast
    assert acl.init() == 0
    _, root = pyhcomm.HcclGetRootInfo()
    codes = {}

    def rank_main(rank):
        def body():
            assert acl.rt.set_device(rank) == 0
            ret, comm = pyhcomm.HcclCommInitRootInfo(nranks, root, rank)
            codes[rank] = ret
            if ret == 0:
                assert pyhcomm.HcclCommDestroy(comm) == 0
            assert acl.rt.reset_device(rank) == 0
        return body

    run_threads([rank_main(r) for r in range(nranks)])
    assert codes == {r: R.HCCL_SUCCESS for r in range(nranks)}


def test_init_root_info_argument_errors(dev0):
    _, root = pyhcomm.HcclGetRootInfo()
    assert pyhcomm.HcclCommInitRootInfo(2, None, 0) == (R.HCCL_E_PTR, 0)
    assert pyhcomm.HcclCommInitRootInfo(2, b"\0" * 4108, 0) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclCommInitRootInfo(2, root, 2) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclCommInitRootInfo(2, root, -1) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclCommInitRootInfo(0, root, 0) == (R.HCCL_E_PARA, 0)


def test_init_root_info_single_rank_and_mismatched_nranks(dev0):
    _, root = pyhcomm.HcclGetRootInfo()
    ret, comm = pyhcomm.HcclCommInitRootInfo(1, root, 0)
    assert ret == 0
    assert pyhcomm.HcclGetRankSize(comm) == (0, 1)
    assert acl.rt.set_device(1) == 0
    assert pyhcomm.HcclCommInitRootInfo(2, root, 1) == (R.HCCL_E_PARA, 0)


def test_init_root_info_without_current_device():
    _, root = pyhcomm.HcclGetRootInfo()
    ret, comm = pyhcomm.HcclCommInitRootInfo(1, root, 0)
    assert ret != 0 and comm == 0


def test_init_root_info_times_out_when_ranks_are_missing(dev0, monkeypatch, env, caplog):
    env("HCCL_CONNECT_TIMEOUT", "0.05")
    _, root = pyhcomm.HcclGetRootInfo()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclCommInitRootInfo(2, root, 0) == (R.HCCL_E_TIMEOUT, 0)
    assert "HcclCommInitRootInfo" in caplog.text and "[1]" in caplog.text


def test_two_ranks_on_one_device_rejected(monkeypatch, env):
    env("HCCL_CONNECT_TIMEOUT", "0.2")
    assert acl.init() == 0
    _, root = pyhcomm.HcclGetRootInfo()
    codes = []

    def rank(r):
        def body():
            assert acl.rt.set_device(0) == 0
            codes.append(pyhcomm.HcclCommInitRootInfo(2, root, r)[0])
            assert acl.rt.reset_device(0) == 0
        return body

    run_threads([rank(0), rank(1)])
    # whichever joined second is refused at once; the first never sees its peer
    assert sorted(codes) == [R.HCCL_E_PARA, R.HCCL_E_TIMEOUT]


# -- HcclCommInitAll and queries ---------------------------------------------------------------------
def test_init_all_and_rank_queries(dev0):
    ret, comms = pyhcomm.HcclCommInitAll([0, 1, 2, 3])
    assert ret == 0 and len(comms) == 4 and len(set(comms)) == 4
    assert all(isinstance(c, int) and c for c in comms)
    names = set()
    for r, c in enumerate(comms):
        assert pyhcomm.HcclGetRankSize(c) == (0, 4)
        assert pyhcomm.HcclGetRankId(c) == (0, r)
        ret, name = pyhcomm.HcclGetCommName(c)
        assert ret == 0
        names.add(name)
    assert len(names) == 1
    ret, other = pyhcomm.HcclCommInitAll([5])
    assert pyhcomm.HcclGetCommName(other[0])[1] not in names
    assert acl.rt.get_device() == (0, 0)       # InitAll leaves the caller's device current


def test_init_all_uses_the_listed_devices(dev0):
    ret, comms = pyhcomm.HcclCommInitAll([3, 1])
    assert ret == 0
    for c, dev in zip(comms, (3, 1)):
        _, addr, _ = pyhcomm.HcclGetHcclBuffer(c)
        base = DEVICE_VA_BASE + dev * DEVICE_VA_STRIDE
        assert base <= addr < base + DEVICE_VA_STRIDE


@pytest.mark.parametrize("devices,code", [
    ([0, 0], R.HCCL_E_PARA),
    ([], R.HCCL_E_PARA),
    ([99], R.HCCL_E_PARA),
    (None, R.HCCL_E_PTR),
])
def test_init_all_errors(dev0, devices, code):
    assert pyhcomm.HcclCommInitAll(devices) == (code, [])


def test_queries_on_null_unknown_and_destroyed_comms(dev0, caplog):
    ret, comms = pyhcomm.HcclCommInitAll([0])
    comm = comms[0]
    assert pyhcomm.HcclGetRankSize(0) == (R.HCCL_E_PTR, 0)
    assert pyhcomm.HcclGetRankId(0) == (R.HCCL_E_PTR, 0)
    assert pyhcomm.HcclGetCommName(0) == (R.HCCL_E_PTR, "")
    assert pyhcomm.HcclCommDestroy(0) == R.HCCL_E_PTR
    assert pyhcomm.HcclGetRankSize(0x1234) == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclCommDestroy(comm) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclGetRankSize(comm) == (R.HCCL_E_NOT_FOUND, 0)
    assert "HcclGetRankSize" in caplog.text
    assert pyhcomm.HcclGetRankId(comm) == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclGetHcclBuffer(comm) == (R.HCCL_E_NOT_FOUND, 0, 0)
    assert pyhcomm.HcclCommDestroy(comm) == R.HCCL_E_NOT_FOUND


def test_destroy_releases_threads(dev0):
    _, comms = pyhcomm.HcclCommInitAll([0])
    stream, _ = acl.rt.create_stream()
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
    assert ret == 0
    _, threads = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, 2, 1)
    src, dst = malloc(32), malloc(32)
    assert pyhcomm.HcclCommDestroy(comms[0]) == 0
    for t in [thread] + threads:
        assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 32) == R.HCCL_E_NOT_FOUND
    assert acl.rt.synchronize_stream(stream) == 0   # the user's stream survives


# -- the HCCL buffer ---------------------------------------------------------------------------------
def test_hccl_buffer_is_400_mb_and_stable(dev0):
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    ret, addr, size = pyhcomm.HcclGetHcclBuffer(comms[0])
    assert ret == 0 and size == 2 * 200 * MB == 419430400
    assert addr % 64 == 0
    for _ in range(3):
        assert pyhcomm.HcclGetHcclBuffer(comms[0]) == (0, addr, size)
    ret, addr1, size1 = pyhcomm.HcclGetHcclBuffer(comms[1])
    assert ret == 0 and size1 == size and addr1 != addr


def test_hccl_buffsize_env(dev0, monkeypatch, env):
    env("HCCL_BUFFSIZE", "3")
    _, comms = pyhcomm.HcclCommInitAll([0])
    first = pyhcomm.HcclGetHcclBuffer(comms[0])
    assert first[0] == 0 and first[2] == 2 * 3 * MB
    env("HCCL_BUFFSIZE", "7")           # later changes do not resize a live buffer
    assert pyhcomm.HcclGetHcclBuffer(comms[0]) == first


def test_hccl_buffsize_env_invalid_is_a_parameter_error_naming_it(dev0, env, caplog):
    env("HCCL_BUFFSIZE", "lots")
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == pyhcomm.HCCL_E_PARA and not comms
    assert "HCCL_BUFFSIZE='lots' is not valid" in caplog.text


def test_hccl_buffer_is_usable_device_memory_but_not_freeable(dev0):
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, buf, size = pyhcomm.HcclGetHcclBuffer(comms[0])
    assert (read(buf, 4096) == 0).all()
    data = write(buf + size - 256, pattern(256))            # its last bytes
    assert (read(buf + size - 256, 256) == data).all()
    assert acl.rt.free(buf) == pyhcomm.ACL_ERROR_RT_PARAM_INVALID
    d = malloc(256)
    assert acl.rt.memcpy(d, 256, buf + size - 256, 256, D2D) == 0
    assert (read(d, 256) == data).all()
    assert acl.rt.memcpy(d, 256, buf + size - 128, 256, D2D) == pyhcomm.ACL_ERROR_RT_PARAM_INVALID


def test_hccl_buffer_cleared_is_the_same_buffer_zero_filled(dev0):
    _, comms = pyhcomm.HcclCommInitAll([0])
    ret, buf, size = pyhcomm.HcclGetHcclBufferCleared(comms[0])          # the first call makes it
    assert ret == 0 and pyhcomm.HcclGetHcclBuffer(comms[0]) == (0, buf, size)
    write(buf, pattern(256))
    write(buf + size - 256, pattern(256))
    assert pyhcomm.HcclGetHcclBufferCleared(comms[0]) == (0, buf, size)
    assert (read(buf, 256) == 0).all() and (read(buf + size - 256, 256) == 0).all()
    assert pyhcomm.HcclGetHcclBufferCleared(0) == (pyhcomm.HCCL_E_PTR, 0, 0)


def test_hccl_buffers_do_not_commit_memory_until_touched(dev0):
    before = _rss_bytes()
    ret, comms = pyhcomm.HcclCommInitAll([4, 5, 6, 7])
    assert ret == 0
    bufs = []
    for c in comms:
        ret, addr, size = pyhcomm.HcclGetHcclBuffer(c)
        assert ret == 0 and size == 400 * MB
        bufs.append((addr, size))
    grown = _rss_bytes() - before
    assert grown < 64 * MB, f"1.6 GB of HCCL buffers committed {grown / MB:.1f} MB"
    # touching a few pages commits only those pages
    for addr, size in bufs:
        write(addr + size // 2, np.full(4096, 7, dtype=np.uint8))
    grown = _rss_bytes() - before
    assert grown < 64 * MB, f"touching 4 pages committed {grown / MB:.1f} MB"
    for c in comms:
        assert pyhcomm.HcclCommDestroy(c) == 0


def test_hccl_buffer_is_the_same_for_concurrent_first_calls(dev0):
    """Host threads sharing one communicator all get the one HCCL buffer, even when their first
    HcclGetHcclBuffer calls race (repeated on fresh communicators to give the race a chance)."""
    nthreads, trials = 4, 12
    for _ in range(trials):
        ret, comms = pyhcomm.HcclCommInitAll([0])
        assert ret == 0
        comm = comms[0]
        got = []
        start = threading.Barrier(nthreads, timeout=JOIN_TIMEOUT)

        def caller():
            start.wait()
            got.append(pyhcomm.HcclGetHcclBuffer(comm))

        run_threads([caller] * nthreads)
        assert len(got) == nthreads
        assert len(set(got)) == 1, f"concurrent HcclGetHcclBuffer calls returned {sorted(set(got))}"
        assert pyhcomm.HcclGetHcclBuffer(comm) == got[0]
        assert pyhcomm.HcclCommDestroy(comm) == 0
