"""Seed example 1 (host side, Atlas A2/A3): HcommLocalCopyOnThread on a CPU_TS thread.

Written as a real Ascend user writes it with pyACL + pyhccl; on a real machine, replace the two
pyhcomm imports with ``import acl`` and ``from pyhccl import *``.
"""
import numpy as np

from pyhcomm import acl  # real machine: import acl
from pyhcomm import *    # real machine: from pyhccl import *

# pyACL exports no constants: a pyACL program defines the acl header values it uses
ACL_MEM_MALLOC_HUGE_FIRST = 0                # aclrtMemMallocPolicy
ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2  # aclrtMemcpyKind
ACL_RT_MEM_ATTR_MODULE_ID = 1               # aclrtMallocAttrType
HCCL = 3                                    # HCCL's module id (moduleId of aclrtMallocAttrValue)

ret = acl.init()
ret = acl.rt.set_device(0)
ret, comms = HcclCommInitAll([0])
comm = comms[0]

engine = COMM_ENGINE_CPU_TS
stream, ret = acl.rt.create_stream()
ret, thread = HcclThreadAcquireWithStream(comm, engine, stream, 2)
print(f"HcclThreadAcquireWithStream -> {ret}, thread = 0x{thread:x}")

# allocate device memory
mem_size = 256
policy = ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_MALLOC_HUGE_FIRST
cfg = {"numAttrs": 1, "attrs": [{"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": {"moduleId": HCCL}}]}
input_mem, ret = acl.rt.malloc_with_cfg(mem_size, policy, cfg)
output_mem, ret = acl.rt.malloc_with_cfg(mem_size, policy, cfg)

host_in = np.arange(mem_size, dtype=np.uint8)
ret = acl.rt.memcpy(input_mem, mem_size, acl.util.numpy_to_ptr(host_in), mem_size, ACL_MEMCPY_HOST_TO_DEVICE)

# device-to-device copy
ret = HcommLocalCopyOnThread(thread, output_mem, input_mem, mem_size)
print(f"HcommLocalCopyOnThread -> {ret}")
ret = acl.rt.synchronize_stream(stream)
print(f"aclrtSynchronizeStream -> {ret}")

host_out = np.zeros(mem_size, dtype=np.uint8)
ret = acl.rt.memcpy(acl.util.numpy_to_ptr(host_out), mem_size, output_mem, mem_size, ACL_MEMCPY_DEVICE_TO_HOST)
assert (host_out == host_in).all()
print("output == input:", bool((host_out == host_in).all()))

acl.rt.free(input_mem)
acl.rt.free(output_mem)
HcclCommDestroy(comm)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
