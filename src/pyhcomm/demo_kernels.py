"""The AI CPU kernel the demo launches on Atlas 350 (a kernel "binary" is a Python module)."""
import struct

from .capi.hcomm_primitives import HcommLocalCopyOnThread

OP_PARAM = struct.Struct("<QQQQ")  # thread, dst (HCCL buffer), src (user input), len


def HcclLaunchCopyKernel(param: bytes) -> int:
    """Device-side orchestration: copy the user's input into the HCCL buffer."""
    thread, dst, src, length = OP_PARAM.unpack(param)
    return 0 if HcommLocalCopyOnThread(thread, dst, src, length) == 0 else 1
