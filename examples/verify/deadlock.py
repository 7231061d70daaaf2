"""Every rank waits for its neighbour's notify before recording its own: a wait-for cycle.

    python -m pyhcomm verify examples/verify/deadlock.py --ranks 3
"""
import pyhcomm
from pyhcomm import acl

E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol


def main(comm):
    n, me = comm.size, comm.rank
    descs = []
    for peer in ((me - 1) % n, (me + 1) % n):
        d = pyhcomm.HcclChannelDesc()
        pyhcomm.HcclChannelDescInit(d)
        d.remoteRank, d.channelProtocol, d.notifyNum = peer, P.COMM_PROTOCOL_HCCS, 1
        descs.append(d)
    _, (left, right) = pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, descs)
    stream, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    pyhcomm.HcommChannelNotifyWaitOnThread(thread, left, 0, 0)        # wait for the left neighbour ...
    pyhcomm.HcommChannelNotifyRecordOnThread(thread, right, 0)        # ... before telling the right one
    acl.rt.synchronize_stream(stream)
