"""The CCU's resource calls (ccu_res.h, hccl_ccu_res.h): every documented return code, the per-die
pools (totals, granules, contiguous blocks, a disabled die), a communicator's instances, and
HCCL_E_NOT_SUPPORT on the products without a CCU."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm import CcuResult as C
from pyhcomm import HcommCcuResType as T
from pyhcomm.hcomm.resources.engines import ccu as ccu_engine

A350 = "Atlas 350"
API = json.loads((pathlib.Path(__file__).parent / "data" / "pyhccl_api.json").read_text(encoding="utf-8"))
CCU_CALLS = sorted(n for n in API["functions"] if "Ccu" in n and not n.startswith("CcuLoop"))
PRESETS = {T.HCOMM_CCU_RES_TYPE_ADDRESS: 400, T.HCOMM_CCU_RES_TYPE_LOOP: 16, T.HCOMM_CCU_RES_TYPE_CCU_BUF: 128,
           T.HCOMM_CCU_RES_TYPE_VARIABLE: 400, T.HCOMM_CCU_RES_TYPE_EVENT: 48, T.HCOMM_CCU_RES_TYPE_CCU_THREAD: 2}


@pytest.fixture
def a350():
    pyhcomm.set_product(A350, device_count=2)
    assert acl.rt.set_device(0) == 0


def _desc(die=0, **nums):
    ret, d = pyhcomm.HcommCcuInsResDescCreate(die)
    assert ret == C.CCU_SUCCESS
    for name, n in nums.items():
        assert pyhcomm.HcommCcuInsResDescSetNum(d, T[f"HCOMM_CCU_RES_TYPE_{name}"], n) == C.CCU_SUCCESS
    return d


def _ins(*descs):
    ret, ins = pyhcomm.HcommCcuInsCreate(list(descs))
    assert ret == C.CCU_SUCCESS, ret
    return ins


def _num(d, rtype):
    ret, n = pyhcomm.HcommCcuInsResDescQueryNum(d, rtype)
    assert ret == C.CCU_SUCCESS
    return n


def test_a_die_has_five_times_example_05s_presets(a350):
    d = _desc(1)
    assert pyhcomm.HcommCcuQueryRemainResDesc(d) == C.CCU_SUCCESS
    assert {t: _num(d, t) for t in PRESETS} == {t: 5 * n for t, n in PRESETS.items()}
    assert _num(d, T.HCOMM_CCU_RES_TYPE_INSTRUCTION) == 32768
    assert pyhcomm.HcommCcuInsResDescQueryDieId(d) == (C.CCU_SUCCESS, 1)
    assert ccu_engine.die_totals(pyhcomm.current_sim().runtime.product)[T.HCOMM_CCU_RES_TYPE_EVENT] == 240


def test_descriptor_calls_and_their_codes(a350):
    assert pyhcomm.HcommCcuInsResDescCreate(2) == (C.CCU_E_PARA, 0)          # dieId outside [0, 2)
    d = _desc()
    assert all(_num(d, t) == 0 for t in PRESETS)                            # created with every count 0
    assert pyhcomm.HcommCcuInsResDescSetNum(d, 99, 1) == C.CCU_E_PARA
    assert pyhcomm.HcommCcuInsResDescSetNum(d, T.HCOMM_CCU_RES_TYPE_INVALID, 1) == C.CCU_E_PARA
    assert pyhcomm.HcommCcuInsResDescQueryNum(d, 99) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuInsResDescSetNum(d, T.HCOMM_CCU_RES_TYPE_LOOP, 1 << 40) == C.CCU_E_PARA   # not a uint32
    assert pyhcomm.HcommCcuInsResDescSetNum(d, T.HCOMM_CCU_RES_TYPE_LOOP, 5) == C.CCU_SUCCESS
    assert pyhcomm.HcommCcuInsResDescSetNum(d, T.HCOMM_CCU_RES_TYPE_LOOP, 7) == C.CCU_SUCCESS   # the last one stays
    assert _num(d, T.HCOMM_CCU_RES_TYPE_LOOP) == 7
    assert pyhcomm.HcommCcuInsResDescDestroy(d) == C.CCU_SUCCESS
    for call, extra, out in ((pyhcomm.HcommCcuInsResDescDestroy, (), None), (pyhcomm.HcommCcuInsResDescQueryDieId, (), 0),
                             (pyhcomm.HcommCcuInsResDescSetNum, (T.HCOMM_CCU_RES_TYPE_LOOP, 1), None),
                             (pyhcomm.HcommCcuInsResDescQueryNum, (T.HCOMM_CCU_RES_TYPE_LOOP,), 0),
                             (pyhcomm.HcommCcuQueryRemainResDesc, (), None)):
        got = call(d, *extra)
        assert got == (C.CCU_E_NOT_FOUND if out is None else (C.CCU_E_NOT_FOUND, out)), call.__name__


def test_no_current_device_is_an_internal_error():
    pyhcomm.set_product(A350, device_count=2)
    assert pyhcomm.HcommCcuInsResDescCreate(0) == (C.CCU_E_INTERNAL, 0)


def test_an_instance_takes_rounded_contiguous_blocks_at_once_or_not_at_all(a350):
    d = _desc(LOOP=5, VARIABLE=10, EVENT=1, CCU_THREAD=1)
    ins = _ins(d)
    q = _desc()
    assert pyhcomm.HcommCcuInsQueryResDesc(ins, q) == C.CCU_SUCCESS
    assert (_num(q, T.HCOMM_CCU_RES_TYPE_LOOP), _num(q, T.HCOMM_CCU_RES_TYPE_VARIABLE),
            _num(q, T.HCOMM_CCU_RES_TYPE_EVENT)) == (8, 16, 4)              # granules 4, 8, 4
    remain = _desc()
    assert pyhcomm.HcommCcuQueryRemainResDesc(remain) == C.CCU_SUCCESS
    assert _num(remain, T.HCOMM_CCU_RES_TYPE_VARIABLE) == 2000 - 16
    too_much = _desc(VARIABLE=1985, ADDRESS=8)                               # 1992 > 1984 left
    assert pyhcomm.HcommCcuInsCreate([too_much]) == (C.CCU_E_UNAVAIL, 0)
    assert pyhcomm.HcommCcuQueryRemainResDesc(remain) == C.CCU_SUCCESS
    assert _num(remain, T.HCOMM_CCU_RES_TYPE_ADDRESS) == 2000                # nothing was kept
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_SUCCESS
    assert pyhcomm.HcommCcuQueryRemainResDesc(remain) == C.CCU_SUCCESS
    assert _num(remain, T.HCOMM_CCU_RES_TYPE_VARIABLE) == 2000
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_E_NOT_FOUND              # destroyed twice


def test_instance_create_codes(a350):
    d0, d0b, d1 = _desc(0), _desc(0), _desc(1)
    assert pyhcomm.HcommCcuInsCreate(None) == (C.CCU_E_PTR, 0)
    assert pyhcomm.HcommCcuInsCreate([]) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuInsCreate([d0, d1, d0b]) == (C.CCU_E_PARA, 0)     # more than 2
    assert pyhcomm.HcommCcuInsCreate([d0, d0b]) == (C.CCU_E_PARA, 0)         # die 0 twice
    assert pyhcomm.HcommCcuInsCreate([12345]) == (C.CCU_E_PTR, 0)            # not a descriptor
    assert pyhcomm.HcommCcuInsCreate(5) == (C.CCU_E_PARA, 0)
    ret, ins = pyhcomm.HcommCcuInsCreate([d0, d1])
    assert ret == C.CCU_SUCCESS and ins >= 1                                  # valid handles start at 1
    assert acl.rt.set_device(1) == 0
    assert pyhcomm.HcommCcuInsCreate([d0]) == (C.CCU_E_PTR, 0)               # a descriptor of device 0
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_E_NOT_FOUND              # an instance of device 0


def test_missions_are_fused_over_the_enabled_dies(a350):
    ins = _ins(_desc(0, CCU_THREAD=3), _desc(1, CCU_THREAD=1))
    for die in (0, 1):
        q = _desc(die)
        assert pyhcomm.HcommCcuInsQueryResDesc(ins, q) == C.CCU_SUCCESS
        assert _num(q, T.HCOMM_CCU_RES_TYPE_CCU_THREAD) == 3                 # the largest asked, on both dies


def test_create_default_takes_every_resource_of_every_enabled_die(a350):
    ret, ins = pyhcomm.HcommCcuInsCreateDefault(None)
    assert ret == C.CCU_SUCCESS
    assert pyhcomm.HcommCcuInsCreateDefault(None) == (C.CCU_E_UNAVAIL, 0)
    assert pyhcomm.HcommCcuInsCreate([_desc(1, EVENT=1)]) == (C.CCU_E_UNAVAIL, 0)
    q = _desc(1)
    assert pyhcomm.HcommCcuInsQueryResDesc(ins, q) == C.CCU_SUCCESS and _num(q, T.HCOMM_CCU_RES_TYPE_EVENT) == 240
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_SUCCESS
    assert pyhcomm.HcommCcuInsCreateDefault([0, 1])[0] == C.CCU_SUCCESS     # (dieIds is not read)


def test_a_disabled_die_is_unavailable(monkeypatch):
    monkeypatch.setenv("PYHCOMM_CCU_DIES", "0")
    pyhcomm.reset()
    pyhcomm.set_product(A350, device_count=1)
    assert acl.rt.set_device(0) == 0
    d1 = _desc(1)
    assert pyhcomm.HcommCcuQueryRemainResDesc(d1) == C.CCU_E_UNAVAIL
    assert pyhcomm.HcommCcuInsCreate([d1]) == (C.CCU_E_UNAVAIL, 0)
    ret, ins = pyhcomm.HcommCcuInsCreateDefault(None)
    assert ret == C.CCU_SUCCESS
    q = _desc(1)
    assert pyhcomm.HcommCcuInsQueryResDesc(ins, q) == C.CCU_SUCCESS and _num(q, T.HCOMM_CCU_RES_TYPE_VARIABLE) == 0


def test_query_res_desc_codes(a350):
    ins, d = _ins(_desc(0, LOOP=4)), _desc(0)
    assert pyhcomm.HcommCcuInsQueryResDesc(0, d) == C.CCU_E_PARA
    assert pyhcomm.HcommCcuInsQueryResDesc(ins, 0) == C.CCU_E_PARA
    assert pyhcomm.HcommCcuInsQueryResDesc(ins + 100, d) == C.CCU_E_NOT_FOUND
    assert pyhcomm.HcommCcuInsQueryResDesc(ins, 999) == C.CCU_E_NOT_FOUND


@pytest.mark.parametrize("alloc, get_addr, rtype", [
    (pyhcomm.HcommCcuVariableAlloc, pyhcomm.HcommCcuVariableGetAddr, T.HCOMM_CCU_RES_TYPE_VARIABLE),
    (pyhcomm.HcommCcuEventAlloc, pyhcomm.HcommCcuEventGetAddr, T.HCOMM_CCU_RES_TYPE_EVENT)])
def test_reservations(a350, alloc, get_addr, rtype):
    ins = _ins(_desc(0, VARIABLE=16, EVENT=8))
    assert alloc(0, 0, 1) == (C.CCU_E_PTR, 0)
    assert alloc(ins + 100, 0, 1) == (C.CCU_E_PTR, 0)
    assert alloc(ins, 2, 1) == (C.CCU_E_PARA, 0)
    assert alloc(ins, 0, 0) == (C.CCU_E_PARA, 0)
    assert alloc(ins, 1, 1) == (C.CCU_E_UNAVAIL, 0)                           # nothing on die 1
    ret, h = alloc(ins, 0, 4)
    assert ret == C.CCU_SUCCESS and h
    addrs = [get_addr(h, i) for i in range(4)]
    assert all(r == C.CCU_SUCCESS for r, _ in addrs) and len({a for _, a in addrs}) == 4
    assert addrs[1][1] - addrs[0][1] == 8
    assert get_addr(h, 4) == (C.CCU_E_PARA, 0)
    assert get_addr(12345, 0) == (C.CCU_E_NOT_FOUND, 0)
    assert alloc(ins, 0, 100) == (C.CCU_E_UNAVAIL, 0)                         # past what the instance holds
    other = (pyhcomm.HcommCcuEventGetAddr if rtype == T.HCOMM_CCU_RES_TYPE_VARIABLE
             else pyhcomm.HcommCcuVariableGetAddr)
    assert other(h, 0) == (C.CCU_E_PARA, 0)                                   # a handle of the other kind
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_SUCCESS
    assert get_addr(h, 0) == (C.CCU_E_NOT_FOUND, 0)                           # gone with its instance


def test_cascade_counters(a350):
    plain = _ins(_desc(0, VARIABLE=8))
    assert pyhcomm.HcommCcuCascCntAlloc(plain, 0) == (C.CCU_E_UNAVAIL, 0)     # its descriptor asked for none
    ins = _ins(_desc(1, CASC_CNT=1))
    assert pyhcomm.HcommCcuCascCntAlloc(0, 1) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuCascCntAlloc(ins, 2) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuCascCntAlloc(ins + 100, 1) == (C.CCU_E_NOT_FOUND, 0)
    ret, h = pyhcomm.HcommCcuCascCntAlloc(ins, 1)
    assert ret == C.CCU_SUCCESS and h
    assert pyhcomm.HcommCcuCascCntAlloc(ins, 1) == (C.CCU_E_UNAVAIL, 0)
    ret, mem = pyhcomm.HcommCcuCascCntGetMem(h)
    assert ret == C.CCU_SUCCESS and mem.size == 1022 * 8 and mem.addr
    assert pyhcomm.HcommCcuCascCntGetMem(7)[0] == C.CCU_E_PARA
    assert pyhcomm.HcommCcuInsCreate([_desc(0, CASC_CNT=5)]) == (C.CCU_E_UNAVAIL, 0)   # 4 per die at most


def test_memory_tokens(a350):
    a, _ = acl.rt.malloc(256, 0)
    b, _ = acl.rt.malloc(4096, 0)
    ret, tok = pyhcomm.HcommCcuGetMemToken(a, 256)
    assert ret == C.CCU_SUCCESS and tok
    assert pyhcomm.HcommCcuGetMemToken(b + 64, 64) == (C.CCU_SUCCESS, tok)     # one token for the device's memory
    assert pyhcomm.HcommCcuGetMemToken(0, 8) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuGetMemToken(a, 0) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuGetMemToken(a, 257) == (C.CCU_E_RUNTIME, 0)        # past the allocation
    host = np.zeros(8, np.uint8)
    assert pyhcomm.HcommCcuGetMemToken(acl.util.numpy_to_ptr(host), 8) == (C.CCU_E_RUNTIME, 0)
    assert acl.rt.set_device(1) == 0
    c, _ = acl.rt.malloc(256, 0)
    assert pyhcomm.HcommCcuGetMemToken(c, 8)[1] != tok                       # another device's
    assert pyhcomm.HcommCcuGetRmtMemToken(0, a) == (C.CCU_E_PARA, 0)
    assert pyhcomm.HcommCcuGetRmtMemToken(0xC4A0_0000_0000, a) == (C.CCU_E_PARA, 0)


def _acquire_ccu_channel(comm, peer):
    links = pyhcomm.HcclRankGraphGetLinks(comm.handle, 0, comm.rank, peer)[1]
    link = next(lk for lk in links if lk.linkAttr.linkProtocol == pyhcomm.COMM_PROTOCOL_UB_CTP)
    desc = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(desc)
    desc.remoteRank, desc.channelProtocol = peer, link.linkAttr.linkProtocol
    desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
    ret, chans = pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_CCU, [desc])
    assert ret == 0
    return chans[0]


def test_remote_memory_token_over_a_ccu_channel():
    stride = pyhcomm.sim.memory.DEVICE_VA_STRIDE

    def body(comm):
        peer = 1 - comm.rank
        ch = _acquire_ccu_channel(comm, peer)
        mine, _ = acl.rt.malloc(64, 0)
        theirs = mine + (peer - comm.rank) * stride       # (the peer's first allocation: the same offset)
        return (pyhcomm.HcommCcuGetMemToken(mine, 64)[1], pyhcomm.HcommCcuGetRmtMemToken(ch, theirs),
                pyhcomm.HcommCcuGetRmtMemToken(ch, 0), pyhcomm.HcommCcuGetRmtMemToken(ch, mine),
                pyhcomm.HcommCcuGetMemToken(theirs, 8))

    out = pyhcomm.launch(body, 2, product=A350)
    for r in (0, 1):
        token, remote, null, local, not_mine = out[r]
        assert remote == (C.CCU_SUCCESS, out[1 - r][0]) and token != out[1 - r][0]
        assert null == (C.CCU_E_PARA, 0) and local == (C.CCU_E_PARA, 0)    # 0, or not the peer's memory
        assert not_mine == (C.CCU_E_RUNTIME, 0)                             # another device's memory


# -- a communicator's instances ---------------------------------------------------------------------------------
def _comm_calls(comm, mode=None):
    """What the HcclComm*CcuIns calls answer on ``comm`` (run on every rank of a launch)."""
    out = {"own_default": pyhcomm.HcclCommQueryCcuIns(comm.handle),
           "assigned_none": pyhcomm.HcclCommQueryAssignedCcuIns(comm.handle),
           "null": (pyhcomm.HcclCommAssignCcuIns(0, 1), pyhcomm.HcclCommQueryCcuIns(0)),
           "zero": pyhcomm.HcclCommAssignCcuIns(comm.handle, 0),
           "unknown": pyhcomm.HcclCommAssignCcuIns(comm.handle, 999)}
    ins = _ins(_desc(0, VARIABLE=8))
    second = _ins(_desc(0, VARIABLE=8))
    out["assign"] = pyhcomm.HcclCommAssignCcuIns(comm.handle, ins)
    out["again"] = pyhcomm.HcclCommAssignCcuIns(comm.handle, second)
    out["assigned"] = (pyhcomm.HcclCommQueryAssignedCcuIns(comm.handle), ins)
    out["destroy_owned"] = pyhcomm.HcommCcuInsDestroy(ins)
    out["destroy_second"] = pyhcomm.HcommCcuInsDestroy(second)
    return out


def test_assign_query_and_their_codes():
    (out,) = pyhcomm.launch(lambda comm: _comm_calls(comm), 1, product=A350)
    E = pyhcomm.HcclResult
    assert out["own_default"] == (E.HCCL_E_UNAVAIL, [])          # the default expansion mode is not a CCU one
    assert out["assigned_none"] == (E.HCCL_E_UNAVAIL, [])
    assert out["null"] == (E.HCCL_E_PTR, (E.HCCL_E_PTR, []))
    assert out["zero"] == E.HCCL_E_PARA and out["unknown"] == E.HCCL_E_NOT_FOUND
    assert out["assign"] == E.HCCL_SUCCESS and out["again"] == E.HCCL_E_PARA
    (ret, handles), ins = out["assigned"]
    assert ret == E.HCCL_SUCCESS and handles == [ins]
    assert out["destroy_owned"] == C.CCU_E_PARA and out["destroy_second"] == C.CCU_SUCCESS


def test_an_instance_is_assigned_to_one_communicator_of_its_own_device(a350):
    """Another communicator's instance: HCCL_E_PARA; an instance of another device: HCCL_E_NOT_FOUND."""
    def comm_on(device):
        assert acl.rt.set_device(device) == 0
        ret, comm = pyhcomm.HcclCommInitRootInfo(1, pyhcomm.HcclGetRootInfo()[1], 0)
        assert ret == 0
        return comm
    first, second, third = comm_on(0), comm_on(0), comm_on(1)
    assert acl.rt.set_device(0) == 0
    ins = _ins(_desc(0, VARIABLE=8))
    assert pyhcomm.HcclCommAssignCcuIns(first, ins) == pyhcomm.HCCL_SUCCESS
    assert pyhcomm.HcclCommAssignCcuIns(second, ins) == pyhcomm.HCCL_E_PARA
    assert pyhcomm.HcclCommAssignCcuIns(third, ins) == pyhcomm.HCCL_E_NOT_FOUND
    for comm in (first, second, third):
        assert pyhcomm.HcclCommDestroy(comm) == 0


def test_the_communicator_destroys_the_instance_it_owns():
    pyhcomm.set_product(A350, device_count=1)
    root = pyhcomm.HcclGetRootInfo()[1]
    assert acl.rt.set_device(0) == 0
    ret, comm = pyhcomm.HcclCommInitRootInfo(1, root, 0)
    assert ret == 0
    ins = _ins(_desc(0, ADDRESS=1000))
    assert pyhcomm.HcclCommAssignCcuIns(comm, ins) == 0
    remain = _desc(0)
    assert pyhcomm.HcommCcuQueryRemainResDesc(remain) == 0 and _num(remain, T.HCOMM_CCU_RES_TYPE_ADDRESS) == 1000
    assert pyhcomm.HcclCommDestroy(comm) == 0
    assert pyhcomm.HcommCcuQueryRemainResDesc(remain) == 0 and _num(remain, T.HCOMM_CCU_RES_TYPE_ADDRESS) == 2000
    assert pyhcomm.HcommCcuInsDestroy(ins) == C.CCU_E_NOT_FOUND


def _config(mode):
    cfg = pyhcomm.HcclCommConfig()
    pyhcomm.HcclCommConfigInit(cfg)
    cfg.hcclOpExpansionMode = mode
    return cfg


def _own_instance(mode, before=None):
    """``HcclCommQueryCcuIns`` twice on a communicator made in expansion ``mode``, ``before()`` first."""
    pyhcomm.reset()
    pyhcomm.set_product(A350, device_count=1)
    root = pyhcomm.HcclGetRootInfo()[1]
    assert acl.rt.set_device(0) == 0
    taken = before() if before else None
    ret, comm = pyhcomm.HcclCommInitRootInfoConfig(1, root, 0, _config(mode))
    assert ret == 0
    first, second = pyhcomm.HcclCommQueryCcuIns(comm), pyhcomm.HcclCommQueryCcuIns(comm)
    sizes = None
    if first[0] == 0:
        q = _desc(0)
        assert pyhcomm.HcommCcuInsQueryResDesc(first[1][0], q) == 0
        sizes = _num(q, T.HCOMM_CCU_RES_TYPE_ADDRESS)
    assert pyhcomm.HcclCommDestroy(comm) == 0
    del taken
    return first, second, sizes


def test_the_own_instance_is_made_once_from_the_expansion_mode():
    X = pyhcomm.HcclOpExpansionMode
    first, second, size = _own_instance(X.HCCL_OP_EXPANSION_MODE_CCU_SCHED)
    assert first[0] == 0 and first == second and size == 400
    first, _second, size = _own_instance(X.HCCL_OP_EXPANSION_MODE_CCU_MS)
    assert first[0] == 0 and size == 800
    # CCU_MS falls back once to CCU_SCHED's amounts; with too little left for those, HCCL_E_UNAVAIL
    first, _second, size = _own_instance(X.HCCL_OP_EXPANSION_MODE_CCU_MS,
                                         lambda: _ins(_desc(0, ADDRESS=1400), _desc(1, ADDRESS=1400)))
    assert first[0] == 0 and size == 400
    first, _second, size = _own_instance(X.HCCL_OP_EXPANSION_MODE_CCU_SCHED, lambda: pyhcomm.HcommCcuInsCreateDefault(None))
    assert first == (pyhcomm.HCCL_E_UNAVAIL, [])
    first, _second, _size = _own_instance(X.HCCL_OP_EXPANSION_MODE_AI_CPU)
    assert first == (pyhcomm.HCCL_E_UNAVAIL, [])


def test_the_environment_names_the_expansion_mode(monkeypatch):
    monkeypatch.setenv("HCCL_OP_EXPANSION_MODE", "CCU_SCHED")
    first, _second, size = _own_instance(0)
    assert first[0] == 0 and size == 400


def test_a_bad_expansion_mode_in_the_environment_is_a_parameter_error(monkeypatch):
    monkeypatch.setenv("HCCL_OP_EXPANSION_MODE", "SOMETIMES")
    first, _second, _size = _own_instance(0)
    assert first == (pyhcomm.HCCL_E_PARA, [])


def test_the_products_listing_gives_the_ccu_resources_per_die():
    from pyhcomm.products import PRODUCTS
    text = ccu_engine.resources_text(PRODUCTS)
    assert text.splitlines() == [line for line in text.splitlines() if line.startswith("Atlas 350: 2 IO dies")]
    assert "event 240 (granule 4)" in text and "ccu_thread 10 (granule 1)" in text


def test_the_products_listing_describes_the_ccu_engine_per_product():
    from pyhcomm.hcomm.resources.engines import engines_text
    from pyhcomm.products import find_product

    def row(product):
        text = engines_text([find_product(product)])
        return next(line for line in text.splitlines() if line.strip().startswith("CCU "))
    a350 = row(A350)
    for part in ("stream (64 notifies)", "UBC_TP,UB_CTP", "ccu", "ccu_task", "microcode kernels: pyhcomm.ccu"):
        assert part in a350, a350
    for product in ("Atlas 800T A2", "Atlas A3"):
        other = row(product)
        assert "none here (its calls: HCCL_E_NOT_SUPPORT)" in other and "ccu_task" not in other, other


# -- the products without a CCU ---------------------------------------------------------------------------------
def _typed(params):
    def one(kind):
        if kind in API["enums"]:
            return next(iter(getattr(pyhcomm, kind)))
        return {"int": 1, "str": "k", "object": [1]}.get(kind) if kind not in API["structs"] else \
            getattr(pyhcomm, kind)()
    return [one(k) for _, k in params]


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
def test_every_ccu_call_is_not_supported_without_a_ccu(product):
    pyhcomm.set_product(product, device_count=2)
    assert acl.rt.set_device(0) == 0
    assert len(CCU_CALLS) == 27
    for name in (n for n in CCU_CALLS if not n.startswith("HcclComm")):     # (those need a live communicator: below)
        result = getattr(pyhcomm, name)(*_typed(API["functions"][name]["params"]))
        code = result[0] if isinstance(result, tuple) else result
        assert code == pyhcomm.HCCL_E_NOT_SUPPORT == C.CCU_E_NOT_SUPPORT, name


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
def test_the_hccl_calls_are_not_supported_on_a_communicator_without_a_ccu(product):
    def body(comm):
        return (pyhcomm.HcclCommAssignCcuIns(comm.handle, 1), pyhcomm.HcclCommQueryCcuIns(comm.handle),
                pyhcomm.HcclCommQueryAssignedCcuIns(comm.handle))
    for got in pyhcomm.launch(body, 2, product=product):
        assert got == (5, (5, []), (5, []))


def test_the_ccu_expansion_modes_are_refused_without_a_ccu():
    pyhcomm.set_product("Atlas A3", device_count=2)
    X = pyhcomm.HcclOpExpansionMode
    root = pyhcomm.HcclGetRootInfo()[1]
    assert acl.rt.set_device(0) == 0
    assert pyhcomm.HcclCommInitRootInfoConfig(1, root, 0, _config(X.HCCL_OP_EXPANSION_MODE_CCU_SCHED))[0] == 5
