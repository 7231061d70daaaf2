"""The CPU backend: storage in numpy arrays, copies by ``memmove`` spread over the cores.

Small blocks come from ``numpy.zeros``. Blocks of ``LARGE_ALLOC`` bytes or more are anonymous
private mappings advised ``MADV_NOHUGEPAGE``: their pages are committed only when first touched,
4 KiB at a time, so a 400 MB HCCL buffer per rank costs only what is used, even where transparent
huge pages are ``always`` (or numpy asks for them). Copies of at least ``parallel_min`` bytes are
cut into page-aligned chunks copied concurrently by a small pool of OS threads (``memmove`` through
ctypes releases the GIL).

Shared storage (:meth:`CpuBackend.allocate_shared`, for memory another process of this machine
writes into): a memory file (``memfd_create``) mapped shared, 4 KiB pages committed when first
touched; no name in the file system, so nothing is left behind when the processes end. Another
process maps it through ``/proc/<pid>/fd/<fd>`` (:meth:`CpuBackend.attach`).
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes as _ml_dtypes
import numpy as np

from .base import Backend, Storage

_memmove = ctypes.memmove
_memset = ctypes.memset

SMALL_COPY = 1 << 16  # below this a memoryview slice assignment beats a ctypes call
LARGE_ALLOC = 1 << 20  # from this size on, storage is an mmap without transparent huge pages

_MADV_NOHUGEPAGE = getattr(mmap, "MADV_NOHUGEPAGE", None)
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)
_MADV_REMOVE = getattr(mmap, "MADV_REMOVE", None)    # shared memory: DONTNEED would keep the bytes
_MAP_FLAGS = (mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
              if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS") else None)
_MEMFD = hasattr(os, "memfd_create") and hasattr(mmap, "MAP_SHARED") and os.path.isdir("/proc/self/fd")


def _no_huge_pages(m: mmap.mmap) -> None:
    if _MADV_NOHUGEPAGE is not None:
        try:
            m.madvise(_MADV_NOHUGEPAGE)
        except OSError:  # a kernel without THP: its pages are small anyway
            pass


def _mapping_of(array):
    """The ``mmap`` an array's bytes live in, or None (numpy 2 puts a memoryview between)."""
    base = array.base
    base = getattr(base, "obj", base)
    return base if isinstance(base, mmap.mmap) else None


def zeroed(size: int) -> np.ndarray:
    """A zero-filled ``uint8`` array of ``size`` bytes whose pages the OS commits when first touched.

    From ``LARGE_ALLOC`` bytes on (where the platform has them): an anonymous private mmap advised
    ``MADV_NOHUGEPAGE`` (the array's base; unmapped when the array goes). Else ``numpy.zeros``.
    """
    if size >= LARGE_ALLOC and _MAP_FLAGS is not None:
        try:
            m = mmap.mmap(-1, size, flags=_MAP_FLAGS)
        except (OSError, ValueError):
            return np.zeros(size, dtype=np.uint8)
        _no_huge_pages(m)
        return np.frombuffer(m, dtype=np.uint8)
    return np.zeros(size, dtype=np.uint8)


class CpuStorage(Storage):
    """Host bytes: a flat ``uint8`` array and its address.

    Storage of memory the user owns (a numpy array) holds the array only weakly: ``anchor()``
    returns the owning object while it lives (None after), and ``array`` is rebuilt from the address.
    """

    __slots__ = ("_array", "mv")

    def __init__(self, array: np.ndarray, anchor=None):
        if anchor is None:
            Storage.__init__(self, array.__array_interface__["data"][0], array.nbytes, lambda: array)
            self._array = array
            self.mv = memoryview(array) if array.flags.writeable else None  # fast small copies
        else:
            Storage.__init__(self, array.__array_interface__["data"][0], array.nbytes, anchor)
            self._array = None
            self.mv = None

    @property
    def array(self) -> np.ndarray:
        """The bytes as a flat ``uint8`` array; over a user's memory the array keeps its owner
        alive (a view handed out can never outlive the bytes it shows)."""
        if self._array is not None:
            return self._array
        owner = self.anchor()
        if owner is None:
            raise ValueError(f"host memory at 0x{self.addr:x} was released by its owner")
        buf = (ctypes.c_ubyte * self.size).from_address(self.addr)
        buf.owner = owner
        return np.ctypeslib.as_array(buf)


class _SharedMapping:
    """A shared mapping of a memory file and the file's descriptor (the one ``share`` names):
    both go when the last array over the bytes goes. (Made with libc's ``mmap``: Python's
    ``mmap`` keeps a second descriptor of its own.)"""

    __slots__ = ("addr", "size", "fd")

    def __init__(self, fd: int, size: int):
        libc = _libc()
        addr = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            err = ctypes.get_errno()
            raise OSError(err, f"mmap of {size} shared bytes: {os.strerror(err)}")
        self.addr, self.size, self.fd = addr, size, fd

    def madvise(self, advice: int, start: int, length: int) -> None:
        if _libc().madvise(ctypes.c_void_p(self.addr + start), length, advice) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    def array(self) -> np.ndarray:
        buf = (ctypes.c_ubyte * self.size).from_address(self.addr)
        buf.mapping = self           # the array keeps the mapping (and its descriptor) alive
        return np.ctypeslib.as_array(buf)

    def __del__(self):
        try:
            _libc().munmap(ctypes.c_void_p(self.addr), self.size)
            os.close(self.fd)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_LIBC = []


def _libc():
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long)
        libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        _LIBC.append(libc)
    return _LIBC[0]


def _map_shared(fd: int, size: int) -> _SharedMapping:
    """Map ``size`` bytes of memory file ``fd`` shared, without huge pages; on failure ``fd`` is
    closed and ``OSError`` raised."""
    try:
        m = _SharedMapping(fd, size)
    except BaseException:
        os.close(fd)
        raise
    if _MADV_NOHUGEPAGE is not None:
        try:
            m.madvise(_MADV_NOHUGEPAGE, 0, size)
        except OSError:  # a kernel without THP
            pass
    return m


class SharedCpuStorage(CpuStorage):
    """Host bytes in a memory file that another process of this machine can map: ``handle`` is
    ``(pid, fd, st_dev, st_ino, size)`` of the file in the process that made it."""

    __slots__ = ("handle", "mapping")

    def __init__(self, mapping: _SharedMapping, handle: tuple):
        CpuStorage.__init__(self, mapping.array())
        self.handle = handle
        self.mapping = mapping


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class CpuBackend(Backend):
    """Moves bytes with the host CPU.

    Args:
        threads: OS threads that share one big copy (default: the usable cores;
            ``PYHCOMM_COPY_THREADS`` through the Sim's config).
        parallel_min: copies shorter than this run on the calling thread alone.
    """

    name = "cpu"

    def __init__(self, threads: int | None = None, parallel_min: int = 4 << 20):
        self.threads = threads or _default_threads()
        self.parallel_min = parallel_min
        self._pool = None
        self._pool_lock = threading.Lock()
        self._shared_live = 0       # shared storages alive (each holds an fd)

    # -- storage -------------------------------------------------------------------------------
    def allocate(self, size: int) -> CpuStorage:
        """Return zero-filled storage of ``size`` bytes (lazily committed, see :func:`zeroed`)."""
        return CpuStorage(zeroed(size))

    def allocate_shared(self, size: int) -> SharedCpuStorage | None:
        """Zero-filled storage of ``size`` bytes in a memory file another process of this machine
        can map (see the module docstring). None where there is no ``memfd_create`` or ``/proc``,
        for ``size`` 0, when the file cannot be made, and while the shared storages alive hold a
        quarter of the process's file descriptors (each holds one; the rest stay the program's)."""
        if not _MEMFD or size <= 0 or self._shared_live >= _shared_cap():
            return None
        try:
            fd = os.memfd_create("pyhcomm", os.MFD_CLOEXEC)
        except OSError:
            return None
        try:
            os.ftruncate(fd, size)
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        try:
            mapping = _map_shared(fd, size)     # owns fd from here on
        except OSError:
            return None
        storage = SharedCpuStorage(mapping, (os.getpid(), fd, st.st_dev, st.st_ino, size))
        self._shared_live += 1
        weakref.finalize(storage, self._shared_gone)
        return storage

    def _shared_gone(self) -> None:
        self._shared_live -= 1

    def share(self, storage) -> tuple | None:
        """``(pid, fd, st_dev, st_ino, size)`` of shared storage (:meth:`allocate_shared`, or an
        :meth:`attach` of one), else None."""
        return storage.handle if isinstance(storage, SharedCpuStorage) else None

    def attach(self, handle) -> SharedCpuStorage:
        """Map another process's shared storage through ``/proc/<pid>/fd/<fd>``; ``OSError`` where
        it cannot, or when that descriptor is no longer the same memory file (device, inode and
        size must match)."""
        pid, fd, dev, ino, size = handle
        f = os.open(f"/proc/{int(pid)}/fd/{int(fd)}", os.O_RDWR | os.O_CLOEXEC)
        try:
            st = os.fstat(f)
        except OSError:
            os.close(f)
            raise
        if (st.st_dev, st.st_ino, st.st_size) != (dev, ino, size):
            os.close(f)
            raise OSError(errno.ESTALE, f"/proc/{pid}/fd/{fd} is no longer the memory shared as {tuple(handle)}")
        return SharedCpuStorage(_map_shared(f, size), tuple(handle))

    def wrap(self, array: np.ndarray, anchor) -> CpuStorage:
        """Wrap a C-contiguous host array the user owns; ``anchor`` is a weak reference to its owner."""
        return CpuStorage(array.reshape(-1).view(np.uint8), anchor)

    # -- operations ----------------------------------------------------------------------------
    def copy(self, dst: CpuStorage, dst_off: int, src: CpuStorage, src_off: int, n: int) -> None:
        """Copy ``n`` bytes; overlapping ranges behave like ``memmove``."""
        if n < SMALL_COPY:
            dm = dst.mv
            sm = src.mv
            if dm is not None and sm is not None:
                dm[dst_off:dst_off + n] = sm[src_off:src_off + n]  # 3x cheaper than a ctypes call
            else:
                _memmove(dst.addr + dst_off, src.addr + src_off, n)
            return
        d, s = dst.addr + dst_off, src.addr + src_off
        if n < self.parallel_min or self.threads < 2 or (d < s + n and s < d + n):
            _memmove(d, s, n)  # overlapping ranges must not be split
            return
        self._parallel(d, s, n)

    def memset(self, dst: CpuStorage, off: int, value: int, n: int) -> None:
        """Fill ``n`` bytes with ``value``. Zeroing whole pages of a large mapping gives the pages
        back to the OS instead (``MADV_DONTNEED``, ``MADV_REMOVE`` for shared storage, in every
        process that maps it: they read as zeros and cost nothing until touched)."""
        mapping = advice = None
        if value == 0 and n >= LARGE_ALLOC:
            if isinstance(dst, SharedCpuStorage):
                mapping, advice = dst.mapping, _MADV_REMOVE
            elif dst._array is not None:
                mapping, advice = _mapping_of(dst._array), _MADV_DONTNEED
        if mapping is not None and advice is not None:
            page = mmap.PAGESIZE
            start = -(-off // page) * page
            end = (off + n) // page * page
            try:
                mapping.madvise(advice, start, end - start)
            except OSError:
                start = end = off + n          # could not discard: write the zeros
            _memset(dst.addr + off, 0, start - off)
            _memset(dst.addr + end, 0, off + n - end)
            return
        _memset(dst.addr + off, value, n)

    def _parallel(self, d: int, s: int, n: int) -> None:
        parts = min(self.threads, max(2, n // (self.parallel_min // 2)))
        chunk = (n // parts + 4095) & ~4095
        pool = self._get_pool()
        futures = []
        off = chunk
        while off < n:
            size = min(chunk, n - off)
            futures.append(pool.submit(_memmove, d + off, s + off, size))
            off += chunk
        _memmove(d, s, min(chunk, n))
        for f in futures:
            f.result()

    def _get_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self.threads - 1,
                                                    thread_name_prefix="pyhcomm-copy")
        return self._pool

    def reduce(self, dst: CpuStorage, dst_off: int, src: CpuStorage, src_off: int, count: int, np_dtype,
               op: int) -> None:
        """Reduce in place: ``dst[i] = op(dst[i], src[i])`` for ``count`` elements of ``np_dtype``.

        ``op`` is an ``HcommReduceOp`` value (0 SUM, 1 PROD, 2 MAX, 3 MIN). Integers wrap (two's
        complement, as the hardware's adders; no saturation). Floats narrower than 32 bits (fp16,
        bf16, fp8) are computed in float32 and rounded once to their type (round to nearest even);
        MAX/MIN propagate NaN as ``numpy.maximum``/``numpy.minimum``. Large reduces run in chunks
        of ``REDUCE_CHUNK`` elements on the calling thread; ``dst`` and ``src`` may be the same
        range, not partially overlapping ones.
        """
        if count == 0:
            return
        info = _DTYPE_INFO.get(np_dtype)
        if info is None:
            dt = np.dtype(np_dtype)
            info = _DTYPE_INFO[np_dtype] = (dt, _reduce_compute_dtype(dt))
        dt, wide = info
        ufunc = _REDUCE_UFUNCS[int(op)]
        n = count * dt.itemsize
        d = dst.array[dst_off:dst_off + n].view(dt)
        s = src.array[src_off:src_off + n].view(dt)
        step = REDUCE_CHUNK
        with np.errstate(all="ignore"):
            if wide is None and count <= step:   # the common case: one ufunc call
                ufunc(d, s, out=d)
                return
            for i in range(0, count, step):
                dc, sc = d[i:i + step], s[i:i + step]
                if wide is None:
                    ufunc(dc, sc, out=dc)
                else:
                    acc = dc.astype(wide)
                    ufunc(acc, sc.astype(wide), out=acc)
                    dc[...] = acc.astype(dt)

    # -- host access ---------------------------------------------------------------------------
    def to_host(self, storage: CpuStorage, off: int, n: int) -> bytes:
        """Return a copy of ``n`` bytes at ``storage + off``."""
        mv = storage.mv
        if mv is not None:
            return mv[off:off + n].tobytes()
        return storage.array[off:off + n].tobytes()

    def from_host(self, storage: CpuStorage, off: int, data) -> None:
        """Copy bytes-like ``data`` to ``storage + off`` (``data`` may overlap the destination)."""
        if isinstance(data, np.ndarray):
            src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            src = np.frombuffer(data, dtype=np.uint8)
        np.copyto(storage.array[off:off + src.nbytes], src)  # numpy handles overlap

    def view(self, storage: CpuStorage, off: int, n: int, dtype=None) -> np.ndarray:
        """A live ``dtype`` array over ``n`` bytes at ``storage + off`` (``ValueError`` once a user
        array's owner was released, or where ``n`` is not a multiple of the dtype's size)."""
        a = storage.array[off:off + n]
        return a if dtype is None else a.view(dtype)


def _shared_cap() -> int:
    """How many shared storages may live at once: a quarter of the file descriptor limit."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - non-Unix
        return 256
    return 1 << 20 if soft == resource.RLIM_INFINITY else max(16, soft // 4)


# -- element-wise reduction (CpuBackend.reduce) ------------------------------------------------

#: Elements per chunk of a reduce (bounds the float32 temporaries of narrow float types).
REDUCE_CHUNK = 1 << 20

#: ufunc by ``HcommReduceOp`` value.
_REDUCE_UFUNCS = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum}

#: Float types narrower than float32: reduced in float32, rounded once.
_NARROW_FLOATS = frozenset(np.dtype(t) for t in (
    [np.float16] + [getattr(_ml_dtypes, name) for name in
                    ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz",
                     "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4",
                     "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
                    if hasattr(_ml_dtypes, name)]))


#: numpy dtype (or type) -> ``(numpy dtype, compute dtype or None)``, for :meth:`CpuBackend.reduce`.
_DTYPE_INFO: dict = {}


def _reduce_compute_dtype(dt: np.dtype):
    """The dtype a reduce of ``dt`` computes in: float32 for narrow floats, else None (itself)."""
    return np.dtype(np.float32) if dt in _NARROW_FLOATS else None
