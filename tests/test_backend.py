"""The backends on their own: the base class's hooks, CpuBackend's operations and its lazily
committed large storage (no transparent huge pages), and NullBackend (no data)."""
import gc
import mmap
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import pyhcomm

from pyhcomm.backend import Backend, CpuBackend, NoDataError, NullBackend, Storage
from pyhcomm.backend import cpu as cpu_mod
from pyhcomm.sim import memory
from pyhcomm.errors import HcclError

MiB = 1 << 20
HOOKS = {
    "allocate": (16,), "wrap": (np.zeros(4, np.uint8), None), "attach": ((1, 3, 0, 0, 16),),
    "copy": (None, 0, None, 0, 1), "memset": (None, 0, 0, 1),
    "reduce": (None, 0, None, 0, 1, np.float32, 0), "to_host": (None, 0, 1),
    "from_host": (None, 0, b"x"), "view": (None, 0, 1, np.uint8),
}
HAVE_PROC = os.path.exists("/proc/self/statm")
needs_proc = pytest.mark.skipif(not HAVE_PROC, reason="needs /proc (Linux)")


def rss() -> int:
    """Resident bytes of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def vm_flags(addr: int) -> list[str]:
    """The ``VmFlags`` of the mapping that holds ``addr`` (``/proc/self/smaps``)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= addr < end
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds 0x{addr:x}")


# -- the base class ----------------------------------------------------------------------------
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_base_hooks_say_what_the_backend_needs(hook):
    class Gpu(Backend):
        name = "gpu"

    with pytest.raises(NotImplementedError, match=f"^gpu: needs {hook}$"):
        getattr(Gpu(), hook)(*HOOKS[hook])
    with pytest.raises(NotImplementedError, match=f"^backend: needs {hook}$"):
        getattr(Backend(), hook)(*HOOKS[hook])


def test_each_sim_owns_its_backend_and_data_less_mode_has_none():
    assert issubclass(CpuBackend, Backend) and issubclass(NullBackend, Backend)
    assert isinstance(pyhcomm.current_sim().backend, CpuBackend)
    assert pyhcomm.Sim().backend is not pyhcomm.current_sim().backend
    assert isinstance(pyhcomm.Sim(data=False).backend, NullBackend)
    assert CpuBackend.name == "cpu" and NullBackend.name == "null"


# -- CpuBackend: operations --------------------------------------------------------------------
@pytest.fixture
def cpu():
    be = CpuBackend(threads=2, parallel_min=1 << 17)
    yield be
    if be._pool is not None:
        be._pool.shutdown()


@pytest.mark.parametrize("n", [0, 1, 256, cpu_mod.SMALL_COPY - 1, cpu_mod.SMALL_COPY, 3 << 17])
def test_cpu_copy_between_storages(cpu, n):
    src, dst = cpu.allocate(n + 64), cpu.allocate(n + 64)
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    cpu.from_host(src, 5, data)
    cpu.copy(dst, 9, src, 5, n)
    assert cpu.to_host(dst, 9, n) == data.tobytes()
    assert cpu.to_host(dst, 0, 9) == bytes(9) and cpu.to_host(dst, 9 + n, 55) == bytes(55)


@pytest.mark.parametrize("n", [200, 3 << 17])  # the memoryview path and the memmove path
@pytest.mark.parametrize("shift", [-7, 7])
def test_cpu_copy_overlapping_is_memmove(cpu, n, shift):
    st = cpu.allocate(n + 64)
    ref = np.random.default_rng(1).integers(0, 256, n + 64, dtype=np.uint8)
    cpu.from_host(st, 0, ref)
    cpu.copy(st, 20 + shift, st, 20, n)
    want = ref.copy()
    want[20 + shift:20 + shift + n] = ref[20:20 + n]
    assert (cpu.view(st, 0, n + 64) == want).all()


def test_cpu_copy_with_user_arrays_small_and_large(cpu):
    for n in (100, 1 << 18):
        arr = np.arange(n, dtype=np.uint64).view(np.uint8)[:n].copy()
        user = cpu.wrap(arr, weakref.ref(arr))
        dev = cpu.allocate(n)
        cpu.copy(dev, 0, user, 0, n)         # user storage has no memoryview: memmove
        assert cpu.to_host(dev, 0, n) == arr.tobytes()
        cpu.memset(dev, 1, 0xAB, n - 2)
        cpu.copy(user, 0, dev, 0, n)
        assert arr[0] == 0 and (arr[1:n - 1] == 0xAB).all()


def test_cpu_memset_view_and_host_access(cpu):
    st = cpu.allocate(64)
    cpu.memset(st, 8, 0x7F, 16)
    assert cpu.to_host(st, 0, 32) == bytes(8) + b"\x7f" * 16 + bytes(8)
    v = cpu.view(st, 8, 16, np.int32)
    assert v.dtype == np.int32 and v.shape == (4,) and (v == 0x7F7F7F7F).all()
    v[0] = -1                                 # a live view
    assert cpu.to_host(st, 8, 4) == b"\xff" * 4
    assert cpu.view(st, 0, 64).dtype == np.uint8
    with pytest.raises(ValueError):
        cpu.view(st, 0, 6, np.int32)          # not a whole number of elements
    cpu.from_host(st, 40, b"abc")
    cpu.from_host(st, 43, bytearray(b"de"))
    cpu.from_host(st, 45, memoryview(np.array([0x6766], np.uint16)))
    cpu.from_host(st, 47, np.array([[104], [105]], np.uint8))
    assert cpu.to_host(st, 40, 9) == b"abcdefghi"
    cpu.from_host(st, 42, cpu.view(st, 40, 6))  # overlapping source
    assert cpu.to_host(st, 40, 8) == b"ababcdef"
    assert isinstance(cpu.to_host(st, 0, 4), bytes)


def test_cpu_reduce_through_the_interface(cpu):
    d, s = cpu.allocate(40), cpu.allocate(40)
    cpu.from_host(d, 0, np.arange(10, dtype=np.float32))
    cpu.from_host(s, 0, np.full(10, 2, np.float32))
    cpu.reduce(d, 0, s, 0, 10, np.float32, 0)
    assert (cpu.view(d, 0, 40, np.float32) == np.arange(10) + 2).all()


def test_cpu_wrap_follows_the_owner(cpu):
    arr = np.arange(8, dtype=np.int16)
    st = cpu.wrap(arr, weakref.ref(arr))
    assert isinstance(st, Storage)
    assert (st.addr, st.size, st.anchor()) == (arr.ctypes.data, 16, arr)
    assert (cpu.view(st, 0, 16, np.int16) == arr).all()
    cpu.from_host(st, 0, np.array([9], np.int16))
    assert arr[0] == 9
    del arr
    gc.collect()
    assert st.anchor() is None
    with pytest.raises(ValueError, match="released by its owner"):
        cpu.view(st, 0, 16)


def test_a_host_registration_whose_owner_dies_inside_a_map_change_is_removed_without_waiting():
    """The finalizer of a registered host array runs wherever a collection happens, also inside
    the host map's own change on the same thread: it must not wait for the map's lock (that wait
    was forever); the registration goes at once, or at the map's next change."""
    space = pyhcomm.current_sim().memory
    arr = np.arange(64, dtype=np.uint8)
    addr = memory.register_host_array(arr)
    alloc = space.host_map.exact(addr)
    assert alloc is not None
    with space.host_map._lock:          # a collection inside add(): the lock is this thread's
        space.host_map.discard(alloc)
    assert space.host_map.exact(addr) is alloc
    other = np.arange(32, dtype=np.uint8)
    memory.register_host_array(other)   # the next change removes it
    assert space.host_map.exact(addr) is None
    gone = np.arange(16, dtype=np.uint8)
    gone_addr = memory.register_host_array(gone)
    del gone
    gc.collect()                        # the lock is free: removed at once
    assert space.host_map.exact(gone_addr) is None


# -- CpuBackend: large storage -----------------------------------------------------------------
def test_cpu_large_storage_is_a_zeroed_mapping_small_is_numpy(cpu):
    small, large = cpu.allocate(cpu_mod.LARGE_ALLOC - 1), cpu.allocate(cpu_mod.LARGE_ALLOC)
    assert not isinstance(small.array.base, mmap.mmap)
    if cpu_mod._MAP_FLAGS is not None:
        base = large.array.base
        assert isinstance(getattr(base, "obj", base), mmap.mmap)  # numpy 2 puts a memoryview between
        assert large.addr % mmap.PAGESIZE == 0
    for st in (small, large):
        assert st.size == st.array.size and st.array.flags.writeable and not st.array.any()
    assert cpu.allocate(0).size == 0


@needs_proc
def test_cpu_large_storage_has_no_huge_pages(cpu):
    if cpu_mod._MADV_NOHUGEPAGE is None or not os.path.exists("/proc/self/smaps"):
        pytest.skip("no MADV_NOHUGEPAGE or no /proc/self/smaps here")
    st = cpu.allocate(8 * MiB)
    assert "nh" in vm_flags(st.addr)           # madvise(MADV_NOHUGEPAGE) took


@needs_proc
def test_cpu_400mb_buffer_commits_only_the_touched_pages(cpu):
    """A 400 MB HCCL buffer, 1 KiB written at 64 spread offsets: 4 KiB pages, not 2 MB ones."""
    gc.collect()
    before = rss()
    st = cpu.allocate(400 * 10**6)
    step = st.size // 64
    for i in range(64):
        cpu.from_host(st, i * step + 100, b"\x5a" * 1024)
    grown = rss() - before
    print(f"RSS grew by {grown / MiB:.2f} MiB")
    assert grown < 16 * MiB, f"RSS grew by {grown / MiB:.1f} MiB for 64 KiB written"
    assert cpu.to_host(st, 7 * step + 100, 1024) == b"\x5a" * 1024
    assert cpu.to_host(st, 7 * step + 1124, 64) == bytes(64)   # the rest reads zero


@needs_proc
def test_cpu_large_storage_is_unmapped_when_dropped(cpu):
    gc.collect()
    before = rss()
    st = cpu.allocate(64 * MiB)
    cpu.memset(st, 0, 1, st.size)              # commit every page
    assert rss() - before > 48 * MiB
    kept = cpu.view(st, 4096, 8)               # a view keeps the mapping alive
    del st
    gc.collect()
    assert (kept == 1).all()
    del kept
    gc.collect()
    assert rss() - before < 16 * MiB


# -- CpuBackend: shared storage (another process maps it) ---------------------------------------
needs_memfd = pytest.mark.skipif(not cpu_mod._MEMFD, reason="needs memfd_create and /proc (Linux)")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@needs_memfd
def test_cpu_shared_storage_is_written_by_another_process(cpu):
    """Another process maps the storage through /proc/<pid>/fd/<fd> and writes into it: the
    bytes land here, in place; it reads what this process wrote."""
    st = cpu.allocate_shared(3 * MiB)
    assert st.size == 3 * MiB and not cpu.view(st, 0, st.size).any()
    handle = cpu.share(st)
    assert handle[0] == os.getpid() and handle[-1] == 3 * MiB
    cpu.from_host(st, 5, b"from here")
    child = ("import sys; from pyhcomm.backend import CpuBackend; be = CpuBackend(); "
             "st = be.attach(eval(sys.argv[1])); print(be.to_host(st, 5, 9).decode()); "
             "be.from_host(st, 2 * 2**20 + 1, b'from there')")
    out = subprocess.run([sys.executable, "-c", child, repr(handle)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "from here"
    assert cpu.to_host(st, 2 * MiB + 1, 10) == b"from there"


@needs_memfd
def test_cpu_shared_400mb_buffer_commits_only_the_touched_pages(cpu):
    gc.collect()
    before = rss()
    st = cpu.allocate_shared(400 * 10**6)
    step = st.size // 64
    for i in range(64):
        cpu.from_host(st, i * step + 100, b"\x5a" * 1024)
    grown = rss() - before
    assert grown < 16 * MiB, f"RSS grew by {grown / MiB:.1f} MiB for 64 KiB written"
    assert "nh" in vm_flags(st.addr)


@needs_memfd
def test_cpu_attached_storage_shares_bytes_and_zeroing_reaches_every_mapping(cpu):
    st = cpu.allocate_shared(4 * MiB)
    peer = cpu.attach(cpu.share(st))
    assert peer.addr != st.addr and cpu.share(peer) == cpu.share(st)
    cpu.memset(st, 0, 0x5A, st.size)
    assert (cpu.view(peer, 0, st.size) == 0x5A).all()
    cpu.memset(peer, 100, 0, 3 * MiB)            # whole pages given back (MADV_REMOVE), the edges written
    whole = cpu.view(st, 0, st.size)
    assert (whole[:100] == 0x5A).all() and not whole[100:100 + 3 * MiB].any()
    assert (whole[100 + 3 * MiB:] == 0x5A).all()
    cpu.copy(peer, 8, st, 0, 4)                  # the operations take either side
    cpu.reduce(st, 0, peer, 0, 1, np.uint32, 0)
    assert cpu.to_host(st, 0, 4) == bytes([0xB4] * 4) and cpu.to_host(peer, 8, 4) == b"\x5a" * 4


@needs_memfd
def test_cpu_shared_storage_holds_one_descriptor_until_its_last_view_goes(cpu):
    gc.collect()
    before = _fds()
    st = cpu.allocate_shared(64 * 1024)
    peer = cpu.attach(cpu.share(st))
    assert _fds() == before + 2
    kept = cpu.view(peer, 0, 8)
    del peer
    gc.collect()
    assert _fds() == before + 2                  # a view keeps its mapping (and descriptor)
    del kept
    gc.collect()
    assert _fds() == before + 1
    del st
    gc.collect()
    assert _fds() == before


@needs_memfd
def test_cpu_attach_refuses_a_handle_that_names_other_bytes(cpu):
    st = cpu.allocate_shared(8192)
    pid, fd, dev, ino, size = cpu.share(st)
    with pytest.raises(OSError, match="no longer the memory shared"):
        cpu.attach((pid, fd, dev, ino + 1, size))
    with pytest.raises(OSError, match="no longer the memory shared"):
        cpu.attach((pid, fd, dev, ino, size * 2))
    with pytest.raises(OSError):
        cpu.attach((pid, 10**6, dev, ino, size))   # no such descriptor
    del st
    gc.collect()
    with pytest.raises(OSError):
        cpu.attach((pid, fd, dev, ino, size))      # freed: the descriptor is closed (or another file)


def test_cpu_shared_storage_is_refused_where_it_cannot_be_had(cpu, monkeypatch):
    assert cpu.allocate_shared(0) is None
    assert cpu.share(cpu.allocate(64)) is None
    monkeypatch.setattr(cpu_mod, "_shared_cap", lambda: 1)
    if cpu_mod._MEMFD:
        first = cpu.allocate_shared(64)
        assert first is not None and cpu.allocate_shared(64) is None   # a quarter of the descriptors at most
        del first
        gc.collect()
        assert cpu.allocate_shared(64) is not None
    monkeypatch.setattr(cpu_mod, "_MEMFD", False)
    assert cpu.allocate_shared(64) is None
    assert Backend().allocate_shared(64) is None and Backend().share(None) is None
    assert NullBackend().allocate_shared(64) is None


# -- NullBackend --------------------------------------------------------------------------------
def test_null_storage_has_size_and_distinct_addresses():
    be = NullBackend()
    a, b, z = be.allocate(400 * 10**6), be.allocate(4096), be.allocate(0)
    assert (a.size, b.size, z.size) == (400 * 10**6, 4096, 0)
    assert isinstance(a, Storage) and all(s.addr for s in (a, b, z))
    assert a.addr + a.size <= b.addr or b.addr + b.size <= a.addr
    assert len({a.addr, b.addr, z.addr}) == 3


@needs_proc
def test_null_storage_commits_no_memory():
    be = NullBackend()
    gc.collect()
    before = rss()
    stores = [be.allocate(400 * 10**6) for _ in range(8)]   # 3.2 GB
    for st in stores:
        be.memset(st, 0, 1, st.size)
        be.copy(st, 0, stores[0], 0, st.size)
        be.from_host(st, 0, b"\x01" * 4096)
    grown = rss() - before
    print(f"RSS grew by {grown / MiB:.2f} MiB")
    assert grown < 4 * MiB


def test_null_operations_do_nothing():
    be = NullBackend()
    arr = np.arange(16, dtype=np.float32)
    user = be.wrap(arr, weakref.ref(arr))
    dev = be.allocate(64)
    be.copy(user, 0, dev, 0, 64)
    be.memset(user, 0, 0xFF, 64)
    be.reduce(user, 0, dev, 0, 16, np.float32, 0)
    be.from_host(user, 0, np.zeros(16, np.float32))
    assert (arr == np.arange(16)).all()       # the user's bytes are not touched


@pytest.mark.parametrize("hook,args", [("to_host", (0, 4)), ("view", (0, 4, np.uint8))])
def test_null_reads_say_there_is_no_data(hook, args):
    be = NullBackend()
    for st in (be.allocate(16), be.wrap(np.zeros(4, np.uint8), None)):
        with pytest.raises(NoDataError, match=r"without data \(PYHCOMM_DATA=0\)") as info:
            getattr(be, hook)(st, *args)
        assert isinstance(info.value, ValueError) and isinstance(info.value, HcclError)
        assert f"null backend: {hook}" in str(info.value)


def test_null_wrap_registers_user_arrays():
    be = NullBackend()
    arr = np.arange(10, dtype=np.int32)
    st = be.wrap(arr, weakref.ref(arr))
    assert (st.addr, st.size, st.anchor()) == (arr.ctypes.data, 40, arr)
    assert be.wrap(arr[::1].reshape(2, 5), None).anchor() is not None

    sim = pyhcomm.reset(data=False)                    # a Sim without data owns a NullBackend
    assert isinstance(sim.backend, NullBackend)
    host_map = sim.memory.host_map
    ptr = memory.register_host_array(arr)
    alloc = host_map.find(ptr)
    assert ptr == arr.ctypes.data and alloc is not None and alloc.size == 40
    assert host_map.find(ptr + 39) is alloc
    host = memory.alloc_host(1 << 20)
    assert host_map.find(host.addr + 1000) is host and host.storage.size == 1 << 20
    memory.free_host(host)
    del arr, alloc
    gc.collect()
    assert host_map.find(ptr) is None


def test_a_new_array_where_a_collected_one_still_waits_for_its_removal_is_registered_afresh():
    """Another thread was changing the host map when a registered array died: its registration
    waits for the map's next change. A new array at the same address (the allocator gives the
    bytes out again) must not be taken for the dead one: registering it replaces the stale entry,
    and the bytes are readable (was: ``released by its owner``)."""
    import ctypes
    space = pyhcomm.current_sim().memory
    raw = (ctypes.c_ubyte * 256)()
    first = np.ctypeslib.as_array(raw)
    addr = memory.register_host_array(first)
    with space.host_map._lock:          # another thread's add() in progress: the removal waits
        del first
        gc.collect()
    stale = space.host_map.exact(addr)
    assert stale is not None and stale.storage.anchor() is None
    second = np.ctypeslib.as_array(raw)
    second[:] = 7
    assert memory.register_host_array(second) == addr
    alloc = space.host_map.exact(addr)
    assert alloc is not stale and alloc.storage.anchor() is second
    assert memory.read_host(addr, 4) == b"\x07" * 4
