"""CCU kernels (pyhcomm.ccu): registration and launch with their documented codes, the DSL's rules
and limits, what a mission does when it runs (moves, branches, loops, CKE bits), and what the
record, the verifier, the timing model and the trace see of it."""
from __future__ import annotations

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl, ccu
from pyhcomm import CcuResult as C
from pyhcomm import HcommCcuResType as T
from pyhcomm.verify import check

A350 = "Atlas 350"
E = pyhcomm.HcclResult


def _ok(pair):
    ret, *out = pair if isinstance(pair, tuple) else (pair,)
    assert ret == 0, f"returned {ret!r}"
    return out[0] if len(out) == 1 else out


class Env:
    """One rank's CCU setup: a stream and its CCU thread, an instance (example 05's presets on die 0,
    or ``nums``) assigned to the communicator, a CCU channel per peer."""

    def __init__(self, comm, nums=None, channels=True):
        self.comm, self.rank, self.n = comm, comm.rank, comm.size
        self.stream = _ok(acl.rt.create_stream()[::-1])
        self.thread = _ok(pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CCU, self.stream, 0))
        desc = _ok(pyhcomm.HcommCcuInsResDescCreate(0))
        nums = nums or {T.HCOMM_CCU_RES_TYPE_VARIABLE: 400, T.HCOMM_CCU_RES_TYPE_ADDRESS: 400,
                        T.HCOMM_CCU_RES_TYPE_EVENT: 48, T.HCOMM_CCU_RES_TYPE_CCU_BUF: 128, T.HCOMM_CCU_RES_TYPE_LOOP: 16,
                        T.HCOMM_CCU_RES_TYPE_CCU_THREAD: 2}
        for t, num in nums.items():
            _ok(pyhcomm.HcommCcuInsResDescSetNum(desc, t, num))
        self.ins = _ok(pyhcomm.HcommCcuInsCreate([desc]))
        _ok(pyhcomm.HcclCommAssignCcuIns(comm.handle, self.ins))
        self.channels = {p: self.channel(p) for p in range(self.n) if p != self.rank} if channels else {}

    def channel(self, peer):
        links = _ok(pyhcomm.HcclRankGraphGetLinks(self.comm.handle, 0, self.rank, peer))
        link = next(lk for lk in links if lk.linkAttr.linkProtocol == pyhcomm.COMM_PROTOCOL_UB_CTP)
        desc = pyhcomm.HcclChannelDesc()
        _ok(pyhcomm.HcclChannelDescInit(desc))
        desc.remoteRank, desc.channelProtocol = peer, link.linkAttr.linkProtocol
        desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
        return _ok(pyhcomm.HcclChannelAcquire(self.comm.handle, pyhcomm.COMM_ENGINE_CCU, [desc]))[0]

    def register(self, fn, *arg):
        """``(ret, kernel)`` of one round registering ``fn`` (with ``arg`` when given)."""
        _ok(pyhcomm.HcommCcuKernelRegisterStart(self.ins))
        got = pyhcomm.HcommCcuKernelRegister(self.ins, 0, fn.__name__, fn, list(arg), len(arg))
        _ok(pyhcomm.HcommCcuKernelRegisterEnd(self.ins))
        return got

    def run(self, kernel, args=()):
        """Launch ``kernel`` and synchronize: ``(launch code, synchronize code)``."""
        ret = pyhcomm.HcommCcuKernelLaunch(self.thread, kernel, list(args), len(args))
        return ret, acl.rt.synchronize_stream(self.stream)

    def device_array(self, values):
        values = np.asarray(values)
        ptr = _ok(acl.rt.malloc(values.nbytes, 0)[::-1])
        assert acl.rt.memcpy(ptr, values.nbytes, acl.util.numpy_to_ptr(values), values.nbytes, 1) == 0
        return ptr

    def read(self, ptr, like):
        out = np.zeros_like(np.asarray(like))
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, 2) == 0
        return out

    def token(self, ptr):
        return _ok(pyhcomm.HcommCcuGetMemToken(ptr, 8))


def on_ccu(body, n=1, scheduler=None, **env):
    """``body(Env)`` on each of ``n`` ranks of Atlas 350; their results."""
    return pyhcomm.launch(lambda comm: body(Env(comm, **env)), n, product=A350, scheduler=scheduler)


def _vars(n):
    return [ccu.Variable() for _ in range(n)]


# -- registration ------------------------------------------------------------------------------------------------
def _registration_codes(env):
    ins, reg = env.ins, pyhcomm.HcommCcuKernelRegister
    out = {"start_null": pyhcomm.HcommCcuKernelRegisterStart(0), "start_unknown": pyhcomm.HcommCcuKernelRegisterStart(999),
           "outside": reg(ins, 0, "k", lambda: None, [], 0), "end_outside": pyhcomm.HcommCcuKernelRegisterEnd(ins),
           "end_null": pyhcomm.HcommCcuKernelRegisterEnd(0)}
    _ok(pyhcomm.HcommCcuKernelRegisterStart(ins))
    out["start_twice"] = pyhcomm.HcommCcuKernelRegisterStart(ins)

    def raises():
        raise ValueError("no")

    def too_big():
        ccu.Array(ccu.Variable, 500)

    def nested():
        out["nested"] = reg(ins, 0, "inner", lambda: None, [], 0)
        out["token_inside"] = pyhcomm.HcommCcuGetMemToken(env.device_array([1.0]), 4)

    def fits():
        ccu.Array(ccu.Variable, 400)
    out.update(null=reg(ins, 0, "k", None, [], 0), native=reg(ins, 0, "k", 0x1234, [], 0),
               not_callable=reg(ins, 0, "k", "kernel", [], 0), two_args=reg(ins, 0, "k", lambda a: None, [1, 2], 2),
               no_arg=reg(ins, 0, "k", lambda a: None, [], 1), null_arg=reg(ins, 0, "k", lambda a: None, [None], 1),
               bad_die=reg(ins, 2, "k", lambda: None, [], 0), empty_die=reg(ins, 1, "k", ccu.Variable, [], 0),
               raises=reg(ins, 0, "k", raises, [], 0), returns=reg(ins, 0, "k", lambda: C.CCU_E_UNAVAIL, [], 0),
               too_big=reg(ins, 0, "k", too_big, [], 0), fits=reg(ins, 0, "fits", fits, [], 0),
               nest=reg(ins, 0, "outer", nested, [], 0))
    _ok(pyhcomm.HcommCcuKernelRegisterEnd(ins))
    return out


def test_registration_codes():
    (out,) = on_ccu(_registration_codes)
    assert out["start_null"] == out["start_unknown"] == C.CCU_E_PTR
    assert out["outside"] == (C.CCU_E_INTERNAL, 0) and out["end_outside"] == C.CCU_E_INTERNAL
    assert out["end_null"] == C.CCU_E_PTR and out["start_twice"] == C.CCU_E_INTERNAL
    assert out["null"] == out["not_callable"] == out["no_arg"] == out["null_arg"] == (C.CCU_E_PTR, 0)
    assert out["native"] == (C.CCU_E_NOT_SUPPORT, 0)
    assert out["two_args"] == out["bad_die"] == (C.CCU_E_PARA, 0)
    assert out["empty_die"] == (C.CCU_E_UNAVAIL, 0)      # (its instance holds only missions on die 1)
    assert out["raises"] == (C.CCU_E_INTERNAL, 0) and out["returns"] == (C.CCU_E_UNAVAIL, 0)
    assert out["too_big"] == (C.CCU_E_UNAVAIL, 0)
    assert out["fits"][0] == C.CCU_SUCCESS          # the failed kernel's variables came back
    assert out["nest"][0] == C.CCU_SUCCESS and out["nested"] == (C.CCU_E_INTERNAL, 0)
    assert out["token_inside"] == (C.CCU_E_NOT_SUPPORT, 0)


def test_the_dsl_exists_only_inside_a_registration():
    with pytest.raises(ccu.CcuError) as err:
        ccu.Variable()
    assert err.value.code == C.CCU_E_INTERNAL and "HcommCcuKernelRegister" in str(err.value)


def test_task_args_num_is_the_largest_arg_id_plus_one():
    def kernel():
        a, b = _vars(2)
        ccu.LoadArg(a, 0)
        ccu.LoadArg(b, 2)

    def body(env):
        k = _ok(env.register(kernel))
        launch = pyhcomm.HcommCcuKernelLaunch
        return (pyhcomm.HcommCcuGetTaskArgsNum(k), pyhcomm.HcommCcuGetTaskArgsNum(12345),
                launch(env.thread, k, [1, 2, 3], 3), launch(env.thread, k, [1, 2], 2), launch(env.thread, k, [1, 2, 3], 2),
                acl.rt.synchronize_stream(env.stream))
    (got,) = on_ccu(body)
    # GetTaskArgsNum: the largest argId plus one; a launch's argNum: the number of distinct argIds (2); its
    # taskArgs are indexed by argId (three values here: a list may hold more than argNum)
    assert got[:2] == ((C.CCU_SUCCESS, 3), (C.CCU_E_NOT_FOUND, 0))
    assert got[2:] == (C.CCU_E_INTERNAL, C.CCU_E_PARA, C.CCU_SUCCESS, 0)


def test_query_res_req_dry_runs_without_taking_anything():
    def kernel(_arg):
        _vars(3)
        ccu.Array(ccu.Event, 4)
        ccu.CcuBuffer(), ccu.CcuBuffer()
        p, o, length, e = ccu.Variable(), ccu.Variable(), ccu.Variable(), ccu.Event()
        src, dst, buf = ccu.LocalAddr(), ccu.LocalAddr(), ccu.CcuBuffer()
        loop = ccu.Loop(p, ccu.Func(lambda: (ccu.LocalCopy(buf, src, length, e), ccu.EventWait(e))))
        ccu.LoopGroup(p, o, 8, [loop])
        del dst

    def body(env):
        d = _ok(pyhcomm.HcommCcuInsResDescCreate(0))
        remain = _ok(pyhcomm.HcommCcuInsResDescCreate(0))
        _ok(pyhcomm.HcommCcuQueryRemainResDesc(remain))
        before = _ok(pyhcomm.HcommCcuInsResDescQueryNum(remain, T.HCOMM_CCU_RES_TYPE_VARIABLE))
        ret = pyhcomm.HcommCcuKernelQueryResReq(kernel, [object()], d)
        counts = {t.name[19:]: _ok(pyhcomm.HcommCcuInsResDescQueryNum(d, t)) for t in T if t >= 0}
        _ok(pyhcomm.HcommCcuQueryRemainResDesc(remain))
        after = _ok(pyhcomm.HcommCcuInsResDescQueryNum(remain, T.HCOMM_CCU_RES_TYPE_VARIABLE))
        channel_die1 = _ok(pyhcomm.HcommCcuInsResDescCreate(1))

        def uses_channel():
            ccu.GetResByChannel(ccu.Variable, env.channels[1 - env.rank], 1)
        return (ret, counts, before == after, pyhcomm.HcommCcuKernelQueryResReq(None, [], d),
                pyhcomm.HcommCcuKernelQueryResReq(kernel, [1, 2], d), pyhcomm.HcommCcuKernelQueryResReq(kernel, 5, d),
                pyhcomm.HcommCcuKernelQueryResReq(kernel, [1], 0), pyhcomm.HcommCcuKernelQueryResReq(kernel, [1], 77),
                pyhcomm.HcommCcuKernelQueryResReq(uses_channel, None, channel_die1))
    got = on_ccu(body, 2)[0]
    ret, counts, unchanged, *codes = got
    assert ret == C.CCU_SUCCESS and unchanged
    # 3 + p, o, length + the two LocalAddr tokens; 4 + e; 2 + buf; one group of 8 loops; instructions: the
    # loop's two, the loop, the group
    assert counts == {"LOOP": 8, "CCU_BUF": 3, "VARIABLE": 8, "ADDRESS": 2, "EVENT": 5, "CCU_THREAD": 1,
                      "INSTRUCTION": 4, "CASC_CNT": 0}
    assert codes == [C.CCU_E_PTR, C.CCU_E_PARA, C.CCU_E_PARA, C.CCU_E_PARA, C.CCU_E_NOT_FOUND, C.CCU_E_PARA]


def test_launch_codes():
    def kernel():
        v = ccu.Variable()
        ccu.LoadArg(v, 0)

    def body(env):
        k = _ok(env.register(kernel))
        _ok(pyhcomm.HcommCcuKernelRegisterStart(env.ins))
        pending = _ok(pyhcomm.HcommCcuKernelRegister(env.ins, 0, "pending", kernel, [], 0))
        cpu = _ok(pyhcomm.HcclThreadAcquireWithStream(env.comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, env.stream, 0))
        args = np.array([7], np.uint64)
        launch = pyhcomm.HcommCcuKernelLaunch
        return (launch(0, k, [1], 1), launch(env.thread, 0, [1], 1), launch(12345, k, [1], 1),
                launch(env.thread, 54321, [1], 1), launch(cpu, k, [1], 1), launch(env.thread, pending, [1], 1),
                launch(env.thread, k, [1, 2], 2), launch(env.thread, k, None, 1), launch(env.thread, k, [], 0),
                launch(env.thread, k, acl.util.numpy_to_ptr(args), 1), acl.rt.synchronize_stream(env.stream))
    got = on_ccu(body)[0]
    assert got[:2] == (C.CCU_E_PARA, C.CCU_E_PARA)            # a thread or kernel of 0
    assert got[2:4] == (C.CCU_E_PTR, C.CCU_E_PTR)             # unknown ones
    assert got[4] == C.CCU_E_PARA                             # a CPU_TS thread
    assert got[5] == C.CCU_E_INTERNAL                         # not translated (no RegisterEnd yet)
    assert got[6] == got[8] == C.CCU_E_INTERNAL               # argNum is not the number of argIds
    assert got[7] == C.CCU_E_PTR and got[9:] == (C.CCU_SUCCESS, 0)   # NULL taskArgs; a host pointer works


def _device_setup(device, root):
    """A one-rank communicator on ``device`` with a stream, its CCU thread, an instance and a kernel
    loading one argument: ``(stream, thread, kernel)``."""
    assert acl.rt.set_device(device) == 0
    comm = _ok(pyhcomm.HcclCommInitRootInfo(1, root, 0))
    stream = _ok(acl.rt.create_stream()[::-1])
    thread = _ok(pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CCU, stream, 0))
    desc = _ok(pyhcomm.HcommCcuInsResDescCreate(0))
    _ok(pyhcomm.HcommCcuInsResDescSetNum(desc, T.HCOMM_CCU_RES_TYPE_VARIABLE, 8))
    ins = _ok(pyhcomm.HcommCcuInsCreate([desc]))

    def kernel():
        ccu.LoadArg(ccu.Variable(), 0)
    _ok(pyhcomm.HcommCcuKernelRegisterStart(ins))
    k = _ok(pyhcomm.HcommCcuKernelRegister(ins, 0, "one_arg", kernel, [], 0))
    _ok(pyhcomm.HcommCcuKernelRegisterEnd(ins))
    return stream, thread, k


def test_launch_codes_across_devices_streams_and_kernels():
    """A kernel of another device than the thread's: CCU_E_PARA; a thread whose stream is destroyed:
    CCU_E_PTR; a launch inside an AI CPU kernel (a host call): CCU_E_NOT_SUPPORT."""
    from pyhcomm.aclrt.kernel import launch_function
    from pyhcomm.aclrt.stream import get_stream
    pyhcomm.set_product(A350, device_count=2)
    s1, t1, k1 = _device_setup(1, _ok(pyhcomm.HcclGetRootInfo()))
    s0, t0, k0 = _device_setup(0, _ok(pyhcomm.HcclGetRootInfo()))
    launch = pyhcomm.HcommCcuKernelLaunch
    assert launch(t0, k1, [1], 1) == C.CCU_E_PARA
    inside = []
    launch_function(lambda: inside.append(launch(t0, k0, [1], 1)) or 0, get_stream(s0, "test"), ())
    assert acl.rt.synchronize_stream(s0) == 0 and inside == [C.CCU_E_NOT_SUPPORT]
    assert launch(t0, k0, [1], 1) == C.CCU_SUCCESS and acl.rt.synchronize_stream(s0) == 0
    assert acl.rt.set_device(1) == 0 and acl.rt.destroy_stream(s1) == 0
    assert launch(t1, k1, [1], 1) == C.CCU_E_PTR


# -- the DSL's rules ---------------------------------------------------------------------------------------------
def _arg(i=0):
    v = ccu.Variable()
    ccu.LoadArg(v, i)
    return v


RULES = {
    "arg_id_13": lambda ch: ccu.LoadArg(ccu.Variable(), 13),
    "load_arg_late": lambda ch: (ccu.Variable().assign(1), ccu.LoadArg(ccu.Variable(), 0)),
    "wide_mask": lambda ch: ccu.EventRecord(ccu.Event(), 1 << 16),
    "record_in_loop": lambda ch: ccu.Loop(ccu.Variable(), ccu.Func(lambda: ccu.EventRecord(ccu.Event()))),
    "notify_in_loop": lambda ch: ccu.Loop(ccu.Variable(), ccu.Func(lambda: ccu.NotifyRecord(ch, 0))),
    "assign_in_loop": lambda ch: ccu.Loop(ccu.Variable(), ccu.Func(lambda: ccu.Variable().assign(1))),
    "buffer_4097": lambda ch: ccu.LocalCopy(ccu.CcuBuffer(), ccu.LocalAddr(), 4097, ccu.Event()),
    "remote_256mb": lambda ch: ccu.Write(ch, ccu.RemoteAddr(), ccu.LocalAddr(), 256 << 20, ccu.Event()),
    "zero_bytes": lambda ch: ccu.LocalCopy(ccu.LocalAddr(), ccu.LocalAddr(), 0, ccu.Event()),
    "buffer_to_buffer": lambda ch: ccu.LocalCopy(ccu.CcuBuffer(), ccu.CcuBuffer(), 64, ccu.Event()),
    "local_as_remote": lambda ch: ccu.Write(ch, ccu.LocalAddr(), ccu.LocalAddr(), 64, ccu.Event()),
    "slot_4": lambda ch: ccu.GetResByChannel(ccu.Variable, ch, 4),
    "notify_index_4": lambda ch: ccu.NotifyWait(ch, 4, 1),
    "not_a_channel": lambda ch: ccu.NotifyWait(12345, 0, 1),
    "else_alone": lambda ch: ccu.Else().__enter__(),
    "if_not_a_condition": lambda ch: ccu.If(3),
    "group_of_nothing": lambda ch: ccu.LoopGroup(ccu.Variable(), ccu.Variable(), 8, []),
    "reduce_fp64": lambda ch: ccu.LocalReduce(ccu.LocalAddr(), ccu.LocalAddr(), 64, pyhcomm.HCCL_DATA_TYPE_FP64,
                                              pyhcomm.HCCL_REDUCE_SUM, ccu.Event()),
}
FINE = {
    "buffer_4096": lambda ch: ccu.LocalCopy(ccu.CcuBuffer(), ccu.LocalAddr(), 4096, ccu.Event()),
    "array_buffer_8192": lambda ch: ccu.LocalCopy(ccu.Array(ccu.CcuBuffer, 2)[0], ccu.LocalAddr(), 8192, ccu.Event()),
    "mask_16_bits": lambda ch: ccu.EventRecord(ccu.Event(), 0xFFFF),
    "wait_in_loop": lambda ch: ccu.Loop(ccu.Variable(), ccu.Func(lambda: ccu.EventWait(ccu.Event()))),
}


def test_the_dsl_rules_and_limits():
    def body(env):
        ch = env.channels[1 - env.rank]
        out = {}
        assert pyhcomm.HcommCcuKernelRegisterStart(env.ins) == 0
        for name, rule in {**RULES, **FINE}.items():
            out[name] = pyhcomm.HcommCcuKernelRegister(env.ins, 0, name, lambda r=rule: r(ch) and None, [], 0)[0]
        assert pyhcomm.HcommCcuKernelRegisterEnd(env.ins) == 0
        return out
    out = on_ccu(body, 2)[0]
    assert {n: out[n] for n in RULES} == {n: C.CCU_E_PARA for n in RULES}
    assert {n: out[n] for n in FINE} == {n: C.CCU_SUCCESS for n in FINE}


def test_a_python_bool_of_a_register_is_refused():
    def kernel():
        if _arg() != 0:
            pass

    (got,) = on_ccu(lambda env: env.register(kernel)[0])
    assert got == C.CCU_E_INTERNAL          # (a TypeError in the kernel function: use ccu.If)


# -- what a mission does ---------------------------------------------------------------------------------------
def _copy_kernel():
    """args: src, dst, token, n, flag: flag 1 copies n bytes src -> dst; else the n bytes after them
    (the Else branch, with address arithmetic), then dst += src (a reduce of FP32)."""
    src_a, dst_a, tok, n, flag = [_arg(i) for i in range(5)]
    e = ccu.Event()
    src, dst = ccu.LocalAddr(addr=src_a, token=tok), ccu.LocalAddr(addr=dst_a, token=tok)
    with ccu.If(flag == 1):
        ccu.LocalCopy(dst, src, n, e, 1)
        ccu.EventWait(e, 1)
    with ccu.Else():
        src.addr += n
        ccu.LocalCopy(dst, src, n, e, 2)
        ccu.EventWait(e, 2)
        ccu.LocalReduce(dst, src, n, pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCCL_REDUCE_SUM, e, 4)
        ccu.EventWait(e, 4)


def test_moves_branches_and_arithmetic_run_when_launched():
    def body(env):
        k = _ok(env.register(_copy_kernel))
        data = np.arange(8, dtype=np.float32)
        src, dst = env.device_array(data), env.device_array(np.zeros(4, np.float32))
        tok = env.token(src)
        first = env.run(k, [src, dst, tok, 16, 1]), env.read(dst, np.zeros(4, np.float32))
        second = env.run(k, [src, dst, tok, 16, 0]), env.read(dst, np.zeros(4, np.float32))
        return first, second
    (first, second), = on_ccu(body)
    assert first[0] == second[0] == (0, 0)
    np.testing.assert_array_equal(first[1], [0, 1, 2, 3])
    np.testing.assert_array_equal(second[1], [8, 10, 12, 14])    # the second half, then added to itself


def _group_kernel(alone):
    """args: src, dst, token: 32 KiB copied through CCU buffers by one loop cloned 3 times (4 at once),
    2 iterations each of 4 KiB, the clones 4 KiB apart; ``alone``: the loop without a group."""
    src_a, dst_a, tok = [_arg(i) for i in range(3)]
    bufs, evs = ccu.Array(ccu.CcuBuffer, 4), ccu.Array(ccu.Event, 4)
    src, dst, length = ccu.LocalAddr(addr=src_a, token=tok), ccu.LocalAddr(addr=dst_a, token=tok), ccu.Variable()
    length.assign(4096)
    param, parallel, offset = _vars(3)
    param.assign(4 * 4096 << 13 | 2)                  # stride 16 KiB, 2 iterations
    parallel.assign(3 << 55 | 0 << 48 | 1 << 41)      # loop 0, and 3 clones of it
    offset.assign(4096 << 21 | 1 << 10 | 1)           # clone j: +j*4 KiB, buffer +j, event +j

    def body():
        ccu.LocalCopy(bufs[0], src, length, evs[0], 1)
        ccu.EventWait(evs[0], 1)
        ccu.LocalCopy(dst, bufs[0], length, evs[0], 1)
        ccu.EventWait(evs[0], 1)
    loop = ccu.Loop(param, ccu.Func(body))
    if not alone:
        ccu.LoopGroup(parallel, offset, 4, [loop])


@pytest.mark.parametrize("alone", [False, True])
def test_a_loop_group_runs_its_loop_and_clones_and_a_loop_alone_nothing(alone):
    def body(env):
        k = _ok(env.register(lambda: _group_kernel(alone)))
        data = np.random.default_rng(1).random(8192, dtype=np.float32)      # 32 KiB
        src, dst = env.device_array(data), env.device_array(np.zeros_like(data))
        return env.run(k, [src, dst, env.token(src)]), env.read(dst, data), data
    (ret, got, data), = on_ccu(body)
    assert ret == (0, 0)
    np.testing.assert_array_equal(got, np.zeros_like(data) if alone else data)


def _bits_kernel():
    """arg 0 (flag): 1 waits for bit 0 a second time after its one record was consumed; 2 waits
    for two bits after one record."""
    flag, e = _arg(0), ccu.Event()
    ccu.EventRecord(e, 0b11)
    ccu.EventWait(e, 0b01)
    ccu.EventWait(e, 0b10)
    with ccu.If(flag == 1):
        ccu.EventWait(e, 0b01)
    with ccu.If(flag == 2):
        ccu.EventRecord(e, 0b01)
        ccu.EventWait(e, 0b11)


@pytest.mark.parametrize("flag, missing", [(0, None), (1, "0x0001"), (2, "0x0002")])
def test_a_wait_clears_its_bits_and_needs_all_of_them(flag, missing):
    def body(env):
        k = _ok(env.register(_bits_kernel))
        return env.run(k, [flag]), acl.get_recent_err_msg()
    # (the cooperative scheduler resumes the kernels of a world that can never end first: the host's
    # synchronize then reports the mission's failure; on OS threads it may see "can never complete")
    (ret, msg), = on_ccu(body, scheduler="coop")
    if missing is None:
        assert ret == (0, 0)
    else:
        assert ret[0] == 0 and ret[1] != 0
        mask = "0x0001" if flag == 1 else "0x0003"
        assert "on CKE" in msg and f"waits for mask {mask}; bits {missing} were never set" in msg


def test_a_hang_names_the_sync_register_and_its_mask():
    from ccu_programs import ccu_allgather
    report = check(ccu_allgather("wrong_mask"), 2, product=A350, schedules=1, data=False)
    hang = next(f for f in report.findings if f.kind == "hang")
    assert any("waits for notify 4 of rank 0 channel" in line and "CKE 0 (its mask 0x0016)" in line
               for line in hang.lines), hang.text()


def _limits_kernel():
    """args: what (1: a buffer move past its slice, 2: 0 bytes, 3: a wrong token, 4: a loop of 0
    iterations), src, token."""
    what, src_a, tok = _arg(0), _arg(1), _arg(2)
    n, e, zero = ccu.Variable(), ccu.Event(), ccu.Variable()
    src = ccu.LocalAddr(addr=src_a, token=tok)
    with ccu.If(what == 1):
        n.assign(4097)
        ccu.LocalCopy(ccu.CcuBuffer(), src, n, e, 1)
    with ccu.If(what == 2):
        ccu.LocalCopy(ccu.CcuBuffer(), src, zero, e, 1)
    with ccu.If(what == 3):
        bad = ccu.LocalAddr(addr=src_a, token=zero)
        n.assign(64)
        ccu.LocalCopy(ccu.CcuBuffer(), bad, n, e, 1)
    with ccu.If(what == 4):
        loop = ccu.Loop(zero, ccu.Func(lambda: ccu.EventWait(e, 1)))
        parallel, offset = ccu.Variable(), ccu.Variable()
        parallel.assign(1 << 41)
        ccu.LoopGroup(parallel, offset, 1, [loop])


@pytest.mark.parametrize("what, says", [(1, "runs past its block"), (2, "a data move of 0 bytes"),
                                        (3, "is not this device's memory token"), (4, "a Loop of 0 iterations")])
def test_what_a_mission_refuses_fails_its_stream(what, says):
    def body(env):
        k = _ok(env.register(_limits_kernel))
        src = env.device_array(np.zeros(2048, np.float32))
        return env.run(k, [what, src, env.token(src)]), acl.get_recent_err_msg()
    (ret, msg), = on_ccu(body)
    assert ret[0] == 0 and ret[1] != 0 and says in msg


# -- what the record, the timing model and the trace see -------------------------------------------------------
def _allgather_sim(n=2, count=1024):
    from ccu_programs import ccu_allgather
    from pyhcomm.spmd import observe_launches
    sims = []
    with observe_launches(sims.append):
        out = pyhcomm.launch(ccu_allgather(None, count=count, calls=1), n, product=A350)
    for r in range(n):
        np.testing.assert_array_equal(out[r], np.repeat(np.arange(n, dtype=np.float32), count))
    return sims[0]


def test_the_record_has_the_missions_entries_with_their_fields():
    sim = _allgather_sim()
    events = sim.record.events()
    kinds = {str(ev.kind) for ev in events}
    assert kinds >= {"CcuKernelLaunch", "CcuWrite", "CcuLocalCopy", "CcuEventSet", "CcuEventWait",
                     "CcuNotifyRecord", "CcuNotifyWait", "CcuWriteVariableWithNotify", "CcuReadVariable",
                     "CcuMissionEnd"}
    wait = next(ev for ev in events if ev.kind == "CcuNotifyWait" and ev.rank == 0 and ev.mask == 0b110)
    assert wait.cke == 0 and wait.waits and wait.gen == 1 and wait.peer == 1 and wait.protocol == "COMM_PROTOCOL_UB_CTP"
    assert wait.notify.owner.endswith("CKE 0") and wait.notify.index in (1, 2) and wait.engine == "COMM_ENGINE_CCU"
    write = next(ev for ev in events if ev.kind == "CcuWrite" and ev.rank == 0)
    assert write.nbytes == 4096 and write.peer == 1 and write.side == "device" and write.kernel
    assert write.site.endswith("ccu_programs.py:39")         # the kernel line that recorded it
    launch = next(ev for ev in events if ev.kind == "CcuKernelLaunch" and ev.rank == 0)
    assert launch.name == "ccu_allgather" and write.seq in launch.issued


def test_the_replay_charges_the_ccus_parameters():
    from pyhcomm.timing import cost_model
    from pyhcomm.timing.replay import replay
    sim = _allgather_sim(2, 1 << 16)
    m = cost_model(sim=sim)
    tl = replay(sim, m)
    copy = next(i for i, ev in enumerate(tl.events) if ev.kind == "CcuLocalCopy")
    assert tl.end[copy] - tl.start[copy] == pytest.approx((1 << 18) / m.ccu_copy_bandwidth + m.task_dispatch)
    slower = replay(sim, m.with_values(ccu_copy_bandwidth=100e9))
    assert slower.end[copy] - slower.start[copy] == pytest.approx((1 << 18) / 100e9 + m.task_dispatch)
    later = replay(sim, m.with_values(ccu_task=20e-6))
    assert np.nanmax(later.end) > np.nanmax(tl.end) + 20e-6
    assert replay(sim, m, exact=True).end.tolist() == tl.end.tolist()


def test_the_trace_has_a_track_per_mission():
    from pyhcomm.timing.replay import replay
    from pyhcomm.timing.trace import trace_events
    events = trace_events(replay(_allgather_sim()))
    names = [e["args"]["name"] for e in events if e.get("name") == "thread_name"]
    assert sum(n.startswith("CCU mission (launch #") for n in names) == 2
    assert any(n.endswith("(CCU)") for n in names)
