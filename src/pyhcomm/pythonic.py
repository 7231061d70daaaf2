"""The Pythonic tier: devices, buffers, streams, communicators and threads as objects.

Methods raise :class:`~pyhcomm.errors.HcclError` subclasses (``.code``, ``.api``) instead of
returning codes; ``close()`` is idempotent and every object is a context manager. Enqueueing
methods return at once; ``synchronize()`` blocks.

    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.thread(COMM_ENGINE_CPU_TS, stream=dev.default_stream, notify_num=2)
        src, dst = dev.malloc(256), dev.malloc(256)
        src.write(np.arange(64, dtype=np.float32))
        t.local_copy(dst, src)
        dev.synchronize()
        print(dst.read(np.float32))
"""
from __future__ import annotations

import numpy as np

from .sim import current_sim as _sim
from .aclrt import device as _dev
from .aclrt import kernel as _kernel
from .aclrt import memory as _mem
from .aclrt import stream as _stream
from .sim import memory
from .enums import DATA_TYPE_SIZE as _DATA_TYPE_SIZE
from .enums import NUMPY_DTYPE as _NUMPY_DTYPE
from .enums import CommEngine, aclrtMemcpyKind, aclrtMemMallocPolicy
from .enums import HcommReduceOp as _HcommReduceOp
from .errors import AclError, acl_error, para
from .errors import not_found as _not_found
from .hccl import comm as _comm
from .hcomm.resources import engine_ctx as _ectx
from .hcomm.resources import thread as _thread
from .hcomm import comm_lock as _comm_lock
from .hcomm import notify as _notify
from .hcomm.local import local_copy
from .hcomm.reduce import local_reduce as _local_reduce

_HUGE_HBW = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST | aclrtMemMallocPolicy.ACL_MEM_TYPE_HIGH_BAND_WIDTH


class _Closable:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _addr(x) -> int:
    return x.addr if isinstance(x, Buffer) else x


class Buffer(_Closable):
    """Device memory ``[addr, addr + size)``; slicing gives a view of part of it."""

    def __init__(self, addr: int, size: int, device: int, owned: bool = True):
        self.addr, self.size, self.device, self._owned = addr, size, device, owned

    def __getitem__(self, key: slice) -> "Buffer":
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise ValueError("Buffer slices must be contiguous")
        return Buffer(self.addr + start, max(0, stop - start), self.device, owned=False)

    def __len__(self):
        return self.size

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """A live numpy view of the simulated device memory (no synchronisation implied)."""
        try:
            alloc = memory.resolve(self.addr, self.size, memory.DEVICE)
        except memory.BadRange as why:
            raise para("Buffer.numpy", str(why)) from None
        off = self.addr - alloc.addr
        return _sim().backend.view(alloc.storage, off, self.size, dtype)

    def write(self, data) -> None:
        """Copy host data (array-like) into the buffer now (``aclrtMemcpy`` host to device)."""
        arr = np.ascontiguousarray(data)
        if arr.nbytes > self.size:
            raise para("Buffer.write", f"{arr.nbytes} bytes do not fit in {self.size}")
        if arr.nbytes:
            ptr = memory.register_host_array(arr)
            _mem.aclrtMemcpy(self.addr, self.size, ptr, arr.nbytes, aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE)

    def read(self, dtype=np.uint8) -> np.ndarray:
        """Copy the buffer to a new host array now (``aclrtMemcpy`` device to host)."""
        out = np.empty(self.size // np.dtype(dtype).itemsize, dtype=dtype)
        if out.nbytes:
            ptr = memory.register_host_array(out)
            _mem.aclrtMemcpy(ptr, out.nbytes, self.addr, out.nbytes, aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_HOST)
        return out

    def fill(self, value: int) -> None:
        _mem.aclrtMemset(self.addr, self.size, value, self.size)

    def close(self) -> None:
        """Free the memory (owned buffers only; idempotent)."""
        if self._owned:
            self._owned = False
            if _sim().memory.device_map.exact(self.addr) is not None:
                _mem.aclrtFree(self.addr)

    def __repr__(self):
        return f"<Buffer 0x{self.addr:x} {self.size} B device {self.device}>"


class Stream(_Closable):
    """A stream (``aclrtStream``); ``handle`` is the int the C tier takes."""

    def __init__(self, handle: int, owned: bool = True):
        self.handle, self._owned = handle, owned

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until the stream's tasks ran; raise its first execution error."""
        _stream.aclrtSynchronizeStreamWithTimeout(self.handle, timeout_ms)

    def launch(self, fn, *args, num_blocks: int = 1) -> None:
        """Enqueue ``fn(*args)`` as an AI CPU kernel: it runs on the device side in stream order."""
        _kernel.launch_function(fn, _stream.get_stream(self.handle, "Stream.launch"), args, num_blocks)

    def close(self) -> None:
        if self._owned:
            self._owned = False
            if _sim().handles.streams.get(self.handle) is not None:
                _stream.aclrtDestroyStream(self.handle)

    def __repr__(self):
        return f"<Stream 0x{self.handle:x}>"


class Device(_Closable):
    """An open device (``aclrtSetDevice``); ``close()`` resets it."""

    def __init__(self, device_id: int = 0):
        _dev.aclrtSetDevice(device_id)
        self.id = device_id
        self._open = True

    @property
    def soc_name(self) -> str:
        return _dev.aclrtGetSocName()

    @property
    def default_stream(self) -> Stream:
        return Stream(_sim().runtime.devices[self.id].default_stream.handle, owned=False)

    def malloc(self, size: int, policy: int = _HUGE_HBW, module_id: int | None = None) -> Buffer:
        """Allocate device memory on this device (``aclrtMallocWithCfg``)."""
        cfg = None
        if module_id is not None:
            cfg = {"numAttrs": 1, "attrs": [{"attr": 1, "value": {"moduleId": module_id}}]}
        return Buffer(_mem.aclrtMallocWithCfg(size, policy, cfg, self.id), size, self.id)

    def _device(self):
        dev = _sim().runtime.devices.get(self.id)
        if dev is None:
            raise acl_error(AclError.ACL_ERROR_RT_CONTEXT_NULL, "Device", f"device {self.id} is not open")
        return dev

    def stream(self) -> Stream:
        """A new stream on this device (``aclrtCreateStream``)."""
        return Stream(self._device().new_stream().handle)

    def synchronize(self) -> None:
        """Block until every stream of the device is idle; raise the first error any hit."""
        _stream.sync_streams(self._device().streams.values(), "aclrtSynchronizeDevice")

    def close(self) -> None:
        if self._open:
            self._open = False
            _dev.aclrtResetDevice(self.id)

    def __repr__(self):
        return f"<Device {self.id} {_sim().runtime.product.name}>"


class Thread:
    """An HCOMM thread (``ThreadHandle``); primitives enqueue on it and return at once."""

    def __init__(self, handle: int):
        self.handle = handle
        self._t = _thread.get_thread(handle, "Thread")

    @property
    def engine(self) -> CommEngine:
        return self._t.engine

    @property
    def stream(self) -> Stream:
        return Stream(self._t.stream.handle, owned=False)

    @property
    def notify_num(self) -> int:
        return len(self._t.notifies)

    def local_copy(self, dst, src, nbytes: int | None = None) -> None:
        """Enqueue ``HcommLocalCopyOnThread``; ``nbytes`` defaults to the size of both buffers."""
        if nbytes is None:
            sizes = {b.size for b in (dst, src) if isinstance(b, Buffer)}
            if len(sizes) != 1:
                raise para("HcommLocalCopyOnThread", f"give nbytes: buffer sizes {sorted(sizes)} differ or are unknown")
            nbytes = sizes.pop()
        local_copy(self.handle, _addr(dst), _addr(src), nbytes)

    def local_reduce(self, dst, src, count: int | None = None, dtype=None, op="sum") -> None:
        """Enqueue ``HcommLocalReduceOnThread``: ``dst[i] = op(dst[i], src[i])`` for ``count`` elements.

        Args:
            dst, src: Buffers or device addresses.
            count: elements; defaults to the size of both buffers over the element size.
            dtype: an ``HcommDataType`` (or int), or a numpy dtype (``np.float32``, ``ml_dtypes.bfloat16``).
            op: an ``HcommReduceOp`` (or int), or ``"sum"``, ``"prod"``, ``"max"``, ``"min"``.
        """
        dt, rop = _reduce_dtype(dtype), _reduce_op(op)
        if count is None:
            sizes = {b.size for b in (dst, src) if isinstance(b, Buffer)}
            if len(sizes) != 1:
                raise para("HcommLocalReduceOnThread", f"give count: buffer sizes {sorted(sizes)} differ or are unknown")
            size = sizes.pop()
            item = _DATA_TYPE_SIZE.get(dt)
            if item is None or size % item:
                raise para("HcommLocalReduceOnThread", f"give count: {size} bytes is not a whole number of "
                                                       f"dataType {dt} elements")
            count = size // item
        _local_reduce(self.handle, _addr(dst), _addr(src), count, dt, rop)

    def export(self, engine) -> "Thread":
        """This thread's handle for code running on ``engine`` (``HcclThreadExportToCommEngine``):
        the same stream and notifies; exporting again to the same engine gives the same handle."""
        return Thread(_thread.export_to_comm_engine(self._t.comm.handle, 1, [self.handle], engine)[0].handle)

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until this thread's stream is idle."""
        self.stream.synchronize(timeout_ms)

    def __repr__(self):
        return f"<Thread 0x{self.handle:x} {self.engine.name}>"

    def record(self, dst_thread: "Thread", idx: int) -> None:
        """Enqueue ``HcommThreadNotifyRecordOnThread``: when this thread's queue reaches the task,
        set notify ``idx`` of ``dst_thread`` (a :class:`Thread` or a handle). Returns at once."""
        dst = dst_thread.handle if isinstance(dst_thread, Thread) else dst_thread
        _notify.record(self.handle, dst, idx)

    def wait(self, idx: int, timeout: int | None = None) -> None:
        """Enqueue a wait for this thread's own notify ``idx``, which the wait clears.

        ``timeout`` in seconds (0 = forever); ``None`` uses the default of the calling OS thread
        (``HcommThreadNotifyWaitOnThreadWithDefaultTimeout``). Returns at once; a wait that
        times out or can never be satisfied fails the stream, reported by ``synchronize()``.
        """
        if timeout is None:
            _notify.wait_default(self.handle, idx)
        else:
            _notify.wait(self.handle, idx, timeout)


class Comm(_Closable):
    """One rank of a communicator (``HcclComm``)."""

    def __init__(self, nranks: int, root_info: bytes, rank: int):
        """Join rank ``rank`` of ``nranks`` (collective: blocks until every rank joined)."""
        self._c = _comm.init_root_info(nranks, root_info, rank)
        self.handle = self._c.handle

    @staticmethod
    def root_info() -> bytes:
        return _comm.get_root_info()

    @classmethod
    def _wrap(cls, c) -> "Comm":
        obj = cls.__new__(cls)
        obj._c, obj.handle = c, c.handle
        return obj

    @classmethod
    def from_cluster_info(cls, rank_table_path: str, rank: int) -> "Comm":
        """Join rank ``rank`` of the cluster a rank-table file describes (``HcclCommInitClusterInfo``;
        collective: blocks until every rank joined)."""
        return cls._wrap(_comm.init_cluster_info(rank_table_path, rank))

    @classmethod
    def init_all(cls, devices) -> list["Comm"]:
        """One communicator per device, all created by this call (``HcclCommInitAll``)."""
        return [cls._wrap(c) for c in _comm.init_all(devices)]

    @property
    def rank(self) -> int:
        return self._c.rank

    @property
    def size(self) -> int:
        return self._c.nranks

    @property
    def name(self) -> str:
        return self._c.name

    @property
    def device(self) -> int:
        return self._c.device

    def barrier(self) -> None:
        """Wait until every rank called ``barrier`` (a host-side rendezvous, not a collective:
        nothing is enqueued). Use it, not ``threading.Barrier``, inside ``pyhcomm.launch``: on
        the cooperative scheduler the ranks share one OS thread."""
        _comm.host_barrier(_comm.get_comm(self.handle, "Comm.barrier"))

    def hccl_buffer(self) -> Buffer:
        """The rank's HCCL buffer (library-owned: closing the Buffer does nothing)."""
        a = _comm.hccl_buffer(_comm.get_comm(self.handle, "HcclGetHcclBuffer"), "HcclGetHcclBuffer")
        return Buffer(a.addr, a.size, a.device, owned=False)

    def thread(self, engine=CommEngine.COMM_ENGINE_CPU_TS, stream: Stream | None = None,
               notify_num: int = 0) -> Thread:
        """One thread: wrapping ``stream`` (``HcclThreadAcquireWithStream``) or with its own stream."""
        if stream is not None:
            h = _thread.acquire_with_stream(self.handle, engine, stream.handle, notify_num).handle
            return Thread(h)
        return self.threads(engine, 1, notify_num)[0]

    def threads(self, engine, count: int, notify_num: int = 0) -> list[Thread]:
        """``count`` threads with their own streams (``HcclThreadAcquire``)."""
        return [Thread(t.handle) for t in _thread.acquire(self.handle, engine, count, notify_num)]

    def engine_ctx_create(self, tag: str, engine, size: int) -> "EngineCtx":
        """A new zero-filled engine context (``HcclEngineCtxCreate``): host memory for CPU, CPU_TS
        and CCU, device memory for AICPU, AICPU_TS and AIV; owned by the communicator."""
        return EngineCtx(self, _ectx.create(self.handle, tag, engine, size))

    def engine_ctx_get(self, tag: str, engine) -> "EngineCtx":
        """The existing engine context (``HcclEngineCtxGet``; ``HCCL_E_NOT_FOUND`` if absent)."""
        return EngineCtx(self, _ectx.get(self.handle, tag, engine))

    def engine_ctx_copy(self, tag: str, engine, data, offset: int = 0, nbytes: int | None = None) -> None:
        """Copy host ``data`` (bytes-like, or a host pointer with ``nbytes``) into the context now."""
        if nbytes is None:
            if isinstance(data, int):
                raise TypeError("HcclEngineCtxCopy: give nbytes with a host pointer")
            nbytes = memoryview(data).nbytes
        _ectx.copy(self.handle, engine, tag, data, nbytes, offset)

    def engine_ctx_destroy(self, tag: str, engine) -> None:
        """Release one engine context (``HcclEngineCtxDestroy``)."""
        _ectx.destroy(self.handle, tag, engine)

    def lock(self) -> "_CommLock":
        """Inside an AI CPU kernel: ``with comm.lock():`` brackets the body with
        ``HcommAcquireComm`` / ``HcommReleaseComm`` on this communicator's name."""
        return _CommLock(self.name)

    def close(self) -> None:
        if not self._c.destroyed:
            _comm.destroy(self._c)

    def __repr__(self):
        return f"<Comm {self.name} rank {self.rank}/{self.size}>"


class Kernel:
    """A Python function used as an AI CPU kernel: ``Kernel(fn).launch(stream, *args)``."""

    def __init__(self, fn):
        self.fn = fn

    def launch(self, stream: Stream, *args, num_blocks: int = 1) -> None:
        stream.launch(self.fn, *args, num_blocks=num_blocks)

    def __call__(self, *args):
        return self.fn(*args)


# -- helpers of Thread.local_reduce ------------------------------------------------------------

_DTYPE_OF_NUMPY = {dt: value for value, dt in _NUMPY_DTYPE.items()}
_OP_NAMES = {"sum": 0, "prod": 1, "max": 2, "min": 3}


def _reduce_dtype(dtype) -> int:
    """An ``HcommDataType`` value from an int / enum, or from a numpy dtype (``HCCL_E_PARA`` if none)."""
    if dtype is None:
        raise TypeError("HcommLocalReduceOnThread: give dtype (an HcommDataType or a numpy dtype)")
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return dtype
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"HcommLocalReduceOnThread: dtype {dtype!r} is neither an HcommDataType nor a numpy dtype") from None
    value = _DTYPE_OF_NUMPY.get(np_dtype)
    if value is None:
        raise para("HcommLocalReduceOnThread", f"numpy dtype {np_dtype} has no HcommDataType")
    return value


def _reduce_op(op) -> int:
    """An ``HcommReduceOp`` value from an int / enum or a name (``"sum"``, ``"prod"``, ``"max"``, ``"min"``)."""
    if isinstance(op, str):
        value = _OP_NAMES.get(op.lower().removeprefix("hcomm_reduce_").removeprefix("hccl_reduce_"))
        if value is None:
            raise para("HcommLocalReduceOnThread", f"reduce op {op!r} is not sum, prod, max or min")
        return _HcommReduceOp(value)
    return op


# -- engine contexts and the communicator lock -------------------------------------------------


class EngineCtx(_Closable):
    """An engine context of a :class:`Comm`: ``size`` bytes at ``addr`` (host or device memory).

    ``close()`` destroys it (idempotent); otherwise it lives until the communicator is destroyed.
    """

    def __init__(self, comm: Comm, ctx):
        self.comm, self._ctx = comm, ctx
        self.tag, self.engine, self.addr, self.size = ctx.tag, ctx.engine, ctx.addr, ctx.size

    @property
    def on_device(self) -> bool:
        """True for device memory (AICPU, AICPU_TS, AIV), False for host memory."""
        return self._ctx.on_device

    @property
    def alive(self) -> bool:
        return self.comm._c.engine_ctx.get((self.tag, self.engine)) is self._ctx

    def write(self, data, offset: int = 0) -> None:
        """Copy bytes-like ``data`` into the context at ``offset`` now (``HcclEngineCtxCopy``)."""
        _ectx.copy(self.comm.handle, self.engine, self.tag, data, memoryview(data).nbytes, offset)

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """A live numpy view of the context's memory."""
        if not self.alive:
            raise _not_found("EngineCtx.numpy", f"engine context {self.tag!r} was destroyed")
        storage = self._ctx.alloc.storage
        return _sim().backend.view(storage, 0, storage.size, dtype)

    def read(self) -> bytes:
        """A copy of the context's bytes."""
        return self.numpy().tobytes()

    def close(self) -> None:
        """Destroy the context (``HcclEngineCtxDestroy``); nothing if it is already gone."""
        if not self.comm._c.destroyed and self.alive:
            _ectx.destroy(self.comm.handle, self.tag, self.engine)

    def __repr__(self):
        return f"<EngineCtx {self.tag!r} {self.engine.name} 0x{self.addr:x} {self.size} B>"


class _CommLock:
    """``with comm.lock():`` inside an AI CPU kernel (``HcommAcquireComm`` / ``HcommReleaseComm``)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        _comm_lock.acquire_comm(self.name)
        return self

    def __exit__(self, *exc):
        _comm_lock.release_comm(self.name)
