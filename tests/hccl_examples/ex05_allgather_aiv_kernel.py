"""``examples/05_custom_ops_allgather`` (the top level: the AIV variant), its kernel:
``op_kernel/launch_kernel_asc.asc`` (``HcclAllGatherAivKernel``), ``inc/aiv_all_gather_mesh_1d.h``
(``AivAllGatherMesh1D``, ``AivAllGatherV2Mesh1D``) and what they use of
``inc/aiv_communication_base_v2.h`` (``AivCommBase``), ported call for call to :mod:`pyhcomm.aiv`.

The engine context the host hands over (``buffIn``, 2 MiB, registered and exchanged over the AIV
channels) holds, per rank ``i``, the HCCL buffer (``GM_IN[i]``, where each rank stages its input)
and the engine context (``GM_OUT[i]``, its flags from 40 KiB on) of every rank; the tag counter at
1040 KiB. ``Record`` stores a 32-byte flag (``SetSignalValue`` with 8 int32: the C code's
``DataCopyUB2GM`` of ``localTagTensor``) and ``WaitFlag`` spins until one holds the tag
(``WaitSignalValue``: the C code's loop of ``DataCopyGM2UB`` and ``GetValue``): flags are
synchronisation for the verifier.

As written, the host passes ``tagId`` 1 on every call and ``Process`` flags with that constant,
and nothing resets the data flags. The C test calls it once, and once it is correct. A second call
on the same communicator is not: a rank may find a peer's flag still set from the first call and
read the peer's HCCL buffer before the peer staged its new input (the verifier reports the race;
the bytes are the same when the inputs are); and a rank that runs ahead through its second call
may store its ``BarrierAll`` flag into a peer's slot before that peer reset the slot after the
first call: the reset erases it and the peer's second ``BarrierAll`` waits for ever (a hang,
which the threaded scheduler hits now and then). ``VARIANT`` (set before the module is loaded:
``ex05_custom_allgather_aiv.variant_loader``) selects the corrected kernel (``"fresh tag"``:
``Process`` flags with the call's own tag, ``tag_`` from ``GetTag``'s per-call counter, as HCCL's
own AIV kernels do: no flag of a former call holds it) and defects on top of it.
"""
import numpy as np

from ex05_aiv_common import MAX_RANK_SIZE_A3, unpack

from pyhcomm.aiv import (EXPORT_AIV_META_INFO, DataCopy, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,  # noqa: F401
                         GetBlockIdx, GetBlockNum, GlobalTensor, PipeBarrier, SetSignalValue, SyncAll, TBuf, TPipe,
                         TQueBind, WaitSignalValue, pipe_barrier)   # real machine: #include "kernel_operator.h"

#: "as written" (tagId 1 on every call), "fresh tag" (corrected), or a defect on top of "fresh tag":
#: "missing flag wait", "wrong peer flag", "record before copy".
VARIANT = "as written"

BUFFER_OUT_ADDR_OFFSET = 16 * 1024
TOPO_ADDR_OFFSET = 32 * 1024
FLAG_ADDR_OFFSET = 40 * 1024
AIV_FLAG_CLEAR_OFFSET = 1040 * 1024
TOPO_LEN = 64
LOCAL_FLAG_BUF_LEN = 1024
AIV_TAG_MOVE_RIGHT_BITS = 16
LOW_16_BITS = 0xFFFF
NUM_BLOCKS_FOUR_PER_RANK_A3 = 4
MAX_NUM_BLOCKS = 48
UB_ALIGN_SIZE = 32
UB_MAX_DATA_SIZE = 190 * 1024
UB_DB_DATA_BATCH_SIZE = UB_MAX_DATA_SIZE // 2
FLAG_SIZE = 32
ATOMIC_FLAG_SIZE = 512
FLAG_ONE_OFFSET, FLAG_TWO_OFFSET, FLAG_THREE_OFFSET, FLAG_FOUR_OFFSET, FLAG_FIVE_OFFSET = (
    0, FLAG_SIZE, FLAG_SIZE * 2, FLAG_SIZE * 3, FLAG_SIZE * 4)
DOUBLE = 2
FLAG_BUF_NUM = 3
MAX_FLAG_SIZE_PER_KERNEL = 6 * MAX_RANK_SIZE_A3 * FLAG_SIZE
BASE_FLAG_OFFSET = MAX_FLAG_SIZE_PER_KERNEL
TAG_INIT_VALUE = 1
TAG_RESET_COUNT = 4096
TAG_BARRIER_OFFSET = 2048
UB_FLAG_PAD_COUNT = 8           # sync_interface.h
#: HcclDataType -> the kernel's element type (the kernel's switch; other types do nothing)
TYPES = {0: np.int8, 2: np.int32, 3: np.float16, 4: np.float32}


def SyncAllSafe():  # noqa: N802 - C++ names throughout
    SyncAll(True)               # __DAV_C310__ (Ascend 950): SyncAll<true>()


class AivCommBase:
    def Init(self, buffIn, input, output, rank, rankSize, xRankSize, yRankSize, zRankSize, len_, dataType,  # noqa
             reduceOp, root, inputSliceStride, outputSliceStride, repeatNum, inputRepeatStride, outputRepeatStride,
             headCountMem, tailCountMem, addOneMem, counterMemSize, isEnableCounter, useDoubleBuffer):
        self.rank_, self.root_, self.rankSize_ = rank, root, rankSize
        self.xRankSize_, self.yRankSize_, self.zRankSize_ = xRankSize, yRankSize, zRankSize
        self.reduceOp_, self.len_, self.input_, self.output_, self.dataType_ = reduceOp, len_, input, output, dataType
        self.useDoubleBuffer_ = useDoubleBuffer
        self.numBlocks_ = GetBlockNum()
        self.inputSliceStride_, self.outputSliceStride_ = inputSliceStride, outputSliceStride
        self.repeatNum_, self.inputRepeatStride_, self.outputRepeatStride_ = repeatNum, inputRepeatStride, \
            outputRepeatStride
        self.InitBuffArray(buffIn)
        self.localOffset = (rankSize * NUM_BLOCKS_FOUR_PER_RANK_A3 * FLAG_BUF_NUM) * FLAG_SIZE
        self.multiOffset = MAX_NUM_BLOCKS * DOUBLE * FLAG_SIZE + self.localOffset
        self.pingpongOffset = self.multiOffset + DOUBLE * DOUBLE * NUM_BLOCKS_FOUR_PER_RANK_A3 * ATOMIC_FLAG_SIZE * DOUBLE
        self.countOffset = DOUBLE * self.pingpongOffset
        self.seperateOffset = self.countOffset + NUM_BLOCKS_FOUR_PER_RANK_A3 * rankSize * FLAG_SIZE
        self.pipe = TPipe()
        self.localFlagBuf = TBuf()
        self.pipe.InitBuffer(self.localFlagBuf, LOCAL_FLAG_BUF_LEN)
        self.localSetTensor = self.localFlagBuf.GetWithOffset(np.int32, UB_FLAG_PAD_COUNT, FLAG_ONE_OFFSET)
        self.localCheckTensor = self.localFlagBuf.GetWithOffset(np.int32, UB_FLAG_PAD_COUNT, FLAG_TWO_OFFSET)
        self.localCheckGETensor = self.localFlagBuf.GetWithOffset(np.int32, UB_FLAG_PAD_COUNT, FLAG_THREE_OFFSET)
        self.localGetTensor = self.localFlagBuf.GetWithOffset(np.int32, UB_FLAG_PAD_COUNT, FLAG_FOUR_OFFSET)
        self.localTagTensor = self.localFlagBuf.GetWithOffset(np.int32, UB_FLAG_PAD_COUNT, FLAG_FIVE_OFFSET)
        self.inOutQue = TQueBind()
        self.pipe.InitBuffer(self.inOutQue, 1, UB_MAX_DATA_SIZE)
        self.d2hGlobal = GlobalTensor(np.int32)
        self.GetTag(buffIn)

    def InitBuffArray(self, buffIn):
        aivCommInfoMem = GlobalTensor(np.uint64, buffIn)          # __gm__ uint64_t*: scalar reads
        self.GM_IN = [aivCommInfoMem.GetValue(2 * i) for i in range(self.rankSize_)]
        self.GM_OUT = [aivCommInfoMem.GetValue(2 * i + 1) + FLAG_ADDR_OFFSET for i in range(self.rankSize_)]
        self.TOPO_ = [aivCommInfoMem.GetValue(TOPO_ADDR_OFFSET // 8 + i) for i in range(TOPO_LEN)]
        pipe_barrier("PIPE_ALL")

    def Record(self, targetRank, flag_offset, curTag):
        self.d2hGlobal.SetGlobalBuffer(self.GM_OUT[targetRank] + flag_offset * UB_ALIGN_SIZE)
        pipe_barrier("PIPE_ALL")     # (SetValue + DataCopyUB2GM of UB_ALIGN_SIZE / 4 int32: one flag store)
        SetSignalValue(self.d2hGlobal, self.localTagTensor, curTag, UB_ALIGN_SIZE // 4)
        pipe_barrier("PIPE_ALL")

    def WaitFlag(self, targetRank, flag_offset, curTag):
        self.d2hGlobal.SetGlobalBuffer(self.GM_OUT[targetRank] + flag_offset * UB_ALIGN_SIZE)
        # while (true) { DataCopyGM2UB(localTagTensor, d2hGlobal, 8); if (GetValue(0) == curTag) break; }
        WaitSignalValue(self.d2hGlobal, self.localTagTensor, curTag, UB_ALIGN_SIZE // 4)

    def BarrierForFirstOP(self):
        if GetBlockIdx() == 0:
            pipe_barrier("PIPE_ALL")
            for i in range(self.rankSize_):
                flag_offset = BASE_FLAG_OFFSET + i * FLAG_SIZE
                self.Record(self.rank_, flag_offset // UB_ALIGN_SIZE, DOUBLE)
            pipe_barrier("PIPE_ALL")
            for i in range(self.rankSize_):
                flag_offset = BASE_FLAG_OFFSET + self.rank_ * FLAG_SIZE
                self.WaitFlag(i, flag_offset // UB_ALIGN_SIZE, DOUBLE)

    def BarrierAll(self):
        SyncAllSafe()
        if GetBlockIdx() == 0:
            pipe_barrier("PIPE_ALL")
            for i in range(self.rankSize_):
                flag_offset = BASE_FLAG_OFFSET + self.rank_ * FLAG_SIZE
                self.Record(i, flag_offset // UB_ALIGN_SIZE, 1)
            pipe_barrier("PIPE_ALL")
            for i in range(self.rankSize_):
                flag_offset = BASE_FLAG_OFFSET + i * FLAG_SIZE
                self.WaitFlag(self.rank_, flag_offset // UB_ALIGN_SIZE, 1)
                self.Record(self.rank_, flag_offset // UB_ALIGN_SIZE, 0)

    def GetTag(self, buffIn):
        blockIdx = GetBlockIdx()
        localIn = self.inOutQue.AllocTensor(np.uint32)
        ipcBufferGlobal = GlobalTensor(np.uint32, buffIn)
        self.DataCopyGM2UB(localIn, ipcBufferGlobal[AIV_FLAG_CLEAR_OFFSET // 4], 1)
        pipe_barrier("PIPE_ALL")
        self.tag_ = localIn.GetValue(0)
        self.tag_ = TAG_INIT_VALUE if self.tag_ == 0 else self.tag_
        self.Record(self.rank_, TAG_BARRIER_OFFSET + blockIdx, self.tag_)
        for idx in range(self.numBlocks_):
            self.WaitFlag(self.rank_, TAG_BARRIER_OFFSET + idx, self.tag_)
        self.tag_ = TAG_INIT_VALUE if self.tag_ == TAG_RESET_COUNT else self.tag_ + 1
        if blockIdx == 0:
            localIn.SetValue(0, self.tag_)
            pipe_barrier("PIPE_ALL")
            self.DataCopyUB2GM(ipcBufferGlobal[AIV_FLAG_CLEAR_OFFSET // 4], localIn, 1)
        self.inOutQue.FreeTensor(localIn)

    def DataCopyGM2UB(self, dstLocal, srcGlobal, calCount):
        nbytes = calCount * srcGlobal.dtype.itemsize
        if nbytes % UB_ALIGN_SIZE == 0:
            DataCopy(dstLocal, srcGlobal, calCount)
        else:
            DataCopyPad(dstLocal, srcGlobal, DataCopyExtParams(1, nbytes, 0, 0, 0), DataCopyPadExtParams(True, 0, 1, 0))

    def DataCopyUB2GM(self, dstGlobal, srcLocal, calCount):
        nbytes = calCount * srcLocal.dtype.itemsize
        if nbytes % UB_ALIGN_SIZE == 0:
            DataCopy(dstGlobal, srcLocal, calCount)
        else:
            DataCopyPad(dstGlobal, srcLocal, DataCopyExtParams(1, nbytes, 0, 0, 0))

    def CpGM2GM(self, outputGM, inputGM, count):
        """``outputGM`` / ``inputGM``: device addresses of ``T`` elements (``__gm__ T*``)."""
        T = self.T
        inputGT, outputGT = GlobalTensor(T, inputGM, count), GlobalTensor(T, outputGM, count)
        size = np.dtype(T).itemsize
        maxCountPerLoop = (UB_DB_DATA_BATCH_SIZE if self.useDoubleBuffer_ else UB_MAX_DATA_SIZE) // size
        curOffset = 0
        while count > 0:
            curCount = min(count, maxCountPerLoop)
            localIn = self.inOutQue.AllocTensor(T)
            self.DataCopyGM2UB(localIn, inputGT[curOffset], curCount)
            self.inOutQue.EnQue(localIn)
            localOut = self.inOutQue.DeQue(T)
            self.DataCopyUB2GM(outputGT[curOffset], localOut, curCount)
            self.inOutQue.FreeTensor(localOut)
            count -= curCount
            curOffset += curCount


class AivAllGatherMesh1D(AivCommBase):
    def __init__(self, T):
        self.T = T

    def InitCoreInfo(self, len_, tag):
        self.curTag = tag
        coreId, coreCount = GetBlockIdx(), self.numBlocks_
        size = np.dtype(self.T).itemsize
        dataPerCore, remainder = len_ // coreCount, len_ % coreCount
        if coreId < remainder:
            innerOffset = coreId * (dataPerCore + 1) * size
            self.curCount = dataPerCore + 1
        else:
            innerOffset = remainder * (dataPerCore + 1) * size + (coreId - remainder) * dataPerCore * size
            self.curCount = dataPerCore
        self.coreOffset = innerOffset

    def Run(self, len_, stride):
        if self.curCount == 0:
            return
        gmIn = self.GM_IN[self.rank_] + self.coreOffset
        input = self.input_ + self.coreOffset
        self.CpGM2GM(gmIn, input, self.curCount)
        PipeBarrier("PIPE_ALL")
        flagOffset = self.numBlocks_ * self.rankSize_ * FLAG_SIZE
        self.Record(self.rank_, GetBlockIdx() * FLAG_SIZE + flagOffset, self.curTag)
        PipeBarrier("PIPE_ALL")
        for rank in range(self.rankSize_):
            gmOthers = self.GM_IN[rank] + self.coreOffset
            output = self.output_ + rank * stride + self.coreOffset
            PipeBarrier("PIPE_ALL")
            self.WaitFlag(rank, GetBlockIdx() * FLAG_SIZE + flagOffset, self.curTag)
            self.CpGM2GM(output, gmOthers, self.curCount)
        PipeBarrier("PIPE_ALL")

    def Process(self, count, tag, stride):
        if self.numBlocks_ >= self.rankSize_:
            self.InitCoreInfo(count, tag)
            self.Run(count, stride)
        else:
            self.RunCtrlCore(count, tag, stride)

    def RunCtrlCore(self, count, tag, stride):
        block_idx, numBlocks = GetBlockIdx(), self.numBlocks_
        if block_idx >= numBlocks:
            return
        size = np.dtype(self.T).itemsize
        countPerCore = count // numBlocks
        curCountCore = count - countPerCore * (numBlocks - 1) if block_idx == numBlocks - 1 else countPerCore
        gmIn = self.GM_IN[self.rank_] + block_idx * countPerCore * size
        if VARIANT != "record before copy":
            self.CpGM2GM(gmIn, self.input_ + block_idx * countPerCore * size, curCountCore)
        PipeBarrier("PIPE_ALL")
        self.Record(self.rank_, block_idx, tag)
        for idx in range(numBlocks):
            self.WaitFlag(self.rank_, idx, tag)
        if block_idx == 0:
            self.Record(self.rank_, self.rankSize_ + self.rank_, tag)
        if VARIANT == "record before copy":     # the flags say "staged" before the copy that stages it
            self.CpGM2GM(gmIn, self.input_ + block_idx * countPerCore * size, curCountCore)
        perCoreRankNum = self.rankSize_ // numBlocks
        curCoreRankNum = (self.rankSize_ - perCoreRankNum * (numBlocks - 1) if block_idx == numBlocks - 1
                          else perCoreRankNum)
        startRank = block_idx * perCoreRankNum
        for rank in range(startRank, startRank + curCoreRankNum):
            gmOthers = self.GM_IN[rank]
            output = self.output_ + rank * stride
            flag_rank = (rank + 1) % self.rankSize_ if VARIANT == "wrong peer flag" else rank
            if VARIANT != "missing flag wait":
                self.WaitFlag(flag_rank, self.rankSize_ + flag_rank, tag)
            self.CpGM2GM(output, gmOthers, count)
            PipeBarrier("PIPE_ALL")


def AivAllGatherV2Mesh1D(T, buffIn, input, output, rank, rankSize, xRankSize, yRankSize, zRankSize, len_,  # noqa
                         dataType, reduceOp, root, tag, inputSliceStride, outputSliceStride, repeatNum,
                         inputRepeatStride, outputRepeatStride, isOpBase, headCountMem, tailCountMem, addOneMem,
                         counterMemSize, isEnableCounter, extraArgs):
    op = AivAllGatherMesh1D(T)
    op.Init(buffIn, input, output, rank, rankSize, xRankSize, yRankSize, zRankSize, len_, dataType, reduceOp, root,
            inputSliceStride, outputSliceStride, repeatNum, inputRepeatStride, outputRepeatStride, headCountMem,
            tailCountMem, addOneMem, counterMemSize, isEnableCounter, True)
    SyncAllSafe()
    if GetBlockIdx() == 0 and tag >> AIV_TAG_MOVE_RIGHT_BITS == 1 and (tag & LOW_16_BITS) == 1:
        op.BarrierForFirstOP()
    SyncAllSafe()
    op.Process(len_, op.tag_ if VARIANT != "as written" else tag, outputSliceStride)
    op.BarrierAll()


def HcclAllGatherAivKernel(param: bytes):  # noqa: N802
    p = unpack(param)
    T = TYPES.get(p["dataType"])
    if T is None:       # default: break
        return
    AivAllGatherV2Mesh1D(T, p["buffIn"], p["input"], p["output"], p["rank"], p["rankSize"], p["xRankSize"],
                         p["yRankSize"], p["zRankSize"], p["len"], p["dataType"], p["reduceOp"], p["root"], p["tagId"],
                         p["inputSliceStride"], p["outputSliceStride"], p["repeatNum"], p["inputRepeatStride"],
                         p["outputRepeatStride"], p["isOpBase"], p["headCountMem"], p["tailCountMem"],
                         p["addOneMem"], p["counterMemSize"], p["isEnableCounter"], p["extraArgs"])


EXPORT_AIV_META_INFO(HcclAllGatherAivKernel)
