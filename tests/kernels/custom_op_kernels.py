"""AI CPU kernels launched by HcclAicpuKernelLaunch in the tests (a pyhcomm kernel module)."""
import struct

import pyhcomm


def copy_kernel(param):
    """Copy ``len`` bytes ``src`` -> ``dst`` (three uint64 in ``opParams``) on the param's thread."""
    dst, src, n = struct.unpack_from("<QQQ", param.opParams)
    pyhcomm.HcommBatchModeStart("copy_kernel")
    ret = pyhcomm.HcommLocalCopyOnThread(param.sendRecvThread, dst, src, n)
    pyhcomm.HcommBatchModeEnd("copy_kernel")
    return ret
