"""Engine contexts: tagged, communicator-owned memory blocks handed to the data plane.

``HcclEngineCtxCreate(comm, ctxTag, engine, size)`` gives one zero-filled block per
(communicator, tag, engine). Hosts use it to pass serialised resources (thread and channel
handles, buffer addresses) to code running on an engine, e.g. an AI CPU kernel.

Placement (models hcomm's ``hcomm_engine_ctx_c_adpt.cc``) is the engine's ``context``
(:class:`~.engines.Engine`):

* ``HOST`` (``COMM_ENGINE_CPU``, ``COMM_ENGINE_CPU_TS``, ``COMM_ENGINE_CCU``): host memory with a
  real process address (like ``aclrtMallocHost``), in :data:`pyhcomm.sim.memory.host_map`;
* ``DEVICE`` (``COMM_ENGINE_AICPU``, ``COMM_ENGINE_AICPU_TS``, ``COMM_ENGINE_AIV``): device memory on
  the communicator's device, in :data:`pyhcomm.sim.memory.device_map`.

A context is keyed by (tag, engine value) on its communicator.

Both are owned by HCCL (owner ``"engine_ctx"``): ``aclrtFree`` / ``aclrtFreeHost`` refuse them.
``HcclEngineCtxDestroy`` releases one; ``HcclCommDestroy`` releases the rest.

Error codes where the documentation is silent (pyhcomm's choices):

* a missing context on Get / Copy / Destroy is ``HCCL_E_NOT_FOUND`` (the real library's code is
  unspecified; HCCL's simulator returns ``HCCL_E_PARA``; callers only test for success);
* a duplicate (tag, engine) on Create is ``HCCL_E_PARA`` (as the simulator);
* ``ctxTag`` NULL (None) or ``srcCtx`` NULL is ``HCCL_E_PTR``; an empty tag or one longer than
  ``HCCL_RES_TAG_MAX_LEN`` (255) characters is ``HCCL_E_PARA``;
* a Copy of ``size == 0`` bytes, a range past the end of the context, or a source that is not
  host memory known to pyhcomm is ``HCCL_E_PARA``;
* memory that cannot be allocated is ``HCCL_E_MEMORY``.
"""
from __future__ import annotations

import numpy as np

from ... import args
from ...sim import current_sim as _sim
from ...sim import kinds, memory
from ...enums import HCCL_RES_TAG_MAX_LEN
from ...errors import HcclResult, hccl_error, not_found, para, ptr
from .engines import HOST, Engine, check_engine, find
from .owner import get_owner

__all__ = ["EngineCtx", "create", "get", "copy", "destroy", "release_comm_engine_ctx", "is_host_engine"]

OWNER = "engine_ctx"
#: Same per-device capacity as ``aclrtMalloc`` (pyhcomm gives every device 64 GiB).
DEVICE_CAPACITY = 64 << 30



class EngineCtx:
    """One engine context: ``size`` bytes at ``addr`` (host or device memory, see module docstring)."""

    __slots__ = ("tag", "engine", "alloc", "comm")

    def __init__(self, comm, tag: str, engine: Engine, alloc: memory.Allocation):
        self.comm = comm
        self.tag = tag
        self.engine = engine
        self.alloc = alloc

    @property
    def addr(self) -> int:
        return self.alloc.addr

    @property
    def size(self) -> int:
        return self.alloc.size

    @property
    def on_device(self) -> bool:
        return self.alloc.kind == memory.DEVICE

    def __repr__(self):
        where = f"device {self.alloc.device}" if self.on_device else "host"
        return f"<EngineCtx {self.tag!r} {self.engine.name} 0x{self.addr:x} {self.size} B on {where}>"


def is_host_engine(engine) -> bool:
    """Whether ``engine``'s context lives in host memory (CPU, CPU_TS, CCU): an :class:`Engine`,
    or a ``CommEngine`` value of the current product."""
    if not isinstance(engine, Engine):
        engine = find(engine)
    return engine is not None and engine.context == HOST


def _check_tag(tag, api: str) -> str:
    if tag is None:
        raise ptr(api, "ctxTag is NULL")
    if isinstance(tag, (bytes, bytearray)):
        tag = bytes(tag).split(b"\0", 1)[0].decode("utf-8", "replace")
    if not isinstance(tag, str):
        raise TypeError(f"{api}: ctxTag must be a str, not {type(tag).__name__}")
    if not tag:
        raise para(api, "ctxTag is empty")
    if len(tag) > HCCL_RES_TAG_MAX_LEN:
        raise para(api, f"ctxTag has {len(tag)} characters, more than HCCL_RES_TAG_MAX_LEN "
                        f"({HCCL_RES_TAG_MAX_LEN})")
    return tag


def _check_u64(value, api: str, name: str) -> int:
    return args.integer(value, api, name)


def _lookup(comm, tag: str, engine: Engine, api: str) -> EngineCtx:
    ctx = comm.engine_ctx.get((tag, engine.value))
    if ctx is None:
        raise not_found(api, f"no engine context {tag!r} for {engine.name} on rank {comm.rank} "
                             "(create it with HcclEngineCtxCreate)")
    return ctx


def _allocate(comm, engine: Engine, size: int, api: str) -> memory.Allocation:
    if engine.context == HOST:
        try:
            alloc = memory.alloc_host(size)
        except memory.OutOfHostMemory as exc:
            raise hccl_error(HcclResult.HCCL_E_MEMORY, api, str(exc)) from None
        alloc.owner = OWNER
        return alloc
    used = memory.device_bytes(comm.device)
    if used + size > DEVICE_CAPACITY:
        raise hccl_error(HcclResult.HCCL_E_MEMORY, api, f"{size} bytes do not fit in the "
                         f"{DEVICE_CAPACITY >> 30} GiB of device {comm.device} ({used} bytes in use)")
    alloc = memory.alloc_device(comm.device, size, owner=OWNER)
    if alloc is None:
        raise hccl_error(HcclResult.HCCL_E_MEMORY, api, f"device {comm.device} address space is full")
    return alloc


def _free(ctx: EngineCtx) -> None:
    if ctx.on_device:
        memory.free_device(ctx.alloc)
    else:
        memory.free_host(ctx.alloc)


def create(comm_handle, ctx_tag, engine, size) -> EngineCtx:
    """``HcclEngineCtxCreate``: a new zero-filled context for (``ctx_tag``, ``engine``).

    Raises:
        HcclUsageError: NULL comm or tag (``HCCL_E_PTR``), unknown comm (``HCCL_E_NOT_FOUND``),
            bad tag, engine or size, or a duplicate (tag, engine) (``HCCL_E_PARA``).
        HcclRuntimeError: no memory (``HCCL_E_MEMORY``).
    """
    api = "HcclEngineCtxCreate"
    comm = get_owner(comm_handle, api)
    tag = _check_tag(ctx_tag, api)
    engine = check_engine(engine, api)
    size = _check_u64(size, api, "size")
    if size == 0:
        raise para(api, "size must be greater than 0")
    with comm.lock:
        if (tag, engine.value) in comm.engine_ctx:
            raise para(api, f"engine context {tag!r} for {engine.name} already exists on rank {comm.rank}")
        ctx = EngineCtx(comm, tag, engine, _allocate(comm, engine, size, api))
        comm.engine_ctx[(tag, engine.value)] = ctx
    return ctx


def get(comm_handle, ctx_tag, engine) -> EngineCtx:
    """``HcclEngineCtxGet``: the existing context for (``ctx_tag``, ``engine``).

    Raises:
        HcclUsageError: NULL comm or tag (``HCCL_E_PTR``), bad tag or engine (``HCCL_E_PARA``),
            unknown comm or no such context (``HCCL_E_NOT_FOUND``).
    """
    api = "HcclEngineCtxGet"
    comm = get_owner(comm_handle, api)
    tag = _check_tag(ctx_tag, api)
    engine = check_engine(engine, api)
    return _lookup(comm, tag, engine, api)


def _is_pointer(src) -> bool:
    """Whether ``srcCtx`` is a host address (an int or a numpy integer) rather than bytes-like."""
    return isinstance(src, (int, np.integer)) and not isinstance(src, bool)


def _source_bytes(src, size: int, api: str):
    """Where ``size`` bytes of ``src`` are: ``(storage, offset, owner)`` for a host pointer known
    to pyhcomm (held for the copy), ``(None, uint8 array, None)`` for a bytes-like object."""
    if isinstance(src, bool):
        raise TypeError(f"{api}: srcCtx must be a host pointer (int) or bytes-like, not bool")
    if _is_pointer(src):
        src = args.pointer(src, api, "srcCtx")
        try:
            alloc = memory.resolve(src, size, memory.HOST)
            storage, owner = memory.hold(alloc)
        except memory.BadRange as why:
            raise para(api, f"srcCtx {why} (or pass a bytes-like object)") from None
        return storage, src - alloc.addr, owner
    try:
        view = memoryview(src).cast("B")
    except TypeError:
        raise TypeError(f"{api}: srcCtx must be a host pointer (int) or bytes-like, "
                        f"not {type(src).__name__}") from None
    if view.nbytes < size:
        raise para(api, f"srcCtx holds {view.nbytes} bytes, fewer than size {size}")
    return None, np.frombuffer(view, dtype=np.uint8, count=size), None


def copy(comm_handle, engine, ctx_tag, src_ctx, size, dst_ctx_offset) -> None:
    """``HcclEngineCtxCopy``: copy ``size`` host bytes into the context at ``dst_ctx_offset``.

    Synchronous (a ``memcpy`` for host contexts, a host-to-device ``aclrtMemcpy`` for device
    contexts); not ordered with any stream, serialised with ``HcclEngineCtxDestroy`` (a copy
    racing a destroy on another host thread either lands before it or finds no context).
    ``src_ctx`` is a host pointer (``int``) known to pyhcomm or a bytes-like object (``bytes``,
    ``bytearray``, numpy array ...).

    Raises:
        HcclUsageError: NULL comm, tag or srcCtx (``HCCL_E_PTR``); bad tag, engine, size, a range
            past the end of the context or an unusable source (``HCCL_E_PARA``); unknown comm or
            no such context (``HCCL_E_NOT_FOUND``).
    """
    api = "HcclEngineCtxCopy"
    comm = get_owner(comm_handle, api)
    if ctx_tag is None:
        raise ptr(api, "ctxTag is NULL")
    if src_ctx is None or (_is_pointer(src_ctx) and src_ctx == 0):
        raise ptr(api, "srcCtx is NULL")
    tag = _check_tag(ctx_tag, api)
    engine = check_engine(engine, api)
    size = _check_u64(size, api, "size")
    offset = _check_u64(dst_ctx_offset, api, "dstCtxOffset")
    if size == 0:
        raise para(api, "size must be greater than 0")
    with comm.lock:
        ctx = _lookup(comm, tag, engine, api)
        if offset + size > ctx.size:
            raise para(api, f"dstCtxOffset {offset} + size {size} runs past the end of engine context {tag!r} "
                            f"({ctx.size} bytes)")
        dst = ctx.alloc.storage
        if dst is None:  # its device was reset
            raise not_found(api, f"engine context {tag!r} for {engine.name} was released")
        storage, data, _owner = _source_bytes(src_ctx, size, api)
        if storage is not None:
            _sim().backend.copy(dst, offset, storage, data, size)  # memmove: overlap is fine
        else:
            _sim().backend.from_host(dst, offset, data)
    pointer = _is_pointer(src_ctx)
    if pointer:
        src_ctx = int(src_ctx)
    _sim().record.host_effect(kinds.ENGINE_CTX_COPY, api, rank=comm.rank, device=comm.device, engine=engine,
                              reads=((src_ctx, size, _sim().memory.host_map.find(src_ctx)),) if pointer else (),
                              writes=((ctx.addr + offset, size, ctx.alloc),), nbytes=size, tag=tag,
                              source="pointer" if pointer else "object")


def destroy(comm_handle, ctx_tag, engine) -> None:
    """``HcclEngineCtxDestroy``: release one context (optional: the communicator releases the rest).

    Raises:
        HcclUsageError: NULL comm or tag (``HCCL_E_PTR``), bad tag or engine (``HCCL_E_PARA``),
            unknown comm or no such context (``HCCL_E_NOT_FOUND``).
    """
    api = "HcclEngineCtxDestroy"
    comm = get_owner(comm_handle, api)
    tag = _check_tag(ctx_tag, api)
    engine = check_engine(engine, api)
    with comm.lock:
        ctx = _lookup(comm, tag, engine, api)
        del comm.engine_ctx[(tag, engine.value)]
    _free(ctx)


def release_comm_engine_ctx(comm) -> None:
    """Free every engine context of a destroyed communicator (``HcclCommDestroy``)."""
    with comm.lock:
        ctxs = list(comm.engine_ctx.values())
        comm.engine_ctx.clear()
    for ctx in ctxs:
        _free(ctx)


