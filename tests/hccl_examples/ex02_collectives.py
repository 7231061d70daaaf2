"""HCCL's ``examples/02_collectives``, ported call for call (see :mod:`example_main`).

Every sample: set the device, allocate and fill its device buffers, init the communicator from
the root info, create a stream, make the one collective call, synchronise, copy the result back,
destroy the communicator, free, destroy the stream (and, where the C sample does, reset the
device). ``count = devCount`` floats unless said otherwise:

* 01_allreduce: ``0, 1, 2, ...`` summed over all devices;
* 02_broadcast: the root's ``0, 1, 2, ...`` to every device;
* 03_allgather: one float per device (its id), gathered in rank order;
* 04_reduce_scatter: ``0, 1, 2, ...`` summed, one element back to each device;
* 05_reduce: ``0, 1, 2, ...`` summed into the root;
* 06_alltoall / 07_alltoallv / 08_alltoallvc: each device sends its id, one float to every
  device (AlltoAllV with unit counts and displacements, AlltoAllVC with a matrix of ones);
* 09_scatter: the root's ``0, 1, 2, ...``, one element to each device.

Products (READMEs): Ascend 950PR/950DT, Atlas A3, Atlas A2 training everywhere; the Atlas training
series for all but AlltoAllVC; the Atlas inference series for AllReduce, AllGather,
ReduceScatter, AlltoAll and AlltoAllV.
"""
from __future__ import annotations

from acl_constants import ACL_MEM_MALLOC_HUGE_ONLY
from example_main import check, fill_device, main, output, read_device, release, value

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,  # ... from pyhccl
                     HcclAllGather, HcclAllReduce, HcclAlltoAll, HcclAlltoAllV, HcclAlltoAllVC, HcclBroadcast,
                     HcclCommInitRootInfo, HcclReduce, HcclReduceScatter, HcclScatter)

F32, SUM = HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM


def malloc(count: int) -> int:
    return value(acl.rt.malloc(count * 4, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")


def open_comm(ctx):
    """``HcclCommInitRootInfo`` then ``aclrtCreateStream``: ``(comm, stream)``."""
    comm = output(HcclCommInitRootInfo(ctx.dev_count, ctx.root_info, ctx.device), "HcclCommInitRootInfo")
    return comm, value(acl.rt.create_stream(), "aclrtCreateStream")


def finish(ctx, comm, stream, result, count, bufs, reset: bool):
    """Synchronise, copy ``count`` floats of ``result`` back, then release in the samples' order."""
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = read_device(result, count)
    release(ctx, comm, stream, bufs, reset)
    return out


def allreduce(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(n), malloc(n)
    fill_device(send, n, range(n))
    comm, stream = open_comm(ctx)
    check(HcclAllReduce(send, recv, n, F32, SUM, comm, stream), "HcclAllReduce")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=False)


def broadcast(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    buf = malloc(n)
    if ctx.device == ctx.root_rank:
        fill_device(buf, n, range(n))
    comm, stream = open_comm(ctx)
    check(HcclBroadcast(buf, n, F32, ctx.root_rank, comm, stream), "HcclBroadcast")
    return finish(ctx, comm, stream, buf, n, (buf,), reset=True)


def allgather(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(1), malloc(n)
    fill_device(send, 1, float(ctx.device))
    comm, stream = open_comm(ctx)
    check(HcclAllGather(send, recv, 1, F32, comm, stream), "HcclAllGather")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=False)


def reduce_scatter(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(n), malloc(1)
    fill_device(send, n, range(n))
    comm, stream = open_comm(ctx)
    check(HcclReduceScatter(send, recv, 1, F32, SUM, comm, stream), "HcclReduceScatter")
    return finish(ctx, comm, stream, recv, 1, (send, recv), reset=False)


def reduce(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send = malloc(n)
    fill_device(send, n, range(n))
    recv = malloc(n)
    comm, stream = open_comm(ctx)
    check(HcclReduce(send, recv, n, F32, SUM, ctx.root_rank, comm, stream), "HcclReduce")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=True)


def alltoall(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(n), malloc(n)
    fill_device(send, n, float(ctx.device))
    comm, stream = open_comm(ctx)
    per = n // ctx.dev_count
    check(HcclAlltoAll(send, per, F32, recv, per, F32, comm, stream), "HcclAlltoAll")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=False)


def alltoallv(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(n), malloc(n)
    fill_device(send, n, float(ctx.device))
    comm, stream = open_comm(ctx)
    send_counts, recv_counts = [1] * n, [1] * n
    sdispls, rdispls = list(range(n)), list(range(n))
    check(HcclAlltoAllV(send, send_counts, sdispls, F32, recv, recv_counts, rdispls, F32, comm, stream),
          "HcclAlltoAllV")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=False)


def alltoallvc(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    send, recv = malloc(n), malloc(n)
    fill_device(send, n, float(ctx.device))
    comm, stream = open_comm(ctx)
    matrix = [n // n] * (n * n)    # flat [rankSize][rankSize], as the C vector
    check(HcclAlltoAllVC(send, matrix, F32, recv, F32, comm, stream), "HcclAlltoAllVC")
    return finish(ctx, comm, stream, recv, n, (send, recv), reset=False)


def scatter(ctx):
    n = ctx.dev_count
    check(acl.rt.set_device(ctx.device), "aclrtSetDevice")
    recv, send = malloc(1), 0
    if ctx.device == ctx.root_rank:
        send = malloc(n)
        fill_device(send, n, range(n))
    comm, stream = open_comm(ctx)
    check(HcclScatter(send, recv, 1, F32, ctx.root_rank, comm, stream), "HcclScatter")
    return finish(ctx, comm, stream, recv, 1, (send, recv), reset=True)


SAMPLES = {"01_allreduce": allreduce, "02_broadcast": broadcast, "03_allgather": allgather,
           "04_reduce_scatter": reduce_scatter, "05_reduce": reduce, "06_alltoall": alltoall,
           "07_alltoallv": alltoallv, "08_alltoallvc": alltoallvc, "09_scatter": scatter}


def run(name: str, root_rank: int = 0, entry=main) -> list:
    """Run one example's ``main()`` (``entry``: :func:`example_main.launch_main` starts the ranks
    with ``pyhcomm.launch``); returns each device's output buffer."""
    return entry(SAMPLES[name], root_rank)
