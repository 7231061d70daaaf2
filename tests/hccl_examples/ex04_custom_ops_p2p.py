"""HCCL's ``examples/04_custom_ops_p2p`` (custom Send/Recv on an AI CPU kernel), ported call for
call: ``op_host/`` (send.cc, recv.cc, utils.cc, launch_kernel.cc, load_kernel.cc) here, the
kernel (``op_kernel_aicpu/``) in :mod:`ex04_p2p_aicpu_kernel`, the testcase (the send/recv sample
with the custom ops) through :func:`ex01_point_to_point.send_recv`.

Per call: an engine context (tag ``hccl_custom_p2p``, COMM_ENGINE_AICPU) holds the kernel's
resources: the user stream as a CPU_TS thread exported to AICPU_TS, one AICPU_TS thread exported
to CPU_TS, one HCCS channel to the peer, the local and remote HCCL buffers. The host records the
AI CPU thread, launches the kernel and waits for its record. In the kernel the sender stages its
data in its HCCL buffer and records ACK; the receiver waits for ACK, reads, records DATA.

Differences of form: kernel "binaries" are Python modules (pyhcomm's model), found next to this
file instead of under ``$ASCEND_HOME_PATH/opp``; the ``<<<>>>`` launch path
(``HCCL_CUSTOM_KERNEL_LAUNCH_ASC=1``) is not ported: pyhcomm models the aclrt launch only.
Products (README): Atlas A3, Atlas A2 training; N >= 2 (even) devices of one server.
"""
from __future__ import annotations

import functools
import os

import ex01_point_to_point as ex01
from ex04_common import (ALG_RESOURCE_CTX, DEVICE_TYPE_A2, DEVICE_TYPE_A3, DEVICE_TYPE_A5, HCCL_CMD_RECEIVE,
                         HCCL_CMD_SEND, OP_PARAM)
from acl_constants import ACL_MEMCPY_HOST_TO_DEVICE
from custom_ops import Error, acl_chk, chk, get_device_type, launch_kernel, returns_code, ub_ctp_desc
from example_main import main

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (COMM_ENGINE_AICPU, COMM_ENGINE_AICPU_TS, COMM_ENGINE_CPU_TS,  # ... from pyhccl
                     COMM_PROTOCOL_HCCS, HCCL_E_NOT_SUPPORT, HCCL_E_PTR, HCCL_SUCCESS,
                     HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer,
                     HcclEngineCtxCreate, HcclEngineCtxGet, HcclGetCommName, HcclGetHcclBuffer, HcclGetRankId,
                     HcclGetRankSize, HcclThreadAcquire, HcclThreadAcquireWithStream, HcclThreadExportToCommEngine)

KERNEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ex04_p2p_aicpu_kernel.py")
TAG = "hccl_custom_p2p"


def acquire_channel(comm, engine, dev_type, src_rank, dst_rank):
    """One channel to ``dst_rank``: HCCS with 2 notifies on A2/A3; on Ascend 950 the UB_CTP link of
    the rank graph, with its endpoints."""
    if dev_type in (DEVICE_TYPE_A2, DEVICE_TYPE_A3):
        desc = HcclChannelDesc()
        chk(HcclChannelDescInit(desc))
        desc.remoteRank, desc.channelProtocol, desc.notifyNum = dst_rank, COMM_PROTOCOL_HCCS, 2
    elif dev_type == DEVICE_TYPE_A5:
        desc = ub_ctp_desc(comm, src_rank, dst_rank, 2)
    else:
        raise Error(HCCL_E_NOT_SUPPORT)
    return chk(HcclChannelAcquire(comm, engine, [desc]))[0]


def launch(param: dict, stream):
    """launch_kernel.cc (aclrt path): record the AI CPU thread, launch, wait for its record."""
    packed = OP_PARAM.pack(param["tag"].encode(), param["commName"].encode(), param["inputPtr"], param["outputPtr"],
                           param["count"], param["devType"], param["dataType"], param["opType"], param["cpuThread"],
                           param["aicpuThreadOnCpu"], param["resCtx"])
    launch_kernel(KERNEL_FILE, "HcclLaunchP2PAicpuKernel", packed, param["cpuThread"], param["aicpuThreadOnCpu"],
                  0, stream)


# -- send.cc / recv.cc ---------------------------------------------------------------------------------------
def _custom_p2p(buf, count, data_type, peer, comm, stream, op_type):
    if not buf or not comm or not stream:
        raise Error(HCCL_E_PTR)
    param = {"tag": TAG, "commName": chk(HcclGetCommName(comm)), "inputPtr": 0, "outputPtr": 0, "count": count,
             "dataType": data_type, "opType": op_type, "cpuThread": 0, "aicpuThreadOnCpu": 0}
    param["inputPtr" if op_type == HCCL_CMD_SEND else "outputPtr"] = buf
    # STEP 1: topology
    rank = chk(HcclGetRankId(comm))
    chk(HcclGetRankSize(comm))
    param["devType"] = get_device_type()
    # STEP 2: resources, kept in an engine context
    engine = COMM_ENGINE_AICPU
    size = ALG_RESOURCE_CTX.size
    ret, ctx, _size = HcclEngineCtxGet(comm, TAG, engine)
    if ret == HCCL_SUCCESS:
        param["resCtx"] = ctx
    else:
        ctx = chk(HcclEngineCtxCreate(comm, TAG, engine, size))
        param["resCtx"] = ctx
        # STEP 2.1: the user stream as a CPU_TS thread (1 notify), seen by the AI CPU; an AI CPU thread
        param["cpuThread"] = chk(HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, stream, 1))
        cpu_on_aicpu = chk(HcclThreadExportToCommEngine(comm, 1, [param["cpuThread"]], COMM_ENGINE_AICPU_TS))[0]
        aicpu_thread = chk(HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1))[0]
        param["aicpuThreadOnCpu"] = chk(HcclThreadExportToCommEngine(comm, 1, [aicpu_thread], COMM_ENGINE_CPU_TS))[0]
        # STEP 2.2: one channel between the two ranks
        channel = acquire_channel(comm, engine, param["devType"], rank, peer)
        # STEP 2.3: local and remote HCCL buffers
        local_addr, local_size = chk(HcclGetHcclBuffer(comm))
        remote_addr, remote_size = chk(HcclChannelGetHcclBuffer(comm, channel))
        host = ALG_RESOURCE_CTX.pack(aicpu_thread, cpu_on_aicpu, local_addr, local_size, remote_addr, remote_size,
                                     channel)
        acl_chk(acl.rt.memcpy(ctx, size, acl.util.bytes_to_ptr(host), size, ACL_MEMCPY_HOST_TO_DEVICE))
    # STEP 3: the kernel
    launch(param, stream)
    return HCCL_SUCCESS


@returns_code
def HcclSendCustom(sendBuf, count, dataType, destRank, comm, stream):  # noqa: N802,N803
    return _custom_p2p(sendBuf, count, dataType, destRank, comm, stream, HCCL_CMD_SEND)


@returns_code
def HcclRecvCustom(recvBuf, count, dataType, srcRank, comm, stream):  # noqa: N802,N803
    return _custom_p2p(recvBuf, count, dataType, srcRank, comm, stream, HCCL_CMD_RECEIVE)


def run(entry=main) -> list:
    """``testcase/main.cc``: the send/recv sample with the custom operators (``entry``: see
    :func:`ex01_point_to_point.run`)."""
    return entry(functools.partial(ex01.send_recv, send=HcclSendCustom, recv=HcclRecvCustom))
