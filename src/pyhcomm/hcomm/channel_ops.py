"""The channel data plane: one-sided writes and reads between ranks, channel notifies, fences.

Semantics (hcomm-api §2.5-§2.8): ``Write`` copies local ``src`` to the peer's ``dst``; ``Read``
copies the peer's ``src`` to local ``dst``; the ``*Reduce`` variants combine instead of copying
(data types and ops as ``HcommLocalReduceOnThread``). A remote range must lie wholly inside
memory the peer exposed on that channel (its HCCL buffer, or memory it registered and listed);
anything else is ``HCCL_E_PARA`` at the call: no rank can touch memory a peer did not expose.
``ChannelNotifyRecord`` sets the peer's notify ``k``; ``ChannelNotifyWait`` waits for this end's
own notify ``k``; both are 1-bit registers like thread notifies (index out of range:
``HCCL_E_PARA``, pyhcomm's choice: the real code is transport-specific).

Product rules: on Atlas 350, ``Write``/``Read`` need a UBC_TP, UBC_CTP or UBoE channel; the
``WithNotify`` writes are Atlas 350 only (device side); the NBI calls are Atlas 350 host CPU-engine
RoCE calls that complete when posted; ``HcommBatchTransferOnThread`` is device side only, and on
A2/A3 RoCE WRITE/READ only. A call's side must match the channel's engine (host engines from the
host, device engines inside a kernel).
"""
from __future__ import annotations

from .. import args
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx, program_var
from ..sched import ABORTED, DONE_OK, TIMED_OUT
from ..sim import kinds
from ..sim.record import outcome
from ..sim.task import SiteTask, call_site
from ..enums import DATA_TYPE_SIZE, NUMPY_DTYPE
from .resources.engines import HOST_NBI
from ..errors import HcclResult, HcclRuntimeError, hccl_error, not_support, para, ptr
from .resources.channel import connected_peer, get_channel
from ..defs.primitives import HcommBatchTransferDesc, HcommTransferType  # noqa: F401
from ..topology import CommProtocol
from ..transport.base import TransportError
from . import validate as v
from .enqueue import enqueue
from .task_cache import capture
from .notify import DEFAULT_TIMEOUT, NotifyRecordTask, NotifyWaitTask, _check_timeout, default_timeout
from .notify import UINT32_MAX as _TIMEOUT_MAX
from .reduce import check_dtype_op

P = CommProtocol
UB_DATA = {P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBOE}


T = HcommTransferType


# -- shared checks -------------------------------------------------------------------------------
def _thread_and_channel(thread, channel, api):
    """Check a thread and a channel of one rank, used from their side; return
    ``(thread, channel end, peer end, the caller's program context)``."""
    # (v.issuing_thread and program_ctx inlined: this runs for every channel task)
    ctx = program_var.get(None)
    if ctx is None or ctx.sim is not _sim():
        ctx = program_ctx()
    handles = ctx.sim.handles
    t = handles.threads.by_handle.get(thread) if type(thread) is int else None
    kernels = ctx.kernels
    device_side = bool(kernels)
    if (t is None or t.stream.destroyed or t.host_side == device_side or not ctx.sim.runtime.product.hcomm
            or device_side):
        t, ctx, device_side = v.issuing_thread(thread, api)
    ch = handles.channels.by_handle.get(channel) if type(channel) is int else None
    if ch is None:
        ch = get_channel(channel, api)
    if ch.comm is not t.comm and not (ch.comm.device == t.device and (ch.comm.l3 or t.comm.l3)):
        raise para(api, f"channel 0x{ch.handle:x} belongs to rank {ch.comm.rank}, thread 0x{t.handle:x} to "
                        f"rank {t.rank}")
    if ch.host_side == device_side:
        where = "inside a kernel" if device_side else "from the host"
        raise not_support(api, f"channel 0x{ch.handle:x} is a {ch.engine.name} channel: it cannot be used {where}")
    peer = ch.peer
    if peer is None or peer.closed:
        peer = connected_peer(ch, api, wait=not device_side)
    return t, ch, peer, ctx


def _data_protocol(ch, api):
    if _sim().runtime.product.is_950 and ch.protocol not in UB_DATA:
        raise not_support(api, f"on {_sim().runtime.product.name} this call needs a UBC_TP, UBC_CTP or UBOE channel, "
                               f"not {ch.protocol.name}")


def remote_range(peer, addr, n, api, name) -> None:
    """Check a remote range: it must lie in memory ``peer`` (a PeerInfo) exposed (a zero-length
    range needs an address inside it, as :func:`pyhcomm.sim.memory.resolve`)."""
    for start, size, _label, _tag in peer.regions:
        if start <= addr < start + size and addr + n <= start + size:
            return
    shown = ", ".join(f"{label} 0x{start:x} + {size}" for start, size, label, _tag in peer.regions)
    raise para(api, f"{name} 0x{addr:x} + {n} is not memory rank {peer.ref.rank} exposed on this channel "
                    f"({shown})")


def _land(api, transport, peer, remote, alloc, off, n, write, np_dtype=None, op=None) -> None:
    """A transfer through ``transport``: ``n`` bytes, local ``alloc + off`` -> the peer's ``remote``
    (``write``) or back; with ``np_dtype``, ``n`` elements reduced with ``op`` into the peer's
    (``write``) or into the local ones."""
    if alloc.storage is None:
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, api, "memory was freed before the transfer ran")
    try:
        if np_dtype is None:
            (transport.put if write else transport.get)(peer, remote, alloc, off, n)
        else:
            transport.accumulate(peer, remote, alloc, off, n, np_dtype, op, write)
    except TransportError as why:
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, api, f"the transfer did not land: {why}") from None


def _peer_notify(peer, idx, api, name="remoteNotifyIdx"):
    """The peer's notify ``idx`` as a value (:class:`~pyhcomm.transport.base.RemoteNotify`)."""
    idx = args.integer(idx, api, name, -(1 << 64), args.UINT64_MAX)
    if not 0 <= idx < len(peer.notifies):
        raise para(api, f"{name} {idx} is out of range: the channel end of rank {peer.ref.rank} has "
                        f"{len(peer.notifies)} notifies")
    return peer.notifies[idx]


class TransferTask(SiteTask):
    """A one-sided transfer (``Write``, ``Read``, ``WriteReduce``, ``ReadReduce``): the operands in
    slots, no tuple per task (the hot path of every algorithm: one object for the garbage collector
    to track instead of eight). ``args``, ``reads``, ``writes`` and ``detail`` are made when read;
    the record's readers read the slots its kind names (:mod:`pyhcomm.sim.kinds`: ``nbytes``,
    ``channel``, ``remote``, the peer's address, ...)."""

    __slots__ = ("kind", "api", "peer", "remote", "alloc", "off", "nbytes", "count", "dtype", "op", "write",
                 "src", "dst", "channel", "peer_rank", "transport")
    notify = None               # (the WithNotify kinds have their own)

    def __init__(self, kind, api, t, side, peer, remote, alloc, off, nbytes, write, src, dst, channel, peer_rank,
                 transport, site, count=None, dtype=None, op=None):
        self.kind, self.api = kind, api
        self.on_thread(t, side)
        self.peer, self.remote, self.alloc, self.off, self.nbytes, self.write = peer, remote, alloc, off, nbytes, write
        self.src, self.dst, self.channel, self.peer_rank, self.transport = src, dst, channel, peer_rank, transport
        self.count, self.dtype, self.op = count, dtype, op
        self.code, self.lasti = site if site is not None else (None, None)

    @property
    def args(self) -> tuple:
        """A copy: ``(api, peer, remote, alloc, off, nbytes, notify, write)``; a reduce:
        ``(api, peer, remote, alloc, off, count, np_dtype, op, notify, into_peer)``."""
        if self.dtype is None:
            return (self.api, self.peer, self.remote, self.alloc, self.off, self.nbytes, self.notify, self.write)
        return (self.api, self.peer, self.remote, self.alloc, self.off, self.count, self.dtype, self.op, self.notify,
                self.write)

    @property
    def reads(self) -> tuple:
        if self.dtype is None:
            return ((self.src, self.nbytes),)
        return ((self.src, self.nbytes), (self.dst, self.nbytes))

    @property
    def writes(self) -> tuple:
        return ((self.dst, self.nbytes),)

    @property
    def detail(self) -> tuple:
        return (self.channel, self.peer_rank)

    def run(self) -> None:
        dtype = self.dtype
        _land(self.api, self.transport, self.peer, self.remote, self.alloc, self.off,
              self.nbytes if dtype is None else self.count, self.write, dtype, self.op)


class NotifyingTransferTask(TransferTask):
    """A :class:`TransferTask` that ends by recording the peer's ``notify`` (``WriteWithNotify``,
    ``WriteReduceWithNotify``): a recorder of that notify, like a notify record task; ``gen`` is the
    generation it set (when known), stored when it ran."""

    __slots__ = ("notify", "gen")
    waits = False

    def run(self) -> None:
        TransferTask.run(self)
        self.gen = self.transport.remote_notify(self.peer, self.notify.index)


class RemoteRecordTask(NotifyRecordTask):
    """``ChannelNotifyRecord``: record a notify of the peer's end (``notify`` is a
    :class:`~pyhcomm.transport.base.RemoteNotify` value) through the transport."""

    __slots__ = ("transport",)    # the Sim's transport (set at issue: a lookup less per run)

    def run(self) -> None:
        n = self.notify
        self.gen = self.transport.remote_notify(n.peer, n.index)


#: ``notify_idx`` of a transfer that records no notify (a ``WithNotify`` call's index is checked,
#: ``None`` included: it is not "no notify").
NO_NOTIFY = object()


def _transfer(kind, api, thread, channel, dst, src, n, write: bool, reduce=None, notify_idx=NO_NOTIFY,
              require_950=False, now=False, defer=False):
    """Validate and issue one transfer (``write``: local src -> remote dst; else remote -> local)."""
    # (Cheap tests for the common case first, falling back to the helpers that raise: this
    # runs for every transfer.)
    if not dst or type(dst) is not int:
        dst = v.nonnull(dst, api, "dst")
    if not src or type(src) is not int:
        src = v.nonnull(src, api, "src")
    dt = op = None
    if reduce is not None:
        dt, op, _eng = check_dtype_op(reduce[0], reduce[1], bool(program_ctx().kernels), api)
    if now:     # (NBI: ``channel`` is the end :func:`nbi` checked)
        t, ch = None, channel
        v.product_supports_hcomm(api)
        peer = connected_peer(ch, api)
        ctx = program_ctx()
    else:
        t, ch, peer, ctx = _thread_and_channel(thread, channel, api)
    product = ctx.sim.runtime.product
    if require_950 and not product.is_950:
        raise not_support(api, f"not supported on {product.name} (Atlas 350 only)")
    if reduce is None and not now and product.is_950:  # NBI calls are RoCE by definition (_nbi_check)
        _data_protocol(ch, api)
    count = n if type(n) is int and 0 <= n <= v.UINT64_MAX else v.length(n, api, "count" if reduce is not None
                                                                          else "len")
    nbytes = count * DATA_TYPE_SIZE[dt] if reduce is not None else count
    if nbytes > v.UINT64_MAX:
        raise para(api, f"count {count} x {DATA_TYPE_SIZE[dt]} bytes overflows uint64")
    device = ch.comm.device
    if write:
        remote, name = dst, "dst"
    else:
        remote, name = src, "src"
        alloc, off = (v.thread_dst(t, dst, nbytes, api) if t is not None
                      else v.device_range(dst, nbytes, device, api, "dst"))
    for start, size, _label, _tag in peer.regions:   # remote_range's check, inline: every transfer
        if start <= remote < start + size and remote + nbytes <= start + size:
            break
    else:
        remote_range(peer, remote, nbytes, api, name)   # raises
    if write:
        alloc, off = (v.thread_src(t, src, nbytes, api) if t is not None
                      else v.device_range(src, nbytes, device, api, "src"))
    notify = _peer_notify(peer, notify_idx, api) if notify_idx is not NO_NOTIFY else None
    np_dtype, op = (None, None) if reduce is None else (NUMPY_DTYPE[dt], int(op))
    transport = ctx.sim.transport
    if now:  # NBI: the host CPU posts the request and it completes at once here
        _land(api, transport, peer.ref, remote, alloc, off, nbytes if reduce is None else count, write, np_dtype, op)
        gen = transport.remote_notify(peer.ref, notify.index) if notify is not None else None
        kind = (kinds.WRITE_WITH_NOTIFY_NBI if notify is not None else kinds.WRITE_NBI) if write else kinds.READ_NBI
        ctx.sim.record.effect(kind, api, True, ch.comm.rank, device, ch.engine, None, None, ((src, nbytes),),
                              ((dst, nbytes),), {"channel": ch.handle, "peer": peer.ref.rank, "nbytes": nbytes,
                                                 "notify": notify, "gen": gen}, ctx)
        return
    side = "device" if ctx.kernels else "host"
    task = (TransferTask if notify is None else NotifyingTransferTask)(
        kind, api, t, side, peer.ref, remote, alloc, off, nbytes, write, src, dst, ch.handle, ch.peer_rank, transport,
        call_site(), count if reduce is not None else None, np_dtype, op)
    if notify is not None:  # the notify it sets is a field: hang reports see the task as a recorder
        task.notify = notify
    if defer:
        return task
    if not ctx.kernels and ctx.batch is None:   # (enqueue's common case, inline)
        task.program = ctx.program
        ctx.sim.scheduler.submit(task)
    else:
        enqueue(task, api, ctx)
        if ctx.kernels:   # the public call, as the task cache replays it
            capture(ctx, _PUBLIC[api], (thread, channel, dst, src, n) + (reduce or ())
                    + ((notify_idx,) if notify_idx is not NO_NOTIFY else ()))


# -- one-sided transfers ---------------------------------------------------------------------------
def write(thread, channel, dst, src, n, defer=False):
    """``HcommWriteOnThread``: enqueue local ``src`` -> the peer's ``dst``."""
    return _transfer(kinds.WRITE, "HcommWriteOnThread", thread, channel, dst, src, n, True, defer=defer)


def read(thread, channel, dst, src, n, defer=False):
    """``HcommReadOnThread``: enqueue the peer's ``src`` -> local ``dst``."""
    return _transfer(kinds.READ, "HcommReadOnThread", thread, channel, dst, src, n, False, defer=defer)


def write_reduce(thread, channel, dst, src, count, data_type, reduce_op, defer=False):
    return _transfer(kinds.WRITE_REDUCE, "HcommWriteReduceOnThread", thread, channel, dst, src, count, True,
              (data_type, reduce_op), defer=defer)


def read_reduce(thread, channel, dst, src, count, data_type, reduce_op, defer=False):
    return _transfer(kinds.READ_REDUCE, "HcommReadReduceOnThread", thread, channel, dst, src, count, False,
              (data_type, reduce_op), defer=defer)


def write_with_notify(thread, channel, dst, src, n, remote_notify_idx, defer=False):
    return _transfer(kinds.WRITE_WITH_NOTIFY, "HcommWriteWithNotifyOnThread", thread, channel, dst, src, n, True,
              notify_idx=remote_notify_idx, require_950=True, defer=defer)


def write_reduce_with_notify(thread, channel, dst, src, count, data_type, reduce_op, remote_notify_idx,
                             defer=False):
    return _transfer(kinds.WRITE_REDUCE_WITH_NOTIFY, "HcommWriteReduceWithNotifyOnThread", thread, channel, dst, src,
                     count, True, (data_type, reduce_op), remote_notify_idx, require_950=True, defer=defer)


#: The call each transfer API is (what :func:`_transfer` gives the task cache to replay).
_PUBLIC = {"HcommWriteOnThread": write, "HcommReadOnThread": read, "HcommWriteReduceOnThread": write_reduce,
           "HcommReadReduceOnThread": read_reduce, "HcommWriteWithNotifyOnThread": write_with_notify,
           "HcommWriteReduceWithNotifyOnThread": write_reduce_with_notify}


# -- non-blocking (NBI) host calls: engines that run them (Atlas 350 COMM_ENGINE_CPU), RoCE ---------------
def _nbi_check(channel, api):
    ch = get_channel(channel, api)
    if program_ctx().kernels or not HOST_NBI <= ch.engine.runs or ch.protocol != P.COMM_PROTOCOL_ROCE:
        raise not_support(api, "non-blocking calls are supported on Atlas 350 only, from the host, on "
                               "COMM_ENGINE_CPU RoCE channels")
    return ch


def nbi(api, channel, dst, src, n, write_: bool, notify_idx=NO_NOTIFY):
    """The NBI family: the transfer is done when the call returns (completion = fence)."""
    dst = v.nonnull(dst, api, "dst")
    src = v.nonnull(src, api, "src")
    ch = _nbi_check(channel, api)
    n = v.length(n, api, "len")
    if n == 0:
        raise para(api, "len must be greater than 0")
    _transfer(None, api, 0, ch, dst, src, n, write_, notify_idx=notify_idx, now=True)


# -- channel notifies --------------------------------------------------------------------------------
def notify_record(thread, channel, remote_notify_idx, defer=False):
    """``HcommChannelNotifyRecordOnThread``: enqueue a record of the peer's notify."""
    api = "HcommChannelNotifyRecordOnThread"
    t, ch, peer, ctx = _thread_and_channel(thread, channel, api)
    notifies = peer.notifies
    if type(remote_notify_idx) is int and 0 <= remote_notify_idx < len(notifies):
        n = notifies[remote_notify_idx]
    else:
        n = _peer_notify(peer, remote_notify_idx, api)   # raises
    task = RemoteRecordTask(kinds.CHANNEL_NOTIFY_RECORD, t.stream, t.handle, t.rank,
                            "device" if ctx.kernels else "host", n, (ch.handle, ch.peer_rank, n.index), engine=t.engine)
    task.transport = ctx.sim.transport
    if defer:
        return task
    if not ctx.kernels and ctx.batch is None:   # (enqueue's common case, inline)
        task.program = ctx.program
        ctx.sim.scheduler.submit(task)
    else:
        enqueue(task, api, ctx)
        if ctx.kernels:
            capture(ctx, notify_record, (thread, channel, remote_notify_idx))


def notify_wait(thread, channel, local_notify_idx, timeout, api="HcommChannelNotifyWaitOnThread"):
    """``HcommChannelNotifyWaitOnThread``: enqueue a wait for this end's notify."""
    t, ch, _peer, ctx = _thread_and_channel(thread, channel, api)
    if type(local_notify_idx) is not int:
        local_notify_idx = args.integer(local_notify_idx, api, "localNotifyIdx", -(1 << 64), args.UINT64_MAX)
    if not 0 <= local_notify_idx < len(ch.notifies):
        args.integer(local_notify_idx, api, "localNotifyIdx", -(1 << 64), args.UINT64_MAX)
        raise para(api, f"localNotifyIdx {local_notify_idx} is out of range: this channel end has "
                        f"{len(ch.notifies)} notifies")
    side = "device" if ctx.kernels else "host"
    if timeout is DEFAULT_TIMEOUT:
        timeout = default_timeout(side, api)
    elif type(timeout) is not int or not 0 <= timeout <= _TIMEOUT_MAX:
        timeout = _check_timeout(timeout, api)
    if timeout == 0 and ch.protocol in ch.engine.channels.timed_waits:
        raise para(api, "timeOut must be greater than 0 on the host CPU RoCE path")
    task = NotifyWaitTask(kinds.CHANNEL_NOTIFY_WAIT, t.stream, t.handle, t.rank, side, ch.notifies[local_notify_idx],
                          (ch.handle, local_notify_idx), timeout, engine=t.engine)
    if not ctx.kernels and ctx.batch is None:   # (enqueue's common case, inline)
        task.program = ctx.program
        ctx.sim.scheduler.submit(task)
    else:
        enqueue(task, api, ctx)
        if ctx.kernels:
            capture(ctx, notify_wait, (thread, channel, local_notify_idx, timeout, api))


def notify_wait_default(thread, channel, local_notify_idx):
    notify_wait(thread, channel, local_notify_idx, DEFAULT_TIMEOUT, "HcommChannelNotifyWaitOnThreadWithDefaultTimeout")


def notify_record_now(channel, remote_notify_idx):
    """``HcommChannelNotifyRecord`` (no thread; Atlas 350 host CPU RoCE): set the peer's notify now."""
    api = "HcommChannelNotifyRecord"
    ch = _nbi_check(channel, api)
    peer = connected_peer(ch, api)
    n = _peer_notify(peer, remote_notify_idx, api)
    gen = _sim().transport.remote_notify(n.peer, n.index)
    _sim().record.host_effect(kinds.CHANNEL_NOTIFY_RECORD_NOW, api, rank=ch.comm.rank, device=ch.comm.device,
                              engine=ch.engine, channel=ch.handle, peer=ch.peer_rank, notify=n, gen=gen)


def notify_wait_now(channel, local_notify_idx, timeout):
    """``HcommChannelNotifyWait`` (no thread): block the host until this end's notify is set."""
    api = "HcommChannelNotifyWait"
    ch = _nbi_check(channel, api)
    local_notify_idx = args.integer(local_notify_idx, api, "localNotifyIdx", -(1 << 64), args.UINT64_MAX)
    if not 0 <= local_notify_idx < len(ch.notifies):
        raise para(api, f"localNotifyIdx {local_notify_idx} is out of range ({len(ch.notifies)} notifies)")
    timeout = _check_timeout(timeout, api)
    if timeout == 0:
        raise para(api, "timeOut must be greater than 0 on the host CPU RoCE path")
    n = ch.notifies[local_notify_idx]
    sim = _sim()
    status = sim.scheduler.run_until(lambda: n.value > 0, timeout, f"{api}(channel 0x{ch.handle:x})", (n,))
    ok = status == DONE_OK
    sim.record.effect(kinds.CHANNEL_NOTIFY_WAIT_NOW, api, ok, ch.comm.rank, ch.comm.device, ch.engine, None, None, (),
                      (), {"channel": ch.handle, "notify": n, "gen": n.gen if ok else None, "timeout": float(timeout),
                           "waits": True}, None)
    if status == TIMED_OUT:
        raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"notify {local_notify_idx} was not recorded in {timeout} s")
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {_sim().scheduler.abort_reason}")
    if status != DONE_OK:
        raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"notify {local_notify_idx} of channel 0x{ch.handle:x} can "
                                                         "never be recorded: every host thread is blocked")
    n.consume()


# -- fences and drain ----------------------------------------------------------------------------------
def channel_fence_on_thread(thread, channel):
    """``HcommChannelFenceOnThread``: tasks of a thread already run in order, so nothing to add.
    The Atlas 350 host's fence ignores the thread (as the NBI calls) and completes the channel's
    NBI operations; inside a kernel the thread and channel are checked as every channel call's
    (its own device's, one rank's)."""
    api = "HcommChannelFenceOnThread"
    if _sim().runtime.product.is_950 and not program_ctx().kernels:
        _record_fence(get_channel(channel, api), api)
        return
    ctx = _thread_and_channel(thread, channel, api)[3]
    if not ctx.kernels:
        raise not_support(api, f"not supported from the host on {_sim().runtime.product.name}")
    capture(ctx, channel_fence_on_thread, (thread, channel))


def channel_fence(channel):
    """``HcommChannelFence``: Atlas 350 host CPU only: every NBI call issued on the channel has
    landed when it returns (the transport's fence)."""
    api = "HcommChannelFence"
    ch = _nbi_check(channel, api)
    if ch.peer_ref is not None:
        _sim().transport.fence(ch.peer_ref)
    _record_fence(ch, api)


def _record_fence(ch, api) -> None:
    """The record's ``Fence`` of a channel: the NBI operations posted on it are complete."""
    _sim().record.host_effect(kinds.FENCE, api, rank=ch.comm.rank, device=ch.comm.device, engine=ch.engine,
                              result="done", channel=ch.handle)


def channel_drain(thread, channel):
    """``HcommChannelDrainOnThread``: block until the thread's submitted tasks ran (device side)."""
    api = "HcommChannelDrainOnThread"
    t, ch, _, _ctx = _thread_and_channel(thread, channel, api)
    if not program_ctx().kernels:
        raise not_support(api, "supported on the device side only")
    st = t.stream
    if st is program_ctx().kernels[-1].stream:
        raise para(api, "the thread runs on the stream of the calling kernel: it can never drain")
    status = _sim().scheduler.run_until(lambda: st.idle or st.error is not None, None,
                                        f"{api}(thread 0x{t.handle:x})", (st,))
    _sim().record.host_effect(kinds.CHANNEL_DRAIN, api, ok=status == DONE_OK and st.error is None, rank=t.rank,
                              device=t.device, engine=t.engine, thread=t.handle, stream=st.handle,
                              streams=(st.handle,), result=outcome(status, st.error), channel=ch.handle)
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {_sim().scheduler.abort_reason}")
    if status != DONE_OK:
        raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"thread 0x{t.handle:x} can never drain: nothing else "
                                                         "can progress")
    capture(program_ctx(), channel_drain, (thread, channel))


# -- batch transfer -----------------------------------------------------------------------------------
def batch_transfer(thread, channel, descs, num=None):
    """``HcommBatchTransferOnThread``: issue ``num`` descriptors (default: all) in array order
    (device side). Every descriptor is checked before any is issued."""
    api = "HcommBatchTransferOnThread"
    if descs is None:
        raise ptr(api, "transferDescs is NULL")
    if isinstance(descs, HcommBatchTransferDesc):
        descs = [descs]
    elif not isinstance(descs, (list, tuple)):
        raise para(api, f"transferDescs must be a list of HcommBatchTransferDesc, not {type(descs).__name__}")
    num = len(descs) if num is None else args.integer(num, api, "transferDescNum", -(1 << 64), args.UINT64_MAX)
    if num <= 0:
        raise para(api, f"transferDescNum {num} must be greater than 0")
    if len(descs) < num:
        raise para(api, f"transferDescNum {num} but only {len(descs)} descriptors")
    for i, d in enumerate(descs[:num]):
        if not isinstance(d, HcommBatchTransferDesc):
            raise para(api, f"transferDescs[{i}] must be an HcommBatchTransferDesc, not {type(d).__name__}")
    if not program_ctx().kernels:
        raise not_support(api, "the host implementation does not support batch transfers")
    t, ch, _, _ctx = _thread_and_channel(thread, channel, api)
    if not _sim().runtime.product.is_950:
        if ch.protocol != P.COMM_PROTOCOL_ROCE:
            raise not_support(api, f"on {_sim().runtime.product.name} batch transfers need a RoCE channel")
        bad = [i for i, d in enumerate(descs[:num]) if d.transType not in (T.HCOMM_TRANSFER_TYPE_WRITE,
                                                                           T.HCOMM_TRANSFER_TYPE_READ)]
        if bad:
            raise not_support(api, f"on {_sim().runtime.product.name} only WRITE and READ descriptors are supported "
                                   f"(descriptor {bad[0]})")
    tasks = []  # validate every descriptor first, then issue them all
    for i, d in enumerate(descs[:num]):
        kind = d.transType
        if kind == T.HCOMM_TRANSFER_TYPE_WRITE:
            tasks.append(write(thread, channel, d.dst, d.src, d.len, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_READ:
            tasks.append(read(thread, channel, d.dst, d.src, d.len, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE:
            tasks.append(write_reduce(thread, channel, d.dst, d.src, d.count, d.dataType, d.reduceOp, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_READ_REDUCE:
            tasks.append(read_reduce(thread, channel, d.dst, d.src, d.count, d.dataType, d.reduceOp, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_WRITE_WITH_NOTIFY:
            tasks.append(write_with_notify(thread, channel, d.dst, d.src, d.len, d.notifyIdx, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE_WITH_NOTIFY:
            tasks.append(write_reduce_with_notify(thread, channel, d.dst, d.src, d.count, d.dataType,
                                                  d.reduceOp, d.notifyIdx, True))
        elif kind == T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD:
            tasks.append(notify_record(thread, channel, d.notifyIdx, True))
        else:
            raise para(api, f"descriptor {i} has transType {kind!r}, not an HcommTransferType")
    for task in tasks:
        enqueue(task, api)
    capture(program_ctx(), batch_transfer, (thread, channel, descs, num))
