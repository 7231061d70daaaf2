"""A ring AllGather written by hand, twice: in the Pythonic tier (``ring_allgather``) and in the
flat C tier (``ring_allgather_c``: pyhccl's names and return codes), on Atlas 800T A2 host threads.

    python examples/ring_allgather.py                              # 4 ranks, both tiers, checked
    python -m pyhcomm verify examples/ring_allgather.py --ranks 4  # no findings
    python -m pyhcomm trace examples/ring_allgather.py -o ring.json

Every rank gives ``size`` bytes; every rank ends with all of them, rank by rank. Rank ``r``'s
HCCL buffer has a slot per rank; in step ``s`` it forwards chunk ``r - s`` (its own first) from
its slot into the same slot of the right neighbour's HCCL buffer (a one-sided write), and
receives chunk ``r - s - 1`` from the left one. Two channel notifies per step make it safe:

    rank r (one thread)                                     right neighbour r + 1
    record left's ACK  "my slot may be written"
    wait my ACK  <--------------------------------------- its "record left's ACK"
    write chunk r - s into its HCCL buffer ------------->
    record right's DATA -------------------------------->  wait DATA, copy the chunk out
    wait my DATA (from the left), copy chunk r - s - 1 out

ACK keeps a rank from writing a slot before its neighbour is ready for the step, and from setting
DATA again before the neighbour consumed the last one (a notify holds one bit).
"""
import numpy as np

import pyhcomm
from pyhcomm import acl  # real machine: import acl
from pyhcomm import *    # real machine: from pyhccl import *
from pyhcomm import Comm, Device

RANKS = 4
COUNT = 1024                 # float32 elements per rank
ACK, DATA = 0, 1             # channel notifies (HCCL's numbering)
WAIT_S = 1836                # notify wait timeout, seconds

# pyACL exports no constants: a pyACL program defines the acl header values it uses
ACL_MEM_MALLOC_HUGE_FIRST = 0                                # aclrtMemMallocPolicy
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2  # aclrtMemcpyKind


# -- the Pythonic tier --------------------------------------------------------------------------------------
def ring_allgather(comm: Comm, thread, send, recv):
    """Enqueue a ring AllGather of ``send`` into ``recv`` (``comm.size`` times as long) on ``thread``."""
    n, me, size = comm.size, comm.rank, send.size
    if n == 1:
        thread.local_copy(recv, send)
        return

    def slot(buf, k):
        return buf[k * size:(k + 1) * size]

    ccl = comm.hccl_buffer()
    right = comm.channel((me + 1) % n, notify_num=2)      # protocol: the rank graph's best link
    left = comm.channel((me - 1) % n, notify_num=2)
    theirs = right.peer_hccl_buffer()
    thread.local_copy(slot(recv, me), send)
    thread.local_copy(slot(ccl, me), send)
    for step in range(n - 1):
        out, into = (me - step) % n, (me - step - 1) % n
        left.record(thread, ACK)
        right.wait(thread, ACK, WAIT_S)
        right.write(thread, slot(theirs, out), slot(ccl, out))
        right.record(thread, DATA)
        left.wait(thread, DATA, WAIT_S)
        thread.local_copy(slot(recv, into), slot(ccl, into))


def pythonic(comm: Comm, count: int = COUNT) -> np.ndarray:
    dev = Device(comm.device)
    stream = dev.stream()
    thread = comm.thread(COMM_ENGINE_CPU_TS, stream=stream)
    send, recv = dev.malloc(count * 4), dev.malloc(count * 4 * comm.size)
    send.write(np.arange(count, dtype=np.float32) + 1000 * comm.rank)
    ring_allgather(comm, thread, send, recv)
    stream.synchronize()
    return recv.read(np.float32)


# -- the flat C tier ----------------------------------------------------------------------------------------
def check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} failed: {ret} {acl.get_recent_err_msg()}")


def channel_to(comm, rank, peer):
    """One CPU_TS channel to ``peer`` over the rank graph's best link (layer 0 lists every link, best
    first; Atlas A2's CPU_TS channels speak HCCS and RoCE)."""
    ret, links = HcclRankGraphGetLinks(comm, 0, rank, peer)
    check(ret, "HcclRankGraphGetLinks")
    link = next(lk for lk in links if lk.linkAttr.linkProtocol in (COMM_PROTOCOL_HCCS, COMM_PROTOCOL_ROCE))
    desc = HcclChannelDesc()
    check(HcclChannelDescInit(desc), "HcclChannelDescInit")
    desc.remoteRank, desc.notifyNum, desc.channelProtocol = peer, 2, link.linkAttr.linkProtocol
    desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
    ret, channels = HcclChannelAcquire(comm, COMM_ENGINE_CPU_TS, [desc])
    check(ret, "HcclChannelAcquire")
    return channels[0]


def ring_allgather_c(comm, thread, send, recv, size):
    """The same ring with HcclComm, ThreadHandle and device pointers as ints."""
    ret, me = HcclGetRankId(comm)
    check(ret, "HcclGetRankId")
    ret, n = HcclGetRankSize(comm)
    check(ret, "HcclGetRankSize")
    if n == 1:
        check(HcommLocalCopyOnThread(thread, recv, send, size), "HcommLocalCopyOnThread")
        return
    ret, ccl, _ccl_size = HcclGetHcclBuffer(comm)
    check(ret, "HcclGetHcclBuffer")
    right, left = channel_to(comm, me, (me + 1) % n), channel_to(comm, me, (me - 1) % n)
    ret, theirs, _size = HcclChannelGetHcclBuffer(comm, right)
    check(ret, "HcclChannelGetHcclBuffer")
    check(HcommLocalCopyOnThread(thread, recv + me * size, send, size), "HcommLocalCopyOnThread")
    check(HcommLocalCopyOnThread(thread, ccl + me * size, send, size), "HcommLocalCopyOnThread")
    for step in range(n - 1):
        out, into = (me - step) % n, (me - step - 1) % n
        check(HcommChannelNotifyRecordOnThread(thread, left, ACK), "HcommChannelNotifyRecordOnThread(ACK)")
        check(HcommChannelNotifyWaitOnThread(thread, right, ACK, WAIT_S), "HcommChannelNotifyWaitOnThread(ACK)")
        check(HcommWriteOnThread(thread, right, theirs + out * size, ccl + out * size, size), "HcommWriteOnThread")
        check(HcommChannelNotifyRecordOnThread(thread, right, DATA), "HcommChannelNotifyRecordOnThread(DATA)")
        check(HcommChannelNotifyWaitOnThread(thread, left, DATA, WAIT_S), "HcommChannelNotifyWaitOnThread(DATA)")
        check(HcommLocalCopyOnThread(thread, recv + into * size, ccl + into * size, size), "HcommLocalCopyOnThread")


def flat_c(comm, count: int = COUNT) -> np.ndarray:
    ret, me = HcclGetRankId(comm)
    check(ret, "HcclGetRankId")
    ret, n = HcclGetRankSize(comm)
    check(ret, "HcclGetRankSize")
    size = count * 4
    stream, ret = acl.rt.create_stream()
    check(ret, "aclrtCreateStream")
    ret, thread = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, stream, 0)
    check(ret, "HcclThreadAcquireWithStream")
    send, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    recv, ret = acl.rt.malloc(size * n, ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    host = np.arange(count, dtype=np.float32) + 1000 * me
    check(acl.rt.memcpy(send, size, acl.util.numpy_to_ptr(host), size, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    ring_allgather_c(comm, thread, send, recv, size)
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = np.zeros(count * n, dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), size * n, recv, size * n, ACL_MEMCPY_DEVICE_TO_HOST),
          "aclrtMemcpy")
    return out


# -- both, on every rank ----------------------------------------------------------------------------------------
def main(comm: Comm, count: int = COUNT):
    """A rank body for ``pyhcomm.launch`` (what ``python -m pyhcomm verify`` runs): both tiers, checked."""
    expected = np.concatenate([np.arange(count, dtype=np.float32) + 1000 * r for r in range(comm.size)])
    a = pythonic(comm, count)
    b = flat_c(comm.handle, count)     # the same channels and HCCL buffers again: the ACK handshake orders it
    assert np.array_equal(a, expected), "Pythonic ring: wrong result"
    assert np.array_equal(b, expected), "flat C ring: wrong result"
    return True


if __name__ == "__main__":
    pyhcomm.launch(main, RANKS, product="Atlas 800T A2")
    print(f"ring AllGather of {COUNT} float32 per rank on {RANKS} ranks: Pythonic and flat C tiers both correct")
