"""What every ported HCCL example shares: its ``main()`` and the host-buffer steps.

HCCL's examples (hicann/hccl ``examples/``) are C++ programs with one ``main()``: ``aclInit``,
count the devices, make a root info on device 0, start one host thread per device running the
example's ``Sample``, join them, ``aclFinalize``. :func:`main` does those calls in that order
with pyACL and pyhccl's signatures (``import acl`` / ``from pyhccl import *`` on a real machine);
each example module supplies its ``sample``. Differences from the C programs, all of form only:
``HcclGetRootInfo()`` returns the root info (no ``aclrtMallocHost`` for it), the ``CHECK`` macros
raise :class:`ExampleError`, and a sample returns what the C program prints (its output buffer)
instead of printing it after a sleep.

:func:`launch_main` is the same ``main()`` written with ``pyhcomm.launch`` in place of the host
threads: the root info is still made in ``main()``, outside the launch, and each rank's
``HcclCommInitRootInfo`` joins it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from acl_constants import ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, NPY_FLOAT32

import pyhcomm  # the simulator itself: launch_main's pyhcomm.launch stands for the host threads
from pyhcomm import acl  # real machine: import acl
from pyhcomm import HcclCommDestroy, HcclGetRootInfo  # real machine: from pyhccl import ...

FLOAT = 4                              # sizeof(float)
JOIN_TIMEOUT = 60.0


class ExampleError(RuntimeError):
    """A call of an example returned an error code (the C examples' ACLCHECK / HCCLCHECK)."""


def check(ret, what: str):
    """Raise unless ``ret`` is 0; return ``ret``."""
    if ret != 0:
        raise ExampleError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")
    return ret


def value(pair, what: str):
    """``acl``'s ``(value, ret)``: the value, once ``ret`` is 0."""
    out, ret = pair
    check(ret, what)
    return out


def output(pair, what: str):
    """pyhccl's ``(ret, value)``: the value, once ``ret`` is 0."""
    ret, *out = pair
    check(ret, what)
    return out[0] if len(out) == 1 else out


@dataclass
class ThreadContext:
    root_info: object
    device: int
    dev_count: int
    root_rank: int = 0


def fill_device(dev_ptr: int, count: int, values) -> None:
    """Host buffer of ``count`` floats set to ``values``, copied to ``dev_ptr``, freed
    (``aclrtMallocHost``, fill, ``aclrtMemcpy`` H2D, ``aclrtFreeHost``)."""
    size = count * FLOAT
    host = value(acl.rt.malloc_host(size), "aclrtMallocHost")
    acl.util.ptr_to_numpy(host, (count,), NPY_FLOAT32)[:] = values
    check(acl.rt.memcpy(dev_ptr, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    check(acl.rt.free_host(host), "aclrtFreeHost")


def read_device(dev_ptr: int, count: int):
    """``count`` floats of ``dev_ptr`` through a host buffer (``aclrtMallocHost``, ``aclrtMemcpy``
    D2H, read, ``aclrtFreeHost``); returns them as a numpy array."""
    size = count * FLOAT
    host = value(acl.rt.malloc_host(size), "aclrtMallocHost")
    check(acl.rt.memcpy(host, size, dev_ptr, size, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
    out = acl.util.ptr_to_numpy(host, (count,), NPY_FLOAT32).copy()
    check(acl.rt.free_host(host), "aclrtFreeHost")
    return out


def release(ctx, comm, stream, bufs, reset: bool = True) -> None:
    """The samples' epilogue: ``HcclCommDestroy``, ``aclrtFree`` of each non-NULL buffer,
    ``aclrtDestroyStream`` and (where the sample does) ``aclrtResetDevice``."""
    check(HcclCommDestroy(comm), "HcclCommDestroy")
    for buf in bufs:
        if buf:
            check(acl.rt.free(buf), "aclrtFree")
    check(acl.rt.destroy_stream(stream), "aclrtDestroyStream")
    if reset:
        check(acl.rt.reset_device(ctx.device), "aclrtResetDevice")


def main(sample, root_rank: int = 0) -> list:
    """The examples' ``main()``; returns what each device's ``sample`` returned, by device."""
    check(acl.init(), "aclInit")
    dev_count = value(acl.rt.get_device_count(), "aclrtGetDeviceCount")
    check(acl.rt.set_device(0), "aclrtSetDevice")
    root_info = output(HcclGetRootInfo(), "HcclGetRootInfo")
    results, errors = [None] * dev_count, []

    def run(ctx):
        try:
            results[ctx.device] = sample(ctx)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, as the C program's exit code
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(ThreadContext(root_info, i, dev_count, root_rank),),
                                name=f"example-device-{i}") for i in range(dev_count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    if any(t.is_alive() for t in threads):
        raise ExampleError(f"host threads still running after {JOIN_TIMEOUT} s")
    if errors:
        raise errors[0]
    check(acl.finalize(), "aclFinalize")
    return results


def launch_main(sample, root_rank: int = 0) -> list:
    """:func:`main` with ``pyhcomm.launch`` starting the ranks instead of host threads: the root
    info comes from ``HcclGetRootInfo`` here, outside the launch (in the process's default Sim,
    the launch runs in a Sim of its own); each rank runs ``sample`` for its device, which joins
    that root with ``HcclCommInitRootInfo`` (the communicator ``launch`` hands the rank is not
    used). A rank's error is raised as itself, as :func:`main` does."""
    check(acl.init(), "aclInit")
    dev_count = value(acl.rt.get_device_count(), "aclrtGetDeviceCount")
    check(acl.rt.set_device(0), "aclrtSetDevice")
    root_info = output(HcclGetRootInfo(), "HcclGetRootInfo")

    def rank(comm):
        return sample(ThreadContext(root_info, comm.rank, dev_count, root_rank))

    try:
        results = pyhcomm.launch(rank, dev_count, timeout=JOIN_TIMEOUT)
    except pyhcomm.RankError as exc:
        raise exc.__cause__ from None
    check(acl.finalize(), "aclFinalize")
    return results
