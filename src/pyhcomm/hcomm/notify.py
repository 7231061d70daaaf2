"""Thread-to-thread synchronisation: notify record / wait tasks, and the wait timeouts.

``HcommThreadNotifyRecordOnThread(t, d, k)`` enqueues on ``t`` a record of notify ``k`` of thread
``d``; ``HcommThreadNotifyWaitOnThread(d, k, timeout)`` enqueues on ``d`` a wait for its own notify
``k``. Notifies are 1-bit registers (:mod:`pyhcomm.sim.notify`). The same tasks serve the
runtime notifies addressed by id (``HcommAclrtNotify*OnThread``, ``aclrtRecordNotify``).

Timeouts are seconds, 0 = wait forever. The default timeout of the ``*WithDefaultTimeout`` waits
is, in this order: ``HcommSetNotifyWaitTimeOut`` of the calling OS thread (or kernel);
``HCCL_EXEC_TIMEOUT``; 1836 s. Host-side waits get 27 s more when the default is not set
explicitly (the host build's ``NOTIFY_WAIT_TIMEOUT_OFFSET``; the docs say 50, see hcomm-api §10).

Deliberate choices: a record of a notify of a thread on another device is ``HCCL_E_PARA``;
Atlas 350 allows these calls on the host for host-engine threads (its custom-operator sample
records and waits from a CPU_TS thread), unlike the local copy.
"""
from __future__ import annotations

from .. import args
from ..aclrt import notify as aclrt_notify
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..sim import kinds
from ..sim.notify import NotifyRecordTask, NotifyWaitTask  # noqa: F401  (the tasks these calls issue)
from ..errors import para, ptr
from .resources.thread import get_thread
from . import validate as v
from .enqueue import enqueue
from .task_cache import capture

NOTIFY_WAIT_TIMEOUT_DEFAULT = 1836
NOTIFY_WAIT_TIMEOUT_OFFSET = 27
UINT32_MAX = (1 << 32) - 1
ENV_EXEC_TIMEOUT = "HCCL_EXEC_TIMEOUT"


def _check_timeout(value, api: str, name: str = "timeOut") -> int:
    """A timeout in seconds: an int in ``[0, 2**32)`` (0 = forever)."""
    return args.integer(value, api, f"{name} (s)", 0, UINT32_MAX)


def _notify_index(thread, idx, api: str, name: str):
    idx = args.integer(idx, api, name, -(1 << 64), args.UINT64_MAX)
    if not 0 <= idx < len(thread.notifies):
        raise ptr(api, f"{name} {idx} is out of range: thread 0x{thread.handle:x} has "
                       f"{len(thread.notifies)} notifies")
    return thread.notifies[idx]


def _issuer(thread_handle, api: str):
    """The issuing thread, checked; returns ``(thread, side, the caller's program context)``."""
    t, ctx, device_side = v.issuing_thread(thread_handle, api)
    return t, "device" if device_side else "host", ctx


def record(thread, dst_thread, dst_notify_idx) -> None:
    """``HcommThreadNotifyRecordOnThread``: enqueue on ``thread`` a record of ``dst_thread``'s notify."""
    api = "HcommThreadNotifyRecordOnThread"
    t, side, ctx = _issuer(thread, api)
    d = get_thread(dst_thread, api, "dstThread")
    notify = _notify_index(d, dst_notify_idx, api, "dstNotifyIdx")
    if d.device != t.device:
        raise para(api, f"dstThread 0x{d.handle:x} is on device {d.device}, thread 0x{t.handle:x} on device "
                        f"{t.device}: thread notifies do not cross devices (use a channel)")
    enqueue(NotifyRecordTask(kinds.THREAD_NOTIFY_RECORD, t.stream, t.handle, t.rank, side, notify,
                             (d.handle, notify.index), engine=t.engine), api, ctx)
    if ctx.kernels:
        capture(ctx, record, (thread, dst_thread, dst_notify_idx))


def default_timeout(side: str, api: str = "notify wait") -> float:
    """The timeout of a ``*WithDefaultTimeout`` wait issued now from ``side`` (``HCCL_E_PARA`` from
    ``api`` when ``HCCL_EXEC_TIMEOUT`` does not parse)."""
    ctx = program_ctx()
    if ctx.wait_timeout is not None:
        return ctx.wait_timeout
    cfg = _sim().config
    cfg.check(ENV_EXEC_TIMEOUT, api)
    base = cfg.exec_timeout
    if base <= 0:
        return 0  # 0 = never time out
    return base + (NOTIFY_WAIT_TIMEOUT_OFFSET if side == "host" else 0)


#: ``timeout`` of the ``*WithDefaultTimeout`` waits (a caller's ``None`` is a wrong type, not this).
DEFAULT_TIMEOUT = object()


def wait(thread, notify_idx, timeout, api="HcommThreadNotifyWaitOnThread") -> None:
    """Enqueue on ``thread`` a wait for its own notify ``notify_idx`` (``timeout`` seconds, 0 = forever)."""
    t, side, ctx = _issuer(thread, api)
    notify = _notify_index(t, notify_idx, api, "notifyIdx")
    if timeout is DEFAULT_TIMEOUT:
        timeout = default_timeout(side, api)
    else:
        timeout = _check_timeout(timeout, api)
    enqueue(NotifyWaitTask(kinds.THREAD_NOTIFY_WAIT, t.stream, t.handle, t.rank, side, notify,
                           (t.handle, notify.index), timeout, engine=t.engine), api, ctx)
    if ctx.kernels:
        capture(ctx, wait, (thread, notify_idx, timeout, api))


def wait_default(thread, notify_idx) -> None:
    """``HcommThreadNotifyWaitOnThreadWithDefaultTimeout``."""
    wait(thread, notify_idx, DEFAULT_TIMEOUT, "HcommThreadNotifyWaitOnThreadWithDefaultTimeout")


def _float_seconds(value, api: str) -> int:
    """A ``float timeOut`` argument (:func:`pyhcomm.args.seconds`), as whole seconds."""
    return int(args.seconds(value, api, "timeOut", UINT32_MAX))


def set_wait_timeout(value) -> None:
    """``HcommSetNotifyWaitTimeOut``: the default wait timeout of this OS thread (or kernel)."""
    program_ctx().wait_timeout = _float_seconds(value, "HcommSetNotifyWaitTimeOut")


def thread_res_acquire_timeout(value) -> None:
    """``HcommThreadResAcquireTimeOut``: device side only (queues never fill here: accepted, unused)."""
    api = "HcommThreadResAcquireTimeOut"
    if not program_ctx().kernels:
        from ..errors import not_support
        raise not_support(api, "supported on the device side only (inside an AI CPU kernel)")
    _float_seconds(value, api)


def _runtime_notify(notify_id, t, api: str):
    from ..errors import not_support
    if _sim().runtime.product.is_950:
        raise not_support(api, f"runtime notifies are not supported on {_sim().runtime.product.name}")
    notify_id = args.integer(notify_id, api, "notify id", -(1 << 64), args.UINT64_MAX)
    n = aclrt_notify.by_id(notify_id)
    if n is None:
        raise para(api, f"no runtime notify has id {notify_id} (aclrtCreateNotify + aclrtGetNotifyId)")
    if n.device != t.device:
        raise para(api, f"runtime notify {notify_id} is on device {n.device}, the thread on device {t.device}")
    return n


def aclrt_record(thread, dst_notify_id) -> None:
    """``HcommAclrtNotifyRecordOnThread``: enqueue a record of the runtime notify with that id."""
    api = "HcommAclrtNotifyRecordOnThread"
    t, side, ctx = _issuer(thread, api)
    n = _runtime_notify(dst_notify_id, t, api)
    enqueue(NotifyRecordTask(kinds.ACLRT_NOTIFY_RECORD, t.stream, t.handle, t.rank, side, n.notify, n.id,
                             engine=t.engine), api, ctx)
    if ctx.kernels:
        capture(ctx, aclrt_record, (thread, dst_notify_id))


def aclrt_wait(thread, notify_id, timeout) -> None:
    """``HcommAclrtNotifyWaitOnThread``: enqueue a wait for the runtime notify with that id."""
    api = "HcommAclrtNotifyWaitOnThread"
    t, side, ctx = _issuer(thread, api)
    n = _runtime_notify(notify_id, t, api)
    timeout = _check_timeout(timeout, api)
    enqueue(NotifyWaitTask(kinds.ACLRT_NOTIFY_WAIT, t.stream, t.handle, t.rank, side, n.notify, n.id, timeout,
                           engine=t.engine), api, ctx)
    if ctx.kernels:
        capture(ctx, aclrt_wait, (thread, notify_id, timeout))
