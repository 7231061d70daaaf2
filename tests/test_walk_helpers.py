"""The replay walk's array helpers against their plain numpy definitions: ``stable_argsort`` is
``np.argsort(kind="stable")``; ``successors`` groups edges by source as a stable sort of every
edge would, ``indegrees`` counts them by destination."""
import numpy as np
import pytest

from pyhcomm.analysis.keysort import stable_argsort
from pyhcomm.timing.adjacency import index_type, indegrees, one, successors


@pytest.mark.parametrize("keys", [
    np.zeros(0, dtype=np.int64),
    np.array([7], dtype=np.int64),
    np.array([5, 5, 5], dtype=np.int64),
    np.random.default_rng(0).integers(0, 100, 1000),                  # fits 16 bits
    np.random.default_rng(1).integers(-5, 70_000, 1000),              # does not
    0x5710_0000_4000 + np.random.default_rng(2).integers(0, 3000, 1000) * 256,   # stream handles
    np.random.default_rng(3).integers(-2 ** 62, 2 ** 62, 1000),
    np.array([2 ** 63 - 1, -2 ** 63, 0, 2 ** 63 - 1], dtype=np.int64),
])
def test_stable_argsort_is_numpys(keys):
    assert np.array_equal(stable_argsort(keys), np.argsort(keys, kind="stable"))


def _reference(size, parts):
    src = np.concatenate([s for s, _d, _g in parts] + [np.zeros(0, dtype=np.int64)])
    dst = np.concatenate([d for _s, d, _g in parts] + [np.zeros(0, dtype=np.int64)])
    ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=size), out=ptr[1:])
    return ptr, dst[np.argsort(src, kind="stable")], np.bincount(dst, minlength=size)


@pytest.mark.parametrize("seed", range(40))
def test_successors_group_edges_as_a_stable_sort(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    parts = []
    for _ in range(int(rng.integers(0, 6))):
        m = int(rng.integers(0, 40))
        shape = int(rng.integers(0, 3))
        if shape == 0 and m <= size:            # distinct sources
            s = rng.permutation(size)[:m]
        else:                                   # repeated ones, grouped or not
            s = rng.integers(0, size, m)
            if shape == 2:
                s = np.sort(s)
        parts.append((s.astype(np.int64), rng.integers(0, size, m).astype(np.int64), shape == 2))
    ptr, succ = successors(size, parts)
    want_ptr, want_succ, want_indeg = _reference(size, parts)
    assert np.array_equal(ptr, want_ptr)
    assert np.array_equal(succ, want_succ)
    assert np.array_equal(indegrees(size, parts), want_indeg)


def test_index_type_is_int32_while_counts_fit():
    assert index_type() is np.int32
    assert index_type(0, 2 ** 31 - 2) is np.int32
    assert index_type(5, 2 ** 31 - 1) is np.int64
    assert index_type(2 ** 40) is np.int64


def test_successors_of_int64_edges_are_int32_and_the_same():
    parts = [(np.array([3, 0, 3], dtype=np.int64), np.array([1, 2, 0], dtype=np.int64), False),
             (np.array([1, 1], dtype=np.int64), np.array([3, 0], dtype=np.int64), True)]
    ptr, succ = successors(4, parts)
    assert ptr.dtype == np.int32 and succ.dtype == np.int32
    assert ptr.tolist() == [0, 1, 3, 3, 5] and succ.tolist() == [2, 3, 0, 1, 0]
    deg = indegrees(4, parts)
    assert deg.dtype == np.int32 and deg.tolist() == [2, 1, 1, 1]


def test_the_walks_decrement_keeps_the_in_degrees_type():
    """The walk decrements with ``one(deg)``: a scalar of the counters' own type, so that numpy's
    ``subtract.at`` neither casts (the slow path of a Python int on int32) nor changes the dtype."""
    deg = indegrees(3, [(np.array([0, 0, 1]), np.array([2, 2, 1]), True)])
    dec = one(deg)
    assert type(dec) is np.int32 and dec == 1
    np.subtract.at(deg, np.array([2, 1, 2]), dec)
    assert deg.dtype == np.int32 and deg.tolist() == [0, 0, 0]
