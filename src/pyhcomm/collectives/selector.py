"""Which algorithm runs a collective call: HCCL's selection, as rules in one table.

:func:`choose` reads :data:`RULES` top to bottom and takes the first rule that covers the call's
collective and whose condition holds for the :class:`~.algorithm.Call` (product family,
expansion mode, rank count, topology, message size, data type and operation, determinism, the
``HCCL_ALGO`` / ``hcclAlgo`` levels). A rule names an algorithm of the catalogue
(:mod:`.algorithms`), a hierarchy of them (``"level0:mesh;level1:nhr"``) or a function that names
one, and cites the HCCL source it follows (docs/algorithms.md lists them). A level that has one
rank everywhere is left out of a hierarchy's name (one server: the level-0 algorithm alone).

HCCL's sources: Atlas A2 and A3 run the legacy algorithm library (hcomm ``src/algorithm``: the
per-collective operators' ``SelectAlgfor910B`` / ``SelectAlgfor91093``, ``alg_configurator.cc``,
``coll_alg_operator.cc``); Atlas 350 the new one (hccl ``src/ops/*/selector``). The level-1
algorithm of Atlas A2 is chosen per call (``GetDefaultAlgoLevel1V2``: pipeline when its size and
task-count conditions hold, else the alpha-beta comparison of ring and NHR with HCCL's 60 us step
latency: ring for three servers or fewer, NHR above); ``HCCL_ALGO`` replaces that choice and an
algorithm a collective cannot run falls back as each operator does, with a log line (once per
message and Sim). Where the sources disagree the code wins: level 2 of Atlas A3 defaults to NHR
(``SetAlgoLevel2``), not to the ring / H-D_R of HCCL_ALGO.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..enums import HcclDataType as D
from ..enums import HcclReduceOp as R
from ..errors import log, not_support, para
from ..sim import LayerState
from ..sim import current_sim as _sim
from . import algorithms
from .algorithm import AI_CPU, Algorithm, Call, Op
from .algorithms import hierarchy

KIB, MIB = 1 << 10, 1 << 20
#: HCCL_ALGO's level names -> the catalogue's (fullmesh and pairwise are no level-1 choice of
#: the collectives but AlltoAll).
TOKENS = {"ring": "ring", "H-D_R": "hdr", "NHR": "nhr", "NHR_V1": "nhr_v1", "NB": "nb", "pipeline": "pipeline",
          "AHC": "ahc", "AHC_BROKE": "ahc_broke"}
#: SDMA inline reduce and RDMA reduce (device_capacity.cc IsSupportSDMAReduce / IsSupportRDMAReduce)
INLINE_TYPES = frozenset({D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_FP16, D.HCCL_DATA_TYPE_INT8,
                          D.HCCL_DATA_TYPE_INT16, D.HCCL_DATA_TYPE_INT32, D.HCCL_DATA_TYPE_BFP16})
INLINE_OPS = frozenset({R.HCCL_REDUCE_SUM, R.HCCL_REDUCE_MAX, R.HCCL_REDUCE_MIN})
WIDE_TYPES = frozenset({D.HCCL_DATA_TYPE_INT64, D.HCCL_DATA_TYPE_UINT64, D.HCCL_DATA_TYPE_FP64})
FFTS_CAPACITY = 65535       # HCCL_FFTS_CAPACITY: tasks of one pipeline call at most

AG, AGV, RS, RSV, AR = (Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V, Op.HCCL_CMD_REDUCE_SCATTER,
                        Op.HCCL_CMD_REDUCE_SCATTER_V, Op.HCCL_CMD_ALLREDUCE)
BCAST, REDUCE, SCATTER = Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_REDUCE, Op.HCCL_CMD_SCATTER
A2A = frozenset({Op.HCCL_CMD_ALLTOALL, Op.HCCL_CMD_ALLTOALLV, Op.HCCL_CMD_ALLTOALLVC})


def always(call: Call) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """``ops`` run on ``algorithm`` (a name, or ``algorithm(call, notes)`` returning one; notes:
    the fallback log lines) when ``when(call)``; ``source``: where the rule comes from."""

    ops: frozenset
    algorithm: object
    source: str
    when: Callable[[Call], bool] = always


@dataclass
class Choice:
    """What the selector chose for a call: the algorithm's name, the rule, HCCL's fallback lines."""

    name: str
    rule: Rule
    notes: list = field(default_factory=list)


def _ops(*names) -> frozenset:
    return frozenset(getattr(Op, f"HCCL_CMD_{n}") for n in names)


# -- the facts a rule reads --------------------------------------------------------------------------
def servers(call) -> int:
    return call.topology.servers


def per_server(call) -> int:
    return call.topology.per_server


def pods(call) -> int:
    return call.topology.super_pods


def pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def inline(call) -> bool:
    """SDMA inline reduce (and RDMA reduce) of the call's data type and operation."""
    return call.data_type in INLINE_TYPES and call.reduce_op in INLINE_OPS


def family(*names):
    return lambda call: call.family in names


def asymmetric(call) -> bool:
    return not call.topology.symmetric


def one_server(call) -> bool:
    return servers(call) == 1


def _both(*preds):
    return lambda call: all(p(call) for p in preds)


def name_levels(call, levels) -> str:
    """The name of ``levels`` (level 0 first) on the call's topology, its one-rank levels left out:
    level 0 has ``per_server`` ranks, level 1 the servers (of a super pod when there is a level 2),
    level 2 the super pods."""
    if len(levels) == 2:
        sizes = (per_server(call), servers(call))
    else:
        sizes = (per_server(call), servers(call) // max(1, pods(call)), pods(call))
    kept = [n for n, s in zip(levels, sizes) if s > 1]
    if not kept:
        return levels[0]
    return kept[0] if len(kept) == 1 else hierarchy.name(kept)


# -- level 1 and 2: HCCL_ALGO, the defaults, the fallbacks of each operator ------------------------------------
def configured(call, level: int, notes: list):
    """The algorithm HCCL_ALGO / hcclAlgo sets at ``level`` for this collective (None: not set, or
    a value HCCL ignores there, with a note; alg_configurator.cc SetAlgoLevel1 / SetAlgoLevel2)."""
    token = call.algo[level] if len(call.algo) > level else ""
    if token in ("", "NA", "null"):
        return None
    if token in ("fullmesh", "pairwise"):
        if level == 1 and call.op not in A2A:
            notes.append(f"level{level}:{token} algo is not supported. the config is ignored.")
        return None
    if token in ("AHC", "AHC_BROKE") and call.op not in (AG, AR, RS):
        notes.append(f"level1:{token} does not run {Op(call.op).name}: default algo is set.")
        return None
    if token == "pipeline" and call.family not in ("A2", "A3"):
        notes.append(f"config pipeline algo failed on {call.product or call.family}: default algo is set.")
        return None
    if call.family == "950" and token != "NHR":
        notes.append(f"level{level}:{token} is not supported on {call.product or 'Atlas 350'} (NHR only): "
                     "default algo is set.")
        return None
    return TOKENS[token]


def _fallback(call, name: str, allowed, to: str, notes: list, why: str) -> str:
    if name in allowed:
        return name
    notes.append(f"{why}: level1 {name} does not run {Op(call.op).name}, reset to {to}.")
    return to


def _pipeline_tasks(call) -> int:
    """HCCL's conservative task count of a pipeline call (CalcContextNumForPipeline)."""
    m, d = servers(call), per_server(call)
    deter = call.deterministic == 1 and call.op in (AR, RS)
    per_step = 5 * (d - 1) + 7 + 1 + (d - 1 if deter else 0)
    if call.op in A2A:
        return m * per_step + 4 + 1 + m
    n = m * per_step + 4 + 1
    n += n if call.op == AR else 0
    return n + (m - 1 if deter else 0)


def a2_default_level1(call) -> str:
    """Atlas A2's level-1 default (coll_alg_operator.cc GetDefaultAlgoLevel1V2 per op-base call for
    AllGather(V), ReduceScatter and AllReduce; alg_configurator.cc GetDefaultAlgoLevel1V1 for the
    others)."""
    m, d, n, op = servers(call), per_server(call), call.nbytes, call.op
    fits = _pipeline_tasks(call) <= FFTS_CAPACITY
    det = call.deterministic == 1
    if op in (AG, AGV) and d != 1 and n >= 32 * KIB and fits:
        return "pipeline"
    if op == RS and inline(call) and fits and n >= 32 * KIB and d > 1 and (
            not det or (m > 1 and n >= 256 * KIB)):
        return "pipeline"
    if op == AR and inline(call) and fits and d > 1 and n // max(1, m * d) >= MIB:
        return "pipeline"
    if op in (AG, AGV, RS, AR):
        return "ring" if m <= 3 else "nhr"      # the alpha-beta comparison (60 us a step, equal beta terms)
    return "hdr" if m >= 8 or (pow2(m) and m > 1) else "ring"


def a2_level1(call, notes: list) -> str:
    """Atlas A2's level 1: HCCL_ALGO, else the default; then each operator's fallbacks."""
    name = configured(call, 1, notes)
    if name is None:               # the default's own resets are silent here (HCCL warns at every init)
        name, notes = a2_default_level1(call), []
    op = call.op
    if op == BCAST:
        return _fallback(call, name, ("nhr", "nhr_v1", "nb"), "hdr", notes, "BroadCastOperator")
    if op == REDUCE:
        return _fallback(call, name, ("ring", "hdr", "ahc", "ahc_broke"), "hdr", notes, "ReduceOperator")
    if op == SCATTER:
        return _fallback(call, name, ("nhr", "nb", "ring"), "ring", notes, "ScatterOperator")
    if op == RSV:
        return _fallback(call, name, ("ring", "nhr", "pipeline"), "nhr", notes, "ReduceScatterVOperator")
    if op == AGV:
        return _fallback(call, name, ("ring", "hdr", "nhr", "nhr_v1", "nb", "pipeline"), "nhr", notes,
                         "AllGatherVOperator")
    return name


def a3_level1(call, notes: list) -> str:
    """Atlas A3's level 1: HCCL_ALGO, else GetDefaultAlgoLevel1V1 with H-D_R replaced by NHR; then the
    fallbacks of SelectAlgfor91093 (each operator)."""
    m = servers(call) // max(1, pods(call))
    name = configured(call, 1, notes)
    if name is None:
        name, notes = ("nhr" if m >= 8 or (pow2(m) and m > 1) else "ring"), []
    op = call.op
    if op == AR:
        return _fallback(call, name, ("ring", "nhr", "nhr_v1", "nb", "ahc", "ahc_broke"), "nhr", notes,
                         "AllReduceOperator SelectAlgfor91093")
    if op in (AG, RS):
        return _fallback(call, name, ("ring", "nb", "ahc", "ahc_broke", "nhr"), "nhr", notes,
                         f"{'AllGather' if op == AG else 'ReduceScatter'}Operator SelectAlgfor91093")
    if op in (AGV, RSV):
        return _fallback(call, name, ("ring", "nb", "nhr"), "nhr", notes, "SelectAlgfor91093 (V)")
    if op == BCAST:
        return _fallback(call, name, ("nhr", "nb"), "nhr", notes, "BroadCastOperator SelectAlgfor91093")
    if op == REDUCE:
        return _fallback(call, name, ("ring", "hdr"), "ring", notes, "ReduceOperator SelectAlgfor91093")
    if op == SCATTER:
        return _fallback(call, name, ("nhr", "nb", "ring"), "ring", notes, "ScatterOperator")
    return name


def a3_level2(call, notes: list) -> str:
    """Atlas A3's level 2: HCCL_ALGO, else NHR (alg_configurator.cc SetAlgoLevel2: the code's default;
    HCCL_ALGO.md says ring below 8 super pods that are no power of two, else H-D_R); an algorithm
    that cannot run the collective as a level falls back to NHR (Reduce: the ring)."""
    name = configured(call, 2, notes) or "nhr"
    if name in ("pipeline", "ahc", "ahc_broke"):
        notes.append(f"level2 {name} is not modelled for {Op(call.op).name}: NHR runs.")
        name = "nhr"
    core = {AR: "ar", RS: "rs", AG: "ag", AGV: "ag", RSV: "rs", BCAST: "bcast", REDUCE: "reduce",
            SCATTER: "scatter"}[call.op]
    if getattr(algorithms.find(name).level, core) is None:
        to = "ring" if call.op == REDUCE else "nhr"
        notes.append(f"level2 {name} does not run {Op(call.op).name}: {to} runs.")
        name = to
    return name


def a3_level0(call) -> str:
    """Double ring where every server's ranks are whole SIO pairs (HCCS-switch links ``(d-2) d``,
    SIO links ``d``: alg_configurator.cc IsHCCSSWNumEqualToTwiceSIONum), else the single ring; only
    ReduceScatter, AllGather, AllReduce and their V forms run the double ring."""
    if call.op in (AR, RS, AG, AGV, RSV) and call.topology.layout.paired:
        return "double_ring"
    return "ring"


# -- the algorithms a rule names ------------------------------------------------------------------------------------
def a2_hierarchy(call, notes) -> str:
    level1 = a2_level1(call, notes)
    if level1 == "pipeline":        # a level-1 pipeline the operator did not take: its level-1 template is H-D_R
        notes.append(f"pipeline does not run this {Op(call.op).name}: level1 H-D_R runs.")
        level1 = "hdr"
    return name_levels(call, ["mesh", level1])


def a2_pipeline_or_hierarchy(call, notes) -> str:
    level1 = a2_level1(call, notes)
    if level1 != "pipeline":
        return name_levels(call, ["mesh", level1])
    if call.op in (AG, AGV):
        return "pipeline"
    if inline(call) and (call.deterministic != 1 or per_server(call) > 2):
        return "pipeline"
    return a2_hierarchy(call, notes)


def a2_ahc(call, notes) -> str:
    """HCCL_ALGO level1 AHC / AHC_BROKE on Atlas A2: only with ``level0:null`` (the whole-communicator
    configuration, coll_alg_operator.cc SelectAlgforAHC; otherwise HCCL_E_PARA); AHC where the
    servers differ in size, AHC_BROKE where they do not (AHCAlgSelect)."""
    if call.algo[0] != "null":
        raise para("collective", "level1:AHC on Atlas A2 needs level0:null (HCCL_ALGO=\"level0:null;level1:AHC\")")
    return "ahc_broke" if call.topology.symmetric else "ahc"


def a3_hierarchy(call, notes) -> str:
    levels = [a3_level0(call), a3_level1(call, notes)]
    if pods(call) > 1:
        levels.append(a3_level2(call, notes))
    if levels[1] in ("ahc", "ahc_broke"):
        return levels[1] if not call.topology.symmetric else "ahc_broke"
    return name_levels(call, levels)


def a3_mid_count(call, notes) -> str:
    return name_levels(call, [a3_level0(call), "nhr", "nhr"])


def n950_hierarchy(call, notes) -> str:
    configured(call, 1, notes)
    return name_levels(call, ["mesh", "nhr", "nhr"] if pods(call) > 1 else ["mesh", "nhr"])


def _configured_ahc(call) -> bool:
    return len(call.algo) > 1 and call.algo[1] in ("AHC", "AHC_BROKE") and call.op in (AG, AR, RS)


def _a2_pipeline_level1(call) -> bool:
    return a2_level1(call, []) == "pipeline"


def _a3_small_ar(call) -> bool:
    m, d, P, n = servers(call), per_server(call), pods(call), call.nbytes
    host = not inline(call) and ((m > 1 and P == 1) or (P > 1 and n <= 4 * MIB * d))
    return host or (d > 2 and m > 1 and P == 1 and n <= MIB * d) or (P > 1 and n <= 16 * KIB * d)


def _a3_small_ag_pod(call) -> bool:
    m, d, P, n = servers(call), per_server(call), pods(call), call.nbytes
    single = m == 1 and n <= 512 * KIB and d > 2
    multi = d > 2 and m > 1 and P == 1 and n * m <= (MIB if d % 4 == 0 else 512 * KIB)
    return single or multi


def _a3_rs_host(call) -> bool:
    m, d, P, n, p = servers(call), per_server(call), pods(call), call.nbytes, call.nranks
    host = not inline(call) and ((m > 1 and P == 1) or (P > 1 and n <= (4 * MIB if pow2(p) else 2 * MIB)))
    multi = inline(call) and d > 2 and m > 1 and P == 1
    return host or (multi and not pow2(p) and n <= 256 * KIB)


def _a3_rs_small(call) -> bool:
    m, d, P, n, p = servers(call), per_server(call), pods(call), call.nbytes, call.nranks
    single = m == 1 and inline(call) and d > 2 and n <= MIB
    multi = inline(call) and d > 2 and m > 1 and P == 1 and pow2(p) and n * m <= 2 * MIB
    return single or multi


def _levels_950(call) -> int:
    return 1 if servers(call) == 1 else (2 if pods(call) == 1 else 3)


def _wide(call) -> bool:
    return call.data_type in WIDE_TYPES or call.reduce_op == R.HCCL_REDUCE_PROD


A2, A3, N950 = family("A2"), family("A3"), family("950")
OLDER = family("910", "310P", "310B")
EVERY = _ops("ALLREDUCE", "ALLGATHER", "ALLGATHER_V", "REDUCE_SCATTER", "REDUCE_SCATTER_V", "BROADCAST", "REDUCE",
             "SCATTER")
CORE = _ops("ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER")

#: The rules, first match wins (docs/algorithms.md, "The rules").
RULES = (
    Rule(_ops("SEND", "RECEIVE", "BATCH_SEND_RECV"), "p2p", "hcomm-api §8 S2 (point-to-point by one-sided read)"),
    Rule(_ops("BARRIER"), "mesh", "pyhcomm: HCCL's barrier as a notify-only exchange with every peer"),
    # ---- Atlas A2 (hcomm src/algorithm/impl/operator/*_operator.cc SelectAlgfor910B) ----------------
    Rule(CORE, a2_ahc, "A2 HCCL_ALGO level1:AHC / AHC_BROKE (coll_alg_operator.cc SelectAlgforAHC, AHCAlgSelect)",
         _both(A2, _configured_ahc)),
    Rule(EVERY, "ring", "A2 alg_configurator.cc SelectCurrOpAlgType: servers of different sizes (isNoARS) run "
         "level0 WHOLE_RING / level1 WHOLE_RING: one ring over every rank", _both(A2, asymmetric)),
    Rule(A2A, "pairwise", "A2 alltoall_operator.cc SelectAlgforAlltoAll: servers of different sizes run "
         "RunAlltoAllVFullMesh (pairwise over every rank)", _both(A2, asymmetric, lambda c: not one_server(c))),
    Rule(_ops("ALLREDUCE"), "mesh_oneshot", "A2 all_reduce_operator.cc MeshTopoSelector / NonDeterministicSelector: "
         "one server, op-base, inline reduce, <= 256 KiB: AllReduceMeshSmallCountExecutor",
         _both(A2, one_server, inline, lambda c: c.nbytes <= 256 * KIB)),
    Rule(EVERY | A2A, "mesh", "A2 SelectAlgfor910B, one server (HCCS full mesh, NP_MESH): AllReduceMeshOpbaseLoop"
         "Executor, AllGatherMeshOpbaseExecutor, ReduceScatterMeshDmaEliminationExecutor, BroadCastMeshExecutor, "
         "ReduceMeshExecutor, ScatterMeshExecutor, RunAlltoAllDirectFullmesh", _both(A2, one_server)),
    Rule(A2A, "mesh", "A2 alltoall_operator.cc: AI_CPU expansion runs RunAlltoAllDirectFullmesh",
         _both(A2, lambda c: c.expansion == AI_CPU)),
    Rule(A2A, "pairwise", "A2 alltoall_operator.cc: several servers run RunAlltoAllVStaged (level0 mesh, level1 "
         "pairwise), or the flat pairwise with HCCL_ALGO level0:NA;level1:pairwise (pyhcomm runs the pairwise "
         "flat in both cases)", A2),
    Rule(_ops("ALLREDUCE", "ALLGATHER", "ALLGATHER_V", "REDUCE_SCATTER"), a2_pipeline_or_hierarchy,
         "A2 GetDefaultAlgoLevel1V2 pipeline (AllReduceMeshOpbasePipelineExecutor, AllGatherMeshOpbasePipeline"
         "Executor, ReduceScatterMeshOpbasePipelineExecutor)", _both(A2, _a2_pipeline_level1)),
    Rule(EVERY, a2_hierarchy, "A2 *MeshExecutor: level0 mesh inside the server, the level-1 algorithm between "
         "servers (coll_all_reduce_mesh_executor.cc and siblings; hierarchical_comm_principle.md)", A2),
    # ---- Atlas A3 (SelectAlgfor91093) -------------------------------------------------------------------------
    Rule(EVERY, "nhr", "A3 SelectAlgfor91093: servers of different sizes run ARS / *Comm (not modelled: flat NHR)",
         _both(A3, asymmetric)),
    Rule(A2A, "mesh", "A3 alltoall_operator.cc: AI_CPU expansion runs RunAlltoAllDirectFullmesh", A3),
    Rule(_ops("ALLREDUCE"), "mesh_oneshot", "A3 all_reduce_operator.cc: one server, inline reduce, > 2 ranks a "
         "server, <= 512 KiB x ranks: AllReduceMeshSmallCountExecutor",
         _both(A3, one_server, inline, lambda c: per_server(c) > 2 and c.nbytes <= 512 * KIB * c.nranks)),
    Rule(_ops("ALLREDUCE"), a3_mid_count, "A3 all_reduce_operator.cc: several super pods, 64..256 KiB: "
         "AllReduceMidCountFor91093Executor (NHR one-shot at levels 1 and 2)",
         _both(A3, lambda c: pods(c) > 1 and 64 * KIB <= c.nbytes <= 256 * KIB)),
    Rule(_ops("ALLREDUCE"), "nhr", "A3 all_reduce_operator.cc: small multi-server or multi-pod counts (<= 1 MiB x "
         "ranks a server in one pod, <= 16 KiB x ranks a server across pods) or no inline reduce: AllReduceComm "
         "with NHR over every rank", _both(A3, _a3_small_ar)),
    Rule(_ops("ALLGATHER"), "hdr", "A3 all_gather_operator.cc: several super pods, <= 16 KiB: AllGatherComm "
         "with H-D_R", _both(A3, lambda c: pods(c) > 1 and c.nbytes <= 16 * KIB)),
    Rule(_ops("ALLGATHER"), "mesh", "A3 all_gather_operator.cc SmallCountOptimSinglePod: AllGatherSmallCount "
         "(modelled as the full mesh over the pod)", _both(A3, _a3_small_ag_pod)),
    Rule(_ops("ALLGATHER"), a3_mid_count, "A3 all_gather_operator.cc: several super pods, 16..256 KiB: "
         "AllGatherMidCountFor91093Executor", _both(A3, lambda c: pods(c) > 1 and c.nbytes <= 256 * KIB)),
    Rule(_ops("REDUCE_SCATTER"), "hdr", "A3 reduce_scatter_operator.cc: no inline reduce across servers, or a "
         "small multi-server count on a rank count that is no power of two: ReduceScatterComm with H-D_R",
         _both(A3, _a3_rs_host)),
    Rule(_ops("REDUCE_SCATTER"), "mesh", "A3 reduce_scatter_operator.cc: small counts in one pod: "
         "ReduceScatterDeterExecutor (modelled as the mesh)", _both(A3, _a3_rs_small)),
    Rule(_ops("BROADCAST"), "nhr", "A3 broadcast_operator.cc: small multi-server (<= 1 MiB x ranks a server) or "
         "multi-pod (<= 16 KiB x ranks a server) counts: BroadCastComm with NHR",
         _both(A3, lambda c: (per_server(c) > 2 and servers(c) > 1 and pods(c) == 1 and c.nbytes <= MIB * per_server(c))
               or (pods(c) > 1 and c.nbytes <= 16 * KIB * per_server(c)))),
    Rule(_ops("BROADCAST"), "mesh", "A3 broadcast_operator.cc: one server, <= 512 KiB x ranks: "
         "BroadCastSmallCountExecutor", _both(A3, one_server, lambda c: per_server(c) > 2
                                              and c.nbytes <= 512 * KIB * c.nranks)),
    Rule(EVERY, a3_hierarchy, "A3 *RingFor91093Executor / *DoubleRingFor91093Executor: level0 (double) ring in the "
         "server, level1 between servers, level2 between super pods (coll_all_reduce_ring_for_910_93_executor.cc)",
         A3),
    # ---- Atlas 350 (hccl src/ops/*/selector, AI CPU expansion) ----------------------------------------------------
    Rule(A2A, "mesh", "950 alltoall selectors: the full mesh", N950),
    Rule(EVERY, "nhr", "950 selectors: levels that are not symmetric (level0AndLevel1Symetric false): *SoleNHR",
         _both(N950, asymmetric)),
    Rule(_ops("ALLREDUCE"), "mesh_oneshot", "950 all_reduce_auto_selector.cc SelectMeshAlgoAicpu: one level, "
         "<= 8 MiB: AicpuAllReduceSoleMeshOneShot", _both(N950, lambda c: _levels_950(c) == 1 and c.nbytes <= 8 * MIB)),
    Rule(EVERY, "mesh", "950 *_auto_selector.cc: one level (one server): the 1-D mesh (SoleMesh, TwoShot)",
         _both(N950, lambda c: _levels_950(c) == 1)),
    Rule(_ops("ALLREDUCE", "REDUCE_SCATTER", "REDUCE"), "nhr", "950 selectors: 64-bit data or PROD over several "
         "levels: *SoleNHRAicpuReduce", _both(N950, _wide)),
    Rule(_ops("ALLREDUCE"), "nhr", "950 all_reduce_auto_selector.cc SelectAicpuAlgo: two levels, <= 32 MiB: "
         "AicpuAllReduceSoleNHR", _both(N950, lambda c: _levels_950(c) == 2 and c.nbytes <= 32 * MIB)),
    Rule(_ops("ALLGATHER", "ALLGATHER_V"), "nhr", "950 all_gather_auto_selector.cc: two levels, <= 1 MiB: "
         "AicpuAllGatherSoleNHR", _both(N950, lambda c: _levels_950(c) == 2 and c.nbytes <= MIB)),
    Rule(_ops("REDUCE_SCATTER", "REDUCE_SCATTER_V"), "nhr", "950 reduce_scatter_auto_selector.cc: two levels, "
         "<= 4 MiB: AicpuReduceScatterSoleNHR", _both(N950, lambda c: _levels_950(c) == 2 and c.nbytes <= 4 * MIB)),
    Rule(_ops("SCATTER"), "nhr", "950 scatter_auto_selector.cc: two levels: AicpuScatterSoleNHR",
         _both(N950, lambda c: _levels_950(c) == 2)),
    Rule(EVERY, n950_hierarchy, "950 selectors: *ParallelMeshNHR (two levels) and *SequenceMeshConcurNHRNHR "
         "(three): level0 mesh, NHR between servers and super pods (pyhcomm runs the levels one after another)",
         N950),
    # ---- the products without HCOMM primitives (HCCL still runs their collectives) -----------------------------
    Rule(A2A, "pairwise", "pyhcomm: older products run AlltoAll pairwise", OLDER),
    Rule(EVERY, "ring", "pyhcomm: older products (Atlas training / inference series) run the ring", OLDER),
)


def choose(call: Call) -> Choice:
    """The first rule of :data:`RULES` that covers ``call``, the name it gives and its notes
    (``HCCL_E_NOT_SUPPORT`` when no rule covers the collective)."""
    for rule in RULES:
        if call.op in rule.ops and rule.when(call):
            notes: list = []
            name = rule.algorithm(call, notes) if callable(rule.algorithm) else rule.algorithm
            return Choice(name, rule, notes)
    raise not_support("collective", f"no algorithm of pyhcomm's collective library runs {Op(call.op).name}")


def rule_for(call: Call) -> Rule:
    """The rule :func:`choose` takes for ``call``."""
    return choose(call).rule


@dataclass
class NotesLogged(LayerState):
    """The fallback notes a Sim has logged (each once)."""

    notes: set = field(default_factory=set)


def select(call: Call) -> Algorithm:
    """The algorithm that runs ``call`` (:func:`choose`); HCCL's fallback lines go to the log once
    per message and Sim. ``HCCL_E_NOT_SUPPORT`` when no rule covers the collective;
    ``ValueError`` when the rule names an algorithm that does not implement it (a defect)."""
    choice = choose(call)
    if choice.notes:
        seen = _sim().layer_state(NotesLogged).notes
        for note in choice.notes:
            if note not in seen:
                seen.add(note)
                log.warning("HCCL_ALGO: %s", note)
    algorithm = algorithms.find(choice.name)
    if call.op not in algorithm.ops:
        raise ValueError(f"selector rule for {Op(call.op).name} names {choice.name!r}, which does not implement it")
    return algorithm
