"""Communicator state: names, status, suspend / resume, state callbacks, asynchronous errors.

* ``HcclCommGetHandleWithName`` / ``HcclCommGetStatus`` find a communicator by name. Ranks of one
  process share their communicator's name, so a name means the rank on the calling host thread's
  current device (or the only live rank of that name). Unknown: ``HCCL_E_NOT_FOUND``.
* ``HcclCommSuspend`` sets the status to ``HCCL_COMM_STATUS_SUSPENDING``: from then on the
  communicator's calls other than queries, resume and destroy are refused with
  ``HCCL_E_SUSPENDING`` (tasks already enqueued run on). ``HcclCommResume`` clears what is in
  flight (every notify of its threads and channels back to 0, the asynchronous error forgotten)
  and makes it ready again; resuming a ready communicator is ``HCCL_E_PARA`` (pyhcomm's choice).
* ``HcclCommRegCommStateCallback(regName, cb, args)`` registers a Python callable
  ``cb(comm, phase, args) -> int`` per service name (``cb`` None or 0 unregisters); it is called
  with ``HCCL_COMM_STATE_PHASE_DESTROY_PRE`` / ``_POST`` around ``HcclCommDestroy`` and
  ``_RESUME_PRE`` / ``_POST`` around ``HcclCommResume``, in registration order. A nonzero return
  of a PRE callback stops the operation and becomes its return code; of a POST callback, it is the
  return code of the finished operation.
* ``HcclGetCommAsyncError`` reports the first failure of a task on one of the communicator's
  threads' streams, also one a synchronize already returned (a timed-out or deadlocked wait:
  ``HCCL_E_TIMEOUT``; a failed kernel or runtime task: ``HCCL_E_RUNTIME``; another HCCL error:
  its code), else ``HCCL_SUCCESS``.
"""
from __future__ import annotations

from ..defs.hccl_types import HcclCommStatePhase, HcclCommStatus
from ..errors import (AclRuntimeError, HcclDeadlockError, HcclError, HcclResult, hccl_error, log, not_found,
                      not_support, para, ptr)
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..aclrt.state import aclrt_state
from . import comm as comm_mod
from .state import hccl_state

P = HcclCommStatePhase


def by_name(name, api: str):
    """The live communicator rank called ``name`` (see the module docstring)."""
    if name is None:
        raise ptr(api, "commName is NULL")
    if not isinstance(name, str):
        raise TypeError(f"{api}: commName must be a str, not {type(name).__name__}")
    found = [c for c in _sim().handles.comms.values() if c.name == name and not c.destroyed]
    if not found:
        raise not_found(api, f"no live communicator is called {name!r}")
    if len(found) == 1:
        return found[0]
    dev = program_ctx().device
    here = [c for c in found if c.device == dev]
    if len(here) != 1:
        raise not_found(api, f"{len(found)} ranks are called {name!r} and {len(here)} of them are on the current "
                             f"device ({dev}): set the device of the rank you mean")
    return here[0]


def status(name) -> int:
    c = by_name(name, "HcclCommGetStatus")
    return int(HcclCommStatus.HCCL_COMM_STATUS_SUSPENDING if c.suspended else HcclCommStatus.HCCL_COMM_STATUS_READY)


def suspend(comm_handle) -> None:
    c = comm_mod.get_comm(comm_handle, "HcclCommSuspend")
    c.suspended = True


def _callbacks() -> dict:
    return hccl_state().comm_state_callbacks


def register_callback(name, cb, args) -> None:
    api = "HcclCommRegCommStateCallback"
    if name is None:
        raise ptr(api, "regName is NULL")
    if not isinstance(name, str) or not name:
        raise para(api, "regName must be a non-empty str")
    if cb is None or (isinstance(cb, int) and not isinstance(cb, bool) and cb == 0):
        _callbacks().pop(name, None)
        return
    if isinstance(cb, int) and not isinstance(cb, bool):
        raise not_support(api, "cb is a C function address; pyhcomm can only call a Python callable "
                               "cb(comm, phase, args)")
    if not callable(cb):
        raise para(api, f"cb {cb!r} is not callable: pyhcomm calls a Python function cb(comm, phase, args)")
    _callbacks()[name] = (cb, args)


def run_callbacks(comm, phase: HcclCommStatePhase, api: str) -> None:
    """Call every registered callback for ``phase``; raise the first nonzero return as ``api``'s error."""
    for name, (cb, args) in list(_callbacks().items()):
        ret = cb(comm.handle, phase, args)
        if ret not in (None, 0):
            try:
                code = HcclResult(ret)
            except ValueError:
                code = HcclResult.HCCL_E_INTERNAL
            raise hccl_error(code, api, f"state callback {name!r} returned {ret} at {phase.name}")


def destroy(comm_handle) -> None:
    """``HcclCommDestroy`` with its state callbacks."""
    api = "HcclCommDestroy"
    c = comm_mod.get_comm(comm_handle, api)
    run_callbacks(c, P.HCCL_COMM_STATE_PHASE_DESTROY_PRE, api)
    comm_mod.destroy(c)
    run_callbacks(c, P.HCCL_COMM_STATE_PHASE_DESTROY_POST, api)


def resume(comm_handle) -> None:
    api = "HcclCommResume"
    c = comm_mod.get_comm(comm_handle, api)
    if not c.suspended:
        raise para(api, f"{c.name} rank {c.rank} is not suspended (HcclCommSuspend first)")
    run_callbacks(c, P.HCCL_COMM_STATE_PHASE_RESUME_PRE, api)
    with _sim().lock:
        for n in [n for t in c.threads for n in t.notifies] + [n for ch in c.channels for n in ch.notifies]:
            n.value = 0
        c.async_error_seen = {id(t.stream.error) for t in c.threads if t.stream.error is not None}
        reported = aclrt_state().stream_errors
        for t in c.threads:
            reported.pop(t.stream.handle, None)
        c.suspended = False
    run_callbacks(c, P.HCCL_COMM_STATE_PHASE_RESUME_POST, api)


def _code_of(exc) -> int:
    if isinstance(exc, HcclDeadlockError):
        return int(HcclResult.HCCL_E_TIMEOUT)
    if isinstance(exc, AclRuntimeError):
        return int(HcclResult.HCCL_E_RUNTIME)
    if isinstance(exc, HcclError):
        try:
            return int(HcclResult(exc.code))
        except ValueError:
            return int(HcclResult.HCCL_E_INTERNAL)
    return int(HcclResult.HCCL_E_INTERNAL)


def async_error(comm_handle) -> int:
    """``HcclGetCommAsyncError``: see the module docstring."""
    c = comm_mod.get_comm(comm_handle, "HcclGetCommAsyncError")
    seen = getattr(c, "async_error_seen", set())
    reported = aclrt_state().stream_errors
    for t in c.threads:
        err = t.stream.error if t.stream.error is not None else reported.get(t.stream.handle)
        if err is not None and id(err) not in seen:
            log.info("HcclGetCommAsyncError: rank %d: %s", c.rank, err)
            return _code_of(err)
    return int(HcclResult.HCCL_SUCCESS)
