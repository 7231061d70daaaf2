"""Every integer, enum and float argument in the forms a caller may pass it (issue 31).

A *recipe* is a call the fuzzer can make valid on a rank now, with the kind of each argument:
``INT`` (an integer or enum), ``FLOAT`` (a number of seconds), ``PTR`` (a pointer or handle:
``None`` is NULL), ``DEFAULT`` (a handle whose NULL means a default: ``None`` is valid), ``LIST``
(a list of integers) and ``OTHER`` (left as it is). :func:`forms` draws one argument and one form
of its value:

* a numpy scalar holding the same number (any integer type that holds it; for a float argument a
  numpy floating scalar too): the same answer as the plain value;
* ``None``: a wrong type for an integer, enum or float (``TypeError`` or a nonzero code, never 0);
  NULL for a pointer or handle (a nonzero code), the default for a ``DEFAULT`` handle;
* a ``bool`` or numpy ``bool_``, a numpy float for an integer: a wrong type;
* in a list, one element ``None`` (a wrong type) or every element a numpy integer (the same answer).

A recipe's ``before()`` runs before the call, ``after(args, ret, ok)`` after it (``args``: those
passed, ``ok``: the call succeeded): they keep the fuzzer's model right (a fill, a synchronize) and
release what the call created.
"""
from __future__ import annotations

import types

import numpy as np
from hypothesis import strategies as st

import pyhcomm
from pyhcomm import acl

from fuzz_calls import ANY, FAIL, OK, TYPE
from fuzz_model import apply_copy, apply_fill

INT, FLOAT, PTR, DEFAULT, LIST, OTHER = "i", "f", "p", "d", "l", "-"

NUMPY_INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.intc,
              np.longlong, np.ulonglong)
NUMPY_FLOATS = (np.float16, np.float32, np.float64)

E = pyhcomm.CommEngine
FP32, INT32, SUM = 4, 2, 0
D2D = pyhcomm.ACL_MEMCPY_DEVICE_TO_DEVICE


class Recipe:
    """A valid call: ``fn(*args)`` of ``tier`` answers ``expect`` (OK, or FAIL where the product
    refuses the call whatever the form: the forms must not change that)."""

    def __init__(self, name, fn, args, kinds, tier="c", expect=OK, before=None, after=None):
        assert len(args) == len(kinds), name
        self.name, self.fn, self.args, self.kinds, self.tier, self.expect = name, fn, args, kinds, tier, expect
        self.before, self.after = before, after


def numpy_forms(value: int) -> list:
    """The numpy integer scalars that hold ``value``."""
    out = []
    for t in NUMPY_INTS:
        info = np.iinfo(t)
        if info.min <= value <= info.max:
            out.append(t(value))
    return out


def forms(data, recipe: Recipe):
    """Draw one argument of ``recipe`` and a form of it; returns ``(args, expect, what)``."""
    spots = [i for i, k in enumerate(recipe.kinds) if k != OTHER]
    i = data.draw(st.sampled_from(spots), label="argument")
    kind, value = recipe.kinds[i], recipe.args[i]
    same, wrong = recipe.expect, TYPE
    if kind == LIST:
        choices = [("numpy elements", [data.draw(st.sampled_from(numpy_forms(v)), label="element") for v in value],
                    same)]
        if value:
            j = data.draw(st.integers(0, len(value) - 1), label="element index")
            choices.append(("an element None", value[:j] + [None] + value[j + 1:], wrong))
        what, new, expect = data.draw(st.sampled_from(choices), label="list form")
    else:
        choices = [("numpy", v, same) for v in numpy_forms(value)] if type(value) is int else []
        if kind == FLOAT:
            choices += [("numpy float", t(value), same) for t in NUMPY_FLOATS if float(t(value)) == value]
            choices += [("None", None, wrong), ("bool", True, wrong), ("numpy bool", np.bool_(True), wrong)]
        elif kind == INT:
            choices += [("None", None, wrong), ("numpy float", np.float64(value), wrong),
                        ("bool", bool(value), wrong), ("numpy bool", np.bool_(value), wrong)]
        elif kind == PTR:
            choices += [("None (NULL)", None, FAIL)]
        elif kind == DEFAULT:
            choices += [("None (the default)", None, ANY)]
        groups = {}                 # drawn by group first: None as often as all numpy types together
        for choice in choices:
            key = "None" if choice[1] is None else "same" if choice[2] == same else "wrong type"
            groups.setdefault(key, []).append(choice)
        group = data.draw(st.sampled_from(sorted(groups)), label="form kind")
        what, new, expect = data.draw(st.sampled_from(groups[group]), label="form")
    args = list(recipe.args)
    args[i] = new
    return args, expect, f"{recipe.name} argument {i} ({kind}) as {what}"


def recipes(m, rk) -> list:
    """The recipes valid on rank ``rk`` of machine ``m`` now (its current device is 0)."""
    w = m.w
    n = len(w.ranks)
    s = rk.streams[0]
    t = rk.thread_of[s]
    comm = rk.comm
    buf0, buf1 = rk.bufs
    b0, b1 = buf0.addr, buf1.addr
    peer = (rk.r + 1) % n
    zeros = [0] * n
    c = pyhcomm
    local = OK if w.host_local_ops else FAIL

    def claim():                             # its task holds both allocations until it ran
        m.touch(s, buf0, buf1)

    def queued(args, ret, ok):               # a zero-length operation on the thread: nothing to model
        if ok:
            m.queue(s, _batched(lambda: None))

    def synchronized(args, ret, ok):         # NULL: the current device's (0) default stream
        if ok and args[0] is not None:
            m.applied(s)

    tag = m.fresh_tag("forms")

    out = [
        Recipe("HcclAllReduce", c.HcclAllReduce, [b0, b1, 0, FP32, SUM, comm, s], "ppiiipp"),
        Recipe("HcclReduceScatter", c.HcclReduceScatter, [b0, b1, 0, FP32, SUM, comm, s], "ppiiipp"),
        Recipe("HcclReduce", c.HcclReduce, [b0, b1, 0, FP32, SUM, rk.r, comm, s], "ppiiiipp"),
        Recipe("HcclAllGather", c.HcclAllGather, [b0, b1, 0, FP32, comm, s], "ppiipp"),
        Recipe("HcclBroadcast", c.HcclBroadcast, [b0, 0, FP32, 0, comm, s], "piiipp"),
        Recipe("HcclScatter", c.HcclScatter, [b0, b1, 0, FP32, 0, comm, s], ("d" if rk.r else "p") + "piiipp"),
        Recipe("HcclAlltoAll", c.HcclAlltoAll, [b0, 0, FP32, b1, 0, FP32, comm, s], "piipiipp"),
        Recipe("HcclSend", c.HcclSend, [b0, 0, FP32, peer, comm, s], "piiipp"),
        Recipe("HcclRecv", c.HcclRecv, [b1, 0, FP32, peer, comm, s], "piiipp"),
        Recipe("HcclAllGatherV", c.HcclAllGatherV, [b0, 0, b1, zeros, zeros, FP32, comm, s], "didllipp"),
        Recipe("HcclReduceScatterV", c.HcclReduceScatterV, [b0, zeros, zeros, b1, 0, FP32, SUM, comm, s],
               "dlldiiipp"),
        Recipe("HcclAlltoAllV", c.HcclAlltoAllV, [b0, zeros, zeros, FP32, b1, zeros, zeros, FP32, comm, s],
               "dllidlli" "pp"),   # (the V calls' empty buffers may be NULL)
        Recipe("HcommLocalCopyOnThread", c.HcommLocalCopyOnThread, [t, b0, b1, 0], "pppi", expect=local,
               before=claim, after=queued),
        Recipe("HcommLocalReduceOnThread", c.HcommLocalReduceOnThread, [t, b0, b1, 0, INT32, SUM], "pppiii",
               expect=local, before=claim, after=queued),
        Recipe("HcclThreadAcquire", c.HcclThreadAcquire, [comm, E.COMM_ENGINE_AICPU_TS, 1, 1], "piii"),
        Recipe("HcclThreadResGetInfo", c.HcclThreadResGetInfo, [comm, rk.aicpu, c.THREAD_RES_TYPE_STREAM, 8],
               "ppii"),
        Recipe("HcommThreadResGetInfo", c.HcommThreadResGetInfo, [rk.aicpu, c.THREAD_RES_TYPE_STREAM, 8], "pii"),
        Recipe("HcclRankGraphGetRankSizeByLayer", c.HcclRankGraphGetRankSizeByLayer, [comm, 0], "pi"),
        Recipe("HcclRankGraphGetRanksByLayer", c.HcclRankGraphGetRanksByLayer, [comm, 0], "pi"),
        Recipe("HcclConfigGetInfo", c.HcclConfigGetInfo, [comm, c.HCCL_CONFIG_TYPE_DETERMINISTIC, 4], "pii"),
        Recipe("HcommEndpointGetDescNum", c.HcommEndpointGetDescNum, [rk.r], "i"),
        Recipe("HcommSetNotifyWaitTimeOut", c.HcommSetNotifyWaitTimeOut, [1800], "f"),
        Recipe("HcommThreadResAcquireTimeOut", c.HcommThreadResAcquireTimeOut, [5], "f", expect=FAIL),  # host
        Recipe("HcclEngineCtxCreate", c.HcclEngineCtxCreate, [comm, tag, E.COMM_ENGINE_AICPU_TS, 64], "p-ii",
               after=lambda args, ret, ok: ok and c.HcclEngineCtxDestroy(comm, tag, E.COMM_ENGINE_AICPU_TS)),
        Recipe("acl.rt.create_notify", acl.rt.create_notify, [0], "i", tier="acl",
               after=lambda args, ret, ok: ok and acl.rt.destroy_notify(ret[0])),
        Recipe("acl.rt.malloc", acl.rt.malloc, [64, 0], "ii", tier="acl",
               after=lambda args, ret, ok: ok and acl.rt.free(ret[0])),
        Recipe("acl.rt.malloc_host", acl.rt.malloc_host, [64], "i", tier="acl",
               after=lambda args, ret, ok: ok and acl.rt.free_host(ret[0])),
        Recipe("acl.rt.set_device", acl.rt.set_device, [rk.r], "i", tier="acl",
               after=lambda args, ret, ok: acl.rt.set_device(0)),
        Recipe("acl.rt.synchronize_stream_with_timeout", acl.rt.synchronize_stream_with_timeout, [s, 30_000], "di",
               tier="acl", before=lambda: m.end_batch_of(s), after=synchronized),
        Recipe("acl.rt.memset", acl.rt.memset, [b0, 8, 0x5A, 8], "piii", tier="acl",
               before=lambda: m.settle(buf0), after=lambda args, ret, ok: ok and apply_fill(buf0, 0, 0x5A, 8)),
        Recipe("acl.rt.memcpy", acl.rt.memcpy, [b1, 8, b0, 8, D2D], "piiii", tier="acl",
               before=lambda: m.settle(buf0, buf1),
               after=lambda args, ret, ok: ok and apply_copy(buf1, 0, buf0, 0, 8)),
        Recipe("acl.rt.memset_async", acl.rt.memset_async, [b1 + 8, 8, 0x3C, 8, s], "piii-", tier="acl",
               before=lambda: m.touch(s, buf1),
               after=lambda args, ret, ok: ok and m.queue(s, lambda: apply_fill(buf1, 8, 0x3C, 8))),
        Recipe("HcclRankGraphGetLinks", c.HcclRankGraphGetLinks, [comm, 0, rk.r, peer], "piii"),
        Recipe("HcclTeamMemberToRank", c.HcclTeamMemberToRank, [comm, lsa_team(rk), 0], "ppi"),
        Recipe("HcommEndpointGetDescs", c.HcommEndpointGetDescs, [rk.r, endpoint_count(rk)], "ii"),
        Recipe("HcclRankGraphGetEndpointDesc", c.HcclRankGraphGetEndpointDesc,
               [comm, 0, 0, c.HcclRankGraphGetEndpointNum(comm, 0, 0)[1]], "piii"),
        Recipe("HcclThreadAcquireWithStream", c.HcclThreadAcquireWithStream,
               [comm, E.COMM_ENGINE_CPU_TS, rk.streams[1], 1], "pipi"),
        Recipe("HcommThreadAlloc", c.HcommThreadAlloc, [E.COMM_ENGINE_AICPU_TS, [1, 2]], "il",
               before=lambda: acl.rt.set_device(rk.r),
               after=lambda args, ret, ok: (ok and c.HcommThreadFree(ret[1]), acl.rt.set_device(0))),
        Recipe("HcclCommWorkingDevNicSet", c.HcclCommWorkingDevNicSet, [comm, [rk.r], [False]], "pl-"),
        Recipe("HcclKfcOpArgsSetCount", c.HcclKfcOpArgsSetCount, [op_args(rk), 16], "pi"),
        Recipe("HcclKfcOpArgsSetSrcDataType", c.HcclKfcOpArgsSetSrcDataType, [op_args(rk), FP32], "pi"),
        Recipe("HcclKfcOpArgsSetReduceType", c.HcclKfcOpArgsSetReduceType, [op_args(rk), SUM], "pi"),
        Recipe("HcclKfcOpArgsSetCommEngine", c.HcclKfcOpArgsSetCommEngine, [op_args(rk), E.COMM_ENGINE_AICPU],
               "pi"),
        Recipe("acl.rt.synchronize_device_with_timeout", acl.rt.synchronize_device_with_timeout, [30_000], "i",
               tier="acl", before=lambda: (m.quiesce_all(), acl.rt.set_device(rk.r)),
               after=lambda args, ret, ok: acl.rt.set_device(0)),
        Recipe("acl.rt.launch_kernel_with_host_args", acl.rt.launch_kernel_with_host_args,
               [noop_kernel(w), 1, s, [], bytes(8), 8, [], 0], "pi---i-i", tier="acl",
               after=lambda args, ret, ok: ok and m.queue(s, None)),
    ]
    return out


#: A kernel module whose kernel does nothing (for launches with host arguments).
NOOP = types.ModuleType("pyhcomm_fuzz_noop")
NOOP.noop = lambda data: 0


def noop_kernel(w):
    """The function handle of :data:`NOOP`'s kernel (loaded once per example)."""
    if getattr(w, "noop", None) is None:
        binary, _ = acl.rt.binary_load_from_file(NOOP)
        w.noop, _ = acl.rt.binary_get_function(binary, "noop")
    return w.noop


def lsa_team(rk):
    if getattr(rk, "lsa", None) is None:
        rk.lsa = pyhcomm.HcclTeamGetLsaTeam(rk.comm)[1]
    return rk.lsa


def endpoint_count(rk):
    return pyhcomm.HcommEndpointGetDescNum(rk.r)[1]


def op_args(rk):
    """A KFC operator argument handle of the rank's (made once per example)."""
    if getattr(rk, "op_args", None) is None:
        rk.op_args = pyhcomm.HcclKfcAllocOpArgs()[1]
    return rk.op_args


def _batched(effect):
    effect.batched = True
    return effect
