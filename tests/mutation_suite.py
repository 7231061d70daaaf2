"""The verifier's mutation suite: broken variants of the library's collectives and of a custom
operator written in the style of HCCL's examples, each with the kind of finding that must reject it.

* Library mutants break one step of a collective of :mod:`pyhcomm.collectives` for the time of
  the run (a patch of the function that step calls), and run the collective through the C tier
  (``HcclAllGather`` ...) or :func:`pyhcomm.collectives.run`.
* Custom-operator mutants: :func:`custom_allgather` is an AllGather written by hand the way
  HCCL's custom-operator examples are (scenario S3: a main thread on the user's stream, one slave
  thread and channel per peer, one-sided writes into the peers' HCCL buffers, ACK / DATA channel
  notifies, the main thread fanning out and in with thread notifies), with a ``fault`` switch per
  defect; the small programs after it break the runtime's rules (kernels, NBI transfers, notifies).
* AIV mutants: HCCL's example 05 AIV AllGather as ported (``tests/hccl_examples``), called twice on
  one communicator, its kernel loaded as a variant (:func:`aiv_allgather`): as written (a constant
  tag, flags never reset), or the corrected kernel with one defect.
* CCU mutants: an AllGather CCU kernel in example 05's style (:mod:`ccu_programs`: pre-sync,
  ``Write`` to every peer, post-sync), with one defect each (:func:`ccu_allgather`).

``MUTANTS`` lists them all; :func:`verify` checks one (``pyhcomm.verify.check``).
"""
from __future__ import annotations

import importlib
import os
import runpy
import sys
from contextlib import ExitStack, contextmanager
from typing import Callable, NamedTuple

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import patterns as _patterns
from pyhcomm.hcomm import channel_ops as _ch
from pyhcomm.hcomm import notify as _notify
from pyhcomm.sim.runtime import program_ctx
from pyhcomm.verify import check
from verify_programs import F32, H2D, D2H, collective
from ccu_programs import FAULTS as CCU_FAULTS
from ccu_programs import ccu_allgather

#: the modules of the collectives (the package's names are its functions: import the modules)
_allgather, _broadcast, _context, _pairwise, _reduce_scatter = (
    importlib.import_module(f"pyhcomm.collectives.{m}")
    for m in ("allgather", "broadcast", "context", "pairwise", "reduce_scatter"))
E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol
ACK, DATA = _patterns.ACK, _patterns.DATA
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
#: HCCL_BUFFSIZE=1 (a 2 MB HCCL buffer): with the counts below the collectives take two loops
SMALL_BUFFER = {"HCCL_BUFFSIZE": "1"}


class Mutant(NamedTuple):
    name: str
    what: str                   # the defect, in words
    expect: tuple               # the kinds of finding that reject it (one of them must be found)
    program: Callable           # the rank body
    nranks: int = 4
    product: str = A2
    patches: tuple = ()         # (module, attribute, replacement) while it runs
    env: tuple = ()             # (variable, value) while it runs
    data: bool = False          # run with data (AIV kernels read their flags' bytes)


@contextmanager
def applied(m: Mutant):
    """The mutant's patches and environment, for the time of a ``with``."""
    with ExitStack() as stack:
        for mod, name, value in m.patches:
            old = getattr(mod, name)
            setattr(mod, name, value)
            stack.callback(setattr, mod, name, old)
        for var, value in m.env:
            old = os.environ.get(var)
            os.environ[var] = value
            stack.callback(_restore, var, old)
        yield


def _restore(var, old):
    if old is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = old


def verify(m: Mutant, schedules: int = 32, product=None, nranks=None, **kwargs):
    """``pyhcomm.verify.check`` of mutant ``m`` (data-less), until a finding of an expected kind
    (at most ``schedules`` schedules); returns the report."""
    with applied(m):
        return check(m.program, nranks or m.nranks, product=product or m.product, schedules=schedules, data=m.data,
                     stop_when=lambda report: rejected(m, report), **kwargs)


def rejected(m: Mutant, report) -> bool:
    """Whether ``report`` has a finding of a kind that rejects ``m``."""
    return bool(set(m.expect) & report.kinds())


# -- broken steps of the library ------------------------------------------------------------------
def _ring_step_no_land(t, left, right, write=None, read=None):
    """A ring step that never waits for the left neighbour's DATA."""
    _patterns.grant(t, left)
    _patterns.push(t, right, write)


def _push_no_ack(t, ch, write=None):
    """Write without waiting for the peer's ACK (its slot may still be in use)."""
    if write is not None and write[2]:
        _ch.write(t, ch, *write)
    _patterns.record(t, ch, DATA)


def _ring_step_no_ack(t, left, right, write=None, read=None):
    _patterns.grant(t, left)
    _push_no_ack(t, right, write)
    _patterns.land(t, left, read)


def _mesh_exchange_no_ack(t, ch, dst, src, nbytes):
    _patterns.grant(t, ch)
    _push_no_ack(t, ch, (dst, src, nbytes))
    _patterns.land(t, ch)


def _mesh_exchange_off_by_one(t, ch, dst, src, nbytes):
    """The peer's slot offset is one byte too far: it overlaps the next rank's slot."""
    _patterns.mesh_exchange(t, ch, dst + 1, src, nbytes)


def _mesh_exchange_data_twice(t, ch, dst, src, nbytes):
    """DATA recorded twice before the peer's one wait."""
    _patterns.grant(t, ch)
    _patterns.wait(t, ch, ACK)
    _ch.write(t, ch, dst, src, nbytes)
    _patterns.record(t, ch, DATA)
    _patterns.record(t, ch, DATA)
    _patterns.land(t, ch)


def _no_op(*_args, **_kwargs):
    return None


class _SkipOnRank0:
    """A ring step that rank 0 skips the second time (one rank skipping a step), in every run."""

    def __init__(self):
        self.calls, self.sim = 0, None

    def __call__(self, t, left, right, write=None, read=None):
        from pyhcomm.hcomm.resources.thread import get_thread
        sim = pyhcomm.current_sim()
        if sim is not self.sim:
            self.sim, self.calls = sim, 0
        if get_thread(t, "mutant").rank == 0:
            self.calls += 1
            if self.calls == 2:
                return
        _patterns.ring_step(t, left, right, write, read)


def _pull_no_ack(t, ch, dst, src, nbytes):
    """Read the peer's staged data without waiting until it is staged."""
    _ch.read(t, ch, dst, src, nbytes)
    _patterns.record(t, ch, DATA)


def _record_but_not_data(t, ch, idx):
    """A receiver that reads but never tells the sender it has read (its DATA records dropped)."""
    if idx != DATA:
        _patterns.record(t, ch, idx)


def _wait_but_not_data(t, ch, idx):
    """The root's wait for the peers' DATA ("I have read it") dropped."""
    if idx != DATA:
        _patterns.wait(t, ch, idx)


class _NotifyWithout:
    """``pyhcomm.hcomm.notify`` for the collectives' launch code, with the host-side waits (the
    user stream's wait for the kernel's end) or the kernel's waits (its wait for the host) dropped."""

    def __init__(self, drop_host: bool):
        self.drop_host = drop_host

    def __getattr__(self, name):
        return getattr(_notify, name)

    def wait(self, thread, idx, timeout, api="HcommThreadNotifyWaitOnThread"):
        in_kernel = bool(program_ctx().kernels)
        if in_kernel == self.drop_host:
            _notify.wait(thread, idx, timeout, api)


def _two_streams_allgather(comm, ordered=False):
    """Two AllGathers of one communicator on two streams, not ordered: they share its HCCL buffer
    (``ordered``: on one stream, the second after the first)."""
    n = comm.size
    send, _ = acl.rt.malloc(256, 0)
    recv, _ = acl.rt.malloc(256 * n, 0)
    recv2, _ = acl.rt.malloc(256 * n, 0)
    a, _ = acl.rt.create_stream()
    b = a if ordered else acl.rt.create_stream()[0]
    assert pyhcomm.HcclAllGather(send, recv, 64, F32, comm.handle, a) == 0
    assert pyhcomm.HcclAllGather(send, recv2, 64, F32, comm.handle, b) == 0
    assert acl.rt.synchronize_stream(a) == 0 and acl.rt.synchronize_stream(b) == 0


# -- a custom operator in the style of HCCL's examples (scenario S3, host CPU_TS threads) ----------
def custom_allgather(fault=None, nbytes: int = 256, loops: int = 2):
    """A rank body: the hand-written AllGather of the module docstring, ``loops`` rounds of
    ``nbytes`` per rank; ``fault`` names the defect to put in (None: correct)."""
    def body(comm):
        n, me, h = comm.size, comm.rank, comm.handle
        stream, _ = acl.rt.create_stream()
        peers = [p for p in range(n) if p != me]
        _, main = pyhcomm.HcclThreadAcquireWithStream(h, E.COMM_ENGINE_CPU_TS, stream, max(1, len(peers)))
        _, slaves = pyhcomm.HcclThreadAcquire(h, E.COMM_ENGINE_CPU_TS, max(1, len(peers)), 1)
        descs = []
        for p in peers:
            d = pyhcomm.HcclChannelDesc()
            pyhcomm.HcclChannelDescInit(d)
            d.remoteRank, d.channelProtocol, d.notifyNum = p, P.COMM_PROTOCOL_HCCS, 2
            descs.append(d)
        _, chans = pyhcomm.HcclChannelAcquire(h, E.COMM_ENGINE_CPU_TS, descs) if descs else (0, [])
        chan = dict(zip(peers, chans))
        remote = {p: pyhcomm.HcclChannelGetHcclBuffer(h, chan[p])[1] for p in peers}
        _, ccl, _size = pyhcomm.HcclGetHcclBuffer(h)
        send, _ = acl.rt.malloc(nbytes * loops, 0)
        recv, _ = acl.rt.malloc(nbytes * loops * n, 0)
        x = np.full(nbytes * loops, me, np.uint8)
        acl.rt.memcpy(send, x.nbytes, acl.util.numpy_to_ptr(x), x.nbytes, H2D)
        rec, wait = pyhcomm.HcommChannelNotifyRecordOnThread, pyhcomm.HcommChannelNotifyWaitOnThread
        for loop in range(loops):
            mine = ccl + me * nbytes
            pyhcomm.HcommLocalCopyOnThread(main, mine, send + loop * nbytes, nbytes)      # stage
            for i, _p in enumerate(peers):                                                # fan out
                pyhcomm.HcommThreadNotifyRecordOnThread(main, slaves[i], 0)
                pyhcomm.HcommThreadNotifyWaitOnThread(slaves[i], 0, 0)
            for i, p in enumerate(peers):
                t, ch = slaves[i], chan[p]
                if fault == "skip_step" and me == 0 and i == 0 and loop == loops - 1:
                    continue                                                              # one rank skips a step
                rec(t, ch, ACK)                                 # my slot for you is free
                if not (fault == "reuse_before_ack" and loop > 0):
                    wait(t, ch, ACK, 0)                         # your slot for me is free
                dst = remote[p] + me * nbytes + (1 if fault == "offset_off_by_one" else 0)
                pyhcomm.HcommWriteOnThread(t, ch, dst, mine, nbytes)
                if fault == "wrong_notify_index":
                    rec(t, ch, ACK)                             # meant DATA
                elif fault == "wrong_peer" and len(peers) > 1:
                    rec(t, chan[peers[(i + 1) % len(peers)]], DATA)   # tells another peer
                else:
                    rec(t, ch, DATA)                            # it landed
                if fault == "two_records":
                    rec(t, ch, DATA)
                if fault != "missing_wait":
                    wait(t, ch, DATA, 0)                        # the peer's write into my slot landed
                pyhcomm.HcommThreadNotifyRecordOnThread(t, main, i)                       # fan in
                if fault != "missing_fan_in_wait":
                    pyhcomm.HcommThreadNotifyWaitOnThread(main, i, 0)
            for r in range(n):                                                            # copy out
                pyhcomm.HcommLocalCopyOnThread(main, recv + (r * loops + loop) * nbytes, ccl + r * nbytes, nbytes)
        out = np.zeros(nbytes * loops * n, np.uint8)
        if fault == "host_read_early":
            acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, recv, out.nbytes, D2H)
        if fault != "missing_final_sync":
            assert acl.rt.synchronize_stream(stream) == 0
            acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, recv, out.nbytes, D2H)
    body.__qualname__ = f"custom_allgather_{fault or 'correct'}"
    return body


# -- small programs breaking the runtime's rules ---------------------------------------------------
#: Atlas 350: a kernel copies into the HCCL buffer on an AICPU_TS thread; the host synchronizes the
#: launch stream only, then reads the buffer (the README's first example)
_kernel_then_host_read = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                                     "verify", "kernel_race.py"))["main"]


def _nbi_channel(comm):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, P.COMM_PROTOCOL_ROCE, 1
    _, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU, [d])
    return ch


def nbi_put(fence: bool):
    """Atlas 350, host CPU RoCE: rank 0 writes into rank 1's HCCL buffer with a non-blocking
    write and tells it with a thread-less channel notify; rank 1 waits and reads its buffer."""
    def body(comm):
        ch = _nbi_channel(comm)
        ccl = comm.hccl_buffer().addr
        if comm.rank == 0:
            src, _ = acl.rt.malloc(256, 0)
            _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
            assert pyhcomm.HcommWriteNbi(ch, remote, src, 256) == 0
            if fence:
                assert pyhcomm.HcommChannelFence(ch) == 0
            assert pyhcomm.HcommChannelNotifyRecord(ch, 0) == 0
        else:
            assert pyhcomm.HcommChannelNotifyWait(ch, 0, 60) == 0
            out = np.zeros(256, np.uint8)
            acl.rt.memcpy(acl.util.numpy_to_ptr(out), 256, ccl, 256, D2H)
    body.__qualname__ = f"nbi_put_{'fenced' if fence else 'unfenced'}"
    return body


def nbi_get(fence: bool):
    """Atlas 350, host CPU RoCE: rank 1 stages its HCCL buffer and tells rank 0 with a thread-less
    channel notify; rank 0 reads it with a non-blocking read and reads the result on the host
    (after a fence only when ``fence``)."""
    def body(comm):
        ch = _nbi_channel(comm)
        ccl = comm.hccl_buffer().addr
        x = np.full(256, 7 + comm.rank, np.uint8)
        if comm.rank == 1:
            acl.rt.memcpy(ccl, 256, acl.util.numpy_to_ptr(x), 256, H2D)
            assert pyhcomm.HcommChannelNotifyRecord(ch, 0) == 0
            assert pyhcomm.HcommChannelNotifyWait(ch, 0, 60) == 0          # rank 0 has read it
        else:
            dst, _ = acl.rt.malloc(256, 0)
            _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
            assert pyhcomm.HcommChannelNotifyWait(ch, 0, 60) == 0
            assert pyhcomm.HcommReadNbi(ch, dst, remote, 256) == 0
            if fence:
                assert pyhcomm.HcommChannelFence(ch) == 0
            acl.rt.memcpy(acl.util.numpy_to_ptr(x), 256, dst, 256, D2H)
            assert pyhcomm.HcommChannelNotifyRecord(ch, 0) == 0
    body.__qualname__ = f"nbi_get_{'fenced' if fence else 'unfenced'}"
    return body


def _thread_pair(comm, notifies=2):
    stream, _ = acl.rt.create_stream()
    _, main = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, notifies)
    _, (slave,) = pyhcomm.HcclThreadAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, 1, notifies)
    return stream, main, slave


def _thread_wrong_notify_index(comm):
    """A slave records the main thread's notify 1; the main thread waits for its notify 0."""
    stream, main, slave = _thread_pair(comm)
    a, _ = acl.rt.malloc(256, 0)
    b, _ = acl.rt.malloc(256, 0)
    pyhcomm.HcommLocalCopyOnThread(slave, b, a, 256)
    pyhcomm.HcommThreadNotifyRecordOnThread(slave, main, 1)
    pyhcomm.HcommThreadNotifyWaitOnThread(main, 0, 0)
    pyhcomm.HcommLocalCopyOnThread(main, a, b, 256)
    acl.rt.synchronize_stream(stream)


def _channel(comm, peer, notifies=2):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, P.COMM_PROTOCOL_HCCS, notifies
    return pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, [d])[1][0]


def _two_waiters(comm):
    """Rank 1 waits for one channel notify on two threads that nothing orders; rank 0 records it
    twice (after an acknowledgement in between, so that nothing is lost)."""
    ch = _channel(comm, 1 - comm.rank)
    stream, _ = acl.rt.create_stream()
    if comm.rank == 0:
        _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
        for _ in range(2):
            pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
            pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 1, 0)
    else:
        _, (ta, tb) = pyhcomm.HcclThreadAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, 2, 1)
        for t in (ta, tb):
            pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
            pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 1)
    assert acl.rt.synchronize_device() == 0


def _record_nobody_waits(comm):
    """Rank 0 tells rank 1 twice; rank 1 waits once (the second record stays set)."""
    ch = _channel(comm, 1 - comm.rank)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    if comm.rank == 0:
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
        pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 1, 0)
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
    else:
        pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 1)
    assert acl.rt.synchronize_stream(stream) == 0


def _send_to_wrong_peer(comm):
    """Rank 0 sends to rank 2, which expects nothing; rank 1 waits to receive from rank 0."""
    buf, _ = acl.rt.malloc(256, 0)
    stream, _ = acl.rt.create_stream()
    if comm.rank == 0:
        pyhcomm.HcclSend.raising(buf, 64, F32, 2, comm.handle, stream)
    elif comm.rank == 1:
        pyhcomm.HcclRecv.raising(buf, 64, F32, 0, comm.handle, stream)
    acl.rt.synchronize_stream(stream)


def _no_final_sync(comm):
    """An AllGather whose program returns without waiting for its stream."""
    send, _ = acl.rt.malloc(256, 0)
    recv, _ = acl.rt.malloc(256 * comm.size, 0)
    stream, _ = acl.rt.create_stream()
    assert pyhcomm.HcclAllGather(send, recv, 64, F32, comm.handle, stream) == 0


# -- HCCL's example 05 AIV AllGather, as ported in tests/hccl_examples ----------------------------------
_EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hccl_examples")
if _EXAMPLES not in sys.path:     # the ports import each other by their bare names
    sys.path.insert(0, _EXAMPLES)
import ex05_custom_allgather_aiv as _ex05aiv  # noqa: E402


def aiv_allgather(variant: str):
    """``(rank body, patches)``: the port called twice on one communicator (256 floats a rank), its
    kernel loaded with ``VARIANT = variant`` (``ex05_allgather_aiv_kernel``)."""
    return _ex05aiv.rank_program(calls=2, count=256), ((_ex05aiv, "LoadBinaryFromFile",
                                                         _ex05aiv.variant_loader(variant)),)


def _aiv(name, what, variant, expect=("race",)):
    program, patches = aiv_allgather(variant)
    return Mutant(name, what, expect, program, product=A350, patches=patches, data=True)


RING, MESH, RS, PAIRS = _allgather, _patterns, _reduce_scatter, _pairwise
BIG = 256 * 1024       # floats per rank: at least two loops of the ring / mesh AllGather in a 2 MB buffer

MUTANTS = [
    # -- the library's collectives --------------------------------------------------------------
    Mutant("ring_no_data_wait", "ring AllGather: copies a slot out without waiting for the left neighbour's DATA "
           "(the copy races with the write; or, when the ACKs then run ahead too, records are lost)",
           ("race", "lost-record"), collective("ring_allgather"), patches=((RING, "ring_step", _ring_step_no_land),)),
    Mutant("ring_no_ack_wait", "ring AllGather: writes the right neighbour's slot without waiting for its ACK "
           "(the DATA records run ahead of the neighbour's waits)", ("lost-record",),
           collective("ring_allgather", BIG), patches=((RING, "ring_step", _ring_step_no_ack),),
           env=tuple(SMALL_BUFFER.items())),
    Mutant("mesh_no_fan_in", "mesh AllGather: the main thread copies out without waiting for its slaves",
           ("race",), collective("allgather"), patches=((MESH, "fan_in", _no_op),)),
    Mutant("mesh_no_fan_out", "mesh AllGather: the slaves write before the main thread staged the data",
           ("race",), collective("allgather"), patches=((MESH, "fan_out", _no_op),)),
    Mutant("mesh_offset_off_by_one", "mesh AllGather: the peer's slot offset is one byte off (full slots)", ("race",),
           collective("allgather", BIG), patches=((RING, "mesh_exchange", _mesh_exchange_off_by_one),),
           env=tuple(SMALL_BUFFER.items())),
    Mutant("mesh_data_recorded_twice", "mesh AllGather: DATA recorded twice before the peer's one wait",
           ("lost-record",), collective("allgather"), patches=((RING, "mesh_exchange", _mesh_exchange_data_twice),)),
    Mutant("rs_ring_slot_reuse", "ring AllReduce: the reduce-scatter writes a slot again before the peer's ACK",
           ("race",), collective("allreduce", algorithm="ring"), patches=((RS, "ring_step", _ring_step_no_ack),)),
    Mutant("allreduce_rank_skips_step", "ring AllReduce: rank 0 skips one step of the reduce-scatter", ("hang",),
           collective("allreduce", algorithm="ring"), patches=((RS, "ring_step", _SkipOnRank0()),)),
    Mutant("rs_mesh_no_fan_in", "mesh ReduceScatter: the main thread reduces without waiting for its slaves",
           ("race",), collective("reduce_scatter"), patches=((MESH, "fan_in", _no_op),)),
    Mutant("broadcast_no_ack_wait", "Broadcast: a peer reads the root's HCCL buffer before the root staged it",
           ("race",), collective("broadcast", algorithm="star"), patches=((_broadcast, "pull", _pull_no_ack),)),
    Mutant("broadcast_root_no_data_wait", "Broadcast: the root stages the next chunk without waiting for the peers' "
           "DATA (its ACK records run ahead of their waits)", ("lost-record",),
           collective("broadcast", 768 * 1024, algorithm="star"),
           patches=((_broadcast, "wait", _wait_but_not_data),), env=tuple(SMALL_BUFFER.items())),
    Mutant("recv_no_data_record", "Send/Recv: the receiver never tells the sender it has read", ("hang",),
           collective("sendrecv"), nranks=3, patches=((PAIRS, "record", _record_but_not_data),)),
    Mutant("alltoall_no_ack_wait", "AlltoAll: writes a peer's slot without its ACK (two loops)", ("race",),
           collective("alltoall", 96 * 1024), patches=((PAIRS, "mesh_exchange", _mesh_exchange_no_ack),),
           env=tuple(SMALL_BUFFER.items())),
    Mutant("aicpu_no_final_sync", "AI CPU AllGather (A3): the user stream does not wait for the kernel's work",
           ("race",), collective("allgather"), product=A3, patches=((_context, "notify_mod", _NotifyWithout(True)),)),
    Mutant("aicpu_kernel_no_host_wait", "AI CPU AllGather (A3): the kernel does not wait for the host's record",
           ("notify-left-set",), collective("allgather"), product=A3,
           patches=((_context, "notify_mod", _NotifyWithout(False)),)),
    Mutant("two_collectives_two_streams", "two AllGathers of one communicator on two unordered streams (they race on "
           "its HCCL buffer; on A3 / 350 they also share the AI CPU threads, whose host-sync records are then lost)",
           ("race", "lost-record"), _two_streams_allgather),
    Mutant("program_no_final_sync", "a program ends without synchronizing its collective's stream",
           ("unsynchronized",), _no_final_sync),
    # -- a custom operator in HCCL example style ------------------------------------------------------
    Mutant("custom_missing_wait", "custom AllGather: no wait for the peer's DATA before the copy-out", ("race",),
           custom_allgather("missing_wait")),
    Mutant("custom_wrong_notify_index", "custom AllGather: records the peer's ACK notify where DATA was meant",
           ("hang",), custom_allgather("wrong_notify_index")),
    Mutant("custom_wrong_peer", "custom AllGather: tells the wrong peer its data landed", ("race",),
           custom_allgather("wrong_peer")),
    Mutant("custom_reuse_before_ack", "custom AllGather: reuses the peer's slot before its ACK", ("race",),
           custom_allgather("reuse_before_ack")),
    Mutant("custom_offset_off_by_one", "custom AllGather: the peer's slot offset is one byte off", ("race",),
           custom_allgather("offset_off_by_one")),
    Mutant("custom_missing_fan_in_wait", "custom AllGather: the main thread does not wait for its slaves", ("race",),
           custom_allgather("missing_fan_in_wait")),
    Mutant("custom_skip_step", "custom AllGather: rank 0 skips one exchange of the last loop", ("hang",),
           custom_allgather("skip_step")),
    Mutant("custom_two_records", "custom AllGather: DATA recorded twice before one wait", ("lost-record",),
           custom_allgather("two_records")),
    Mutant("custom_missing_final_sync", "custom AllGather: ends without synchronizing the stream",
           ("unsynchronized",), custom_allgather("missing_final_sync")),
    Mutant("custom_host_read_early", "custom AllGather: the host reads the result before the device finished",
           ("race",), custom_allgather("host_read_early")),
    # -- the runtime's rules ----------------------------------------------------------------------------
    Mutant("kernel_launch_stream_only", "Atlas 350: the host synchronizes the kernel's launch stream, then reads "
           "what the kernel copied on an AICPU_TS thread", ("race",), _kernel_then_host_read, nranks=1, product=A350),
    Mutant("nbi_missing_fence", "Atlas 350 NBI: notifies the peer without a fence after a non-blocking write",
           ("race",), nbi_put(False), nranks=2, product=A350),
    Mutant("nbi_read_missing_fence", "Atlas 350 NBI: the host reads what a non-blocking read brought without a fence "
           "first", ("race",), nbi_get(False), nranks=2, product=A350),
    Mutant("thread_wrong_notify_index", "thread notifies: recorded index 1, waited index 0", ("hang",),
           _thread_wrong_notify_index, nranks=1),
    Mutant("two_waiters_one_notify", "two threads wait for one channel notify, unordered", ("late-wait",),
           _two_waiters, nranks=2),
    Mutant("record_nobody_waits", "a channel notify recorded once more than it is waited for", ("notify-left-set",),
           _record_nobody_waits, nranks=2),
    Mutant("send_to_wrong_peer", "HcclSend to the wrong rank", ("hang",), _send_to_wrong_peer, nranks=3),
    # -- HCCL's example 05 AIV AllGather ------------------------------------------------------------------
    _aiv("aiv_missing_flag_wait", "AIV AllGather: a rank copies a peer's HCCL buffer without waiting for its flag",
         "missing flag wait"),
    _aiv("aiv_wrong_peer_flag", "AIV AllGather: a rank waits for the flag of the next peer, then copies this one's",
         "wrong peer flag"),
    _aiv("aiv_constant_tag_no_reset", "AIV AllGather as written, called twice: a constant tag and flags never reset "
         "(the second call passes on the first call's flags)", "as written"),
    _aiv("aiv_read_before_copy", "AIV AllGather: a rank flags its input staged before the copy that stages it (the "
         "peers read its HCCL buffer before the copy)", "record before copy"),
    # -- a CCU kernel in HCCL example 05's style (tests/ccu_programs.py) ----------------------------------
    Mutant("ccu_missing_notify_wait", "CCU AllGather: " + CCU_FAULTS["missing_notify_wait"], ("race",),
           ccu_allgather("missing_notify_wait"), product=A350),
    Mutant("ccu_wrong_mask", "CCU AllGather: " + CCU_FAULTS["wrong_mask"], ("hang",), ccu_allgather("wrong_mask"),
           product=A350),
    Mutant("ccu_no_post_sync", "CCU AllGather: " + CCU_FAULTS["no_post_sync"], ("race",), ccu_allgather("no_post_sync"),
           product=A350),
    Mutant("ccu_write_before_pre_sync", "CCU AllGather: " + CCU_FAULTS["write_before_pre_sync"], ("race",),
           ccu_allgather("write_before_pre_sync"), product=A350),
    Mutant("ccu_loadarg_count_mismatch", "CCU AllGather: " + CCU_FAULTS["loadarg_count_mismatch"]
           + " (HcommCcuKernelLaunch: CCU_E_INTERNAL)", ("error",), ccu_allgather("loadarg_count_mismatch"),
           product=A350),
    Mutant("ccu_event_wait_unrecorded", "CCU AllGather: " + CCU_FAULTS["event_wait_unrecorded"], ("hang",),
           ccu_allgather("event_wait_unrecorded"), product=A350),
]

#: The corrected AIV AllGather (a fresh tag per call), which must give no finding (with data).
AIV_CORRECT = aiv_allgather("fresh tag")

#: Correct counterparts, which must give no finding.
CORRECT = [("custom_allgather", custom_allgather(None), 4, A2), ("nbi_put_fenced", nbi_put(True), 2, A350),
           ("nbi_get_fenced", nbi_get(True), 2, A350), ("ccu_allgather", ccu_allgather(None), 4, A350)]
