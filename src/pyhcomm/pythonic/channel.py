"""Channels as objects: this rank's end of a link to a peer (``ChannelHandle``), with the
one-sided transfers, channel notifies and fences of ``hcomm_primitives.h``.

A :class:`Channel` comes from :meth:`pyhcomm.pythonic.Comm.channel`, which picks the protocol
from the rank graph. Transfers take the issuing :class:`~pyhcomm.pythonic.Thread` first, as the
C calls do; the remote side is a :class:`~pyhcomm.pythonic.memory.RemoteBuffer` the peer exposed
(:meth:`Channel.peer_hccl_buffer`, :meth:`Channel.remote_mems`) or an address in it, the local
side a :class:`~pyhcomm.pythonic.memory.Buffer` or an address. Every call enqueues and returns
at once, except those that say they block.

    right = comm.channel((comm.rank + 1) % comm.size, notify_num=2)
    theirs = right.peer_hccl_buffer()
    right.write(thread, theirs[:n], mine[:n])      # my bytes into the right rank's HCCL buffer
    right.record(thread, 1)                         # then set its notify 1
"""
from __future__ import annotations

from ..hcomm import channel_ops as _chops
from ..hcomm.resources import channel as _ch
from ..enums import CommEngine
from ..defs.res_defs import CommProtocol
from ._common import addr, common_size, element_count, public_engine, reduce_dtype, reduce_op
from .memory import RemoteBuffer


def _h(thread) -> int:
    """A thread's handle: a :class:`~pyhcomm.pythonic.Thread`, or the int itself."""
    return getattr(thread, "handle", thread)


class Channel:
    """This rank's end of a channel to rank :attr:`peer` (``ChannelHandle``; ``handle`` is the
    int the C tier takes).

    Owned by its communicator: released when the communicator is destroyed (no ``close``).
    Notify ``k`` of a channel is a 1-bit register at each end: :meth:`record` sets the peer's,
    :meth:`wait` waits for (and clears) this end's."""

    def __init__(self, comm, handle: int):
        self.comm, self.handle = comm, handle
        self._end = _ch.get_channel(handle, "Channel")
        self._peer_ccl = None

    @property
    def peer(self) -> int:
        """The rank at the other end."""
        return self._end.peer_rank

    @property
    def engine(self) -> CommEngine:
        """The channel's ``CommEngine`` (an engine registered beyond them: its description)."""
        return public_engine(self._end.engine)

    @property
    def protocol(self) -> CommProtocol:
        return self._end.protocol

    @property
    def notify_num(self) -> int:
        return len(self._end.notifies)

    # -- what the peer exposed -------------------------------------------------------------------
    def peer_hccl_buffer(self) -> RemoteBuffer:
        """The peer's HCCL buffer (``HcclChannelGetHcclBuffer``). From the host it blocks until
        the peer acquired its end (up to ``HCCL_CONNECT_TIMEOUT``)."""
        if self._peer_ccl is None:
            a, size = _ch.peer_hccl_buffer(self.comm.handle, self.handle)
            self._peer_ccl = RemoteBuffer(a, size, self.peer)
        return self._peer_ccl

    def remote_mems(self) -> dict:
        """``{tag: RemoteBuffer}``: the memories the peer registered and listed for this channel
        (``HcclChannelGetRemoteMems``; blocks as :meth:`peer_hccl_buffer`)."""
        _num, mems, tags = _ch.remote_mems(self.comm.handle, self.handle)
        return {tag: RemoteBuffer(m.addr, m.size, self.peer, tag) for m, tag in zip(mems, tags)}

    # -- one-sided transfers ---------------------------------------------------------------------
    def write(self, thread, dst, src, nbytes: int | None = None) -> None:
        """Enqueue ``HcommWriteOnThread`` on ``thread``: local ``src`` -> the peer's ``dst``;
        ``nbytes`` defaults to the size of both."""
        if nbytes is None:
            nbytes = common_size("HcommWriteOnThread", "nbytes", dst, src)
        _chops.write(_h(thread), self.handle, addr(dst), addr(src), nbytes)

    def read(self, thread, dst, src, nbytes: int | None = None) -> None:
        """Enqueue ``HcommReadOnThread`` on ``thread``: the peer's ``src`` -> local ``dst``."""
        if nbytes is None:
            nbytes = common_size("HcommReadOnThread", "nbytes", dst, src)
        _chops.read(_h(thread), self.handle, addr(dst), addr(src), nbytes)

    def write_reduce(self, thread, dst, src, count: int | None = None, dtype=None, op="sum") -> None:
        """Enqueue ``HcommWriteReduceOnThread``: the peer's ``dst[i] = op(dst[i], src[i])``.
        ``dtype`` and ``op`` as :meth:`pyhcomm.pythonic.Thread.local_reduce`; ``count`` defaults
        to the size of both over the element size."""
        api = "HcommWriteReduceOnThread"
        dt, rop = reduce_dtype(dtype, api), reduce_op(op, api)
        if count is None:
            count = element_count(api, dt, dst, src)
        _chops.write_reduce(_h(thread), self.handle, addr(dst), addr(src), count, dt, rop)

    def read_reduce(self, thread, dst, src, count: int | None = None, dtype=None, op="sum") -> None:
        """Enqueue ``HcommReadReduceOnThread``: local ``dst[i] = op(dst[i], the peer's src[i])``."""
        api = "HcommReadReduceOnThread"
        dt, rop = reduce_dtype(dtype, api), reduce_op(op, api)
        if count is None:
            count = element_count(api, dt, dst, src)
        _chops.read_reduce(_h(thread), self.handle, addr(dst), addr(src), count, dt, rop)

    def write_with_notify(self, thread, dst, src, notify: int, nbytes: int | None = None) -> None:
        """Enqueue ``HcommWriteWithNotifyOnThread``: a write that sets the peer's notify
        ``notify`` once its bytes landed (Atlas 350, inside a kernel)."""
        if nbytes is None:
            nbytes = common_size("HcommWriteWithNotifyOnThread", "nbytes", dst, src)
        _chops.write_with_notify(_h(thread), self.handle, addr(dst), addr(src), nbytes, notify)

    def write_reduce_with_notify(self, thread, dst, src, notify: int, count: int | None = None, dtype=None,
                                 op="sum") -> None:
        """Enqueue ``HcommWriteReduceWithNotifyOnThread`` (Atlas 350, inside a kernel)."""
        api = "HcommWriteReduceWithNotifyOnThread"
        dt, rop = reduce_dtype(dtype, api), reduce_op(op, api)
        if count is None:
            count = element_count(api, dt, dst, src)
        _chops.write_reduce_with_notify(_h(thread), self.handle, addr(dst), addr(src), count, dt, rop, notify)

    def batch_transfer(self, thread, descs) -> None:
        """Enqueue ``HcommBatchTransferOnThread``: every ``HcommBatchTransferDesc`` of ``descs``
        in order (inside a kernel; every descriptor is checked before any is issued)."""
        _chops.batch_transfer(_h(thread), self.handle, descs)

    # -- non-blocking (NBI) transfers: Atlas 350, host, COMM_ENGINE_CPU RoCE channels ---------------
    def write_nbi(self, dst, src, nbytes: int | None = None, notify: int | None = None) -> None:
        """Post a write (``HcommWriteNbi``; with ``notify``, ``HcommWriteWithNotifyNbi``). It is
        complete at the next :meth:`fence` (the ``...OnThread`` forms behave the same)."""
        api = "HcommWriteNbi" if notify is None else "HcommWriteWithNotifyNbi"
        if nbytes is None:
            nbytes = common_size(api, "nbytes", dst, src)
        extra = () if notify is None else (notify,)
        _chops.nbi(api, self.handle, addr(dst), addr(src), nbytes, True, *extra)

    def read_nbi(self, dst, src, nbytes: int | None = None) -> None:
        """Post a read (``HcommReadNbi``), complete at the next :meth:`fence`."""
        if nbytes is None:
            nbytes = common_size("HcommReadNbi", "nbytes", dst, src)
        _chops.nbi("HcommReadNbi", self.handle, addr(dst), addr(src), nbytes, False)

    # -- channel notifies ------------------------------------------------------------------------
    def record(self, thread, idx: int) -> None:
        """Enqueue ``HcommChannelNotifyRecordOnThread`` on ``thread``: set the peer's notify ``idx``
        when the thread's queue reaches the task (after every task queued before it)."""
        _chops.notify_record(_h(thread), self.handle, idx)

    def wait(self, thread, idx: int, timeout: int | None = None) -> None:
        """Enqueue on ``thread`` a wait for this end's notify ``idx`` (which the wait clears):
        ``HcommChannelNotifyWaitOnThread`` with ``timeout`` seconds (0 = forever), or with
        ``None`` the default timeout (``...WithDefaultTimeout``)."""
        if timeout is None:
            _chops.notify_wait_default(_h(thread), self.handle, idx)
        else:
            _chops.notify_wait(_h(thread), self.handle, idx, timeout)

    def record_now(self, idx: int) -> None:
        """``HcommChannelNotifyRecord``: set the peer's notify ``idx`` now (no thread; Atlas 350
        host, ``COMM_ENGINE_CPU`` RoCE channels)."""
        _chops.notify_record_now(self.handle, idx)

    def wait_now(self, idx: int, timeout: int) -> None:
        """``HcommChannelNotifyWait``: block the host until this end's notify ``idx`` is set
        (``timeout`` seconds, at least 1), then clear it (Atlas 350 host, CPU RoCE channels)."""
        _chops.notify_wait_now(self.handle, idx, timeout)

    # -- fences ----------------------------------------------------------------------------------
    def fence(self, thread=None) -> None:
        """Complete the NBI transfers posted on this channel: ``HcommChannelFence`` (blocks), or
        with ``thread`` ``HcommChannelFenceOnThread``."""
        if thread is None:
            _chops.channel_fence(self.handle)
        else:
            _chops.channel_fence_on_thread(_h(thread), self.handle)

    def drain(self, thread) -> None:
        """``HcommChannelDrainOnThread``: inside a kernel, block until ``thread``'s queue ran."""
        _chops.channel_drain(_h(thread), self.handle)

    def __repr__(self):
        return (f"<Channel 0x{self.handle:x} rank {self.comm.rank} -> rank {self.peer} {self.engine.name} "
                f"{self.protocol.name}>")
