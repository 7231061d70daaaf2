"""Junk into every call: each function of the C tier and of ``acl.rt`` with arguments drawn only
from values that are never a live handle or usable memory here. The call must return a code (or
raise the documented ``TypeError``); the caller checks that no byte of any buffer changed.

``acl.util`` has no return codes: it may raise ``TypeError`` or ``ValueError`` (as pyACL's).
Calls left out change what the fuzzer's model relies on whatever their arguments
(``aclrtResetDevice(0)`` closes device 0, batch mode keeps the next calls' tasks, the default wait
timeout applies to the next waits).
"""
from __future__ import annotations

import inspect
import re

from hypothesis import strategies as st

import pyhcomm
from pyhcomm import acl, capi

from fuzz_calls import ANY, STATS, Finding, call, junk_values

LEFT_OUT = {"HcommBatchModeStart", "HcommBatchModeEnd", "HcommSetNotifyWaitTimeOut", "HcclGetErrorString",
            "reset_device", "acl_call", "get_soc_name", "HcclGroupStart", "HcclGroupEnd"}
#: ``void`` inlines of the C headers: they return None (and raise ``TypeError`` for a wrong object).
VOID = {"HcclCommConfigInit", "CcuLoopCfgInit", "CcuLoopGroupCfgInit"}


def _functions():
    out = []
    for name in capi.__all__:
        fn = getattr(capi, name, None)
        if inspect.isfunction(fn) and name not in LEFT_OUT:
            out.append(("c", name, fn))
    for name in dir(acl.rt):
        fn = getattr(acl.rt, name)
        if inspect.isfunction(fn) and not name.startswith("_") and name not in LEFT_OUT:
            out.append(("acl", name, fn))
    return out


FUNCTIONS = _functions()
UTIL = [("numpy_to_ptr", 1), ("bytes_to_ptr", 1), ("ptr_to_numpy", 3), ("ptr_to_bytes", 2)]


def _arity(fn) -> tuple:
    params = inspect.signature(fn).parameters.values()
    required = sum(1 for p in params if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD)
    total = sum(1 for p in params if p.kind == p.POSITIONAL_OR_KEYWORD)
    return required, total


#: Calls left out when live handles and pointers are mixed into the junk: they would destroy,
#: block on, or write what the model tracks (or enqueue work it does not know of).
NOT_WITH_LIVE = re.compile(r"Destroy|Free|free|Reset|reset|Suspend|Resume|Abort|Batch|SetNotify|finalize|nload|"
                           r"Record|Wait|Join|Drain|Fence|Send|Recv|Barrier|Group|aunch|InitRootInfo|ClusterInfo|"
                           r"SubComm|Split|synchronize|memcpy|memset|Write|Read|Copy|Reduce|All|Broadcast|Scatter|"
                           r"Gather|Transfer|Acquire[A-Z]?[a-z]*Comm$|ReleaseComm|SetDevice|set_device|TeamCreate$|"
                           r"Signal|Put|Get[A-Z][a-z]+Async|destroy_|record_|wait_|Cleared")


def junk_call(data, live=()) -> None:
    """One call with junk arguments (mixed with ``live`` handles and pointers, when given)."""
    junk = junk_values()
    functions = FUNCTIONS if not live else [f for f in FUNCTIONS if not NOT_WITH_LIVE.search(f[1])]
    tier, name, fn = data.draw(st.sampled_from(functions), label="function")
    lo, hi = _arity(fn)
    n = data.draw(st.integers(lo, hi), label="nargs")
    pool = junk + list(live) * 2
    args = [data.draw(st.sampled_from(pool), label=f"arg{i}") for i in range(n)]
    if name in VOID:
        STATS.add()
        try:
            ret = fn(*args)
        except TypeError:
            ret = None
        if ret is not None:
            raise Finding(f"{name}{tuple(args)!r} returned {ret!r}: a void call returns None")
    else:
        call(fn, *args, expect=ANY, tier=tier, name=name)   # (junk may be valid: 0, HcommEndpointGetDescNum(0))
    if data.draw(st.booleans(), label="util too"):
        uname, un = data.draw(st.sampled_from(UTIL), label="util")
        uargs = [data.draw(st.sampled_from(junk), label=f"uarg{i}") for i in range(un)]
        STATS.add()
        try:
            getattr(acl.util, uname)(*uargs)
        except (TypeError, ValueError):
            pass
        except Exception as exc:  # noqa: BLE001 - the property under test
            raise Finding(f"acl.util.{uname}{tuple(uargs)!r} raised {type(exc).__name__}: {exc}") from exc
    pyhcomm.current_sim()  # the Sim is still there
