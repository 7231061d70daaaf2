"""Main/slave on the device (Atlas 350): an AI CPU kernel orchestrates N slave threads that each
reduce (fp32 sum) their slice of ``inp`` into ``out``, released by a main thread and waited for by it.

Host side, as in the custom-operator sample (hcomm-api.md 5.6):

    host (user stream, CPU_TS thread)            AI CPU kernel (AICPU_TS threads)
    record main.notify[N] ---------------------> BatchModeStart; main waits notify[N]
    launch kernel                                main records slave[i].notify[0]
                                                 slave[i]: wait, reduce slice i, record main.notify[i]
                                                 main waits notify[0..N-1]
    wait own notify[0] <------------------------ main records host.notify[0]; BatchModeEnd
    aclrtSynchronizeStream(user stream)

The host-to-device record keeps the kernel's threads from starting before the user stream reaches
the operator; the device-to-host wait keeps the user stream from completing before the kernel's
work. On Atlas 350, local operations are device-side only (AICPU_TS threads in a kernel).
``HcclThreadExportToCommEngine`` (hccl_res.h) has no binding in pyhccl 0.1.0: a real machine needs
one of its own for it.
"""
import os
import struct
import sys

os.environ.setdefault("PYHCOMM_PRODUCT", "Atlas 350")  # a real Atlas 350 machine needs nothing

import numpy as np

from pyhcomm import acl  # real machine: import acl
from pyhcomm import *    # real machine: from pyhccl import *

# pyACL exports no constants: a pyACL program defines the acl header values it uses
ACL_MEM_MALLOC_HUGE_FIRST = 0                # aclrtMemMallocPolicy
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2  # aclrtMemcpyKind
ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7       # aclrtLaunchKernelAttrId

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "main_slave_kernel.py")
SLAVES = 3
COUNT = 4096                          # fp32 elements per slave
TOTAL = SLAVES * COUNT
WAIT_TIMEOUT_S = 1836
OP_PARAM = struct.Struct("<QQQQIII")


def check(ret, what):
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret} {acl.get_recent_err_msg()}")


check(acl.init(), "aclInit")
check(acl.rt.set_device(0), "aclrtSetDevice")
soc = acl.get_soc_name()
print("SoC:", soc)
if not soc.startswith("Ascend950"):
    sys.exit("this operator needs an Ascend950 (Atlas 350)")
ret, comms = HcclCommInitAll([0])
check(ret, "HcclCommInitAll")
comm = comms[0]
stream, ret = acl.rt.create_stream()
check(ret, "aclrtCreateStream")

# the user-stream thread of the host, and its handle for the kernel
ret, cpu_thread = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, stream, 1)
check(ret, "HcclThreadAcquireWithStream")
ret, (cpu_thread_on_aicpu,) = HcclThreadExportToCommEngine(comm, 1, [cpu_thread], COMM_ENGINE_AICPU_TS)
check(ret, "HcclThreadExportToCommEngine")
# main + slaves on the AI CPU: SLAVES notifies for the fan-in, + 1 for the host -> device sync
ret, threads = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, SLAVES + 1, SLAVES + 1)
check(ret, "HcclThreadAcquire")
main, slaves = threads[0], threads[1:]
ret, (main_on_cpu,) = HcclThreadExportToCommEngine(comm, 1, [main], COMM_ENGINE_CPU_TS)
check(ret, "HcclThreadExportToCommEngine")
print(f"host thread 0x{cpu_thread:x}; AI CPU main 0x{main:x}, slaves " + ", ".join(f"0x{s:x}" for s in slaves))

# data: out = 1.0 everywhere, inp = slice index + position / TOTAL
nbytes = TOTAL * 4
inp, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
check(ret, "aclrtMalloc")
out, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
check(ret, "aclrtMalloc")
host_in = (np.repeat(np.arange(SLAVES), COUNT) + np.arange(TOTAL) / TOTAL).astype(np.float32)
host_out = np.ones(TOTAL, dtype=np.float32)
check(acl.rt.memcpy(inp, nbytes, acl.util.numpy_to_ptr(host_in), nbytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
check(acl.rt.memcpy(out, nbytes, acl.util.numpy_to_ptr(host_out), nbytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
expected = host_out + host_in

# the host may not reduce itself on Atlas 350
ret = HcommLocalReduceOnThread(cpu_thread, out, inp, COUNT, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM)
print(f"HcommLocalReduceOnThread from the host -> {ret} (HCCL_E_NOT_SUPPORT)")

binary, ret = acl.rt.binary_load_from_file(KERNELS, [])
check(ret, "aclrtBinaryLoadFromFile")
func, ret = acl.rt.binary_get_function(binary, "HcclLaunchMainSlaveKernel")
check(ret, "aclrtBinaryGetFunction")

# 1. the host stream releases the AI CPU main thread (its notify SLAVES)
check(HcommThreadNotifyRecordOnThread(cpu_thread, main_on_cpu, SLAVES), "HcommThreadNotifyRecordOnThread(host)")
# 2. launch the kernel on the user stream
param = OP_PARAM.pack(cpu_thread_on_aicpu, out, inp, COUNT, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, SLAVES)
param += struct.pack(f"<{SLAVES + 1}Q", main, *slaves)
param = np.frombuffer(param, dtype=np.uint8).copy()
args, ret = acl.rt.kernel_args_init(func)
check(ret, "aclrtKernelArgsInit")
_, ret = acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(param), param.nbytes)
check(ret, "aclrtKernelArgsAppend")
check(acl.rt.kernel_args_finalize(args), "aclrtKernelArgsFinalize")
cfg = [{"id": ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, "value": WAIT_TIMEOUT_S}]
check(acl.rt.launch_kernel_with_config(func, 1, stream, cfg, args, 0), "aclrtLaunchKernelWithConfig")
# 3. the user stream waits for the device (the kernel records notify 0 of the host thread)
check(HcommThreadNotifyWaitOnThread(cpu_thread, 0, WAIT_TIMEOUT_S), "HcommThreadNotifyWaitOnThread(host)")
print("record, kernel launch and wait enqueued on the user stream")

ret = acl.rt.synchronize_stream(stream)
print(f"aclrtSynchronizeStream(user stream) -> {ret}")
check(ret, "aclrtSynchronizeStream")

result = np.zeros(TOTAL, dtype=np.float32)
check(acl.rt.memcpy(acl.util.numpy_to_ptr(result), nbytes, out, nbytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
for i in range(SLAVES):
    part = slice(i * COUNT, (i + 1) * COUNT)
    ok = bool(np.array_equal(result[part], expected[part]))
    print(f"  slice {i} (slave 0x{slaves[i]:x}): out[{part.start}] = {result[part.start]:.4f} {'ok' if ok else 'WRONG'}")
assert np.array_equal(result, expected)
print("out == 1 + inp:", True)

acl.rt.free(inp)
acl.rt.free(out)
HcclCommDestroy(comm)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
