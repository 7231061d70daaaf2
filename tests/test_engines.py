"""Engines as objects: the catalogue, the rules that read it, and a toy engine registered in one place
that runs a local copy and shows up in the record, the race detector, the replay and the trace.

The toy is the worked example of docs/architecture.md ("Adding an engine"): its whole definition
is :func:`toy_engines`, its registration the one line of the ``toy`` fixture; nothing else in
pyhcomm names it.
"""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.analysis import analyze
from pyhcomm.hcomm.resources import engines
from pyhcomm.hcomm.resources.engines import HOST, LOCAL_OPS, THREAD_SYNC, Engine, Submit, Threads
from pyhcomm.timing import trace_dict
from pyhcomm.timing.costs import US, cost_model
from pyhcomm.timing.replay import replay
from hcomm_testutil import D2H, malloc, pattern, read, write

R = pyhcomm.HcclResult
E = pyhcomm.CommEngine
TOY = 7                      # a value no CommEngine has
N = 4096


def toy_engines(product):
    """A toy engine, on every product: host-side threads on the caller's stream that run local
    copies and reduces, contexts in host memory, and a submit cost of its own (``toy_submit``)."""
    return (Engine(TOY, "TOY_ENGINE", side=HOST, context=HOST,
                   submit=Submit("toy host program", "toy_submit", default=7 * US),
                   threads=Threads(with_stream=True, notify_max=4), runs=LOCAL_OPS | THREAD_SYNC,
                   family=__name__, doc="a toy engine (tests/test_engines.py)"),)


@pytest.fixture
def toy():
    engines.register(toy_engines)          # the one place a new engine is registered (in this Sim)


def _setup():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    return comms[0], stream


def _toy_copy(stream, comm):
    """A toy thread on ``stream`` copies N bytes; returns (thread, src, dst, the data)."""
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, TOY, stream, 1)
    assert ret == R.HCCL_SUCCESS and thread
    src, dst = malloc(N), malloc(N, fill=0)
    data = write(src, pattern(N))
    assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, N) == R.HCCL_SUCCESS
    return thread, src, dst, data


# -- the toy engine, end to end -------------------------------------------------------------------------
def test_a_toy_engine_runs_a_local_copy_on_its_thread_and_the_record_names_it(toy):
    comm, stream = _setup()
    thread, _src, dst, data = _toy_copy(stream, comm)
    assert acl.rt.synchronize_stream(stream) == 0
    assert np.array_equal(read(dst, N), data)
    (copy,) = [ev for ev in pyhcomm.current_sim().record.events() if ev.kind == "LocalCopy"]
    assert (copy.engine, copy.thread, copy.side, copy.nbytes) == ("TOY_ENGINE", thread, "host", N)


def test_without_its_registration_the_toy_value_is_no_engine(caplog):
    _comm, stream = _setup()
    ret = pyhcomm.HcclThreadAcquireWithStream(_comm, TOY, stream, 1)
    assert ret == (R.HCCL_E_PARA, 0) and f"engine {TOY} is not a valid CommEngine (0..5)" in caplog.text


def test_a_racy_read_of_the_toy_copys_destination_is_reported_naming_its_engine_and_thread(toy):
    comm, stream = _setup()
    thread, _src, dst, _data = _toy_copy(stream, comm)
    out = np.zeros(N, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), N, dst, N, D2H) == 0     # not synchronized first
    assert acl.rt.synchronize_stream(stream) == 0
    (f,) = analyze(pyhcomm.current_sim())
    assert f.kind == "race" and f"of {N} bytes of rank 0's device memory at 0x{dst:x}" in f.title
    assert f.details["engines"] == [None, "TOY_ENGINE"]          # the host's read, the toy's copy
    text = f.text()
    assert "LocalCopy task #" in text and f"on rank 0 thread 0x{thread:x}" in text and "aclrtMemcpy #" in text


def test_the_replay_costs_the_toy_copy_with_the_toy_engines_submit_cost(toy):
    comm, stream = _setup()
    _toy_copy(stream, comm)
    _toy_copy(stream, comm)         # a second copy: issued after the first one's submit cost
    assert acl.rt.synchronize_stream(stream) == 0
    sim = pyhcomm.current_sim()
    model = cost_model(sim=sim)
    assert model.engine_params == {"toy_submit": 7 * US, "aiv_task": 1 * US} and model.param("toy_submit") == 7 * US

    def issue_gap(toy_submit):
        tl = replay(sim, model.with_values(toy_submit=toy_submit))
        copies = [i for i, ev in enumerate(tl.events) if ev.kind == "LocalCopy"]
        assert [tl.events[i].engine for i in copies] == ["TOY_ENGINE"] * 2
        return tl.issue[copies[1]] - tl.issue[copies[0]]

    # the gap between the two copies' issues: the first copy's submit cost (toy_submit), then the
    # host calls the program makes before the second (a memset and a memcpy: host_submit each)
    base = issue_gap(1 * US)
    assert issue_gap(51 * US) == pytest.approx(base + 50 * US)
    assert issue_gap(0.0) == pytest.approx(base - 1 * US)


def test_the_trace_shows_the_toy_engine_on_its_copy(toy, tmp_path):
    comm, stream = _setup()
    _thread, _src, _dst, _data = _toy_copy(stream, comm)
    assert acl.rt.synchronize_stream(stream) == 0
    doc = trace_dict(replay(pyhcomm.current_sim()))
    (copy,) = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == "LocalCopy"]
    assert copy["args"]["engine"] == "TOY_ENGINE" and copy["args"]["bytes"] == N


def test_an_engine_that_does_not_run_local_copies_is_refused_one(caplog):
    engines.register(lambda product: (Engine(8, "NO_COPY", HOST, HOST, Submit("x", "host_submit"),
                                             threads=Threads(with_stream=True), runs=THREAD_SYNC),))
    comm, stream = _setup()
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm, 8, stream, 1)
    assert ret == R.HCCL_SUCCESS
    src, dst = malloc(64), malloc(64)
    assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 64) == R.HCCL_E_NOT_SUPPORT
    assert f"thread 0x{thread:x} is NO_COPY" in caplog.text and "NO_COPY thread" not in caplog.text
    assert pyhcomm.HcommThreadNotifyRecordOnThread(thread, thread, 0) == R.HCCL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == 0


def test_registering_an_engine_whose_value_or_name_is_taken_is_refused_and_changes_nothing(toy):
    taken = lambda product: (Engine(int(E.COMM_ENGINE_CPU), "OTHER", HOST, HOST, Submit("x", "host_submit")),)
    with pytest.raises(ValueError, match="already taken"):
        engines.register(taken)
    assert [e.name for e in engines.engines()][-1] == "TOY_ENGINE"


def test_a_registration_belongs_to_its_sim_only(toy):
    other = pyhcomm.Sim(product="Atlas 800T A2")
    assert engines.engines(sim=other)[-1].name == "COMM_ENGINE_CCU"
    assert [e.name for e in engines.engines()][-1] == "TOY_ENGINE"
    pyhcomm.reset(product="Atlas 800T A2")                     # a new default Sim: the built-ins only
    assert engines.find(TOY) is None and len(engines.engines()) == 6


# -- the built-in catalogue -------------------------------------------------------------------------------
def test_every_comm_engine_value_has_one_description_on_every_product():
    from pyhcomm.products import PRODUCTS
    for p in PRODUCTS:
        assert [e.value for e in engines.engines(p)] == [int(e) for e in E if e >= 0]
        assert [e.name for e in engines.engines(p)] == [e.name for e in E if e >= 0]
        assert engines.collective_engine(p).name == ("COMM_ENGINE_AICPU_TS" if p.family in ("A3", "950")
                                                    else "COMM_ENGINE_CPU_TS")


def test_an_engine_compares_and_hashes_as_its_comm_engine_value():
    cpu_ts = engines.find(E.COMM_ENGINE_CPU_TS)
    assert cpu_ts == E.COMM_ENGINE_CPU_TS and cpu_ts != E.COMM_ENGINE_CPU and int(cpu_ts) == 1
    assert {cpu_ts: "x"}[E.COMM_ENGINE_CPU_TS] == "x" and E(cpu_ts) is E.COMM_ENGINE_CPU_TS


def test_host_engines_are_the_host_side_ones_and_their_contexts_live_in_host_memory(product):
    for name in ("Atlas 800T A2", "Atlas A3", "Atlas 350"):
        product(name)
        host = {e.name for e in engines.engines() if e.side == HOST}
        assert host == {"COMM_ENGINE_CPU", "COMM_ENGINE_CPU_TS", "COMM_ENGINE_CCU"}
        assert {e.name for e in engines.engines() if e.context == HOST} == host


def test_on_atlas_350_only_aicpu_ts_runs_local_operations(product):
    product("Atlas 350")
    assert [e.name for e in engines.engines() if LOCAL_OPS <= e.runs] == ["COMM_ENGINE_AICPU_TS"]


def test_the_products_listing_names_every_engine_of_every_product():
    from pyhcomm.products import PRODUCTS
    text = engines.engines_text(PRODUCTS)
    for p in PRODUCTS:
        assert p.name in text
    atlas_350 = text[text.index("Atlas 350:"):].split("\n")
    ccu = next(line for line in atlas_350 if line.strip().startswith("CCU "))
    assert "stream (64 notifies)" in ccu and "UBC_TP,UB_CTP" in ccu and "notify,channel,ccu" in ccu and "ccu_task" in ccu
