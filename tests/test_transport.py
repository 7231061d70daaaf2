"""The transport seam: a channel end knows its peer as a value, and bytes and remote notifies
between ranks go through the Sim's transport."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.transport.base import PeerRef, Transport
from pyhcomm.transport.local import LocalTransport


class CountingTransport(LocalTransport):
    """The in-process transport, counting what crosses it."""

    name = "counting"

    def __init__(self, sim):
        super().__init__(sim)
        self.calls = []

    def put(self, *args):
        self.calls.append("put")
        super().put(*args)

    def get(self, *args):
        self.calls.append("get")
        super().get(*args)

    def remote_notify(self, notify):
        self.calls.append("notify")
        super().remote_notify(notify)




def test_a_channel_end_holds_a_value_naming_its_peer():
    sim = pyhcomm.Sim(scheduler="coop")

    def peers(comm):
        ends = pyhcomm.hccl.channel.acquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, [_desc(1 - comm.rank)], 1)
        if comm.rank == 1:
            pyhcomm.current_sim().scheduler.run_until(lambda: ends[0].peer_ref is not None)
        return ends[0].peer_ref

    refs = pyhcomm.launch(peers, 2, sim=sim)
    assert all(isinstance(r, PeerRef) for r in refs)
    assert [r.rank for r in refs] == [1, 0] and refs[0].key == refs[1].key


def _desc(peer):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, pyhcomm.COMM_PROTOCOL_HCCS, 1
    return d


def test_writes_and_reads_between_ranks_go_through_the_sims_transport():
    sim = pyhcomm.Sim(scheduler="coop")
    sim.transport = CountingTransport(sim)

    def rank(comm):
        ch_handle = _channel(comm)
        stream, _ = acl.rt.create_stream()
        _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
        _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch_handle)
        if comm.rank == 0:
            src, _ = acl.rt.malloc(64, 0)
            back, _ = acl.rt.malloc(64, 0)
            data = np.arange(64, dtype=np.uint8)
            assert acl.rt.memcpy(src, 64, acl.util.numpy_to_ptr(data), 64, 1) == 0
            assert pyhcomm.HcommWriteOnThread(t, ch_handle, remote, src, 64) == 0
            assert pyhcomm.HcommReadOnThread(t, ch_handle, back, remote, 64) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            out = np.zeros(64, dtype=np.uint8)
            assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 64, back, 64, 2) == 0
            return out.tolist()
        return None

    out = pyhcomm.launch(rank, 2, sim=sim)
    assert out[0] == list(range(64))
    assert sim.transport.calls == ["put", "get"]


def _channel(comm):
    ret, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, [_desc(1 - comm.rank)])
    assert ret == 0
    return ch


@pytest.mark.parametrize("hook", ["publish", "peer_of", "withdraw", "put", "get", "accumulate", "remote_notify"])
def test_the_base_transport_names_each_missing_hook(hook):
    t = Transport(None)
    args = {"publish": (None, None), "put": (None,) * 5, "get": (None,) * 5, "accumulate": (None,) * 7}
    with pytest.raises(NotImplementedError, match=f"base transport: needs {hook}"):
        getattr(t, hook)(*args.get(hook, (None,)))
    assert t.progress() is False
