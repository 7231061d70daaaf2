"""``python -m pyhcomm demo``: both seed examples, with every call, its code and the bytes."""
from __future__ import annotations

import logging

import numpy as np

from .sim import current_sim as _sim
from . import acl
from .capi import (HcclCommDestroy, HcclCommInitAll, HcclGetHcclBuffer, HcclThreadAcquire,
                   HcclThreadAcquireWithStream, HcommLocalCopyOnThread)
from .demo_kernels import OP_PARAM
from .enums import (HCCL, CommEngine, aclrtLaunchKernelAttrId, aclrtMallocAttrType, aclrtMemcpyKind,
                    aclrtMemMallocPolicy)
from .errors import AclError, HcclResult, log

H2D, D2H = aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE, aclrtMemcpyKind.ACL_MEMCPY_DEVICE_TO_HOST


def _code(ret, enum) -> str:
    try:
        return f"{int(ret)} ({enum(ret).name})"
    except ValueError:
        return str(ret)


class _InlineLog(logging.Handler):
    """Show pyhcomm's log lines under the call that produced them, during the demo."""

    pending: list = []

    def emit(self, record):
        self.pending.append(record.getMessage())


def _fmt(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return f"0x{v:x}" if isinstance(v, int) and v > 0xFFFF else repr(v)


def _show(call: str, result):
    is_acl = call.startswith("acl.")
    ret = result[-1] if isinstance(result, tuple) and is_acl else (
        result[0] if isinstance(result, tuple) else result)
    outs = ""
    if isinstance(result, tuple):
        vals = result[:-1] if is_acl else result[1:]
        outs = " -> " + ", ".join(_fmt(v) for v in vals)
    print(f"  {call:<62} ret {_code(ret, AclError if is_acl else HcclResult)}{outs}")
    for line in _InlineLog.pending:
        print(f"      log: {line}")
    _InlineLog.pending.clear()
    return result


def _bytes(label: str, ptr: int, n: int = 256) -> np.ndarray:
    out = np.zeros(n, dtype=np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, D2H)
    print(f"    {label:<28} {' '.join(f'{b:02x}' for b in out[:16])} ... ({n} bytes)")
    return out


def host_example() -> bool:
    """Seed example 1: Atlas 800T A2, host side, CPU_TS thread wrapping a user stream."""
    _sim().runtime.reset()
    _sim().runtime.set_product("Atlas 800T A2")
    print(f"== Seed example 1: {_sim().runtime.product.name} ({acl.get_soc_name()}), host side ==")
    _show("acl.init()", acl.init())
    _show("acl.rt.set_device(0)", acl.rt.set_device(0))
    _, comms = _show("HcclCommInitAll([0])", HcclCommInitAll([0]))
    comm = comms[0]
    stream, _ = _show("acl.rt.create_stream()", acl.rt.create_stream())
    _, thread = _show("HcclThreadAcquireWithStream(comm, CPU_TS, stream, 2)",
                      HcclThreadAcquireWithStream(comm, CommEngine.COMM_ENGINE_CPU_TS, stream, 2))
    size = 256
    policy = aclrtMemMallocPolicy.ACL_MEM_TYPE_HIGH_BAND_WIDTH | aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST
    cfg = {"numAttrs": 1, "attrs": [{"attr": aclrtMallocAttrType.ACL_RT_MEM_ATTR_MODULE_ID,
                                     "value": {"moduleId": HCCL}}]}
    inp, _ = _show("acl.rt.malloc_with_cfg(256, HBW|HUGE_FIRST, MODULE_ID=HCCL)",
                   acl.rt.malloc_with_cfg(size, int(policy), cfg))
    out, _ = _show("acl.rt.malloc_with_cfg(256, HBW|HUGE_FIRST, MODULE_ID=HCCL)",
                   acl.rt.malloc_with_cfg(size, int(policy), cfg))
    data = np.arange(size, dtype=np.uint8)
    _show("acl.rt.memcpy(input, H2D)", acl.rt.memcpy(inp, size, acl.util.numpy_to_ptr(data), size, H2D))
    _bytes("input before:", inp)
    _bytes("output before:", out)
    _show("HcommLocalCopyOnThread(thread, output, input, 256)", HcommLocalCopyOnThread(thread, out, inp, size))
    _bytes("output after enqueue:", out)
    _show("acl.rt.synchronize_stream(stream)", acl.rt.synchronize_stream(stream))
    got = _bytes("output after synchronize:", out, size)
    ok = bool((got == data).all())
    print(f"    output == input: {ok}")
    _show("HcommLocalCopyOnThread(thread, NULL, input, 256)", HcommLocalCopyOnThread(thread, 0, inp, size))
    _show("HcommLocalCopyOnThread(thread, output+128, input, 256)",
          HcommLocalCopyOnThread(thread, out + 128, inp, size))
    HcclCommDestroy(comm)
    acl.finalize()
    return ok


def device_example() -> bool:
    """Seed example 2: Atlas 350, the copy runs inside an AI CPU kernel on an AICPU_TS thread."""
    _sim().runtime.reset()
    _sim().runtime.set_product("Atlas 350")
    print(f"\n== Seed example 2: {_sim().runtime.product.name} ({acl.get_soc_name()}), device side ==")
    acl.init()
    acl.rt.set_device(0)
    _, comms = _show("HcclCommInitAll([0])", HcclCommInitAll([0]))
    comm = comms[0]
    _, ccl, ccl_size = _show("HcclGetHcclBuffer(comm)", HcclGetHcclBuffer(comm))
    _, threads = _show("HcclThreadAcquire(comm, AICPU_TS, 1, 1)",
                       HcclThreadAcquire(comm, CommEngine.COMM_ENGINE_AICPU_TS, 1, 1))
    thread = threads[0]
    size = 256
    user_in, _ = _show("acl.rt.malloc(256, HUGE_FIRST)", acl.rt.malloc(size, 0))
    data = (np.arange(size) * 7 % 256).astype(np.uint8)
    acl.rt.memcpy(user_in, size, acl.util.numpy_to_ptr(data), size, H2D)
    _show("HcommLocalCopyOnThread(thread, cclBuf, userIn, 256) [host]",
          HcommLocalCopyOnThread(thread, ccl, user_in, size))
    stream, _ = _show("acl.rt.create_stream()", acl.rt.create_stream())
    binary, _ = _show("acl.rt.binary_load_from_file(demo_kernels)",
                      acl.rt.binary_load_from_file("pyhcomm.demo_kernels", []))
    func, _ = _show("acl.rt.binary_get_function(bin, HcclLaunchCopyKernel)",
                    acl.rt.binary_get_function(binary, "HcclLaunchCopyKernel"))
    args, _ = acl.rt.kernel_args_init(func)
    param = np.frombuffer(OP_PARAM.pack(thread, ccl, user_in, size), dtype=np.uint8).copy()
    acl.rt.kernel_args_append(args, acl.util.numpy_to_ptr(param), param.nbytes)
    acl.rt.kernel_args_finalize(args)
    _bytes("HCCL buffer before:", ccl)
    cfg = [{"id": int(aclrtLaunchKernelAttrId.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT), "value": 1836}]
    _show("acl.rt.launch_kernel_with_config(func, 1, stream, cfg, args)",
          acl.rt.launch_kernel_with_config(func, 1, stream, cfg, args, 0))
    print("    [device] kernel HcclLaunchCopyKernel: HcommLocalCopyOnThread(thread, cclBuf, userIn, 256)")
    _show("acl.rt.synchronize_device()", acl.rt.synchronize_device())
    got = _bytes("HCCL buffer after:", ccl, size)
    ok = bool((got == data).all())
    print(f"    HCCL buffer == user input: {ok}")
    HcclCommDestroy(comm)
    acl.finalize()
    return ok


def main() -> int:
    handler = _InlineLog()
    saved = log.handlers[:], log.propagate
    log.handlers[:] = [handler]
    log.propagate = False
    try:
        ok = host_example() and device_example()
    finally:
        log.handlers[:], log.propagate = saved
    _sim().runtime.reset()
    print("\ndemo", "passed" if ok else "FAILED")
    return 0 if ok else 1
