"""``HCCL_ALGO`` and the communicator config's ``hcclAlgo``: HCCL's syntax, parsed as HCCL parses it.

``level0:NA;level1:<algo>[;level2:<algo>]`` for every collective, or per collective
``<op>=level0:NA;level1:<algo>/<op>=...`` (HCCL's ``env_config_host.cc`` ``SetHcclAlgoConfig``,
``comm_config.cc`` ``SetConfigHcclAlgo``, ``alg_env_config.cc``). Spaces are removed first; an
empty string is no configuration. What makes the string invalid (``HCCL_E_PARA`` where HCCL reads
it: communicator init for the environment, ``HcclCommInitRootInfoConfig`` & co. for the config):

* a ``/``, ``;``, ``=`` or ``:`` first or last; more than four levels; a level twice;
* a level other than ``level0`` .. ``level3``, an algorithm other than ``null``, ``ring``,
  ``pipeline``, ``fullmesh``, ``H-D_R``, ``pairwise``, ``NHR``, ``NHR_V1``, ``AHC``, ``AHC_BROKE``,
  ``NB``, ``NA`` (case matters);
* both forms at once, or more than one form without ``=``;
* an operator other than ``broadcast``, ``allreduce``, ``reduce``, ``send``, ``receive``,
  ``allgather``, ``reducescatter``, ``alltoall``, ``gather``, ``scatter``, ``sendrecv`` (HCCL also
  reads ``others=`` in a first pass and then rejects it in the second: the code refuses it);
* ``level0:null`` in a per-operator form.

``alltoall=`` also configures AlltoAllV and AlltoAllVC. The result, :class:`AlgoConfig`, maps each
``HcclCMDType`` to its four level tokens (``""``: not configured).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .hccl_types import HcclCMDType as Op

TOKENS = ("null", "ring", "pipeline", "fullmesh", "H-D_R", "pairwise", "NHR", "NHR_V1", "AHC", "AHC_BROKE", "NB", "NA")
LEVELS = ("level0", "level1", "level2", "level3")
OPS = {
    "broadcast": Op.HCCL_CMD_BROADCAST, "allreduce": Op.HCCL_CMD_ALLREDUCE, "reduce": Op.HCCL_CMD_REDUCE,
    "send": Op.HCCL_CMD_SEND, "receive": Op.HCCL_CMD_RECEIVE, "allgather": Op.HCCL_CMD_ALLGATHER,
    "reducescatter": Op.HCCL_CMD_REDUCE_SCATTER, "alltoall": Op.HCCL_CMD_ALLTOALL, "gather": Op.HCCL_CMD_GATHER,
    "scatter": Op.HCCL_CMD_SCATTER, "sendrecv": Op.HCCL_CMD_BATCH_SEND_RECV,
}
EXPECT = "level0:NA;level1:<algo> or <op0>=level0:NA;level1:<algo0>/<op1>=level0:NA;level1:<algo1>"
NONE = ("", "", "", "")


@dataclass(frozen=True)
class AlgoConfig:
    """A parsed configuration: ``levels(op)`` is the four level tokens of a collective."""

    text: str = ""
    every: tuple = NONE              # the common form's levels (every collective)
    per_op: dict = field(default_factory=dict)

    def levels(self, op) -> tuple:
        return self.per_op.get(Op(op), self.every)

    def __bool__(self):
        return self.every != NONE or bool(self.per_op)


def _invalid(text: str, why: str) -> ValueError:
    return ValueError(f"hccl algo config[{text}] is invalid ({why}); expect: {EXPECT}")


def _levels(text: str, part: str) -> tuple:
    if part.startswith(";") or part.endswith(";"):
        raise _invalid(text, "a ';' first or last")
    items = part.split(";")
    if len(items) > len(LEVELS):
        raise _invalid(text, f"more than {len(LEVELS)} levels")
    out = ["", "", "", ""]
    for item in items:
        level, sep, algo = item.partition(":")
        if item.startswith(":") or item.endswith(":") or not sep:
            raise _invalid(text, f"{item!r} is not level:algorithm")
        if level not in LEVELS:
            raise _invalid(text, f"level {level} is not supported")
        if algo not in TOKENS:
            raise _invalid(text, f"algo {algo} is not supported")
        i = LEVELS.index(level)
        if out[i]:
            raise _invalid(text, f"{level} is configured twice")
        out[i] = algo
    return tuple(out)


def parse(raw) -> AlgoConfig:
    """Parse an ``HCCL_ALGO`` / ``hcclAlgo`` string (``ValueError`` with HCCL's expectation when
    it is invalid; see the module docstring)."""
    text = "".join(str(raw or "").split(" "))
    if not text:
        return AlgoConfig()
    if text.startswith("/") or text.endswith("/"):
        raise _invalid(text, "a '/' first or last")
    parts = text.split("/")
    specific = [p for p in parts if "=" in p]
    for p in parts:
        if p.startswith("=") or p.endswith("="):
            raise _invalid(text, "an '=' first or last")
    if specific and len(specific) != len(parts):
        raise _invalid(text, "both the common and the per-operator form")
    if not specific:
        if len(parts) > 1:
            raise _invalid(text, "more than one common form")
        return AlgoConfig(text, every=_levels(text, parts[0]))
    per_op = {}
    for p in parts:
        name, _sep, rest = p.partition("=")
        levels = _levels(text, rest)
        if name not in OPS:
            raise _invalid(text, f"optype[{name}] is invalid")
        if levels[0] == "null":
            raise _invalid(text, "a per-operator level0 cannot be null")
        per_op[OPS[name]] = levels
    if Op.HCCL_CMD_ALLTOALL in per_op:
        per_op[Op.HCCL_CMD_ALLTOALLV] = per_op[Op.HCCL_CMD_ALLTOALLVC] = per_op[Op.HCCL_CMD_ALLTOALL]
    return AlgoConfig(text, per_op=per_op)
