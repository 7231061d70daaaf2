"""Rank tables: HcclCommInitClusterInfo, RankTable, and links that follow the table."""
import json
import re

import pytest

import pyhcomm
from pyhcomm import (COMM_PROTOCOL_HCCS, COMM_PROTOCOL_ROCE, COMM_PROTOCOL_SIO, HCCL_E_OPEN_FILE_FAILURE,
                     HCCL_E_PARA, HCCL_E_PTR, HcclCommInitClusterInfo, HcclRankGraphGetLinks, acl)
from pyhcomm.topology import RankPlace, RankTable

TWO_SERVERS = {"server_list": [
    {"server_id": "10.0.0.1", "device": [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "1"}]},
    {"server_id": "10.0.0.2", "device": [{"device_id": "0", "rank_id": "2"}, {"device_id": "1", "rank_id": "3"}]}]}


def protocols(comm, a, b):
    ret, links = HcclRankGraphGetLinks(comm.handle, 0, a, b)
    assert ret == 0
    return [link.linkAttr.linkProtocol for link in links]


def test_rank_table_parses_servers_and_super_pods(tmp_path):
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(TWO_SERVERS))
    table = RankTable.from_json(str(path))
    assert [(p.server, p.local) for p in table.places] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert RankTable.from_json(table.to_json()).places == table.places
    pods = {"super_pod_list": [{"super_pod_id": "0", "server_list": TWO_SERVERS["server_list"][:1]},
                               {"super_pod_id": "1", "server_list": TWO_SERVERS["server_list"][1:]}]}
    assert [p.super_pod for p in RankTable.from_json(pods).places] == [0, 0, 1, 1]


@pytest.mark.parametrize("bad", [{"server_list": []},
                                 {"server_list": [{"server_id": "a", "device": [{"device_id": "0", "rank_id": "1"}]}]},
                                 {"server_list": [{"server_id": "a", "device": [{"device_id": "0", "rank_id": "0"},
                                                                                {"device_id": "1", "rank_id": "0"}]}]}])
def test_malformed_rank_tables_are_refused(bad, tmp_path):
    with pytest.raises(ValueError):
        RankTable.from_json(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    acl.rt.set_device(0)
    assert HcclCommInitClusterInfo(str(path), 0)[0] == HCCL_E_PARA


def test_cluster_info_argument_errors():
    acl.rt.set_device(0)
    assert HcclCommInitClusterInfo(None, 0)[0] == HCCL_E_PTR
    assert HcclCommInitClusterInfo("/nonexistent/rank_table.json", 0)[0] == HCCL_E_OPEN_FILE_FAILURE


@pytest.mark.timeout(60)
def test_links_follow_the_rank_table_on_a2(tmp_path):
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(TWO_SERVERS))

    def body(comm):
        return [protocols(comm, comm.rank, peer) for peer in range(comm.size)]

    res = pyhcomm.launch(body, 4, product="Atlas 800T A2", rank_table=str(path), timeout=60)
    assert COMM_PROTOCOL_HCCS in res[0][1]               # same server
    assert res[1][2] == [COMM_PROTOCOL_ROCE]             # across servers: RoCE only
    assert res[2][3][0] == COMM_PROTOCOL_HCCS


@pytest.mark.timeout(60)
def test_a_rank_table_object_places_a3_dies(tmp_path):
    table = RankTable([RankPlace(0, 0, 0, 0), RankPlace(0, 1, 0, 1), RankPlace(1, 0, 1, 16)])

    def body(comm):
        return protocols(comm, 0, 1), protocols(comm, 1, 2)

    (same_npu, other_pod), *_ = pyhcomm.launch(body, 3, product="Atlas A3", rank_table=table, timeout=60)
    assert same_npu[0] == COMM_PROTOCOL_SIO              # two dies of one NPU
    assert other_pod == [COMM_PROTOCOL_ROCE]             # different super pods


# -- HCCL's rank-table formats and clusters of many servers --------------------------------------------------
def _dev(rank, local, **more):
    return {"device_id": str(local), "rank_id": str(rank), **more}


#: hicann/hccl docs/en/user_guide/cluster_info_config/rank_table_config_a3.md, "SuperPoD Mode
#: Networking": two super pods of two servers of four devices, the servers listed once at the top
A3_TWO_PODS = {
    "status": "completed", "version": "1.2", "server_count": "4",
    "server_list": [{"server_id": f"node_{s}", "host_ip": f"172.16.0.{100 + s}",
                     "device": [_dev(4 * s + k, k, super_device_id=str(4 * (s % 2) + k)) for k in range(4)]}
                    for s in range(4)],
    "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "node_0"}, {"server_id": "node_1"}]},
                       {"super_pod_id": "1", "server_list": [{"server_id": "node_2"}, {"server_id": "node_3"}]}]}

#: rank_table_config_a5.md (Ascend 950): two servers of two NPUs, layer 0 the server, layer 1 the
#: CLOS fabric joining them
A350_TWO_SERVERS = {"status": "completed", "version": "2.0", "rank_count": 4, "rank_list": [
    {"rank_id": r, "local_id": r % 2, "device_id": r % 2, "level_list": [
        {"net_layer": 0, "net_instance_id": f"az0-rack0-pod{r // 2}", "net_type": "TOPO_FILE_DESC", "net_attr": ""},
        {"net_layer": 1, "net_instance_id": "az0", "net_type": "CLOS", "net_attr": ""}]} for r in range(4)]}


def _graph(comm):
    """What the rank graph says of one rank."""
    h = comm.handle
    return {"layers": pyhcomm.HcclRankGraphGetLayers(h)[1],
            "sizes0": pyhcomm.HcclRankGraphGetInstSizeListByLayer(h, 0)[1],
            "sizes1": pyhcomm.HcclRankGraphGetInstSizeListByLayer(h, 1)[1],
            "mine0": pyhcomm.HcclRankGraphGetRanksByLayer(h, 0)[1],
            "inst0": pyhcomm.HcclRankGraphGetTopoInstsByLayer(h, 0)[1],
            "topo0": pyhcomm.HcclRankGraphGetTopoTypeByLayer(h, 0)[1]}


@pytest.mark.timeout(120)
def test_hccls_a3_super_pod_table_places_the_servers_of_two_pods_and_the_rank_graph_follows(tmp_path):
    path = tmp_path / "a3.json"
    path.write_text(json.dumps(A3_TWO_PODS))
    pyhcomm.set_product("Atlas A3")
    table = RankTable.from_json(str(path))
    assert [(p.server, p.local, p.super_pod) for p in table.places[3:5]] == [(0, 3, 0), (1, 0, 0)]
    assert (table.servers, table.super_pods) == (4, 2) and table.places[9].super_pod == 1

    def body(comm):
        return _graph(comm), protocols(comm, 0, 1), protocols(comm, 1, 5), protocols(comm, 5, 9)

    res = pyhcomm.launch(body, 16, product="Atlas A3", rank_table=str(path), timeout=120)
    graph, same_npu, other_server, other_pod = res[9]
    assert graph == {"layers": [0, 1], "sizes0": [8, 8], "sizes1": [16], "mine0": list(range(8, 16)), "inst0": [1],
                     "topo0": pyhcomm.COMM_TOPO_910_93}
    assert res[0][0]["inst0"] == [0] and res[0][0]["mine0"] == list(range(8))
    assert same_npu[0] == COMM_PROTOCOL_SIO and other_server[0] == COMM_PROTOCOL_HCCS
    assert other_pod == [COMM_PROTOCOL_ROCE]


@pytest.mark.timeout(120)
def test_an_a2_cluster_of_four_servers_is_four_layer_0_instances_joined_by_roce():
    pyhcomm.set_product("Atlas 800T A2")
    table = RankTable.cluster(4)
    assert table.nranks == 32 and table.servers == 4 and table.super_pods == 1
    assert table.to_json()["version"] == "1.0" and RankTable.from_json(table.to_json()).places == table.places

    def body(comm):
        return _graph(comm), protocols(comm, comm.rank, (comm.rank + 8) % 32), protocols(comm, 8, 15)

    res = pyhcomm.launch(body, 32, product="Atlas 800T A2", rank_table=table, timeout=120)
    for rank, (graph, across, inside) in enumerate(res):
        assert graph["sizes0"] == [8] * 4 and graph["sizes1"] == [32] and graph["inst0"] == [rank // 8]
        assert graph["mine0"] == list(range(rank // 8 * 8, rank // 8 * 8 + 8))
        assert graph["topo0"] == pyhcomm.COMM_TOPO_1DMESH
        assert across == [COMM_PROTOCOL_ROCE] and inside[0] == COMM_PROTOCOL_HCCS


@pytest.mark.timeout(120)
def test_hccls_atlas_350_table_places_servers_by_layer_0_and_super_pods_by_layer_1(tmp_path):
    pyhcomm.set_product("Atlas 350")
    table = RankTable.from_json(A350_TWO_SERVERS)
    assert [(p.server, p.local, p.super_pod) for p in table.places] == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]
    split = json.loads(json.dumps(A350_TWO_SERVERS))
    split["rank_list"][2]["level_list"][1]["net_instance_id"] = "az1"
    split["rank_list"][3]["level_list"][1]["net_instance_id"] = "az1"
    path = tmp_path / "a5.json"
    path.write_text(json.dumps(split))

    def body(comm):
        return _graph(comm)["sizes0"], protocols(comm, 0, 1), protocols(comm, 1, 2)

    sizes, same_pod, across = pyhcomm.launch(body, 4, product="Atlas 350", rank_table=str(path), timeout=120)[0]
    assert sizes == [2, 2] and same_pod[0] == pyhcomm.COMM_PROTOCOL_UBC_CTP
    assert across == [pyhcomm.COMM_PROTOCOL_UBOE, COMM_PROTOCOL_ROCE]     # UB over Ethernet, then RoCE, between pods
    assert RankTable.from_json(RankTable.from_json(split).to_json("950")).places == RankTable.from_json(split).places


def test_clusters_of_super_pods_and_their_tables_round_trip():
    pyhcomm.set_product("Atlas A3")
    pods = RankTable.cluster(256 // 16, super_pods=16 // 16)
    assert pods.nranks == 256 and pods.super_pods == 1
    big = RankTable.cluster(256, super_pods=16)
    assert big.nranks == 4096 and big.super_pods == 16 and big.places[256].super_pod == 1
    doc = big.to_json()
    assert doc["version"] == "1.2" and len(doc["super_pod_list"]) == 16 and len(doc["server_list"]) == 256
    assert RankTable.from_json(doc).places == big.places
    for bad in (dict(servers=0), dict(servers=3, super_pods=2), dict(servers=2, per_server=17)):
        with pytest.raises(ValueError, match="RankTable.cluster"):
            RankTable.cluster(**bad)


def _interleaved():
    t = json.loads(json.dumps(TWO_SERVERS))
    t["server_list"][0]["device"][1]["rank_id"], t["server_list"][1]["device"][0]["rank_id"] = "2", "1"
    return t


def _pods_apart():
    t = json.loads(json.dumps(A3_TWO_PODS))
    t["super_pod_list"][0]["server_list"][1], t["super_pod_list"][1]["server_list"][0] = \
        t["super_pod_list"][1]["server_list"][0], t["super_pod_list"][0]["server_list"][1]
    return t


@pytest.mark.parametrize("make,message", [
    (_interleaved, "not consecutive (cross-server rank_id interleaving is not supported)"),
    (lambda: {**A3_TWO_PODS, "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "node_9"}]}]},
     "names server 'node_9', which server_list does not have"),
    (lambda: {"server_list": [{"server_id": "a", "device": [_dev(0, 8)]}]}, "device_id 8 of server 'a' is outside"),
    (lambda: {"server_list": [{"server_id": "a", "device": [_dev(0, 1), _dev(1, 1)]}]}, "appears twice in server"),
    (lambda: {"rank_list": [{"rank_id": 0, "local_id": 0, "level_list": []}]}, "has no net_layer 0"),
])
def test_hccls_rank_table_rules_are_checked(make, message, tmp_path):
    pyhcomm.set_product("Atlas 800T A2")
    with pytest.raises(ValueError, match=re.escape(message)):
        RankTable.from_json(make())
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(make()))
    acl.rt.set_device(0)
    assert HcclCommInitClusterInfo(str(path), 0)[0] == HCCL_E_PARA


def test_a3_super_pods_listed_apart_are_refused():
    pyhcomm.set_product("Atlas A3")
    with pytest.raises(ValueError, match="the servers of super pod 0 are not listed together"):
        RankTable.from_json(_pods_apart())


@pytest.mark.timeout(60)
def test_a_rank_table_file_is_parsed_once_per_content(tmp_path, monkeypatch):
    """Every rank of a cluster passes the same file: it is parsed once (a parse per rank made a
    4096-rank init quadratic); a file rewritten with other servers is parsed again."""
    parsed = []
    real = RankTable.from_json.__func__
    monkeypatch.setattr(RankTable, "from_json", classmethod(lambda cls, data: parsed.append(1) or real(cls, data)))
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(TWO_SERVERS))
    first = pyhcomm.launch(lambda comm: protocols(comm, 0, 2), 4, product="Atlas 800T A2", rank_table=str(path))
    assert len(parsed) == 1
    one_server = {"server_list": [{"server_id": "a", "device": [
        {"device_id": str(k), "rank_id": str(k)} for k in range(4)]}]}
    path.write_text(json.dumps(one_server))
    second = pyhcomm.launch(lambda comm: protocols(comm, 0, 2), 4, product="Atlas 800T A2", rank_table=str(path))
    assert len(parsed) == 2
    assert first[0] == [COMM_PROTOCOL_ROCE] and COMM_PROTOCOL_HCCS in second[0]
