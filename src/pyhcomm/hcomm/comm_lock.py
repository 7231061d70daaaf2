"""The device-side communicator lock: ``HcommAcquireComm`` / ``HcommReleaseComm``.

Inside an AI CPU kernel, A2/A3 custom operators (and HCCL's own ``HcclLaunchAicpuKernel``) wrap
their body in ``HcommAcquireComm(commName)`` ... ``HcommReleaseComm(commName)``: the kernel looks
up the device-side communicator by name and locks it against use by another kernel.

pyhcomm's model:

* ``commId`` is the name from ``HcclGetCommName``. Every rank of a communicator has the same
  name, so the kernel's device picks the rank: the communicator with that name on the device the
  kernel runs on.
* Kernels run inline on the host thread that reached their launch task, but a kernel that blocks
  (``HcommThreadJoin``, ``HcommChannelDrainOnThread``) lets other kernels run before it ends. A
  communicator held by an unfinished kernel is therefore refused, never waited for (waiting could
  only deadlock).
* A kernel that ends (returns or fails) still holding locks releases them and logs a warning
  (:func:`release_kernel_locks`, registered with the kernel at its first lock:
  :meth:`pyhcomm.sim.kernel.KernelContext.at_end`). ``HcclCommDestroy`` drops the lock too.

Error codes (documented: ``commId`` NULL or unknown is ``HCCL_E_PTR``; pyhcomm's choices for the
rest):

* called from the host, outside a kernel: ``HCCL_E_NOT_SUPPORT`` (as other device-only calls);
  a product without HCOMM support: ``HCCL_E_NOT_SUPPORT``;
* acquiring a communicator another unfinished kernel holds: ``HCCL_E_UNAVAIL`` (resource busy);
* acquiring one the calling kernel already holds (no nesting), or releasing one the calling
  kernel does not hold: ``HCCL_E_PARA`` (calls not paired).
"""
from __future__ import annotations

from ..sim import current_sim as _sim
from ..sim.kernel import current_kernel
from ..enums import COMM_NAME_MAX_LENGTH
from ..errors import HcclResult, hccl_error, log, not_support, para, ptr
from .state import hcomm_state
from .validate import product_supports_hcomm

__all__ = ["acquire_comm", "release_comm", "holder", "release_kernel_locks"]

def _holders() -> dict:
    """Communicator -> the KernelContext holding it (the Sim's table)."""
    return hcomm_state().comm_holders


def _kernel(api: str):
    product_supports_hcomm(api)
    kctx = current_kernel()
    if kctx is None:
        raise not_support(api, "is supported only on the device side (inside an AI CPU kernel), not from the host")
    return kctx


def _comm_name(comm_id, api: str) -> str:
    if comm_id is None or (isinstance(comm_id, int) and not isinstance(comm_id, bool) and comm_id == 0):
        raise ptr(api, "commId is NULL")
    if isinstance(comm_id, (bytes, bytearray)):
        comm_id = bytes(comm_id).split(b"\0", 1)[0].decode("utf-8", "replace")
    if not isinstance(comm_id, str):
        raise TypeError(f"{api}: commId must be a str (from HcclGetCommName), not {type(comm_id).__name__}")
    return comm_id


def _find(name: str, device: int, api: str):
    """The live communicator called ``name`` on ``device``; ``HCCL_E_PTR`` when there is none."""
    others = []
    for c in _sim().handles.comms.values():
        if c.destroyed or c.name[:COMM_NAME_MAX_LENGTH - 1] != name:
            continue
        if c.device == device:
            return c
        others.append(c.device)
    where = f" (it has ranks on devices {sorted(others)})" if others else ""
    raise ptr(api, f"no communicator named {name!r} on device {device}, where the kernel runs{where}")


def _lookup(comm_id, api: str):
    kctx = _kernel(api)
    return kctx, _find(_comm_name(comm_id, api), kctx.device, api)


def acquire_comm(comm_id) -> None:
    """``HcommAcquireComm``: lock the communicator ``comm_id`` for the calling kernel.

    Raises:
        HcclNotSupportedError: called outside an AI CPU kernel (``HCCL_E_NOT_SUPPORT``).
        HcclUsageError: NULL or unknown ``comm_id`` (``HCCL_E_PTR``); already held by this kernel
            (``HCCL_E_PARA``).
        HcclRuntimeError: held by another kernel that has not finished (``HCCL_E_UNAVAIL``).
    """
    api = "HcommAcquireComm"
    kctx, comm = _lookup(comm_id, api)
    with _sim().lock:
        owner = _holders().get(comm)
        if owner is kctx:
            raise para(api, f"kernel {kctx.name} already holds {comm.name} (rank {comm.rank}); "
                            "HcommAcquireComm and HcommReleaseComm must be paired")
        if owner is not None:
            raise hccl_error(HcclResult.HCCL_E_UNAVAIL, api,
                             f"{comm.name} (rank {comm.rank}) is held by kernel {owner.name}, which has not "
                             f"finished (on stream 0x{owner.stream.handle:x})")
        _holders()[comm] = kctx
        kctx.locked.append(comm)
        kctx.at_end(release_kernel_locks)


def release_comm(comm_id) -> None:
    """``HcommReleaseComm``: unlock the communicator ``comm_id`` the calling kernel holds.

    Raises:
        HcclNotSupportedError: called outside an AI CPU kernel (``HCCL_E_NOT_SUPPORT``).
        HcclUsageError: NULL or unknown ``comm_id`` (``HCCL_E_PTR``); not held by this kernel
            (``HCCL_E_PARA``).
    """
    api = "HcommReleaseComm"
    kctx, comm = _lookup(comm_id, api)
    with _sim().lock:
        owner = _holders().get(comm)
        if owner is not kctx:
            who = "no kernel" if owner is None else f"kernel {owner.name}"
            raise para(api, f"kernel {kctx.name} does not hold {comm.name} (rank {comm.rank}; held by {who}); "
                            "call HcommAcquireComm first")
        del _holders()[comm]
        if comm in kctx.locked:
            kctx.locked.remove(comm)


def holder(comm):
    """The KernelContext holding ``comm`` (a Communicator), or None."""
    return _holders().get(comm)


def release_kernel_locks(kctx) -> None:
    """Kernel end: release what the kernel still holds, with a warning (see :meth:`KernelContext.at_end`)."""
    if not kctx.locked:
        return
    with _sim().lock:
        leaked = [c for c in kctx.locked if _holders().get(c) is kctx]
        for c in leaked:
            del _holders()[c]
        kctx.locked.clear()
    for c in leaked:
        log.warning("AI CPU kernel %s ended still holding %s (rank %d): released it; call HcommReleaseComm "
                    "before the kernel returns", kctx.name, c.name, c.rank)


def forget(comm) -> None:
    """``comm`` is being destroyed: no kernel holds it any more."""
    with _sim().lock:
        _holders().pop(comm, None)

