"""Simulated memory: device address spaces, host memory, and address lookup.

Device addresses are synthetic and deterministic: device ``d`` allocates upwards from
``DEVICE_VA_BASE + d * DEVICE_VA_STRIDE``; addresses are never reused, so a stale pointer to freed
memory is always recognised. Host memory (``aclrtMallocHost`` and numpy arrays handed out through
``acl.util.numpy_to_ptr``) keeps its real process address, as on a real machine.

Every check that a pointer lies wholly inside one live allocation goes through :func:`resolve`.
"""
from __future__ import annotations

import bisect
import threading
import weakref

import numpy as np

from . import current_sim

DEVICE_VA_BASE = 0x12C0_0000_0000
DEVICE_VA_STRIDE = 0x0100_0000_0000   # 1 TiB of address space per device
ALLOC_ALIGN = 512                      # every start is 512-byte aligned (>= the 64 ACL promises)
ALLOC_GAP = 512                        # no two allocations touch: overruns never land in a neighbour

DEVICE = "device"
HOST = "host"


class Allocation:
    """One allocation: ``[addr, end)`` backed by ``storage`` on ``device`` (None for host)."""

    __slots__ = ("addr", "size", "end", "device", "kind", "storage", "owner", "policy", "module_id",
                 "freed", "__weakref__")

    def __init__(self, addr, size, device, kind, storage, owner="user", policy=0, module_id=None):
        self.addr = addr
        self.size = size
        self.end = addr + size
        self.device = device
        self.kind = kind
        self.storage = storage
        self.owner = owner
        self.policy = policy
        self.module_id = module_id
        self.freed = False

    def __repr__(self):
        where = f"device {self.device}" if self.kind == DEVICE else "host"
        return f"<Allocation 0x{self.addr:x} {self.size} B on {where} ({self.owner})>"


class MemoryMap:
    """Sorted, non-overlapping allocations; lookups are lock-free (copy-on-write lists)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._table = ((), ())  # (starts, allocations)
        self._dead: list = []   # allocations to remove at the next change (see discard)

    def add(self, alloc: Allocation) -> None:
        with self._lock:
            starts, allocs = self._table
            i = bisect.bisect_left(starts, alloc.addr)
            self._table = (starts[:i] + (alloc.addr,) + starts[i:], allocs[:i] + (alloc,) + allocs[i:])
            self._purge()

    def remove(self, alloc: Allocation) -> bool:
        with self._lock:
            removed = self._remove(alloc)
            self._purge()
            return removed

    def discard(self, alloc: Allocation) -> None:
        """Remove ``alloc`` now, or at the next change when the map is being changed: for a
        finalizer, which runs wherever a collection happens, also inside :meth:`add` on the same
        thread (waiting for the lock there would wait forever)."""
        self._dead.append(alloc)
        if self._lock.acquire(blocking=False):
            try:
                self._purge()
            finally:
                self._lock.release()

    def _purge(self) -> None:
        dead = self._dead
        while dead:
            self._remove(dead.pop())

    def _remove(self, alloc: Allocation) -> bool:
        starts, allocs = self._table
        i = bisect.bisect_left(starts, alloc.addr)
        if i == len(starts) or allocs[i] is not alloc:
            return False
        self._table = (starts[:i] + starts[i + 1:], allocs[:i] + allocs[i + 1:])
        return True

    def find(self, addr: int):
        """Return the allocation containing ``addr``, or None."""
        starts, allocs = self._table
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0:
            a = allocs[i]
            if addr < a.end:
                return a
        return None

    def within(self, lo: int, hi: int) -> tuple:
        """The allocations starting in ``[lo, hi)``, in address order."""
        starts, allocs = self._table
        return allocs[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]

    def exact(self, addr: int):
        """Return the allocation starting exactly at ``addr``, or None."""
        a = self.find(addr)
        return a if a is not None and a.addr == addr else None

    def __iter__(self):
        return iter(self._table[1])

    def __len__(self):
        return len(self._table[1])


class AddressSpace:
    """The memory of one Sim: live device allocations of every device, live host allocations,
    freed device ranges (to explain stale pointers), and each device's next free address."""

    def __init__(self):
        self.device_map = MemoryMap()
        self.host_map = MemoryMap()
        self.freed_map = MemoryMap()
        self.next_lock = threading.Lock()
        self.next_addr: dict[int, int] = {}


def _space() -> AddressSpace:
    return current_sim().memory


def _reserve(device: int, size: int, align: int = ALLOC_ALIGN) -> int:
    space = _space()
    with space.next_lock:
        base = space.next_addr.get(device, DEVICE_VA_BASE + device * DEVICE_VA_STRIDE)
        addr = (base + align - 1) & ~(align - 1)
        end = addr + size
        if end > DEVICE_VA_BASE + (device + 1) * DEVICE_VA_STRIDE:
            return 0
        space.next_addr[device] = end + ALLOC_GAP
        return addr


def _device_span(device: int) -> tuple:
    """``[lo, hi)``: the addresses of ``device`` (every allocation of it lies inside)."""
    lo = DEVICE_VA_BASE + device * DEVICE_VA_STRIDE
    return lo, lo + DEVICE_VA_STRIDE


def device_allocations(device: int) -> tuple:
    """The live allocations of ``device``, in address order (a slice of the map: no scan of the
    other devices' allocations)."""
    return _space().device_map.within(*_device_span(device))


def device_bytes(device: int) -> int:
    """Bytes allocated on ``device`` now."""
    return sum(a.size for a in device_allocations(device))


def release_device_memory(device: int) -> None:
    """Free every allocation of ``device`` and restart its addresses from the base."""
    space = _space()
    for a in space.device_map.within(*_device_span(device)):
        free_device(a)
    for a in space.freed_map.within(*_device_span(device)):
        space.freed_map.remove(a)
    with space.next_lock:
        space.next_addr.pop(device, None)


def alloc_device(device: int, size: int, owner="user", policy=0, module_id=None) -> Allocation | None:
    """Allocate ``size`` zero-filled bytes on ``device``; None when the address space is full."""
    addr = _reserve(device, size)
    if not addr:
        return None
    sim = current_sim()
    alloc = Allocation(addr, size, device, DEVICE, sim.transport.device_storage(size), owner, policy, module_id)
    sim.memory.device_map.add(alloc)
    sim.record.note_allocation(alloc)
    return alloc


def reserve_addresses(device: int, size: int, align: int) -> int:
    """``size`` bytes of ``device``'s address space, ``align``-aligned (a power of two), that no
    allocation will take (``aclrtReserveMemAddress``); 0 when the space is full. Nothing is
    accessible there until :func:`map_storage` maps memory into it."""
    return _reserve(device, size, align)


def reserve_addresses_at(addr: int, size: int):
    """Reserve ``[addr, addr + size)`` as :func:`reserve_addresses` would: the device whose
    address range holds it all, or None when none does or an allocation lies there (the caller
    checks its own reservations)."""
    device = device_of_address(addr)
    if device is None or device_of_address(addr + size - 1) != device:
        return None
    space = _space()
    if space.device_map.find(addr) is not None or space.device_map.within(addr, addr + size):
        return None
    with space.next_lock:           # the device allocator never hands it out
        base = space.next_addr.get(device, DEVICE_VA_BASE + device * DEVICE_VA_STRIDE)
        space.next_addr[device] = max(base, addr + size + ALLOC_GAP)
    return device


def map_storage(device: int, addr: int, size: int, storage, owner: str) -> Allocation:
    """Make ``[addr, addr + size)`` (reserved addresses) device memory of ``device`` backed by
    ``storage`` (``aclrtMapMem``: another allocation's bytes, shared)."""
    sim = current_sim()
    alloc = Allocation(addr, size, device, DEVICE, storage, owner)
    sim.memory.device_map.add(alloc)
    sim.record.note_allocation(alloc)
    return alloc


def unmap_storage(alloc: Allocation) -> None:
    """Undo :func:`map_storage`: the addresses are inaccessible again (later uses are explained as
    unmapped); the storage stays with its owner."""
    space = _space()
    if space.device_map.remove(alloc):
        alloc.freed = True
        old = space.freed_map.exact(alloc.addr)
        if old is not None:
            space.freed_map.remove(old)
        space.freed_map.add(Allocation(alloc.addr, alloc.size, alloc.device, DEVICE, None, f"{alloc.owner}, unmapped"))


def free_device(alloc: Allocation) -> None:
    """Release a device allocation; its range is remembered to explain later stale uses."""
    space = _space()
    if space.device_map.remove(alloc):
        alloc.freed = True
        space.freed_map.add(Allocation(alloc.addr, alloc.size, alloc.device, DEVICE, None, alloc.owner))
        alloc.storage = None
        current_sim().transport.memory_freed(alloc)   # a peer it was exposed to no longer sees it


class OutOfHostMemory(Exception):
    """The process cannot get ``size`` bytes of host memory (the caller answers with its code)."""


def alloc_host(size: int) -> Allocation:
    """Allocate ``size`` bytes of host memory; its address is the real process address. Raises
    :class:`OutOfHostMemory` when the process cannot have them."""
    try:
        storage = current_sim().backend.allocate_host(size)
    except (MemoryError, ValueError, OverflowError, OSError) as exc:
        raise OutOfHostMemory(f"cannot allocate {size} bytes of host memory: {exc}") from None
    alloc = Allocation(storage.addr, size, None, HOST, storage, "user")
    _space().host_map.add(alloc)
    return alloc


def free_host(alloc: Allocation) -> None:
    if _space().host_map.remove(alloc):
        alloc.freed = True
        alloc.storage = None


#: The owner of a registered host region that must not be written (``bytes``, read-only arrays).
READONLY = "numpy-readonly"


class _Pin:
    """A registration that keeps its owner alive and holds a buffer export of it (``view``), so
    the owner can neither be collected nor resized (``bytearray.extend`` raises ``BufferError``)
    while the Sim lives."""

    __slots__ = ("owner", "view")

    def __init__(self, owner, view):
        self.owner, self.view = owner, view

    def __call__(self):
        return self.owner


def register_host_array(array, readonly: bool = False, keep=None, pin: bool = False) -> int:
    """Make a numpy array's memory usable as a host pointer; return its address.

    The registration ends by itself when the owning object (``keep``, else the array's base) is
    garbage collected: while it is registered a numpy owner cannot be resized (numpy refuses to
    resize an array that is weakly referenced). With ``pin``, or for an owner that cannot be
    weakly referenced, the registration pins: it keeps the owner alive and holds ``array`` (an
    export of the owner's buffer), so the bytes can never move while the Sim lives.
    """
    owner_obj = keep if keep is not None else (array.base if isinstance(array.base, np.ndarray) else array)
    anchor = None
    if not pin:
        try:
            anchor = weakref.ref(owner_obj)
        except TypeError:
            pass
    if anchor is None:
        anchor = _Pin(owner_obj, array)
    host_map = _space().host_map
    storage = current_sim().backend.wrap(array, anchor)
    if storage.size == 0:
        return storage.addr
    existing = _live(host_map, storage.addr)
    if existing is not None and existing.addr == storage.addr and existing.size >= storage.size:
        return storage.addr
    if existing is not None or _live(host_map, storage.addr + storage.size - 1) is not None:
        # part of a region registered before (a view of a registered array): lookups find that one
        return storage.addr
    alloc = Allocation(storage.addr, storage.size, None, HOST, storage, READONLY if readonly else "numpy")
    host_map.add(alloc)
    if isinstance(anchor, weakref.ref):
        weakref.finalize(owner_obj, host_map.discard, alloc)
    return storage.addr


def _live(host_map: MemoryMap, addr: int):
    """The registration holding host address ``addr`` whose owner still lives, else None. One
    whose owner was collected but whose finalizer could not take the map yet (another thread was
    changing it: :meth:`MemoryMap.discard`) goes now: its bytes may already belong to a new array
    at the same address."""
    alloc = host_map.find(addr)
    if alloc is not None and alloc.storage is not None and alloc.storage.anchor() is None:
        host_map.remove(alloc)
        return None
    return alloc


ANY = "any"


class BadRange(ValueError):
    """Why a range is not usable memory; the text begins with the address, so a caller prefixes
    the argument's name and raises its own error code (:func:`resolve`)."""


def resolve(addr: int, n: int, space: str = DEVICE, device: int | None = None,
            writable: bool = False) -> Allocation:
    """The live allocation holding all of ``[addr, addr + n)``: the one place that decides it.

    ``addr`` and ``n`` are ints (see :mod:`pyhcomm.args`). ``space``: ``DEVICE`` (of ``device``
    when given), ``HOST`` (``aclrtMallocHost``, registered numpy arrays), or ``ANY`` (device
    first; ``device`` restricts the device memory it accepts). ``writable``: the range is a
    destination, so read-only host memory (a ``bytes`` object, a read-only array) is refused.
    A zero-length range needs an address inside an allocation too (one past the end is not).
    Raises :class:`BadRange` saying what is wrong.
    """
    if type(addr) is not int or type(n) is not int:  # callers convert first (pyhcomm.args): a backstop
        raise TypeError(f"an address and a length must be ints, not {type(addr).__name__} and {type(n).__name__}")
    mem = _space()
    if space != HOST:
        a = mem.device_map.find(addr)
        if a is not None:
            if device is not None and a.device != device:
                raise BadRange(f"0x{addr:x} is memory of device {a.device}; the caller runs on device {device} "
                               "and cannot access it")
            if addr + n > a.end:
                raise BadRange(f"0x{addr:x} + {n} runs past its allocation ({a.size} bytes at 0x{a.addr:x})")
            return a
        if space == DEVICE:
            raise BadRange(describe_address(addr))
    a = mem.host_map.find(addr)
    if a is not None:
        if addr + n > a.end:
            raise BadRange(f"0x{addr:x} + {n} runs past its host buffer ({a.size} bytes at 0x{a.addr:x})")
        if writable and a.owner == READONLY:
            raise BadRange(f"0x{addr:x} is read-only host memory (a bytes object or a read-only array)")
        return a
    if mem.device_map.find(addr) is not None:
        raise BadRange(f"0x{addr:x} is device memory; host memory is needed here")
    raise BadRange(f"0x{addr:x} is not host memory known to pyhcomm (use aclrtMallocHost or acl.util.numpy_to_ptr)")


def hold(alloc: Allocation):
    """The storage of ``alloc`` and the object that owns its bytes, for one access: while the
    caller keeps both, the bytes stay where they are even if the allocation is freed meanwhile
    (by another host thread), or its owner is released. :class:`BadRange` when that already
    happened."""
    storage = alloc.storage
    if storage is None:
        raise BadRange(f"0x{alloc.addr:x} was freed")
    owner = storage.anchor()
    if owner is None:
        raise BadRange(f"0x{alloc.addr:x} was released by its owner")
    return storage, owner


def device_of_address(addr: int) -> int | None:
    """The device whose address range holds the device address ``addr`` (None below the device
    range). Device ``d`` owns ``[DEVICE_VA_BASE + d * DEVICE_VA_STRIDE, ... + DEVICE_VA_STRIDE)``;
    host addresses are real process addresses and may fall anywhere: ask only about device ones
    (a record :class:`~pyhcomm.sim.events.Range` whose ``host`` is None)."""
    if addr < DEVICE_VA_BASE:
        return None
    return (addr - DEVICE_VA_BASE) // DEVICE_VA_STRIDE


def describe_address(addr: int) -> str:
    """Say what ``addr`` is, for error messages about a pointer that is not usable memory."""
    space = _space()
    a = space.host_map.find(addr)
    if a is not None:
        return f"0x{addr:x} is host memory, not device memory"
    a = space.freed_map.find(addr)
    if a is not None:
        how = "unmapped (aclrtUnmapMem)" if a.owner.endswith("unmapped") else "freed"
        return f"0x{addr:x} lies in device memory that was {how} ({a.size} bytes at 0x{a.addr:x} on device {a.device})"
    return f"0x{addr:x} is not memory allocated on a device (aclrtMalloc, HCCL buffer)"


def read_host(addr: int, n: int) -> bytes:
    """A copy of ``n`` bytes of host memory at ``addr`` (what a C API reads through a pointer
    argument); raises :class:`BadRange` if the range is not host memory known to pyhcomm."""
    alloc = resolve(addr, n, HOST)
    storage, _owner = hold(alloc)
    return current_sim().backend.to_host(storage, addr - alloc.addr, n)
