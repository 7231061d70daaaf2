"""AI CPU kernel of examples/main_slave_device_350.py: main/slave orchestration on the device.

In pyhcomm a kernel "binary" is a Python module; the kernel receives the packed ``OpParam`` the
host appended, as a compiled AI CPU kernel would. Body as in the custom-operator sample
(hcomm-api.md 5.6): BatchModeStart, wait for the host, fan out / fan in, release the host,
BatchModeEnd.
"""
import struct

# real machine: the kernel is C++ linked with HCOMM
from pyhcomm import (HCOMM_DATA_TYPE_FP32, HcommBatchModeEnd, HcommBatchModeStart, HcommLocalReduceOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread)

# hostThreadOnAicpu, dst, src, count per slave, dataType, reduceOp, slaveNum, then slaveNum + 1
# thread handles (main first); the main thread's notify slaveNum is the host -> device sync
OP_PARAM = struct.Struct("<QQQQIII")
TAG = b"custom_main_slave_reduce"
WAIT_TIMEOUT_S = 1836
DATA_TYPE_SIZE = {HCOMM_DATA_TYPE_FP32: 4}


def unpack(param: bytes):
    host, dst, src, count, dtype, op, n = OP_PARAM.unpack_from(param)
    threads = struct.unpack_from(f"<{n + 1}Q", param, OP_PARAM.size)
    return host, dst, src, count, dtype, op, threads[0], list(threads[1:])


def HcclLaunchMainSlaveKernel(param: bytes) -> int:
    host, dst, src, count, dtype, op, main, slaves = unpack(param)
    tag = TAG.decode()
    nbytes = count * DATA_TYPE_SIZE[dtype]
    if HcommBatchModeStart(tag) != 0:
        return 1
    rets = [HcommThreadNotifyWaitOnThread(main, len(slaves), WAIT_TIMEOUT_S)]   # wait for the host
    for s in slaves:                                                             # fan out
        rets.append(HcommThreadNotifyRecordOnThread(main, s, 0))
    for i, s in enumerate(slaves):
        rets.append(HcommThreadNotifyWaitOnThread(s, 0, WAIT_TIMEOUT_S))
        rets.append(HcommLocalReduceOnThread(s, dst + i * nbytes, src + i * nbytes, count, dtype, op))
        rets.append(HcommThreadNotifyRecordOnThread(s, main, i))
    for i in range(len(slaves)):                                                 # fan in
        rets.append(HcommThreadNotifyWaitOnThread(main, i, WAIT_TIMEOUT_S))
    rets.append(HcommThreadNotifyRecordOnThread(main, host, 0))                 # release the host
    rets.append(HcommBatchModeEnd(tag))
    return 0 if all(r == 0 for r in rets) else 1
