"""Pipeline: the ring between servers and the mesh inside a server at once (Atlas A2, two levels).

HCCL's ``all_gather_pipeline.cc``, ``reduce_scatter_pipeline.cc``,
``coll_all_reduce_mesh_opbase_pipeline_executor.cc`` and Pipeline.md. Rank ``(s, l)``: position
``l`` of server ``s``; the ring runs over the servers among the ranks of one position, the mesh
inside a server.

* AllGather: at ring step ``j`` the rank forwards to its right neighbour the block of server ``s -
  j`` at its position (its own at step 0) and receives the next one; meanwhile its slave threads
  send the block of server ``s - j`` it holds to every rank of its server and receive theirs (the
  first of these exchanges hides in ring step 0, the last runs after the ring): ``m`` local
  exchanges, ``m - 1`` ring steps, each step the longer of the two.
* ReduceScatter: before ring step ``j`` the ranks of a server have reduced, each at its own
  position, the blocks of the server the ring sends next; ring step ``j`` sends the partial of
  server ``s - j - 1`` and receives that of ``s - j - 2``, while the slaves gather the server's
  inputs of the block after it; the main thread then reduces both into it. After ``m - 1`` steps
  the rank's own block is complete.
* AllReduce: ReduceScatter then AllGather of the vector cut into one slice per rank.

Cost (Pipeline.md): ``max(s/p beta_inter + alpha_inter, s/p beta_intra + alpha_intra) (m - 1) + s/p
beta_intra + alpha_intra``, twice for AllReduce. HCCL runs it only in op-base mode on Atlas A2 and
A3 (``alg_configurator.cc``); its AlltoAll pipeline is not modelled.
"""
from __future__ import annotations

from ...errors import not_support
from .. import drive, patterns
from ..algorithm import Algorithm, Level, Op, layout_for
from ..segments import EMPTY, Group, exchange, reduce_into, seg, size, split


class Plan:
    """One rank's servers, server and position, its server's group and its ring among the servers."""

    def __init__(self, ctx):
        layout = layout_for(ctx)
        if len({len(s) for s in layout.servers}) > 1:
            raise not_support("collective", "the pipeline needs as many ranks in every server")
        self.servers = layout.servers
        self.m, self.d = len(self.servers), len(self.servers[0])
        self.s, self.l = layout.server_of[ctx.rank], layout.pos[ctx.rank]
        self.local = Group(ctx, self.servers[self.s])
        self.plane = Group(ctx, [srv[self.l] for srv in self.servers])

    def at(self, t: int, l: int) -> int:
        return self.servers[t % self.m][l]


def _concurrently(g, local_steps, ring_step) -> None:
    """``local_steps``: ``(thread, peer)`` work on slaves, one peer each; ``ring_step(main)`` meanwhile."""
    peers = local_steps[0]
    used = g.slaves[:len(peers)]
    patterns.fan_out(g.main, used)
    for t, q in zip(used, peers):
        local_steps[1](t, q)
    if ring_step is not None:
        ring_step(g.main)
    patterns.fan_in(g.main, used)


def level_ag(g, slices, land):
    pl = Plan(g.ctx)
    ring_land = land
    local_land = land + max(size(s) for s in slices)
    peers = [q for q in range(pl.d) if q != pl.l]
    for j in range(pl.m):
        t = pl.s - j
        blocks = [slices[pl.at(t, q)] for q in range(pl.d)]
        at = [sum(size(b) for b in blocks[:q]) for q in range(pl.d)]

        def local(th, q, blocks=blocks, at=at):
            exchange(pl.local, th, q, q, blocks[pl.l], blocks[q], local_land + at[pl.l], land_rx=local_land + at[q])

        ring = None
        if j < pl.m - 1:
            def ring(th, t=t):
                exchange(pl.plane, th, (pl.s + 1) % pl.m, (pl.s - 1) % pl.m, slices[pl.at(t, pl.l)],
                         slices[pl.at(t - 1, pl.l)], ring_land)
        _concurrently(g, (peers, local), ring)


def level_rs(g, slices, red, land):
    pl = Plan(g.ctx)
    ring_land = land
    local_land = land + max(size(s) for s in slices)
    peers = [q for q in range(pl.d) if q != pl.l]

    def gather_step(t, ring):
        """The slaves gather this server's inputs of block ``(t, l)`` while ``ring`` runs; then
        the main thread reduces them into it."""
        mine = slices[pl.at(t, pl.l)]
        n = size(mine)

        def local(th, q):
            exchange(pl.local, th, q, q, slices[pl.at(t, q)], EMPTY, local_land + pl.l * size(slices[pl.at(t, q)]),
                     land_rx=local_land + q * n)
        _concurrently(g, (peers, local), ring)
        for q in peers:
            reduce_into(g.main, mine, seg(g.ccl + local_land + q * n, n), red)

    gather_step(pl.s - 1, None)
    for j in range(pl.m - 1):
        send, recv = slices[pl.at(pl.s - j - 1, pl.l)], slices[pl.at(pl.s - j - 2, pl.l)]

        def ring(th, send=send, recv=recv):
            exchange(pl.plane, th, (pl.s + 1) % pl.m, (pl.s - 1) % pl.m, send, EMPTY, ring_land)
        gather_step(pl.s - j - 2, ring)
        reduce_into(g.main, recv, seg(g.ccl + ring_land, size(recv)), red)


def level_ar(g, s, red, land):
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_ag(g, slices, land)


def _slaves(call) -> int:
    return max(0, call.topology.per_server - 1)


LEVEL = Level("pipeline", rs=level_rs, ag=level_ag, ar=level_ar, land_per_byte=lambda p: 2.0)

PIPELINE = Algorithm("pipeline", "the ring between servers and the mesh inside each server at once, a block a step",
                     drive.implementations(LEVEL, {Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V,
                                                   Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_ALLREDUCE}, slaves_of=_slaves))
