"""HCCL's selection (collectives/selector.py): a table of (product, collective, ranks, servers,
size, expansion mode) -> algorithm, each row citing the rule it exercises (a piece of the rule's
``source``), and the fallbacks of an ``HCCL_ALGO`` choice a collective cannot run.

Servers hold ``ranks / servers`` ranks each; Atlas A3 servers are whole SIO pairs of dies (the
double ring) unless a row says otherwise; ``pods`` super pods split the servers evenly.
"""
import pytest

from pyhcomm.collectives import algorithms, selector
from pyhcomm.collectives.algorithm import AI_CPU, HOST, Call, Layout, Op, Topology
from pyhcomm.enums import HcclDataType as D
from pyhcomm.enums import HcclReduceOp as R
from pyhcomm.errors import HcclError, HcclResult
from pyhcomm.topology import RankPlace

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
C = Op
FP32, I64 = D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_INT64
SUM, PROD = R.HCCL_REDUCE_SUM, R.HCCL_REDUCE_PROD
NONE = ("", "", "", "")


def algo(text: str) -> tuple:
    """The level tokens of a common HCCL_ALGO string (``"level0:NA;level1:NHR"``)."""
    from pyhcomm.defs import hccl_algo
    return hccl_algo.parse(text).every


def uneven(*sizes) -> Topology:
    """Servers of the given sizes (ranks numbered server by server)."""
    places, r = [], 0
    for s, n in enumerate(sizes):
        for local in range(n):
            places.append(RankPlace(s, local, 0, r))
            r += 1
    return Topology.of(Layout(places))


def odd_dies(servers: int, per: int) -> Topology:
    """A3 servers whose ranks are not whole SIO pairs (devices 0, 2, 4 ...: every other die)."""
    return Topology.of(Layout([RankPlace(s, 2 * i, 0, s * 16 + 2 * i) for s in range(servers) for i in range(per)]))


# (family, op, ranks, servers, bytes, expansion, extra) -> algorithm, a piece of the rule's source
TABLE = [
    # ---- Atlas A2: one server (HCCS full mesh) ----
    (("A2", C.HCCL_CMD_ALLREDUCE, 8, 1, 64 * KIB, HOST, {}), "mesh_oneshot", "AllReduceMeshSmallCountExecutor"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 8, 1, MIB, HOST, {}), "mesh", "AllReduceMeshOpbaseLoop"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 8, 1, 64 * KIB, HOST, {"data_type": I64}), "mesh", "one server"),
    (("A2", C.HCCL_CMD_ALLGATHER, 8, 1, GIB, HOST, {}), "mesh", "AllGatherMeshOpbaseExecutor"),
    (("A2", C.HCCL_CMD_BROADCAST, 8, 1, MIB, HOST, {}), "mesh", "BroadCastMeshExecutor"),
    (("A2", C.HCCL_CMD_ALLTOALL, 8, 1, MIB, HOST, {}), "mesh", "RunAlltoAllDirectFullmesh"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 1, 1, 4, HOST, {}), "mesh_oneshot", "AllReduceMeshSmallCountExecutor"),
    # ---- Atlas A2: several servers, the level-1 choice per call ----
    (("A2", C.HCCL_CMD_ALLREDUCE, 16, 2, MIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 24, 3, MIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 32, 4, MIB, HOST, {}), "level0:mesh;level1:nhr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 32, 4, GIB, HOST, {}), "pipeline", "GetDefaultAlgoLevel1V2 pipeline"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 16, 2, 64 * MIB, HOST, {"reduce_op": PROD}), "level0:mesh;level1:ring",
     "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLGATHER, 32, 4, KIB, HOST, {}), "level0:mesh;level1:nhr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLGATHER, 32, 4, 64 * KIB, HOST, {}), "pipeline", "GetDefaultAlgoLevel1V2 pipeline"),
    (("A2", C.HCCL_CMD_ALLGATHER, 16, 16, 64 * KIB, HOST, {}), "nhr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLGATHER_V, 16, 2, KIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_REDUCE_SCATTER, 24, 3, MIB, HOST, {}), "pipeline", "GetDefaultAlgoLevel1V2 pipeline"),
    (("A2", C.HCCL_CMD_REDUCE_SCATTER, 24, 3, 16 * KIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_REDUCE_SCATTER_V, 16, 2, MIB, HOST, {}), "level0:mesh;level1:nhr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_BROADCAST, 24, 3, MIB, HOST, {}), "level0:mesh;level1:hdr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_REDUCE, 24, 3, MIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_REDUCE, 32, 4, MIB, HOST, {}), "level0:mesh;level1:hdr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_SCATTER, 32, 4, MIB, HOST, {}), "level0:mesh;level1:ring", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLTOALLV, 16, 2, MIB, HOST, {}), "pairwise", "RunAlltoAllVStaged"),
    (("A2", C.HCCL_CMD_ALLTOALL, 16, 2, MIB, AI_CPU, {}), "mesh", "AI_CPU expansion runs RunAlltoAllDirectFullmesh"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 12, 0, MIB, HOST, {"topology": uneven(8, 4)}), "ring", "isNoARS"),
    (("A2", C.HCCL_CMD_ALLTOALL, 12, 0, MIB, HOST, {"topology": uneven(8, 4)}), "pairwise", "RunAlltoAllVFullMesh"),
    # ---- Atlas A2: HCCL_ALGO ----
    (("A2", C.HCCL_CMD_ALLREDUCE, 16, 2, MIB, HOST, {"algo": algo("level0:NA;level1:NHR")}),
     "level0:mesh;level1:nhr", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_BROADCAST, 24, 3, MIB, HOST, {"algo": algo("level0:NA;level1:NB")}),
     "level0:mesh;level1:nb", "*MeshExecutor"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 16, 2, KIB, HOST, {"algo": algo("level0:NA;level1:pipeline")}),
     "pipeline", "GetDefaultAlgoLevel1V2 pipeline"),
    (("A2", C.HCCL_CMD_ALLREDUCE, 12, 0, MIB, HOST, {"algo": algo("level0:null;level1:AHC"),
                                                       "topology": uneven(8, 4)}), "ahc", "SelectAlgforAHC"),
    (("A2", C.HCCL_CMD_ALLGATHER, 16, 2, MIB, HOST, {"algo": algo("level0:null;level1:AHC")}), "ahc_broke",
     "AHCAlgSelect"),
    # ---- Atlas A3 (AI CPU; servers of whole SIO pairs) ----
    (("A3", C.HCCL_CMD_ALLREDUCE, 16, 1, 64 * KIB, AI_CPU, {}), "mesh_oneshot", "AllReduceMeshSmallCountExecutor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 16, 1, 64 * MIB, AI_CPU, {}), "double_ring", "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 32, 2, 64 * MIB, AI_CPU, {}), "level0:double_ring;level1:nhr",
     "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 48, 3, 64 * MIB, AI_CPU, {}), "level0:double_ring;level1:ring",
     "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 32, 2, MIB, AI_CPU, {}), "nhr", "AllReduceComm"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 64, 4, GIB, AI_CPU, {"pods": 2}), "level0:double_ring;level1:nhr;level2:nhr",
     "level2 between super pods"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 64, 4, 128 * KIB, AI_CPU, {"pods": 2}),
     "level0:double_ring;level1:nhr;level2:nhr", "AllReduceMidCountFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 64, 4, 8 * KIB, AI_CPU, {"pods": 2}), "nhr", "AllReduceComm"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 6, 0, 64 * MIB, AI_CPU, {"topology": odd_dies(2, 3)}), "level0:ring;level1:nhr",
     "RingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 12, 0, 64 * MIB, AI_CPU, {"topology": uneven(8, 4)}), "nhr", "ARS"),
    (("A3", C.HCCL_CMD_ALLGATHER, 32, 2, 4 * MIB, AI_CPU, {}), "level0:double_ring;level1:nhr",
     "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLGATHER, 16, 1, 64 * KIB, AI_CPU, {}), "mesh", "AllGatherSmallCount"),
    (("A3", C.HCCL_CMD_ALLGATHER, 64, 4, 8 * KIB, AI_CPU, {"pods": 2}), "hdr", "AllGatherComm"),
    (("A3", C.HCCL_CMD_ALLGATHER, 64, 4, 64 * KIB, AI_CPU, {"pods": 2}), "level0:double_ring;level1:nhr;level2:nhr",
     "AllGatherMidCountFor91093Executor"),
    (("A3", C.HCCL_CMD_REDUCE_SCATTER, 32, 2, 64 * MIB, AI_CPU, {"reduce_op": PROD}), "hdr", "ReduceScatterComm"),
    (("A3", C.HCCL_CMD_REDUCE_SCATTER, 48, 3, 128 * KIB, AI_CPU, {}), "hdr", "ReduceScatterComm"),
    (("A3", C.HCCL_CMD_BROADCAST, 32, 2, MIB, AI_CPU, {}), "nhr", "BroadCastComm"),
    (("A3", C.HCCL_CMD_REDUCE_SCATTER, 16, 1, 64 * MIB, AI_CPU, {}), "double_ring", "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_REDUCE_SCATTER, 16, 1, 512 * KIB, AI_CPU, {}), "mesh", "ReduceScatterDeterExecutor"),
    (("A3", C.HCCL_CMD_BROADCAST, 32, 2, 64 * MIB, AI_CPU, {}), "level0:ring;level1:nhr", "RingFor91093Executor"),
    (("A3", C.HCCL_CMD_BROADCAST, 16, 1, MIB, AI_CPU, {}), "mesh", "BroadCastSmallCountExecutor"),
    (("A3", C.HCCL_CMD_REDUCE, 48, 3, MIB, AI_CPU, {}), "level0:ring;level1:ring", "RingFor91093Executor"),
    (("A3", C.HCCL_CMD_SCATTER, 32, 2, MIB, AI_CPU, {}), "level0:ring;level1:nhr", "RingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLTOALLV, 32, 2, MIB, AI_CPU, {}), "mesh", "RunAlltoAllDirectFullmesh"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 48, 3, 64 * MIB, AI_CPU, {"algo": algo("level0:NA;level1:H-D_R")}),
     "level0:double_ring;level1:nhr", "DoubleRingFor91093Executor"),
    (("A3", C.HCCL_CMD_ALLREDUCE, 64, 4, GIB, AI_CPU, {"pods": 2, "algo": algo("level0:NA;level1:ring;level2:ring")}),
     "level0:double_ring;level1:ring;level2:ring", "level2 between super pods"),
    # ---- Atlas 350 (AI CPU, servers of 8) ----
    (("950", C.HCCL_CMD_ALLREDUCE, 8, 1, MIB, AI_CPU, {}), "mesh_oneshot", "AicpuAllReduceSoleMeshOneShot"),
    (("950", C.HCCL_CMD_ALLREDUCE, 8, 1, 64 * MIB, AI_CPU, {}), "mesh", "one level"),
    (("950", C.HCCL_CMD_ALLREDUCE, 16, 2, MIB, AI_CPU, {}), "nhr", "AicpuAllReduceSoleNHR"),
    (("950", C.HCCL_CMD_ALLREDUCE, 16, 2, 64 * MIB, AI_CPU, {}), "level0:mesh;level1:nhr", "ParallelMeshNHR"),
    (("950", C.HCCL_CMD_ALLREDUCE, 16, 2, 64 * MIB, AI_CPU, {"data_type": I64}), "nhr", "SoleNHRAicpuReduce"),
    (("950", C.HCCL_CMD_ALLGATHER, 16, 2, 4 * MIB, AI_CPU, {}), "level0:mesh;level1:nhr", "ParallelMeshNHR"),
    (("950", C.HCCL_CMD_ALLGATHER, 16, 2, 512 * KIB, AI_CPU, {}), "nhr", "AicpuAllGatherSoleNHR"),
    (("950", C.HCCL_CMD_ALLGATHER, 32, 4, 4 * MIB, AI_CPU, {"pods": 2}), "level0:mesh;level1:nhr;level2:nhr",
     "SequenceMeshConcurNHRNHR"),
    (("950", C.HCCL_CMD_REDUCE_SCATTER, 16, 2, MIB, AI_CPU, {}), "nhr", "AicpuReduceScatterSoleNHR"),
    (("950", C.HCCL_CMD_REDUCE_SCATTER, 16, 2, 16 * MIB, AI_CPU, {}), "level0:mesh;level1:nhr", "ParallelMeshNHR"),
    (("950", C.HCCL_CMD_BROADCAST, 16, 2, MIB, AI_CPU, {}), "level0:mesh;level1:nhr", "ParallelMeshNHR"),
    (("950", C.HCCL_CMD_SCATTER, 16, 2, MIB, AI_CPU, {}), "nhr", "AicpuScatterSoleNHR"),
    (("950", C.HCCL_CMD_ALLTOALL, 16, 2, MIB, AI_CPU, {}), "mesh", "full mesh"),
    (("950", C.HCCL_CMD_ALLREDUCE, 12, 0, 64 * MIB, AI_CPU, {"topology": uneven(8, 4)}), "nhr", "level0AndLevel1"),
    # ---- the rest ----
    (("910", C.HCCL_CMD_ALLREDUCE, 16, 2, MIB, HOST, {}), "ring", "older products"),
    (("910", C.HCCL_CMD_ALLTOALL, 16, 2, MIB, HOST, {}), "pairwise", "older products"),
    (("A2", C.HCCL_CMD_BARRIER, 8, 1, 0, HOST, {}), "mesh", "notify-only"),
    (("A2", C.HCCL_CMD_SEND, 2, 1, MIB, HOST, {}), "p2p", "S2"),
    (("950", C.HCCL_CMD_BATCH_SEND_RECV, 8, 1, MIB, AI_CPU, {}), "p2p", "S2"),
]


def call_of(family, op, nranks, servers, nbytes, expansion, extra) -> Call:
    extra = dict(extra)
    pods = extra.pop("pods", 1)
    topo = extra.pop("topology", None) or Topology.fixed(servers=servers, per_server=nranks // servers, super_pods=pods)
    facts = dict(data_type=FP32, reduce_op=SUM, algo=NONE)
    facts.update(extra)
    return Call(op=op, nranks=nranks, nbytes=nbytes, family=family, expansion=expansion, topology=topo, **facts)


def _id(row):
    (family, op, ranks, servers, nbytes, _e, extra), _a, _s = row
    more = "".join(f"-{k}" for k in extra)
    return f"{family}-{Op(op).name[9:]}-{ranks}r{servers}s-{nbytes}{more}"


@pytest.mark.parametrize("facts,algorithm,source", TABLE, ids=[_id(r) for r in TABLE])
def test_the_selector_answers_as_hccl_selects(facts, algorithm, source):
    call = call_of(*facts)
    choice = selector.choose(call)
    assert choice.name == algorithm, (choice.name, choice.rule.source)
    assert source in choice.rule.source, choice.rule.source
    chosen = selector.select(call)
    assert chosen.name == algorithm and call.op in chosen.ops


def test_every_rule_names_an_algorithm_of_the_catalogue_that_runs_its_collectives():
    """Each row of the table: the algorithm exists and implements the collective; every rule is
    exercised by some row."""
    used = set()
    for facts, _algorithm, _source in TABLE:
        used.add(id(selector.choose(call_of(*facts)).rule))
    unused = [r.source for r in selector.RULES if id(r) not in used]
    assert not unused, unused


@pytest.mark.parametrize("config,op,servers,want,note", [
    ("level0:NA;level1:ring", C.HCCL_CMD_BROADCAST, 3, "level0:mesh;level1:hdr",
     "BroadCastOperator: level1 ring does not run HCCL_CMD_BROADCAST, reset to hdr."),
    ("level0:NA;level1:NHR", C.HCCL_CMD_REDUCE, 3, "level0:mesh;level1:hdr",
     "ReduceOperator: level1 nhr does not run HCCL_CMD_REDUCE, reset to hdr."),
    ("level0:NA;level1:H-D_R", C.HCCL_CMD_SCATTER, 3, "level0:mesh;level1:ring",
     "ScatterOperator: level1 hdr does not run HCCL_CMD_SCATTER, reset to ring."),
    ("level0:NA;level1:fullmesh", C.HCCL_CMD_ALLREDUCE, 2, "level0:mesh;level1:ring",
     "level1:fullmesh algo is not supported. the config is ignored."),
    ("level0:NA;level1:AHC", C.HCCL_CMD_BROADCAST, 3, "level0:mesh;level1:hdr",
     "level1:AHC does not run HCCL_CMD_BROADCAST: default algo is set."),
])
def test_an_hccl_algo_choice_a_collective_cannot_run_falls_back_with_a_note(config, op, servers, want, note):
    call = call_of("A2", op, 8 * servers, servers, MIB, HOST, {"algo": algo(config)})
    choice = selector.choose(call)
    assert choice.name == want and note in choice.notes, (choice.name, choice.notes)


def test_a_default_level_one_a_collective_cannot_run_falls_back_silently():
    """Broadcast on three A2 servers: the static default (ring) is not a Broadcast choice; HCCL resets
    it to H-D_R at every communicator init: no note here."""
    choice = selector.choose(call_of("A2", C.HCCL_CMD_BROADCAST, 24, 3, MIB, HOST, {}))
    assert choice.name == "level0:mesh;level1:hdr" and choice.notes == []


def test_atlas_350_takes_only_nhr_from_hccl_algo():
    call = call_of("950", C.HCCL_CMD_ALLREDUCE, 16, 2, 64 * MIB, AI_CPU, {"algo": algo("level0:NA;level1:ring")})
    choice = selector.choose(call)
    assert choice.name == "level0:mesh;level1:nhr"
    assert any("not supported on" in n and "(NHR only)" in n for n in choice.notes), choice.notes


def test_ahc_on_atlas_a2_needs_level0_null():
    call = call_of("A2", C.HCCL_CMD_ALLREDUCE, 16, 2, MIB, HOST, {"algo": algo("level0:NA;level1:AHC")})
    with pytest.raises(HcclError) as why:
        selector.choose(call)
    assert why.value.code == HcclResult.HCCL_E_PARA and "level0:null" in str(why.value)


def test_the_level_two_default_is_the_codes_nhr_not_the_documents():
    """A3, four super pods that are no power of two (three): HCCL_ALGO.md says the ring below 8 pods
    that are no power of two; alg_configurator.cc SetAlgoLevel2 defaults to NHR: the code wins."""
    call = call_of("A3", C.HCCL_CMD_ALLREDUCE, 96, 6, GIB, AI_CPU, {"pods": 3})
    assert selector.choose(call).name == "level0:double_ring;level1:nhr;level2:nhr"
    assert "SetAlgoLevel2" in selector.a3_level2.__doc__


def test_a_collective_no_rule_covers_is_not_supported_and_a_bad_rule_is_a_defect(monkeypatch):
    with pytest.raises(HcclError) as why:
        selector.select(Call(Op.HCCL_CMD_GATHER, 4))
    assert why.value.code == HcclResult.HCCL_E_NOT_SUPPORT
    assert "no algorithm of pyhcomm's collective library runs HCCL_CMD_GATHER" in str(why.value)
    bad = selector.Rule(frozenset({Op.HCCL_CMD_GATHER}), "star", "a wrong row")
    monkeypatch.setattr(selector, "RULES", (bad,) + selector.RULES)
    with pytest.raises(ValueError, match="names 'star', which does not implement it"):
        selector.select(Call(Op.HCCL_CMD_GATHER, 4))
    with pytest.raises(KeyError, match="no collective algorithm 'nhr_v2'"):
        algorithms.find("nhr_v2")


def test_a_rule_reads_the_calls_facts_the_first_match_wins(monkeypatch):
    """A rule with a condition, above the table: 2 servers or more and 1 MiB or more run NB flat."""
    big = selector.Rule(frozenset({Op.HCCL_CMD_ALLGATHER}), "nb", "a test rule",
                        lambda c: c.topology.servers >= 2 and c.nbytes >= MIB)
    monkeypatch.setattr(selector, "RULES", (big,) + selector.RULES)
    assert selector.select(call_of("A2", Op.HCCL_CMD_ALLGATHER, 16, 2, MIB, HOST, {})).name == "nb"
    assert selector.select(call_of("A2", Op.HCCL_CMD_ALLGATHER, 16, 2, KIB, HOST, {})).name != "nb"
    assert selector.select(call_of("A2", Op.HCCL_CMD_ALLGATHER, 8, 1, MIB, HOST, {})).name == "mesh"


# -- the expansion mode a call is selected with ------------------------------------------------------------------
def _alltoall_algorithm(mode, comm_mode=None) -> str:
    """The algorithm HcclAlltoAll ran on 16 Atlas A2 ranks in two servers, under
    HCCL_OP_EXPANSION_MODE ``mode`` (None: unset) and a communicator config's hcclOpExpansionMode."""
    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.config import Config
    from hcomm_testutil import malloc
    env = {"HCCL_OP_EXPANSION_MODE": mode} if mode else {}
    sim = pyhcomm.Sim(Config.from_env(env).with_values(devices_per_server=8), product="Atlas 800T A2")

    def body(comm):
        h = comm.handle
        if comm_mode is not None:
            cfg = pyhcomm.HcclCommConfig()
            pyhcomm.HcclCommConfigInit(cfg)
            cfg.hcclOpExpansionMode = comm_mode
            ret, _parent, h = pyhcomm.HcclCreateSubCommConfig(h, list(range(comm.size)), 1, comm.rank, cfg)
            assert ret == 0
        stream, _ = acl.rt.create_stream()
        send, recv = malloc(4 * 64 * comm.size), malloc(4 * 64 * comm.size)
        assert pyhcomm.HcclAlltoAll(send, 64, FP32, recv, 64, FP32, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0

    pyhcomm.launch(body, 16, sim=sim)
    (name,) = {e.algorithm for e in sim.record.events() if e.kind == "Collective"}
    return name


def test_hccl_op_expansion_mode_moves_the_selection_and_a_comm_config_overrides_it():
    """A2 AlltoAll: pairwise when expanded on the host (the product's default), HCCL's full mesh
    under AI_CPU expansion (alltoall_operator.cc); a communicator's hcclOpExpansionMode wins over
    the environment."""
    from pyhcomm.defs.hccl_types import HcclOpExpansionMode as X
    assert _alltoall_algorithm(None) == "pairwise"
    assert _alltoall_algorithm("HOST") == "pairwise"
    assert _alltoall_algorithm("AI_CPU") == "mesh"
    assert _alltoall_algorithm("AI_CPU", X.HCCL_OP_EXPANSION_MODE_HOST) == "pairwise"
    assert _alltoall_algorithm("AI_CPU", X.HCCL_OP_EXPANSION_MODE_AIV) == "pairwise"   # AIV: the default's choice
