"""A CCU AllGather in the style of HCCL's example 05 (``ccu/``), for the verifier's mutation suite:
one CCU thread on the user's stream, a UB_CTP CCU channel per peer, an instance assigned to the
communicator, one kernel registered once and launched ``calls`` times; the host reads its output
after every call. The kernel: pre-sync (each rank writes its output address and token into its
peers' variable slots 1 and 2 with ``WriteVariableWithNotify``, CKE 0 bits 1 and 2, and waits for
theirs), a ``Write`` of its input to every peer's output (event bit ``1 << peer``), a local copy
(its own bit), a wait for every bit, post-sync (CKE 0 bit 3 both ways).

``fault`` breaks one step (:data:`FAULTS`)."""
from __future__ import annotations

import numpy as np

import pyhcomm
from pyhcomm import acl, ccu

OUT, TOK, POST = 1, 2, 3
F32 = pyhcomm.HCCL_DATA_TYPE_FP32
#: fault -> what it breaks
FAULTS = {
    "missing_notify_wait": "the pre-sync NotifyWait is missing: the peers' slots are read before they are written",
    "wrong_mask": "the pre-sync NotifyWait waits for bit 4, which no peer records",
    "no_post_sync": "no post-sync: the kernel ends while the peers' writes into its output may be in flight",
    "write_before_pre_sync": "the Writes are issued before the pre-sync wait: they read the peers' slots too early",
    "loadarg_count_mismatch": "the host launches with one task argument fewer than the kernel loads",
    "event_wait_unrecorded": "the final EventWait also waits for a bit nothing records",
}


def _writes(arg, ev, inp, outs, toks, off, size):
    r, n = arg["rank"], arg["n"]
    src = ccu.LocalAddr(addr=inp, token=toks[r])
    for p in range(n):
        if p != r:
            dst = ccu.RemoteAddr()
            dst.addr = outs[p]
            dst.addr += off
            dst.token = toks[p]
            ccu.Write(arg["channels"][p], dst, src, size, ev, 1 << p)
    return src


def kernel(arg):
    """The CCU AllGather (see the module docstring); ``arg``: rank, n, channels (by peer), fault."""
    r, n, fault, chans = arg["rank"], arg["n"], arg["fault"], arg["channels"]
    peers = [p for p in range(n) if p != r]
    inp, off, size, ev = ccu.Variable(), ccu.Variable(), ccu.Variable(), ccu.Event()
    outs = [ccu.GetResByChannel(ccu.Variable, chans[p], OUT) if p != r else ccu.Variable() for p in range(n)]
    toks = [ccu.GetResByChannel(ccu.Variable, chans[p], TOK) if p != r else ccu.Variable() for p in range(n)]
    for i, v in enumerate((inp, outs[r], toks[r], off, size)):
        ccu.LoadArg(v, i)
    for p in peers:
        ccu.WriteVariableWithNotify(chans[p], outs[r], OUT, 0, 1 << OUT)
        ccu.WriteVariableWithNotify(chans[p], toks[r], TOK, 0, 1 << TOK)
    if fault == "write_before_pre_sync":
        src = _writes(arg, ev, inp, outs, toks, off, size)
    if fault != "missing_notify_wait":
        for p in peers:
            ccu.NotifyWait(chans[p], 0, (1 << OUT | 1 << TOK) | (1 << 4 if fault == "wrong_mask" else 0))
    if fault != "write_before_pre_sync":
        src = _writes(arg, ev, inp, outs, toks, off, size)
    mine = ccu.LocalAddr(addr=outs[r], token=toks[r])
    mine.addr += off
    ccu.LocalCopy(mine, src, size, ev, 1 << r)
    ccu.EventWait(ev, (1 << n) - 1 | (1 << n if fault == "event_wait_unrecorded" else 0))
    if fault != "no_post_sync":
        for p in peers:
            ccu.NotifyRecord(chans[p], 0, 1 << POST)
        for p in peers:
            ccu.NotifyWait(chans[p], 0, 1 << POST)


def _ok(pair):
    ret, *out = pair if isinstance(pair, tuple) else (pair,)
    assert ret == 0, f"returned {ret!r}"
    return out[0] if len(out) == 1 else out


def _channel(comm, peer):
    links = _ok(pyhcomm.HcclRankGraphGetLinks(comm.handle, 0, comm.rank, peer))
    link = next(lk for lk in links if lk.linkAttr.linkProtocol == pyhcomm.COMM_PROTOCOL_UB_CTP)
    desc = pyhcomm.HcclChannelDesc()
    _ok(pyhcomm.HcclChannelDescInit(desc))
    desc.remoteRank, desc.notifyNum, desc.channelProtocol = peer, 4, link.linkAttr.linkProtocol
    desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
    return _ok(pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_CCU, [desc]))[0]


def _instance(comm):
    desc = _ok(pyhcomm.HcommCcuInsResDescCreate(0))
    for rtype, num in ((pyhcomm.HCOMM_CCU_RES_TYPE_VARIABLE, 64), (pyhcomm.HCOMM_CCU_RES_TYPE_ADDRESS, 32),
                       (pyhcomm.HCOMM_CCU_RES_TYPE_EVENT, 4), (pyhcomm.HCOMM_CCU_RES_TYPE_CCU_THREAD, 1)):
        _ok(pyhcomm.HcommCcuInsResDescSetNum(desc, rtype, num))
    ins = _ok(pyhcomm.HcommCcuInsCreate([desc]))
    _ok(pyhcomm.HcommCcuInsResDescDestroy(desc))
    _ok(pyhcomm.HcclCommAssignCcuIns(comm.handle, ins))
    return ins


def ccu_allgather(fault=None, count: int = 64, calls: int = 2):
    """The rank body (see the module docstring); every rank's output holds each rank's ``count``
    floats (rank ``r``'s: ``r``), in rank order."""
    assert fault is None or fault in FAULTS, fault

    def body(comm):
        n, r, nbytes = comm.size, comm.rank, count * 4
        stream, _ = acl.rt.create_stream()
        send, _ = acl.rt.malloc(nbytes, 0)
        recv, _ = acl.rt.malloc(nbytes * n, 0)
        host = np.full(count, r, np.float32)
        assert acl.rt.memcpy(send, nbytes, acl.util.numpy_to_ptr(host), nbytes, 1) == 0
        thread = _ok(pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CCU, stream, 0))
        channels = {p: _channel(comm, p) for p in range(n) if p != r}
        ins = _instance(comm)
        arg = {"rank": r, "n": n, "channels": channels, "fault": fault}
        _ok(pyhcomm.HcommCcuKernelRegisterStart(ins))
        k = _ok(pyhcomm.HcommCcuKernelRegister(ins, 0, "ccu_allgather", kernel, [arg], 1))
        _ok(pyhcomm.HcommCcuKernelRegisterEnd(ins))
        token = _ok(pyhcomm.HcommCcuGetMemToken(send, nbytes))
        out = np.zeros(count * n, np.float32)
        for _ in range(calls):
            args = [send, recv, token, nbytes * r, nbytes]
            _ok(pyhcomm.HcommCcuKernelLaunch(thread, k, args, len(args) - (fault == "loadarg_count_mismatch")))
            assert acl.rt.synchronize_stream(stream) == 0
            assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, recv, out.nbytes, 2) == 0
        return out
    body.__qualname__ = body.__name__ = f"ccu_allgather_{fault or 'correct'}"
    return body
