"""HCOMM threads: an ordered task queue (a stream) plus its notify registers (``ThreadHandle``).

``HcclThreadAcquire`` creates threads with library-owned streams; ``HcclThreadAcquireWithStream``
wraps a user stream. An exported handle (``HcclThreadExportToCommEngine``) is another handle on the
same stream and notifies, for code running on another engine.

Engines and sides: what each engine allows is its :class:`~.engines.Engine` description (the
per-Sim table of :mod:`.engines`): which calls make its threads, their notify and thread limits,
the side its handles are used from (a host engine's by host code, a device engine's inside an AI
CPU kernel; the other side gets ``HCCL_E_NOT_SUPPORT`` and is told to export the thread), the task
kinds it runs.
"""
from __future__ import annotations

from ... import args
from ...sim import current_sim as _sim
from ...sim.notify import Notify
from ...sim.runtime import in_library
from ...defs.hccl_res import HcclDedicatedThreadType
from ...defs.res_defs import (HCOMM_THREAD_CONFIG_MAGIC_WORD, HCOMM_THREAD_CONFIG_VERSION, CommAbiHeader,
                             ThreadConfig)
from ...enums import ThreadResType
from ...errors import not_found, para, ptr
from .owner import get_owner
from ...args import sequence
from . import engines as _engines
from .engines import DEVICE, HOST, LOCAL_OPS, Engine, check_engine
from .engines.base import NOTIFY_MAX as HCOMM_NOTIFY_MAX_NUM

HCCL_THREAD_NOTIFY_MAX_NUM = 65536


class HcommThread:
    """One HCOMM thread handle (see the module docstring)."""

    __slots__ = ("handle", "comm", "engine", "stream", "notifies", "owns_stream", "rank", "device",
                 "origin", "exports", "local_side", "host_side", "last_dst", "last_src")

    def __init__(self, comm, engine: Engine, stream, notifies, owns_stream, origin=None):
        self.comm = comm
        self.engine = engine
        self.stream = stream
        self.notifies = notifies
        self.owns_stream = owns_stream
        self.rank = comm.rank
        self.device = comm.device
        self.origin = origin
        self.exports = {}
        self.local_side = local_op_side(engine)
        self.host_side = engine.host_side      # used from the host (else inside a kernel)
        self.last_dst = self.last_src = None   # allocations last resolved for this thread (fast path)
        sim = _sim()
        self.handle = sim.handles.threads.add(self)
        sim.record.note_thread(self)           # the record names the engine of the handle's tasks

    def __repr__(self):
        return (f"<HcommThread 0x{self.handle:x} {self.engine.name} rank {self.rank} "
                f"stream 0x{self.stream.handle:x} notifies={len(self.notifies)}>")


HOST_SIDE, DEVICE_SIDE = HOST, DEVICE


def local_op_side(engine: Engine):
    """The side from which local operations may use a thread of ``engine`` on the current product
    (None: from neither): the engine's side where it runs them, on a product that offers them
    there. The product cannot change while threads exist, so this is computed once.
    """
    product = _sim().runtime.product
    if not LOCAL_OPS <= engine.runs:
        return None
    if not product.hcomm:  # HCCL's own collectives drive host threads there (library_calls)
        return HOST_SIDE if in_library() and engine.host_side else None
    if product.device_side_only and engine.host_side:
        return None
    return engine.side


def _allowed(rule, engine: Engine, api: str) -> None:
    _engines.supported(engine, rule, api)


def _acquirable(e: Engine) -> bool:
    return e.threads.acquire


def _on_stream(e: Engine) -> bool:
    return e.threads.with_stream


def _check_notify_num(comm, num, total, api: str, limit: int = HCOMM_NOTIFY_MAX_NUM) -> None:
    num = args.integer(num, api, "notifyNumPerThread", -(1 << 64), args.UINT64_MAX)
    if num < 0:
        raise para(api, f"notify count {num} must be a non-negative integer")
    if num > limit:
        raise para(api, f"notify count {num} exceeds {limit} per thread")
    if comm.notify_total + total > HCCL_THREAD_NOTIFY_MAX_NUM:
        raise para(api, f"{total} more notifies would exceed {HCCL_THREAD_NOTIFY_MAX_NUM} per communicator "
                        f"({comm.notify_total} in use)")


def _new_thread(comm, engine, stream, notify_num, owns_stream) -> HcommThread:
    t = HcommThread(comm, engine, stream, [], owns_stream)
    counting = _sim().runtime.notify_counting
    owner = f"rank {comm.rank} thread 0x{t.handle:x}"    # one string for all its notifies
    t.notifies = [Notify(owner, i, counting) for i in range(notify_num)]
    comm.threads.append(t)
    comm.notify_total += notify_num
    return t


def acquire(comm_handle, engine, thread_num, notify_num_per_thread) -> list[HcommThread]:
    """``HcclThreadAcquire``: ``thread_num`` new threads with library-owned streams."""
    api = "HcclThreadAcquire"
    comm = get_owner(comm_handle, api)
    engine = check_engine(engine, api)
    _allowed(_acquirable, engine, api)
    limit = engine.threads.max_threads
    thread_num = args.integer(thread_num, api, "threadNum", -(1 << 64), args.UINT64_MAX)
    if not 0 < thread_num <= limit:
        raise para(api, f"threadNum {thread_num} is outside (0, {limit}]")
    notify_num_per_thread = args.integer(notify_num_per_thread, api, "notifyNumPerThread", -(1 << 64),
                                         args.UINT64_MAX)
    _check_notify_num(comm, notify_num_per_thread, thread_num * max(0, notify_num_per_thread), api,
                      engine.threads.notify_max)
    dev = _sim().runtime.devices[comm.device]
    out = []
    for _ in range(thread_num):
        stream = dev.new_stream(f"{engine.name} thread stream")
        out.append(_new_thread(comm, engine, stream, notify_num_per_thread, True))
    return out


def acquire_with_stream(comm_handle, engine, stream_handle, notify_num) -> HcommThread:
    """``HcclThreadAcquireWithStream``: wrap the user's stream as a thread."""
    api = "HcclThreadAcquireWithStream"
    comm = get_owner(comm_handle, api)
    engine = check_engine(engine, api)
    stream_handle = args.handle(stream_handle, api, "stream")
    if not stream_handle:
        raise ptr(api, "stream is NULL")
    stream = _sim().handles.streams.get(stream_handle)
    if stream is None:
        raise para(api, f"stream 0x{stream_handle:x} is not a live stream")
    if stream.device != comm.device:
        raise para(api, f"stream 0x{stream_handle:x} is on device {stream.device}, "
                        f"the communicator's rank {comm.rank} on device {comm.device}")
    _allowed(_on_stream, engine, api)
    notify_num = args.integer(notify_num, api, "notifyNum", -(1 << 64), args.UINT64_MAX)
    _check_notify_num(comm, notify_num, notify_num, api, engine.threads.notify_max)
    return _new_thread(comm, engine, stream, notify_num, False)


def get_thread(handle, api: str, name: str = "thread") -> HcommThread:
    """Look a thread handle up: 0 is ``HCCL_E_PTR``, unknown ``HCCL_E_NOT_FOUND``."""
    handle = args.handle(handle, api, name)
    if not handle:
        raise ptr(api, f"{name} is 0 (NULL)")
    t = _sim().handles.threads.get(handle)
    if t is None:
        raise not_found(api, f"{name} 0x{handle:x} is not a live thread handle "
                             "(from HcclThreadAcquire / HcclThreadAcquireWithStream)")
    if t.stream.destroyed:
        raise not_found(api, f"{name} 0x{handle:x}: its stream 0x{t.stream.handle:x} was destroyed")
    return t


def release_comm_threads(comm) -> None:
    """Forget the threads of a destroyed communicator; library-owned streams go with them."""
    dev = _sim().runtime.devices.get(comm.device)
    for t in comm.threads:
        _sim().handles.threads.remove(t.handle)
        if t.owns_stream and dev is not None and t.origin is None:
            dev.streams.pop(t.stream.handle, None)
            _sim().handles.streams.remove(t.stream.handle)
            _sim().scheduler.drop_stream(t.stream)
    comm.threads.clear()




# -- HcclThreadExportToCommEngine, HcclThreadResGetInfo ----------------------------------------


HCCL_THREAD_EXPORT_MAX_NUM = 40
#: ``sizeof(aclrtStream)``: the only ``infoLen`` ``THREAD_RES_TYPE_STREAM`` accepts.
ACLRT_STREAM_SIZE = 8


def _own_thread(comm, handle, api: str, name: str) -> HcommThread:
    t = get_thread(handle, api, name)
    if t.comm is not comm:
        raise para(api, f"{name} 0x{t.handle:x} belongs to rank {t.comm.rank} of {t.comm.name}, "
                        f"not to this communicator (rank {comm.rank} of {comm.name})")
    return t


def export_one(thread: HcommThread, engine: Engine) -> HcommThread:
    """The handle of ``thread`` for code running on ``engine`` (created once, then cached).

    The exported handle shares the original's stream and notify list: tasks enqueued and notifies
    recorded through either handle act on the same queue and registers. Exporting to the engine
    the (original) thread already has gives the original handle back; exporting an exported
    handle exports its original.
    """
    root = thread.origin if thread.origin is not None else thread
    if engine == root.engine:
        return root
    with _sim().lock:
        exported = root.exports.get(engine)
        if exported is None or _sim().handles.threads.get(exported.handle) is not exported:
            exported = HcommThread(root.comm, engine, root.stream, root.notifies, False, origin=root)
            root.exports[engine] = exported
            root.comm.threads.append(exported)
    return exported


def export_to_comm_engine(comm_handle, thread_num, thread_handles, dst_engine) -> list[HcommThread]:
    """``HcclThreadExportToCommEngine``: handles usable on ``dst_engine`` for the same threads.

    No import step is needed on the other side: the exported handles are valid at once and die
    with the communicator. Exporting the same thread to the same engine again gives the same handle.

    Raises:
        HcclUsageError: NULL comm or threads, or a NULL thread (``HCCL_E_PTR``); ``thread_num`` 0 or
            above 40, fewer handles than ``thread_num``, an invalid engine or a thread of another
            communicator (``HCCL_E_PARA``); unknown comm or thread (``HCCL_E_NOT_FOUND``).
    """
    api = "HcclThreadExportToCommEngine"
    comm = get_owner(comm_handle, api)
    if thread_handles is None:
        raise ptr(api, "threads is NULL")
    thread_num = args.integer(thread_num, api, "threadNum", -(1 << 64), args.UINT64_MAX)
    if not 0 < thread_num <= HCCL_THREAD_EXPORT_MAX_NUM:
        raise para(api, f"threadNum {thread_num} is outside [1, {HCCL_THREAD_EXPORT_MAX_NUM}]")
    engine = check_engine(dst_engine, api)
    if not isinstance(thread_handles, (list, tuple)):
        raise para(api, f"threads must be a list of thread handles, not {type(thread_handles).__name__}")
    thread_handles = list(thread_handles)
    if len(thread_handles) < thread_num:
        raise para(api, f"threads holds {len(thread_handles)} handles, fewer than threadNum {thread_num}")
    threads = [_own_thread(comm, h, api, f"threads[{i}]") for i, h in enumerate(thread_handles[:thread_num])]
    return [export_one(t, engine) for t in threads]


def res_get_info(comm_handle, thread_handle, res_type, info_len) -> int:
    """``HcclThreadResGetInfo``: a resource behind a thread; for ``THREAD_RES_TYPE_STREAM`` the
    ``aclrtStream`` handle (an int) of the thread's stream (shared by exported handles).

    Raises:
        HcclUsageError: NULL comm or thread (``HCCL_E_PTR``); unknown comm or thread
            (``HCCL_E_NOT_FOUND``); a thread of another communicator, a ``resType`` other than
            ``THREAD_RES_TYPE_STREAM`` (pyhcomm's choice: the enum has no other valid member), or
            ``infoLen != sizeof(aclrtStream)`` (8) (``HCCL_E_PARA``).
    """
    api = "HcclThreadResGetInfo"
    comm = get_owner(comm_handle, api)
    return stream_info(_own_thread(comm, thread_handle, api, "thread"), res_type, info_len, api)


def stream_info(t: HcommThread, res_type, info_len, api: str) -> int:
    """The ``aclrtStream`` behind ``t`` for ``THREAD_RES_TYPE_STREAM`` (see :func:`res_get_info`)."""
    res_type = args.integer(res_type, api, "resType", -(1 << 64), args.UINT64_MAX)
    info_len = args.integer(info_len, api, "infoLen", -(1 << 64), args.UINT64_MAX)
    if res_type != ThreadResType.THREAD_RES_TYPE_STREAM:
        raise para(api, f"resType {res_type} is not a supported ThreadResType (only "
                        f"THREAD_RES_TYPE_STREAM = {int(ThreadResType.THREAD_RES_TYPE_STREAM)})")
    if info_len != ACLRT_STREAM_SIZE:
        raise para(api, f"infoLen {info_len} must be sizeof(aclrtStream) = {ACLRT_STREAM_SIZE} "
                        "for THREAD_RES_TYPE_STREAM")
    return t.stream.handle


# -- HcclThreadAcquireWithConfig, HcclDedicatedThreadAcquire -----------------------------------

#: ``ThreadConfig.notifyNumPerThread`` is a ``uint16``.
CONFIG_NOTIFY_MAX = 0xFFFF


def acquire_with_config(comm_handle, engine, thread_num, thread_type, configs) -> list[HcommThread]:
    """``HcclThreadAcquireWithConfig``: ``thread_num`` threads, thread ``i`` with
    ``configs[i].notifyNumPerThread`` notifies (up to 65535; at most 65536 per communicator).
    The engine of the threads is the one that declares ``(engine, thread_type)``
    (:attr:`~.engines.Threads.config`: CPU or AICPU with ``THREAD_TYPE_TS`` gives CPU_TS / AICPU_TS
    threads, CPU with ``THREAD_TYPE_CPU`` host CPU threads); a config not initialised with
    ``ThreadConfigInit`` is ``HCCL_E_PARA``."""
    api = "HcclThreadAcquireWithConfig"
    comm = get_owner(comm_handle, api)
    engine = check_engine(engine, api)
    real = _engines.config_engine(engine, thread_type)
    if real is None:
        raise para(api, f"engine {engine.name} with thread type {thread_type!r}: use one of "
                        f"{_engines.config_pairs()}")
    _allowed(_acquirable, real, api)
    limit = real.threads.max_threads
    if isinstance(thread_num, bool) or not isinstance(thread_num, int) or not 0 < thread_num <= limit:
        raise para(api, f"threadNum {thread_num!r} is outside (0, {limit}]")
    if configs is None:
        raise ptr(api, "config is NULL")
    configs = [configs] if isinstance(configs, ThreadConfig) else list(configs)
    if len(configs) < thread_num:
        raise para(api, f"config holds {len(configs)} ThreadConfig, fewer than threadNum {thread_num}")
    counts = []
    for i, cfg in enumerate(configs[:thread_num]):
        if not isinstance(cfg, ThreadConfig):
            raise TypeError(f"{api}: config[{i}] must be a ThreadConfig, not {type(cfg).__name__}")
        if cfg.header.magicWord != HCOMM_THREAD_CONFIG_MAGIC_WORD:
            raise para(api, f"config[{i}] was not initialised with ThreadConfigInit")
        n = cfg.notifyNumPerThread
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= CONFIG_NOTIFY_MAX:
            raise para(api, f"config[{i}].notifyNumPerThread {n!r} is outside [0, {CONFIG_NOTIFY_MAX}]")
        counts.append(n)
    if comm.notify_total + sum(counts) > HCCL_THREAD_NOTIFY_MAX_NUM:
        raise para(api, f"{sum(counts)} more notifies would exceed {HCCL_THREAD_NOTIFY_MAX_NUM} per communicator "
                        f"({comm.notify_total} in use)")
    dev = _sim().runtime.devices[comm.device]
    return [_new_thread(comm, real, dev.new_stream(f"{real.name} thread stream"), n, True) for n in counts]


def thread_config_init(config) -> None:
    """``ThreadConfigInit``: the ABI header, no notifies."""
    config.header = CommAbiHeader(version=HCOMM_THREAD_CONFIG_VERSION, magicWord=HCOMM_THREAD_CONFIG_MAGIC_WORD,
                                  size=32, reserved=0)
    config.notifyNumPerThread = 0


def dedicated(comm_handle, use_type, notify_num) -> HcommThread:
    """``HcclDedicatedThreadAcquire``: the communicator's thread for ``use_type``, a thread of the
    engine of dedicated threads (AICPU_TS) made on the first call (with ``notify_num`` notifies)
    and returned by every later one."""
    api = "HcclDedicatedThreadAcquire"
    comm = get_owner(comm_handle, api)
    try:
        use_type = HcclDedicatedThreadType(use_type)
    except ValueError:
        raise para(api, f"useType {use_type!r} is not an HcclDedicatedThreadType") from None
    if use_type == HcclDedicatedThreadType.HCCL_DED_THREAD_TYPE_INVALID:
        raise para(api, "useType is HCCL_DED_THREAD_TYPE_INVALID")
    cache = comm.__dict__.setdefault("dedicated_threads", {})
    t = cache.get(use_type)
    if t is None or _sim().handles.threads.get(t.handle) is not t:
        t = cache[use_type] = acquire(comm_handle, _engines.dedicated_engine(), 1, notify_num)[0]
    return t


# -- HcommThreadAlloc / HcommThreadFree (no communicator) ---------------------------------------


def alloc(engine, notify_nums) -> list[HcommThread]:
    """``HcommThreadAlloc``: threads of the current device (see :mod:`pyhcomm.hcomm.resources.endpoint`)."""
    from .endpoint import current_device, scope
    api = "HcommThreadAlloc"
    engine = check_engine(engine, api)
    _allowed(_acquirable, engine, api)
    if notify_nums is None:
        raise ptr(api, "notifyNumPerThread is NULL")
    counts = [args.integer(n, api, "notifyNumPerThread", -(1 << 64), args.UINT64_MAX) for n in list(notify_nums)]
    limit = engine.threads.max_threads
    if not 0 < len(counts) <= limit:
        raise para(api, f"threadNum {len(counts)} is outside (0, {limit}]")
    owner = scope(current_device(api))
    total = sum(max(0, n) for n in counts)     # (numpy counts included: they are ints by now)
    for n in counts:
        _check_notify_num(owner, n, total, api, engine.threads.notify_max)
    dev = _sim().runtime.devices[owner.device]
    return [_new_thread(owner, engine, dev.new_stream(f"{engine.name} thread stream"), n, True) for n in counts]


def free(handles) -> None:
    """``HcommThreadFree``: release threads of ``HcommThreadAlloc`` (all checked first)."""
    from .endpoint import DeviceScope
    api = "HcommThreadFree"
    if handles is None:
        raise ptr(api, "threads is NULL")
    threads = [get_thread(h, api, f"threads[{i}]") for i, h in enumerate(sequence(handles, api, "threads"))]
    if not threads:
        raise para(api, "threadNum is 0")
    for i, t in enumerate(threads):
        if not isinstance(t.comm, DeviceScope):
            raise para(api, f"threads[{i}] 0x{t.handle:x} belongs to communicator {t.comm.name}: it is released "
                            "with the communicator")
    sim = _sim()
    for t in threads:
        owner = t.comm
        if t not in owner.threads:
            continue
        owner.threads.remove(t)
        owner.notify_total -= len(t.notifies)
        sim.handles.threads.remove(t.handle)
        dev = sim.runtime.devices.get(owner.device)
        if dev is not None and t.owns_stream:
            dev.streams.pop(t.stream.handle, None)
            sim.handles.streams.remove(t.stream.handle)
            sim.scheduler.drop_stream(t.stream)
