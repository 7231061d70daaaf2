"""Task kinds (pyhcomm.sim.kinds): declared once, immutable, found by name from one table; the
entries of a run carry them and the issuing thread's engine, which the record, the race report,
the replay and the trace show."""
import pickle

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.analysis import analyze
from pyhcomm.sim import kinds
from pyhcomm.sim.kinds import KINDS, Kind, Role, engine_name, named
from pyhcomm.timing import cost_model
from pyhcomm.timing.replay import replay
from pyhcomm.timing.trace import trace_events
from hcomm_testutil import D2H, host_setup, malloc

CPU_TS = "COMM_ENGINE_CPU_TS"


def test_a_kind_is_its_name_and_every_name_is_declared_once():
    assert len({str(k) for k in KINDS}) == len(KINDS)
    for k in KINDS:
        assert isinstance(k, str) and k == str(k) and named(str(k)) is k and named(k) is k
        assert hash(k) == hash(str(k)) and f"{k}" == str(k) and type(f"{k}") is str
    assert kinds.LOCAL_COPY == "LocalCopy" and {"LocalCopy": 1}[kinds.LOCAL_COPY] == 1
    with pytest.raises(KeyError, match="no task kind is called 'Copy'"):
        named("Copy")


def test_a_kind_is_immutable_and_unpickles_to_the_declaration():
    with pytest.raises(AttributeError, match="immutable"):
        kinds.WRITE.role = Role.NONE
    with pytest.raises(AttributeError, match="immutable"):
        del kinds.WRITE.cost
    assert pickle.loads(pickle.dumps(kinds.WRITE)) is kinds.WRITE
    assert pickle.loads(pickle.dumps([kinds.FENCE, kinds.READ_NBI])) == [kinds.FENCE, kinds.READ_NBI]


def test_traits_say_what_the_readers_ask():
    assert {k for k in KINDS if k.at_fence} == {"WriteNbi", "ReadNbi", "WriteWithNotifyNbi"}
    assert {k for k in KINDS if k.notify is kinds.NotifyUse.WAIT} == {
        "ThreadNotifyWait", "AclrtNotifyWait", "ChannelNotifyWait", "ChannelNotifyWaitNow", "CcuEventWait", "CcuNotifyWait",
        "CcuLoopWait"}
    assert {k.sync_edge for k in KINDS if k.role is Role.HOST_SYNC} == {"sync", "join", "drain"}
    assert kinds.WRITE_WITH_NOTIFY.role is Role.TRANSFER and kinds.WRITE_WITH_NOTIFY.notify is kinds.NotifyUse.RECORD
    assert all(k.entry in ("task", "host") and k.event is not None for k in KINDS)


def _every_kind_run():
    """A host program: thread copies and notifies, runtime copies and memsets, synchronizes."""
    _comm, stream, t = host_setup()
    src, dst = malloc(256), malloc(256)
    assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 256) == 0
    assert pyhcomm.HcommLocalCopyOnThread(t, src, dst, 128) == 0
    assert acl.rt.memcpy_async(dst, 256, src, 256, pyhcomm.ACL_MEMCPY_DEVICE_TO_DEVICE, stream) == 0
    assert acl.rt.memset_async(dst, 256, 7, 64, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return stream, t, src, dst


def test_entries_carry_their_kind_and_the_issuing_threads_engine():
    _stream, t, _src, _dst = _every_kind_run()
    rec = pyhcomm.current_sim().record
    for e in rec.entries():
        assert e.kind.__class__ is Kind and named(str(e.kind)) is e.kind and e.kind.entry == e.entry
    by_kind = {e.kind: e for e in rec.entries()}
    engine = by_kind[kinds.LOCAL_COPY].engine
    assert engine == pyhcomm.CommEngine.COMM_ENGINE_CPU_TS        # the thread's own engine object
    assert by_kind[kinds.MEMCPY_ASYNC].engine is None and by_kind[kinds.MEMSET_ASYNC].engine is None
    events = {ev.kind: ev for ev in rec.events()}
    assert events[kinds.LOCAL_COPY].engine == CPU_TS and events[kinds.MEMCPY_ASYNC].engine is None
    assert all(type(ev).__name__ == ev.kind.event.__name__ for ev in events.values())


class _Named:
    name = "TOY_ENGINE"


class _Numbered:
    def __int__(self):
        return 9


def test_an_engine_is_named_by_its_name_else_its_int_value():
    assert engine_name(None) is None and engine_name("A_NAME") == "A_NAME"
    assert engine_name(pyhcomm.CommEngine.COMM_ENGINE_AICPU_TS) == "COMM_ENGINE_AICPU_TS"
    assert engine_name(_Named()) == "TOY_ENGINE" and engine_name(_Numbered()) == 9


def test_the_replay_costs_what_an_engine_submits():
    _every_kind_run()
    sim = pyhcomm.current_sim()
    plain = cost_model(sim.runtime.product)
    mine = plain.with_values(engine_submit={CPU_TS: 40e-6})
    base, slow = replay(sim, plain), replay(sim, mine)
    copies = [i for i, ev in enumerate(base.events) if ev.kind is kinds.LOCAL_COPY]
    first, second = copies
    assert base.issue[second] - base.issue[first] == pytest.approx(plain.host_submit)
    assert slow.issue[second] - slow.issue[first] == pytest.approx(40e-6)
    others = [i for i, ev in enumerate(base.events) if ev.engine is None and ev.entry == "task"]
    assert others and all(slow.end[i] > base.end[i] for i in others)      # behind the slower submits


def test_the_trace_and_a_race_name_the_engines():
    comm, stream, t = host_setup()
    src, dst = malloc(256), malloc(256)
    assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 256) == 0
    out = np.zeros(256, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 256, dst, 256, D2H) == 0       # not synchronized first
    assert acl.rt.synchronize_stream(stream) == 0
    (f,) = analyze(pyhcomm.current_sim())
    assert f.kind == "race" and f.details["engines"] == [None, CPU_TS]     # the host's read ran first
    slices = [e for e in trace_events(replay(pyhcomm.current_sim())) if e["ph"] == "X"]
    engines = {e["name"]: e["args"].get("engine") for e in slices}
    assert engines["LocalCopy"] == CPU_TS and engines["Memcpy"] is None
