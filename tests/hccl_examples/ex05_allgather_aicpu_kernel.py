"""``examples/05_custom_ops_allgather/aicpu/op_kernel_aicpu`` (aicpu_kernel.cc, exec_op.cc): the AI
CPU kernel of :mod:`ex05_custom_allgather_aicpu`. It deserialises its resource context from
device memory (``device_load``: the C kernel copies ``param->resCtxDevice``), then per loop:
stage its slice in its HCCL buffer slot, release the other threads, exchange with every peer on
thread ``i`` / channel ``i`` (record ACK, wait ACK, write into the peer's slot, record DATA, wait
DATA), join, copy every slot out."""
from custom_ops import chk, returns_code
from ex05_common import (CUSTOM_TIMEOUT, NOTIFY_IDX_ACK, NOTIFY_IDX_DATA_SIGNAL, OP_PARAM, SIZE_TABLE, AlgResourceCtx,
                         cstr)

# real machine: the kernel is C++ linked with HCOMM
from pyhcomm import (HCCL_SUCCESS, HcommBatchModeEnd, HcommBatchModeStart, HcommChannelNotifyRecordOnThread,
                     HcommChannelNotifyWaitOnThread, HcommLocalCopyOnThread, HcommThreadNotifyRecordOnThread,
                     HcommThreadNotifyWaitOnThread, HcommWriteOnThread)
from pyhcomm.sim.kernel import device_load

HCCL_MIN_SLICE_ALIGN = 128
UB_MAX_DATA_SIZE = 256 * 1024 * 1024


def thread_sync_before(threads) -> None:
    for t in threads[1:]:
        chk(HcommThreadNotifyRecordOnThread(threads[0], t, 0))
    for t in threads[1:]:
        chk(HcommThreadNotifyWaitOnThread(t, 0, CUSTOM_TIMEOUT))


def thread_sync_after(threads) -> None:
    for i in range(1, len(threads)):
        chk(HcommThreadNotifyWaitOnThread(threads[0], i - 1, CUSTOM_TIMEOUT))
    for i in range(1, len(threads)):
        chk(HcommThreadNotifyRecordOnThread(threads[i], threads[0], i - 1))


@returns_code
def exec_op(p, res) -> int:
    """exec_op.cc; each step ``CHK_RET``: the first failure ends it."""
    size = SIZE_TABLE[p["dataType"]]
    count, data_size = p["count"], p["count"] * size
    main = res.threads[0]
    if p["rankSize"] == 1:
        chk(HcommLocalCopyOnThread(main, p["outputPtr"], p["inputPtr"], data_size))
        return HCCL_SUCCESS
    ccl_addr, ccl_size = res.cclMem
    bound = ccl_size // p["rankSize"] // HCCL_MIN_SLICE_ALIGN * HCCL_MIN_SLICE_ALIGN
    per_loop = min(UB_MAX_DATA_SIZE, bound) // size
    done = 0
    for loop in range(-(-count // per_loop)):
        slice_count = min(per_loop, count - loop * per_loop)
        slice_size = slice_count * size
        mine = ccl_addr + slice_size * p["myRank"]
        chk(HcommLocalCopyOnThread(main, mine, p["inputPtr"] + done * size, slice_size))
        thread_sync_before(res.threads)
        for i, t in enumerate(res.threads):
            ch = res.channels[i]
            remote = ch.remoteCclMem[0] + slice_size * p["myRank"]
            chk(HcommChannelNotifyRecordOnThread(t, ch.handle, NOTIFY_IDX_ACK))
            chk(HcommChannelNotifyWaitOnThread(t, ch.handle, NOTIFY_IDX_ACK, CUSTOM_TIMEOUT))
            chk(HcommWriteOnThread(t, ch.handle, remote, mine, slice_size))
            chk(HcommChannelNotifyRecordOnThread(t, ch.handle, NOTIFY_IDX_DATA_SIGNAL))
            chk(HcommChannelNotifyWaitOnThread(t, ch.handle, NOTIFY_IDX_DATA_SIGNAL, CUSTOM_TIMEOUT))
        thread_sync_after(res.threads)
        for rank in range(p["rankSize"]):
            chk(HcommLocalCopyOnThread(main, p["outputPtr"] + done * size + rank * data_size,
                                       ccl_addr + slice_size * rank, slice_size))
        done += slice_count
    return HCCL_SUCCESS


def HcclLaunchCustomAllGatherAicpuKernel(param: bytes) -> int:  # noqa: N802
    (tag, _name, input_ptr, output_ptr, count, _dev, my_rank, rank_size, data_type, _op, _cpu, _aicpu_on_cpu,
     cpu_on_aicpu, record_idx, res_ctx, ctx_size) = OP_PARAM.unpack(param)
    p = {"inputPtr": input_ptr, "outputPtr": output_ptr, "count": count, "myRank": my_rank, "rankSize": rank_size,
         "dataType": data_type}
    res = AlgResourceCtx.deserialize(device_load(res_ctx, ctx_size))
    tag = cstr(tag)
    if HcommBatchModeStart(tag) != HCCL_SUCCESS:
        return 1
    if HcommThreadNotifyWaitOnThread(res.threads[0], record_idx, CUSTOM_TIMEOUT) != HCCL_SUCCESS:  # the host
        return 1
    if exec_op(p, res) != HCCL_SUCCESS:
        return 1
    if HcommThreadNotifyRecordOnThread(res.threads[0], cpu_on_aicpu, 0) != HCCL_SUCCESS:         # release it
        return 1
    if HcommBatchModeEnd(tag) != HCCL_SUCCESS:
        return 1
    return 0
