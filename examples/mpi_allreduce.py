"""AllReduce with one process per rank, as HCCL's MPI examples run it:

    mpiexec -n 4 python examples/mpi_allreduce.py

MPI rank ``r`` drives device ``r``; rank 0 makes the root info and broadcasts it (``comm.bcast``, as
the C examples do with ``MPI_Bcast``); every rank joins with ``HcclCommInitRootInfo``. Run alone
(``python examples/mpi_allreduce.py``) it is a world of one rank.

Written as a real Ascend user writes it with mpi4py + pyACL + pyhccl; on a real machine, replace
the two pyhcomm imports with ``import acl`` and ``from pyhccl import *``.
"""
import numpy as np
from mpi4py import MPI

from pyhcomm import acl  # real machine: import acl
from pyhcomm import *    # real machine: from pyhccl import *

# pyACL exports no constants: a pyACL program defines the acl header values it uses
ACL_MEM_MALLOC_HUGE_ONLY = 1                 # aclrtMemMallocPolicy
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2  # aclrtMemcpyKind

COUNT = 1 << 16          # floats per rank


def check(ret, what):
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret} {acl.get_recent_err_msg()}")


world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
check(acl.init(), "aclInit")
check(acl.rt.set_device(rank), "aclrtSetDevice")
root_info = None
if rank == 0:
    ret, root_info = HcclGetRootInfo()
    check(ret, "HcclGetRootInfo")
root_info = world.bcast(root_info, root=0)
ret, comm = HcclCommInitRootInfo(size, root_info, rank)
check(ret, "HcclCommInitRootInfo")

nbytes = COUNT * 4
send, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_ONLY)
check(ret, "aclrtMalloc")
recv, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_ONLY)
check(ret, "aclrtMalloc")
host = np.arange(COUNT, dtype=np.float32) * (rank + 1)
check(acl.rt.memcpy(send, nbytes, acl.util.numpy_to_ptr(host), nbytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
stream, ret = acl.rt.create_stream()
check(ret, "aclrtCreateStream")

check(HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream), "HcclAllReduce")
check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

out = np.zeros(COUNT, np.float32)
check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), nbytes, recv, nbytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
expected = np.arange(COUNT, dtype=np.float32) * (size * (size + 1) // 2)
assert np.array_equal(out, expected)
print(f"rank {rank} of {size}: AllReduce of {COUNT} floats == sum over ranks: True")

check(HcclCommDestroy(comm), "HcclCommDestroy")
acl.rt.free(send)
acl.rt.free(recv)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(rank)
acl.finalize()
