"""The Pythonic tier: devices, buffers, streams, communicators, threads and channels as objects.

Methods raise :class:`~pyhcomm.errors.HcclError` subclasses (``.code``, ``.api``) instead of
returning codes; objects that own a handle free it in ``close()``, which is idempotent, and are
context managers; threads, channels and registrations belong to their communicator and go with it.
Enqueueing methods return at once; ``synchronize()`` blocks. Every call goes to the raising
implementations of the lower layers (:mod:`pyhcomm.hcomm`, :mod:`pyhcomm.hccl`), never to the
flat C tier.

    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        t = comm.thread(COMM_ENGINE_CPU_TS, stream=dev.default_stream, notify_num=2)
        src, dst = dev.malloc(256), dev.malloc(256)
        src.write(np.arange(64, dtype=np.float32))
        t.local_copy(dst, src)
        dev.synchronize()
        print(dst.read(np.float32))

Across ranks (inside ``pyhcomm.launch``, whose rank body receives its :class:`Comm`)::

    right = comm.channel((comm.rank + 1) % comm.size, notify_num=2)   # protocol from the rank graph
    right.write(t, right.peer_hccl_buffer()[:256], src)               # one-sided, into its HCCL buffer
    right.record(t, 1)                                                 # then set its notify 1

One module per object family: :mod:`.memory` (Buffer, RemoteBuffer), :mod:`.device` (Device,
Stream, Kernel), :mod:`.thread` (Thread, batch_mode), :mod:`.channel` (Channel), :mod:`.comm`
(Comm, Registered, EngineCtx).
"""
from .channel import Channel
from .comm import Comm, EngineCtx, Registered
from .device import Device, Kernel, Stream
from .memory import Buffer, RemoteBuffer
from .thread import Thread, batch_mode

__all__ = ["Buffer", "Channel", "Comm", "Device", "EngineCtx", "Kernel", "Registered", "RemoteBuffer", "Stream",
           "Thread", "batch_mode"]
