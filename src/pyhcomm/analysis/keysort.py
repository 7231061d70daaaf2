"""A stable ordering of integer keys, faster for the few-valued keys of a record.

``stable_argsort(keys)`` is ``np.argsort(keys, kind="stable")``, the same permutation. When the
keys, less their minimum and divided by the greatest common divisor of those differences, fit 16
bits (streams, programs, batches: a few thousand values, stream handles 256 apart), it sorts
those with numpy's radix sort instead of a comparison sort. Both orders are stable and the
mapping keeps the keys' order, so the results are identical.
"""
from __future__ import annotations

import numpy as np

_RADIX = 1 << 16


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """The indices that sort ``keys`` (a 1-d numpy integer array), equal keys in index order."""
    if len(keys) > 1:
        lo, hi = int(keys.min()), int(keys.max())
        span = hi - lo
        if span < _RADIX:
            return np.argsort((keys - lo).astype(np.uint16), kind="stable")
        if span < 1 << 62:
            rel = keys - lo
            g = int(np.gcd.reduce(rel))
            if g and span // g < _RADIX:
                return np.argsort((rel // g).astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


__all__ = ["stable_argsort"]
