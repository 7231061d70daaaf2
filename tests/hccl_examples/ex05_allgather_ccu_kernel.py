"""``examples/05_custom_ops_allgather/ccu/op_kernel_ccu`` (ccu_kernel.h, ccu_kernel.cc) and the loop
parameter helpers of ``op_host/utils.cc``: the CCU kernel of :mod:`ex05_custom_allgather_ccu`,
``AscendC::ccu`` as ``pyhcomm.ccu``.

The kernel function runs once, when the host registers it: its Python ``if`` / ``for`` unroll there
(one ``Write`` per peer), ``ccu.If`` decides when it runs. Pre-sync: each peer writes its output
address and token into this end's variable slots 1 and 2 of their channel (``WriteVariableWithNotify``,
CKE 0 bits 1 and 2). Then a ``Write`` of the local slice to every peer's output (event bit ``1 <<
peer``), the local copy through CCU buffers in a loop group, this rank's bit, a wait for all bits;
post-sync: bit 3 of CKE 0 both ways.

Differences of form: C++ ``operator=`` between registers is ``.assign()`` (an attribute of a
LocalAddr / RemoteAddr assigned with ``=`` records the same copy); ``std::vector<ccu::Variable>``
default-constructs (allocates) its elements, as the list comprehensions here do.
"""
from __future__ import annotations

from pyhcomm import ccu  # real machine: the kernel is C++ (AscendC::ccu)
from pyhcomm import CCU_E_INTERNAL, CCU_SUCCESS  # ... from pyhccl

CCU_MS_INTERLEAVE = 8
CCU_MS_SIZE = 4096
CCU_LOCAL_COPY_MS_PER_LOOP = 8
CCU_MS_LOCAL_COPY_LOOP_COUNT = 8
OUTPUT_XN_ID = 1
TOKEN_XN_ID = 2
CKE_IDX_0 = 0
POST_SYNC_ID = 3


# -- utils.cc: the packed loop parameters ---------------------------------------------------------------------
def SetBits(start, end=None):  # noqa: N802
    if end is None:
        return (1 << (start + 1)) - 1
    return ((1 << (end - start + 1)) - 1) << start


def GetMaxLoopIterNum():  # noqa: N802
    return SetBits(12)


def GetLoopParam(loopCtxId, gsaOffset, loopIterNum):  # noqa: N802,N803
    return ((loopCtxId & SetBits(8)) << 45) | ((gsaOffset & SetBits(32)) << 13) | (loopIterNum & SetBits(13))


def GetParallelParam(repeatNum, repeatLoopIndex, totalLoopNum):  # noqa: N802,N803
    return ((repeatNum & SetBits(7)) << 55) | ((repeatLoopIndex & SetBits(7)) << 48) | ((totalLoopNum & SetBits(7)) << 41)


def GetOffsetParam(gsaOffset, msOffset, ckeOffset):  # noqa: N802,N803
    return ((gsaOffset & SetBits(32)) << 21) | ((msOffset & SetBits(11)) << 10) | (ckeOffset & SetBits(10))


class LoopGroupConfig:
    def __init__(self, msInterleave=0, loopCount=0, memSlice=0):  # noqa: N803
        self.msInterleave, self.loopCount, self.memSlice = msInterleave, loopCount, memSlice


def CalGoSize(size, config):  # noqa: N802
    """``{offset, loopIterNum, loopExtendNum, tailSize}`` of a copy of ``size`` bytes."""
    loop_size = config.loopCount * config.memSlice
    max_size = loop_size * (GetMaxLoopIterNum() + 1)
    m = size // loop_size
    n = (size - m * loop_size) // config.memSlice
    p = size - m * loop_size - n * config.memSlice
    if size == max_size:
        m, n, p = GetMaxLoopIterNum(), config.loopCount - 1, config.memSlice
    offset, loop_iter_num = config.memSlice * config.loopCount * m, m
    if n == 0 and p == 0:
        loop_extend_num, tail_size = 0, 0
    elif n != 0 and p == 0:
        loop_extend_num, tail_size = GetParallelParam(n - 1, 0, 1), config.memSlice
    elif n == 0 and p != 0:
        loop_extend_num, tail_size = GetParallelParam(0, 0, 1), p
    else:
        loop_extend_num, tail_size = GetParallelParam(n - 1, 1, 2), p
    return [offset, loop_iter_num, loop_extend_num, tail_size]


# -- ccu_kernel.h ---------------------------------------------------------------------------------------------
class LoopGroupResource:
    def __init__(self):
        self.completedEvent = ccu.Array(ccu.Event, 0)
        self.ccuBuf = ccu.Array(ccu.CcuBuffer, 0)
        self.eventCount = self.bufCount = 0


class GroupOpSizeVars:
    def __init__(self):
        self.addrOffset, self.loopParam = ccu.Variable(), ccu.Variable()
        self.parallelParam, self.residual = ccu.Variable(), ccu.Variable()


class CcuLoopEntity:
    def __init__(self):
        self.body = [None, None]
        self.loops = [None, None]
        self.loopParam = [ccu.Variable(), ccu.Variable()]


class AllGatherMesh1DMem2MemContext:
    def __init__(self, arg):
        self.arg = arg
        self.input = ccu.Variable()
        self.output, self.token = [], []
        self.currentRankSliceInputOffset = ccu.Variable()
        self.currentRankSliceOutputOffset = ccu.Variable()
        self.sliceSize = ccu.Variable()
        self.event = ccu.Event()
        self.goSize = GroupOpSizeVars()
        self.moConfig = LoopGroupConfig()
        self.moRes = LoopGroupResource()
        self.resourceAllocated = False
        self.loopMap = {}


# -- ccu_kernel.cc --------------------------------------------------------------------------------------------
def InitGroupCopyResources(ctx, loopSrc, loopDst, loopLen):  # noqa: N802,N803
    if not ctx.resourceAllocated:
        ctx.moConfig.msInterleave = CCU_MS_INTERLEAVE
        ctx.moConfig.loopCount = CCU_MS_LOCAL_COPY_LOOP_COUNT
        ctx.moConfig.memSlice = CCU_LOCAL_COPY_MS_PER_LOOP * CCU_MS_SIZE
        ctx.moRes.eventCount = ctx.moConfig.loopCount
        ctx.moRes.completedEvent = ccu.Array(ccu.Event, ctx.moRes.eventCount)
        ctx.moRes.bufCount = ctx.moConfig.loopCount * ctx.moConfig.msInterleave
        ctx.moRes.ccuBuf = ccu.Array(ccu.CcuBuffer, ctx.moRes.bufCount)
        ctx.resourceAllocated = True
    if "localcopy" not in ctx.loopMap:
        entity = ctx.loopMap["localcopy"] = CcuLoopEntity()
        for index in range(2):
            buf_base = index * ctx.moConfig.msInterleave
            loop_evt = ctx.moRes.completedEvent[index]

            def body(index=index, buf_base=buf_base, loop_evt=loop_evt):
                ccu.LocalCopy(ctx.moRes.ccuBuf[buf_base], loopSrc[index], loopLen[index], loop_evt, 1)
                ccu.EventWait(loop_evt, 1)
                ccu.LocalCopy(loopDst[index], ctx.moRes.ccuBuf[buf_base], loopLen[index], loop_evt, 1)
                ccu.EventWait(loop_evt, 1)

            entity.body[index] = ccu.Func(body)
            entity.loops[index] = ccu.Loop(entity.loopParam[index], entity.body[index])


def GroupCopy(ctx, dst, src, goSize):  # noqa: N802,N803
    loop_src = [ccu.LocalAddr(), ccu.LocalAddr()]
    loop_dst = [ccu.LocalAddr(), ccu.LocalAddr()]
    loop_len = [ccu.Variable(), ccu.Variable()]
    InitGroupCopyResources(ctx, loop_src, loop_dst, loop_len)
    loops = ctx.loopMap["localcopy"]
    with ccu.If(goSize.addrOffset != 0):
        loop_param = ccu.Variable()
        loop_param.assign(GetLoopParam(0, ctx.moConfig.memSlice * ctx.moConfig.loopCount, 0))
        loop_param += goSize.loopParam
        slice_size = ccu.Variable()
        slice_size.assign(ctx.moConfig.memSlice)
        loop_src[0].addr, loop_src[0].token = src.addr, src.token
        loop_dst[0].addr, loop_dst[0].token = dst.addr, dst.token
        loop_len[0].assign(slice_size)
        loops.loopParam[0].assign(loop_param)
        para_cfg = ccu.Variable()
        para_cfg.assign(GetParallelParam(ctx.moConfig.loopCount - 1, 0, 1))
        offset_cfg = ccu.Variable()
        offset_cfg.assign(GetOffsetParam(ctx.moConfig.memSlice, ctx.moConfig.msInterleave, 1))
        ccu.LoopGroup(para_cfg, offset_cfg, ctx.moConfig.loopCount, [loops.loops[0]])
    with ccu.If(goSize.parallelParam != 0):
        src.addr += goSize.addrOffset
        dst.addr += goSize.addrOffset
        loop_src[0].addr, loop_src[0].token = src.addr, src.token
        loop_dst[0].addr, loop_dst[0].token = dst.addr, dst.token
        loop_len[0].assign(goSize.residual)
        src.addr += goSize.residual
        dst.addr += goSize.residual
        slice_size = ccu.Variable()
        slice_size.assign(ctx.moConfig.memSlice)
        loop_src[1].addr, loop_src[1].token = src.addr, src.token
        loop_dst[1].addr, loop_dst[1].token = dst.addr, dst.token
        loop_len[1].assign(slice_size)
        loop_cfg0, loop_cfg1 = ccu.Variable(), ccu.Variable()
        loop_cfg0.assign(GetLoopParam(0, 0, 1))
        loop_cfg1.assign(GetLoopParam(0, 0, 1))
        offset_cfg = ccu.Variable()
        offset_cfg.assign(GetOffsetParam(ctx.moConfig.memSlice, ctx.moConfig.msInterleave, 1))
        loops.loopParam[0].assign(loop_cfg0)
        loops.loopParam[1].assign(loop_cfg1)
        ccu.LoopGroup(goSize.parallelParam, offset_cfg, ctx.moConfig.loopCount, [loops.loops[0], loops.loops[1]])
    return CCU_SUCCESS


def ExecuteAllGatherTransfer(ctx):  # noqa: N802
    src, local_dst = ccu.LocalAddr(), ccu.LocalAddr()
    dst = [ccu.RemoteAddr() for _ in range(ctx.arg.rankSize)]
    src.addr = ctx.input
    src.addr += ctx.currentRankSliceInputOffset
    src.token = ctx.token[ctx.arg.rankId]
    for rank_idx in range(ctx.arg.rankSize):
        target = local_dst if rank_idx == ctx.arg.rankId else dst[rank_idx]
        target.addr = ctx.output[rank_idx]
        target.addr += ctx.currentRankSliceOutputOffset
        target.token = ctx.token[rank_idx]
    with ccu.If(ctx.sliceSize != 0):
        channel_id = 0
        for rank_idx in range(ctx.arg.rankSize):
            mask = 1 << rank_idx
            if rank_idx != ctx.arg.rankId:
                ccu.Write(ctx.arg.channels[channel_id], dst[rank_idx], src, ctx.sliceSize, ctx.event, mask)
                channel_id += 1
    GroupCopy(ctx, local_dst, src, ctx.goSize)     # the local copy through CCU buffers
    ccu.EventRecord(ctx.event, 1 << ctx.arg.rankId)
    total_mask = (1 << ctx.arg.rankSize) - 1
    ccu.EventWait(ctx.event, total_mask)           # every move of this rank's data is done
    return CCU_SUCCESS


def CcuAllGatherMesh1DMem2MemKernel(arg):  # noqa: N802
    ctx = AllGatherMesh1DMem2MemContext(arg)
    if ctx.arg.channelCount == 0:
        return CCU_E_INTERNAL
    # 1. resources
    ctx.output = [ccu.Variable() for _ in range(ctx.arg.rankSize)]
    ctx.token = [ccu.Variable() for _ in range(ctx.arg.rankSize)]
    channel_idx = 0
    for peer in range(ctx.arg.rankSize):
        if peer != ctx.arg.rankId:
            ctx.output[peer] = ccu.GetResByChannel(ccu.Variable, ctx.arg.channels[channel_idx], OUTPUT_XN_ID)
            ctx.token[peer] = ccu.GetResByChannel(ccu.Variable, ctx.arg.channels[channel_idx], TOKEN_XN_ID)
            channel_idx += 1
    # 2. arguments
    for arg_id, var in enumerate((ctx.input, ctx.output[ctx.arg.rankId], ctx.token[ctx.arg.rankId],
                                  ctx.currentRankSliceInputOffset, ctx.currentRankSliceOutputOffset, ctx.sliceSize,
                                  ctx.goSize.addrOffset, ctx.goSize.loopParam, ctx.goSize.parallelParam,
                                  ctx.goSize.residual)):
        ccu.LoadArg(var, arg_id)
    # 3. pre-sync: my output address and token into every peer's slots
    for i in range(ctx.arg.channelCount):
        ccu.WriteVariableWithNotify(ctx.arg.channels[i], ctx.output[ctx.arg.rankId], OUTPUT_XN_ID, CKE_IDX_0,
                                    1 << OUTPUT_XN_ID)
        ccu.WriteVariableWithNotify(ctx.arg.channels[i], ctx.token[ctx.arg.rankId], TOKEN_XN_ID, CKE_IDX_0,
                                    1 << TOKEN_XN_ID)
    all_bit = (1 << OUTPUT_XN_ID) | (1 << TOKEN_XN_ID)
    for i in range(ctx.arg.channelCount):
        ccu.NotifyWait(ctx.arg.channels[i], CKE_IDX_0, all_bit)
    # 4. the algorithm
    ExecuteAllGatherTransfer(ctx)
    # 5. post-sync
    for i in range(ctx.arg.channelCount):
        ccu.NotifyRecord(ctx.arg.channels[i], CKE_IDX_0, 1 << POST_SYNC_ID)
    for i in range(ctx.arg.channelCount):
        ccu.NotifyWait(ctx.arg.channels[i], CKE_IDX_0, 1 << POST_SYNC_ID)   # the peers' moves into me are done
    return CCU_SUCCESS
