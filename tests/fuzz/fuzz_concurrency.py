"""Rules with more than one actor: AI CPU kernels, several host threads at once, races between
host threads, collectives (every rank in its own host thread), and waits that can never end.

Each rule first settles every stream, so that what it starts is the only work in flight, and
checks the outcome of every call made on another OS thread or inside a kernel as the main
thread does. A host thread that does not end within 30 seconds is a finding (a hang).
"""
from __future__ import annotations

import types

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

import pyhcomm
from pyhcomm import acl

from fuzz_calls import ANY, FAIL, OK, Finding, call
from fuzz_machine import D2H, CallsMachine
from fuzz_model import apply_copy, apply_reduce
from hcomm_testutil import run_threads   # a host thread alive after its timeout fails the example (a hang)

R = pyhcomm.HcclResult


def _kernel(ops, out):
    """The AI CPU kernel the fuzzer launches: each op's outcome in ``out``."""
    for label, fn, args in ops:
        try:
            out.append((label, args, fn(*args), None))
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            out.append((label, args, None, exc))
    return 0


KERNELS = types.ModuleType("pyhcomm_fuzz_kernels")
KERNELS.run = _kernel


class FuzzMachine(CallsMachine):
    """Every rule: one host thread, several host threads, kernels, races, collectives."""

    HANGS = True

    # -- AI CPU kernels ----------------------------------------------------------------------------------
    @rule(data=st.data())
    def kernel(self, data):
        """A kernel in batch mode issues local operations, channel transfers and fences on its rank's
        AICPU_TS thread, and bad ones (another device's thread, channel or memory, a host engine's
        thread, bad values)."""
        self.quiesce_all()
        rk = self.rank(data)
        other = self.w.ranks[(rk.r + 1) % len(self.w.ranks)]
        ops, effects = [], []
        tag = "k"
        ops.append(("start", pyhcomm.HcommBatchModeStart, (tag,)))
        effects.append((OK, None))
        for i in range(data.draw(st.integers(1, 5), label="ops")):
            dst, src = (data.draw(st.sampled_from(self.device_bufs(rk)), label=f"dst{i}"),
                        data.draw(st.sampled_from(self.device_bufs(rk)), label=f"src{i}"))
            n = data.draw(st.integers(1, min(dst.size, src.size) // 4), label=f"n{i}") * 4
            doff = data.draw(st.integers(0, (dst.size - n) // 4), label=f"doff{i}") * 4
            soff = data.draw(st.integers(0, (src.size - n) // 4), label=f"soff{i}") * 4
            d, s = dst.addr + doff, src.addr + soff
            if dst is src and d != s and d < s + n and s < d + n:
                continue
            what = data.draw(st.sampled_from(["copy", "reduce", "write", "read", "fence", "other thread", "other memory",
                                              "other channel", "other fence", "host thread", "bad len",
                                              "foreign channel", "not exposed"]),
                             label=f"op{i}")
            t = rk.aicpu
            if what == "copy":
                ops.append((what, pyhcomm.HcommLocalCopyOnThread, (t, d, s, n)))
                effects.append((OK, (lambda a=dst, ao=doff, b=src, bo=soff, k=n: apply_copy(a, ao, b, bo, k))))
            elif what == "reduce":
                ops.append((what, pyhcomm.HcommLocalReduceOnThread, (t, d, s, n // 4, 2, 0)))
                effects.append((OK, (lambda a=dst, ao=doff, b=src, bo=soff, k=n // 4:
                                     apply_reduce(a, ao, b, bo, k, 2, 0))))
            elif what in ("write", "read"):  # through this rank's AICPU_TS channel, the peer's HCCL buffer
                remote = other.hccl
                k = min(n, remote.size)
                roff = data.draw(st.integers(0, remote.size - k), label=f"roff{i}")
                ch = rk.dev_channels[other.r]
                if what == "write":
                    ops.append((what, pyhcomm.HcommWriteOnThread, (t, ch, remote.addr + roff, s, k)))
                    effects.append((OK, (lambda a=remote, ao=roff, b=src, bo=soff, k=k: apply_copy(a, ao, b, bo, k))))
                else:
                    ops.append((what, pyhcomm.HcommReadOnThread, (t, ch, d, remote.addr + roff, k)))
                    effects.append((OK, (lambda a=dst, ao=doff, b=remote, bo=roff, k=k: apply_copy(a, ao, b, bo, k))))
            elif what == "foreign channel":  # another rank's channel end
                ops.append((what, pyhcomm.HcommWriteOnThread, (t, other.dev_channels[rk.r], other.hccl.addr, s, 4)))
                effects.append((FAIL, None))
            elif what == "not exposed":      # the peer's device buffer: not exposed on the channel
                ops.append((what, pyhcomm.HcommWriteOnThread, (t, rk.dev_channels[other.r], other.bufs[0].addr, s, 4)))
                effects.append((FAIL, None))
            elif what == "fence":
                ops.append((what, pyhcomm.HcommChannelFenceOnThread, (t, rk.dev_channels[other.r])))
                effects.append((OK, None))
            elif what == "other channel":    # another device's thread and channel end, that device's memory
                ops.append((what, pyhcomm.HcommWriteOnThread, (other.aicpu, other.dev_channels[rk.r], rk.hccl.addr,
                                                               other.bufs[0].addr, 4)))
                effects.append((FAIL, None))
            elif what == "other fence":
                ops.append((what, pyhcomm.HcommChannelFenceOnThread, (other.aicpu, other.dev_channels[rk.r])))
                effects.append((FAIL, None))
            elif what == "other thread":     # a thread of another device, with that device's memory
                ob = other.bufs[0]
                ops.append((what, pyhcomm.HcommLocalCopyOnThread, (other.aicpu, ob.addr, ob.addr + 4, 4)))
                effects.append((FAIL, None))
            elif what == "other memory":
                ops.append((what, pyhcomm.HcommLocalCopyOnThread, (t, other.bufs[0].addr, s, 4)))
                effects.append((FAIL, None))
            elif what == "host thread":
                ops.append((what, pyhcomm.HcommLocalCopyOnThread, (rk.thread_of[rk.streams[0]], d, s, n)))
                effects.append((FAIL, None))
            else:
                ops.append((what, pyhcomm.HcommLocalCopyOnThread, (t, d, s, 1 << 40)))
                effects.append((FAIL, None))
        ops.append(("end", pyhcomm.HcommBatchModeEnd, (tag,)))
        effects.append((OK, None))
        out = []
        call(acl.rt.set_device, rk.r, tier="acl")
        binary, _ = call(acl.rt.binary_load_from_file, KERNELS, tier="acl")
        func, _ = call(acl.rt.binary_get_function, binary, "run", tier="acl")
        args, _ = call(acl.rt.kernel_args_init, func, tier="acl")
        call(acl.rt.kernel_args_append, args, ops, tier="acl")
        call(acl.rt.kernel_args_append, args, out, tier="acl")
        call(acl.rt.kernel_args_finalize, args, tier="acl")
        call(acl.rt.launch_kernel_with_config, func, 1, rk.streams[0], None, args, tier="acl")
        call(acl.rt.synchronize_device, tier="acl")
        call(acl.rt.set_device, 0, tier="acl")
        if len(out) != len(ops):
            raise Finding(f"the kernel ran {len(out)} of its {len(ops)} calls: {out}")
        problems = []   # every op's effect is applied first, so that teardown does not report the same call
        for (label, args_, ret, exc), (expect, effect) in zip(out, effects):
            if exc is not None:
                problems.append(f"inside a kernel, {label}{args_} raised {type(exc).__name__}: {exc}")
            elif (expect == OK) != (ret == 0):
                problems.append(f"inside a kernel, {label}{args_} returned {ret} where {expect} was due")
            elif effect is not None:
                effect()
        if problems:
            raise Finding("; ".join(problems))

    # -- several host threads at once ---------------------------------------------------------------------
    @precondition(lambda self: self.w is not None and self.w.host_local_ops)
    @rule(data=st.data())
    def host_threads(self, data):
        """One host thread per chosen rank, each issuing valid work on one of its streams and its own
        memory (in batch mode or not), then synchronising; all at once."""
        self.quiesce_all()
        chosen = data.draw(st.lists(st.sampled_from(self.w.ranks), min_size=2, max_size=4, unique_by=lambda r: r.r),
                           label="ranks")
        programs = []
        for rk in chosen:
            steps = []
            stream = data.draw(st.sampled_from(rk.streams), label="stream")   # one: the model orders it
            for i in range(data.draw(st.integers(1, 6), label="steps")):
                dst = data.draw(st.sampled_from(rk.bufs), label="dst")
                src = data.draw(st.sampled_from(rk.bufs), label="src")
                n = data.draw(st.integers(1, min(dst.size, src.size)), label="n")
                doff = data.draw(st.integers(0, dst.size - n), label="doff")
                soff = data.draw(st.integers(0, src.size - n), label="soff")
                if dst is src and doff != soff and abs(doff - soff) < n:
                    continue
                steps.append((rk.thread_of[stream], stream, dst, doff, src, soff, n))
            programs.append((rk, data.draw(st.booleans(), label="batch"), steps))

        def body(rk, batch, steps):
            def run():
                call(acl.rt.set_device, rk.r, tier="acl")
                if batch:
                    call(pyhcomm.HcommBatchModeStart, f"host{rk.r}")
                for t, _s, dst, doff, src, soff, n in steps:
                    call(pyhcomm.HcommLocalCopyOnThread, t, dst.addr + doff, src.addr + soff, n)
                if batch:
                    call(pyhcomm.HcommBatchModeEnd, f"host{rk.r}")
                for s in rk.streams:
                    call(acl.rt.synchronize_stream, s, tier="acl")
            return run

        run_threads([body(*p) for p in programs])
        for _rk, _batch, steps in programs:
            for _t, _s, dst, doff, src, soff, n in steps:
                apply_copy(dst, doff, src, soff, n)

    # -- races between host threads ------------------------------------------------------------------------
    @rule(data=st.data())
    def race(self, data):
        """Two host threads race on one object: a free, a destroy, a batch's end."""
        which = data.draw(st.sampled_from([self.race_free_against_copy, self.race_engine_ctx_copy_against_destroy,
                                           self.race_batch_end_against_stream_destroy]), label="race")
        which(data)

    def race_free_against_copy(self, data):
        """One thread copies out of a device buffer while another frees it: 0 or a code, never an exception."""
        self.quiesce_all()
        rk = self.rank(data)
        victim = data.draw(st.sampled_from(rk.bufs), label="victim")
        sink = np.zeros(victim.block_size, np.uint8)
        sp = acl.util.numpy_to_ptr(sink)
        rounds = data.draw(st.integers(1, 20), label="rounds")

        def copier():
            call(acl.rt.set_device, rk.r, tier="acl")
            for _ in range(rounds):
                call(acl.rt.memcpy, sp, victim.block_size, victim.block_addr, victim.block_size, D2H,
                     expect=ANY, tier="acl")

        def freer():
            call(acl.rt.set_device, rk.r, tier="acl")
            call(acl.rt.free, victim.block_addr, tier="acl")

        run_threads([copier, freer])
        victim.freed = True
        self.w.freed.append(victim.block_addr)
        rk.bufs[rk.bufs.index(victim)] = self.w.device_buffer(rk.r)

    def race_engine_ctx_copy_against_destroy(self, data):
        rk = self.rank(data)
        self.batch_seq += 1
        tag = f"ctx{self.batch_seq}"
        engine = data.draw(st.sampled_from([pyhcomm.COMM_ENGINE_CPU_TS, pyhcomm.COMM_ENGINE_AICPU_TS]), label="engine")
        call(pyhcomm.HcclEngineCtxCreate, rk.comm, tag, engine, 256)
        payload = np.arange(256, dtype=np.uint8)
        pp = acl.util.numpy_to_ptr(payload)
        rounds = data.draw(st.integers(1, 20), label="rounds")

        def copier():
            for i in range(rounds):
                call(pyhcomm.HcclEngineCtxCopy, rk.comm, engine, tag, pp if i % 2 else payload.tobytes(), 256, 0,
                     expect=ANY)

        def destroyer():
            call(pyhcomm.HcclEngineCtxDestroy, rk.comm, tag, engine)

        run_threads([copier, destroyer])
        call(pyhcomm.HcclEngineCtxCopy, rk.comm, engine, tag, payload.tobytes(), 256, 0, expect=FAIL)

    def race_batch_end_against_stream_destroy(self, data):
        """A host thread keeps a copy in a batch on a stream another thread destroys: End launches
        it (then the destroy waits for it) or returns HCCL_E_NOT_FOUND; nothing else changes."""
        self.quiesce_all()
        rk = self.rank(data)
        call(acl.rt.set_device, rk.r, tier="acl")
        stream, _ = call(acl.rt.create_stream, tier="acl")
        _, t = call(pyhcomm.HcclThreadAcquireWithStream, rk.comm, pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
        call(acl.rt.set_device, 0, tier="acl")
        dst, src = rk.bufs[0], rk.bufs[1]
        n = min(dst.size, src.size)
        outcome = []

        def batcher():
            call(acl.rt.set_device, rk.r, tier="acl")
            call(pyhcomm.HcommBatchModeStart, "race")
            call(pyhcomm.HcommLocalCopyOnThread, t, dst.addr, src.addr, n, expect=ANY)
            outcome.append(call(pyhcomm.HcommBatchModeEnd, "race", expect=ANY))

        def destroyer():
            call(acl.rt.set_device, rk.r, tier="acl")
            call(acl.rt.destroy_stream, stream, tier="acl")

        run_threads([batcher, destroyer])
        if outcome[0] not in (R.HCCL_SUCCESS, R.HCCL_E_NOT_FOUND):
            raise Finding(f"HcommBatchModeEnd racing aclrtDestroyStream returned {outcome[0]}")
        if outcome[0] == R.HCCL_SUCCESS:
            call(acl.rt.set_device, rk.r, tier="acl")
            call(acl.rt.synchronize_device, tier="acl")
            call(acl.rt.set_device, 0, tier="acl")
            actual = dst.actual()[dst.win:dst.win + n]
            done = actual == bytes(src.window(0, n))
            if done:
                apply_copy(dst, 0, src, 0, n)

    # -- collectives: every rank in its own host thread ------------------------------------------------------
    @rule(data=st.data())
    def all_reduce(self, data):
        self.quiesce_all()
        self.drain_channel_notifies()
        ranks = self.w.ranks
        count = data.draw(st.integers(0, min(min(b.size for b in rk.bufs) for rk in ranks) // 4), label="count")
        bad = self.mutation(data, "stream", "dtype", "count")
        rk0 = ranks[0]
        if bad == "stream":
            dead, _ = call(acl.rt.create_stream, tier="acl")
            call(acl.rt.destroy_stream, dead, tier="acl")
            call(pyhcomm.HcclAllReduce, rk0.bufs[0].addr, rk0.bufs[1].addr, count, 2, 0, rk0.comm, dead, expect=FAIL)
            return
        if bad == "dtype":
            call(pyhcomm.HcclAllReduce, rk0.bufs[0].addr, rk0.bufs[1].addr, count, 99, 0, rk0.comm,
                 rk0.streams[0], expect=FAIL)
            return
        if bad == "count":
            call(pyhcomm.HcclAllReduce, rk0.bufs[0].addr, rk0.bufs[1].addr, 1 << 40, 2, 0, rk0.comm,
                 rk0.streams[0], expect=FAIL)
            return

        def body(rk):
            def run():
                call(acl.rt.set_device, rk.r, tier="acl")
                call(pyhcomm.HcclAllReduce, rk.bufs[0].addr, rk.bufs[1].addr, count, 2, 0, rk.comm, rk.streams[0])
                call(acl.rt.synchronize_stream, rk.streams[0], tier="acl")
            return run

        run_threads([body(rk) for rk in ranks])
        total = np.zeros(count, np.int32)
        with np.errstate(all="ignore"):
            for rk in ranks:
                total += np.frombuffer(bytes(rk.bufs[0].window(0, count * 4)), np.int32)
        for rk in ranks:
            rk.bufs[1].window(0, count * 4)[:] = total.tobytes()
            rk.hccl.expect[:] = rk.hccl.actual()    # collective scratch: not modelled

    def drain_channel_notifies(self):
        """Consume every channel notify the fuzzer recorded, so a collective starts from clear ones."""
        for key, state in list(self.notifies.items()):
            if key[0] == "ch" and state == "recorded":
                _, r, peer, idx = key
                rk = self.w.ranks[r]
                s = rk.streams[0]
                call(pyhcomm.HcommChannelNotifyWaitOnThread, rk.thread_of[s], rk.channels[peer], idx, 30)
                self.queue(s, None)
                self.notifies[key] = "waiting"
                self.waiting.setdefault(s, []).append(key)
                self.quiesce(s)

    # -- a wait nothing can satisfy ------------------------------------------------------------------------
    @precondition(lambda self: self.w is not None and self.HANGS and not getattr(self, "hung", False))
    @rule(data=st.data())
    def wait_that_never_ends(self, data):
        """A wait with no record: the synchronize reports it (deadlock at once, or its timeout)."""
        self.hung = True
        rk = self.rank(data)
        stream = rk.streams[1]
        self.quiesce(stream)
        t = rk.thread_of[stream]
        idx = next((i for i in range(4) if self.notifies.get((t, i), "free") == "free"), None)
        if idx is None or self.batch is not None:
            return
        call(acl.rt.set_device, rk.r, tier="acl")
        call(pyhcomm.HcommThreadNotifyWaitOnThread, t, idx, 0)
        call(acl.rt.synchronize_stream, stream, expect=FAIL, tier="acl")
        call(acl.rt.synchronize_stream, stream, tier="acl")   # the error was reported once
        call(acl.rt.set_device, 0, tier="acl")
