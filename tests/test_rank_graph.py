"""The rank graph: layers, instances, topology types, endpoints and their attributes, links per layer."""
import struct

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

P = pyhcomm.CommProtocol


def world(product, devices):
    pyhcomm.set_product(product)
    assert acl.init() == 0
    ret, comms = pyhcomm.HcclCommInitAll(list(devices))
    assert ret == 0
    return comms


def test_a2_two_servers_two_layers():
    comms = world("Atlas 800T A2", [0, 1, 8, 9, 10])        # ranks 0, 1 in server 0; 2, 3, 4 in server 1
    c = comms[3]
    assert pyhcomm.HcclRankGraphGetLayers(c) == (0, [0, 1])
    assert pyhcomm.HcclRankGraphGetRanksByLayer(c, 0) == (0, [2, 3, 4])
    assert pyhcomm.HcclRankGraphGetRanksByLayer(c, 1) == (0, [0, 1, 2, 3, 4])
    assert pyhcomm.HcclRankGraphGetRankSizeByLayer(comms[0], 0) == (0, 2)
    assert pyhcomm.HcclRankGraphGetTopoTypeByLayer(c, 0) == (0, pyhcomm.COMM_TOPO_1DMESH)
    assert pyhcomm.HcclRankGraphGetTopoTypeByLayer(c, 1) == (0, pyhcomm.COMM_TOPO_CLOS)
    assert pyhcomm.HcclRankGraphGetInstSizeListByLayer(c, 0) == (0, [2, 3])
    assert pyhcomm.HcclRankGraphGetInstSizeListByLayer(c, 1) == (0, [5])
    assert pyhcomm.HcclRankGraphGetTopoInstsByLayer(c, 0) == (0, [1])
    assert pyhcomm.HcclRankGraphGetTopoType(c, 0, 1) == (0, pyhcomm.COMM_TOPO_1DMESH)
    assert pyhcomm.HcclRankGraphGetRanksByTopoInst(c, 0, 1) == (0, [2, 3, 4])
    assert pyhcomm.HcclRankGraphGetRanksByTopoInst(c, 0, 0) == (R.HCCL_E_PARA, [])   # not its instance
    assert pyhcomm.HcclRankGraphGetRanksByLayer(c, 2) == (R.HCCL_E_PARA, [])
    assert pyhcomm.HcclGetHeterogMode(c) == (0, pyhcomm.HCCL_HETEROG_MODE_HOMOGENEOUS)
    # layer 1 links are the RoCE links only, layer 0 every link
    assert [lk.linkAttr.linkProtocol for lk in pyhcomm.HcclRankGraphGetLinks(c, 1, 2, 3)[1]] == [P.COMM_PROTOCOL_ROCE]
    assert [lk.linkAttr.linkProtocol for lk in pyhcomm.HcclRankGraphGetLinks(c, 0, 2, 3)[1]] == \
        [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE]


def test_endpoints_of_an_instance_and_their_attributes():
    comms = world("Atlas 800T A2", [0, 1])
    c = comms[0]
    ret, n = pyhcomm.HcclRankGraphGetEndpointNum(c, 0, 0)
    assert (ret, n) == (0, 4)                                   # HCCS and HCCS_ONLY of each rank
    assert pyhcomm.HcclRankGraphGetEndpointDesc(c, 0, 0, 3) == (R.HCCL_E_PARA, [])
    ret, eps = pyhcomm.HcclRankGraphGetEndpointDesc(c, 0, 0, n)
    assert ret == 0 and [e.protocol for e in eps] == [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY] * 2
    assert [e.loc.devPhyId for e in eps] == [0, 0, 1, 1]
    info = pyhcomm.HcclRankGraphGetEndpointInfo
    assert info(c, 1, eps[2], pyhcomm.ENDPOINT_ATTR_BW_COEFF, 4) == (0, struct.pack("<I", 4))
    assert info(c, 1, eps[2], pyhcomm.ENDPOINT_ATTR_DIE_ID, 4) == (0, bytes(4))
    assert info(c, 1, eps[2], pyhcomm.ENDPOINT_ATTR_LOCATION, 4) == (0, bytes(4))       # ENDPOINT_LOC_TYPE_DEVICE
    assert info(c, 1, eps[2], pyhcomm.ENDPOINT_ATTR_BW_COEFF, 8) == (R.HCCL_E_PARA, b"")
    assert info(c, 0, eps[2], pyhcomm.ENDPOINT_ATTR_BW_COEFF, 4) == (R.HCCL_E_PARA, b"")   # rank 1's endpoint
    assert info(c, 1, None, pyhcomm.ENDPOINT_ATTR_BW_COEFF, 4) == (R.HCCL_E_PTR, b"")
    ret, roce = pyhcomm.HcclRankGraphGetEndpointDesc(c, 1, 0, 2)                # layer 1: RoCE per rank
    assert ret == 0 and [e.protocol for e in roce] == [P.COMM_PROTOCOL_ROCE] * 2
    assert info(c, 1, roce[1], pyhcomm.ENDPOINT_ATTR_BW_COEFF, 4) == (0, struct.pack("<I", 2))


@pytest.mark.parametrize("product,devices,inst0,topo0", [
    ("Atlas A3", [0, 1, 2], [3], pyhcomm.COMM_TOPO_910_93),          # one super pod
    ("Atlas 350", [0, 9], [2], pyhcomm.COMM_TOPO_1DMESH),
    ("Atlas inference series", [0, 9], [1, 1], pyhcomm.COMM_TOPO_310P),
])
def test_layer_zero_per_product(product, devices, inst0, topo0):
    comms = world(product, devices)
    assert pyhcomm.HcclRankGraphGetInstSizeListByLayer(comms[0], 0) == (0, inst0)
    assert pyhcomm.HcclRankGraphGetTopoTypeByLayer(comms[0], 0) == (0, topo0)


def test_comm_link_init():
    link = pyhcomm.CommLink()
    assert pyhcomm.CommLinkInit(link) == 0
    assert link.linkAttr.linkProtocol == -1 and link.linkAttr.hop == 1 and link.srcEndpointDesc.protocol == -1
    assert link.header.magicWord == 0x0F0E0F0F
    assert pyhcomm.CommLinkInit(None) == R.HCCL_E_PTR
