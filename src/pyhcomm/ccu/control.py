"""The DSL's control flow: ``If`` / ``Else``, ``Func``, ``Loop``, ``LoopGroup``.

Python's own ``if`` and ``for`` run once, while the kernel is recorded (an unrolled loop, a branch
decided at registration); what must be decided when the kernel runs goes through these:

* ``with ccu.If(var != 0): ...`` (then ``with ccu.Else(): ...``): the body is recorded once, and
  runs when the condition holds (``CCU_IF`` / ``CCU_ELSE``).
* ``ccu.Loop(param, ccu.Func(body))``: records ``body`` (data moves and waits only) as a loop; it
  runs only inside a ``LoopGroup`` (a Loop alone has no effect). ``param`` is a Variable packing
  ``ctxId << 45 | stride << 13 | iterations`` (example 05's ``GetLoopParam``: 13 bits of
  iterations, 32 of address stride per iteration); or a ``CcuLoopConfig`` / ``CcuLoopCfg``
  (``iterNum``, ``addrOffset``: it takes a Variable to hold them); or two Variables (iterations,
  stride). Iteration ``i`` adds ``i * stride`` to every memory address of the body.
* ``ccu.LoopGroup(parallel, offset, maxLoopNum, loops)``: runs loops at once and waits for them.
  ``parallel`` packs ``repeat << 55 | start << 48 | total << 41`` (7 bits each: example 05's
  ``GetParallelParam``): the first ``total`` loops run, and ``repeat`` clones of each loop from
  ``start`` on run beside them; ``offset`` packs ``addr << 21 | ms << 10 | cke`` (32, 11, 10 bits:
  ``GetOffsetParam``): clone ``j`` adds ``j * addr`` to its addresses, ``j * ms`` to its CCU buffers'
  ids and ``j * cke`` to its events' ids, which must stay in their blocks (``Array``). Or a
  ``CcuLoopGroupConfig`` / ``CcuLoopGroupCfg`` (``cloneNum``, ``cloneLoopOffset``, ``addrOffset``,
  ``ccuBufferOffset``, ``eventOffset``; every given loop runs). At most ``maxLoopNum`` loops run;
  the instance must hold that many.
"""
from __future__ import annotations

from ..defs.ccu import CcuLoopCfg, CcuLoopConfig, CcuLoopGroupCfg, CcuLoopGroupConfig, CcuResult as C
from ..hcomm.resources.ccu_pool import R, ccu_error
from ..sim.task import call_site
from . import program
from .program import Cond
from .recorder import current
from .resources import Variable

LOOP_GROUP_MAX = 0x7F


def _para(name: str, message: str):
    return ccu_error(C.CCU_E_PARA, name, message)


class If:
    """``with ccu.If(cond):``: the body runs when ``cond`` (a comparison of a Variable) holds."""

    def __init__(self, cond):
        if not isinstance(cond, Cond):
            raise _para("ccu.If", f"a condition compares a ccu.Variable (v != 0, v < w), not {type(cond).__name__}")
        self.cond, self.site = cond, call_site()

    def __enter__(self):
        rec = current("ccu.If")
        if rec.loop_depth:
            raise _para("ccu.If", "a loop body holds data moves and waits only")
        rec.open()
        return self

    def __exit__(self, exc_type, exc, tb):
        rec = current("ccu.If")
        body = rec.close()
        if exc_type is None:
            rec.emit("if", "ccu.If", site=self.site, cond=self.cond, then=body, orelse=None)
        return False


class Else:
    """``with ccu.Else():`` right after a ``with ccu.If(...)``: runs when its condition does not hold."""

    def __enter__(self):
        rec = current("ccu.Else")
        block = rec.blocks[-1]
        if not block or block[-1].code != "if" or block[-1].orelse is not None:
            raise _para("ccu.Else", "ccu.Else must follow a ccu.If block")
        self.op = block[-1]
        rec.open()
        return self

    def __exit__(self, exc_type, exc, tb):
        body = current("ccu.Else").close()
        if exc_type is None:
            self.op.f["orelse"] = body
        return False


class Func:
    """A block of instructions to record (``ccu::Func``): ``body`` takes no argument for a Loop."""

    def __init__(self, body):
        if not callable(body):
            raise _para("ccu.Func", f"a Func wraps a callable, not {type(body).__name__}")
        self.body = body

    def __call__(self, *args):
        return self.body(*args)


def _loop_params(params, rec, name):
    """``(param, config, v2)`` of a Loop's parameters (see the module docstring)."""
    if len(params) == 1 and isinstance(params[0], Variable):
        return params[0].ref, None, None
    if len(params) == 1 and isinstance(params[0], (CcuLoopConfig, CcuLoopCfg)):
        cfg = params[0]
        rec.take(R.HCOMM_CCU_RES_TYPE_VARIABLE, 1)
        return None, (int(cfg.iterNum), int(cfg.addrOffset)), None
    if len(params) == 2 and all(isinstance(p, Variable) for p in params):
        return None, None, (params[0].ref, params[1].ref)
    raise _para(name, "a Loop takes (Variable, func), (CcuLoopConfig, func) or (iterNum Variable, addrOffset "
                      "Variable, func)")


class Loop:
    """A loop (see the module docstring); it runs only inside a LoopGroup."""

    def __init__(self, *args):
        name = "ccu.Loop"
        rec = current(name)
        if not args or rec.loop_depth:
            raise _para(name, "a Loop takes its parameters and a Func, and does not nest")
        *params, func = args
        body = func.body if isinstance(func, Func) else func
        if not callable(body):
            raise _para(name, f"a Loop's body is a ccu.Func, not {type(func).__name__}")
        site = call_site()
        param, config, v2 = _loop_params(params, rec, name)
        rec.open()
        rec.loop_depth += 1
        try:
            body()
        finally:
            rec.loop_depth -= 1
            ops = rec.close()
        rec.instructions += 1
        self.loop = program.Loop(ops, site, param=param, config=config, v2=v2)


def _group_params(args, rec, name):
    """``(parallel, offset, config, maxLoopNum, loops)`` of a LoopGroup's arguments."""
    if len(args) == 4 and isinstance(args[0], Variable) and isinstance(args[1], Variable):
        return args[0].ref, args[1].ref, None, args[2], args[3]
    if len(args) == 3 and isinstance(args[0], (CcuLoopGroupConfig, CcuLoopGroupCfg)):
        c = args[0]
        rec.take(R.HCOMM_CCU_RES_TYPE_VARIABLE, 1)
        config = (int(c.cloneNum), int(c.cloneLoopOffset), int(c.addrOffset), int(c.ccuBufferOffset),
                  int(c.eventOffset))
        return None, None, config, args[1], args[2]
    raise _para(name, "a LoopGroup takes (parallel Variable, offset Variable, maxLoopNum, loops) or "
                      "(CcuLoopGroupConfig, maxLoopNum, loops)")


class LoopGroup:
    """Runs loops at once and waits for them (see the module docstring)."""

    def __init__(self, *args):
        name = "ccu.LoopGroup"
        rec = current(name)
        parallel, offset, config, max_loops, loops = _group_params(args, rec, name)
        if isinstance(max_loops, bool) or not isinstance(max_loops, int) or not 0 < max_loops <= LOOP_GROUP_MAX:
            raise _para(name, f"maxLoopNum {max_loops!r} is outside [1, {LOOP_GROUP_MAX}]")
        loops = list(loops) if isinstance(loops, (list, tuple)) else None
        if not loops or not all(isinstance(lp, Loop) for lp in loops) or len(loops) > max_loops:
            raise _para(name, f"loops must be 1 to maxLoopNum ({max_loops}) ccu.Loop values")
        rec.loop_group(max_loops)
        rec.emit("group", name, parallel=parallel, offset=offset, config=config, max_loops=max_loops,
                 loops=[lp.loop for lp in loops])


__all__ = ["If", "Else", "Func", "Loop", "LoopGroup"]
