"""AI CPU kernel of seed example 2: device-side orchestration on Atlas 350.

In pyhcomm a kernel "binary" is a Python module; each kernel receives the arguments the host
appended, here one packed ``OpParam`` struct (bytes), as a compiled AI CPU kernel would.
"""
import struct

from pyhcomm import HcommLocalCopyOnThread  # real machine: the kernel is C++ linked with HCOMM

OP_PARAM = struct.Struct("<QQQQ")  # thread, cclBuf, userIn, len


def HcclLaunchCopyKernel(param: bytes) -> int:
    thread, ccl_buf, user_in, length = OP_PARAM.unpack(param)
    # device-side algorithm orchestration: device-to-device copy into the HCCL buffer
    ret = HcommLocalCopyOnThread(thread, ccl_buf, user_in, length)
    return 0 if ret == 0 else 1
