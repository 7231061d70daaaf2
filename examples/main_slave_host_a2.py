"""Main/slave on the host (Atlas 800T A2): one main thread releases N slave threads, each slave
copies its slice, records the main thread, and the main thread waits for all of them.

The main thread wraps the user's stream (HcclThreadAcquireWithStream), the slaves have streams of
their own (HcclThreadAcquire). Every call below only enqueues; aclrtSynchronizeStream on the user
stream returns once the main thread has waited for every slave, so the data is complete.

    main (user stream)      slave[i] (own stream)
    record slave[i].n0 ---> wait n0
                            copy slice i
    wait n[i]  <----------- record main.n[i]

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

SLAVES = 4
SLICE = 64 * 1024                    # bytes per slave
TOTAL = SLAVES * SLICE
WAIT_TIMEOUT_S = 1836                # seconds, 0 would mean forever


def check(ret, what):
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret} {acl.get_recent_err_msg()}")


check(acl.init(), "aclInit")
check(acl.rt.set_device(0), "aclrtSetDevice")
ret, comms = HcclCommInitAll([0])
check(ret, "HcclCommInitAll")
comm = comms[0]
print("SoC:", acl.get_soc_name())

stream, ret = acl.rt.create_stream()
check(ret, "aclrtCreateStream")
# main thread on the user stream, one notify per slave (slave i records main.notify[i])
ret, main = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, stream, SLAVES)
check(ret, "HcclThreadAcquireWithStream")
# slave threads with their own streams, one notify each (the main thread records it)
ret, slaves = HcclThreadAcquire(comm, COMM_ENGINE_CPU_TS, SLAVES, 1)
check(ret, "HcclThreadAcquire")
print(f"main thread 0x{main:x} on the user stream; slaves " + ", ".join(f"0x{s:x}" for s in slaves))

policy = ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_MALLOC_HUGE_FIRST
cfg = {"numAttrs": 1, "attrs": [{"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": {"moduleId": HCCL}}]}
src, ret = acl.rt.malloc_with_cfg(TOTAL, policy, cfg)
check(ret, "aclrtMallocWithCfg")
dst, ret = acl.rt.malloc_with_cfg(TOTAL, policy, cfg)
check(ret, "aclrtMallocWithCfg")
check(acl.rt.memset(dst, TOTAL, 0, TOTAL), "aclrtMemset")
host_in = (np.arange(TOTAL) * 31 % 251).astype(np.uint8)
check(acl.rt.memcpy(src, TOTAL, acl.util.numpy_to_ptr(host_in), TOTAL, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")

# fan out: the main thread releases every slave
for s in slaves:
    check(HcommThreadNotifyRecordOnThread(main, s, 0), "HcommThreadNotifyRecordOnThread(main -> slave)")
# each slave: wait for the main thread, copy its slice, tell the main thread it is done
for i, s in enumerate(slaves):
    check(HcommThreadNotifyWaitOnThread(s, 0, WAIT_TIMEOUT_S), "HcommThreadNotifyWaitOnThread(slave)")
    check(HcommLocalCopyOnThread(s, dst + i * SLICE, src + i * SLICE, SLICE), "HcommLocalCopyOnThread")
    check(HcommThreadNotifyRecordOnThread(s, main, i), "HcommThreadNotifyRecordOnThread(slave -> main)")
# fan in: the main thread (the user stream) waits for every slave
for i in range(SLAVES):
    check(HcommThreadNotifyWaitOnThread(main, i, WAIT_TIMEOUT_S), "HcommThreadNotifyWaitOnThread(main)")
print(f"enqueued {SLAVES} releases, {SLAVES} x (wait, copy, record) and {SLAVES} waits; all returned 0")

# A deliberate race, to show that the calls above only enqueued: this read of dst is not ordered
# after the slaves' copies (here it sees the old bytes; on hardware any mix of old and new ones).
# `python -m pyhcomm verify` reports it, labelled deliberate by the comment on the call.
host_out = np.zeros(TOTAL, dtype=np.uint8)
out_ptr = acl.util.numpy_to_ptr(host_out)
ret = acl.rt.memcpy(out_ptr, TOTAL, dst, TOTAL, ACL_MEMCPY_DEVICE_TO_HOST)  # pyhcomm: deliberate race
check(ret, "aclrtMemcpy")
print("before aclrtSynchronizeStream (a deliberate race), dst is still zero:", bool((host_out == 0).all()))

ret = acl.rt.synchronize_stream(stream)
print(f"aclrtSynchronizeStream(user stream) -> {ret}")
check(ret, "aclrtSynchronizeStream")

check(acl.rt.memcpy(acl.util.numpy_to_ptr(host_out), TOTAL, dst, TOTAL, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
for i in range(SLAVES):
    ok = bool((host_out[i * SLICE:(i + 1) * SLICE] == host_in[i * SLICE:(i + 1) * SLICE]).all())
    print(f"  slice {i} (slave 0x{slaves[i]:x}): {'ok' if ok else 'WRONG'}")
assert (host_out == host_in).all()
print("dst == src:", True)

acl.rt.free(src)
acl.rt.free(dst)
HcclCommDestroy(comm)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
