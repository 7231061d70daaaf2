"""Which algorithm runs a collective call: the rules, in one table.

:func:`select` reads :data:`RULES` top to bottom and takes the first rule that covers the call's
collective and whose condition holds for the :class:`~.algorithm.Call` (product family,
expansion mode, rank count, topology, message size, data type, configuration). A rule names an
algorithm of the catalogue (:mod:`.algorithms`) and cites where it comes from. Adding a rule is a
row in :data:`RULES`, above the rows it overrides (docs/algorithms.md).

Today's rules are pyhcomm's fixed choices (one algorithm per collective on every product, as the
flat C tier chose them before the selector existed); HCCL's own rules (per product, topology
level, size and expansion mode, ``HCCL_ALGO``) are not modelled yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import not_support
from . import algorithms
from .algorithm import Algorithm, Call, Op


def always(call: Call) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """``ops`` run on ``algorithm`` when ``when(call)``; ``source``: where the rule comes from."""

    ops: frozenset
    algorithm: str
    source: str
    when: Callable[[Call], bool] = always


def _ops(*names) -> frozenset:
    return frozenset(getattr(Op, f"HCCL_CMD_{n}") for n in names)


#: The rules, first match wins.
RULES = (
    Rule(_ops("ALLGATHER"), "mesh",
         "hcomm-api §8 S3 (HCCL's custom AllGather: mesh of one-sided writes); on every product"),
    Rule(_ops("REDUCE_SCATTER"), "mesh",
         "hcomm-api §8 S5 (HCCL's ins_temp_reduce_scatter_mesh_1D); on every product"),
    Rule(_ops("ALLREDUCE"), "ring",
         "pyhcomm: ring ReduceScatter + ring AllGather, any count (HCCL's ring AllReduce form, Ring.md)"),
    Rule(_ops("BROADCAST"), "star", "hcomm-api §8 S2 (read by the receiver), fanned out from the root"),
    Rule(_ops("REDUCE"), "star", "pyhcomm: the gathering half of the S3/S5 mesh, towards the root"),
    Rule(_ops("SCATTER"), "ring", "hcomm-api §8 S4 (HCCL's scatter_ring.cc, the A2 host template)"),
    Rule(_ops("ALLTOALL", "ALLTOALLV", "ALLTOALLVC"), "mesh",
         "pyhcomm: every pair's exchange at once over the S3 mesh (pairwise plans, collectives/pairwise.py)"),
    Rule(_ops("ALLGATHER_V", "REDUCE_SCATTER_V"), "ring", "pyhcomm: the ring takes segments of any size"),
    Rule(_ops("BARRIER"), "mesh", "HCCL's barrier: a notify-only exchange with every peer"),
    Rule(_ops("SEND", "RECEIVE", "BATCH_SEND_RECV"), "p2p", "hcomm-api §8 S2 (point-to-point by one-sided read)"),
)


def rule_for(call: Call) -> Rule:
    """The first rule of :data:`RULES` that covers ``call`` (``HCCL_E_NOT_SUPPORT`` when none does)."""
    for rule in RULES:
        if call.op in rule.ops and rule.when(call):
            return rule
    raise not_support("collective", f"no algorithm of pyhcomm's collective library runs {Op(call.op).name}")


def select(call: Call) -> Algorithm:
    """The algorithm that runs ``call``: the one :func:`rule_for` names.

    ``HCCL_E_NOT_SUPPORT`` when no rule covers the collective; ``ValueError`` when the rule names
    an algorithm that does not implement it (a defect of the table)."""
    rule = rule_for(call)
    algorithm = algorithms.find(rule.algorithm)
    if call.op not in algorithm.ops:
        raise ValueError(f"selector rule for {Op(call.op).name} names {rule.algorithm!r}, which does not implement it")
    return algorithm
