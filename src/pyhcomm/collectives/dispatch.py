"""Collective calls from the tiers: describe the call, let the selector choose its algorithm, run
it with the threads and channels the algorithm declares (now, or at the end of the open group).

The flat C tier checks and converts its arguments, then calls :func:`collective`,
:func:`point_to_point` or :func:`batch`; :func:`end_group` runs what a group kept.
:func:`run_algorithm` runs a named algorithm without the selector (tests, benchmarks, comparing
algorithms). The algorithm's name goes into the call's ``Collective`` marker in the record.
"""
from __future__ import annotations

from ..defs.hccl_types import HcclOpExpansionMode
from ..hccl import comm as comm_mod
from ..hccl.comm_config import deterministic
from ..sim import current_sim as _sim
from . import algorithms, group, selector
from .algorithm import AI_CPU, HOST, Algorithm, Call, Op, Topology
from .context import device_mode, run


def describe(comm_handle, op, nbytes: int = 0, *, api: str = "collective", root=None, peers=(), data_type=None,
             reduce_op=None) -> Call:
    """The :class:`~.algorithm.Call` of this rank of ``comm_handle`` (see there for ``nbytes``)."""
    comm = comm_mod.get_comm(comm_handle, api)
    product = _sim().runtime.product
    settings = getattr(comm, "settings", None)
    algo = settings.algo if settings is not None and settings.algo is not None else _sim().config.hccl_algo
    return Call(op=Op(op), nranks=comm.nranks, nbytes=nbytes, rank=comm.rank, root=root, peers=tuple(peers),
                family=product.family, product=product.name, expansion=expansion(comm),
                topology=Topology(comm.world, comm.nranks), data_type=data_type, reduce_op=reduce_op,
                deterministic=deterministic(comm),
                algo_config=settings.fields.get("hcclAlgo", "") if settings is not None else "",
                algo=algo.levels(op) if Op(op) != Op.HCCL_CMD_INVALID else ("", "", "", ""))


#: ``HCCL_OP_EXPANSION_MODE`` names that move where HCCL's selection sees a call expanded.
_EXPANSIONS = {"HOST": HOST, "HOST_TS": HOST, "AI_CPU": AI_CPU}


def expansion(comm):
    """The expansion mode the selection reads for ``comm``: ``HOST`` or ``AI_CPU``, named by its
    config's ``hcclOpExpansionMode`` (HOST / HOST_TS) or else ``HCCL_OP_EXPANSION_MODE``; the
    product's default otherwise (``AI_CPU`` where its collectives run in AI CPU kernels). The AIV
    and CCU modes select as the default does (HCCL's AIV and CCU executors are not modelled), and
    the calls still run where the product runs them: only the choice changes."""
    settings = getattr(comm, "settings", None)
    mode = settings.op_expansion_mode if settings is not None else 0
    if mode in (HOST, HcclOpExpansionMode.HCCL_OP_EXPANSION_MODE_HOST_TS):
        return HOST
    chosen = None if mode else _EXPANSIONS.get(_sim().config.op_expansion_mode or "")   # the config's wins
    return chosen if chosen is not None else AI_CPU if device_mode() else HOST


def run_algorithm(api: str, comm_handle, stream: int, algorithm, call: Call, args: tuple) -> None:
    """Run ``algorithm`` (an :class:`~.algorithm.Algorithm` or its name) for ``call``:
    ``issue(ctx, *args)`` with the slaves and peers its implementation of ``call.op`` declares,
    the call marked with ``api`` and the algorithm's name (:func:`.context.run`)."""
    if not isinstance(algorithm, Algorithm):
        algorithm = algorithms.find(algorithm)
    impl = algorithm.implementation(call.op)
    run(comm_handle, stream, impl.slaves(call), impl.issue, *args, tag=api, peers=impl.peers(call),
        algorithm=algorithm.name, marker={"op": op_name(call.op), "nbytes": data_size(call)})


def op_name(op) -> str:
    """The short name of collective ``op`` (``allreduce``, ``reduce_scatter``, ``allgather_v`` ...)."""
    return Op(op).name[len("HCCL_CMD_"):].lower()


#: The collectives whose data size is every rank's part, ``nbytes`` each (hccl_test's data_size:
#: the AllGather's gathered output, the ReduceScatter's and Scatter's input, each rank's AlltoAll
#: send buffer); the V calls with ``nbytes`` their largest count's bytes.
_ALL_PARTS = frozenset({Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V, Op.HCCL_CMD_REDUCE_SCATTER,
                        Op.HCCL_CMD_REDUCE_SCATTER_V, Op.HCCL_CMD_SCATTER, Op.HCCL_CMD_ALLTOALL,
                        Op.HCCL_CMD_ALLTOALLV, Op.HCCL_CMD_ALLTOALLVC})


def data_size(call: Call) -> int:
    """The call's data size as hccl_test (and nccl-tests) count it, from HCCL's per-rank bytes
    (:attr:`~.algorithm.Call.nbytes`): the rank count times them for the collectives whose every
    rank holds a part of the data (:data:`_ALL_PARTS`), else the bytes themselves (AllReduce,
    Reduce, Broadcast: the buffer; sends and receives: their bytes)."""
    return call.nbytes * call.nranks if call.op in _ALL_PARTS else call.nbytes


def collective(api: str, comm_handle, stream: int, op, args: tuple, *, nbytes: int, root=None, data_type=None,
               reduce_op=None) -> None:
    """Issue collective ``op`` with ``args`` (:data:`~.algorithm.ARGUMENTS`) on the algorithm the
    selector chooses: now, or at the end of the open group (chosen now)."""
    call = describe(comm_handle, op, nbytes, api=api, root=root, data_type=data_type, reduce_op=reduce_op)
    algorithm = selector.select(call)

    def go():
        run_algorithm(api, comm_handle, stream, algorithm, call, args)
    if group.active():
        group.keep_collective(api, go)
    else:
        go()


def batch(api: str, comm_handle, stream: int, items, op=Op.HCCL_CMD_BATCH_SEND_RECV) -> None:
    """Issue sends and receives (``(is_send, buf, nbytes, peer)`` items) together, now."""
    peers = sorted({peer for *_x, peer in items})
    call = describe(comm_handle, op, sum(nbytes for _s, _b, nbytes, _p in items), api=api, peers=peers)
    run_algorithm(api, comm_handle, stream, selector.select(call), call, (items,))


def point_to_point(api: str, comm_handle, stream: int, is_send: bool, buf: int, nbytes: int, peer: int) -> None:
    """An ``HcclSend`` / ``HcclRecv``: kept for the end of the open group, else a batch of one
    item (nothing for zero bytes: it meets the peer's call, batch item or grouped call)."""
    if group.active():
        group.keep_p2p(api, comm_handle, stream, is_send, buf, nbytes, peer)
    elif nbytes:
        batch(api, comm_handle, stream, [(is_send, buf, nbytes, peer)],
              Op.HCCL_CMD_SEND if is_send else Op.HCCL_CMD_RECEIVE)


def end_group(api: str = "HcclGroupEnd") -> None:
    """Close a group (:func:`.group.end`); the outermost end runs each communicator and stream's
    kept sends and receives as one batch, then the kept collectives and operators in call order."""
    batches, ops = group.end(api)
    for comm_handle, stream, items in batches:
        batch(api, comm_handle, stream, items)
    for go in ops:
        go()
