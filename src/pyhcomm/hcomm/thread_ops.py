"""Thread-level calls that are not tasks: ``HcommThreadJoin`` and ``HcommFenceOnThread``."""
from __future__ import annotations

from ..sim import current_sim as _sim
from ..sim import kinds
from ..sim.record import outcome
from ..sim.runtime import program_ctx
from ..sched import ABORTED, DONE_OK, TIMED_OUT
from ..errors import HcclResult, hccl_error, not_support, para
from .resources.engines import FENCE
from .resources.thread import get_thread
from .notify import _check_timeout
from .validate import kernel_device



def thread_join(thread, timeout) -> None:
    """``HcommThreadJoin``: block the AI CPU until ``thread``'s queue is empty (Atlas 350 only).

    Runs other streams meanwhile. ``timeout`` seconds (0 = forever) -> ``HCCL_E_TIMEOUT``; a
    thread whose stream failed gives the failure's code (the stream keeps its error for the
    host's synchronize).
    """
    api = "HcommThreadJoin"
    t = get_thread(thread, api)
    product = _sim().runtime.product
    if not product.is_950:
        raise not_support(api, f"supported on Atlas 350 only, not on {product.name}")
    if not program_ctx().kernels:
        raise not_support(api, "supported on the device side only (inside an AI CPU kernel)")
    kernel = program_ctx().kernels[-1]
    kernel_device(t, kernel, api)
    timeout = _check_timeout(timeout, api)
    st = t.stream
    if st is kernel.stream:
        raise para(api, f"thread 0x{t.handle:x} runs on the stream of the calling kernel: it can never be idle")
    status = _sim().scheduler.run_until(lambda: st.idle or st.error is not None, timeout or None,
                                        f"{api}(thread 0x{t.handle:x}) in kernel {kernel.name}", (st,))
    _sim().record.host_effect(kinds.THREAD_JOIN, api, ok=status == DONE_OK and st.error is None, rank=t.rank,
                              device=t.device, engine=t.engine, thread=t.handle, stream=st.handle,
                              streams=(st.handle,), timeout=float(timeout) if timeout else None,
                              result=outcome(status, st.error))
    if status == TIMED_OUT:
        raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api,
                         f"thread 0x{t.handle:x} was not idle after {timeout} s ({len(st.queue)} task(s) queued"
                         + (", a kernel running on its stream)" if st.busy else ")"))
    if st.error is not None:
        code = st.error.code if isinstance(st.error.code, HcclResult) else HcclResult.HCCL_E_INTERNAL
        raise hccl_error(code, api, f"thread 0x{t.handle:x} failed: {st.error}")
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {_sim().scheduler.abort_reason}")
    if status != DONE_OK:
        raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"thread 0x{t.handle:x} can never be idle: nothing else "
                                                         "can progress")


def fence(thread) -> None:
    """``HcommFenceOnThread``: engines that run fences (the host CPU engine) only; the NBI operations posted before it are
    complete when it returns (here they complete when posted, so it returns at once)."""
    api = "HcommFenceOnThread"
    t = get_thread(thread, api)
    if program_ctx().kernels or not FENCE <= t.engine.runs:
        raise not_support(api, "supported for COMM_ENGINE_CPU threads on the host only "
                               f"(thread 0x{t.handle:x} is {t.engine.name}"
                               + (", called inside a kernel)" if program_ctx().kernels else ")"))
    # the record's Fence: the NBI operations this host program posted are complete from here on
    _sim().record.host_effect(kinds.FENCE, api, rank=t.rank, device=t.device, engine=t.engine, thread=t.handle,
                              stream=t.stream.handle, result="done")
