"""Pointer, handle and integer arguments, checked the same way for every call of every tier.

Every call turns its pointer, handle and integer arguments into plain ``int`` here before it uses
them (in a lookup, in an address computation, in a message), so what a caller passes is either a
Python ``int`` or refused the same way everywhere:

* an ``int`` is taken as it is; a numpy integer, or any object with ``__index__``, is converted
  (as a pybind11 or C binding converts it);
* ``None`` is NULL (``0``) for a pointer or a handle; for an integer (or a float) it is a wrong type;
* a float argument (a number of seconds) takes an ``int``, a ``float`` and any numpy integer or
  floating scalar, as a binding's ``float`` converts them (:func:`seconds`);
* anything else (``bool``, ``float``, ``str``, a list ...) raises ``TypeError`` naming the API and
  the argument: the one exception a call of the C or acl tier lets escape, as a binding does;
* an integer outside the range of its C type gets the API's own invalid-argument code (the caller
  passes the error factory: ``HCCL_E_PARA`` for HCCL, ``ACL_ERROR_INVALID_PARAM`` ... for acl).

Hot paths test ``type(x) is int`` themselves and call these helpers only for anything else.

Arrays and object handles (:func:`int_array`, :func:`sequence`, :func:`live_object`): an array is a
Python sequence, or (as in C) a host pointer. pyhccl passes C arrays inside structs as pointers
(``HcclChannelDesc.memHandles``, ``HcclTeamCreateDesc.rankIds``): an int address of host memory
holding the elements. pyhcomm accepts that, and a plain Python list, which is what most callers write.
"""
from __future__ import annotations

import math
import numbers
import operator
import struct

from .errors import not_found, para, ptr
from .sim import current_sim as _sim
from .sim import memory

UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1


def _as_int(value, api: str, name: str, what: str) -> int:
    if isinstance(value, (bool, float, complex, str, bytes, bytearray)) or value is None:
        raise TypeError(f"{api}: {name} must be {what}, not {type(value).__name__}")
    try:
        return operator.index(value)
    except Exception:  # noqa: BLE001 - whatever __index__ raises, the argument has the wrong type
        raise TypeError(f"{api}: {name} must be {what}, not {type(value).__name__}") from None


def pointer(value, api: str, name: str, what: str = "an int address (None for NULL)") -> int:
    """An address argument as an ``int``: ``None`` is NULL (0); the caller decides what NULL means."""
    if type(value) is int:
        return value
    if value is None:
        return 0
    return _as_int(value, api, name, what)


def handle(value, api: str, name: str) -> int:
    """A handle argument as an ``int``: ``None`` is NULL (0); the caller looks the value up."""
    return pointer(value, api, name, "an int handle (None for NULL)")


def integer(value, api: str, name: str, lo: int = 0, hi: int = UINT64_MAX, error=para) -> int:
    """An integer argument in ``[lo, hi]`` (a uint64 by default); ``error(api, message)`` builds
    the code for a value outside it."""
    if type(value) is not int:
        value = _as_int(value, api, name, "an int")
    if value < lo or value > hi:
        raise error(api, f"{name} {value} is outside [{lo}, {hi}]")
    return value


def seconds(value, api: str, name: str = "timeOut", hi: int = UINT32_MAX, error=para) -> float:
    """A float argument counting seconds, in ``[0, hi]``: an ``int`` or a ``float``, a numpy
    integer (anything with ``__index__``) or any other real number (a numpy floating scalar) is
    taken; ``None``, ``bool``, ``str`` and the other types raise ``TypeError``; NaN or a value
    outside the range gets ``error(api, message)``."""
    if type(value) is not int and type(value) is not float:
        if isinstance(value, (bool, complex, str, bytes, bytearray)) or value is None:
            raise TypeError(f"{api}: {name} must be a number of seconds, not {type(value).__name__}")
        if hasattr(type(value), "__index__"):
            value = _as_int(value, api, name, "a number of seconds")
        elif isinstance(value, numbers.Real):
            value = float(value)
        else:
            raise TypeError(f"{api}: {name} must be a number of seconds, not {type(value).__name__}")
    if math.isnan(value) or value < 0 or value > hi:
        raise error(api, f"{name} {value} must be a number in [0, {hi}]")
    return value


def plain(value):
    """``value`` as an ``int`` when it is an integer of another type (a numpy integer), else
    unchanged (``bool`` and the other types included: the call's checks refuse them): for a call
    that hands its arguments on after checking them."""
    if type(value) is int or value is None or isinstance(value, (bool, float, complex, str, bytes, list, tuple)):
        return value
    try:
        return operator.index(value)
    except Exception:  # noqa: BLE001 - not an integer: the call's own checks answer it
        return value


def hexa(value) -> str:
    """``0x...`` for an int, ``repr`` for anything else: message text that cannot raise."""
    return f"0x{value:x}" if type(value) is int else repr(value)



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


def live_object(value, cls, api: str, name: str, what: str, missing=not_found):
    """The live object of class ``cls`` behind an opaque handle of the Sim's ``misc`` table
    (teams, windows, endpoints, configs, MC2 arguments): 0 is ``HCCL_E_PTR``; anything else that
    is not a live ``cls`` is ``missing`` (``HCCL_E_NOT_FOUND`` by default), naming ``what``."""
    h = handle(value, api, name)
    if not h:
        raise ptr(api, f"{name} is NULL")
    obj = _sim().handles.misc.get(h)
    if not isinstance(obj, cls) or not getattr(obj, "live", True):
        raise missing(api, f"{name} {h!r} is not {what}")
    return obj
