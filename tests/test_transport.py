"""The transport seam: every effect that crosses ranks is a call on the Sim's transport, with
values only (no object of another rank crosses it): world formation, channel pairing, what an
end knows of its peer, writes, reads, reduces and remote notifies."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.sim.memory import Allocation
from pyhcomm.transport.base import PeerInfo, PeerRef, Region, RemoteNotify, Transport
from pyhcomm.transport.local import LocalTransport
from hcomm_testutil import malloc, pattern, read, write

R = pyhcomm.HcclResult
VALUES = (int, str, bool, float, type(None), PeerRef, RemoteNotify, np.dtype)


def _values_only(x) -> bool:
    if isinstance(x, (tuple, list)):
        return all(_values_only(v) for v in x)
    if isinstance(x, dict):
        return all(_values_only(k) and _values_only(v) for k, v in x.items())
    if isinstance(x, (frozenset, set)):
        return all(_values_only(v) for v in x)
    return isinstance(x, VALUES)


class RecordingTransport(LocalTransport):
    """The in-process transport, writing down every call that crosses ranks and what it returned."""

    name = "recording"

    def __init__(self, sim):
        super().__init__(sim)
        self.calls = []

    def _note(self, hook, args, result=None):
        self.calls.append((hook, args, result))
        return result

    def new_root(self):
        return self._note("new_root", (), super().new_root())

    def join(self, *args):
        super().join(*args)
        self._note("join", args)

    def members(self, root):
        return self._note("members", (root,), super().members(root))

    def barrier_arrive(self, *args):
        return self._note("barrier_arrive", args, super().barrier_arrive(*args))

    def publish(self, end, key):
        super().publish(end, key)
        self._note("publish", (end.rank, end.peer_rank, key))

    def peer_of(self, end):
        info = super().peer_of(end)
        self._note("peer_of", (end.rank,), info)
        return info

    def put(self, *args):
        self._note("put", args)
        super().put(*args)

    def get(self, *args):
        self._note("get", args)
        super().get(*args)

    def accumulate(self, *args):
        self._note("accumulate", args)
        super().accumulate(*args)

    def remote_notify(self, *args):
        return self._note("remote_notify", args, super().remote_notify(*args))


def _desc(peer, notify=2, mems=()):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, pyhcomm.COMM_PROTOCOL_HCCS, notify
    d.memHandles, d.memHandleNum = list(mems), len(mems)
    return d


def _channel(comm, notify=2):
    ret, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, [_desc(1 - comm.rank, notify)])
    assert ret == 0
    return ch


def test_a_channel_end_holds_a_value_naming_its_peer():
    sim = pyhcomm.Sim(scheduler="coop")

    def peers(comm):
        ends = pyhcomm.hcomm.resources.channel.acquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, [_desc(1 - comm.rank)], 1)
        if comm.rank == 1:
            pyhcomm.current_sim().scheduler.run_until(lambda: ends[0].peer_ref is not None)
        return ends[0].peer_ref, ends[0].peer

    out = pyhcomm.launch(peers, 2, sim=sim)
    refs = [r for r, _info in out]
    assert all(isinstance(r, PeerRef) for r in refs)
    assert [r.rank for r in refs] == [1, 0] and refs[0].key == refs[1].key
    info = out[1][1]   # what rank 1 knows of rank 0's end: values
    assert isinstance(info, PeerInfo) and info.rank == 0 and not info.closed
    assert len(info.notifies) == 2 and all(isinstance(n, RemoteNotify) for n in info.notifies)
    assert [r.label for r in info.regions] == ["its HCCL buffer"] and isinstance(info.regions[0], Region)
    assert _values_only((info.ref, info.notifies, info.regions, info.closed))


def _exchange(comm):
    """Rank 0 writes 64 bytes into rank 1's HCCL buffer, reads them back, reduces into it and
    records rank 1's notify 1; rank 1 waits for that notify and returns its buffer's first bytes."""
    ch = _channel(comm)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
    _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
    if comm.rank == 0:
        src, back = malloc(64), malloc(64)
        write(src, np.arange(64, dtype=np.uint8))
        assert pyhcomm.HcommWriteOnThread(t, ch, remote, src, 64) == 0
        assert pyhcomm.HcommReadOnThread(t, ch, back, remote, 64) == 0
        assert pyhcomm.HcommWriteReduceOnThread(t, ch, remote, src, 64, pyhcomm.HCOMM_DATA_TYPE_INT8,
                                                pyhcomm.HCOMM_REDUCE_SUM) == 0
        assert pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 1) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        return read(back, 64).tolist()
    assert pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 1, 60) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    _, mine, _ = pyhcomm.HcclGetHcclBuffer(comm.handle)
    return read(mine, 64).tolist()


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_every_cross_rank_effect_is_a_transport_call_with_values(scheduler):
    sim = pyhcomm.Sim(scheduler=scheduler)
    sim.transport = RecordingTransport(sim)
    out = pyhcomm.launch(_exchange, 2, sim=sim)
    assert out[0] == list(range(64))
    assert out[1] == [2 * i for i in range(64)]                 # written, then reduced into
    calls = sim.transport.calls
    hooks = [h for h, _a, _r in calls]
    # the world forms through the transport: one root, both ranks join with (root, n, rank, device)
    assert hooks.count("new_root") == 1
    root = calls[hooks.index("new_root")][2]
    assert sorted(a for h, a, _r in calls if h == "join") == [(root, 2, 0, 0), (root, 2, 1, 1)]
    assert [a[:2] for h, a, _r in calls if h == "publish"] in ([(0, 1), (1, 0)], [(1, 0), (0, 1)])
    # the data plane: addressed as (peer ref, remote address, own allocation, offset, n, ...)
    assert [h for h in hooks if h in ("put", "get", "accumulate", "remote_notify")] == \
        ["put", "get", "accumulate", "remote_notify"]
    for hook, args, result in calls:
        if hook in ("put", "get", "accumulate", "remote_notify"):
            peer = args[0]
            assert isinstance(peer, PeerRef) and peer.rank == 1
        if hook in ("put", "get", "accumulate"):
            assert isinstance(args[1], int)
            local = args[2]
            assert isinstance(local, Allocation) and local.device == 0   # rank 0's own memory
            assert _values_only(args[3:])
        else:                     # nothing else carries an object: arguments and results are values
            assert _values_only(args), (hook, args)
            if isinstance(result, PeerInfo):
                result = (result.ref, result.notifies, result.regions, result.closed)
            assert _values_only(result), (hook, result)
    assert calls[hooks.index("remote_notify")][2] == 1             # the generation it set


def test_the_host_barrier_goes_through_the_transport():
    sim = pyhcomm.Sim(scheduler="coop")
    sim.transport = RecordingTransport(sim)

    def body(comm):
        comm.barrier()
        comm.barrier()
        return comm.rank

    assert pyhcomm.launch(body, 3, sim=sim) == [0, 1, 2]
    rounds = sorted(r for h, _a, r in sim.transport.calls if h == "barrier_arrive")
    assert rounds == [0, 0, 0, 1, 1, 1]


def test_a_transfer_into_memory_freed_after_it_was_issued_fails_its_stream():
    """Issue-time checks see what the peer exposes now; memory freed between issue and execution
    is found by the transport when the transfer lands: the stream fails, nothing is written."""
    pyhcomm.set_product("Atlas 800T A2")
    assert acl.init() == 0
    ret, comms = pyhcomm.HcclCommInitAll([0, 1])
    assert ret == 0
    assert acl.rt.set_device(1) == 0
    user = malloc(1024)
    ret, h = pyhcomm.HcclCommMemReg(comms[1], "user", pyhcomm.CommMem(type=pyhcomm.COMM_MEM_TYPE_DEVICE, addr=user, size=1024))
    ret, (c1,) = pyhcomm.HcclChannelAcquire(comms[1], pyhcomm.COMM_ENGINE_CPU_TS, [_desc(0, mems=[h])])
    assert acl.rt.set_device(0) == 0
    ret, (c0,) = pyhcomm.HcclChannelAcquire(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, [_desc(1)])
    stream, _ = acl.rt.create_stream()
    ret, t = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, 0)
    src = malloc(64)
    write(src, pattern(64, 3))
    assert pyhcomm.HcommWriteOnThread(t, c0, user, src, 64) == 0
    assert acl.rt.set_device(1) == 0
    assert acl.rt.free(user) == 0
    assert acl.rt.set_device(0) == 0
    assert acl.rt.synchronize_stream(stream) != 0
    assert "did not land" in acl.get_recent_err_msg()
    ret, num, mems, tags = pyhcomm.HcclChannelGetRemoteMems(comms[0], c0)
    assert ret == 0 and num == 0 and tags == []                     # no longer exposed


@pytest.mark.parametrize("hook", ["new_root", "root_key", "root_of", "named_root", "join", "members", "left", "leave", "barrier_arrive",
                                  "barrier_rounds", "publish", "withdraw", "put", "get", "accumulate",
                                  "remote_notify"])
def test_the_base_transport_names_each_missing_hook(hook):
    t = Transport(None)
    nargs = {"new_root": 0, "named_root": 2, "join": 4, "leave": 2, "barrier_arrive": 2, "publish": 2, "put": 5,
             "get": 5, "accumulate": 8, "remote_notify": 2}.get(hook, 1)
    with pytest.raises(NotImplementedError, match=f"base transport: needs {hook}"):
        getattr(t, hook)(*(None,) * nargs)
    assert t.progress() is False
    assert t.fence(None) is None and t.memory_freed(None) is None



class SharingTransport(LocalTransport):
    """The in-process transport, giving device memory shared storage (as the MPI transport does
    where processes of one machine map it) and writing down the sizes asked for."""

    def __init__(self, sim):
        super().__init__(sim)
        self.sizes = []

    def device_storage(self, size):
        self.sizes.append(size)
        return self.sim.backend.allocate_shared(size) or super().device_storage(size)


def _device_and_host_memory(comm):
    sim = pyhcomm.current_sim()
    ptr, ret = acl.rt.malloc(4096 + comm.rank, 0)
    host, ret2 = acl.rt.malloc_host(4096)
    assert ret == 0 and ret2 == 0
    write(ptr, pattern(64, 7 + comm.rank))
    return (sim.backend.share(sim.memory.device_map.find(ptr).storage) is not None,
            bool((read(ptr, 64) == pattern(64, 7 + comm.rank)).all()))


def test_device_memory_is_storage_the_transport_chooses():
    """``aclrtMalloc`` and HCCL buffers take their storage from ``transport.device_storage`` (the
    backend's plain storage by default); host memory does not go through it."""
    sim = pyhcomm.Sim()
    plain = Transport(sim).device_storage(100)
    assert plain.size == 100 and sim.backend.share(plain) is None and not sim.backend.view(plain, 0, 100).any()
    sim.transport = SharingTransport(sim)
    got = pyhcomm.launch(_device_and_host_memory, 2, sim=sim)
    assert sim.transport.sizes.count(4096) == 1 and 4097 in sim.transport.sizes   # not the host mallocs
    can_share = sim.backend.allocate_shared(16) is not None     # where the platform has it
    assert got == [(can_share, True), (can_share, True)]


def test_the_whole_job_services_answer_for_one_process_on_any_transport():
    """Launching, merging records and the hang report call these on any transport: the base
    class's defaults say what one process holding every rank means."""
    sim = pyhcomm.Sim(scheduler="coop")
    for t in (Transport(sim), LocalTransport(sim)):
        assert t.processes() == (1, 0)
        assert t.gather({"part": 1}) == [{"part": 1}] and t.gather("x", root=0) == ["x"]
        assert t.gather_results(5, 3, {2: "c", 0: "a", 1: "b"}) == ["a", "b", "c"]
        assert (t.record_facts(), t.remote_hang_facts(), t.abort_origin()) == (None, None, None)
    sim.scheduler.abort_reason = None
    LocalTransport(sim).abort_all("rank 1 failed: boom", 1)
    assert sim.scheduler.abort_reason == "rank 1 failed: boom"      # this Sim's blocking calls give up


def _transport_uses(files):
    """``(file, line, attribute)`` of every ``<x>.transport.<attribute>`` (or ``_transport``) in
    ``files``, and every ``hasattr`` / ``getattr`` call that names a transport."""
    import ast
    uses, probes = [], []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                v = node.value
                name = v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else None
                if name in ("transport", "_transport"):
                    uses.append((path.name, node.lineno, node.attr))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("hasattr", "getattr") and "transport" in ast.unparse(node)):
                probes.append((path.name, node.lineno, ast.unparse(node)))
    return uses, probes


def test_every_transport_call_outside_the_transport_is_declared_on_its_base_class():
    """No caller asks which transport it has: what it calls is on :class:`Transport` (with a
    local default where the transport may not need it), and nothing probes with ``hasattr``."""
    import pathlib
    src = pathlib.Path(pyhcomm.__file__).parent
    uses, probes = _transport_uses(p for p in src.rglob("*.py") if p.relative_to(src).parts[0] != "transport")
    assert len({u[2] for u in uses}) > 20          # (the scan sees the callers)
    assert [u for u in uses if not hasattr(Transport, u[2])] == []
    assert probes == []
