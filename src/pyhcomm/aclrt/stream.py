"""Streams: ``aclrtCreateStream``, ``aclrtDestroyStream`` and the synchronize calls.

Synchronize calls block the host thread and run the device's queued tasks (see
:mod:`pyhcomm.sim.scheduler`). A stream's first execution error is returned once, as an
``aclError``, and logged with its full explanation; the stream is usable again afterwards.
All of them are host calls (:func:`pyhcomm.aclrt.device.host_only`).
"""
from __future__ import annotations

import time

from .. import args
from ..sim import current_sim as _sim
from ..sim import kinds
from ..sim.record import outcome
from ..sim.runtime import program_ctx
from ..sched import ABORTED, DONE_OK, TIMED_OUT
from ..errors import AclError, acl_code_of, acl_error
from .device import current_device, host_only
from .state import aclrt_state



def get_stream(stream, api: str):
    """Resolve a stream handle; 0 (or None) is the current device's default stream."""
    if type(stream) is not int:
        stream = args.handle(stream, api, "stream")
    if not stream:
        return current_device(api).default_stream
    st = _sim().handles.streams.get(stream)
    if st is None:
        raise acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, f"stream 0x{stream:x} is not a live stream")
    return st


@host_only
def aclrtCreateStream() -> int:
    """Create a stream on the current device."""
    return current_device("aclrtCreateStream").new_stream().handle


@host_only
def aclrtDestroyStream(stream: int) -> None:
    """Wait for the stream's tasks, then destroy it. Blocks the host."""
    api = "aclrtDestroyStream"
    stream = args.handle(stream, api, "stream")
    if not stream:
        raise acl_error(AclError.ACL_ERROR_INVALID_PARAM, api, "stream is NULL")
    st = get_stream(stream, api)
    dev = _sim().runtime.devices.get(st.device)
    if dev is not None and st is dev.default_stream:
        raise acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, "the default stream cannot be destroyed")
    status = _sim().scheduler.run_until(lambda: st.idle or st.error is not None, None, api, (st,))
    _sim().record.host_effect(kinds.SYNCHRONIZE, api, ok=status == DONE_OK and st.error is None, device=st.device,
                              streams=(st.handle,), result=outcome(status, st.error))
    st.error = None
    _sim().scheduler.drop_stream(st)
    _sim().handles.streams.remove(st.handle)
    if dev is not None:
        dev.streams.pop(st.handle, None)


def take_error(streams, api: str, live_only: bool = False):
    """Return (and clear) the first error among ``streams`` as an ``AclRuntimeError``, or None.
    The stream's first error stays known to ``HcclGetCommAsyncError`` (``AclrtState.stream_errors``).
    ``live_only``: a stream destroyed meanwhile (by another host thread) has no error to report."""
    first = None
    for st in streams:
        if st.error is not None and not (live_only and st.destroyed):
            if first is None:
                first = st.error
            aclrt_state().stream_errors.setdefault(st.handle, st.error)
            st.error = None
    if first is None:
        return None
    err = acl_error(acl_code_of(first), api, str(first))
    err.cause = first  # the task failure itself (an HcclError with its own code)
    program_ctx().recent_error = str(err)
    return err


def sync_streams(streams, api: str, timeout_s=None, deadline=None, live_only: bool = False):
    """Block until ``streams`` are idle (or ``timeout_s`` passed; or the monotonic ``deadline``,
    when given, of a wait of ``timeout_s`` in all); raise the first error any hit (``live_only``:
    not that of a stream destroyed meanwhile, which is no longer waited for)."""
    streams = list(streams)
    if len(streams) == 1:       # (the common case: the scheduler's loop asks this at every turn)
        (one,) = streams

        def done():
            return one.idle or one.error is not None
    else:
        def done():
            return all(st.idle or st.error is not None for st in streams)

    wait_s = timeout_s if deadline is None else max(0.0, deadline - time.monotonic())
    status = _sim().scheduler.run_until(done, wait_s, api, streams)
    first = next((st.error for st in streams if st.error is not None and not (live_only and st.destroyed)), None)
    _sim().record.host_effect(kinds.SYNCHRONIZE, api, ok=status == DONE_OK and first is None,
                              device=streams[0].device if streams else None,
                              streams=tuple(st.handle for st in streams), timeout=timeout_s,
                              result=outcome(status, first))
    err = take_error(streams, api, live_only)
    if err is not None:
        raise err
    if status == ABORTED:
        raise acl_error(AclError.ACL_ERROR_RT_STREAM_ABORT, api, f"aborted: {_sim().scheduler.abort_reason}")
    if status == TIMED_OUT:
        raise acl_error(AclError.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, api, f"not complete after {timeout_s * 1000:g} ms")
    if status != DONE_OK:
        raise acl_error(AclError.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, api, "the stream can never complete")


@host_only
def aclrtSynchronizeStream(stream: int) -> None:
    """Block until every task of ``stream`` ran; raise its first execution error."""
    sync_streams([get_stream(stream, "aclrtSynchronizeStream")], "aclrtSynchronizeStream", None)


def _timeout_ms(timeout, api):
    timeout = args.integer(timeout, api, "timeout (ms)", -(1 << 31), (1 << 31) - 1,
                           lambda a, m: acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, a, m))
    if timeout == -1:
        return None
    if timeout <= 0:
        raise acl_error(AclError.ACL_ERROR_RT_PARAM_INVALID, api, f"timeout {timeout} must be -1 (forever) or > 0 ms")
    return timeout / 1000.0


@host_only
def aclrtSynchronizeStreamWithTimeout(stream: int, timeout: int) -> None:
    """As :func:`aclrtSynchronizeStream`, giving up after ``timeout`` ms (-1 = forever)."""
    api = "aclrtSynchronizeStreamWithTimeout"
    sync_streams([get_stream(stream, api)], api, _timeout_ms(timeout, api))


def sync_device(dev, api: str, timeout_s=None) -> None:
    """Block until every stream of ``dev`` is idle, streams created meanwhile included (by an
    HCCL call inside a kernel the synchronize runs, by another host thread): when it returns, no
    stream of the device has a task queued or running. Raises the first error any hit; a stream
    another host thread destroys meanwhile is no longer the device's, and no error."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        streams = list(dev.streams.values())
        sync_streams(streams, api, timeout_s, deadline, live_only=True)
        if all(st.idle and st.error is None for st in list(dev.streams.values())):
            return


@host_only
def aclrtSynchronizeDevice() -> None:
    """Block until every stream of the current device is idle (:func:`sync_device`); raise the
    first error any hit."""
    sync_device(current_device("aclrtSynchronizeDevice"), "aclrtSynchronizeDevice")


@host_only
def aclrtSynchronizeDeviceWithTimeout(timeout: int) -> None:
    """As :func:`aclrtSynchronizeDevice`, giving up after ``timeout`` ms (-1 = forever)."""
    api = "aclrtSynchronizeDeviceWithTimeout"
    dev = current_device(api)
    sync_device(dev, api, _timeout_ms(timeout, api))
