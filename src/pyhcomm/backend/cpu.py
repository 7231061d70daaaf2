"""The CPU backend: storage in numpy arrays, copies by ``memmove`` spread over the cores.

Small blocks come from ``numpy.zeros``. Blocks of ``LARGE_ALLOC`` bytes or more are anonymous
private mappings advised ``MADV_NOHUGEPAGE``: their pages are committed only when first touched,
4 KiB at a time, so a 400 MB HCCL buffer per rank costs only what is used, even where transparent
huge pages are ``always`` (or numpy asks for them). Copies of at least ``parallel_min`` bytes are
cut into page-aligned chunks copied concurrently by a small pool of OS threads (``memmove`` through
ctypes releases the GIL).
"""
from __future__ import annotations

import ctypes
import mmap
import os
import threading
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
_MAP_FLAGS = (mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
              if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS") else None)


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
        if _MADV_NOHUGEPAGE is not None:
            try:
                m.madvise(_MADV_NOHUGEPAGE)
            except OSError:  # a kernel without THP: its pages are small anyway
                pass
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

    # -- storage -------------------------------------------------------------------------------
    def allocate(self, size: int) -> CpuStorage:
        """Return zero-filled storage of ``size`` bytes (lazily committed, see :func:`zeroed`)."""
        return CpuStorage(zeroed(size))

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
        back to the OS instead (``MADV_DONTNEED``: they read as zeros and cost nothing until touched)."""
        mapping = dst._array.base if dst._array is not None else None
        if value == 0 and n >= LARGE_ALLOC and isinstance(mapping, mmap.mmap) and _MADV_DONTNEED is not None:
            page = mmap.PAGESIZE
            start = -(-off // page) * page
            end = (off + n) // page * page
            try:
                mapping.madvise(_MADV_DONTNEED, start, end - start)
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
