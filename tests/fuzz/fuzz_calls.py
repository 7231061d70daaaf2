"""How the fuzzer calls the C and acl tiers, and what it accepts back.

Every call goes through :func:`call`, which counts it and checks the properties of issue 8: the
call returns its code (``ret`` of the C tier, the last value of the acl tier), or raises the
documented ``TypeError`` when an argument has the wrong Python type; any other exception is a
finding. ``expect`` says what the fuzzer knows: ``"ok"`` (every argument valid: 0 is due),
``"fail"`` (a value of the right type is wrong: a nonzero code is due), ``"type"`` (an argument
has the wrong type: ``TypeError`` or a nonzero code, never 0), ``"any"`` (a race, or junk that may
happen to be valid: 0 or a code).
"""
from __future__ import annotations

import collections
import math
import threading

import numpy as np

import pyhcomm

OK, FAIL, TYPE, ANY = "ok", "fail", "type", "any"


class Finding(AssertionError):
    """A property of issue 8 does not hold (an escaped exception, a wrong code, a changed byte)."""


class Stats:
    """Calls made, for the report of a long run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0
        self.examples = 0
        self.by_api = collections.Counter()

    def add(self, n: int = 1, api: str = "other") -> None:
        with self.lock:
            self.calls += n
            self.by_api[api] += n


STATS = Stats()


def _show(args) -> str:
    out = []
    for a in args:
        r = repr(a)
        out.append(r if len(r) < 60 else r[:57] + "...")
    return ", ".join(out)


def code_of(ret, tier: str):
    """The return code in what a call returned (``tier`` "c" or "acl")."""
    if isinstance(ret, tuple):
        return ret[0] if tier == "c" else ret[-1]
    return ret


def call(fn, *args, expect=OK, tier="c", name=None):
    """Call ``fn(*args)`` and check its outcome against ``expect``; return what it returned (None
    after a ``TypeError``)."""
    label = name or getattr(fn, "__name__", repr(fn))
    STATS.add(api=label)
    try:
        ret = fn(*args)
    except TypeError as exc:
        if expect in (TYPE, ANY):
            return None
        raise Finding(f"{label}({_show(args)}) raised TypeError where {expect!r} was due: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - the property under test
        raise Finding(f"{label}({_show(args)}) raised {type(exc).__name__}: {exc}") from exc
    code = code_of(ret, tier)
    if not isinstance(code, int):
        raise Finding(f"{label}({_show(args)}) returned {ret!r}: no int code")
    if expect == OK and code != 0:
        raise Finding(f"{label}({_show(args)}) returned {int(code)} ({_name(code)}) where 0 was due")
    if expect in (FAIL, TYPE) and code == 0:
        raise Finding(f"{label}({_show(args)}) returned 0 where a failure was due"
                      + (" (an argument of the wrong type)" if expect == TYPE else ""))
    return ret


def _name(code) -> str:
    for enum in (pyhcomm.HcclResult, pyhcomm.AclError):
        try:
            return enum(code).name
        except ValueError:
            pass
    return "?"


#: Values of the wrong Python type for an int parameter (pointer, handle, count, enum).
WRONG_TYPE = ("x", b"\x01", 1.5, float("nan"), [1], {}, (2,), object(), np.float64(4.0), complex(1, 0))
#: Ints that are no valid pointer, handle or count here (but the right type).
BAD_INTS = (-1, 1 << 64, (1 << 64) + 4096, 1 << 70, 0x1234, 0xDEAD_0000, -(1 << 63))
#: Numpy scalars: integers are the numbers they hold, the others a wrong type.
NUMPY_JUNK = (np.int64(-1), np.uint64(1 << 63), np.int8(0), np.uint16(4), np.int32(64), np.bool_(True),
              np.float32(2.5), np.float16(1.0))


def junk_values():
    """Every junk value, for calls made with junk only."""
    return list(WRONG_TYPE) + list(BAD_INTS) + list(NUMPY_JUNK) + [None, 0, True, math.inf]
