"""AIV kernels: Ascend C kernels on the vector cores, as Python functions, block by block.

A launch of an AIV kernel enqueues an ``AivKernelLaunch`` task. When its stream reaches it, each
of its ``numBlocks`` blocks starts as an actor of its own (:meth:`pyhcomm.sched.base.Scheduler.spawn_blocks`),
all concurrently; the stream waits until every block ended. A block runs ``fn(*args)`` with a
program of its own (the ``program`` of its record entries) and knows its index and the block
count (:func:`block`: ``GetBlockIdx`` / ``GetBlockNum``). A block that raises fails the kernel:
the other blocks stop at their next wait, and when the last one ended the stream fails with
``ACL_ERROR_RT_VECTOR_CORE_EXCEPTION``. What a kernel returns is ignored (its C function returns ``void``).

What a block does to global memory happens at once and is recorded then, as entries of its
program (:mod:`pyhcomm.sim.kinds`):

* ``AivLoad`` / ``AivStore`` (:func:`load`, :func:`store`): a ``DataCopy`` from global memory into
  the block's local buffer, or back (``AivScalarLoad`` / ``AivScalarStore``: a scalar read or
  write of global memory): data accesses, which the race detector checks;
* ``AivFlagStore`` (:func:`flag_store`): a flag written for other blocks or ranks to see (a release);
* ``AivFlagLoad`` (:func:`flag_load`): a flag read, after waiting for it to hold what the block
  expects: ordered after the flag store whose value it read (an acquire: its ``after``);
* ``AivSyncAll`` (:func:`sync_all`): the block barrier, ordered after every block's arrival;
* ``AivKernelEnd``, recorded by the last block to end: ordered after every block's last entry,
  and what the stream's next task follows.

Flags are synchronisation: the happens-before graph orders a flag store before the load that read
its value, so a protocol whose waits see the right stores verifies clean, and a wait that passes on
a stale value (a flag never reset, a constant tag) leaves the data it guards unordered: a race.

Global memory a block may touch: its own device's, and another device's that an AIV channel of
its device exposes (the peer's HCCL buffer and the memories its descriptor listed:
:meth:`AivState.grant`, called as HCOMM acquires AIV channels). Anything else fails the kernel
with ``ACL_ERROR_RT_VECTOR_CORE_EXCEPTION`` (the MTE address is out of range). Devices of other
processes (MPI) are not reachable.

A wait (for a flag, at the barrier) is a scheduling point on both schedulers: the block blocks
until what it waits for holds, and other blocks, kernels and ranks run meanwhile. A load that
repeats the block's previous load (nothing else done in between) and finds the same bytes is a
spin written by hand: it waits likewise until those bytes change. A wait ends when the kernel's
timeout (its launch's ``ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT[_US]``, counted from its start) passes,
or when nothing else can ever run: the kernel then fails with ``ACL_ERROR_RT_VECTOR_CORE_TIMEOUT``
and a report naming the block, the address and the value it waits for.
"""
from __future__ import annotations

import time
import traceback
import weakref

from ..enums import CommEngine
from ..errors import AclError, AclRuntimeError
from ..sched import ABORTED, TIMED_OUT, DeviceWait, Waitable
from . import LayerState, current_sim, memory
from .kernel import KernelContext, current_kernel
from .kinds import (AIV_FLAG_LOAD, AIV_FLAG_STORE, AIV_KERNEL_END, AIV_LOAD, AIV_SCALAR_LOAD, AIV_SCALAR_STORE,
                    AIV_STORE, AIV_SYNC_ALL)
from .runtime import ProgramContext, program_ctx, set_program_ctx

#: The kernel type of an AIV kernel function (``EXPORT_AIV_META_INFO``: the ``.ascend.meta`` section of
#: its binary), kept as the function's attribute :data:`META`.
K_TYPE_AIV = "K_TYPE_AIV"
META = "__ascend_meta_ktype__"
#: The engine the record names for what AIV kernels do.
ENGINE = CommEngine.COMM_ENGINE_AIV
TIMEOUT, EXCEPTION = AclError.ACL_ERROR_RT_VECTOR_CORE_TIMEOUT, AclError.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
_monotonic = time.monotonic


class AivState(LayerState):
    """What the AIV kernels of one Sim share (``sim.layer_state(AivState)``): the last flag store
    at each address, the AIV channel ends through which each device reaches other devices'
    memory, and the object that blocks waiting on global memory watch (settled at every store)."""

    def __init__(self):
        self.flags: dict = {}       # address -> (seq or None, bytes) of the last flag store there
        self.windows: dict = {}     # device -> WeakSet of AIV channel ends of that device
        self.changed = Waitable("AIV global memory")

    def grant(self, device: int, end) -> None:
        """Let AIV kernels on ``device`` reach what the peer of channel end ``end`` exposes (its
        ``peer.regions`` once connected; ``end.protocol`` the link)."""
        self.windows.setdefault(device, weakref.WeakSet()).add(end)

    def reach(self, device: int, addr: int, n: int):
        """The protocol name of an AIV channel of ``device`` whose peer exposes ``[addr, addr + n)``
        (None: none does)."""
        for end in list(self.windows.get(device, ())):
            peer = end.peer
            if peer is None or peer.closed or end.closed:
                continue
            for r in peer.regions:
                if r.start <= addr and addr + n <= r.start + r.size:
                    return end.protocol.name
        return None

    def release_device(self, sim, device_id: int) -> None:
        self.windows.pop(device_id, None)
        for addr in [a for a in self.flags if memory.device_of_address(a) == device_id]:
            del self.flags[addr]


def aiv_state(sim=None) -> AivState:
    return (sim if sim is not None else current_sim()).layer_state(AivState)


class AivKernel:
    """One launch of an AIV kernel: its blocks' shared state (barrier, failure, end)."""

    __slots__ = ("name", "fn", "args", "stream", "device", "num_blocks", "seq", "deadline", "failed", "waitable",
                 "arrived", "generation", "passed", "left", "lasts")

    def __init__(self, name, fn, args, stream, num_blocks, seq, timeout):
        self.name, self.fn, self.args, self.stream = name, fn, args, stream
        self.device = stream.device
        self.num_blocks = num_blocks
        self.seq = seq
        self.deadline = None if not timeout else _monotonic() + timeout
        self.failed = None                  # the first error of a block (the kernel's)
        self.waitable = Waitable(f"AIV kernel {name}")  # settled at the barrier and at a failure
        self.arrived: list = []             # (block, seq of its last entry) arrived at the barrier
        self.generation = 0                 # barriers passed
        self.passed: dict = {}              # generation -> its arrivals
        self.left = num_blocks              # blocks still running
        self.lasts = [None] * num_blocks    # per block: the seq of its last entry


class AivBlock(KernelContext):
    """What a block of an AIV kernel knows (the device-side context of its program)."""

    __slots__ = ("kernel", "last", "last_load")
    hcomm_calls = False     # an AIV kernel moves data with DataCopy and signals with flags, not HCOMM's calls

    def __init__(self, kernel: AivKernel, idx: int):
        super().__init__(kernel.name, kernel.stream, kernel.num_blocks, None, kernel.seq)
        self.kernel = kernel
        self.block_idx = idx
        self.last = None        # seq of its last recorded entry
        self.last_load = None   # (addr, n, bytes) of its last load, while it did nothing else since


class _KernelOver(Exception):
    """Another block failed the kernel: this one stops."""


def is_aiv_kernel(fn) -> bool:
    """Whether kernel function ``fn`` is marked an AIV kernel (``EXPORT_AIV_META_INFO``)."""
    return getattr(fn, META, None) == K_TYPE_AIV


def start_aiv_kernel(task, name, fn, args, stream, num_blocks, timeout):
    """Task body of an ``AivKernelLaunch``: start one actor per block (see the module docstring)."""
    sim = current_sim()
    kernel = AivKernel(name, fn, args, stream, num_blocks, task.seq, timeout)
    sim.scheduler.spawn_blocks(stream, [_body(sim, kernel, b) for b in range(num_blocks)])


def _body(sim, kernel: AivKernel, idx: int):
    def run():
        ctx = ProgramContext(sim)
        ctx.device = kernel.device
        blk = AivBlock(kernel, idx)
        ctx.kernels.append(blk)
        set_program_ctx(ctx)
        try:
            kernel.fn(*kernel.args)
        except _KernelOver:
            pass
        except AclRuntimeError as exc:
            _fail(sim, kernel, exc)
        except Exception as exc:  # the kernel's own failure, reported on its stream
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
            _fail(sim, kernel, AclRuntimeError(EXCEPTION, "AivKernel", f"AIV kernel {kernel.name} (block {idx}) "
                                                                        f"raised {exc!r}\n{tb}"))
        finally:
            blk.end()
            _ended(sim, kernel, blk, ctx)
    return run


def _fail(sim, kernel: AivKernel, exc) -> None:
    """A block failed ``kernel`` (the first failure is the kernel's): the other blocks stop at
    their next wait, and the stream fails when the last block ended (:func:`_ended`)."""
    if kernel.failed is None:
        kernel.failed = exc
    sim.scheduler.settle(kernel.waitable)


def _ended(sim, kernel: AivKernel, blk: AivBlock, ctx) -> None:
    """``blk`` ended; the last block records the kernel's end and fails its stream if a block failed."""
    kernel.lasts[blk.block_idx] = blk.last
    kernel.left -= 1
    if kernel.left:
        return
    after = tuple(s for b, s in enumerate(kernel.lasts) if s is not None and b != blk.block_idx)
    sim.record.effect(AIV_KERNEL_END, kernel.name, kernel.failed is None, None, kernel.device, ENGINE, None,
                      kernel.stream.handle, (), (), {"block": blk.block_idx, "after": after}, ctx)
    if kernel.failed is not None:
        sim.scheduler.fail_stream(kernel.stream, kernel.failed)


# -- what a block does ----------------------------------------------------------------------------------------
def block(api: str = "GetBlockIdx") -> AivBlock:
    """The calling block's context; ``ACL_ERROR_INVALID_PARAM`` outside an AIV kernel."""
    k = current_kernel()
    if not isinstance(k, AivBlock):
        raise AclRuntimeError(AclError.ACL_ERROR_INVALID_PARAM, api, "called outside an AIV kernel")
    return k


def _effect(blk: AivBlock, kind, api: str, reads=(), writes=(), **extra):
    kernel = blk.kernel
    extra["block"] = blk.block_idx
    e = current_sim().record.effect(kind, api, True, None, kernel.device, ENGINE, None, kernel.stream.handle,
                                    reads, writes, extra, program_ctx())
    if e is not None:
        blk.last = e.seq
    return e


def _raise(blk: AivBlock, api: str, code, msg: str):
    raise AclRuntimeError(code, api, f"AIV kernel {blk.kernel.name} (block {blk.block_idx}, device "
                                     f"{blk.kernel.device}): {msg}")


def _reach(blk: AivBlock, addr: int, n: int, api: str, what: str):
    """``(allocation, remote device or None, protocol name or None)`` of ``[addr, addr + n)``
    for the block (see the module docstring)."""
    if type(addr) is not int or type(n) is not int or n < 0:
        _raise(blk, api, EXCEPTION, f"the {what} needs an int address and a size >= 0, not {addr!r} and {n!r}")
    try:
        alloc = memory.resolve(addr, n, memory.DEVICE)
    except memory.BadRange as why:
        _raise(blk, api, EXCEPTION, f"the {what} of {n} bytes at 0x{addr:x} is out of range: {why}")
    device = blk.kernel.device
    if alloc.device == device:
        return alloc, None, None
    protocol = aiv_state().reach(device, addr, n)
    if protocol is None:
        _raise(blk, api, EXCEPTION, f"the {what} of {n} bytes at 0x{addr:x} is out of range: it is memory of "
                                    f"device {alloc.device}, which no AIV channel of device {device} exposes "
                                    "(HcclChannelAcquire with COMM_ENGINE_AIV to its rank: its HCCL buffer, and "
                                    "the memories of the descriptor's memHandles)")
    return alloc, alloc.device, protocol


def _storage(blk: AivBlock, alloc, addr: int, api: str, verb: str):
    """(the Sim, the storage of ``alloc``) for a block that will ``verb`` its bytes at ``addr``."""
    sim = current_sim()
    if not sim.data:
        _raise(blk, api, EXCEPTION, f"AIV kernels {verb} the bytes of global memory: the simulation runs without "
                                    "data (PYHCOMM_DATA=0)")
    try:
        storage, _owner = memory.hold(alloc)
    except memory.BadRange as why:
        _raise(blk, api, EXCEPTION, f"0x{addr:x}: {why}")
    return sim, storage


def _read(blk: AivBlock, alloc, addr: int, n: int, api: str) -> bytes:
    sim, storage = _storage(blk, alloc, addr, api, "read")
    return sim.backend.to_host(storage, addr - alloc.addr, n)


def _write(blk: AivBlock, alloc, addr: int, data: bytes, api: str) -> None:
    sim, storage = _storage(blk, alloc, addr, api, "write")
    sim.backend.from_host(storage, addr - alloc.addr, data)


def _changed(sim, st: AivState) -> None:
    if st.changed.waiters:
        sim.scheduler.settle(st.changed)


def load(addr: int, n: int, api: str = "DataCopy", scalar: bool = False) -> bytes:
    """``n`` bytes of global memory at ``addr``, read by the calling block (an ``AivLoad``; a
    scalar read: an ``AivScalarLoad``). The same bytes as its previous load, with nothing done in
    between, make it a spin: it waits until they change (see the module docstring)."""
    blk = block(api)
    alloc, remote, protocol = _reach(blk, addr, n, api, "load")
    data = _read(blk, alloc, addr, n, api)
    if blk.last_load == (addr, n, data):
        data = _spin(blk, alloc, addr, n, data, api)
    _effect(blk, AIV_SCALAR_LOAD if scalar else AIV_LOAD, api, reads=((addr, n),), nbytes=n, remote=remote,
            protocol=protocol)
    blk.last_load = (addr, n, data)
    return data


def _spin(blk, alloc, addr, n, data, api) -> bytes:
    sim = current_sim()

    def changed():
        return _peek(sim, alloc, addr, n) != data
    _wait(blk, changed, f"AIV kernel {blk.kernel.name} block {blk.block_idx} (device {blk.kernel.device}) "
                        f"spins on {n} bytes at 0x{addr:x} ({_where(alloc, addr)}), which hold "
                        f"{_value(data)} and change no more")
    return _read(blk, alloc, addr, n, api)


def store(addr: int, data, api: str = "DataCopy", scalar: bool = False) -> None:
    """Write ``data`` (bytes-like) to global memory at ``addr`` from the calling block (an
    ``AivStore``; a scalar write: an ``AivScalarStore``)."""
    blk = block(api)
    data = bytes(data)
    n = len(data)
    alloc, remote, protocol = _reach(blk, addr, n, api, "store")
    _write(blk, alloc, addr, data, api)
    st = aiv_state()
    if st.flags:
        for a in [a for a in st.flags if addr <= a < addr + n]:
            del st.flags[a]     # a data store over a flag: a later read sees its bytes, not the flag store's
    _effect(blk, AIV_SCALAR_STORE if scalar else AIV_STORE, api, writes=((addr, n),), nbytes=n, remote=remote,
            protocol=protocol)
    blk.last_load = None
    _changed(current_sim(), st)


def copy(dst: int, src: int, n: int, api: str = "aclrtMemcpy") -> None:
    """``n`` bytes of global memory from ``src`` to ``dst`` by the calling block: a load, then a
    store (``aclrtMemcpy`` inside an AIV kernel)."""
    store(dst, load(src, n, api), api)


def flag_store(addr: int, data, value: int, api: str = "SetSignalValue") -> None:
    """Store flag ``value`` (its bytes: ``data``) at ``addr`` from the calling block (an
    ``AivFlagStore``: a release, which a :func:`flag_load` that reads it is ordered after)."""
    blk = block(api)
    data = bytes(data)
    n = len(data)
    alloc, remote, protocol = _reach(blk, addr, n, api, "flag store")
    _write(blk, alloc, addr, data, api)
    e = _effect(blk, AIV_FLAG_STORE, api, writes=((addr, n),), nbytes=n, remote=remote, protocol=protocol,
                value=value)
    st = aiv_state()
    st.flags[addr] = (e.seq if e is not None else None, data)
    blk.last_load = None
    _changed(current_sim(), st)


def flag_load(addr: int, n: int, until=None, expect=None, api: str = "WaitSignalValue") -> bytes:
    """The ``n`` bytes of the flag at ``addr``, read by the calling block (an ``AivFlagLoad``,
    ordered after the flag store whose value it read), once ``until(bytes)`` holds (None: at
    once); ``expect`` says what it waits for, in the hang report."""
    blk = block(api)
    alloc, remote, protocol = _reach(blk, addr, n, api, "flag load")
    data = _read(blk, alloc, addr, n, api)
    if until is not None and not until(data):
        sim = current_sim()

        def ready():
            return until(_peek(sim, alloc, addr, n))
        where = f"device {remote}, over {protocol}" if remote is not None else f"device {blk.kernel.device}"
        _wait(blk, ready, f"AIV kernel {blk.kernel.name} block {blk.block_idx} (device {blk.kernel.device}) waits "
                          f"for the flag at 0x{addr:x} ({where}: {_where(alloc, addr)}) to hold {expect}; it holds "
                          f"{_value(data)}")
        data = _read(blk, alloc, addr, n, api)
    seen = aiv_state().flags.get(addr)
    after = ()
    if seen is not None and seen[0] is not None:
        k = min(len(seen[1]), n)
        if seen[1][:k] == data[:k]:
            after = (seen[0],)
    _effect(blk, AIV_FLAG_LOAD, api, reads=((addr, n),), nbytes=n, remote=remote, protocol=protocol,
            value=_int(data), after=after)
    blk.last_load = None
    return data


def sync_all(api: str = "SyncAll") -> None:
    """The block barrier: wait until every block of the kernel arrived (an ``AivSyncAll``)."""
    blk = block(api)
    kernel = blk.kernel
    gen = kernel.generation
    kernel.arrived.append((blk.block_idx, blk.last))
    if len(kernel.arrived) == kernel.num_blocks:
        kernel.passed[gen], kernel.arrived = kernel.arrived, []
        kernel.generation += 1
        current_sim().scheduler.settle(kernel.waitable)
    else:
        missing = sorted(set(range(kernel.num_blocks)) - {b for b, _s in kernel.arrived})
        _wait(blk, lambda: kernel.generation > gen,
              f"AIV kernel {kernel.name} block {blk.block_idx} (device {kernel.device}) waits in SyncAll for "
              f"block(s) {', '.join(map(str, missing))}")
    after = tuple(s for b, s in kernel.passed[gen] if b != blk.block_idx and s is not None)
    _effect(blk, AIV_SYNC_ALL, api, after=after)
    blk.last_load = None


def _wait(blk: AivBlock, cond, what: str) -> None:
    """Block until ``cond()`` holds (see the module docstring); the kernel fails with a timeout
    naming ``what`` when its timeout passes or nothing else can ever run."""
    kernel = blk.kernel
    sim = current_sim()
    sched = sim.scheduler
    expiry = DeviceWait(what)

    def done():
        return kernel.failed is not None or expiry.expired or cond()

    timeout = None if kernel.deadline is None else max(0.0, kernel.deadline - _monotonic())
    sched.expire_on_hang(expiry)
    try:
        status = sched.run_until(done, timeout, what, (aiv_state(sim).changed, kernel.waitable, expiry))
    finally:
        sched.expire_on_hang(expiry, False)
    if kernel.failed is not None:
        raise _KernelOver()
    if cond():
        return
    if status == ABORTED:
        why = f"aborted: {sched.abort_reason}"
    elif status == TIMED_OUT or (kernel.deadline is not None and _monotonic() >= kernel.deadline):
        why = "the kernel's timeout passed"
    else:
        why = "nothing else can ever change it (on hardware the kernel's timeout ends it)"
    raise AclRuntimeError(TIMEOUT, "AivKernel", f"{what}: {why}")


def _peek(sim, alloc, addr: int, n: int) -> bytes:
    """The bytes at ``addr`` now, for a wait's predicate (which may run on any thread): never
    raises (memory freed meanwhile reads as nothing: the wait wakes and the block finds out)."""
    storage = alloc.storage
    if storage is None:
        return b""
    try:
        return sim.backend.to_host(storage, addr - alloc.addr, n)
    except Exception:  # noqa: BLE001 - a predicate must answer
        return b""


def _int(data: bytes) -> int:
    """A flag's value: its first 4 bytes as a little-endian int32 (the signal helpers' ``int32_t``)."""
    return int.from_bytes(data[:4], "little", signed=True) if len(data) >= 4 else int.from_bytes(data, "little")


def _value(data: bytes) -> str:
    return str(_int(data))


def _where(alloc, addr: int) -> str:
    return f"{alloc.owner} at 0x{alloc.addr:x} + 0x{addr - alloc.addr:x}"


__all__ = ["AivState", "aiv_state", "AivKernel", "AivBlock", "ENGINE", "K_TYPE_AIV", "META", "is_aiv_kernel",
           "start_aiv_kernel", "block", "load", "store", "copy",
           "flag_store", "flag_load", "sync_all"]
