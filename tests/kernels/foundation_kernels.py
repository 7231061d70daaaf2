"""AI CPU kernels used by the foundation tests (a kernel "binary" is a Python module).

Kernels receive the values appended with ``kernel_args_append`` positionally. They report what
they saw through Python lists passed as arguments, so the tests can check when and how they ran.
"""
import struct

import numpy as np

from pyhcomm import HcommLocalCopyOnThread, acl

OP_PARAM = struct.Struct("<QQQQ")  # thread, dst, src, len (as the seed's device example packs it)
D2H = 2


def record_kernel(log, tag):
    """Append ``tag`` to ``log``: shows that (and when) the kernel ran."""
    log.append(tag)
    return 0


def memset_kernel(ptr, n, value):
    """Fill ``n`` bytes at ``ptr`` from inside the kernel (a direct effect of the kernel itself)."""
    return acl.rt.memset(ptr, n, value, n)


def read_kernel(log, ptr, n):
    """Append the ``n`` bytes at ``ptr`` as the kernel sees them when it runs."""
    out = np.zeros(n, dtype=np.uint8)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, D2H)
    log.append(out.copy() if ret == 0 else ret)
    return 0


def copy_kernel(param):
    """The seed's device-side orchestration: one packed OpParam, one local copy."""
    thread, dst, src, length = OP_PARAM.unpack(param)
    ret = HcommLocalCopyOnThread(thread, dst, src, length)
    return 0 if ret == 0 else 1


def copy_ret_kernel(out, thread, dst, src, length):
    """Call the primitive on the device side and report its return code (the kernel succeeds)."""
    out.append(int(HcommLocalCopyOnThread(thread, dst, src, length)))
    return 0


def raising_kernel(log):
    log.append("raising")
    raise RuntimeError("kernel exploded on purpose")


def nonzero_kernel(log):
    log.append("nonzero")
    return 7


def block_kernel(log):
    """Records one entry per block."""
    log.append("block")
    return 0
