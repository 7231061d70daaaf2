"""HCOMM resources without a communicator (``hcomm_res.h``): endpoints, their memories, threads.

* An **endpoint** is a NIC of a device: one per protocol the device has on this product (the
  protocols of its node's fabric, and RoCE), described by the same ``EndpointDesc`` the rank graph
  gives (``HcommEndpointGetDescs(deviceLogicId)``). ``HcommEndpointCreate`` opens one of the
  current device's endpoints (another device's, or an unknown description: ``HCCL_E_PARA``) and
  gives it a listen port (60000 upwards, per device). Host endpoints are not modelled.
* **Memory** registered on an endpoint (``HcommMemReg``: device memory of its device, or host
  memory) can be exported as a descriptor: bytes in host memory (``ret, memDesc, memDescLen``,
  ``memDesc`` a host pointer) that another endpoint imports (``HcommMemImport``) to learn the
  remote ``CommMem``. Importing a descriptor of an unregistered memory is ``HCCL_E_NOT_FOUND``.
  ``HcommMemAlloc`` (Atlas A3, as documented) allocates device memory rounded up to 2 MB on the
  current device for symmetric windows; ``HcommMemFree`` frees it.
* **Threads** of ``HcommThreadAlloc`` belong to the current device (no communicator): CPU_TS or
  AICPU_TS (CPU on Atlas 350), ``notifyNumPerThread[i]`` (<= 64) notifies for thread ``i``, at
  most 1000 threads a call; AIV and CCU are ``HCCL_E_NOT_SUPPORT``. ``HcommThreadFree`` releases
  them (a communicator's thread is ``HCCL_E_PARA``: the communicator owns it).

Records and messages name such resources "rank d" with ``d`` the device.
"""
from __future__ import annotations

import itertools
import struct

import numpy as np

from ... import topology
from ...defs.res_defs import CommMem, CommMemType, EndpointDesc, EndpointLocType, HcommEndpointFeatureType
from ...enums import HCCL_RES_TAG_MAX_LEN
from ... import args
from ...errors import HcclResult, hccl_error, not_found, not_support, para, ptr
from ...sim import current_sim as _sim
from ...sim import memory
from ...args import live_object
from ...topology import LAYERS, layer_protocols
from .state import resources_state

LISTEN_PORT_BASE = 60000
MEM_DESC_MAGIC = b"PYHCOMM-MEM\0"
_DESC = struct.Struct("<12sIIQQQi255s")
ALLOC_GRANULARITY = 2 << 20


class DeviceScope:
    """The owner of one device's resources made without a communicator (a communicator's
    stand-in for :class:`pyhcomm.hcomm.resources.thread.HcommThread` and channel ends)."""

    l3 = True

    def __init__(self, device: int):
        self.device = self.rank = device
        self.name = f"device {device}"
        self.threads: list = []
        self.notify_total = 0
        self.suspended = self.destroyed = False
        self.settings = None
        self.endpoints: list = []
        self.ports = itertools.count(LISTEN_PORT_BASE)

    def __repr__(self):
        return f"<DeviceScope {self.device}>"


def scope(device: int) -> DeviceScope:
    scopes = resources_state().device_scopes
    with _sim().lock:
        s = scopes.get(device)
        if s is None:
            s = scopes[device] = DeviceScope(device)
    return s


def current_device(api: str) -> int:
    dev = _sim().runtime.current_device()
    if dev is None:
        raise hccl_error(HcclResult.HCCL_E_RUNTIME, api, "no current device: call aclrtSetDevice first")
    return dev.id


def device_endpoints(device: int) -> list[EndpointDesc]:
    """The endpoints of simulated device ``device``: one per protocol of the product's fabrics."""
    place = topology.default_place(device)
    protos = [p for layer in LAYERS for p in layer_protocols(layer)]
    return [topology.endpoint(place, p) for p in dict.fromkeys(protos)]


def _check_device(device, api: str) -> int:
    count = _sim().runtime.device_count
    device = args.integer(device, api, "deviceLogicId", -(1 << 64), args.UINT64_MAX)
    if not 0 <= device < count:
        raise para(api, f"deviceLogicId {device!r} is outside [0, {count})")
    return device


def desc_num(device) -> int:
    return len(device_endpoints(_check_device(device, "HcommEndpointGetDescNum")))


def descs(device, num) -> list[EndpointDesc]:
    api = "HcommEndpointGetDescs"
    eps = device_endpoints(_check_device(device, api))
    num = args.integer(num, api, "descNum", -(1 << 64), args.UINT64_MAX)
    if num != len(eps):
        raise para(api, f"descNum {num!r} must be HcommEndpointGetDescNum's answer ({len(eps)})")
    return eps


class Endpoint:
    """An open endpoint (``EndpointHandle``) of a device, with its registered memories."""

    def __init__(self, owner: DeviceScope, desc: EndpointDesc):
        self.owner, self.desc = owner, desc
        self.port = next(owner.ports)
        self.mems: dict = {}          # mem handle -> RegisteredMem
        self.imports: set = set()     # descriptors imported here
        self.descs: list = []         # the descriptors exported here: readable while the endpoint lives
        self.live = True
        self.handle = _sim().handles.misc.add(self)

    @property
    def device(self) -> int:
        return self.owner.device


class RegisteredMem:
    """Memory registered on an endpoint (``HcommMemHandle``)."""

    def __init__(self, endpoint: Endpoint, tag: str, mem_type: int, alloc, addr: int, size: int):
        self.endpoint, self.tag, self.type, self.alloc, self.addr, self.size = endpoint, tag, mem_type, alloc, addr, size
        self.handle = _sim().handles.misc.add(self)
        self.exported = None          # the host buffer holding its descriptor, once exported


def create(desc) -> Endpoint:
    api = "HcommEndpointCreate"
    if desc is None:
        raise ptr(api, "endpoint is NULL")
    if not isinstance(desc, EndpointDesc):
        raise TypeError(f"{api}: endpoint must be an EndpointDesc, not {type(desc).__name__}")
    device = current_device(api)
    if desc.loc.locType == EndpointLocType.ENDPOINT_LOC_TYPE_HOST:
        raise not_support(api, "host endpoints (host NICs) are not modelled by pyhcomm")
    mine = [ep for ep in device_endpoints(device) if ep.key() == desc.key()]
    if not mine:
        raise para(api, f"the endpoint is not one of device {device}'s (HcommEndpointGetDescs({device}) lists them)")
    s = scope(device)
    ep = Endpoint(s, mine[0])
    s.endpoints.append(ep)
    return ep


def get_endpoint(handle, api: str) -> Endpoint:
    return live_object(handle, Endpoint, api, "endpointHandle", "a live endpoint")


def destroy(handle) -> None:
    ep = get_endpoint(handle, "HcommEndpointDestroy")
    ep.live = False
    for end in getattr(ep, "channels", []):      # its HCOMM channels close with it
        if not end.closed:
            _sim().transport.withdraw(end)
            _sim().handles.channels.remove(end.handle)
    for m in ep.mems.values():
        _sim().handles.misc.remove(m.handle)
    ep.mems.clear()
    ep.owner.endpoints.remove(ep)
    _sim().handles.misc.remove(handle)


def listen_port(handle) -> int:
    return get_endpoint(handle, "HcommEndpointGetListenPort").port


def check_feature(feature, desc) -> bool:
    """``HcommEndpointCheckFeature``: NDA (a third-party NIC's direct access) is not modelled: False."""
    api = "HcommEndpointCheckFeature"
    if desc is None:
        raise ptr(api, "endpointDesc is NULL")
    if feature != HcommEndpointFeatureType.HCOMM_ENDPOINT_FEATURE_NDA:
        raise para(api, f"featureType {feature!r} is not an HcommEndpointFeatureType")
    return False


def mem_reg(handle, tag, mem) -> int:
    api = "HcommMemReg"
    ep = get_endpoint(handle, api)
    if tag is None or mem is None:
        raise ptr(api, "memTag or mem is NULL")
    if not isinstance(tag, str) or not 0 < len(tag) <= HCCL_RES_TAG_MAX_LEN:
        raise para(api, f"memTag must be 1..{HCCL_RES_TAG_MAX_LEN} characters")
    if not mem.addr:
        raise ptr(api, "mem.addr is NULL")
    if isinstance(mem.size, bool) or not isinstance(mem.size, int) or mem.size <= 0:
        raise para(api, f"mem.size {mem.size!r} must be positive")
    kinds = {CommMemType.COMM_MEM_TYPE_DEVICE: memory.DEVICE, CommMemType.COMM_MEM_TYPE_HOST: memory.HOST}
    if mem.type not in kinds:
        raise not_support(api, f"mem.type {mem.type!r}: device or host memory only")
    try:
        alloc = memory.resolve(mem.addr, mem.size, kinds[mem.type], ep.device if kinds[mem.type] == memory.DEVICE
                               else None)
    except memory.BadRange as why:
        raise para(api, f"mem 0x{mem.addr:x} + {mem.size}: {why}") from None
    if any(m.tag == tag for m in ep.mems.values()):
        raise para(api, f"memTag {tag!r} is already registered on this endpoint")
    m = RegisteredMem(ep, tag, int(mem.type), alloc, mem.addr, mem.size)
    ep.mems[m.handle] = m
    return m.handle


def _mem(ep: Endpoint, handle, api: str) -> RegisteredMem:
    m = ep.mems.get(handle) if isinstance(handle, int) else None
    if m is None:
        raise not_found(api, f"memHandle {handle!r} is not registered on this endpoint")
    return m


def mem_unreg(handle, mem_handle) -> None:
    api = "HcommMemUnreg"
    ep = get_endpoint(handle, api)
    m = _mem(ep, mem_handle, api)
    del ep.mems[m.handle]
    _sim().handles.misc.remove(m.handle)


def mem_export(handle, mem_handle):
    """``HcommMemExport``: ``(memDesc, memDescLen)``, a host pointer to the descriptor bytes
    (readable while the endpoint lives; once the memory is unregistered an import of it is
    ``HCCL_E_NOT_FOUND``)."""
    api = "HcommMemExport"
    ep = get_endpoint(handle, api)
    m = _mem(ep, mem_handle, api)
    if m.exported is None:
        raw = _DESC.pack(MEM_DESC_MAGIC, ep.device, ep.port, m.handle, m.addr, m.size, m.type,
                         m.tag.encode()[:255])
        m.exported = np.frombuffer(bytearray(raw), dtype=np.uint8)
        memory.register_host_array(m.exported)
        ep.descs.append(m.exported)     # (an import after HcommMemUnreg reads it: HCCL_E_NOT_FOUND)
    return m.exported.ctypes.data, m.exported.nbytes


def _decode(mem_desc, desc_len, api: str):
    if not mem_desc:
        raise ptr(api, "memDesc is NULL")
    if desc_len != _DESC.size:
        raise para(api, f"descLen {desc_len!r} is not the length HcommMemExport gave ({_DESC.size})")
    if isinstance(mem_desc, (bytes, bytearray)):
        raw = bytes(mem_desc)
    else:
        try:
            raw = memory.read_host(mem_desc, desc_len)
        except memory.BadRange as why:
            raise para(api, f"memDesc: {why}") from None
    magic, device, port, handle, addr, size, mem_type, _tag = _DESC.unpack(raw)
    if magic != MEM_DESC_MAGIC:
        raise para(api, "memDesc was not made by HcommMemExport")
    m = _sim().handles.misc.get(handle)
    if not isinstance(m, RegisteredMem) or m.endpoint.device != device or m.addr != addr:
        raise not_found(api, f"the memory of memDesc (device {device}, 0x{addr:x}) is no longer registered")
    return raw, m


def mem_import(handle, mem_desc, desc_len) -> CommMem:
    api = "HcommMemImport"
    ep = get_endpoint(handle, api)
    raw, m = _decode(mem_desc, desc_len, api)
    ep.imports.add(raw)
    return CommMem(type=m.type, addr=m.addr, size=m.size)


def mem_unimport(handle, mem_desc, desc_len) -> None:
    api = "HcommMemUnimport"
    ep = get_endpoint(handle, api)
    raw, _m = _decode(mem_desc, desc_len, api)
    if raw not in ep.imports:
        raise not_found(api, "memDesc was not imported on this endpoint")
    ep.imports.discard(raw)


def mem_alloc(size) -> int:
    api = "HcommMemAlloc"
    product = _sim().runtime.product
    if product.family != "A3":
        raise not_support(api, f"HcommMemAlloc is supported on Atlas A3, not on {product.name}")
    size = args.integer(size, api, "size", -(1 << 64), args.UINT64_MAX)
    if size <= 0:
        raise para(api, f"size {size!r} must be a positive int")
    device = current_device(api)
    rounded = -(-size // ALLOC_GRANULARITY) * ALLOC_GRANULARITY
    alloc = memory.alloc_device(device, rounded, owner="hcomm")
    if alloc is None:
        raise hccl_error(HcclResult.HCCL_E_RUNTIME, api, f"device {device} cannot hold {rounded} more bytes")
    return alloc.addr


def mem_free(addr) -> None:
    api = "HcommMemFree"
    addr = args.pointer(addr, api, "ptr")
    if not addr:
        raise para(api, "ptr is NULL")
    alloc = _sim().memory.device_map.exact(addr)
    if alloc is None or alloc.owner != "hcomm":
        raise para(api, f"ptr {addr!r} was not allocated by HcommMemAlloc")
    memory.free_device(alloc)
