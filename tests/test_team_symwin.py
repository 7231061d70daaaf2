"""Teams and symmetric memory windows."""
import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R


def team_desc(ranks, me, num=None, **fields):
    d = pyhcomm.HcclTeamCreateDesc()
    assert pyhcomm.HcclTeamCreateDescInit(d) == 0
    d.rankIds, d.rankNum, d.selfRankId = ranks, len(ranks) if num is None else num, me
    for k, v in fields.items():
        setattr(d, k, v)
    return d


def test_team_members_and_ranks():
    pyhcomm.set_product("Atlas 800T A2")
    assert acl.init() == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1, 2, 8])
    c = comms[2]
    d = team_desc([3, 2], 2)
    assert (d.protocol, d.engine, d.header.magicWord) == (-1, -1, 0x0FCF0F14)
    ret, team = pyhcomm.HcclTeamCreate(c, d)
    assert ret == 0
    assert pyhcomm.HcclTeamMemberToRank(c, team, 0) == (0, 3)
    assert pyhcomm.HcclTeamRankToMember(c, team, 2) == (0, 1)
    assert pyhcomm.HcclTeamRankToMember(c, team, 0) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclTeamMemberToRank(c, team, 2) == (R.HCCL_E_PARA, 0)
    ids = np.array([0, 2], dtype=np.uint32)                          # rankIds as a host pointer, as in C
    ret, t2 = pyhcomm.HcclTeamCreate(c, team_desc(acl.util.numpy_to_ptr(ids), 2, num=2))
    assert ret == 0 and pyhcomm.HcclTeamMemberToRank(c, t2, 1) == (0, 2)
    ret, lsa = pyhcomm.HcclTeamGetLsaTeam(c)                      # ranks 0, 1, 2 share server 0
    assert ret == 0 and pyhcomm.HcclTeamGetLsaTeam(c) == (0, lsa)
    assert [pyhcomm.HcclTeamMemberToRank(c, lsa, m)[1] for m in range(3)] == [0, 1, 2]
    assert pyhcomm.HcclTeamDestroy(lsa) == R.HCCL_E_PARA           # the communicator's
    assert pyhcomm.HcclTeamDestroy(team) == 0
    assert pyhcomm.HcclTeamMemberToRank(c, team, 0) == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclTeamCreate(c, team_desc([3, 2], 3)) == (R.HCCL_E_PARA, 0)         # not the caller
    assert pyhcomm.HcclTeamCreate(c, team_desc([2, 2], 2)) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclTeamCreate(c, team_desc([2], 2, netLayer=5)) == (R.HCCL_E_PARA, 0)
    assert pyhcomm.HcclTeamCreate(c, pyhcomm.HcclTeamCreateDesc()) == (R.HCCL_E_PARA, 0)  # not initialised


def _windows(comm):
    h = comm.handle
    ptr, _ = acl.rt.malloc(1 << 20, 0)
    ret, win = pyhcomm.HcclCommSymWinRegister(h, ptr, 1 << 20, 1)
    assert ret == 0
    comm.barrier()
    peer = 1 - comm.rank
    return (ptr, pyhcomm.HcclSymWinGetRemoteAddr(win, 64, peer), pyhcomm.HcclSymWinGetPeerPointer(win, 64, peer),
            pyhcomm.HcclCommSymWinGet(h, ptr + 100, 8), pyhcomm.HcclSymWinGetRemoteAddr(win, 1 << 20, peer),
            pyhcomm.HcclCommSymWinRegister(h, ptr, 1 << 20, 0)[0])


def test_symmetric_windows_give_the_peers_addresses():
    (p0, r0, q0, g0, bad0, flag0), (p1, r1, q1, _g, _b, _f) = pyhcomm.launch(_windows, 2, product="Atlas A3")
    assert r0 == q0 == (0, p1 + 64) and r1 == q1 == (0, p0 + 64)
    assert g0[0] == 0 and g0[2] == 100
    assert bad0 == (R.HCCL_E_PARA, 0) and flag0 == R.HCCL_E_PARA


def test_windows_are_atlas_a3_and_350_only():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (c,) = pyhcomm.HcclCommInitAll([0])
    ptr, _ = acl.rt.malloc(4096, 0)
    assert pyhcomm.HcclCommSymWinRegister(c, ptr, 4096, 1) == (R.HCCL_E_NOT_SUPPORT, 0)


def test_a_peer_that_has_not_registered_is_unavailable():
    pyhcomm.set_product("Atlas A3")
    assert acl.init() == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    assert acl.rt.set_device(0) == 0
    ptr, _ = acl.rt.malloc(4096, 0)
    ret, win = pyhcomm.HcclCommSymWinRegister(comms[0], ptr, 4096, 1)
    assert ret == 0
    assert pyhcomm.HcclSymWinGetRemoteAddr(win, 0, 1) == (R.HCCL_E_UNAVAIL, 0)
    assert pyhcomm.HcclCommSymWinDeregister(win) == 0
    assert pyhcomm.HcclSymWinGetRemoteAddr(win, 0, 1) == (R.HCCL_E_NOT_FOUND, 0)
    assert pyhcomm.HcclCommSymWinGet(comms[0], ptr, 8) == (R.HCCL_E_NOT_FOUND, 0, 0)
