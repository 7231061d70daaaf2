"""A CCU mission: one launch of a kernel, running its recorded program.

When its launch task's stream reaches it, the mission starts as an actor of its own (the scheduler's
``spawn_kernel``, as an AI CPU kernel; the stream waits for its end) and runs the instructions in
order, reading the registers when each runs:

* ``LoadArg``, assignments and ``If`` act on the die's registers (:class:`~pyhcomm.hcomm.resources.ccu_pool.Die`)
  and the channels' variable slots, and take no time of their own;
* a data move is asynchronous: its task goes onto a lane (a stream of the mission's thread: one per
  channel, one for local moves), followed by the setting of its event bits; the mission goes on;
* ``EventRecord``, ``NotifyRecord``, ``WriteVariableWithNotify`` act at once; ``EventWait`` and
  ``NotifyWait`` block the mission until every bit of their mask is set, then clear those bits;
  each is a host effect of the mission's program per bit of its mask (docs/record.md);
* a ``LoopGroup`` puts each loop it runs (clones included) on a lane of its own, all its iterations
  unrolled (moves, event bits, waits as tasks), and blocks until they are done (a ``CcuLoopGroup``
  host effect joins them);
* at the end the mission waits for its lanes (``CcuMissionEnd``): the launch's stream goes on after
  every move the mission issued.

A mission that cannot go on (a move outside memory, a token that is not the memory's, a wait whose
bits never come: a deadlock) fails its launch's stream; the host's synchronize reports it.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..defs.ccu import CCU_MS_SIZE, CCU_REMOTE_MAX
from ..enums import DATA_TYPE_SIZE, NUMPY_DTYPE
from ..errors import HcclDeadlockError, HcclError, HcclResult, HcclRuntimeError, HcclTimeoutError
from ..hcomm.resources.ccu_pool import ccu_state, mem_token, slot_addr
from ..hcomm.resources.channel import connected_peer
from ..sched import ABORTED, DONE_OK, STUCK, TIMED_OUT, DeviceWait
from ..sim import current_sim, kinds, memory
from ..sim.kernel import KernelContext
from ..sim.runtime import ProgramContext, set_program_ctx
from ..sim.task import PENDING, attribute_to, end_attribution
from ..transport.base import TransportError
from .program import BINARY, COMPARE, MASK64, XN, Buf, ChanVar, Expr, Reg
from .loops import run_group
from .tasks import BufferStore, CcuLocalTask, CcuTransferTask, EventSetTask, Place

API = "HcommCcuKernelLaunch"
_KINDS = {"local_copy": kinds.CCU_LOCAL_COPY, "local_reduce": kinds.CCU_LOCAL_REDUCE,
          "buffer_reduce": kinds.CCU_LOCAL_REDUCE, "write": kinds.CCU_WRITE, "read": kinds.CCU_READ,
          "write_reduce": kinds.CCU_WRITE_REDUCE, "read_reduce": kinds.CCU_READ_REDUCE}


class MissionError(HcclRuntimeError):
    """Why a mission stopped (it fails its launch's stream)."""


class Mission:
    """One launch of a kernel (see the module docstring)."""

    def __init__(self, task):
        self.task, self.kernel, self.args = task, task.ccu_kernel, task.values
        self.thread = task.hthread
        self.sim = current_sim()
        self.state = ccu_state(self.sim)
        self.die = self.state.die(self.thread.device, self.kernel.die)
        timeout = self.sim.config.exec_timeout
        self.timeout = float(timeout) if timeout else None
        self.lanes: dict = {}           # lane key -> stream, used by this mission
        self.site = None
        self.ctx = self.kctx = None
        self.who = f"rank {self.thread.rank} CCU kernel {self.kernel.name!r}"

    # -- the actor --------------------------------------------------------------------------------------
    def start(self) -> None:
        stream = self.task.stream
        self.kctx = KernelContext(f"CCU {self.kernel.name}", stream, 1, self.timeout or 0, self.task.seq)
        self.sim.scheduler.spawn_kernel(stream, self.body)

    def body(self) -> None:
        ctx = self.ctx = ProgramContext(self.sim)
        ctx.device = self.thread.device
        ctx.kernels.append(self.kctx)
        set_program_ctx(ctx)
        try:
            self.run_block(self.kernel.program)
            self.join(kinds.CCU_MISSION_END, "the mission's end", list(self.lanes.values()))
        except HcclError as exc:     # (MissionError, or a wait that timed out or can never end)
            self.abandon(exc)
        except TransportError as exc:
            self.abandon(MissionError(HcclResult.HCCL_E_MEMORY, API, f"{self.who}: {exc}"))
        except Exception as exc:    # (a transport without CCU support, a defect: the stream fails, not the scheduler)
            self.abandon(MissionError(HcclResult.HCCL_E_INTERNAL, API, f"{self.who} failed: {exc!r}"))
        finally:
            self.kctx.end()

    def abandon(self, exc) -> None:
        """The mission failed: its stream fails, what its lanes still hold is dropped."""
        sched = self.sim.scheduler
        for lane in self.lanes.values():
            if lane.queue:
                sched.fail_stream(lane, exc)
        sched.fail_stream(self.task.stream, exc)

    def fail(self, message: str, code=HcclResult.HCCL_E_PARA):
        return MissionError(code, API, f"{self.who}: {message}")

    @contextmanager
    def at(self, site):
        """Attribute what is issued meanwhile to the kernel line ``site``."""
        self.site = site
        token = attribute_to(site)
        try:
            yield
        finally:
            end_attribution(token)

    # -- registers -----------------------------------------------------------------------------------------
    def value(self, x) -> int:
        """The value of an operand now."""
        if type(x) is int:
            return x
        if isinstance(x, Reg):
            return (self.die.xn if x.space == XN else self.die.gsa).get(x.id, 0)
        if isinstance(x, ChanVar):
            end = x.channel
            v = end.registers.variables[x.index]
            self.effect(kinds.CCU_READ_VARIABLE, "ccu variable read", True, reads=((slot_addr(end.key, end.rank, x.index),
                                                                                   8),),
                        channel=end.handle, variable=x.index, value=v)
            return v
        if isinstance(x, Expr):
            a = self.value(x.a)
            return (~a & MASK64) if x.op == "~" else BINARY[x.op](a, self.value(x.b))
        raise TypeError(f"not a CCU operand: {x!r}")

    def store(self, ref, value: int) -> None:
        if isinstance(ref, ChanVar):
            ref.channel.registers.variables[ref.index] = value
        else:
            (self.die.xn if ref.space == XN else self.die.gsa)[ref.id] = value & MASK64

    # -- instructions --------------------------------------------------------------------------------------
    def run_block(self, ops) -> None:
        for op in ops:
            with self.at(op.site):
                getattr(self, "op_" + op.code)(op)

    def op_assign(self, op) -> None:
        self.store(op.dst, self.value(op.value))

    def op_load_arg(self, op) -> None:
        self.store(op.dst, self.args[op.arg])

    def op_if(self, op) -> None:
        c = op.cond
        branch = op.then if COMPARE[c.cmp](self.value(c.lhs), self.value(c.rhs)) else op.orelse
        if branch:
            self.run_block(branch)

    def op_move(self, op) -> None:
        key = ("channel", op.channel.handle) if op.channel is not None else ("local",)
        self.issue_move(op, self.lane(key))

    def op_group(self, op) -> None:
        run_group(self, op)

    def op_event_record(self, op) -> None:
        bits = self.bits(op.event, 0, op.mask)
        for b in bits:
            b.record()
            self.effect(kinds.CCU_EVENT_RECORD, "ccu.EventRecord", True, notify=b, gen=b.gen, cke=op.event.id,
                        mask=op.mask)

    def op_event_wait(self, op) -> None:
        self.wait_bits(self.bits(op.event, 0, op.mask), kinds.CCU_EVENT_WAIT, "ccu.EventWait", op.event.id, op.mask,
                       f"event {op.event.id} of IO die {self.die.die}")

    def op_notify_record(self, op) -> None:
        self.signal(op, kinds.CCU_NOTIFY_RECORD, "ccu.NotifyRecord", None)

    def op_write_variable(self, op) -> None:
        self.signal(op, kinds.CCU_WRITE_VARIABLE, "ccu.WriteVariableWithNotify", (op.slot, self.value(op.value)))

    def op_notify_wait(self, op) -> None:
        end = op.channel
        self.wait_bits(end.registers.bits(op.cke, op.mask), kinds.CCU_NOTIFY_WAIT, "ccu.NotifyWait", op.cke, op.mask,
                       f"channel 0x{end.handle:x} (from rank {end.peer_rank})", channel=end.handle)

    # -- signals and waits ---------------------------------------------------------------------------------
    def peer(self, end):
        """The peer of ``end`` (waiting for it to connect, up to ``HCCL_CONNECT_TIMEOUT``: the channel
        is set up before the kernel's first use of it)."""
        peer = end.peer
        if peer is not None and not peer.closed and not end.closed:
            return peer
        if end.closed:
            raise self.fail(f"channel 0x{end.handle:x} to rank {end.peer_rank} was destroyed")
        try:
            return connected_peer(end, API)
        except HcclError as exc:
            raise MissionError(exc.code, API, f"{self.who}: {exc}") from None

    def signal(self, op, kind, api: str, variable) -> None:
        end = op.channel
        results = self.sim.transport.ccu_signal(self.peer(end).ref, op.cke, op.mask, variable)
        extra, writes = {}, ()
        if variable is not None:
            extra = {"variable": variable[0], "value": variable[1]}
            writes = ((slot_addr(end.key, end.peer_rank, variable[0]), 8),)
        for rn, gen in results or ((None, None),):
            self.effect(kind, api, True, writes=writes, notify=rn, gen=gen, cke=op.cke, mask=op.mask,
                        channel=end.handle, **extra)
            writes = ()

    def bits(self, event: Reg, shift: int, mask: int) -> list:
        reg = event.shifted(shift)
        if reg.id >= reg.end:
            raise self.fail(f"a loop clone's event offset runs past its block: event {reg.id} (block ends at "
                            f"{reg.end})")
        row = self.die.cke(reg.id)
        return [row[b] for b in range(len(row)) if mask >> b & 1]

    def effect(self, kind, api: str, ok: bool, reads=(), writes=(), **extra) -> None:
        t = self.thread
        self.sim.record.effect(kind, api, ok, t.rank, t.device, t.engine, t.handle, t.stream.handle, reads, writes,
                               extra, self.ctx)

    def wait_bits(self, bits, kind, api: str, cke: int, mask: int, where: str, channel=None) -> None:
        """Block until every bit of ``bits`` is set (or a lane failed); record and clear them."""
        lanes = list(self.lanes.values())

        def done():
            return all(b.value > 0 for b in bits) or any(lane.error is not None for lane in lanes)

        what = f"{self.who} {api}({where}, CKE {cke}, mask 0x{mask:04x})"
        status = self.device_wait(done, what, list(bits) + lanes)
        ok = status == DONE_OK and all(b.value > 0 for b in bits)
        for b in bits:
            self.effect(kind, api, ok, waits=True, notify=b, gen=b.gen if ok else None, timeout=self.timeout or 0.0,
                        cke=cke, mask=mask, channel=channel)
        if ok:
            for b in bits:
                b.consume()
            return
        self.lane_error(lanes)
        missing = sum(1 << b.index for b in bits if b.value <= 0)
        raise self.wait_failure(status, f"{api} on CKE {cke} of {where} waits for mask 0x{mask:04x}; bits "
                                        f"0x{missing:04x} were never set")

    def device_wait(self, done, what: str, watched: list) -> str:
        """``run_until(done)`` for a wait of the mission: the device's (``HCCL_EXEC_TIMEOUT``), not a
        timeout a host caller chose, so a hang ends it at once (``expire_on_hang``: ``STUCK``), as an
        AIV kernel's, before the streams and host programs waiting for the mission."""
        sched = self.sim.scheduler
        expiry = DeviceWait(what)
        sched.expire_on_hang(expiry)
        try:
            status = sched.run_until(lambda: expiry.expired or done(), self.timeout, what, watched + [expiry])
        finally:
            sched.expire_on_hang(expiry, False)
        return STUCK if status == DONE_OK and expiry.expired and not done() else status

    def wait_failure(self, status, message: str):
        if status == TIMED_OUT:
            return HcclTimeoutError(HcclResult.HCCL_E_TIMEOUT, API, f"{self.who}: {message} within {self.timeout:g} s")
        if status == ABORTED:
            return MissionError(HcclResult.HCCL_E_INTERNAL, API, f"{self.who}: aborted: "
                                                                 f"{self.sim.scheduler.abort_reason}")
        why = "a deadlock: no other rank can run any more" if status == STUCK else status
        return HcclDeadlockError(HcclResult.HCCL_E_TIMEOUT, API, f"{self.who}: {message} ({why})")

    def lane_error(self, lanes) -> None:
        for lane in lanes:
            if lane.error is not None:
                err = lane.error
                raise MissionError(getattr(err, "code", HcclResult.HCCL_E_INTERNAL), API,
                                   f"{self.who}: a move failed: {err}")

    def join(self, kind, what: str, lanes) -> None:
        """Block until ``lanes`` ran what they hold (a ``kind`` host effect joins them)."""
        if not lanes:
            return

        def done():
            return all(lane.idle or lane.error is not None for lane in lanes)

        status = self.device_wait(done, f"{self.who} ({what})", lanes)
        ok = status == DONE_OK and not any(lane.error is not None for lane in lanes)
        self.effect(kind, API, ok, streams=tuple(lane.handle for lane in lanes),
                    result="done" if ok else ("failed" if status == DONE_OK else status))
        self.lane_error(lanes)
        if status != DONE_OK:
            raise self.wait_failure(status, f"{what}: its moves and waits never ran")

    # -- lanes and moves ------------------------------------------------------------------------------------
    def lane(self, key):
        """The lane ``key`` of the mission's thread (made once per thread; kept for its next missions)."""
        lane = self.lanes.get(key)
        if lane is None:
            per_thread = self.state.lanes.setdefault(self.thread.handle, {})
            lane = per_thread.get(key)
            if lane is None or lane.destroyed:
                dev = self.sim.runtime.devices[self.thread.device]
                lane = per_thread[key] = dev.new_stream(f"CCU lane {'/'.join(map(str, key))} of thread "
                                                        f"0x{self.thread.handle:x}")
            self.lanes[key] = lane
        return lane

    def place(self, task, lane) -> None:
        """Set where a lane task runs and who issued it."""
        t = self.thread
        task.stream, task.device, task.thread, task.rank, task.engine = lane, lane.device, t.handle, t.rank, t.engine
        task.t_head, task.state, task.side = None, PENDING, "device"
        task.code, task.lasti = self.site if self.site is not None else (None, None)
        self.own(task)

    def own(self, task) -> None:
        task.program, task.kernel = self.ctx.program, self.kctx.seq

    def issue_move(self, op, lane, addr_shift: int = 0, ms_shift: int = 0, cke_shift: int = 0) -> None:
        """Issue ``op`` (a move) on ``lane``, then the setting of its event bits."""
        n = self.value(op.length)
        remote = op.channel is not None
        self.check_length(n, op, remote, ms_shift)
        bits = self.bits(op.event, cke_shift, op.mask)
        kind = _KINDS[op.move]
        if op.move == "buffer_reduce":
            dst, src = self.place_of(op.dst, n, addr_shift, ms_shift), [self.place_of(s, n, 0, ms_shift)
                                                                        for s in op.src]
        else:
            end = op.channel
            dst = self.place_of(op.dst, n, addr_shift, ms_shift, end)
            src = self.place_of(op.src, n, addr_shift, ms_shift, end)
        count = np_dtype = None
        if op.dtype is not None:
            size = DATA_TYPE_SIZE[op.dtype]
            if n % size:
                raise self.fail(f"a reduce of {n} bytes is not a whole number of {size}-byte elements")
            count, np_dtype = n // size, NUMPY_DTYPE[op.dtype]
        if not remote:
            task = CcuLocalTask(kind, lane, self, dst, src, n, count, np_dtype, op.op)
        else:
            write = op.move.startswith("write")
            self.peer(op.channel)
            local, far = (src, dst) if write else (dst, src)
            task = CcuTransferTask(kind, lane, self, op.channel, local, far.addr, n, write, count, np_dtype, op.op)
        sched = self.sim.scheduler
        sched.submit(task)
        for b in bits:
            sched.submit(EventSetTask(lane, self, b, op.event.id + cke_shift))

    def check_length(self, n: int, op, remote: bool, ms_shift: int) -> None:
        if n == 0:
            raise self.fail(f"{op.move}: a data move of 0 bytes (its hardware behaviour is undefined)")
        if remote and n >= CCU_REMOTE_MAX:
            raise self.fail(f"{op.move}: a remote move of {n} bytes (it must be shorter than 256 MB)")
        for x in [op.dst] + (op.src if isinstance(op.src, list) else [op.src]):
            if isinstance(x, Buf):
                reg = x.reg.shifted(ms_shift)
                if reg.id + -(-n // CCU_MS_SIZE) > reg.end:
                    raise self.fail(f"{op.move}: a CCU buffer move of {n} bytes from ms[{reg.id}] runs past its "
                                    f"block ({reg.end - reg.id} slice(s) of {CCU_MS_SIZE} bytes left)")

    def place_of(self, x, n: int, addr_shift: int, ms_shift: int, end=None) -> Place:
        """Where operand ``x`` (a Buf or a Mem) of a move of ``n`` bytes is, checked."""
        if isinstance(x, Buf):
            reg = x.reg.shifted(ms_shift)
            return Place(self.die.ms_addr(reg.id), BufferStore(self.die), reg.id * CCU_MS_SIZE)
        addr = (self.value(x.addr) + addr_shift) & MASK64
        token = self.value(x.token)
        if x.remote:
            device = self.sim.transport.members(end.world_id).get(end.peer_rank)
            if token != mem_token(device):
                raise self.fail(f"the token of remote address 0x{addr:x} is not rank {end.peer_rank}'s memory token "
                                "(HcommCcuGetMemToken on that rank, exchanged)")
            return Place(addr)
        if token != mem_token(self.thread.device):
            raise self.fail(f"the token of local address 0x{addr:x} is not this device's memory token "
                            "(HcommCcuGetMemToken)")
        try:
            alloc = memory.resolve(addr, n, memory.DEVICE, self.thread.device)
        except memory.BadRange as why:
            raise self.fail(f"a move of {n} bytes at {why}") from None
        return Place(addr, alloc, addr - alloc.addr)


__all__ = ["Mission", "MissionError"]
