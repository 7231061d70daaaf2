"""Rank tables: HcclCommInitClusterInfo, RankTable, and links that follow the table."""
import json

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
