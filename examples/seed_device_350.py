"""Seed example 2 (device side, Atlas 350): HcommLocalCopyOnThread inside an AI CPU kernel.

The host gets the HCCL buffer and an AICPU_TS thread, packs the kernel's parameters and launches
the kernel; the kernel copies user input into the HCCL buffer on the device side.
"""
import os
import struct

os.environ.setdefault("PYHCOMM_PRODUCT", "Atlas 350")  # a real Atlas 350 machine needs nothing

import numpy as np

from pyhcomm import acl  # real machine: import acl
from pyhcomm import *    # real machine: from pyhccl import *

# pyACL exports no constants: a pyACL program defines the acl header values it uses
ACL_MEM_MALLOC_HUGE_FIRST = 0                # aclrtMemMallocPolicy
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2  # aclrtMemcpyKind
ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7       # aclrtLaunchKernelAttrId

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "seed_copy_kernel.py")

acl.init()
acl.rt.set_device(0)
print("SoC:", acl.get_soc_name())
ret, comms = HcclCommInitAll([0])
comm = comms[0]
engine = COMM_ENGINE_AICPU_TS

ret, ccl_buffer_addr, ccl_buffer_size = HcclGetHcclBuffer(comm)
print(f"HcclGetHcclBuffer -> {ret}, 0x{ccl_buffer_addr:x}, {ccl_buffer_size} bytes")
ret, threads = HcclThreadAcquire(comm, engine, 1, 1)
thread = threads[0]
print(f"HcclThreadAcquire(AICPU_TS) -> {ret}, thread = 0x{thread:x}")

length = 256
user_in, ret = acl.rt.malloc(length, ACL_MEM_MALLOC_HUGE_FIRST)
host_in = (np.arange(length) * 7 % 256).astype(np.uint8)
acl.rt.memcpy(user_in, length, acl.util.numpy_to_ptr(host_in), length, ACL_MEMCPY_HOST_TO_DEVICE)

# the host may not call the primitive itself on Atlas 350
ret = HcommLocalCopyOnThread(thread, ccl_buffer_addr, user_in, length)
print(f"HcommLocalCopyOnThread from the host -> {ret} (HCCL_E_NOT_SUPPORT)")

# copy the parameters and launch the kernel
stream, ret = acl.rt.create_stream()
binary, ret = acl.rt.binary_load_from_file(KERNELS, [])
func, ret = acl.rt.binary_get_function(binary, "HcclLaunchCopyKernel")
args, ret = acl.rt.kernel_args_init(func)
param = np.frombuffer(struct.pack("<QQQQ", thread, ccl_buffer_addr, user_in, length), dtype=np.uint8).copy()
_, ret = acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(param), param.nbytes)
acl.rt.kernel_args_finalize(args)
ret = acl.rt.launch_kernel_with_config(func, 1, stream, [{"id": ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, "value": 1836}],
                                       args, 0)
print(f"launch_kernel_with_config -> {ret}")
ret = acl.rt.synchronize_device()
print(f"synchronize_device -> {ret}")

host_out = np.zeros(length, dtype=np.uint8)
acl.rt.memcpy(acl.util.numpy_to_ptr(host_out), length, ccl_buffer_addr, length, ACL_MEMCPY_DEVICE_TO_HOST)
print("HCCL buffer == user input:", bool((host_out == host_in).all()))
assert (host_out == host_in).all()

acl.rt.free(user_in)
HcclCommDestroy(comm)
acl.rt.reset_device(0)
acl.finalize()
