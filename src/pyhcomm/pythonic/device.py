"""Devices, streams and AI CPU kernels as objects (``aclrtSetDevice``, ``aclrtStream``, kernel
launch)."""
from __future__ import annotations

from ..aclrt import device as _dev
from ..aclrt import kernel as _kernel
from ..aclrt import memory as _mem
from ..aclrt import stream as _stream
from ..enums import aclrtMemMallocPolicy
from ..errors import AclError, acl_error
from ..sim import current_sim as _sim
from ._common import Closable
from .memory import Buffer

_HUGE_HBW = aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST | aclrtMemMallocPolicy.ACL_MEM_TYPE_HIGH_BAND_WIDTH


class Stream(Closable):
    """A stream (``aclrtStream``); ``handle`` is the int the C tier takes."""

    def __init__(self, handle: int, owned: bool = True):
        self.handle, self._owned = handle, owned

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Block until the stream's tasks ran; raise its first execution error."""
        _stream.aclrtSynchronizeStreamWithTimeout(self.handle, timeout_ms)

    def launch(self, fn, *args, num_blocks: int = 1) -> None:
        """Enqueue ``fn(*args)`` as an AI CPU kernel: it runs on the device side in stream order
        (a host call)."""
        _dev.host_call("Stream.launch")
        _kernel.launch_function(fn, _stream.get_stream(self.handle, "Stream.launch"), args, num_blocks)

    def close(self) -> None:
        if self._owned:
            self._owned = False
            if _sim().handles.streams.get(self.handle) is not None:
                _stream.aclrtDestroyStream(self.handle)

    def __repr__(self):
        return f"<Stream 0x{self.handle:x}>"


class Device(Closable):
    """An open device (``aclrtSetDevice``); ``close()`` resets it."""

    def __init__(self, device_id: int = 0):
        _dev.aclrtSetDevice(device_id)
        self.id = device_id
        self._open = True

    @property
    def soc_name(self) -> str:
        return _dev.aclrtGetSocName()

    @property
    def default_stream(self) -> Stream:
        return Stream(_sim().runtime.devices[self.id].default_stream.handle, owned=False)

    def malloc(self, size: int, policy: int = _HUGE_HBW, module_id: int | None = None) -> Buffer:
        """Allocate device memory on this device (``aclrtMallocWithCfg``)."""
        cfg = None
        if module_id is not None:
            cfg = {"numAttrs": 1, "attrs": [{"attr": 1, "value": {"moduleId": module_id}}]}
        return Buffer(_mem.aclrtMallocWithCfg(size, policy, cfg, self.id), size, self.id)

    def _device(self):
        dev = _sim().runtime.devices.get(self.id)
        if dev is None:
            raise acl_error(AclError.ACL_ERROR_RT_CONTEXT_NULL, "Device", f"device {self.id} is not open")
        return dev

    def stream(self) -> Stream:
        """A new stream on this device (``aclrtCreateStream``; a host call)."""
        _dev.host_call("aclrtCreateStream")
        return Stream(self._device().new_stream().handle)

    def synchronize(self) -> None:
        """Block until every stream of the device is idle, streams created meanwhile included
        (``aclrtSynchronizeDevice``; a host call); raise the first error any hit."""
        _dev.host_call("aclrtSynchronizeDevice")
        _stream.sync_device(self._device(), "aclrtSynchronizeDevice")

    def close(self) -> None:
        if self._open:
            self._open = False
            _dev.aclrtResetDevice(self.id)

    def __repr__(self):
        return f"<Device {self.id} {_sim().runtime.product.name}>"


class Kernel:
    """A Python function used as an AI CPU kernel: ``Kernel(fn).launch(stream, *args)``."""

    def __init__(self, fn):
        self.fn = fn

    def launch(self, stream: Stream, *args, num_blocks: int = 1) -> None:
        stream.launch(self.fn, *args, num_blocks=num_blocks)

    def __call__(self, *args):
        return self.fn(*args)
