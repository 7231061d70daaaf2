"""HCCL's ``examples/05_custom_ops_allgather`` (the top level: a custom AllGather on an AIV
kernel), ported call for call: ``op_host/all_gather.cc`` and ``op_host/launch_kernel.cc`` here,
the kernel in :mod:`ex05_allgather_aiv_kernel` (its "binary": a Python kernel module), the
testcase (``testcase/main.cc``) in :func:`sample`.

Resources per communicator (tag ``<commName>_opbase``): an AIV engine context of 2 MiB in device
memory, zeroed, registered with ``HcclCommMemReg`` under the same tag; one AIV channel per peer
over the first link of the rank graph whose protocol an AIV kernel reaches peers by (UB_MEM on
Atlas 350), each carrying that registration; the peers' HCCL buffers and contexts
(``HcclChannelGetHcclBuffer``, ``HcclChannelGetRemoteMems``), with this rank's own, written to the
front of the context as ``(HCCL buffer, context)`` address pairs by rank. A second call finds the
context (``HcclEngineCtxGet``) and the registration in the cache, and acquires the same channels.
The kernel is launched with one block, schedule mode 1, the microsecond timeout
(``ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US``) and the AIV engine type.

Differences of form: the C samples' process-wide ``static`` state (``g_memHandleCache``,
``g_init`` and the binary handles) lives per host program (a context variable), because ranks
share one process here as host threads (in the C test each rank is an MPI process);
``LoadBinaryFromFile`` reads the kernel module's source, which ``aclrtCreateBinary`` takes as the
binary's bytes. ``GetAivTimeoutUs`` with ``HCCL_EXEC_TIMEOUT`` set asks
``aclrtGetOpTimeOutInterval``, which pyhcomm's runtime does not have: the C code's fallback for a
failed query, the default, applies. ``NUM_BLOCKS`` is the launch's ``numBlocks`` (1 as written).
"""
from __future__ import annotations

import contextvars
import os

from acl_constants import (ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                           ACL_RT_ENGINE_TYPE_AIV, ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE,
                           ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US)
from custom_ops import Error, acl_chk, chk, returns_code
from ex05_aiv_common import AIV_TAG_BUFF_LEN, CUSTOM_TIMEOUT, MAX_RANK_SIZE_A3, new_op_param, pack
from example_main import check, main, output, release, value

import numpy as np

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (COMM_ENGINE_AIV, COMM_MEM_TYPE_DEVICE, COMM_PROTOCOL_HCCS,  # ... from pyhccl
                     COMM_PROTOCOL_HCCS_ONLY, COMM_PROTOCOL_SIO, COMM_PROTOCOL_UB_MEM, HCCL_DATA_TYPE_FP32,
                     HCCL_E_INTERNAL, HCCL_E_NOT_FOUND, HCCL_E_PARA, HCCL_E_PTR, HCCL_SUCCESS, CommMem,
                     HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer,
                     HcclChannelGetRemoteMems, HcclCommInitRootInfo, HcclCommMemReg, HcclEngineCtxCreate,
                     HcclEngineCtxGet, HcclGetCommName, HcclGetHcclBuffer, HcclGetRankId, HcclGetRankSize,
                     HcclRankGraphGetLayers, HcclRankGraphGetLinks)

HERE = os.path.dirname(os.path.abspath(__file__))
AIV_BINARY_NAME = os.path.join(HERE, "ex05_allgather_aiv_kernel.py")   # hccl_custom_allgather_kernels.o
KERNEL_NAME = "HcclAllGatherAivKernel"
AIV_TAG_ADDR_OFFSET = 16 * 1024
NUM_BLOCKS = 1
#: sizeof of each HcclDataType (GetDataTypeSize; 0: unsupported)
DATA_TYPE_SIZE = {0: 1, 7: 1, 1: 2, 3: 2, 8: 2, 11: 2, 2: 4, 4: 4, 9: 4, 5: 8, 6: 8, 10: 8, 12: 16}

_mem_handle_cache: contextvars.ContextVar = contextvars.ContextVar("g_memHandleCache")
_kernel: contextvars.ContextVar = contextvars.ContextVar("g_funcHandle")   # g_init, g_binHandle, g_funcHandle


def _cache() -> dict:
    cache = _mem_handle_cache.get(None)
    if cache is None:
        cache = {}
        _mem_handle_cache.set(cache)
    return cache


# -- all_gather.cc ------------------------------------------------------------------------------------------
def FillOpParam(param: dict, dataSize: int, dataType: int) -> None:  # noqa: N802,N803
    dataTypeSize = DATA_TYPE_SIZE.get(dataType, 0)
    if dataTypeSize == 0:
        raise Error(HCCL_E_PARA)
    param.update(len=dataSize // dataTypeSize, dataType=dataType, reduceOp=0, root=0, tagId=1,
                 inputSliceStride=dataSize, outputSliceStride=dataSize, repeatNum=1, inputRepeatStride=0,
                 outputRepeatStride=0, isOpBase=True, headCountMem=0, tailCountMem=0, addOneMem=0, counterMemSize=0,
                 isEnableCounter=False)


def InitAivBuffer(comm, aivTag: str):  # noqa: N802,N803
    """``(aivCommInfoPtr, memHandle)``: the context and its registration, made on the first call."""
    ret, ptr, _size = HcclEngineCtxGet(comm, aivTag, COMM_ENGINE_AIV)
    if ret == HCCL_SUCCESS and ptr:
        if aivTag not in _cache():
            raise Error(HCCL_E_INTERNAL)        # aiv memHandle not found in cache
        return ptr, _cache()[aivTag]
    ptr = chk(HcclEngineCtxCreate(comm, aivTag, COMM_ENGINE_AIV, AIV_TAG_BUFF_LEN))
    acl_chk(acl.rt.memset(ptr, AIV_TAG_BUFF_LEN, 0, AIV_TAG_BUFF_LEN))
    memHandle = chk(HcclCommMemReg(comm, aivTag, CommMem(COMM_MEM_TYPE_DEVICE, ptr, AIV_TAG_BUFF_LEN)))
    _cache()[aivTag] = memHandle
    return ptr, memHandle


def IsAivP2pProtocol(protocol) -> bool:  # noqa: N802
    return protocol in (COMM_PROTOCOL_UB_MEM, COMM_PROTOCOL_HCCS, COMM_PROTOCOL_HCCS_ONLY, COMM_PROTOCOL_SIO)


def BuildChannelRequests(comm, rank: int, rankSize: int) -> list:  # noqa: N802,N803
    channelRequests = []
    for remoteRank in range(rankSize):
        if remoteRank == rank:
            continue
        netLayers = chk(HcclRankGraphGetLayers(comm))
        foundChannel = False
        for layer in netLayers:
            if foundChannel:
                break
            for link in chk(HcclRankGraphGetLinks(comm, layer, rank, remoteRank)):
                if not IsAivP2pProtocol(link.linkAttr.linkProtocol):
                    continue
                desc = HcclChannelDesc()
                chk(HcclChannelDescInit(desc))
                desc.remoteRank = remoteRank
                desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
                desc.channelProtocol = link.linkAttr.linkProtocol
                desc.notifyNum = 3
                channelRequests.append(desc)
                foundChannel = True
                break
    return channelRequests


def AcquireChannelsAndBuffers(comm, memHandle, channelRequests: list, buffersInOut: list) -> None:  # noqa: N802,N803
    for desc in channelRequests:
        desc.memHandles, desc.memHandleNum = [memHandle], 1
    channels = chk(HcclChannelAcquire(comm, COMM_ENGINE_AIV, channelRequests)) if channelRequests else []
    for desc, channel in zip(channelRequests, channels):
        currentRank = desc.remoteRank
        remoteBufferAddr, _remoteBufferSize = chk(HcclChannelGetHcclBuffer(comm, channel))
        buffersInOut[2 * currentRank] = remoteBufferAddr
        memNum, remoteMems, _memTags = chk(HcclChannelGetRemoteMems(comm, channel))
        if memNum == 0:
            raise Error(HCCL_E_PARA)            # HcclChannelGetRemoteMems memNum is 0
        buffersInOut[2 * currentRank + 1] = remoteMems[memNum - 1].addr


def PrepareResources(comm, param: dict, stream) -> None:  # noqa: N802
    aivCommInfoPtr, memHandle = InitAivBuffer(comm, param["tag"])
    rank, rankSize = chk(HcclGetRankId(comm)), chk(HcclGetRankSize(comm))
    cclBufferAddr, _cclBufferSize = chk(HcclGetHcclBuffer(comm))
    buffersInOut = [0] * (MAX_RANK_SIZE_A3 * 2)
    buffersInOut[2 * rank], buffersInOut[2 * rank + 1] = cclBufferAddr, aivCommInfoPtr
    AcquireChannelsAndBuffers(comm, memHandle, BuildChannelRequests(comm, rank, rankSize), buffersInOut)
    table = np.array(buffersInOut[:2 * rankSize], dtype=np.uint64)          # uint64_t buffersInOut[]
    nbytes = rankSize * 2 * 8
    acl_chk(acl.rt.memcpy(aivCommInfoPtr, nbytes, acl.util.numpy_to_ptr(table), nbytes, ACL_MEMCPY_HOST_TO_DEVICE))
    param["buffIn"] = aivCommInfoPtr


@returns_code
def HcclAllGatherCustom(sendBuf, recvBuf, dataSize, dataType, comm, stream):  # noqa: N802,N803
    if not sendBuf or not recvBuf or not comm or not stream:
        raise Error(HCCL_E_PTR)
    param = new_op_param()
    commName = chk(HcclGetCommName(comm))
    param["tag"] = f"{commName}_opbase"
    PrepareResources(comm, param, stream)
    rank, rankSize = chk(HcclGetRankId(comm)), chk(HcclGetRankSize(comm))
    param.update(input=sendBuf, output=recvBuf, rank=rank, rankSize=rankSize, xRankSize=rankSize, yRankSize=0,
                 zRankSize=0)
    FillOpParam(param, dataSize, dataType)
    LaunchKernel(param, stream)
    return HCCL_SUCCESS


# -- launch_kernel.cc -------------------------------------------------------------------------------------------
def _load_file(fileName: str) -> bytes:  # noqa: N803
    try:
        with open(fileName, "rb") as f:
            return f.read()
    except OSError:
        raise Error(HCCL_E_NOT_FOUND) from None


LoadBinaryFromFile = _load_file


def RegisterKernel():  # noqa: N802
    """The function handle, loaded once per host program (``g_init``)."""
    func = _kernel.get(None)
    if func is not None:
        return func
    binBuffer = LoadBinaryFromFile(AIV_BINARY_NAME)
    binary = acl.rt.create_binary(binBuffer, len(binBuffer))
    if not binary:
        raise Error(HCCL_E_INTERNAL)            # aclrtCreateBinary failed
    binHandle, ret = acl.rt.binary_load(binary)
    if ret != 0:
        acl.rt.destroy_binary(binary)
        raise Error(HCCL_E_INTERNAL)
    acl.rt.destroy_binary(binary)
    func, ret = acl.rt.binary_get_function(binHandle, KERNEL_NAME)
    if ret != 0:
        raise Error(HCCL_E_INTERNAL)
    _kernel.set(func)
    return func


def GetAivTimeoutUs() -> int:  # noqa: N802
    defaultTimeoutUs = CUSTOM_TIMEOUT * 1000000
    env = os.environ.get("HCCL_EXEC_TIMEOUT")
    if env is None:
        return defaultTimeoutUs
    try:
        timeoutUs = float(env) * 1000000
    except ValueError:
        timeoutUs = 0.0                         # atof of a non-number
    if timeoutUs <= 0:
        return defaultTimeoutUs
    return defaultTimeoutUs                     # aclrtGetOpTimeOutInterval failed (see the module docstring)


def ExecuteKernelLaunch(param: dict, stream) -> None:  # noqa: N802
    func = RegisterKernel()
    cfg = [{"id": ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, "value": 1},
           {"id": ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US, "value": {"timeoutLow": GetAivTimeoutUs(), "timeoutHigh": 0}},
           {"id": ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE, "value": ACL_RT_ENGINE_TYPE_AIV}]
    packed = pack(param)
    if acl.rt.launch_kernel_with_host_args(func, NUM_BLOCKS, stream, cfg, packed, len(packed), None, 0) != 0:
        raise Error(HCCL_E_INTERNAL)


LaunchKernel = ExecuteKernelLaunch


# -- testcase/main.cc -----------------------------------------------------------------------------------------
def sample(ctx, calls: int = 1):
    """One rank of ``main()`` (``InitEnv``, ``PrepareData``, the AllGather once as the C test does,
    or ``calls`` times in a row on one communicator: a second call reuses the context, the
    registration and the channels; ``VerifyResult``'s read-back, ``Cleanup``); returns what
    ``recvBuf`` holds."""
    rank, size = ctx.device, ctx.dev_count
    check(acl.rt.set_device(rank % size), "aclrtSetDevice")
    comm = output(HcclCommInitRootInfo(size, ctx.root_info, rank), "HcclCommInitRootInfo")
    stream, bufs, out = gather(comm, rank, size, calls)
    release(ctx, comm, stream, bufs, reset=False)
    return out


def gather(comm, rank: int, size: int, calls: int = 2, count: int = 1024):
    """``PrepareData`` (``count`` floats of value ``rank``), the AllGather ``calls`` times, each
    followed by ``aclrtSynchronizeStream``, and the read-back: ``(stream, (sendBuf, recvBuf), what
    recvBuf holds)``."""
    sendBytes, recvBytes = count * 4, count * size * 4
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    sendBuf = value(acl.rt.malloc(sendBytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")
    recvBuf = value(acl.rt.malloc(recvBytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")
    hostSend = np.full(count, float(rank), dtype=np.float32)
    check(acl.rt.memcpy(sendBuf, sendBytes, acl.util.numpy_to_ptr(hostSend), sendBytes, ACL_MEMCPY_HOST_TO_DEVICE),
          "aclrtMemcpy")
    check(acl.rt.memset(recvBuf, recvBytes, 0, recvBytes), "aclrtMemset")
    for _ in range(calls):
        check(HcclAllGatherCustom(sendBuf, recvBuf, sendBytes, HCCL_DATA_TYPE_FP32, comm, stream),
              "HcclAllGatherCustom")
        check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    hostRecv = np.zeros(count * size, dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(hostRecv), recvBytes, recvBuf, recvBytes, ACL_MEMCPY_DEVICE_TO_HOST),
          "aclrtMemcpy")
    return stream, (sendBuf, recvBuf), hostRecv


def variant_loader(variant: str):
    """A ``LoadBinaryFromFile`` that loads the kernel with ``VARIANT`` set to ``variant`` (see
    :mod:`ex05_allgather_aiv_kernel`): patch this module's with it to run another variant."""
    def load(fileName: str) -> bytes:  # noqa: N803
        source = _load_file(fileName)
        old = b'VARIANT = "as written"'
        assert old in source, "the kernel module sets VARIANT"
        return source.replace(old, f"VARIANT = {variant!r}".encode(), 1)
    return load


def rank_program(calls: int = 2, count: int = 1024):
    """A rank body for ``pyhcomm.launch`` / ``pyhcomm.verify.check``: :func:`gather` on the
    communicator the launch hands the rank; returns what ``recvBuf`` holds."""
    def body(comm):
        return gather(comm.handle, comm.rank, comm.size, calls, count)[2]
    body.__qualname__ = f"ex05_custom_allgather_aiv_x{calls}"
    return body


def run(entry=main) -> list:
    """``testcase/main.cc`` (``entry``: see :func:`ex01_point_to_point.run`)."""
    return entry(sample)


__all__ = ["HcclAllGatherCustom", "sample", "gather", "rank_program", "run"]
