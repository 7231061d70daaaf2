"""Running a ``LoopGroup`` in a mission (:mod:`.control` says what its parameters pack).

The group's loops run at once, each on a lane of its own: every iteration of its body is issued
there when the group starts (its moves with their addresses shifted by the iteration's stride and
the clone's offset, its CCU buffers and events by the clone's offsets; its waits as tasks that block
that lane only), then the mission waits for the lanes (a ``CcuLoopGroup`` host effect). A group that
would run more than ``maxLoopNum`` loops, name a loop it was not given, or run a loop of 0
iterations fails the mission.
"""
from __future__ import annotations

from ..sim import kinds
from .tasks import LoopWaitTask


def _bits(v: int, shift: int, width: int) -> int:
    return (v >> shift) & ((1 << width) - 1)


def plan(mission, op) -> tuple:
    """``(instances, (addr, ms, cke) clone offsets)``: ``instances`` lists ``(loop, clone)``."""
    if op.config is not None:
        repeat, start, addr, ms, cke = op.config
        total = len(op.loops)
    else:
        p, o = mission.value(op.parallel), mission.value(op.offset)
        repeat, start, total = _bits(p, 55, 7), _bits(p, 48, 7), _bits(p, 41, 7)
        addr, ms, cke = _bits(o, 21, 32), _bits(o, 10, 11), _bits(o, 0, 10)
    if total > len(op.loops) or start > total:
        raise mission.fail(f"a loop group runs loops [0, {total}) cloning from loop {start}: it was given "
                           f"{len(op.loops)} loop(s)")
    instances = [(k, 0) for k in range(total)] + [(k, j) for j in range(1, repeat + 1) for k in range(start, total)]
    if len(instances) > op.max_loops:
        raise mission.fail(f"a loop group would run {len(instances)} loops, more than its maxLoopNum {op.max_loops}")
    return instances, (addr, ms, cke)


def iterations(mission, loop) -> tuple:
    """``(iterations, address stride)`` of ``loop`` now."""
    if loop.config is not None:
        iters, stride = loop.config
    elif loop.v2 is not None:
        iters, stride = mission.value(loop.v2[0]), mission.value(loop.v2[1])
    else:
        p = mission.value(loop.param)
        iters, stride = _bits(p, 0, 13), _bits(p, 13, 32)
    if iters <= 0:
        raise mission.fail("a Loop of 0 iterations (its count must be greater than 0)")
    return iters, stride


def issue_loop(mission, loop, clone: int, offsets: tuple, lane) -> None:
    """Every iteration of ``loop``'s body (clone ``clone``) onto ``lane``."""
    iters, stride = iterations(mission, loop)
    addr_off, ms_off, cke_off = offsets
    sched = mission.sim.scheduler
    for it in range(iters):
        for op in loop.body:
            with mission.at(op.site):
                if op.code == "move":
                    mission.issue_move(op, lane, it * stride + clone * addr_off, clone * ms_off, clone * cke_off)
                    continue
                if op.code == "event_wait":
                    bits, cke = mission.bits(op.event, clone * cke_off, op.mask), op.event.id + clone * cke_off
                else:
                    bits, cke = op.channel.registers.bits(op.cke, op.mask), op.cke
                for b in bits:
                    sched.submit(LoopWaitTask(lane, mission, b, cke, op.mask, mission.timeout or 0.0))


def run_group(mission, op) -> None:
    """Run loop group ``op`` (see the module docstring)."""
    instances, offsets = plan(mission, op)
    lanes = []
    for i, (k, clone) in enumerate(instances):
        lane = mission.lane(("loop", i))
        issue_loop(mission, op.loops[k], clone, offsets, lane)
        lanes.append(lane)
    mission.join(kinds.CCU_LOOP_GROUP, "a loop group", lanes)
