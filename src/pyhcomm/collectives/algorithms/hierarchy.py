"""Hierarchical collectives: one algorithm of the catalogue per level, composed as HCCL composes them.

Level 0 runs inside a server, level 1 between the servers (of one super pod when there is a level
2), level 2 between super pods. A rank's coordinates are ``c0`` its position in its server, ``c1``
its server's position (in its super pod, with three levels), ``c2`` its super pod; the group of a
rank at level ``i`` is the ranks that share its coordinates but ``c_i`` (the ranks of its server;
the same position in every server; the same place in every super pod). HCCL's order
(``hierarchical_comm_principle.md``, ``coll_all_reduce_mesh_executor.cc``,
``coll_all_reduce_ring_for_910_93_executor.cc``, ``coll_all_gather_mesh_executor.cc``):

* AllReduce: ReduceScatter at level 0, the AllReduce of this rank's slice one level up (itself
  ReduceScatter, AllReduce above, AllGather), AllGather at level 0;
* ReduceScatter: the highest level first, each level reducing the blocks of the level below
  (a server's slices at level 1, a super pod's at level 2), level 0 last;
* AllGather: level 0 first, then each level gathering whole blocks;
* Broadcast: Scatter inside the root's server, the Broadcast of each slice one level up, AllGather
  inside every server; Reduce: ReduceScatter, the Reduce one level up, Gather inside the root's
  server; Scatter: the highest level first, each scattering blocks from the rank holding them.

The name of a hierarchy is HCCL_ALGO's syntax with pyhcomm's algorithm names:
``"level0:mesh;level1:nhr"``, ``"level0:double_ring;level1:nhr;level2:nhr"`` (:func:`name`); it
goes into the record. The servers must hold as many ranks each (and the super pods as many
servers); HCCL runs an asymmetric communicator flat (the selector does too).
"""
from __future__ import annotations

from functools import lru_cache

from .. import drive
from ..algorithm import Algorithm, Layout, Level, Op, layout_for
from ..segments import Group, concat, split
from ...errors import not_support

PREFIX = "level"


def name(levels) -> str:
    """The name of the hierarchy of ``levels`` (algorithm names, level 0 first)."""
    return ";".join(f"{PREFIX}{i}:{n}" for i, n in enumerate(levels))


def parse(text: str):
    """The algorithm names of a hierarchy's name, level 0 first (None: not a hierarchy's name)."""
    if not text.startswith(PREFIX + "0:"):
        return None
    out = []
    for i, part in enumerate(text.split(";")):
        head, _, alg = part.partition(":")
        if head != f"{PREFIX}{i}" or not alg:
            return None
        out.append(alg)
    return out if len(out) in (2, 3) else None


class Coords:
    """Every rank's coordinates for ``k`` levels (see the module docstring) and back."""

    def __init__(self, layout: Layout, k: int):
        if not layout.symmetric:
            raise not_support("collective", "a hierarchical algorithm needs as many ranks in every server "
                              "(and as many servers in every super pod)")
        self.k = k
        self.of, self.at, self._blocks, self._groups = {}, {}, {}, {}
        for r, s in layout.server_of.items():
            c = (layout.pos[r], s) if k == 2 else (layout.pos[r], layout.spos[s], layout.pod_of[s])
            self.of[r], self.at[c] = c, r
        ns = len(layout.servers)
        self.sizes = (len(layout.servers[0]), ns) if k == 2 else \
            (len(layout.servers[0]), len(layout.pods[0]), len(layout.pods))

    def group(self, i: int, c) -> tuple:
        """The ranks that share ``c`` but at level ``i``, by their ``c_i`` (made once per group:
        every rank of a 4096-rank hierarchy asks for its groups)."""
        c = tuple(c)
        key = (i, c[:i] + c[i + 1:])
        got = self._groups.get(key)
        if got is None:
            got = self._groups[key] = tuple(self.at[c[:i] + (x,) + c[i + 1:]] for x in range(self.sizes[i]))
        return got

    def block(self, i: int, c) -> list:
        """The ranks under level ``i`` that share ``c`` at levels ``i`` and up (a server at 1, a pod at 2)."""
        if not self._blocks:
            for r in sorted(self.of):
                for j in range(1, self.k):
                    self._blocks.setdefault((j, self.of[r][j:]), []).append(r)
        return self._blocks[(i, tuple(c[i:]))]

    def mix(self, mine, other, i: int) -> tuple:
        """Coordinates: ``mine`` below level ``i``, ``other`` from ``i`` up."""
        return tuple(mine[:i]) + tuple(other[i:])


@lru_cache(maxsize=64)
def _coords_cached(layout_id: int, k: int, layout: Layout) -> Coords:
    return Coords(layout, k)


class Hierarchy:
    """One rank's view of a hierarchy of ``levels`` (:class:`~..algorithm.Level` objects) in ``g``."""

    def __init__(self, levels, g):
        self.levels, self.ctx = levels, g.ctx
        layout = layout_for(g.ctx)
        self.co = _coords_cached(id(layout), len(levels), layout)
        self.me = self.co.of[g.ctx.rank]

    def g(self, i: int, c=None) -> Group:
        return Group(self.ctx, self.co.group(i, self.me if c is None else c))

    # -- the collectives ----------------------------------------------------------------------------
    def ar(self, s, red, land, i: int = 0):
        g, lv = self.g(i), self.levels[i]
        if i == len(self.levels) - 1:
            lv.ar(g, s, red, land)
            return
        slices = split(s, g.nranks, red.elem)
        lv.rs(g, slices, red, land)
        self.ar(slices[g.rank], red, land, i + 1)
        lv.ag(g, slices, land)

    def _blocks(self, i: int, g, slices) -> list:
        if i == 0:
            return [slices[q] for q in g.members]
        return [concat(slices[q] for q in self.co.block(i, self.co.of[m])) for m in g.members]

    def rs(self, slices, red, land):
        for i in reversed(range(len(self.levels))):
            g = self.g(i)
            self.levels[i].rs(g, self._blocks(i, g, slices), red, land)

    def ag(self, slices, land):
        for i in range(len(self.levels)):
            g = self.g(i)
            self.levels[i].ag(g, self._blocks(i, g, slices), land)

    def bcast(self, s, root, land, i: int = 0):
        g, lv, rc = self.g(i), self.levels[i], self.co.of[root]
        if i == len(self.levels) - 1:
            lv.bcast(g, s, rc[i], land)
            return
        slices = split(s, g.nranks)
        if rc[i + 1:] == self.me[i + 1:]:
            lv.scatter(g, slices, rc[i], land)
        self.bcast(slices[g.rank], self.co.at[self.co.mix(self.me, rc, i + 1)], land, i + 1)
        lv.ag(g, slices, land)

    def reduce(self, s, root, red, land, i: int = 0):
        g, lv, rc = self.g(i), self.levels[i], self.co.of[root]
        if i == len(self.levels) - 1:
            lv.reduce(g, s, rc[i], red, land)
            return
        slices = split(s, g.nranks, red.elem)
        lv.rs(g, slices, red, land)
        self.reduce(slices[g.rank], self.co.at[self.co.mix(self.me, rc, i + 1)], red, land, i + 1)
        if rc[i + 1:] == self.me[i + 1:]:
            lv.gather(g, slices, rc[i], land)

    def scatter(self, slices, root, land):
        rc = self.co.of[root]
        for i in reversed(range(len(self.levels))):
            if rc[:i] != self.me[:i]:
                continue
            g = self.g(i)
            self.levels[i].scatter(g, self._blocks(i, g, slices), rc[i], land)


def _members(call, k: int) -> tuple:
    """(the rank's coordinates, Coords) of a call."""
    layout = call.topology.layout
    co = _coords_cached(id(layout), k, layout)
    return co.of[call.rank], co


def compose(levels) -> Algorithm:
    """The hierarchy of ``levels`` (algorithms of the catalogue, level 0 first)."""
    lvs = [a.level for a in levels]
    if any(lv is None for lv in lvs):
        raise ValueError(f"{', '.join(a.name for a in levels if a.level is None)} cannot run as a level")
    k = len(lvs)

    def whole(g):
        return Hierarchy(lvs, g)

    core = Level(
        name([a.name for a in levels]),
        rs=(lambda g, slices, red, land: whole(g).rs(slices, red, land)) if all(lv.rs for lv in lvs) else None,
        ag=(lambda g, slices, land: whole(g).ag(slices, land)) if all(lv.ag for lv in lvs) else None,
        ar=(lambda g, s, red, land: whole(g).ar(s, red, land))
        if all(lv.rs and lv.ag for lv in lvs[:-1]) and lvs[-1].ar else None,
        bcast=(lambda g, s, root, land: whole(g).bcast(s, root, land))
        if all(lv.scatter and lv.ag for lv in lvs[:-1]) and lvs[-1].bcast else None,
        reduce=(lambda g, s, root, red, land: whole(g).reduce(s, root, red, land))
        if all(lv.rs and lv.gather for lv in lvs[:-1]) and lvs[-1].reduce else None,
        scatter=(lambda g, slices, root, land: whole(g).scatter(slices, root, land))
        if all(lv.scatter for lv in lvs) else None,
        land_per_byte=lambda p: max(lv.land_per_byte(p) for lv in lvs))

    def slaves(call) -> int:
        me, co = _members(call, k)
        return max(lv.slaves(co.sizes[i]) for i, lv in enumerate(lvs))

    impls = drive.implementations(core, slaves_of=slaves)
    return Algorithm(core.name, "levels: " + ", ".join(f"{i}: {a.summary}" for i, a in enumerate(levels)),
                     impls, level=core)


__all__ = ["compose", "name", "parse", "Hierarchy", "Coords", "Op"]
