"""Rules with more than one actor: AI CPU kernels, several host threads at once, races between
host threads, collectives (every rank in its own host thread), and waits that can never end;
host-only runtime calls made inside kernels, kernels waiting for their own stream (alone or through
another kernel), resources created while a blocking call is in progress (issue 31).

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

from fuzz_calls import ANY, FAIL, OK, STATS, Finding, call, code_of
from fuzz_machine import D2D, D2H, CallsMachine
from fuzz_model import apply_copy, apply_fill, apply_reduce
from hcomm_testutil import run_threads   # a host thread alive after its timeout fails the example (a hang)

R = pyhcomm.HcclResult
FEATURE = pyhcomm.AclError.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
AICPU_TS = pyhcomm.COMM_ENGINE_AICPU_TS


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
        (out,) = self.run_kernels(rk, [(rk.streams[0], ops)])
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

    def kernel_function(self):
        """``(function, a fresh args handle maker)`` of the fuzzer's kernel (current device set)."""
        binary, _ = call(acl.rt.binary_load_from_file, KERNELS, tier="acl")
        func, _ = call(acl.rt.binary_get_function, binary, "run", tier="acl")

        def make(ops, out):
            args, _ = call(acl.rt.kernel_args_init, func, tier="acl")
            call(acl.rt.kernel_args_append, args, ops, tier="acl")
            call(acl.rt.kernel_args_append, args, out, tier="acl")
            call(acl.rt.kernel_args_finalize, args, tier="acl")
            return args

        return func, make

    def run_kernels(self, rk, launches):
        """Launch the fuzzer's kernel once per ``(stream, ops)`` of ``launches`` on rank ``rk``'s
        device, in that order, and synchronize the device; returns each kernel's outcomes
        ``(label, args, ret, exc)``, one per op (a kernel that ran only some of its ops is a finding)."""
        call(acl.rt.set_device, rk.r, tier="acl")
        func, make = self.kernel_function()
        outs = []
        for stream, ops in launches:
            outs.append([])
            call(acl.rt.launch_kernel_with_config, func, 1, stream, None, make(ops, outs[-1]), tier="acl")
        call(acl.rt.synchronize_device, tier="acl")
        call(acl.rt.set_device, 0, tier="acl")
        for (_stream, ops), out in zip(launches, outs):
            STATS.add(len(out), api="inside a kernel")
            if len(out) != len(ops):
                raise Finding(f"the kernel ran {len(out)} of its {len(ops)} calls: {out}")
        return outs

    # -- host-only runtime calls inside a kernel -----------------------------------------------------------
    @rule(data=st.data())
    def kernel_host_calls(self, data):
        """A kernel makes host-only runtime calls with valid arguments: each is refused
        (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, or that code raised by the Pythonic tier) and changes
        nothing (no stream, device, memory or notify changes; nothing it queued or launched runs);
        its own memset, the getters and the device side's float timeout work."""
        self.quiesce_all()
        rk = self.rank(data)
        own, other = rk.streams
        buf = data.draw(st.sampled_from(rk.bufs), label="buffer")
        call(acl.rt.set_device, rk.r, tier="acl")
        notify, _ = call(acl.rt.create_notify, 0, tier="acl")
        func, make = self.kernel_function()
        ran = []
        inner = make([("ran", ran.append, ("launched",))], [])
        pinned = next(b for b in self.w.host if b.kind == "pinned")
        refused = {
            "create_stream": (acl.rt.create_stream, ()),
            "destroy own stream": (acl.rt.destroy_stream, (own,)),
            "destroy other stream": (acl.rt.destroy_stream, (other,)),
            "synchronize own stream": (acl.rt.synchronize_stream, (own,)),
            "synchronize own stream, timeout": (acl.rt.synchronize_stream_with_timeout, (own, 1000)),
            "synchronize other stream": (acl.rt.synchronize_stream, (other,)),
            "synchronize device": (acl.rt.synchronize_device, ()),
            "synchronize device, timeout": (acl.rt.synchronize_device_with_timeout, (1000,)),
            "memset_async": (acl.rt.memset_async, (buf.addr, 8, 0x77, 8, other)),
            "memcpy_async": (acl.rt.memcpy_async, (buf.addr, 8, buf.addr + 8, 8, D2D, other)),
            "malloc": (acl.rt.malloc, (64, 0)),
            "free": (acl.rt.free, (buf.block_addr,)),
            "malloc_host": (acl.rt.malloc_host, (64,)),
            "free_host": (acl.rt.free_host, (pinned.block_addr,)),
            "set_device": (acl.rt.set_device, (rk.r,)),
            "reset_device": (acl.rt.reset_device, (rk.r,)),
            "create_notify": (acl.rt.create_notify, (0,)),
            "destroy_notify": (acl.rt.destroy_notify, (notify,)),
            "record_notify": (acl.rt.record_notify, (notify, other)),
            "wait_and_reset_notify": (acl.rt.wait_and_reset_notify, (notify, other, 1)),
            "launch": (acl.rt.launch_kernel_with_config, (func, 1, other, None, inner)),
            "binary_load_from_file": (acl.rt.binary_load_from_file, (KERNELS,)),
            "acl.init": (acl.init, ()),
            "acl.finalize": (acl.finalize, ()),
            "Stream.synchronize": (lambda: pyhcomm.Stream(other, owned=False).synchronize(), ()),
            "Stream.launch": (lambda: pyhcomm.Stream(other, owned=False).launch(ran.append, "pythonic"), ()),
            "Device": (lambda: pyhcomm.Device(rk.r), ()),
        }
        names = data.draw(st.lists(st.sampled_from(sorted(refused)), min_size=1, max_size=8), label="host calls")
        ops = [(name, *refused[name]) for name in names]
        off = data.draw(st.integers(0, buf.size - 8), label="memset offset")
        value = data.draw(st.integers(0, 255), label="memset value")
        timeout = data.draw(st.sampled_from([5, np.int64(5), np.uint8(5), np.float32(5.0), 5.5, None]),
                            label="timeout form")
        allowed = [("memset", acl.rt.memset, (buf.addr + off, 8, value, 8)), ("get_device", acl.rt.get_device, ()),
                   ("HcommThreadResAcquireTimeOut", pyhcomm.HcommThreadResAcquireTimeOut, (timeout,))]
        ops += allowed
        call(acl.rt.set_device, 0, tier="acl")
        (out,) = self.run_kernels(rk, [(own, ops)])
        problems = []
        for label, args_, ret, exc in out:
            if label == "HcommThreadResAcquireTimeOut" and timeout is None:
                good = isinstance(exc, TypeError)
            elif label in ("memset", "get_device", "HcommThreadResAcquireTimeOut"):
                good = exc is None and code_of(ret, "acl" if label != "HcommThreadResAcquireTimeOut" else "c") == 0
            elif exc is not None:
                good = getattr(exc, "code", None) == FEATURE
            else:
                good = code_of(ret, "acl") == FEATURE
            if not good:
                problems.append(f"inside a kernel, {label}{args_} gave {ret!r} / {exc!r}")
        apply_fill(buf, off, value, 8)
        if problems:
            raise Finding("; ".join(problems))
        call(acl.rt.set_device, rk.r, tier="acl")
        for s in (own, other):
            call(acl.rt.synchronize_stream, s, tier="acl")          # both streams still exist, nothing ran
        call(acl.rt.destroy_notify, notify, tier="acl")           # the notify still exists
        call(acl.rt.set_device, 0, tier="acl")
        if ran:
            raise Finding(f"a kernel launched inside a kernel ran: {ran}")

    # -- a kernel waiting for its own stream ---------------------------------------------------------------
    def second_aicpu(self, rk):
        """Rank ``rk``'s second AICPU_TS thread and its stream (acquired once per example)."""
        if getattr(rk, "aicpu2", None) is None:
            _, (rk.aicpu2,) = call(pyhcomm.HcclThreadAcquire, rk.comm, AICPU_TS, 1, 1)
            _, rk.aicpu2_stream = call(pyhcomm.HcclThreadResGetInfo, rk.comm, rk.aicpu2,
                                       pyhcomm.THREAD_RES_TYPE_STREAM, 8)
        return rk.aicpu2, rk.aicpu2_stream

    @rule(data=st.data())
    def kernel_waits_for_its_own_stream(self, data):
        """A kernel waits for the stream it runs on: alone (refused at once: a synchronize is a host
        call, a drain or join of its own thread HCCL_E_PARA), or through a second kernel that waits
        for the first one's stream (one wait fails with HCCL_E_TIMEOUT, both kernels end; a timed
        join is waited for). The host's synchronize returns either way, and a later one too."""
        self.quiesce_all()
        rk = self.rank(data)
        peer = self.w.ranks[(rk.r + 1) % len(self.w.ranks)]
        ch = rk.dev_channels[peer.r]
        is_950 = pyhcomm.current_sim().runtime.product.is_950
        kinds = ["synchronize", "drain", "drain cycle"] + (["join", "join cycle"] if is_950 else [])
        what = data.draw(st.sampled_from(kinds), label="wait")
        own = rk.aicpu_stream
        if what == "synchronize":
            out = self.run_kernels(rk, [(own, [(what, acl.rt.synchronize_stream, (own,))])])
            expect = [[FEATURE]]
        elif what in ("drain", "join"):
            op = ((what, pyhcomm.HcommChannelDrainOnThread, (rk.aicpu, ch)) if what == "drain"
                  else (what, pyhcomm.HcommThreadJoin, (rk.aicpu, 0)))
            out = self.run_kernels(rk, [(own, [op])])
            expect = [[R.HCCL_E_PARA]]
        else:
            t2, s2 = self.second_aicpu(rk)
            if what == "drain cycle":
                a = ("drain", pyhcomm.HcommChannelDrainOnThread, (t2, ch))
                b = ("drain", pyhcomm.HcommChannelDrainOnThread, (rk.aicpu, ch))
            else:
                timed = data.draw(st.integers(0, 9), label="timed") == 0      # (1 s: rarely)
                a = ("join", pyhcomm.HcommThreadJoin, (t2, 1 if timed else 0))
                b = ("join", pyhcomm.HcommThreadJoin, (rk.aicpu, 0))
            out = self.run_kernels(rk, [(own, [a]), (s2, [b])])
            expect = None
        raised = [exc for o in out for _l, _a, _r, exc in o if exc is not None]
        if raised:
            raise Finding(f"a kernel waiting for its own stream ({what}) raised {raised[0]!r}") from raised[0]
        codes = [[int(ret) for _l, _a, ret, _e in o] for o in out]
        if expect is not None:
            if codes != expect:
                raise Finding(f"a kernel waiting for its own stream ({what}) gave {codes}, not {expect}")
        elif sorted(c for o in codes for c in o) != [R.HCCL_SUCCESS, R.HCCL_E_TIMEOUT]:
            raise Finding(f"two kernels waiting for each other's streams ({what}) gave {codes}: one wait "
                          "fails (HCCL_E_TIMEOUT), the other completes")
        call(acl.rt.set_device, rk.r, tier="acl")
        call(acl.rt.synchronize_device, tier="acl")     # a later synchronize returns too
        call(acl.rt.set_device, 0, tier="acl")

    # -- resources created while a blocking call is in progress ---------------------------------------------
    @rule(data=st.data())
    def resources_during_a_blocking_call(self, data):
        """Resources created while a synchronize is in progress are waited for: a kernel (which the
        host's synchronize_device runs) acquires an HCCL thread, a new stream, and copies on it; or
        another host thread creates a stream, fills a buffer on it and destroys it, while this one
        synchronizes the device. Every call returns 0 and the bytes are the model's once it did."""
        self.quiesce_all()
        rk = self.rank(data)
        dst, src = data.draw(st.permutations(rk.bufs), label="buffers")
        n = data.draw(st.integers(1, min(dst.size, src.size) // 4), label="n") * 4
        if data.draw(st.booleans(), label="in a kernel"):
            comm = rk.comm

            def acquire_and_copy():
                ret, threads = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 1, 1)
                codes = [ret, pyhcomm.HcommBatchModeStart("res")]
                codes.append(pyhcomm.HcommLocalCopyOnThread(threads[0], dst.addr, src.addr, n))
                codes.append(pyhcomm.HcommBatchModeEnd("res"))
                return codes

            (out,) = self.run_kernels(rk, [(rk.streams[0], [("acquire and copy", acquire_and_copy, ())])])
            (_label, _args, codes, exc) = out[0]
            if exc is not None or codes != [0, 0, 0, 0]:
                raise Finding(f"inside a kernel, HcclThreadAcquire and a copy on its thread gave {codes} / {exc!r}")
            apply_copy(dst, 0, src, 0, n)   # synchronize_device returned 0: the new stream ran too
            return
        value = data.draw(st.integers(0, 255), label="value")
        rounds = data.draw(st.integers(1, 5), label="rounds")

        def synchronizer():
            call(acl.rt.set_device, rk.r, tier="acl")
            for _ in range(rounds):
                call(acl.rt.synchronize_device, tier="acl")

        def creator():
            call(acl.rt.set_device, rk.r, tier="acl")
            s, _ = call(acl.rt.create_stream, tier="acl")
            call(acl.rt.memset_async, dst.addr, n, value, n, s, tier="acl")
            call(acl.rt.synchronize_stream, s, tier="acl")
            call(acl.rt.destroy_stream, s, tier="acl")

        run_threads([synchronizer, creator])
        apply_fill(dst, 0, value, n)

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
