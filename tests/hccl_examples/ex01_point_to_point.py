"""HCCL's ``examples/01_point_to_point``, ported call for call (see :mod:`example_main`).

``01_send_recv``: even devices send their device id (``count = devCount`` floats) to the next
odd device with ``HcclSend``; odd devices ``HcclRecv`` it. ``02_batch_send_recv_ring``: every
device sends its id to the next device and receives from the previous one with one
``HcclBatchSendRecv`` of two items. Products (READMEs): Ascend 950PR/950DT, Atlas A3, Atlas A2
training, Atlas training series; one server, N >= 2 devices (even for send/recv).
"""
from __future__ import annotations

from acl_constants import ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEMCPY_HOST_TO_DEVICE, NPY_FLOAT32
from example_main import check, fill_device, main, output, read_device, release, value

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (HCCL_DATA_TYPE_FP32, HCCL_RECV, HCCL_SEND, HcclBatchSendRecv,  # ... from pyhccl
                     HcclCommDestroy, HcclCommInitRootInfo, HcclRecv, HcclSend, HcclSendRecvItem)


def send_recv(ctx, send=HcclSend, recv=HcclRecv):
    """The send/recv sample (also the testcase of ``04_custom_ops_p2p``, with its custom ops)."""
    device, count = ctx.device, ctx.dev_count
    size = count * 4
    send_buf = recv_buf = 0
    check(acl.rt.set_device(device), "aclrtSetDevice")
    comm = output(HcclCommInitRootInfo(ctx.dev_count, ctx.root_info, device), "HcclCommInitRootInfo")
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    if device % 2 == 0:      # even devices send their id to the next one
        send_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
        fill_device(send_buf, count, float(device))
        check(send(send_buf, count, HCCL_DATA_TYPE_FP32, device + 1, comm, stream), send.__name__)
    else:                    # odd devices receive from the previous one
        recv_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
        check(recv(recv_buf, count, HCCL_DATA_TYPE_FP32, device - 1, comm, stream), recv.__name__)
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = read_device(recv_buf, count) if device % 2 else None
    release(ctx, comm, stream, (send_buf, recv_buf))
    return out


def send_recv_item(kind, buf, count, data_type, remote_rank):
    """``HcclSendRecvItem{kind, buf, count, dataType, remoteRank}``: pyhccl's structs are made
    empty and filled field by field."""
    item = HcclSendRecvItem()
    item.sendRecvType, item.buf, item.count, item.dataType, item.remoteRank = kind, buf, count, data_type, remote_rank
    return item


def batch_send_recv_ring(ctx):
    """The ring sample; its host buffer lives until the end (freed after the device buffers)."""
    device, count = ctx.device, ctx.dev_count
    size = count * 4
    check(acl.rt.set_device(device), "aclrtSetDevice")
    send_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    recv_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    host_buf = value(acl.rt.malloc_host(size), "aclrtMallocHost")
    acl.util.ptr_to_numpy(host_buf, (count,), NPY_FLOAT32)[:] = float(device)
    check(acl.rt.memcpy(send_buf, size, host_buf, size, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    comm = output(HcclCommInitRootInfo(ctx.dev_count, ctx.root_info, device), "HcclCommInitRootInfo")
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    nxt, prev = (device + 1) % count, (device - 1 + count) % count
    items = [send_recv_item(HCCL_SEND, send_buf, count, HCCL_DATA_TYPE_FP32, nxt),
             send_recv_item(HCCL_RECV, recv_buf, count, HCCL_DATA_TYPE_FP32, prev)]
    check(HcclBatchSendRecv(items, comm, stream), "HcclBatchSendRecv")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = read_device(recv_buf, count)
    check(HcclCommDestroy(comm), "HcclCommDestroy")
    check(acl.rt.free(send_buf), "aclrtFree")
    check(acl.rt.free(recv_buf), "aclrtFree")
    check(acl.rt.free_host(host_buf), "aclrtFreeHost")
    check(acl.rt.destroy_stream(stream), "aclrtDestroyStream")
    check(acl.rt.reset_device(device), "aclrtResetDevice")
    return out


SAMPLES = {"01_send_recv": send_recv, "02_batch_send_recv_ring": batch_send_recv_ring}


def run(name: str, entry=main) -> list:
    """Run one example's ``main()`` (``entry``: :func:`example_main.launch_main` starts the ranks
    with ``pyhcomm.launch``); returns each device's output (None where it prints nothing)."""
    return entry(SAMPLES[name])
