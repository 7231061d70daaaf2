"""Runtime state: the selected product, the simulated devices, and each OS thread's context.

Models CANN's process-level runtime: ``aclrtSetDevice`` opens a device (reference counted per
process) and makes it current for the calling OS thread; ``aclrtResetDevice`` drops one reference
and, at zero, releases the device's streams and memory. Code running inside an AI CPU kernel is
"device side" (:func:`on_device_side`).
"""
from __future__ import annotations

import os
import threading

from ..products import Product, find_product, product_from_env
from . import memory
from .scheduler import scheduler
from .stream import Stream

ENV_DEVICE_COUNT = "PYHCOMM_DEVICE_COUNT"


class Device:
    """One simulated NPU: its streams, its memory, its default stream."""

    def __init__(self, device_id: int, product: Product):
        self.id = device_id
        self.product = product
        self.refcount = 0
        self.streams: dict[int, Stream] = {}
        self.default_stream = self.new_stream("default stream")

    def new_stream(self, label="stream") -> Stream:
        s = Stream(self.id, label)
        self.streams[s.handle] = s
        return s

    def __repr__(self):
        return f"<Device {self.id} {self.product.name}>"


class _ThreadContext(threading.local):
    def __init__(self):
        self.device: int | None = None
        self.kernels: list = []      # stack of running kernel launches (device side when non-empty)
        self.batch = None            # the open HCOMM batch of this OS thread (or of the running kernel)
        self.wait_timeout = None     # HcommSetNotifyWaitTimeOut of this OS thread (seconds)


class Runtime:
    """The process-wide runtime (one instance, :data:`runtime`)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.initialized = False
        self.product: Product = product_from_env()
        self.product_chosen = False     # True once set_product() was called by the user
        self.device_count = self._count_from_env(self.product)
        self.devices: dict[int, Device] = {}
        self.ctx = _ThreadContext()
        self.finalize_hooks: list = []
        #: Notifies created from now on count records instead of coalescing them (an option; the
        #: hardware's 1-bit behaviour is the default). ``PYHCOMM_NOTIFY_COUNTING=1`` sets it.
        self.notify_counting = os.environ.get("PYHCOMM_NOTIFY_COUNTING", "0") not in ("", "0")

    @staticmethod
    def _count_from_env(product: Product) -> int:
        env = os.environ.get(ENV_DEVICE_COUNT)
        return max(1, int(env)) if env else max(product.devices_per_server, 16)

    # -- product -------------------------------------------------------------------------------
    def set_product(self, name, device_count: int | None = None, chosen: bool = True) -> Product:
        """Select the simulated product; only while no device is open."""
        product = find_product(name)
        with self.lock:
            if self.devices:
                raise RuntimeError(
                    f"cannot switch to {product.name!r}: devices {sorted(self.devices)} are open "
                    "(reset them, or call aclFinalize, first)")
            self.product = product
            self.product_chosen = self.product_chosen or chosen
            self.device_count = device_count or self._count_from_env(product)
        return product

    # -- devices -------------------------------------------------------------------------------
    def open_device(self, device_id: int) -> Device:
        with self.lock:
            dev = self.devices.get(device_id)
            if dev is None:
                dev = self.devices[device_id] = Device(device_id, self.product)
            dev.refcount += 1
        self.ctx.device = device_id
        scheduler.register_host()
        return dev

    def close_device(self, device_id: int) -> bool:
        """Drop one reference; release the device at zero. False if it was not open."""
        with self.lock:
            dev = self.devices.get(device_id)
            if dev is None:
                return False
            dev.refcount -= 1
            released = dev.refcount <= 0
            if released:
                self._release(dev)
        if released and self.ctx.device == device_id:
            self.ctx.device = None
        return True

    def _release(self, dev: Device) -> None:
        from .handles import streams as stream_handles
        for s in dev.streams.values():
            scheduler.drop_stream(s)
            stream_handles.remove(s.handle)
        for hook in list(self.finalize_hooks):
            hook(dev.id)
        memory.release_device_memory(dev.id)
        del self.devices[dev.id]

    def current_device(self) -> Device | None:
        d = self.ctx.device
        return None if d is None else self.devices.get(d)

    def reset(self) -> None:
        """Close every device and forget all state (``aclFinalize``; also used by tests)."""
        with self.lock:
            for dev in list(self.devices.values()):
                dev.refcount = 0
                self._release(dev)
            self.initialized = False
        scheduler.reset()
        self.ctx.device = None


runtime = Runtime()


def on_device_side() -> bool:
    """True while the calling OS thread runs an AI CPU kernel."""
    return bool(runtime.ctx.kernels)
