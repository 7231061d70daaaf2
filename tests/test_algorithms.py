"""The collective library's algorithm descriptors, the catalogue and the selector.

* the selector's table: which algorithm runs each collective today, each row citing where its
  rule comes from (before the selector, the flat C tier chose: ``capi/hccl_ops.py``,
  ``capi/hccl_ops_v.py``, ``collectives/group.py``);
* the catalogue and the rules agree (every rule names an algorithm that implements its
  collectives);
* a toy algorithm, added in this file at one place, runs through ``HcclAllGather`` when selected,
  with the threads and peers it declares, and the record names it;
* what a schedule declares is what its implementation issues (the closed forms read the
  schedules: tests/test_timing_validation.py holds them to the replay);
* the C tier chooses nothing and the closed forms import no implementation helper.
"""
import ast
import collections
import pathlib

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import algorithms, dispatch, selector
from pyhcomm.collectives.algorithm import (AI_CPU, ARGUMENTS, HOST, Algorithm, Call, Exchange, Implementation, Local,
                                           MeshPass, Op, Program, RingStep, Topology, every_rank)
from pyhcomm.collectives.patterns import ACK, DATA, pull, record, wait
from pyhcomm.config import Config
from pyhcomm.hcomm.local import local_copy
from hcomm_testutil import malloc, read, write
from timing_cases import WITH_SCHEDULE, arguments

pytestmark = pytest.mark.timeout(120)
SRC = pathlib.Path(pyhcomm.__file__).parent
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
KIB, MIB = 1 << 10, 1 << 20
C = Op

# -- the catalogue and the selector ---------------------------------------------------------------------------
def call_of(family, op, nranks, servers, nbytes, expansion, **more) -> Call:
    return Call(op=op, nranks=nranks, nbytes=nbytes, family=family, expansion=expansion,
                topology=Topology.fixed(servers=servers, per_server=nranks // servers), **more)


def test_every_collective_the_tiers_issue_has_a_rule_naming_an_algorithm_that_implements_it():
    """Names are unique; every rule naming an algorithm outright names one that implements its
    collectives; every collective of ARGUMENTS is covered on every product family (the table of
    HCCL's rules: tests/test_selection.py)."""
    names = [a.name for a in algorithms.CATALOGUE]
    assert len(set(names)) == len(names)
    for rule in selector.RULES:
        assert rule.source
        if isinstance(rule.algorithm, str):
            algorithm = algorithms.find(rule.algorithm)
            assert rule.ops <= algorithm.ops, (rule, algorithm.ops)
    for family in ("A2", "A3", "950", "910"):
        for op in ARGUMENTS:
            assert selector.select(call_of(family, op, 4, 1, 64, HOST)).name in names
    covered = {op for rule in selector.RULES for op in rule.ops}
    assert covered == set(ARGUMENTS)
    # every implementation runs a collective whose arguments are written down
    assert {i.op for a in algorithms.CATALOGUE for i in a.implementations} <= set(ARGUMENTS)


def test_hierarchies_are_found_by_name_and_named_in_hccl_algo_syntax():
    """``find`` composes a hierarchy from its name (once); a name that is not one is a KeyError."""
    a = algorithms.find("level0:mesh;level1:nhr")
    assert a is algorithms.find("level0:mesh;level1:nhr") and a.name == "level0:mesh;level1:nhr"
    assert {Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_REDUCE} <= a.ops
    assert Op.HCCL_CMD_REDUCE not in algorithms.find("level0:double_ring;level1:nhr").ops    # no double-ring gather
    assert algorithms.find("level0:ring;level1:ring;level2:hdr").name == "level0:ring;level1:ring;level2:hdr"
    for bad in ("level1:mesh;level0:nhr", "level0:mesh", "level0:mesh;level1:nope"):
        with pytest.raises(KeyError):
            algorithms.find(bad)
    with pytest.raises(ValueError, match="pairwise cannot run as a level"):
        algorithms.find("level0:pairwise;level1:ring")


def test_an_algorithm_implements_a_collective_once_and_names_what_it_lacks():
    impl = Implementation(Op.HCCL_CMD_ALLGATHER, print)
    with pytest.raises(ValueError, match="implements a collective twice"):
        Algorithm("twice", "", (impl, impl))
    with pytest.raises(KeyError, match="'ring' does not implement HCCL_CMD_ALLTOALL"):
        algorithms.find("ring").implementation(Op.HCCL_CMD_ALLTOALL)


def test_a_live_call_describes_its_communicator():
    """The Call the dispatcher builds: rank, size, product, expansion mode and the topology (two
    servers of 8 on Atlas A2 at 16 ranks; computed on first read)."""
    seen = {}

    def body(comm):
        call = dispatch.describe(comm.handle, Op.HCCL_CMD_ALLREDUCE, 64, data_type=4, reduce_op=0)
        seen[comm.rank] = (call.rank, call.nranks, call.family, call.product, call.expansion,
                           call.topology.servers, call.topology.per_server, call.topology.super_pods, call.data_type)

    pyhcomm.launch(body, 16, product=A2, sim=pyhcomm.current_sim())
    assert seen[5] == (5, 16, "A2", A2, HOST, 2, 8, 1, 4)
    pyhcomm.reset(product=A3)
    pyhcomm.launch(body, 4, product=A3, sim=pyhcomm.current_sim())
    assert seen[3][:5] == (3, 4, "A3", A3, AI_CPU)


# -- a toy algorithm, plugged in at one place ---------------------------------------------------------------
THREADS: list = []


def toy_allgather(ctx, send, recv, nbytes):
    """Every rank stages its input at the start of its HCCL buffer and every peer reads it (one
    loop: the test's inputs fit the buffer). One thread; records how many slaves it was given."""
    THREADS.append(len(ctx.slaves))
    t, me, n = ctx.main, ctx.rank, ctx.nranks
    peers = [p for p in range(n) if p != me]
    local_copy(t, ctx.ccl, send, nbytes)
    for p in peers:
        record(t, ctx.channel(p), ACK)                  # staged
    for p in peers:                                     # wait for p's ACK, read p's input, record p's DATA
        pull(t, ctx.channel(p), recv + p * nbytes, ctx.peer_ccl(p), nbytes)
    for p in peers:
        wait(t, ctx.channel(p), DATA)                   # every peer has read mine
    local_copy(t, recv + me * nbytes, send, nbytes)


TOY = Algorithm("toy", "every peer reads every rank's staged input", (
    Implementation(Op.HCCL_CMD_ALLGATHER, toy_allgather, slaves=lambda call: 1, peers=every_rank),))


@pytest.fixture
def toy(monkeypatch):
    """The one place: the toy joins the catalogue and a rule selects it for AllGather."""
    monkeypatch.setattr(algorithms, "CATALOGUE", algorithms.CATALOGUE + (TOY,))
    monkeypatch.setattr(selector, "RULES", (selector.Rule(TOY.ops, "toy", "tests/test_algorithms.py"),)
                        + selector.RULES)
    THREADS.clear()


def _allgather(product, nranks, count=1000):
    """HcclAllGather of ``count`` fp32 per rank; returns (every rank's output, the record)."""
    out = {}

    def body(comm):
        n, me = comm.size, comm.rank
        x = np.arange(count, dtype=np.float32) + 1000 * me
        send, recv = malloc(x.nbytes), malloc(x.nbytes * n)
        write(send, x.view(np.uint8))
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllGather(send, recv, count, pyhcomm.HCCL_DATA_TYPE_FP32, comm.handle, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        out[me] = read(recv, x.nbytes * n).view(np.float32)

    pyhcomm.reset(product=product)
    pyhcomm.launch(body, nranks, product=product, sim=pyhcomm.current_sim())
    want = np.concatenate([np.arange(count, dtype=np.float32) + 1000 * r for r in range(nranks)])
    for r in range(nranks):
        np.testing.assert_array_equal(out[r], want)
    return pyhcomm.current_sim().record


def _kinds(record) -> collections.Counter:
    return collections.Counter(e.kind for e in record.events() if e.kind in ("Read", "Write"))


@pytest.mark.parametrize("product", [A2, A3])
def test_a_toy_algorithm_runs_through_hcclallgather_when_selected(toy, product):
    record = _allgather(product, 4)
    marks = [e for e in record.events() if e.kind == "Collective"]
    assert [(e.name, e.algorithm) for e in marks] == [("HcclAllGather", "toy")] * 4
    assert _kinds(record) == {"Read": 4 * 3}            # the toy reads; the mesh writes
    assert THREADS == [1] * 4                            # the slave it declared


def test_without_the_toy_hcclallgather_runs_the_mesh():
    record = _allgather(A2, 4)
    assert {e.algorithm for e in record.events() if e.kind == "Collective"} == {"mesh"}
    assert _kinds(record) == {"Write": 4 * 3}


def test_the_record_names_the_algorithm_of_every_tier_call():
    """AllReduce (64 bytes, one server): the one-shot mesh; a send and a receive: p2p; a grouped
    send / receive: p2p at the group's end."""
    def body(comm):
        me, h = comm.rank, comm.handle
        buf = malloc(64)
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllReduce(buf, buf, 16, pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCCL_REDUCE_SUM, h, stream) == 0
        p2p = pyhcomm.HcclSend if me == 0 else pyhcomm.HcclRecv
        assert p2p(buf, 16, pyhcomm.HCCL_DATA_TYPE_FP32, 1 - me, h, stream) == 0
        assert pyhcomm.HcclGroupStart() == 0
        assert p2p(buf, 16, pyhcomm.HCCL_DATA_TYPE_FP32, 1 - me, h, stream) == 0
        assert pyhcomm.HcclGroupEnd() == 0
        assert acl.rt.synchronize_stream(stream) == 0

    pyhcomm.launch(body, 2, sim=pyhcomm.current_sim())
    marks = sorted((e.rank, e.seq, e.name, e.algorithm) for e in pyhcomm.current_sim().record.events()
                   if e.kind == "Collective")
    assert [(r, n, a) for r, _s, n, a in marks] == [
        (0, "HcclAllReduce", "mesh_oneshot"), (0, "HcclSend", "p2p"), (0, "HcclGroupEnd", "p2p"),
        (1, "HcclAllReduce", "mesh_oneshot"), (1, "HcclRecv", "p2p"), (1, "HcclGroupEnd", "p2p")]


# -- a schedule is what its implementation issues ---------------------------------------------------------------
def _expected(steps, nranks) -> list:
    """Per rank: Counter of (kind, bytes) of the data tasks the steps declare."""
    out = [collections.Counter() for _ in range(nranks)]
    kind = {"copy": "LocalCopy", "reduce": "LocalReduce"}

    def at(nbytes, r):
        return int(nbytes) if np.ndim(nbytes) == 0 else int(nbytes[r])

    for step in steps:
        for r in range(nranks):
            if isinstance(step, Local) and at(step.nbytes, r):
                out[r][(kind[step.what], at(step.nbytes, r))] += step.times
            elif isinstance(step, RingStep):
                if at(step.write, r):
                    out[r][("Write", at(step.write, r))] += 1
                if at(step.local, r):
                    out[r][(kind[step.after], at(step.local, r))] += 1
            elif isinstance(step, MeshPass):
                if step.stage:
                    out[r][("LocalCopy", step.nbytes)] += nranks - 1
                if step.nbytes:
                    out[r][("Write", step.nbytes)] += nranks - 1
            elif isinstance(step, Exchange):
                for n in step.writes[r]:
                    out[r][("Write", n)] += 1
                for n in step.locals[r]:
                    out[r][(kind[step.after], n)] += 1
            elif isinstance(step, Program):
                for task in step.ranks[r]:
                    if task[0] in ("write", "read"):
                        out[r][(task[0].capitalize(), task[3])] += 1
                    elif task[0] == "local":
                        out[r][(kind[task[2]], task[3])] += 1
    return out


@pytest.mark.parametrize("nranks,nbytes", [(5, 3 * MIB + 20), (4, 12)])
@pytest.mark.parametrize("algorithm,op", WITH_SCHEDULE, ids=[f"{a}-{o.name}" for a, o in WITH_SCHEDULE])
def test_a_schedule_declares_the_copies_reduces_and_writes_its_implementation_issues(algorithm, op, nranks, nbytes):
    """With a 2 MB HCCL buffer (several loops) and with fewer elements than ranks (empty slices)."""
    ccl = 2 * MIB
    sim = pyhcomm.Sim(Config.from_env().with_values(buffsize_mb=1, record_capacity=0), product=A2, data=False)

    def body(comm):
        n, h = comm.size, comm.handle
        send, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        recv, _ = acl.rt.malloc(max(nbytes * n, 4), 0)
        stream, _ = acl.rt.create_stream()
        rooted = op in (Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_REDUCE, Op.HCCL_CMD_SCATTER)
        dispatch.run_algorithm("case", h, stream, algorithm, dispatch.describe(h, op, nbytes, root=0 if rooted else None),
                               arguments(op, n, send, recv, nbytes))
        acl.rt.synchronize_stream(stream)

    pyhcomm.launch(body, nranks, sim=sim)
    got = [collections.Counter() for _ in range(nranks)]
    for e in sim.record.events():
        if e.kind in ("LocalCopy", "LocalReduce", "Write", "Read"):
            got[e.rank][(e.kind, e.nbytes)] += 1
    schedule = algorithms.find(algorithm).implementation(op).schedule
    assert got == _expected(schedule(nranks, nbytes, ccl, 4), nranks)


# -- who chooses, who imports what ----------------------------------------------------------------------------
def _imports(path: pathlib.Path) -> set:
    """The modules ``path`` imports from pyhcomm.collectives (relative to the package: ``algorithm``, ...)."""
    out = set()
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("pyhcomm.collectives."):
                out.add(name.split(".")[2])
    return out


def test_the_closed_forms_read_the_descriptors_and_no_implementation_helper():
    assert _imports(SRC / "timing" / "closed_form.py") == {"algorithm", "algorithms"}


def test_the_c_tier_chooses_no_algorithm():
    """The flat C tier converts arguments and calls the dispatcher: it imports no algorithm."""
    for name in ("hccl_ops.py", "hccl_ops_v.py", "hccl_group.py"):
        assert _imports(SRC / "capi" / name) <= {"dispatch", "group", "support", "algorithm"}, name


def test_the_timing_model_shows_the_algorithm_of_each_call():
    """The replay's calls and the trace's collectives track carry the algorithm of the marker."""
    from pyhcomm.timing import trace_dict
    from pyhcomm.timing.replay import replay
    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=0), product=A2, data=False)

    def body(comm):
        buf, _ = acl.rt.malloc(4096, 0)
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllReduce(buf, buf, 1024, pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCCL_REDUCE_SUM,
                                     comm.handle, stream) == 0
        assert pyhcomm.HcclAllGather(buf, buf + 1024, 64, pyhcomm.HCCL_DATA_TYPE_FP32, comm.handle, stream) == 0
        acl.rt.synchronize_stream(stream)

    pyhcomm.launch(body, 2, sim=sim)
    tl = replay(sim)
    assert [(c.name, c.algorithm) for c in tl.calls] == [("HcclAllReduce", "mesh_oneshot"), ("HcclAllGather", "mesh")]
    slices = [(e["name"], e["args"]["algorithm"]) for e in trace_dict(tl)["traceEvents"] if e.get("cat") == "collective"]
    assert sorted(slices) == [("HcclAllGather", "mesh")] * 2 + [("HcclAllReduce", "mesh_oneshot")] * 2
