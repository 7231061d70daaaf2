"""Rank 0 tells rank 1 twice that its data landed, without waiting for rank 1 to take the first
message: a notify holds one bit, so one record can be lost, and rank 1's second wait hangs.

    python -m pyhcomm verify examples/verify/lost_record.py --ranks 2
"""
import pyhcomm
from pyhcomm import acl

E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol


def main(comm):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, P.COMM_PROTOCOL_HCCS, 1
    _, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, [d])
    stream, _ = acl.rt.create_stream()
    _, thread = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    if comm.rank == 0:
        for _round in range(2):
            pyhcomm.HcommChannelNotifyRecordOnThread(thread, ch, 0)      # "round k landed"
            acl.rt.synchronize_stream(stream)
    else:
        for _round in range(2):
            pyhcomm.HcommChannelNotifyWaitOnThread(thread, ch, 0, 0)
        acl.rt.synchronize_stream(stream)
