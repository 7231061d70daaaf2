"""Array and object-handle arguments of the flat C tier (scalars: :mod:`pyhcomm.args`).

An array is a Python sequence, or (as in C) a host pointer.

pyhccl passes C arrays inside structs as pointers (``HcclChannelDesc.memHandles``,
``HcclTeamCreateDesc.rankIds``): an int address of host memory holding the elements. pyhcomm
accepts that, and a plain Python list, which is what most callers write.
"""
from __future__ import annotations

import struct

from .. import args as scalar
from ..errors import not_found, para, ptr
from ..sim import current_sim as _sim
from ..sim import memory


def int_array(value, count: int, api: str, name: str, width: int = 8) -> list[int]:
    """``count`` unsigned integers of ``width`` bytes from ``value`` (a sequence, or a host
    pointer); NULL with ``count > 0`` is ``HCCL_E_PTR``, a short sequence or an unreadable
    pointer ``HCCL_E_PARA``."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise para(api, f"the count of {name} ({count!r}) must be a non-negative int")
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        if count:
            raise ptr(api, f"{name} is NULL but {count} elements are expected")
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            raw = memory.read_host(value, count * width)
        except memory.BadRange as why:
            raise para(api, f"{name}: {why}") from None
        code = {1: "B", 2: "H", 4: "I", 8: "Q"}[width]
        return list(struct.unpack(f"<{count}{code}", raw))
    items = list(value)
    if len(items) < count:
        raise para(api, f"{name} holds {len(items)} elements, fewer than {count}")
    return items[:count]


def sequence(value, api: str, name: str) -> list:
    """The elements of a list argument (pyhccl's ``object`` parameters: a list, tuple or other
    iterable); anything else (an int, a str) is a ``TypeError`` naming the call and the argument, as
    a binding's. The caller handles None (NULL) first."""
    if not isinstance(value, (str, bytes, bytearray, dict)):
        try:
            return list(value)
        except TypeError:
            pass
    raise TypeError(f"{api}: {name} must be a list, not {type(value).__name__}")


def live_object(handle, cls, api: str, name: str, what: str, missing=not_found):
    """The live object of class ``cls`` behind an opaque handle of the Sim's ``misc`` table
    (teams, windows, endpoints, configs, MC2 arguments): 0 is ``HCCL_E_PTR``; anything else that
    is not a live ``cls`` is ``missing`` (``HCCL_E_NOT_FOUND`` by default), naming ``what``."""
    handle = scalar.handle(handle, api, name)
    if not handle:
        raise ptr(api, f"{name} is NULL")
    obj = _sim().handles.misc.get(handle)
    if not isinstance(obj, cls) or not getattr(obj, "live", True):
        raise missing(api, f"{name} {handle!r} is not {what}")
    return obj
