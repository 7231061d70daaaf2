"""Data-less runs of the collective library's algorithms for the timing tests, with their closed forms.

``modeled(product, case, nranks, nbytes)`` runs ``case`` on ``nranks`` data-less ranks with
uniform links (one server, one super pod) and returns ``(modeled seconds, closed-form seconds,
timeline)``. A case is ``(algorithm, op)``, an implementation of the catalogue run by name
(:func:`pyhcomm.collectives.dispatch.run_algorithm`) and costed from its descriptor
(:func:`pyhcomm.timing.closed_form.predict`), or one of the names of :data:`ALGORITHMS`
(``ring_allgather``, ..., and ``mesh_allreduce``: the mesh ReduceScatter and AllGather in one
call, composed here).
"""
from __future__ import annotations

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import allgather_mesh, dispatch, reduce_scatter_mesh, run
from pyhcomm.collectives.algorithm import Op
from pyhcomm.collectives.algorithms import CATALOGUE
from pyhcomm.collectives.context import buffer_parts
from pyhcomm.config import Config
from pyhcomm.enums import HcclDataType, HcclReduceOp
from pyhcomm.timing import closed_form as cf
from pyhcomm.timing.replay import replay

FP32, SUM = int(HcclDataType.HCCL_DATA_TYPE_FP32), int(HcclReduceOp.HCCL_REDUCE_SUM)
PROTOCOL = {"A2": "COMM_PROTOCOL_HCCS", "A3": "COMM_PROTOCOL_HCCS", "950": "COMM_PROTOCOL_UB_CTP"}
SHARING = {"A2": "pair", "A3": "port", "950": "port"}
AG, RS, AR = Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_ALLREDUCE
#: The named cases: (algorithm, op) of the library, or None (composed here).
NAMED = {"ring_allgather": ("ring", AG), "ring_reduce_scatter": ("ring", RS), "ring_allreduce": ("ring", AR),
         "mesh_allgather": ("mesh", AG), "mesh_reduce_scatter": ("mesh", RS), "mesh_allreduce": None}
ALGORITHMS = tuple(NAMED)
#: Every implementation of the catalogue that has a closed form.
WITH_SCHEDULE = tuple((a.name, i.op) for a in CATALOGUE for i in a.implementations if i.schedule is not None)
#: The algorithms that run between servers only: ranks a server to run them on (of 8 ranks).
SERVERS = {"pipeline": 4, "ahc": 4, "ahc_broke": 4}


@buffer_parts(lambda n: 2 * n)
def all_reduce_mesh(ctx, send, recv, count):
    """A mesh AllReduce in one call: the mesh ReduceScatter of ``count / p`` elements per rank
    into this rank's slice of ``recv``, then the mesh AllGather of the slices into ``recv``."""
    n = ctx.nranks
    per = -(-count // n)
    mine = recv + ctx.rank * per * 4
    reduce_scatter_mesh(ctx, send, mine, per, FP32, SUM)
    allgather_mesh(ctx, mine, recv, per * 4)


def arguments(op, n: int, send: int, recv: int, nbytes: int) -> tuple:
    """The arguments of collective ``op`` (collectives.algorithm.ARGUMENTS) for ``nbytes`` per
    rank in fp32 (sum), equal segments for the ``V`` calls."""
    count = nbytes // 4
    if op in (AG, Op.HCCL_CMD_ALLTOALL):
        return send, recv, nbytes
    if op in (RS, AR):
        return send, recv, count, FP32, SUM
    if op == Op.HCCL_CMD_ALLGATHER_V:
        return send, recv, [nbytes] * n, [r * nbytes for r in range(n)]
    if op == Op.HCCL_CMD_REDUCE_SCATTER_V:
        return send, recv, [count] * n, [r * count for r in range(n)], FP32, SUM
    if op == Op.HCCL_CMD_BARRIER:
        return ()
    if op == Op.HCCL_CMD_BROADCAST:
        return send, nbytes, 0
    if op == Op.HCCL_CMD_REDUCE:
        return send, recv, count, FP32, SUM, 0
    if op == Op.HCCL_CMD_SCATTER:
        return send, recv, nbytes, 0
    if op in (Op.HCCL_CMD_ALLTOALLV, Op.HCCL_CMD_ALLTOALLVC):
        sizes, displs = [nbytes] * n, [r * nbytes for r in range(n)]
        return send, sizes, displs, recv, sizes, displs
    raise ValueError(f"timing_cases: no arguments for {Op(op).name}")


def _case(case):
    return NAMED[case] if isinstance(case, str) else case


def _body(case, nbytes):
    """The rank body of ``case`` (a name of :data:`ALGORITHMS` or ``(algorithm, op)``)."""
    what = _case(case)
    tag = case if isinstance(case, str) else f"{what[0]}_{Op(what[1]).name}"

    def body(comm):
        n, h = comm.size, comm.handle
        send, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        recv, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        stream, _ = acl.rt.create_stream()
        if what is None:
            run(h, stream, n - 1, all_reduce_mesh, send, recv, nbytes // 4, tag=tag)
        else:
            algorithm, op = what
            call = dispatch.describe(h, op, nbytes, root=0 if op in (Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_REDUCE,
                                                                     Op.HCCL_CMD_SCATTER) else None)
            dispatch.run_algorithm(tag, h, stream, algorithm, call, arguments(op, n, send, recv, nbytes))
        acl.rt.synchronize_stream(stream)
    return body


def modeled(product: str, case, nranks: int, nbytes: int, model=None, per_server: int = 0, pod: int = 0):
    """``(modeled seconds of the call(s), closed-form seconds, timeline)``; ``per_server``,
    ``pod``: devices a server and a super pod (0: every rank in one server, one pod)."""
    config = Config.from_env().with_values(devices_per_server=per_server or max(nranks, 16),
                                           super_pod_size=pod or max(nranks, 768),
                                           record_capacity=0)     # a replay needs the whole record
    sim = pyhcomm.Sim(config, product=product, data=False)
    pyhcomm.launch(_body(case, nbytes), nranks, sim=sim)
    tl = replay(sim, model)
    m = tl.model
    family = sim.runtime.product.family
    link, sharing, device = m.link(PROTOCOL[family]), SHARING[family], family != "A2"
    calls = tl.calls
    seconds = max(c.end for c in calls) - min(c.begin for c in calls)
    what = _case(case)
    if what is None:
        closed = cf.mesh_allreduce(m, nranks, nbytes, link, sharing, device)
    else:
        closed = cf.predict(what[0], what[1], m, nranks, nbytes, link, sharing, device,
                            per_server=per_server or None, per_pod=pod or None, route=route(sim, m, nranks))
    return seconds, closed, tl


def route(sim, m, nranks: int):
    """``route(src, dst)`` of the closed forms (:func:`pyhcomm.timing.closed_form.evaluate`):
    the link and resources of the protocol a collective's channel between two ranks of ``sim``
    takes (rank ``r`` on device ``r``, placed by the Sim's configuration)."""
    from pyhcomm import sim as sim_mod, topology
    from pyhcomm.hcomm.resources import engines
    token = sim_mod.enter(sim)
    try:
        order = engines.collective_engine().channels.collective
        family = sim.runtime.product.family
        table = {}
        for src in range(nranks):
            for dst in range(nranks):
                have = set(topology.protocols_between(src, dst))
                protocol = next((p for p in order if p in have), None)
                if protocol is not None:
                    table[(src, dst)] = (m.link(protocol), topology.link_resources(family, protocol, src, dst))
    finally:
        sim_mod.leave(token)
    return lambda src, dst: table[(src, dst)]


def selected(product: str, op: str, nranks: int, nbytes: int, per_server: int = 0):
    """``(modeled seconds, algorithm)`` of one ``HcclAllReduce`` (``op == "allreduce"``: ``nbytes``
    fp32 per rank) or ``HcclAllGather`` (``"allgather"``: ``nbytes`` per rank) through the C tier,
    data-less: the algorithm HCCL's selection picks (``per_server``: devices a server, 0: the
    product's)."""
    from pyhcomm.capi import hccl_ops as ops
    cfg = Config.from_env().with_values(record_capacity=0)
    if per_server:
        cfg = cfg.with_values(devices_per_server=per_server)
    sim = pyhcomm.Sim(cfg, product=product, data=False)

    def body(comm):
        n, h = comm.size, comm.handle
        send, _ = acl.rt.malloc(nbytes, 0)
        recv, _ = acl.rt.malloc(nbytes * (n if op == "allgather" else 1), 0)
        stream, _ = acl.rt.create_stream()
        if op == "allreduce":
            assert ops.HcclAllReduce(send, recv, nbytes // 4, FP32, SUM, h, stream) == 0
        else:
            assert ops.HcclAllGather(send, recv, nbytes, int(HcclDataType.HCCL_DATA_TYPE_INT8), h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0

    pyhcomm.launch(body, nranks, sim=sim)
    call, = replay(sim).calls
    return call.seconds, call.algorithm
