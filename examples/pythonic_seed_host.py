"""Seed example 1 in the Pythonic tier: a copy on a CPU_TS thread, Atlas 800T A2, host side."""
import numpy as np

import pyhcomm
from pyhcomm import COMM_ENGINE_CPU_TS, Comm, Device, HcclError

pyhcomm.set_product("Atlas 800T A2")
with Device(0) as dev:
    comm = Comm.init_all([0])[0]
    stream = dev.stream()
    thread = comm.thread(COMM_ENGINE_CPU_TS, stream=stream, notify_num=2)
    src, dst = dev.malloc(256, module_id=pyhcomm.HCCL), dev.malloc(256, module_id=pyhcomm.HCCL)
    src.write(np.arange(256, dtype=np.uint8))

    thread.local_copy(dst, src)             # enqueued: nothing has moved yet
    # a deliberate race: this read is not ordered after the copy (verify reports it, labelled)
    print("before synchronize (a deliberate race):", dst.read()[:8])   # pyhcomm: deliberate race
    stream.synchronize()
    print("after synchronize: ", dst.read()[:8])
    assert (dst.read() == np.arange(256, dtype=np.uint8)).all()

    try:                                    # errors are exceptions with the HCCL code
        thread.local_copy(dst.addr + 128, src.addr, 256)   # runs past dst
    except HcclError as exc:
        print(f"{type(exc).__name__} code={exc.code.name} api={exc.api}: {exc.message}")
    comm.close()
