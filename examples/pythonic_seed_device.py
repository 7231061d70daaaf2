"""Seed example 2 in the Pythonic tier: the copy inside an AI CPU kernel on Atlas 350."""
import numpy as np

import pyhcomm
from pyhcomm import COMM_ENGINE_AICPU_TS, Comm, Device, HcclNotSupportedError

pyhcomm.set_product("Atlas 350")
with Device(0) as dev:
    print("SoC:", dev.soc_name)
    comm = Comm.init_all([0])[0]
    ccl = comm.hccl_buffer()
    (thread,) = comm.threads(COMM_ENGINE_AICPU_TS, 1, notify_num=1)
    user_in = dev.malloc(256)
    user_in.write((np.arange(256) * 7 % 256).astype(np.uint8))

    try:
        thread.local_copy(ccl[:256], user_in)   # the host may not do it on Atlas 350
    except HcclNotSupportedError as exc:
        print("from the host:", exc)

    def copy_kernel(dst, src, n):               # runs on the device side, in stream order
        thread.local_copy(dst, src, n)

    stream = dev.stream()
    stream.launch(copy_kernel, ccl.addr, user_in.addr, 256)
    dev.synchronize()
    assert (ccl[:256].read() == user_in.read()).all()
    print("HCCL buffer now holds the user input:", ccl[:256].read()[:8])
    comm.close()
