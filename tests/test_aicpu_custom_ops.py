"""Custom AI CPU operators: HcclAicpuKernelLaunch, the AI CPU task cache, MC2 operator arguments."""
import logging
import os

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

from hcomm_testutil import KERNEL_DIR, malloc, pattern, read, write

KERNELS = os.path.join(KERNEL_DIR, "custom_op_kernels.py")


def atlas_350():
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (comm,) = pyhcomm.HcclCommInitAll([0])
    ret, (thread,) = pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    assert ret == 0
    stream, _ = acl.rt.create_stream()
    return comm, thread, stream


def func_info(name, args=b""):
    info = pyhcomm.HcclKernelFuncInfo()
    info.kernelSoName, info.kernelFuncName = KERNELS, name
    info.args, info.argSize = args, len(args)
    return info


def op_desc():
    d = pyhcomm.HcclOpDesc()
    assert pyhcomm.HcclOpDescInit(d) == 0
    p2p = d.p2p
    p2p.cmdType, p2p.count = pyhcomm.HCCL_CMD_SEND, 64
    d.p2p, d.opDescType, d.opName = p2p, 1, "HcclSend"
    return d


def test_aicpu_kernel_launch_runs_the_kernel_with_its_params():
    comm, thread, stream = atlas_350()
    src, dst = malloc(256), malloc(256, fill=0)
    data = write(src, pattern(256))
    args = np.array([dst, src, 256], dtype=np.uint64)
    cfg = pyhcomm.HcclKernelLaunchCfg()
    assert pyhcomm.HcclKernelLaunchCfgInit(cfg) == 0 and cfg.timeOut == (1 << 64) - 1
    cfg.timeOut = 60
    info = func_info("copy_kernel", args.tobytes())
    assert pyhcomm.HcclAicpuKernelLaunch(comm, op_desc(), info, thread, stream, cfg) == 0
    assert acl.rt.synchronize_device() == 0
    assert np.array_equal(read(dst, 256), data)
    (launch,) = pyhcomm.record.tasks(kind="KernelLaunch")
    assert launch.detail == "copy_kernel"
    ptr_info = func_info("copy_kernel")
    ptr_info.args, ptr_info.argSize = acl.util.numpy_to_ptr(args), args.nbytes      # args as a host pointer
    assert pyhcomm.HcclAicpuKernelLaunch(comm, op_desc(), ptr_info, thread, stream, None) == 0
    assert acl.rt.synchronize_device() == 0
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == 2


def test_aicpu_kernel_launch_errors(caplog):
    comm, thread, stream = atlas_350()
    launch = pyhcomm.HcclAicpuKernelLaunch
    bad_args = func_info("copy_kernel")
    bad_args.args, bad_args.argSize = 0, 16
    assert launch(comm, op_desc(), bad_args, thread, stream, None) == R.HCCL_E_PTR
    assert launch(comm, op_desc(), func_info("no_such_kernel"), thread, stream, None) == R.HCCL_E_NOT_FOUND
    assert launch(comm, op_desc(), func_info("copy_kernel"), thread, 0, None) == R.HCCL_E_PTR
    _, (cpu,) = pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_CPU, 1, 1)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert launch(comm, op_desc(), func_info("copy_kernel"), cpu, stream, None) == R.HCCL_E_PARA
    assert "COMM_ENGINE_AICPU_TS thread" in caplog.text
    pyhcomm.reset()
    pyhcomm.set_product("Atlas 800T A2")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (a2,) = pyhcomm.HcclCommInitAll([0])
    assert launch(a2, op_desc(), func_info("copy_kernel"), 1, 1, None) == R.HCCL_E_NOT_SUPPORT


def test_op_desc_p2p_member_is_the_raw_union():
    d = op_desc()
    assert d.header.magicWord == 0x0F0F0F0F
    assert d.raws[16:20] == int(pyhcomm.HCCL_CMD_SEND).to_bytes(4, "little")
    assert d.raws[24:32] == (64).to_bytes(8, "little")
    assert d.p2p.count == 64 and d.p2p.cmdType == pyhcomm.HCCL_CMD_SEND


# -- the AI CPU task cache --------------------------------------------------------------------------

def test_task_cache_records_once_and_replays_with_new_addresses():
    comm, thread, stream = atlas_350()
    a_src, a_dst, b_src, b_dst = malloc(512), malloc(512, fill=0), malloc(512), malloc(512, fill=0)
    a, b = write(a_src, pattern(512, 1)), write(b_src, pattern(512, 2))
    seen = []

    def op(src, dst):
        ret, hit = pyhcomm.HcommAicpuTsTaskCacheLookup("copy_op")
        seen.append(hit)
        if hit:
            seen.append(pyhcomm.HcommAicpuTsTaskCacheExecute("copy_op", [src, dst], [512, 512]))
            return
        seen.append(pyhcomm.HcommAicpuTsTaskCacheStart("copy_op", [src, dst], [512, 512]))
        seen.append(pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 256))
        seen.append(pyhcomm.HcommLocalCopyOnThread(thread, dst + 256, src + 256, 256))
        seen.append(pyhcomm.HcommAicpuTsTaskCacheEnd("copy_op"))

    s = pyhcomm.Stream(stream, owned=False)
    s.launch(op, a_src, a_dst)
    s.launch(op, b_src, b_dst)
    assert acl.rt.synchronize_device() == 0
    assert seen == [False, 0, 0, 0, 0, True, 0]
    assert np.array_equal(read(a_dst, 512), a) and np.array_equal(read(b_dst, 512), b)
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == 4                 # two recorded, two replayed

    def misuse():
        seen.append(pyhcomm.HcommAicpuTsTaskCacheLookup("copy_op")[1])
        seen.append(pyhcomm.HcommAicpuTsTaskCacheExecute("copy_op", [a_src, a_dst], [512, 256]))   # other sizes
        seen.append(pyhcomm.HcommAicpuTsTaskCacheExecute("other", [a_src], [512]))                 # not looked up
        seen.append(pyhcomm.HcommAicpuTsTaskCacheClear("copy_op"))
        seen.append(pyhcomm.HcommAicpuTsTaskCacheClear("copy_op"))

    seen.clear()
    s.launch(misuse)
    assert acl.rt.synchronize_device() == 0
    assert seen == [True, R.HCCL_E_PARA, R.HCCL_E_PARA, 0, R.HCCL_E_NOT_FOUND]
    assert pyhcomm.HcommAicpuTsTaskCacheLookup("copy_op") == (R.HCCL_E_NOT_SUPPORT, False)   # host side


# -- MC2 operator arguments ----------------------------------------------------------------------

def test_mc2_op_args_and_resource_context():
    comm, _thread, _stream = atlas_350()
    ret, args = pyhcomm.HcclKfcAllocOpArgs()
    assert ret == 0 and args
    assert pyhcomm.HcclKfcOpArgsSetSrcDataType(args, pyhcomm.HCCL_DATA_TYPE_BFP16) == 0
    assert pyhcomm.HcclKfcOpArgsSetSrcDataType(args, 13) == R.HCCL_E_PARA
    assert pyhcomm.HcclKfcOpArgsSetReduceType(args, pyhcomm.HCCL_REDUCE_MAX) == 0
    assert pyhcomm.HcclKfcOpArgsSetReduceType(args, 255) == R.HCCL_E_PARA
    assert pyhcomm.HcclKfcOpArgsSetCount(args, 1024) == 0
    assert pyhcomm.HcclKfcOpArgsSetAlgConfig(args, "AllReduce=level0:fullmesh") == 0
    assert pyhcomm.HcclKfcOpArgsSetAlgConfig(args, "x" * 128) == R.HCCL_E_PARA
    assert pyhcomm.HcclKfcOpArgsSetCommEngine(args, pyhcomm.COMM_ENGINE_CPU_TS) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclKfcOpArgsSetCommEngine(args, pyhcomm.COMM_ENGINE_AIV) == 0
    ret, ctx = pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_ALLREDUCE, args)
    assert ret == 0 and ctx
    assert pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_ALLREDUCE, args) == (0, ctx)     # the same pair
    assert pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_MAX, args) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclKfcOpArgsSetDstDataType(args, 13) == R.HCCL_E_PARA                 # no HcclDataType 13
    assert pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_ALLREDUCE, args) == (0, ctx)     # unchanged
    assert pyhcomm.HcclKfcOpArgsSetDstDataType(args, pyhcomm.HCCL_DATA_TYPE_FP32) == 0
    ret, ctx_fp32 = pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_ALLREDUCE, args)
    assert ret == 0 and ctx_fp32 not in (0, ctx)                                          # another operator
    assert pyhcomm.HcclKfcFreeOpArgs(args) == 0
    assert pyhcomm.HcclCreateOpResCtx(comm, pyhcomm.HCCL_CMD_ALLREDUCE, args) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclKfcOpArgsSetCount(0, 1) == R.HCCL_E_PTR
