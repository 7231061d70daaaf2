"""Algorithm and bus bandwidth of a collective call, as nccl-tests and hccl_test report them.

``algbw = data size / time``, the data size as hccl_test counts it (``data_size``: the AllReduce's,
Reduce's and Broadcast's buffer, the AllGather's gathered output, the ReduceScatter's and
Scatter's input, each rank's AlltoAll send buffer); ``busbw = algbw x factor``, the factor
nccl-tests gives each collective (its ``doc/PERFORMANCE.md``) so that busbw reads as the rate of
the busiest link of an optimal algorithm, comparable across rank counts:

* AllReduce: ``2 (n - 1) / n``;
* AllGather, ReduceScatter (and their V calls), AlltoAll (V, VC), Scatter, Gather: ``(n - 1) / n``;
* Broadcast, Reduce, Send, Receive, BatchSendRecv: 1.

A call of no known collective (a caller's own region that names none) gets the factor 1. A
Barrier moves no data: no bandwidth.
"""
from __future__ import annotations

_FULL = frozenset({"broadcast", "reduce", "send", "receive", "batch_send_recv"})
_SPREAD = frozenset({"allgather", "allgather_v", "reduce_scatter", "reduce_scatter_v", "alltoall", "alltoallv",
                     "alltoallvc", "scatter", "gather"})
#: Every collective name :func:`busbw_factor` knows (the library's ``op`` names).
OPS = _FULL | _SPREAD | {"allreduce"}


def busbw_factor(op: str | None, nranks: int) -> float:
    """nccl-tests' bus bandwidth factor of collective ``op`` on ``nranks`` ranks (see the module
    docstring); 1 for ``None`` or a name it does not know."""
    n = max(1, int(nranks))
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in _SPREAD:
        return (n - 1) / n
    return 1.0


def algbw(nbytes: int | None, seconds: float) -> float | None:
    """Bytes per second of a call of data size ``nbytes`` that took ``seconds`` (None when the
    size is not known, is zero or the call took no time)."""
    if not nbytes or not seconds > 0:
        return None
    return nbytes / seconds


def busbw(op: str | None, nranks: int, nbytes: int | None, seconds: float) -> float | None:
    """The bus bandwidth (bytes per second) of such a call on ``nranks`` ranks."""
    a = algbw(nbytes, seconds)
    return None if a is None else a * busbw_factor(op, nranks)


__all__ = ["OPS", "busbw_factor", "algbw", "busbw"]
