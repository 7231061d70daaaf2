"""``hcomm_res.h`` / ``hcomm_res_defs.h``: endpoints, their memories and threads without a
communicator, in the flat C tier (model: :mod:`pyhcomm.hcomm.resources.endpoint`)."""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.res_defs import (CommAbiHeader, CommAddr, CommAddrType, CommMem, EndpointDesc, EndpointLoc,  # noqa: F401
                             EndpointLocType, HcommEndpointFeatureType, HcommSocketRole, endpoint_desc_init)
from ..hcomm.resources import endpoint as _ep
from ..hcomm.resources import thread as _thread
from ._wrap import c_api

__all__ = ["EndpointDescInit", "HcommEndpointGetDescNum", "HcommEndpointGetDescs", "HcommEndpointCreate",
           "HcommEndpointDestroy", "HcommEndpointGetListenPort", "HcommEndpointCheckFeature", "HcommMemReg",
           "HcommMemUnreg", "HcommMemExport", "HcommMemImport", "HcommMemUnimport", "HcommMemAlloc", "HcommMemFree",
           "HcommThreadAlloc", "HcommThreadFree", "HcommThreadResGetInfo", "CommAbiHeader", "CommAddr",
           "CommAddrType", "EndpointLoc", "EndpointLocType", "HcommEndpointFeatureType", "HcommSocketRole"]


@c_api()
def EndpointDescInit(endpoint):
    """Fill ``endpoint`` with 0xFF and mark protocol, address and location reserved."""
    endpoint_desc_init(struct_arg(endpoint, EndpointDesc, "EndpointDescInit", "endpoint"))


@c_api(0)
def HcommEndpointGetDescNum(deviceLogicId):  # noqa: N803
    """``ret, num``: how many endpoints (NICs) device ``deviceLogicId`` has."""
    return _ep.desc_num(deviceLogicId)


@c_api([])
def HcommEndpointGetDescs(deviceLogicId, descNum):  # noqa: N803
    """``ret, descs``: the device's endpoint descriptors (``descNum`` from GetDescNum)."""
    return _ep.descs(deviceLogicId, descNum)


@c_api(0)
def HcommEndpointCreate(endpoint):
    """``ret, endpointHandle``: open one of the current device's endpoints."""
    return _ep.create(endpoint).handle


@c_api()
def HcommEndpointDestroy(endpointHandle):  # noqa: N803
    _ep.destroy(endpointHandle)


@c_api(0)
def HcommEndpointGetListenPort(endpointHandle):  # noqa: N803
    return _ep.listen_port(endpointHandle)


@c_api(False)
def HcommEndpointCheckFeature(featureType, endpointDesc):  # noqa: N803
    return _ep.check_feature(featureType, endpointDesc)


@c_api(0)
def HcommMemReg(endpointHandle, memTag, mem):  # noqa: N803
    """``ret, memHandle``: register device (or host) memory on an endpoint."""
    return _ep.mem_reg(endpointHandle, memTag, mem)


@c_api()
def HcommMemUnreg(endpointHandle, memHandle):  # noqa: N803
    _ep.mem_unreg(endpointHandle, memHandle)


@c_api(0, 0)
def HcommMemExport(endpointHandle, memHandle):  # noqa: N803
    """``ret, memDesc, memDescLen``: a descriptor (host pointer and length) for another endpoint."""
    return _ep.mem_export(endpointHandle, memHandle)


@c_api(CommMem)
def HcommMemImport(endpointHandle, memDesc, descLen):  # noqa: N803
    """``ret, mem``: the ``CommMem`` an exported descriptor describes."""
    return _ep.mem_import(endpointHandle, memDesc, descLen)


@c_api()
def HcommMemUnimport(endpointHandle, memDesc, descLen):  # noqa: N803
    _ep.mem_unimport(endpointHandle, memDesc, descLen)


@c_api(0)
def HcommMemAlloc(size):
    """``ret, ptr``: device memory for symmetric windows (Atlas A3; 2 MB granules)."""
    return _ep.mem_alloc(size)


@c_api()
def HcommMemFree(ptr):  # noqa: A002
    _ep.mem_free(ptr)


@c_api([])
def HcommThreadAlloc(engine, notifyNumPerThread):  # noqa: N803
    """``ret, threads``: one thread per entry of ``notifyNumPerThread``, on the current device."""
    return [t.handle for t in _thread.alloc(engine, notifyNumPerThread)]


@c_api()
def HcommThreadFree(threads):
    _thread.free(threads)


@c_api(0)
def HcommThreadResGetInfo(thread, resType, infoLen):  # noqa: N803
    """``ret, info``: the ``aclrtStream`` behind ``thread`` (``THREAD_RES_TYPE_STREAM``, 8 bytes)."""
    return _thread.stream_info(_thread.get_thread(thread, "HcommThreadResGetInfo"), resType, infoLen,
                               "HcommThreadResGetInfo")
