"""The CPU backend: storage in numpy arrays, copies by ``memmove`` spread over the cores.

Memory comes from ``numpy.zeros`` (``calloc``): large blocks are anonymous mappings whose pages
are committed only when first touched, so a 400 MB HCCL buffer per rank costs nothing until used.
Copies of at least ``parallel_min`` bytes are cut into page-aligned chunks copied concurrently by a
small pool of OS threads (``memmove`` through ctypes releases the GIL).
"""
from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_memmove = ctypes.memmove
_memset = ctypes.memset

ENV_COPY_THREADS = "PYHCOMM_COPY_THREADS"


class Storage:
    """The bytes behind one allocation: a flat ``uint8`` array and its host address.

    Storage of memory the user owns (a numpy array) holds the array only weakly: ``anchor()``
    returns the owning object while it lives (None after), and ``array`` is rebuilt from the address.
    """

    __slots__ = ("_array", "addr", "size", "anchor", "__weakref__")

    def __init__(self, array: np.ndarray, anchor=None):
        self.size = array.nbytes
        self.addr = array.__array_interface__["data"][0]
        if anchor is None:
            self._array = array
            self.anchor = lambda: array
        else:
            self._array = None
            self.anchor = anchor

    @property
    def array(self) -> np.ndarray:
        if self._array is not None:
            return self._array
        if self.anchor() is None:
            raise ValueError(f"host memory at 0x{self.addr:x} was released by its owner")
        return np.ctypeslib.as_array((ctypes.c_ubyte * self.size).from_address(self.addr))


def _default_threads() -> int:
    env = os.environ.get(ENV_COPY_THREADS)
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class CpuBackend:
    """Moves bytes with the host CPU.

    Args:
        threads: OS threads that share one big copy (default: the usable cores, or
            ``PYHCOMM_COPY_THREADS``).
        parallel_min: copies shorter than this run on the calling thread alone.
    """

    name = "cpu"

    def __init__(self, threads: int | None = None, parallel_min: int = 4 << 20):
        self.threads = threads or _default_threads()
        self.parallel_min = parallel_min
        self._pool = None
        self._pool_lock = threading.Lock()

    # -- storage -------------------------------------------------------------------------------
    def allocate(self, size: int) -> Storage:
        """Return zero-filled storage of ``size`` bytes (lazily committed by the OS)."""
        return Storage(np.zeros(size, dtype=np.uint8))

    def wrap(self, array: np.ndarray, anchor) -> Storage:
        """Wrap a C-contiguous host array the user owns; ``anchor`` is a weak reference to its owner."""
        return Storage(array.reshape(-1).view(np.uint8), anchor)

    # -- operations ----------------------------------------------------------------------------
    def copy(self, dst: Storage, dst_off: int, src: Storage, src_off: int, n: int) -> None:
        """Copy ``n`` bytes; overlapping ranges behave like ``memmove``."""
        if n < self.parallel_min or self.threads < 2:
            _memmove(dst.addr + dst_off, src.addr + src_off, n)
            return
        d, s = dst.addr + dst_off, src.addr + src_off
        if d < s + n and s < d + n:  # overlapping ranges must not be split
            _memmove(d, s, n)
            return
        self._parallel(d, s, n)

    def memset(self, dst: Storage, off: int, value: int, n: int) -> None:
        """Fill ``n`` bytes with ``value``."""
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
