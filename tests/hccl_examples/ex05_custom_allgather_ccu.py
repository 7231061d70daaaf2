"""HCCL's ``examples/05_custom_ops_allgather/ccu`` (a custom AllGather on the CCU, Ascend 950 only,
``HCCL_OP_EXPANSION_MODE=CCU_SCHED``), ported call for call: ``op_host/`` (allgather.cc, utils.cc)
and ``op_kernel_ccu/exec_op.cc`` here, the kernel in :mod:`ex05_allgather_ccu_kernel`, the testcase
in :func:`sample`.

Resources per communicator (tag ``hccl_custom_allgather``, a CCU engine context in host memory):
the HCCL buffer, one CCU thread on the user's stream, one UB_CTP CCU channel per peer, a CCU instance
(a descriptor per enabled IO die with the presets of ``CCU_DEFAULT_RES_MAP``) assigned to the
communicator, and the kernel registered on it once; a second call finds the context and launches the
registered kernel again with new task arguments.

Differences of form as in :mod:`ex05_custom_allgather_aicpu` (the kernel is a Python function);
``sample`` calls ``HcclAllGatherCustom`` twice (the C testcase once) and takes the element count as
a parameter (the C testcase: 1). At one rank the example's local copy on the CCU thread is
``HCCL_E_NOT_SUPPORT``: ``HcommLocalCopyOnThread`` runs on Atlas 350 on AICPU_TS threads inside a
kernel only (its ``api_ref`` page).
"""
from __future__ import annotations

from acl_constants import ACL_MEM_MALLOC_HUGE_ONLY, NPY_UBYTE
from custom_ops import Error, chk, get_device_type, returns_code, ub_ctp_desc
from ex04_common import SIZE_TABLE
from ex05_allgather_ccu_kernel import (CCU_LOCAL_COPY_MS_PER_LOOP, CCU_MS_INTERLEAVE, CCU_MS_LOCAL_COPY_LOOP_COUNT,
                                       CCU_MS_SIZE, CalGoSize, CcuAllGatherMesh1DMem2MemKernel, LoopGroupConfig)
from ex05_ccu_common import (CCU_DEFAULT_RES_MAP, CCU_DIE_NUM, DEVICE_TYPE_A5, AlgResourceCtxSerializable,
                             CcuKernelArgAllGatherMesh1DMem2Mem, CcuKernelInfo, ConvertCcuToHccl)
from example_main import check, fill_device, main, output, read_device, release, value

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (CCU_E_UNAVAIL, CCU_SUCCESS, COMM_ENGINE_CCU, ENDPOINT_ATTR_DIE_ID,  # ... from pyhccl
                     HCCL_DATA_TYPE_FP32, HCCL_E_INTERNAL, HCCL_E_PTR, HCCL_SUCCESS, HcclChannelAcquire,
                     HcclCommAssignCcuIns, HcclCommInitRootInfo, HcclEngineCtxCreate, HcclEngineCtxGet,
                     HcclGetCommName, HcclGetHcclBuffer, HcclGetRankId, HcclGetRankSize, HcclRankGraphGetEndpointInfo,
                     HcclThreadAcquireWithStream, HcommCcuGetMemToken, HcommCcuInsCreate, HcommCcuInsDestroy,
                     HcommCcuInsResDescCreate, HcommCcuInsResDescDestroy, HcommCcuInsResDescSetNum,
                     HcommCcuKernelLaunch, HcommCcuKernelRegister, HcommCcuKernelRegisterEnd,
                     HcommCcuKernelRegisterStart, HcommCcuQueryRemainResDesc, HcommLocalCopyOnThread)

TAG = "hccl_custom_allgather"
CHANNEL_NOTIFY_NUM = 3
HCCL_MIN_SLICE_ALIGN = 128
UB_MAX_DATA_SIZE = 256 * 1024 * 1024


# -- utils.cc -------------------------------------------------------------------------------------------------
def GetThreadForCcu(comm, param, resCtxHost):  # noqa: N802,N803
    """The user's stream wrapped as a CCU thread (threadNum 1)."""
    resCtxHost.threads.append(chk(HcclThreadAcquireWithStream(comm, param["engine"], param["stream"],
                                                              resCtxHost.notifyNumOnMainThread)))


def GetChannelForCcu(comm, param):  # noqa: N802
    """One UB_CTP CCU channel per peer; the die of the first one's local endpoint."""
    channels, die_id = [], 0
    for remote in range(param["rankSize"]):
        if remote == param["myRank"]:
            continue
        desc = ub_ctp_desc(comm, param["myRank"], remote, CHANNEL_NOTIFY_NUM)
        channels.append(chk(HcclChannelAcquire(comm, param["engine"], [desc]))[0])
        if len(channels) == 1:
            raw = chk(HcclRankGraphGetEndpointInfo(comm, param["myRank"], desc.localEndpoint, ENDPOINT_ATTR_DIE_ID, 4))
            die_id = int.from_bytes(raw, "little")
    return channels, die_id


def _destroy_all(descs) -> None:
    for desc in descs:
        HcommCcuInsResDescDestroy(desc)


def CreateCcuInsWithEnabledDies():  # noqa: N802
    """A descriptor per enabled IO die (a disabled one answers CCU_E_UNAVAIL), the presets, the instance."""
    descs = []
    for die_id in range(CCU_DIE_NUM):
        ret, desc = HcommCcuInsResDescCreate(die_id)
        if ret != CCU_SUCCESS:
            HcommCcuInsResDescDestroy(desc)
            _destroy_all(descs)
            raise Error(ConvertCcuToHccl(ret))
        probe = HcommCcuQueryRemainResDesc(desc)
        if probe == CCU_E_UNAVAIL:   # not enabled: skip it
            HcommCcuInsResDescDestroy(desc)
            continue
        if probe != CCU_SUCCESS:
            HcommCcuInsResDescDestroy(desc)
            _destroy_all(descs)
            raise Error(ConvertCcuToHccl(probe))
        for res_type, num in CCU_DEFAULT_RES_MAP.items():
            ret = HcommCcuInsResDescSetNum(desc, res_type, num)
            if ret != CCU_SUCCESS:
                HcommCcuInsResDescDestroy(desc)
                _destroy_all(descs)
                raise Error(ConvertCcuToHccl(ret))
        descs.append(desc)
    if not descs:
        raise Error(HCCL_E_INTERNAL)
    ret, ins = HcommCcuInsCreate(descs)
    _destroy_all(descs)     # the instance holds its resources: the descriptors may go
    if ret != CCU_SUCCESS:
        raise Error(ConvertCcuToHccl(ret))
    return ins


def GetCcuKernel(comm, param, resCtxHost, kernelChannels, dieId):  # noqa: N802,N803
    info = CcuKernelInfo("CcuAllGatherMesh1DMem2MemKernel", CcuAllGatherMesh1DMem2MemKernel)
    info.kernelArg = CcuKernelArgAllGatherMesh1DMem2Mem(rankSize=param["rankSize"], rankId=param["myRank"])
    info.kernelArg.channels = list(kernelChannels)
    info.kernelArg.channelCount = len(kernelChannels)
    ins = CreateCcuInsWithEnabledDies()
    ret = HcclCommAssignCcuIns(comm, ins)
    if ret != HCCL_SUCCESS:
        HcommCcuInsDestroy(ins)
        raise Error(ret)
    resCtxHost.ccuKernels = [0]     # one kernel
    ret = HcommCcuKernelRegisterStart(ins)
    if ret != CCU_SUCCESS:
        raise Error(ConvertCcuToHccl(ret))
    ret, kernel = HcommCcuKernelRegister(ins, dieId, info.kernelFuncName, info.kernelFunc, [info.kernelArg], 1)
    if ret != CCU_SUCCESS:
        raise Error(ConvertCcuToHccl(ret))
    resCtxHost.ccuKernels[0] = kernel
    ret = HcommCcuKernelRegisterEnd(ins)
    if ret != CCU_SUCCESS:
        raise Error(ConvertCcuToHccl(ret))
    resCtxHost.ccuKernelNum = [1]


def AllocAlgResource(comm, param, resCtxHost):  # noqa: N802,N803
    resCtxHost.cclMem = tuple(chk(HcclGetHcclBuffer(comm)))
    resCtxHost.notifyNumOnMainThread = 0
    GetThreadForCcu(comm, param, resCtxHost)
    if param["rankSize"] == 1:   # one card: no channel, no kernel, a local copy
        resCtxHost.ccuKernelNum = [0]
        return
    channels, die_id = GetChannelForCcu(comm, param)
    GetCcuKernel(comm, param, resCtxHost, channels, die_id)


# -- op_kernel_ccu/exec_op.cc ---------------------------------------------------------------------------------
def LaunchCcuKernelSlice(resCtx, inputAddr, outputAddr, token, dataSize, myRank, sliceCount, dataTypeSize):  # noqa
    slice_size = sliceCount * dataTypeSize
    config = LoopGroupConfig(CCU_MS_INTERLEAVE, CCU_MS_LOCAL_COPY_LOOP_COUNT, CCU_MS_SIZE * CCU_LOCAL_COPY_MS_PER_LOOP)
    go_size = CalGoSize(slice_size, config)
    task_args = [inputAddr, outputAddr, token, 0, dataSize * myRank, slice_size, *go_size]
    ret = HcommCcuKernelLaunch(resCtx.threads[0], resCtx.ccuKernels[0], task_args, len(task_args))
    if ret != CCU_SUCCESS:
        raise Error(ConvertCcuToHccl(ret))


def ExecOp(param, resCtx):  # noqa: N802,N803
    type_size = SIZE_TABLE[param["dataType"]]
    count = param["count"]
    data_size = count * type_size
    if count == 0:
        return
    if param["rankSize"] == 1:
        chk(HcommLocalCopyOnThread(resCtx.threads[0], param["outputPtr"], param["inputPtr"], data_size))
        return
    per_loop = UB_MAX_DATA_SIZE // type_size
    _ret, token = HcommCcuGetMemToken(param["inputPtr"], data_size)     # (its code is not checked)
    done = 0
    for loop in range(-(-count // per_loop)):
        slice_count = min(per_loop, count - loop * per_loop)
        LaunchCcuKernelSlice(resCtx, param["inputPtr"] + done * type_size, param["outputPtr"] + done * type_size,
                             token, data_size, param["myRank"], slice_count, type_size)
        done += slice_count


# -- op_host/allgather.cc -------------------------------------------------------------------------------------
def InitAlgResourceCtx(comm, param, resCtxHost):  # noqa: N802,N803
    ret, ctx, size = HcclEngineCtxGet(comm, param["tag"], param["engine"])
    if ret == HCCL_SUCCESS:     # the context exists: reuse it
        param["ctxSize"] = size
        resCtxHost.DeSerialize(acl.util.ptr_to_bytes(ctx, size))
        return
    AllocAlgResource(comm, param, resCtxHost)
    seq = resCtxHost.Serialize()
    new_ctx = chk(HcclEngineCtxCreate(comm, param["tag"], param["engine"], len(seq)))
    acl.util.ptr_to_numpy(new_ctx, (len(seq),), NPY_UBYTE)[:] = list(seq)   # memcpy_s into host memory
    param["ctxSize"] = len(seq)


@returns_code
def HcclAllGatherCustom(sendBuf, recvBuf, sendCount, dataType, comm, stream):  # noqa: N802,N803
    if not stream or not comm or not sendBuf or not recvBuf:
        raise Error(HCCL_E_PTR)
    param = {"myRank": chk(HcclGetRankId(comm)), "rankSize": chk(HcclGetRankSize(comm)), "tag": TAG,
             "devType": get_device_type()}
    if param["devType"] != DEVICE_TYPE_A5:
        raise Error(HCCL_E_INTERNAL)
    param.update(stream=stream, commName=chk(HcclGetCommName(comm)), engine=COMM_ENGINE_CCU, inputPtr=sendBuf,
                 outputPtr=recvBuf, count=sendCount, dataType=dataType)
    res_ctx = AlgResourceCtxSerializable()
    InitAlgResourceCtx(comm, param, res_ctx)    # 3. resources
    ExecOp(param, res_ctx)                      # 4. the CCU tasks
    return HCCL_SUCCESS


# -- testcase/main.cc -----------------------------------------------------------------------------------------
def sample(ctx, count: int = 1, calls: int = 2):
    """Each device's ``Sample``: its input filled with its device id, ``calls`` AllGathers of
    ``count`` floats per rank into one output (each call overwrites it), that output."""
    device, n = ctx.device, ctx.dev_count
    check(acl.rt.set_device(device), "aclrtSetDevice")
    comm = output(HcclCommInitRootInfo(n, ctx.root_info, device), "HcclCommInitRootInfo")
    stream, bufs, out = gather(comm, device, n, count, calls)
    release(ctx, comm, stream, bufs)
    return out


def gather(comm, rank: int, n: int, count: int = 1, calls: int = 2):
    """The testcase's data and calls on ``comm``: ``(stream, (send, recv), what recv holds)``."""
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    send = value(acl.rt.malloc(count * 4, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    recv = value(acl.rt.malloc(count * 4 * n, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    fill_device(send, count, float(rank))
    for _ in range(calls):
        check(HcclAllGatherCustom(send, recv, count, HCCL_DATA_TYPE_FP32, comm, stream), "HcclAllGatherCustom")
        check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    return stream, (send, recv), read_device(recv, count * n)


def rank_program(count: int = 1, calls: int = 2):
    """A rank body for ``pyhcomm.launch`` / ``pyhcomm.verify.check``: :func:`gather` on the
    communicator the launch hands the rank; returns what its output holds."""
    def body(comm):
        return gather(comm.handle, comm.rank, comm.size, count, calls)[2]
    body.__qualname__ = body.__name__ = f"ex05_custom_allgather_ccu_x{calls}"
    return body


def run(entry=main, count: int = 1, calls: int = 2) -> list:
    """``testcase/main.cc`` (``entry``: see :func:`ex01_point_to_point.run`)."""
    return entry(lambda ctx: sample(ctx, count, calls))
