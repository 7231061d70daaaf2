"""HCCL's ``examples/01_point_to_point``, ported call for call (see :mod:`example_main`).

``01_send_recv``: even devices send their device id (``count = devCount`` floats) to the next
odd device with ``HcclSend``; odd devices ``HcclRecv`` it. ``02_batch_send_recv_ring``: every
device sends its id to the next device and receives from the previous one with one
``HcclBatchSendRecv`` of two items. Products (READMEs): Ascend 950PR/950DT, Atlas A3, Atlas A2
training, Atlas training series; one server, N >= 2 devices (even for send/recv).
"""
from __future__ import annotations

from example_main import check, fill_device, main, output, read_device, release, value

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (ACL_MEM_MALLOC_HUGE_ONLY, HCCL_DATA_TYPE_FP32, HCCL_RECV, HCCL_SEND,  # ... from pyhccl
                     HcclBatchSendRecv, HcclCommInitRootInfo, HcclRecv, HcclSend, HcclSendRecvItem)


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


def batch_send_recv_ring(ctx):
    device, count = ctx.device, ctx.dev_count
    size = count * 4
    check(acl.rt.set_device(device), "aclrtSetDevice")
    send_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    recv_buf = value(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    fill_device(send_buf, count, float(device))
    comm = output(HcclCommInitRootInfo(ctx.dev_count, ctx.root_info, device), "HcclCommInitRootInfo")
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    nxt, prev = (device + 1) % count, (device - 1 + count) % count
    items = [HcclSendRecvItem(HCCL_SEND, send_buf, count, HCCL_DATA_TYPE_FP32, nxt),
             HcclSendRecvItem(HCCL_RECV, recv_buf, count, HCCL_DATA_TYPE_FP32, prev)]
    check(HcclBatchSendRecv(items, comm, stream), "HcclBatchSendRecv")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = read_device(recv_buf, count)
    release(ctx, comm, stream, (send_buf, recv_buf))
    return out


SAMPLES = {"01_send_recv": send_recv, "02_batch_send_recv_ring": batch_send_recv_ring}


def run(name: str) -> list:
    """Run one example's ``main()``; returns each device's output (None where it prints nothing)."""
    return main(SAMPLES[name])
