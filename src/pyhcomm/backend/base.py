"""The interface every backend implements: storage and the raw operations on it.

The core (memory maps, tasks, the API tiers) never touches a storage's bytes itself: it keeps the
:class:`Storage` a backend gave it in an allocation and passes it back to that backend's methods.
Offsets and lengths are in bytes and already checked by the caller (in range, non-negative), except
where a method says otherwise.
"""
from __future__ import annotations


class Storage:
    """The bytes behind one allocation, as the core sees them.

    ``addr`` is the host address the bytes start at (the allocation's address for host memory),
    ``size`` their length, and ``anchor()`` returns the object that owns them while it lives (None
    once it is gone). A backend subclasses this to hold its own handle on the bytes.
    """

    __slots__ = ("addr", "size", "anchor", "__weakref__")

    def __init__(self, addr: int, size: int, anchor):
        self.addr = addr
        self.size = size
        self.anchor = anchor


class Backend:
    """Moves bytes: the core decides *what* moves, a backend decides *how*.

    Every hook of this base class raises ``NotImplementedError``; a backend overrides them all
    (or leaves one raising, where it cannot provide it).
    """

    name = "backend"

    def _missing(self, hook: str):
        return NotImplementedError(f"{self.name}: needs {hook}")

    # -- storage -------------------------------------------------------------------------------
    def allocate(self, size: int) -> Storage:
        """Return zero-filled storage of ``size`` bytes; it is freed when the last reference to it goes."""
        raise self._missing("allocate")

    def allocate_host(self, size: int) -> Storage:
        """Host memory of ``size`` bytes (``aclrtMallocHost``); by default as :meth:`allocate`."""
        return self.allocate(size)

    def allocate_shared(self, size: int) -> Storage | None:
        """Zero-filled storage of ``size`` bytes that another process of this machine can map
        (:meth:`share`, then :meth:`attach` there), freed as :meth:`allocate`'s; None where this
        backend cannot give such storage now (the caller then takes :meth:`allocate`'s)."""
        return None

    def share(self, storage: Storage):
        """A picklable handle by which another process of this machine maps ``storage``
        (:meth:`attach`); None when it cannot (storage not from :meth:`allocate_shared`)."""
        return None

    def attach(self, handle) -> Storage:
        """Map storage another process of this machine shared (``handle``: its :meth:`share`):
        writes through the result land in that process's bytes, which stay mapped while the
        result lives. Raises ``OSError`` where it cannot (another machine, the owner gone, no
        permission, a handle that names other bytes now)."""
        raise self._missing("attach")

    def wrap(self, array, anchor) -> Storage:
        """Return storage over a C-contiguous host array the user owns (no copy).

        ``anchor`` is a callable (a weak reference) returning the array's owner, or None once the
        owner was released; the storage must not keep the owner alive through it.
        """
        raise self._missing("wrap")

    # -- operations ----------------------------------------------------------------------------
    def copy(self, dst: Storage, dst_off: int, src: Storage, src_off: int, n: int) -> None:
        """Copy ``n`` bytes from ``src + src_off`` to ``dst + dst_off``; overlapping ranges behave like ``memmove``."""
        raise self._missing("copy")

    def memset(self, dst: Storage, off: int, value: int, n: int) -> None:
        """Fill ``n`` bytes at ``dst + off`` with the byte ``value`` (0..255)."""
        raise self._missing("memset")

    def reduce(self, dst: Storage, dst_off: int, src: Storage, src_off: int, count: int, np_dtype,
               op: int) -> None:
        """Reduce in place: ``dst[i] = op(dst[i], src[i])`` for ``count`` elements of ``np_dtype``.

        ``op`` is an ``HcommReduceOp`` value (0 SUM, 1 PROD, 2 MAX, 3 MIN); ``dst`` and ``src``
        may be the same range, not partially overlapping ones.
        """
        raise self._missing("reduce")

    # -- host access ---------------------------------------------------------------------------
    def to_host(self, storage: Storage, off: int, n: int) -> bytes:
        """Return a copy of ``n`` bytes at ``storage + off`` (later writes do not change it)."""
        raise self._missing("to_host")

    def from_host(self, storage: Storage, off: int, data) -> None:
        """Copy bytes-like ``data`` (bytes, memoryview, numpy array ...) to ``storage + off``.

        ``data`` may overlap the destination (it may be a view of another host storage).
        """
        raise self._missing("from_host")

    def view(self, storage: Storage, off: int, n: int, dtype=None):
        """Return a live numpy array over ``n`` bytes at ``storage + off`` as ``dtype`` (default uint8).

        Writes through the array change the storage. A backend whose bytes are not host memory
        raises an error that says so. ``n`` must be a multiple of the dtype's size.
        """
        raise self._missing("view")
