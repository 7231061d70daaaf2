"""Recording a kernel: what ``HcommCcuKernelRegister`` (or a dry run, ``HcommCcuKernelQueryResReq``)
keeps while the kernel function runs once on the host.

The DSL (:mod:`.resources`, :mod:`.ops`, :mod:`.control`) asks :func:`current` for the recorder of
this context and hands it resources to allocate (counted against the instance on the kernel's die:
``CCU_E_UNAVAIL`` past it; a dry run only counts) and instructions to append (:meth:`Recorder.emit`,
with the rules of where an instruction may stand). Outside a registration the DSL is
``CCU_E_INTERNAL``.
"""
from __future__ import annotations

from ..defs.ccu import CcuResult as C
from ..hcomm.resources.ccu_pool import R, ccu_error, recording_var
from ..sim.task import call_site
from .program import Op

#: What a loop body may hold (``CCU_models_concepts.md``: data moves and waits only).
LOOP_CODES = frozenset(("move", "event_wait", "notify_wait"))


class Recorder:
    """The recording of one kernel (see the module docstring). ``instance`` None: a dry run."""

    def __init__(self, instance, die: int, device: int, api: str):
        self.instance, self.die, self.device, self.api = instance, die, device, api
        self.blocks = [[]]              # the open blocks, innermost last (the program first)
        self.loop_depth = 0
        self.arg_ids: set = set()
        self.instructions = 0
        self.counts = {t: 0 for t in R if t != R.HCOMM_CCU_RES_TYPE_INVALID}
        self.dry = [0] * len(self.counts)   # a dry run's next id per type
        self.loops = 0                  # the most loops one group runs at once
        self.loaded = False             # a non-LoadArg instruction was recorded
        self.channels: dict = {}        # channel handle -> its end (the channels the kernel uses)

    # -- resources -------------------------------------------------------------------------------------
    def take(self, rtype, n: int) -> int:
        """``n`` contiguous registers of ``rtype``: the id of the first."""
        self.counts[rtype] += n
        if self.instance is None:
            start = self.dry[int(rtype)]
            self.dry[int(rtype)] += n
            return start
        return self.instance.take(self.die, rtype, n, self.api)

    def loop_group(self, max_loops: int) -> None:
        """A loop group that runs up to ``max_loops`` loops: the instance must hold that many."""
        self.loops = max(self.loops, max_loops)
        if self.instance is not None:
            have = self.instance.blocks.get(self.die, {}).get(R.HCOMM_CCU_RES_TYPE_LOOP, (0, 0))[1]
            if max_loops > have:
                raise ccu_error(C.CCU_E_UNAVAIL, self.api, f"a loop group of {max_loops} loops: CCU instance "
                                                           f"{self.instance.handle} has {have} on die {self.die}")

    # -- instructions ----------------------------------------------------------------------------------
    def emit(self, code: str, name: str, site=None, **fields) -> Op:
        """Append instruction ``code`` (``name``: the DSL call, for messages; ``site``: the kernel
        line it stands for, default the caller's) to the open block."""
        if self.loop_depth and code not in LOOP_CODES:
            raise ccu_error(C.CCU_E_PARA, name, "a loop body holds data moves and waits only (CCU_models_concepts.md)")
        if code == "load_arg":
            if self.loaded:
                raise ccu_error(C.CCU_E_PARA, name, "LoadArg must come before every other instruction")
        else:
            self.loaded = True
        op = Op(code, site if site is not None else call_site(), **fields)
        self.blocks[-1].append(op)
        self.instructions += 1
        return op

    def open(self) -> None:
        self.blocks.append([])

    def close(self) -> list:
        return self.blocks.pop()

    def use_channel(self, end) -> None:
        self.channels[end.handle] = end

    @property
    def program(self) -> list:
        return self.blocks[0]


def current(name: str) -> Recorder:
    """The recorder of this context; ``CCU_E_INTERNAL`` from ``name`` outside a registration."""
    rec = recording_var.get()
    if rec is None:
        raise ccu_error(C.CCU_E_INTERNAL, name, "CCU instructions and resources exist only inside a kernel function "
                                                "while HcommCcuKernelRegister (or HcommCcuKernelQueryResReq) runs it")
    return rec
