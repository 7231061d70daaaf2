"""The catalogue: every algorithm of the collective library, in one explicit tuple.

An algorithm family is one module of this package (its :class:`~..algorithm.Algorithm`
descriptor, pointing at the functions that issue it); adding one is that module plus its entry in
:data:`CATALOGUE` (docs/algorithms.md). The selector (:mod:`..selector`) names algorithms by
:attr:`~..algorithm.Algorithm.name`, looked up here.
"""
from __future__ import annotations

from functools import lru_cache

from ..algorithm import Algorithm
from . import hierarchy
from .ahc import AHC, AHC_BROKE
from .double_ring import DOUBLE_RING
from .hdr import HDR
from .mesh import MESH, MESH_ONESHOT
from .nb import NB
from .nhr import NHR
from .nhr_v1 import NHR_V1
from .p2p import P2P
from .pairwise import PAIRWISE
from .pipeline import PIPELINE
from .ring import RING
from .star import STAR

#: Every algorithm, by family.
CATALOGUE = (RING, MESH, MESH_ONESHOT, DOUBLE_RING, HDR, NHR, NHR_V1, NB, PIPELINE, PAIRWISE, AHC, AHC_BROKE, STAR, P2P)


def find(name: str) -> Algorithm:
    """The algorithm called ``name``: one of the catalogue, or a hierarchy of them
    (``"level0:mesh;level1:nhr"``, :mod:`.hierarchy`). ``KeyError`` naming the known ones when
    there is none."""
    for a in CATALOGUE:
        if a.name == name:
            return a
    levels = hierarchy.parse(name)
    if levels is not None:
        return _composed(tuple(levels))
    raise KeyError(f"no collective algorithm {name!r} (known: {', '.join(a.name for a in CATALOGUE)}, "
                   f"and hierarchies of them: 'level0:<name>;level1:<name>[;level2:<name>]')")


@lru_cache(maxsize=None)
def _composed(levels: tuple) -> Algorithm:
    return hierarchy.compose([find(n) for n in levels])
