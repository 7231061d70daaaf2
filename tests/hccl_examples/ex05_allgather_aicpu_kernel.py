"""``examples/05_custom_ops_allgather/aicpu/op_kernel_aicpu`` (aicpu_kernel.cc, exec_op.cc): the AI
CPU kernel of :mod:`ex05_custom_allgather_aicpu`. It deserialises its resource context from
device memory (``device_load``: the C kernel copies ``param->resCtxDevice``), then per loop:
stage its slice in its HCCL buffer slot, release the other threads, exchange with every peer on
thread ``i`` / channel ``i`` (record ACK, wait ACK, write into the peer's slot, record DATA, wait
DATA), join, copy every slot out."""
from ex05_common import (CUSTOM_TIMEOUT, NOTIFY_IDX_ACK, NOTIFY_IDX_DATA_SIGNAL, OP_PARAM, SIZE_TABLE, AlgResourceCtx,
                         cstr)

# real machine: the kernel is C++ linked with HCOMM
from pyhcomm import (HCCL_SUCCESS, HcommBatchModeEnd, HcommBatchModeStart, HcommChannelNotifyRecordOnThread,
                     HcommChannelNotifyWaitOnThread, HcommLocalCopyOnThread, HcommThreadNotifyRecordOnThread,
                     HcommThreadNotifyWaitOnThread, HcommWriteOnThread)
from pyhcomm.sim.kernel import device_load

HCCL_MIN_SLICE_ALIGN = 128
UB_MAX_DATA_SIZE = 256 * 1024 * 1024


def thread_sync_before(threads) -> list:
    rets = [HcommThreadNotifyRecordOnThread(threads[0], t, 0) for t in threads[1:]]
    return rets + [HcommThreadNotifyWaitOnThread(t, 0, CUSTOM_TIMEOUT) for t in threads[1:]]


def thread_sync_after(threads) -> list:
    rets = [HcommThreadNotifyWaitOnThread(threads[0], i - 1, CUSTOM_TIMEOUT) for i in range(1, len(threads))]
    return rets + [HcommThreadNotifyRecordOnThread(threads[i], threads[0], i - 1) for i in range(1, len(threads))]


def exec_op(p, res) -> int:
    size = SIZE_TABLE[p["dataType"]]
    count, data_size = p["count"], p["count"] * size
    main = res.threads[0]
    if p["rankSize"] == 1:
        return HcommLocalCopyOnThread(main, p["outputPtr"], p["inputPtr"], data_size)
    ccl_addr, ccl_size = res.cclMem
    bound = ccl_size // p["rankSize"] // HCCL_MIN_SLICE_ALIGN * HCCL_MIN_SLICE_ALIGN
    per_loop = min(UB_MAX_DATA_SIZE, bound) // size
    rets, done = [], 0
    for loop in range(-(-count // per_loop)):
        slice_count = min(per_loop, count - loop * per_loop)
        slice_size = slice_count * size
        mine = ccl_addr + slice_size * p["myRank"]
        rets.append(HcommLocalCopyOnThread(main, mine, p["inputPtr"] + done * size, slice_size))
        rets += thread_sync_before(res.threads)
        for t, ch in zip(res.threads, res.channels):
            remote = ch.remoteCclMem[0] + slice_size * p["myRank"]
            rets += [HcommChannelNotifyRecordOnThread(t, ch.handle, NOTIFY_IDX_ACK),
                     HcommChannelNotifyWaitOnThread(t, ch.handle, NOTIFY_IDX_ACK, CUSTOM_TIMEOUT),
                     HcommWriteOnThread(t, ch.handle, remote, mine, slice_size),
                     HcommChannelNotifyRecordOnThread(t, ch.handle, NOTIFY_IDX_DATA_SIGNAL),
                     HcommChannelNotifyWaitOnThread(t, ch.handle, NOTIFY_IDX_DATA_SIGNAL, CUSTOM_TIMEOUT)]
        rets += thread_sync_after(res.threads)
        for rank in range(p["rankSize"]):
            rets.append(HcommLocalCopyOnThread(main, p["outputPtr"] + done * size + rank * data_size,
                                               ccl_addr + slice_size * rank, slice_size))
        done += slice_count
    return next((r for r in rets if r != HCCL_SUCCESS), HCCL_SUCCESS)


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
