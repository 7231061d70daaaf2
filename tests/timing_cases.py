"""Data-less runs of the ring and mesh collectives for the timing tests, with their closed forms.

``modeled(product, algorithm, nranks, nbytes)`` runs ``algorithm`` (``ring_allgather``,
``ring_reduce_scatter``, ``ring_allreduce``, ``mesh_allgather``, ``mesh_reduce_scatter``,
``mesh_allreduce``) on ``nranks`` data-less ranks with uniform links (one server, one super pod)
and returns ``(modeled seconds, closed-form seconds, timeline)``.
"""
from __future__ import annotations

import pyhcomm
from pyhcomm import acl
from pyhcomm.capi import hccl_ops as ops
from pyhcomm.collectives import allgather_mesh, allgather_ring, reduce_scatter_mesh, reduce_scatter_ring, run
from pyhcomm.collectives.allgather import ring_peers
from pyhcomm.collectives.context import buffer_parts
from pyhcomm.config import Config
from pyhcomm.enums import HcclDataType, HcclReduceOp
from pyhcomm.timing import closed_form as cf
from pyhcomm.timing.replay import replay

FP32, SUM = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)
PROTOCOL = {"A2": "COMM_PROTOCOL_HCCS", "A3": "COMM_PROTOCOL_HCCS", "950": "COMM_PROTOCOL_UB_CTP"}
SHARING = {"A2": "pair", "A3": "port", "950": "port"}
ALGORITHMS = ("ring_allgather", "ring_reduce_scatter", "ring_allreduce", "mesh_allgather", "mesh_reduce_scatter",
              "mesh_allreduce")


@buffer_parts(lambda n: 2 * n)
def all_reduce_mesh(ctx, send, recv, count):
    """A mesh AllReduce in one call: the mesh ReduceScatter of ``count / p`` elements per rank
    into this rank's slice of ``recv``, then the mesh AllGather of the slices into ``recv``."""
    n = ctx.nranks
    per = -(-count // n)
    mine = recv + ctx.rank * per * 4
    reduce_scatter_mesh(ctx, send, mine, per, FP32, SUM)
    allgather_mesh(ctx, mine, recv, per * 4)


def _body(algorithm, nbytes):
    count = nbytes // 4

    def body(comm):
        n, h = comm.size, comm.handle
        send, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        recv, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        stream, _ = acl.rt.create_stream()
        if algorithm == "ring_allgather":
            run(h, stream, 0, allgather_ring, send, recv, nbytes, peers=ring_peers(comm.rank, n), tag=algorithm)
        elif algorithm == "ring_reduce_scatter":
            run(h, stream, 0, reduce_scatter_ring, send, recv, count, FP32, SUM, peers=ring_peers(comm.rank, n),
                tag=algorithm)
        elif algorithm == "ring_allreduce":
            assert ops.HcclAllReduce(send, recv, count, FP32, SUM, h, stream) == 0
        elif algorithm == "mesh_allgather":
            run(h, stream, max(0, n - 2), allgather_mesh, send, recv, nbytes, tag=algorithm)
        elif algorithm == "mesh_reduce_scatter":
            run(h, stream, n - 1, reduce_scatter_mesh, send, recv, count, FP32, SUM, tag=algorithm)
        elif algorithm == "mesh_allreduce":
            run(h, stream, n - 1, all_reduce_mesh, send, recv, count, tag=algorithm)
        acl.rt.synchronize_stream(stream)
    return body


def modeled(product: str, algorithm: str, nranks: int, nbytes: int, model=None):
    """``(modeled seconds of the call(s), closed-form seconds, timeline)``."""
    config = Config.from_env().with_values(devices_per_server=max(nranks, 16), super_pod_size=max(nranks, 768),
                                           record_capacity=0)     # a replay needs the whole record
    sim = pyhcomm.Sim(config, product=product, data=False)
    pyhcomm.launch(_body(algorithm, nbytes), nranks, sim=sim)
    tl = replay(sim, model)
    m = tl.model
    family = sim.runtime.product.family
    link, sharing, device = m.link(PROTOCOL[family]), SHARING[family], family != "A2"
    calls = tl.calls
    seconds = max(c.end for c in calls) - min(c.begin for c in calls)
    if algorithm.startswith("ring"):
        closed = getattr(cf, algorithm)(m, nranks, nbytes, link, device)
    else:
        closed = getattr(cf, algorithm)(m, nranks, nbytes, link, sharing, device)
    return seconds, closed, tl
