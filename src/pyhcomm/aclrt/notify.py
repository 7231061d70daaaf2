"""Runtime notifies: ``aclrtCreateNotify``, ``aclrtGetNotifyId``, ``aclrtRecordNotify``,
``aclrtWaitAndResetNotify``, ``aclrtDestroyNotify``.

A runtime notify is a 1-bit register like a thread notify, addressed by handle or by its numeric
id (``HcommAclrtNotify*OnThread``). ``aclrtWaitAndResetNotify`` takes seconds (0 = forever), as
the C documentation says (pyACL's page says milliseconds; see hcomm-api notes).
"""
from __future__ import annotations

from .. import args
from ..sim import current_sim as _sim
from ..sim import kinds
from ..sim.notify import Notify
from ..sim.notify import NotifyRecordTask, NotifyWaitTask
from ..sim.runtime import program_ctx
from ..errors import AclError, acl_error
from .device import current_device, host_only
from .state import aclrt_state
from .stream import get_stream

ACL_NOTIFY_DEFAULT, ACL_NOTIFY_DEVICE_USE_ONLY = 0, 1
UINT32_MAX = (1 << 32) - 1



class AclNotify:
    __slots__ = ("handle", "id", "device", "notify")

    def __init__(self, device: int):
        sim = _sim()
        state = aclrt_state(sim)
        self.device = device
        self.id = next(state.notify_ids)
        self.notify = Notify(f"runtime notify id {self.id} (device {device})", 0, sim.runtime.notify_counting)
        self.handle = sim.handles.notifies.add(self)
        state.runtime_notifies[self.id] = self


def _invalid(api: str, message: str):
    return acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, message)


def _get(notify, api) -> AclNotify:
    notify = args.handle(notify, api, "notify")
    if not notify:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "notify is NULL")
    n = _sim().handles.notifies.get(notify)
    if not isinstance(n, AclNotify):
        raise acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, f"notify {notify!r} is not a live runtime notify")
    return n


@host_only
def aclrtCreateNotify(flag: int = ACL_NOTIFY_DEFAULT) -> int:
    api = "aclrtCreateNotify"
    dev = current_device(api)
    flag = args.integer(flag, api, "flag", -(1 << 64), args.UINT64_MAX, _invalid)
    if flag not in (ACL_NOTIFY_DEFAULT, ACL_NOTIFY_DEVICE_USE_ONLY):
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, f"flag {flag!r} must be 0 or 1")
    return AclNotify(dev.id).handle


def aclrtGetNotifyId(notify) -> int:
    return _get(notify, "aclrtGetNotifyId").id


@host_only
def aclrtDestroyNotify(notify) -> None:
    n = _get(notify, "aclrtDestroyNotify")
    _sim().handles.notifies.remove(n.handle)
    aclrt_state().runtime_notifies.pop(n.id, None)


def by_id(notify_id):
    """The live runtime notify with id ``notify_id``, or None."""
    return aclrt_state().runtime_notifies.get(notify_id)


def _stream_of(n, stream, api):
    st = get_stream(stream, api)
    if st.device != n.device:
        raise acl_error(AclError.ACL_ERROR_RT_STREAM_CONTEXT, api,
                        f"stream 0x{st.handle:x} is on device {st.device}, the notify on device {n.device}")
    return st


@host_only
def aclrtRecordNotify(notify, stream) -> None:
    """Enqueue a record of ``notify`` on ``stream`` (0 = default stream)."""
    api = "aclrtRecordNotify"
    n = _get(notify, api)
    st = _stream_of(n, stream, api)
    task = NotifyRecordTask(kinds.ACLRT_NOTIFY_RECORD, st, None, None, "host", n.notify, n.id, 3)
    task.program = program_ctx().program
    _sim().scheduler.submit(task)


@host_only
def aclrtWaitAndResetNotify(notify, stream, timeout: int) -> None:
    """Enqueue on ``stream`` a wait for ``notify`` that resets it (``timeout`` s, 0 = forever)."""
    api = "aclrtWaitAndResetNotify"
    n = _get(notify, api)
    st = _stream_of(n, stream, api)
    timeout = args.integer(timeout, api, "timeout (s)", 0, UINT32_MAX, _invalid)
    task = NotifyWaitTask(kinds.ACLRT_NOTIFY_WAIT, st, None, None, "host", n.notify, n.id, timeout, 3)
    task.program = program_ctx().program
    _sim().scheduler.submit(task)

