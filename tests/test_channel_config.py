"""Channel configs, HcclChannelQuery, HcclChannelDestroy; the calls pyhcomm does not model; the
pyhccl module helpers."""
import logging

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol


def desc(peer, protocol, notify=2):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, protocol, notify
    return d


def world(product, devices=(0, 1)):
    pyhcomm.set_product(product)
    assert acl.init() == 0
    ret, comms = pyhcomm.HcclCommInitAll(list(devices))
    assert ret == 0
    return comms


def test_query_finds_acquired_channels_only():
    c0, c1 = world("Atlas 800T A2")
    d = desc(1, P.COMM_PROTOCOL_HCCS)
    assert pyhcomm.HcclChannelQuery(c0, E.COMM_ENGINE_CPU_TS, [d]) == (0, [0])
    ret, (ch,) = pyhcomm.HcclChannelAcquire(c0, E.COMM_ENGINE_CPU_TS, [d])
    assert ret == 0
    assert pyhcomm.HcclChannelQuery(c0, E.COMM_ENGINE_CPU_TS, [d, desc(1, P.COMM_PROTOCOL_ROCE)]) == (0, [ch, 0])
    assert pyhcomm.HcclChannelQuery(c0, E.COMM_ENGINE_CPU_TS, []) == (R.HCCL_E_PARA, [])
    assert pyhcomm.HcclChannelQuery(c0, E.COMM_ENGINE_CPU_TS, [desc(0, P.COMM_PROTOCOL_HCCS)]) == (R.HCCL_E_PARA, [])


def test_channel_config_and_shared_queues(caplog):
    c0, c1 = world("Atlas 350")
    ret, cfg = pyhcomm.HcclChannelConfigCreate()
    assert ret == 0 and cfg
    assert pyhcomm.HcclChannelConfigSetInt(cfg, pyhcomm.HCCL_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE, 1) == 0
    assert pyhcomm.HcclChannelConfigSetStr(cfg, pyhcomm.HCCL_CHANNEL_CONFIG_TYPE_SHARED_QUEUE_TAG, "jetty0") == 0
    assert pyhcomm.HcclChannelConfigSetInt(cfg, pyhcomm.HCCL_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE, 2) == R.HCCL_E_PARA
    assert pyhcomm.HcclChannelConfigSetStr(cfg, pyhcomm.HCCL_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE, "x") == R.HCCL_E_PARA
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret, _ = pyhcomm.HcclChannelAcquireWithConfig(c0, E.COMM_ENGINE_AICPU_TS, [desc(1, P.COMM_PROTOCOL_UB_CTP)], cfg)
    assert ret == R.HCCL_E_NOT_SUPPORT and "shared queue is an AIV feature" in caplog.text
    assert pyhcomm.HcclChannelAcquireWithConfig(c0, E.COMM_ENGINE_AIV, [desc(1, P.COMM_PROTOCOL_ROCE)], cfg)[0] == \
        R.HCCL_E_NOT_SUPPORT
    ret, chans = pyhcomm.HcclChannelAcquireWithConfig(c0, E.COMM_ENGINE_AIV, [desc(1, P.COMM_PROTOCOL_UB_CTP)], cfg)
    assert ret == 0 and len(chans) == 1
    ret, plain = pyhcomm.HcclChannelAcquireWithConfig(c0, E.COMM_ENGINE_AICPU_TS, [desc(1, P.COMM_PROTOCOL_UB_CTP)], 0)
    assert ret == 0 and plain[0] not in chans
    assert pyhcomm.HcclChannelConfigDestroy(cfg) == 0
    assert pyhcomm.HcclChannelConfigDestroy(cfg) == R.HCCL_E_PARA


def test_destroy_closes_ccu_channels_only():
    c0, c1 = world("Atlas 350")
    ret, (ccu,) = pyhcomm.HcclChannelAcquire(c0, E.COMM_ENGINE_CCU, [desc(1, P.COMM_PROTOCOL_UB_CTP)])
    assert ret == 0
    ret, (other,) = pyhcomm.HcclChannelAcquire(c0, E.COMM_ENGINE_AICPU_TS, [desc(1, P.COMM_PROTOCOL_UB_CTP)])
    assert pyhcomm.HcclChannelDestroy(c0, [other]) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclChannelDestroy(c0, [ccu]) == 0
    assert pyhcomm.HcclChannelQuery(c0, E.COMM_ENGINE_CCU, [desc(1, P.COMM_PROTOCOL_UB_CTP)]) == (0, [0])
    assert pyhcomm.HcclChannelGetHcclBuffer(c0, ccu)[0] == R.HCCL_E_NOT_FOUND
    assert pyhcomm.HcclChannelDestroy(c0, None) == R.HCCL_E_PTR


def test_ccu_calls_off_atlas_350_return_not_support_and_say_why(caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcommCcuInsCreateDefault([0]) == (R.HCCL_E_NOT_SUPPORT, 0)     # (on Atlas 800T A2)
    assert "HcommCcuInsCreateDefault: Atlas 800T A2 has no CCU (Atlas 350 only)" in caplog.text
    try:
        pyhcomm.HcommCcuInsDestroy(1, 2)
    except TypeError:
        pass
    else:
        raise AssertionError("a wrong argument count must be a TypeError, as a binding's")
    cfg = pyhcomm.CcuLoopCfg()
    assert pyhcomm.CcuLoopCfgInit(cfg) is None and (cfg.header.magic, cfg.header.version) == (0xCC0CF000, 1)


def test_pyhccl_module_helpers():
    assert pyhcomm.has_native_library() is True and pyhcomm.load_library() == 2
    addr = pyhcomm.resolve_symbol("HcommLocalCopyOnThread")
    assert addr and addr == pyhcomm.resolve_symbol("HcommLocalCopyOnThread") != pyhcomm.resolve_symbol("HcclAllGather")
    assert pyhcomm.resolve_symbol("NoSuchSymbol") == 0 and pyhcomm.resolve_symbol("HcclRootInfo") == 0
    assert pyhcomm.resolve_symbol("load_library") == 0 and pyhcomm.resolve_symbol("data_type_size") == 0
