"""The state machine: random valid and invalid call sequences over the C and acl tiers.

Each rule issues one call (or a few that belong together), valid or with one argument made bad,
and tells the model what a valid call will do. Properties checked (issue 8): no exception but the
documented ``TypeError`` escapes (:func:`fuzz_calls.call`); a valid call returns 0 and a call with
a bad value a nonzero code; after every synchronisation every buffer holds what the model says,
canaries included (no byte outside a destination changes); a wait that can never be satisfied
ends its stream with an error within its timeout (no hang). Host-thread, kernel and race rules
live in :mod:`fuzz_concurrency`.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import pyhcomm
from pyhcomm import acl
from pyhcomm.sim import memory

from fuzz_calls import BAD_INTS, FAIL, OK, TYPE, WRONG_TYPE, Finding, call, code_of
from fuzz_model import REDUCE_DTYPES, REDUCE_UFUNCS, apply_copy, apply_fill, apply_reduce
from fuzz_world import World

K = pyhcomm.aclrtMemcpyKind
D2D, H2D, D2H, H2H = (K.ACL_MEMCPY_DEVICE_TO_DEVICE, K.ACL_MEMCPY_HOST_TO_DEVICE, K.ACL_MEMCPY_DEVICE_TO_HOST,
                      K.ACL_MEMCPY_HOST_TO_HOST)
DEFAULT = K.ACL_MEMCPY_DEFAULT
WAIT_S = 30            # timeout of the fuzzer's matched waits (they never expire)


class Base(RuleBasedStateMachine):
    """World, model bookkeeping and the shared helpers of every rule."""

    PRODUCT = "Atlas 800T A2"

    def __init__(self):
        super().__init__()
        self.w = None
        self.pending: dict = {}        # stream -> [effect, ...] queued and not yet synchronised
        self.batch = None              # the open batch: {"tag", "held": [(stream, effect)], "keys"}
        self.notifies: dict = {}       # (thread, idx) or ("ch", rank, peer, idx) -> state
        self.waiting: dict = {}        # stream -> [notify keys its queued waits consume]
        self.batch_seq = 0

    # -- setup -------------------------------------------------------------------------------------
    @initialize(nranks=st.integers(2, 4), seed=st.integers(0, 2 ** 32 - 1))
    def build(self, nranks, seed):
        self.w = World(self.PRODUCT, nranks, seed)

    def teardown(self):
        try:
            if self.w is not None:
                self.quiesce_all()
                self.check_all()
        finally:
            if self.w is not None:
                pyhcomm.current_sim().runtime.reset()

    # -- drawing -----------------------------------------------------------------------------------
    def rank(self, data):
        return data.draw(st.sampled_from(self.w.ranks), label="rank")

    def live(self, bufs):
        return [b for b in bufs if not b.freed]

    def device_bufs(self, rk, hccl=True):
        return self.live(([rk.hccl] if hccl else []) + rk.bufs)

    def range_in(self, data, buf, n=None):
        """``(offset, length)`` inside ``buf``'s window (length ``n`` when given)."""
        if n is None:
            n = data.draw(st.integers(1, buf.size), label="n")
        off = data.draw(st.integers(0, buf.size - n), label="off")
        return off, n

    def mutation(self, data, *kinds):
        """None (all valid) or one of ``kinds`` to make bad, about half the time."""
        return data.draw(st.one_of(st.none(), st.sampled_from(kinds)), label="bad")

    def bad_pointer(self, data, buf=None):
        """A pointer that is no usable memory here: ``(value, expect)``."""
        choices = [(0, FAIL), (None, FAIL)] + [(v, FAIL) for v in BAD_INTS] + [(v, TYPE) for v in WRONG_TYPE]
        if self.w.freed:   # (host memory is the process's: a freed block's address may be live again)
            gone = data.draw(st.sampled_from(self.w.freed), label="freed")
            choices.append((BAD_INTS[5] if _live(gone) else gone, FAIL))
        if buf is not None and buf.kind == "device":                 # (host blocks may touch others)
            choices.append((buf.block_addr + buf.block_size, FAIL))     # one past its allocation
        if buf is not None and buf.kind == "host":
            choices.append((buf.addr + buf.size, FAIL))                  # one past its registration
        return data.draw(st.sampled_from(choices), label="bad pointer")

    def bad_count(self, data):
        return data.draw(st.sampled_from([(-1, FAIL), (1 << 64, FAIL), ((1 << 64) - 1, FAIL), (1 << 40, FAIL),
                                          (1.5, TYPE), ("8", TYPE), (None, TYPE)]), label="bad count")

    def bad_handle(self, data, others=()):
        choices = [(0, FAIL), (None, FAIL), (0x1234, FAIL), (1 << 64, FAIL), (-5, FAIL)]
        choices += [(v, TYPE) for v in WRONG_TYPE[:6]] + [(h, FAIL) for h in others]
        return data.draw(st.sampled_from(choices), label="bad handle")

    def numpy_args(self, data, args):
        """``args`` with every int a numpy integer scalar holding it (a type drawn per argument)."""
        from fuzz_forms import numpy_forms
        out = []
        for a in args:
            forms = numpy_forms(a) if type(a) is int else []
            out.append(data.draw(st.sampled_from(forms), label="numpy form") if forms else a)
        return out

    def fresh_tag(self, prefix: str) -> str:
        self.batch_seq += 1
        return f"{prefix}{self.batch_seq}"

    # -- model bookkeeping ---------------------------------------------------------------------------
    def touch(self, key, *bufs):
        """Stream ``key`` is about to queue work on ``bufs``: settle other streams' work on them."""
        for b in bufs:
            if b.claim is not None and b.claim != key:
                self.quiesce(b.claim)
        for b in bufs:
            b.claim = key

    def settle(self, *bufs):
        """Nothing may be queued on ``bufs`` (a synchronous call touches them now)."""
        for b in bufs:
            if b.claim is not None:
                self.quiesce(b.claim)

    def queue(self, key, effect):
        """A valid call queued ``effect`` on stream ``key`` (kept back while a batch is open and
        the call came through a thread)."""
        if self.batch is not None and effect is not None and getattr(effect, "batched", False):
            self.batch["held"].append((key, effect))
            self.batch["keys"].add(key)
            return
        self.pending.setdefault(key, []).append(effect)

    def quiesce(self, key):
        """Synchronise stream ``key`` and apply what it had queued."""
        if self.batch is not None and key in self.batch["keys"]:
            self.end_batch()
        call(acl.rt.synchronize_stream, key, tier="acl")
        self.applied(key)

    def applied(self, key):
        for effect in self.pending.pop(key, []):
            if effect is not None:
                effect()
        for b in self.w.all_buffers():
            if b.claim == key:
                b.claim = None
        for n in self.waiting.pop(key, []):
            self.notifies[n] = "free"

    def end_batch_of(self, key):
        """End the open batch when it holds work of stream ``key`` (before a call that synchronizes it)."""
        if self.batch is not None and key in self.batch["keys"]:
            self.end_batch()

    def quiesce_all(self):
        if self.batch is not None:
            self.end_batch()
        for key in list(self.pending):
            self.quiesce(key)
        for b in self.w.all_buffers():
            if b.claim is not None:
                self.quiesce(b.claim)

    def check(self, buf):
        actual = buf.actual()
        if actual != bytes(buf.expect):
            diff = [i for i in range(buf.block_size) if actual[i] != buf.expect[i]]
            where = "a canary" if any(i < buf.win or i >= buf.win + buf.size for i in diff) else "the window"
            raise Finding(f"{buf!r}: {len(diff)} bytes differ from the model (first at block offset {diff[0]}, "
                          f"in {where}): expected {bytes(buf.expect[diff[0]:diff[0] + 8]).hex()} "
                          f"got {actual[diff[0]:diff[0] + 8].hex()}")

    def check_all(self):
        for b in self.w.all_buffers():
            if b.claim is None and not b.freed:
                self.check(b)

    @invariant()
    def settled_buffers_match_the_model(self):
        if self.w is not None:
            self.check_all()

    # -- batch ---------------------------------------------------------------------------------------
    def end_batch(self):
        b, self.batch = self.batch, None
        call(pyhcomm.HcommBatchModeEnd, b["tag"])
        for key, effect in b["held"]:
            self.pending.setdefault(key, []).append(effect)
        for n in b["records"]:
            if self.notifies.get(n) == "held":
                self.notifies[n] = "recorded"


def _live(addr: int) -> bool:
    """Whether ``addr`` lies in live memory pyhcomm knows (device or host)."""
    try:
        memory.resolve(addr, 1, memory.ANY)
    except memory.BadRange:
        return False
    return True


def batched(effect):
    """Mark an effect as coming from a thread call (a batch keeps it)."""
    if effect is not None:
        effect.batched = True
    return effect


class CallsMachine(Base):
    """The acl and C tier rules (one host thread)."""

    # -- acl: synchronous copies and fills ----------------------------------------------------------
    def pick_copy(self, data):
        """``(kind, dst buffer, src buffer)`` for an aclrtMemcpy."""
        kind = data.draw(st.sampled_from([D2D, H2D, D2H, H2H, DEFAULT]), label="kind")
        devs = [b for rk in self.w.ranks for b in self.device_bufs(rk)]
        hosts = self.live(self.w.host)
        side = {D2D: (devs, devs), H2D: (devs, hosts), D2H: (hosts, devs), H2H: (hosts, hosts),
                DEFAULT: (devs + hosts, devs + hosts)}[kind]
        return kind, data.draw(st.sampled_from(side[0]), label="dst"), data.draw(st.sampled_from(side[1]), label="src")

    @rule(data=st.data())
    def memcpy(self, data):
        """aclrtMemcpy, or aclrtMemcpyAsync on a stream of some rank."""
        kind, dst, src = self.pick_copy(data)
        n = data.draw(st.integers(1, min(dst.size, src.size)), label="n")
        doff, _ = self.range_in(data, dst, n)
        soff, _ = self.range_in(data, src, n)
        rk = self.rank(data)
        stream = data.draw(st.one_of(st.none(), st.sampled_from(rk.streams)), label="stream (None: sync)")
        args = [dst.addr + doff, n, src.addr + soff, n, kind] + ([] if stream is None else [stream])
        bad = self.mutation(data, "dst", "src", "count", "destMax", "kind", "numpy", "stream")
        expect = OK
        if bad == "dst":
            args[0], expect = self.bad_pointer(data, dst)
        elif bad == "src":
            args[2], expect = self.bad_pointer(data, src)
        elif bad == "count":
            args[3], expect = self.bad_count(data)
        elif bad == "destMax":
            args[1], expect = data.draw(st.sampled_from([(n - 1, FAIL), (1 << 40, FAIL), (0, FAIL),
                                                         (2.0, TYPE)]), label="destMax")
        elif bad == "kind":
            args[4], expect = data.draw(st.sampled_from([(-1, FAIL), (8, FAIL), (99, FAIL), (1.0, TYPE)]), label="kind")
        elif bad == "numpy":
            args = self.numpy_args(data, args)
        elif bad == "stream" and stream is not None:
            args[5], expect = self.bad_handle(data, [rk.thread_of[stream], rk.comm])
            if args[5] in (0, None):   # NULL is the current device's default stream
                stream, expect = 0, OK
        if stream is None:
            self.settle(dst, src)
            call(acl.rt.memcpy, *args, expect=expect, tier="acl")
            if expect == OK:
                apply_copy(dst, doff, src, soff, n)
            return
        if expect == OK:
            self.touch(stream, dst, src)
        call(acl.rt.memcpy_async, *args, expect=expect, tier="acl")
        if expect == OK:
            self.queue(stream, lambda: apply_copy(dst, doff, src, soff, n))
            if stream == 0:
                self.quiesce(0)

    @rule(data=st.data())
    def memset(self, data):
        bufs = [b for rk in self.w.ranks for b in self.device_bufs(rk)] + self.live(self.w.host)
        dst = data.draw(st.sampled_from(bufs), label="dst")
        off, n = self.range_in(data, dst)
        value = data.draw(st.integers(-300, 300), label="value")
        args = [dst.addr + off, n, value, n]
        bad = self.mutation(data, "ptr", "count", "maxCount", "numpy", "async")
        expect = OK
        if bad == "ptr":
            args[0], expect = self.bad_pointer(data, dst)
        elif bad == "count":
            args[3], expect = data.draw(st.sampled_from([(-1, FAIL), (n + 1, FAIL), (1.0, TYPE)]), label="count")
        elif bad == "maxCount":
            args[1], expect = data.draw(st.sampled_from([(n - 1, FAIL), (None, TYPE)]), label="maxCount")
        elif bad == "numpy":
            args = self.numpy_args(data, args)
        if bad == "async":
            rk = self.rank(data)
            stream = data.draw(st.sampled_from(rk.streams), label="stream")
            self.touch(stream, dst)
            call(acl.rt.memset_async, *args, stream, tier="acl")
            self.queue(stream, lambda: apply_fill(dst, off, value, n))
            return
        self.settle(dst)
        call(acl.rt.memset, *args, expect=expect, tier="acl")
        if expect == OK:
            apply_fill(dst, off, value, n)

    @rule(data=st.data())
    def read_only_memory_is_never_written(self, data):
        """bytes objects and read-only arrays: every write is refused, reads work."""
        frozen = bytes(data.draw(st.binary(min_size=64, max_size=64), label="bytes"))
        before = bytes(frozen)
        p = acl.util.bytes_to_ptr(frozen)
        rk = self.rank(data)
        dev = data.draw(st.sampled_from(self.device_bufs(rk, hccl=False)), label="dev")
        if dev.size < 64:
            return
        self.settle(dev)
        call(acl.rt.memset, p, 64, 0xAB, 64, expect=FAIL, tier="acl")
        call(acl.rt.memcpy, p, 64, dev.addr, 64, D2H, expect=FAIL, tier="acl")
        call(acl.rt.memcpy_async, p, 64, dev.addr, 64, D2H, rk.streams[0], expect=FAIL, tier="acl")
        call(acl.rt.memset_async, p, 64, 1, 64, rk.streams[0], expect=FAIL, tier="acl")
        call(acl.rt.memcpy, dev.addr, 64, p, 64, H2D, tier="acl")
        dev.window(0, 64)[:] = before
        if frozen != before:
            raise Finding("a bytes object registered with bytes_to_ptr was written")

    @rule(data=st.data())
    def bytearray_is_pinned(self, data):
        buf = bytearray(data.draw(st.binary(min_size=16, max_size=128), label="bytes"))
        p = acl.util.bytes_to_ptr(buf)
        try:
            buf.extend(b"\0" * 4096)
        except BufferError:
            pass
        else:
            raise Finding("a bytearray registered with bytes_to_ptr could still be resized")
        host = np.zeros(len(buf), np.uint8)
        call(acl.rt.memcpy, acl.util.numpy_to_ptr(host), len(buf), p, len(buf), H2H, tier="acl")
        if host.tobytes() != bytes(buf):
            raise Finding("bytes_to_ptr of a bytearray does not show its bytes")

    # -- C tier: local operations on threads --------------------------------------------------------------
    def thread_and_buffers(self, data, k=2):
        rk = self.rank(data)
        stream = data.draw(st.sampled_from(rk.streams), label="stream")
        bufs = [data.draw(st.sampled_from(self.device_bufs(rk)), label=f"buf{i}") for i in range(k)]
        return rk, stream, rk.thread_of[stream], bufs

    def other_device_pointer(self, rk):
        others = [b for o in self.w.ranks if o is not rk for b in self.device_bufs(o)]
        return [(b.addr, FAIL) for b in others[:2]] + [(h.addr, FAIL) for h in self.live(self.w.host)[:1]]

    @rule(data=st.data())
    def local_copy(self, data):
        rk, stream, thread, (dst, src) = self.thread_and_buffers(data)
        n = data.draw(st.integers(0, min(dst.size, src.size)), label="n")
        doff = data.draw(st.integers(0, dst.size - max(n, 1)), label="doff")
        soff = data.draw(st.integers(0, src.size - max(n, 1)), label="soff")
        d, s = dst.addr + doff, src.addr + soff
        overlap = dst is src and d != s and d < s + n and s < d + n
        args = [thread, d, s, n]
        bad = self.mutation(data, "thread", "dst", "src", "len", "numpy", "other device")
        expect = FAIL if overlap or not self.w.host_local_ops else OK
        if bad == "thread":
            args[0], expect = self.bad_handle(data, [stream, rk.comm] + list(rk.channels.values())[:1])
        elif bad == "dst":
            args[1], expect = self.bad_pointer(data, dst)
        elif bad == "src":
            args[2], expect = self.bad_pointer(data, src)
        elif bad == "len":
            args[3], expect = self.bad_count(data)
        elif bad == "other device":
            i = data.draw(st.sampled_from([1, 2]), label="which")
            args[i], expect = data.draw(st.sampled_from(self.other_device_pointer(rk)), label="ptr")
        elif bad == "numpy":
            args = self.numpy_args(data, args)
        if expect == OK:
            self.touch(stream, dst, src)
        call(pyhcomm.HcommLocalCopyOnThread, *args, expect=expect)
        if expect == OK:
            self.queue(stream, batched(lambda: apply_copy(dst, doff, src, soff, n)))

    @rule(data=st.data())
    def local_reduce(self, data):
        rk, stream, thread, (dst, src) = self.thread_and_buffers(data)
        dtype = data.draw(st.sampled_from(sorted(REDUCE_DTYPES)), label="dtype")
        op = data.draw(st.sampled_from(sorted(REDUCE_UFUNCS)), label="op")
        size = np.dtype(REDUCE_DTYPES[dtype]).itemsize
        count = data.draw(st.integers(0, min(dst.size, src.size) // size), label="count")
        doff = data.draw(st.integers(0, (dst.size - max(count * size, 1)) // size), label="doff") * size
        soff = data.draw(st.integers(0, (src.size - max(count * size, 1)) // size), label="soff") * size
        d, s, n = dst.addr + doff, src.addr + soff, count * size
        overlap = dst is src and d != s and d < s + n and s < d + n
        args = [thread, d, s, count, dtype, op]
        bad = self.mutation(data, "thread", "dst", "count", "dtype", "op", "numpy", "other device")
        expect = FAIL if overlap or not self.w.host_local_ops else OK
        if bad == "thread":
            args[0], expect = self.bad_handle(data, [stream])
        elif bad == "dst":
            args[1], expect = self.bad_pointer(data, dst)
        elif bad == "count":
            args[3], expect = self.bad_count(data)
        elif bad == "dtype":
            args[4], expect = data.draw(st.sampled_from([(13, FAIL), (-1, FAIL), (255, FAIL), (10, FAIL), (4.0, TYPE)]),
                                        label="dtype")
        elif bad == "op":
            args[5], expect = data.draw(st.sampled_from([(1, FAIL), (4, FAIL), (-2, FAIL), ("sum", TYPE)]), label="op")
        elif bad == "other device":
            args[2], expect = data.draw(st.sampled_from(self.other_device_pointer(rk)), label="ptr")
        elif bad == "numpy":
            args = self.numpy_args(data, args)
        if expect == OK:
            self.touch(stream, dst, src)
        call(pyhcomm.HcommLocalReduceOnThread, *args, expect=expect)
        if expect == OK:
            self.queue(stream, batched(lambda: apply_reduce(dst, doff, src, soff, count, dtype, op)))

    # -- C tier: one-sided transfers through channels -----------------------------------------------------
    @precondition(lambda self: self.w is not None and self.w.host_channels)
    @rule(data=st.data())
    def channel_transfer(self, data):
        rk = self.rank(data)
        peer = data.draw(st.sampled_from([o for o in self.w.ranks if o is not rk]), label="peer")
        stream = data.draw(st.sampled_from(rk.streams), label="stream")
        thread, ch = rk.thread_of[stream], rk.channels[peer.r]
        local = data.draw(st.sampled_from(self.device_bufs(rk)), label="local")
        remote = peer.hccl
        what = data.draw(st.sampled_from(["write", "read", "write_reduce", "read_reduce"]), label="what")
        reduce = what.endswith("reduce")
        unit = 4 if reduce else 1
        count = data.draw(st.integers(1, min(local.size, remote.size) // unit), label="count")
        loff = data.draw(st.integers(0, (local.size - count * unit) // unit), label="loff") * unit
        roff = data.draw(st.integers(0, (remote.size - count * unit) // unit), label="roff") * unit
        write = what.startswith("write")
        dst, src = (remote.addr + roff, local.addr + loff) if write else (local.addr + loff, remote.addr + roff)
        args = [thread, ch, dst, src, count] + ([2, 0] if reduce else [])   # INT32 SUM
        bad = self.mutation(data, "channel", "remote", "local", "len", "numpy", "foreign channel")
        expect = OK
        ri, li = (2, 3) if write else (3, 2)
        if bad == "channel":
            args[1], expect = self.bad_handle(data, [thread, stream])
        elif bad == "remote":
            # memory the peer did not expose: its device buffer, or past its HCCL buffer
            args[ri], expect = data.draw(st.sampled_from([(peer.bufs[0].addr, FAIL), (local.addr, FAIL),
                                                          (remote.addr - 1, FAIL), (0, FAIL), (1.5, TYPE)]),
                                         label="remote")
        elif bad == "local":
            args[li], expect = self.bad_pointer(data, local)
        elif bad == "len":
            args[4], expect = data.draw(st.sampled_from([(1 << 30, FAIL), (-1, FAIL), (1.0, TYPE)]), label="len")
        elif bad == "foreign channel":
            third = [o for o in self.w.ranks if o is not rk]
            args[1], expect = third[0].channels[next(iter(third[0].channels))], FAIL
        elif bad == "numpy":
            args = self.numpy_args(data, args)
        fn = {"write": pyhcomm.HcommWriteOnThread, "read": pyhcomm.HcommReadOnThread,
              "write_reduce": pyhcomm.HcommWriteReduceOnThread, "read_reduce": pyhcomm.HcommReadReduceOnThread}[what]
        if expect == OK:
            self.touch(stream, local, remote)
        call(fn, *args, expect=expect)
        if expect != OK:
            return
        a, aoff, b, boff = (remote, roff, local, loff) if write else (local, loff, remote, roff)
        if reduce:
            effect = batched(lambda: apply_reduce(a, aoff, b, boff, count, 2, 0))
        else:
            effect = batched(lambda: apply_copy(a, aoff, b, boff, count))
        self.queue(stream, effect)

    # -- notifies: every wait consumes a record issued (and launched) before it --------------------------
    @rule(data=st.data())
    def thread_notify_record(self, data):
        rk = self.rank(data)
        s_from, s_to = data.draw(st.permutations(rk.streams), label="streams")
        t, dst = rk.thread_of[s_from], rk.thread_of[s_to]
        idx = data.draw(st.integers(0, 3), label="idx")
        bad = self.mutation(data, "dstThread", "idx")
        if bad == "dstThread":
            other = self.w.ranks[(rk.r + 1) % len(self.w.ranks)]
            value, expect = data.draw(st.sampled_from([(other.thread_of[other.streams[0]], FAIL), (s_to, FAIL),
                                                       (1.5, TYPE)]), label="dst")
            call(pyhcomm.HcommThreadNotifyRecordOnThread, t, value, idx, expect=expect)
            return
        if bad == "idx":
            value, expect = data.draw(st.sampled_from([(4, FAIL), (-1, FAIL), (None, TYPE)]), label="idx")
            call(pyhcomm.HcommThreadNotifyRecordOnThread, t, dst, value, expect=expect)
            return
        key = (dst, idx)
        if self.notifies.get(key, "free") != "free":
            return
        call(pyhcomm.HcommThreadNotifyRecordOnThread, t, dst, idx)
        self.queue(s_from, batched(lambda: None))
        if self.batch is not None:
            self.notifies[key] = "held"
            self.batch["records"].append(key)
        else:
            self.notifies[key] = "recorded"

    @rule(data=st.data())
    def thread_notify_wait(self, data):
        rk = self.rank(data)
        stream = data.draw(st.sampled_from(rk.streams), label="stream")
        t = rk.thread_of[stream]
        ready = [k for k, state in self.notifies.items() if state == "recorded" and k[0] == t]
        bad = self.mutation(data, "idx", "timeout")
        if bad == "idx":
            value, expect = data.draw(st.sampled_from([(4, FAIL), (1 << 40, FAIL), (1.5, TYPE)]), label="idx")
            call(pyhcomm.HcommThreadNotifyWaitOnThread, t, value, WAIT_S, expect=expect)
            return
        if bad == "timeout":
            value, expect = data.draw(st.sampled_from([(-1, FAIL), (1 << 32, FAIL), (None, TYPE), (1.5, TYPE)]),
                                      label="timeout")
            call(pyhcomm.HcommThreadNotifyWaitOnThread, t, 0, value, expect=expect)
            return
        if not ready:
            return
        key = data.draw(st.sampled_from(ready), label="notify")
        call(pyhcomm.HcommThreadNotifyWaitOnThread, t, key[1], WAIT_S)
        self.notifies[key] = "waiting"
        self.waiting.setdefault(stream, []).append(key)
        self.queue(stream, batched(lambda: None))

    @precondition(lambda self: self.w is not None and self.w.host_channels)
    @rule(data=st.data())
    def channel_notify_pair(self, data):
        """A record on one rank's channel end, then (maybe) the peer's wait on its own end."""
        rk = self.rank(data)
        peer = data.draw(st.sampled_from([o for o in self.w.ranks if o is not rk]), label="peer")
        s = data.draw(st.sampled_from(rk.streams), label="stream")
        ps = data.draw(st.sampled_from(peer.streams), label="peer stream")
        idx = data.draw(st.integers(0, 1), label="idx")
        key = ("ch", peer.r, rk.r, idx)
        bad = self.mutation(data, "idx", "side")
        if bad == "idx":
            call(pyhcomm.HcommChannelNotifyRecordOnThread, rk.thread_of[s], rk.channels[peer.r],
                 data.draw(st.sampled_from([3, -1, 1 << 33]), label="idx"), expect=FAIL)
            return
        if bad == "side":   # the peer's thread on this rank's channel end
            call(pyhcomm.HcommChannelNotifyRecordOnThread, peer.thread_of[ps], rk.channels[peer.r], idx, expect=FAIL)
            return
        if self.notifies.get(key, "free") != "free" or self.batch is not None:
            return
        call(pyhcomm.HcommChannelNotifyRecordOnThread, rk.thread_of[s], rk.channels[peer.r], idx)
        self.queue(s, batched(lambda: None))
        self.notifies[key] = "recorded"
        if data.draw(st.booleans(), label="wait now"):
            call(pyhcomm.HcommChannelNotifyWaitOnThread, peer.thread_of[ps], peer.channels[rk.r], idx, WAIT_S)
            self.notifies[key] = "waiting"
            self.waiting.setdefault(ps, []).append(key)
            self.queue(ps, batched(lambda: None))

    # -- batch mode ------------------------------------------------------------------------------------
    @precondition(lambda self: self.w is not None and self.batch is None)
    @rule(data=st.data())
    def batch_start(self, data):
        self.batch_seq += 1
        tag = data.draw(st.sampled_from([f"fuzz{self.batch_seq}", "", None]), label="tag")
        call(pyhcomm.HcommBatchModeStart, tag)
        self.batch = {"tag": tag, "held": [], "keys": set(), "records": []}

    @precondition(lambda self: self.w is not None and self.batch is not None)
    @rule(data=st.data())
    def batch_end(self, data):
        bad = self.mutation(data, "tag", "nested")
        if bad == "tag":
            call(pyhcomm.HcommBatchModeEnd, "other-tag", expect=FAIL)
        elif bad == "nested":
            call(pyhcomm.HcommBatchModeStart, "nested", expect=FAIL)
        self.end_batch()

    # -- synchronisation and stream life cycles ------------------------------------------------------------
    @rule(data=st.data())
    def synchronize(self, data):
        rk = self.rank(data)
        key = data.draw(st.sampled_from(rk.streams + [rk.aicpu_stream]), label="stream")
        if data.draw(st.booleans(), label="bad handle"):
            value, expect = self.bad_handle(data, [rk.comm, rk.thread_of[rk.streams[0]]])
            if value not in (0, None):
                call(acl.rt.synchronize_stream, value, expect=expect, tier="acl")
            return
        self.quiesce(key)

    @rule(data=st.data())
    def stream_replaced(self, data):
        """Destroy a user stream (its queued work runs first) and wrap a new one in a thread."""
        rk = self.rank(data)
        old = data.draw(st.sampled_from(rk.streams), label="stream")
        if self.batch is not None and old in self.batch["keys"]:
            self.end_batch()
        t = rk.thread_of.pop(old)
        call(acl.rt.set_device, rk.r, tier="acl")
        call(acl.rt.destroy_stream, old, tier="acl")
        self.applied(old)
        call(acl.rt.destroy_stream, old, expect=FAIL, tier="acl")
        call(pyhcomm.HcommLocalCopyOnThread, t, rk.bufs[0].addr, rk.bufs[0].addr, 1, expect=FAIL)
        new, _ = call(acl.rt.create_stream, tier="acl")
        _, nt = call(pyhcomm.HcclThreadAcquireWithStream, rk.comm, pyhcomm.COMM_ENGINE_CPU_TS, new, 4)
        rk.streams[rk.streams.index(old)] = new
        rk.thread_of[new] = nt
        for k in [k for k in self.notifies if k[0] == t]:
            del self.notifies[k]
        call(acl.rt.set_device, 0, tier="acl")

    @rule(data=st.data())
    def buffer_replaced(self, data):
        """Free a device or pinned buffer, check that using it fails, allocate a new one."""
        rk = self.rank(data)
        choices = rk.bufs + [b for b in self.w.host if b.kind == "pinned"]
        buf = data.draw(st.sampled_from(choices), label="buffer")
        self.settle(buf)
        free = acl.rt.free if buf.kind == "device" else acl.rt.free_host
        call(free, buf.block_addr, tier="acl")
        buf.freed = True
        self.w.freed.append(buf.block_addr)
        call(free, buf.block_addr, expect=FAIL, tier="acl")
        call(acl.rt.memset, buf.addr, 1, 0, 1, expect=FAIL, tier="acl")
        new = self.w.device_buffer(rk.r) if buf.kind == "device" else self.w.pinned_buffer()
        if buf.kind == "device":
            rk.bufs[rk.bufs.index(buf)] = new
        else:
            self.w.host[self.w.host.index(buf)] = new

    # -- every integer, enum and float argument in every form ------------------------------------------------
    @rule(data=st.data())
    def scalar_forms(self, data):
        """A valid call with one integer, enum, float, pointer or list argument in another form
        (:mod:`fuzz_forms`): a numpy scalar answers as the plain value; None, a bool or a numpy
        float as a wrong type (never 0), or NULL."""
        from fuzz_forms import forms, recipes
        for _ in range(data.draw(st.integers(1, 4), label="calls")):
            rk = self.rank(data)
            recipe = data.draw(st.sampled_from(recipes(self, rk)), label="call")
            args, expect, what = forms(data, recipe)
            if recipe.before is not None:
                recipe.before()
            ret = call(recipe.fn, *args, expect=expect, tier=recipe.tier, name=what)
            ok = ret is not None and code_of(ret, recipe.tier) == 0
            if recipe.after is not None:
                recipe.after(args, ret, ok)

    # -- junk into every call -------------------------------------------------------------------------------
    @rule(data=st.data())
    def junk_call(self, data):
        """Any C or acl call with junk arguments (or junk mixed with live handles and pointers, for
        the calls that cannot touch what the model tracks): a code or TypeError, no byte changes."""
        from fuzz_junk import junk_call
        self.quiesce_all()
        live = ()
        if data.draw(st.booleans(), label="mix in live values"):
            rk = self.rank(data)
            live = (rk.comm, rk.streams[0], rk.thread_of[rk.streams[0]], rk.aicpu, rk.bufs[0].addr,
                    self.w.host[0].addr, 1, 2, 4, 8, 64, pyhcomm.HcclChannelDesc(), [rk.comm], "tag",
                    *list(rk.channels.values())[:1])
        junk_call(data, live)
