"""Communicator configs: HcclCommConfigInit's defaults, what each field changes, the ...Config init
calls, process settings, HcclConfigGetInfo, sub-communicators and scalable roots."""
import logging

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm import (HcclCommConfig, HcclCommConfigInit, HcclCommInitRootInfoConfig, HcclConfigGetInfo,
                     HcclGetRootInfo, HcclResult as R)
from pyhcomm.hccl import comm_config

MB = 1 << 20
NOT_SET = 0xFFFFFFFF


def config(**fields):
    cfg = HcclCommConfig()
    assert HcclCommConfigInit(cfg) is None
    for k, v in fields.items():
        setattr(cfg, k, v)
    return cfg


def one_rank(cfg):
    """A one-rank communicator made with ``cfg`` on device 0; returns ``(ret, comm)``."""
    acl.init()                                   # once per test (a second call is REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    _, root = HcclGetRootInfo()
    return HcclCommInitRootInfoConfig(1, root, 0, cfg)


def test_config_init_sets_the_c_defaults():
    cfg = HcclCommConfig()
    assert (cfg.hcclBufferSize, cfg.hcclExecTimeOut, cfg.hcclCommName) == (0, 0, "")      # pyhccl's zeros
    HcclCommConfigInit(cfg)
    assert (cfg.hcclBufferSize, cfg.hcclDeterministic, cfg.hcclExecTimeOut) == (NOT_SET, NOT_SET, -1)
    assert (cfg.hcclRdmaTrafficClass, cfg.hcclRdmaServiceLevel, cfg.hcclQos) == (NOT_SET, NOT_SET, NOT_SET)
    assert (cfg.hcclOpExpansionMode, cfg.hcclSymWinMaxMemSizePerRank, cfg.hcclCommName) == (0, 16, "")
    assert HcclCommConfigInit(None) is None
    assert pyhcomm.HcclGetCommConfigCapability() == pyhcomm.HCCL_COMM_CONFIG_RESERVED == 12


def test_buffer_size_name_and_timeout_take_effect():
    ret, comm = one_rank(config(hcclBufferSize=3, hcclCommName="grad_sync", hcclExecTimeOut=40))
    assert ret == 0
    assert pyhcomm.HcclGetHcclBuffer(comm)[2] == 2 * 3 * MB
    assert pyhcomm.HcclGetCommName(comm) == (0, "grad_sync")
    c = pyhcomm.current_sim().handles.comms.get(comm)
    assert comm_config.exec_timeout(c) == 40
    assert pyhcomm.HcclCommGetHandleWithName("grad_sync") == (0, comm)


def test_config_get_info_bytes():
    ret, comm = one_rank(config(hcclOpExpansionMode=pyhcomm.HCCL_OP_EXPANSION_MODE_HOST, hcclDeterministic=1,
                                hcclAlgo="level0:ring"))
    assert ret == 0
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_OP_EXPANSION_MODE, 4) == (0, b"\x02\0\0\0")   # HOST
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_DETERMINISTIC, 4) == (0, b"\x01\0\0\0")
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_HCCL_ALGO, 16) == (0, b"level0:ring" + bytes(5))
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_DETERMINISTIC, 8) == (R.HCCL_E_PARA, b"")
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_HCCL_ALGO, 11) == (R.HCCL_E_PARA, b"")  # no room for NUL
    assert HcclConfigGetInfo(comm, 99, 4) == (R.HCCL_E_PARA, b"")


@pytest.mark.parametrize("fields,code,words", [
    (dict(hcclBufferSize=0), R.HCCL_E_PARA, "hcclBufferSize 0"),
    (dict(hcclExecTimeOut=-5), R.HCCL_E_PARA, "hcclExecTimeOut"),
    (dict(hcclOpExpansionMode=9), R.HCCL_E_PARA, "not an HcclOpExpansionMode"),
    (dict(hcclOpExpansionMode=pyhcomm.HCCL_OP_EXPANSION_MODE_CCU_MS), R.HCCL_E_NOT_SUPPORT, "CCU"),
    (dict(hcclDeterministic=3), R.HCCL_E_PARA, "hcclDeterministic 3"),
    (dict(hcclRdmaServiceLevel=8), R.HCCL_E_PARA, "hcclRdmaServiceLevel 8"),
    (dict(hcclCommName="x" * 128), R.HCCL_E_PARA, "hcclCommName"),
])
def test_bad_config_fields(fields, code, words, caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert one_rank(config(**fields)) == (code, 0)
    assert "HcclCommInitRootInfoConfig" in caplog.text and words in caplog.text


def test_a_config_must_be_initialised():
    assert one_rank(HcclCommConfig()) == (R.HCCL_E_PARA, 0)
    assert one_rank(None) == (R.HCCL_E_PTR, 0)


def test_a_name_held_by_a_live_communicator_is_refused():
    assert one_rank(config(hcclCommName="dup"))[0] == 0
    _, root = HcclGetRootInfo()
    assert acl.rt.set_device(1) == 0
    assert HcclCommInitRootInfoConfig(1, root, 0, config(hcclCommName="dup")) == (R.HCCL_E_PARA, 0)


def test_process_settings():
    assert pyhcomm.HcclGetConfig(pyhcomm.HCCL_DETERMINISTIC) == (0, 0)
    assert pyhcomm.HcclSetConfig(pyhcomm.HCCL_DETERMINISTIC, 2) == 0
    assert pyhcomm.HcclGetConfig(pyhcomm.HCCL_DETERMINISTIC) == (0, 2)
    assert pyhcomm.HcclSetConfig(pyhcomm.HCCL_DETERMINISTIC, 5) == R.HCCL_E_PARA
    assert pyhcomm.HcclSetConfig(pyhcomm.HCCL_CONFIG_RESERVED, 1) == R.HCCL_E_PARA
    ret, comm = one_rank(config())
    assert HcclConfigGetInfo(comm, pyhcomm.HCCL_CONFIG_TYPE_DETERMINISTIC, 4) == (0, b"\x02\0\0\0")


# -- sub-communicators, scalable roots (several ranks) ----------------------------------------------

def _sub(comm):
    h = comm.handle
    if comm.rank == 1:               # not a member
        return pyhcomm.HcclCreateSubCommConfig(h, [3, 0, 2], 7, 0, None)[0], None
    members = [3, 0, 2]
    ret, parent, sub = pyhcomm.HcclCreateSubCommConfig(h, members, 7, members.index(comm.rank), config(hcclBufferSize=2))
    assert (ret, parent) == (0, h)
    info = (pyhcomm.HcclGetRankId(sub)[1], pyhcomm.HcclGetRankSize(sub)[1], pyhcomm.HcclGetHcclBuffer(sub)[2],
            pyhcomm.HcclGetCommName(sub)[1])
    bad = pyhcomm.HcclCreateSubCommConfig(h, members, 8, (members.index(comm.rank) + 1) % 3, None)[0]
    return ret, (info, bad)


def test_sub_communicator_of_three_of_four_ranks():
    results = pyhcomm.launch(_sub, 4, scheduler="coop")
    assert results[1] == (R.HCCL_E_PARA, None)
    names = {r[1][0][3] for r in results if r[1]}
    assert len(names) == 1 and names.pop().endswith("_sub_7")
    for rank, sub_rank in ((3, 0), (0, 1), (2, 2)):
        info, bad = results[rank][1]
        assert info[:3] == (sub_rank, 3, 2 * 2 * MB)
        assert bad == R.HCCL_E_PARA                   # subCommRankId is not the caller's index


def _scalable(comm, roots):
    return pyhcomm.HcclCommInitRootInfoScalable(2, 2, roots, comm.rank, 0, None)


def test_scalable_root_info_joins_every_rank():
    _, a = HcclGetRootInfo()
    _, b = pyhcomm.HcclGetRootInfoScalable()

    def body(comm):
        ret, h = pyhcomm.HcclCommInitRootInfoScalable(2, 2, [a, b], comm.rank, 0, None)
        return ret, pyhcomm.HcclGetRankSize(h)

    assert pyhcomm.launch(body, 2, scheduler="coop", sim=pyhcomm.current_sim()) == [(0, (0, 2))] * 2
    assert pyhcomm.HcclCommInitRootInfoScalable(2, 3, [a, b], 0, 0, None) == (R.HCCL_E_PARA, 0)


def test_cluster_info_config_applies_the_config(tmp_path):
    table = tmp_path / "rank_table.json"
    table.write_text('{"server_list": [{"server_id": "10.0.0.1", "device": [{"device_id": "0", "rank_id": "0"}]}]}')
    acl.init()
    assert acl.rt.set_device(0) == 0
    ret, comm = pyhcomm.HcclCommInitClusterInfoConfig(str(table), 0, config(hcclBufferSize=5, hcclCommName="tp"))
    assert ret == 0
    assert pyhcomm.HcclGetCommName(comm) == (0, "tp") and pyhcomm.HcclGetHcclBuffer(comm)[2] == 2 * 5 * MB
    assert pyhcomm.HcclGetRankSize(comm) == (0, 1)
    assert pyhcomm.HcclCommInitClusterInfoConfig(str(table), 0, HcclCommConfig())[0] == R.HCCL_E_PARA  # not initialised
    assert pyhcomm.HcclCommDestroy(comm) == 0
