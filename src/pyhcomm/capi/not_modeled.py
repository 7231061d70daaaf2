"""Calls whose hardware pyhcomm does not model: each returns ``HCCL_E_NOT_SUPPORT`` (5) and logs
why. README lists them ("Not modeled"); none is left (the CCU is :mod:`.ccu`, the memory-range calls
are in :mod:`.hccl_comm`). A call added to ``CALLS`` gets its binding's signature and its reason.
"""
from __future__ import annotations

import inspect

from ..errors import not_support
from ._wrap import c_api

#: name -> (parameters, outputs after ret, why)
CALLS: dict[str, tuple] = {}


def _make(name: str, params: tuple, outputs: tuple, why: str):
    def impl(*args):
        raise not_support(name, why)

    impl.__name__ = impl.__qualname__ = name
    fn = c_api(*outputs)(impl)
    sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])

    def call(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)        # a wrong argument count is a TypeError, as a binding's
        return fn(*bound.args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Not modelled: returns HCCL_E_NOT_SUPPORT ({why})."
    call.__signature__ = sig
    call.raising = impl
    return call


for _name, (_params, _outputs, _why) in CALLS.items():
    globals()[_name] = _make(_name, _params, _outputs, _why)


__all__ = list(CALLS)
