"""Cluster topology per product and HcclRankGraphGetLinks: which links join two devices, with which
protocols, and what the endpoint descriptors of a link say (hcomm-api §1.5, §1.6, §3.4)."""
import pytest

import pyhcomm
from pyhcomm import HcclCommDestroy, HcclCommInitAll, HcclRankGraphGetLinks, acl
from pyhcomm.topology import CommAddrType, EndpointLocType, protocols_between

R = pyhcomm.HcclResult
P = pyhcomm.CommProtocol
HCCS, HCCS_ONLY, ROCE, SIO, PCIE = (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE,
                                    P.COMM_PROTOCOL_SIO, P.COMM_PROTOCOL_PCIE)
UB = [P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM, P.COMM_PROTOCOL_UBOE]

pytestmark = pytest.mark.timeout(60)


def _init_all(product, ndev):
    pyhcomm.set_product(product)
    assert acl.init() == 0
    ret, comms = HcclCommInitAll(list(range(ndev)))
    assert ret == 0 and len(comms) == ndev
    return comms


def _protocols(comm, src, dst):
    ret, links = HcclRankGraphGetLinks(comm, 0, src, dst)
    assert ret == 0, ret
    return [link.linkAttr.linkProtocol for link in links]


# -- protocols between two devices, per product ------------------------------------------------------------
def test_protocol_values_are_the_c_values():
    assert [int(p) for p in (P.COMM_PROTOCOL_RESERVED, HCCS, ROCE, PCIE, SIO)] == [-1, 0, 1, 2, 3]
    assert [int(p) for p in UB] == [4, 5, 6, 7]
    assert int(HCCS_ONLY) == 8
    assert pyhcomm.COMM_PROTOCOL_UBC_CTP == 4 and pyhcomm.COMM_PROTOCOL_HCCS_ONLY == 8
    assert pyhcomm.topology.COMM_PROTOCOL_UB_CTP == P.COMM_PROTOCOL_UBC_CTP  # the newer spelling


def test_a2_hccs_inside_a_server_of_eight_and_only_roce_across_servers(product):
    product("Atlas 800T A2")
    for a, b in [(0, 1), (0, 7), (7, 3), (8, 15), (9, 12)]:
        assert protocols_between(a, b) == [HCCS, HCCS_ONLY, ROCE], (a, b)
    for a, b in [(0, 8), (7, 8), (15, 0), (3, 11)]:
        assert protocols_between(a, b) == [ROCE], (a, b)
    assert protocols_between(5, 5) == []


def test_a2_box16_has_sixteen_devices_a_server(product):
    product("Atlas 200T A2 Box16")
    assert protocols_between(0, 15) == [HCCS, HCCS_ONLY, ROCE]
    assert protocols_between(15, 16) == [ROCE]


def test_devices_per_server_can_be_overridden(product, monkeypatch, env):
    product("Atlas 800T A2")
    env("PYHCOMM_DEVICES_PER_SERVER", "4")
    assert protocols_between(0, 3) == [HCCS, HCCS_ONLY, ROCE]
    assert protocols_between(3, 4) == [ROCE]


def test_a3_sio_joins_the_two_dies_of_one_npu_only(product):
    product("Atlas A3")
    for k in (0, 1, 7):
        assert protocols_between(2 * k, 2 * k + 1) == [SIO, HCCS, HCCS_ONLY, ROCE]
        assert protocols_between(2 * k + 1, 2 * k) == [SIO, HCCS, HCCS_ONLY, ROCE]
    for a, b in [(1, 2), (0, 2), (3, 4), (0, 15), (2, 17)]:
        assert protocols_between(a, b) == [HCCS, HCCS_ONLY, ROCE], (a, b)


def test_a3_hccs_only_inside_the_super_pod(product, monkeypatch, env):
    product("Atlas A3")
    env("PYHCOMM_SUPER_POD_SIZE", "4")
    assert protocols_between(1, 3) == [HCCS, HCCS_ONLY, ROCE]
    assert protocols_between(3, 4) == [ROCE]
    assert protocols_between(4, 5) == [SIO, HCCS, HCCS_ONLY, ROCE]
    monkeypatch.delenv("PYHCOMM_SUPER_POD_SIZE")
    pyhcomm.current_sim().reload_config()
    assert protocols_between(3, 700) == [HCCS, HCCS_ONLY, ROCE]    # default: 768 dies a super pod
    assert protocols_between(767, 768) == [ROCE]


def test_atlas_350_ub_protocols_inside_the_super_pod_ub_over_ethernet_and_roce_between_pods(product, monkeypatch,
                                                                                         env):
    product("Atlas 350")
    assert protocols_between(0, 1) == UB + [ROCE]
    assert protocols_between(0, 9) == UB + [ROCE]          # across servers, same super pod
    env("PYHCOMM_SUPER_POD_SIZE", "8")
    assert protocols_between(7, 8) == [P.COMM_PROTOCOL_UBOE, ROCE]
    assert SIO not in protocols_between(0, 1) and HCCS not in protocols_between(0, 1)


def test_training_series_has_two_hccs_groups_of_four_joined_by_pcie(product):
    product("Atlas training series")
    for a, b in [(0, 1), (0, 3), (4, 7), (9, 10)]:
        assert protocols_between(a, b) == [HCCS, ROCE], (a, b)
    for a, b in [(0, 4), (3, 4), (1, 7), (8, 12)]:
        assert protocols_between(a, b) == [PCIE, ROCE], (a, b)
    assert protocols_between(0, 8) == [ROCE]


def test_inference_series_has_pcie_inside_a_server(product):
    product("Atlas inference series")
    assert protocols_between(0, 1) == [PCIE, ROCE]
    assert protocols_between(0, 7) == [PCIE, ROCE]
    assert protocols_between(0, 8) == [ROCE]


# -- HcclRankGraphGetLinks ------------------------------------------------------------------------------------
def test_get_links_returns_comm_links_with_endpoint_descs():
    comms = _init_all("Atlas 800T A2", 16)
    ret, links = HcclRankGraphGetLinks(comms[0], 0, 1, 2)
    assert ret == 0
    assert [link.linkAttr.linkProtocol for link in links] == [HCCS, HCCS_ONLY, ROCE]
    for link in links:
        assert isinstance(link, pyhcomm.CommLink)
        src, dst = link.srcEndpointDesc, link.dstEndpointDesc
        assert isinstance(src, pyhcomm.EndpointDesc) and isinstance(dst, pyhcomm.EndpointDesc)
        assert src.protocol == dst.protocol == link.linkAttr.linkProtocol
        assert src.loc.locType == dst.loc.locType == EndpointLocType.ENDPOINT_LOC_TYPE_DEVICE
        assert (src.loc.devPhyId, src.loc.serverIdx) == (1, 0)
        assert (dst.loc.devPhyId, dst.loc.serverIdx) == (2, 0)
        assert src.commAddr != dst.commAddr
    roce = links[2]
    assert roce.srcEndpointDesc.commAddr.type == CommAddrType.COMM_ADDR_TYPE_IP_V4


def test_comm_link_attributes_are_the_raw_union():
    """pyhccl reads ``CommLink.linkAttrRaws``: linkProtocol (int32 at 0), hop (uint8 at 4), the
    rest 0xFF as CommLinkInit leaves it; the header carries COMM_LINK_MAGIC_WORD."""
    comms = _init_all("Atlas 800T A2", 16)
    _, links = HcclRankGraphGetLinks(comms[0], 0, 0, 8)
    raw = links[0].linkAttrRaws
    assert isinstance(raw, bytes) and len(raw) == 128
    assert raw[:5] == int(ROCE).to_bytes(4, "little") + b"\x01" and raw[5:] == b"\xff" * 123
    assert (links[0].header.version, links[0].header.magicWord) == (1, 0x0F0E0F0F)
    fresh = pyhcomm.CommLink()
    assert fresh.linkAttrRaws == bytes(128) and fresh.linkAttr.linkProtocol == 0      # pyhccl's zero default
    assert roce_addr_bytes(links[0]) == bytes([192, 168, 0, 1])


def roce_addr_bytes(link):
    """The IPv4 address of a RoCE link's source, as the first 4 bytes of ``CommAddr.raws``."""
    return link.srcEndpointDesc.commAddr.raws[:4]


def test_get_links_across_a2_servers_is_roce_between_the_two_servers():
    comms = _init_all("Atlas 800T A2", 16)
    ret, links = HcclRankGraphGetLinks(comms[3], 0, 0, 8)
    assert ret == 0
    (link,) = links
    assert link.linkAttr.linkProtocol == ROCE
    s, d = link.srcEndpointDesc, link.dstEndpointDesc
    assert (s.loc.serverIdx, s.loc.devPhyId) == (0, 0)
    assert (d.loc.serverIdx, d.loc.devPhyId) == (1, 0)
    assert s.commAddr.addr != d.commAddr.addr


def test_get_links_is_the_same_from_every_rank_and_mirrors_when_reversed():
    comms = _init_all("Atlas A3", 4)
    ask = [_protocols(c, 0, 1) for c in comms]
    assert ask == [[SIO, HCCS, HCCS_ONLY, ROCE]] * 4
    assert _protocols(comms[0], 1, 2) == [HCCS, HCCS_ONLY, ROCE]
    ret, fwd = HcclRankGraphGetLinks(comms[2], 0, 2, 3)
    ret2, back = HcclRankGraphGetLinks(comms[2], 0, 3, 2)
    assert ret == ret2 == 0
    for f, b in zip(fwd, back):
        assert f.srcEndpointDesc == b.dstEndpointDesc and f.dstEndpointDesc == b.srcEndpointDesc


def test_get_links_on_atlas_350_has_a_ub_ctp_link_with_eid_addresses():
    comms = _init_all("Atlas 350", 2)
    ret, links = HcclRankGraphGetLinks(comms[0], 0, 0, 1)
    assert ret == 0
    by_proto = {link.linkAttr.linkProtocol: link for link in links}
    assert list(by_proto) == UB + [ROCE]
    ctp = by_proto[P.COMM_PROTOCOL_UBC_CTP]
    assert ctp.srcEndpointDesc.commAddr.type == CommAddrType.COMM_ADDR_TYPE_EID
    assert ctp.srcEndpointDesc.loc.devPhyId == 0 and ctp.dstEndpointDesc.loc.devPhyId == 1


def test_get_links_follows_the_devices_of_the_ranks_not_the_rank_numbers():
    pyhcomm.set_product("Atlas 800T A2")
    assert acl.init() == 0
    ret, comms = HcclCommInitAll([0, 9])       # rank 1 sits on device 9, in server 1
    assert ret == 0
    assert _protocols(comms[0], 0, 1) == [ROCE]


@pytest.mark.parametrize("nranks", [2, 16])
def test_get_links_from_ranks_of_launch(nranks):
    def body(comm):
        out = {}
        for peer in (0, nranks - 1, (comm.rank + 1) % nranks):
            if peer == comm.rank:
                continue
            ret, links = HcclRankGraphGetLinks(comm.handle, 0, comm.rank, peer)
            assert ret == 0
            assert all(link.srcEndpointDesc.loc.devPhyId == comm.rank % 8 for link in links)
            out[peer] = [link.linkAttr.linkProtocol for link in links]
        return out

    results = pyhcomm.launch(body, nranks, product="Atlas 800T A2", timeout=60)
    for rank, out in enumerate(results):
        for peer, protos in out.items():
            expect = [HCCS, HCCS_ONLY, ROCE] if rank // 8 == peer // 8 else [ROCE]
            assert protos == expect, (rank, peer)


def test_get_links_rejects_bad_ranks_and_layers():
    comms = _init_all("Atlas 800T A2", 4)
    c = comms[0]
    for src, dst in [(4, 0), (0, 4), (-1, 0), (0, -1), (0, 2**32)]:
        ret, links = HcclRankGraphGetLinks(c, 0, src, dst)
        assert ret == R.HCCL_E_PARA and links == [], (src, dst)
    for layer in (2, -1):
        ret, links = HcclRankGraphGetLinks(c, layer, 0, 1)
        assert ret == R.HCCL_E_PARA and links == [], layer
    ret, (roce,) = HcclRankGraphGetLinks(c, 1, 0, 1)              # layer 1: the RoCE fabric
    assert ret == 0 and roce.linkAttr.linkProtocol == pyhcomm.COMM_PROTOCOL_ROCE
    ret, links = HcclRankGraphGetLinks(0, 0, 0, 1)
    assert ret == R.HCCL_E_PTR and links == []


def test_get_links_on_a_destroyed_communicator_is_not_found():
    comms = _init_all("Atlas 800T A2", 2)
    assert HcclCommDestroy(comms[1]) == 0
    ret, links = HcclRankGraphGetLinks(comms[1], 0, 0, 1)
    assert ret == R.HCCL_E_NOT_FOUND and links == []
