"""``examples/04_custom_ops_p2p/op_kernel_aicpu`` (aicpu_kernel.cc, exec_op.cc): the AI CPU kernel
of :mod:`ex04_custom_ops_p2p`. In pyhcomm a kernel binary is a Python module; the kernel receives
the packed ``OpParam`` and reads its resource context from device memory (``device_load``: the C
kernel dereferences ``param->resCtx``)."""
from custom_ops import chk, returns_code
from ex04_common import (ALG_RESOURCE_CTX, CUSTOM_TIMEOUT, DEVICE_TYPE_A2, DEVICE_TYPE_A3, HCCL_CMD_RECEIVE,
                         HCCL_CMD_SEND, NOTIFY_IDX_ACK, NOTIFY_IDX_DATA_SIGNAL, OP_PARAM, SIZE_TABLE, cstr)

# real machine: the kernel is C++ linked with HCOMM
from pyhcomm import (HCCL_SUCCESS, HcommAcquireComm, HcommBatchModeEnd, HcommBatchModeStart,
                     HcommChannelNotifyRecordOnThread, HcommChannelNotifyWaitOnThread, HcommLocalCopyOnThread,
                     HcommReadOnThread, HcommReleaseComm, HcommThreadNotifyRecordOnThread,
                     HcommThreadNotifyWaitOnThread)
from pyhcomm.sim.kernel import device_load


@returns_code
def exec_op(p, res) -> int:
    """exec_op.cc: the sender stages and signals; the receiver waits, reads, signals back (each
    step ``CHK_RET``: the first failure ends it)."""
    aicpu_thread, _cpu, local_addr, _ls, remote_addr, _rs, channel = res
    size = p["count"] * SIZE_TABLE[p["dataType"]]
    if p["opType"] == HCCL_CMD_SEND:
        chk(HcommLocalCopyOnThread(aicpu_thread, local_addr, p["inputPtr"], size))
        chk(HcommChannelNotifyRecordOnThread(aicpu_thread, channel, NOTIFY_IDX_ACK))
        chk(HcommChannelNotifyWaitOnThread(aicpu_thread, channel, NOTIFY_IDX_DATA_SIGNAL, CUSTOM_TIMEOUT))
    elif p["opType"] == HCCL_CMD_RECEIVE:
        chk(HcommChannelNotifyWaitOnThread(aicpu_thread, channel, NOTIFY_IDX_ACK, CUSTOM_TIMEOUT))
        chk(HcommReadOnThread(aicpu_thread, channel, p["outputPtr"], remote_addr, size))
        chk(HcommChannelNotifyRecordOnThread(aicpu_thread, channel, NOTIFY_IDX_DATA_SIGNAL))
    return HCCL_SUCCESS


def HcclLaunchP2PAicpuKernel(param: bytes) -> int:  # noqa: N802
    (tag, comm_name, input_ptr, output_ptr, count, dev_type, data_type, op_type, _cpu, _aicpu_on_cpu,
     res_ctx) = OP_PARAM.unpack(param)
    p = {"tag": cstr(tag), "commName": cstr(comm_name), "inputPtr": input_ptr, "outputPtr": output_ptr,
         "count": count, "dataType": data_type, "opType": op_type}
    res = ALG_RESOURCE_CTX.unpack(device_load(res_ctx, ALG_RESOURCE_CTX.size))
    aicpu_thread, cpu_on_aicpu = res[0], res[1]
    locks = dev_type in (DEVICE_TYPE_A2, DEVICE_TYPE_A3)
    if locks and HcommAcquireComm(p["commName"]) != HCCL_SUCCESS:
        return 1
    if HcommBatchModeStart(p["tag"]) != HCCL_SUCCESS:
        return 1
    if HcommThreadNotifyWaitOnThread(aicpu_thread, 0, CUSTOM_TIMEOUT) != HCCL_SUCCESS:   # wait for the host
        return 1
    if exec_op(p, res) != HCCL_SUCCESS:
        return 1
    if HcommThreadNotifyRecordOnThread(aicpu_thread, cpu_on_aicpu, 0) != HCCL_SUCCESS:  # release the host
        return 1
    if HcommBatchModeEnd(p["tag"]) != HCCL_SUCCESS:
        return 1
    if locks and HcommReleaseComm(p["commName"]) != HCCL_SUCCESS:
        return 1
    return 0
