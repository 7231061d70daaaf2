"""Atlas 350: a kernel copies the input into the HCCL buffer on an AICPU_TS thread; the host
synchronizes only the stream it launched the kernel on, then reads the HCCL buffer.

A plain run reads the old bytes (threaded scheduler) or the new ones (cooperative), without an
error; on hardware the read races with the copy. Verify it:

    python -m pyhcomm verify examples/verify/kernel_race.py --ranks 1 --product "Atlas 350"
"""
import numpy as np

import pyhcomm
from pyhcomm import acl


def main(comm):
    src, _ = acl.rt.malloc(256, 0)
    stream, _ = acl.rt.create_stream()
    ccl = comm.hccl_buffer().addr
    _, (thread,) = pyhcomm.HcclThreadAcquire(comm.handle, pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)

    def stage_input():
        pyhcomm.HcommLocalCopyOnThread(thread, ccl, src, 256)

    pyhcomm.Stream(stream, owned=False).launch(stage_input)
    acl.rt.synchronize_stream(stream)          # waits for the kernel, not for what it queued
    out = np.zeros(256, np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), 256, ccl, 256, pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST)
