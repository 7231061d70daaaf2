"""Where every data-plane task goes: to its stream, or into the open batch.

Batch mode (``HcommBatchModeStart/End``): between Start and End, tasks issued by the same OS
thread (on the device side: by the same kernel) are kept, not launched; End launches them in
issue order. Rules as documented: calls must pair, on the same OS thread, with the same tag;
``tag`` None or "" is a temporary batch. A batch cannot outlive what its tasks run on: when a
kept task's stream was destroyed (``aclrtDestroyStream``, ``aclrtResetDevice``) or its thread
released (``HcclCommDestroy``) before End, End launches nothing, closes the batch and returns
``HCCL_E_NOT_FOUND`` (pyhcomm's choice; on hardware the tasks would go to a dead queue). A stream
destroyed by another host thread between End's check and its launch skips the tasks that reach it
(the scheduler's rule for destroyed streams): they never run later.
pyhcomm's rule for Atlas A2/A3 device-side code, which
must use batch mode: a primitive issued inside an AI CPU kernel outside a batch is refused with
``HCCL_E_NOT_SUPPORT`` (on hardware its tasks would never be launched), and a kernel that ends
with its batch still open fails with ``ACL_ERROR_RT_AICPU_EXCEPTION``. Atlas 350 runs either way.
"""
from __future__ import annotations

from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..sim.task import SKIPPED, call_site, site_text
from ..enums import HCCL_RES_TAG_MAX_LEN
from ..errors import not_found, not_support, para



class Batch:
    """Tasks kept between ``HcommBatchModeStart`` and ``HcommBatchModeEnd``."""

    __slots__ = ("tag", "tasks", "site", "id", "__weakref__")

    def __init__(self, tag: str, site):
        self.tag = tag
        self.tasks: list = []
        self.site = site
        self.id = next(_sim().record.batch_ids)   # the record's batch id of its tasks

    def abandon(self) -> None:
        for t in self.tasks:
            t.state = SKIPPED
        _sim().open_batches.discard(self)


def require_eager_ok(api: str) -> None:
    """Refuse device-side eager issue on products that must use batch mode (Atlas A2/A3)."""
    if program_ctx().kernels and not _sim().runtime.product.is_950:
        raise not_support(api, f"on {_sim().runtime.product.name} device-side primitives must be issued between "
                               "HcommBatchModeStart and HcommBatchModeEnd")


def refuse_aiv(kernel, api: str) -> None:
    """``HCCL_E_NOT_SUPPORT`` for a primitive called inside an AIV kernel's block."""
    if not kernel.hcomm_calls:
        raise not_support(api, f"called inside AIV kernel {kernel.name}: HCOMM's primitives run on the host or in "
                               "AI CPU kernels; an AIV kernel moves data with DataCopy and signals with flags")


def enqueue(task, api: str | None = None, ctx=None) -> None:
    """Launch ``task`` now, or keep it in the open batch of the caller (``ctx``: its program context)."""
    if ctx is None:
        ctx = program_ctx()
    batch = ctx.batch
    kernels = ctx.kernels
    task.program = ctx.program
    if kernels:
        if not kernels[-1].hcomm_calls:
            refuse_aiv(kernels[-1], api or task.kind)
        task.kernel = kernels[-1].seq   # the record's kernel id: the launch that issued it
    if batch is None:
        if kernels:
            require_eager_ok(api or task.kind)
        ctx.sim.scheduler.submit(task)
    else:
        batch.tasks.append(task)


def _check_tag(tag, api: str) -> str:
    if tag is None:
        return ""
    if not isinstance(tag, str):
        raise TypeError(f"{api}: batchTag must be a str or None, not {type(tag).__name__}")
    if len(tag) > HCCL_RES_TAG_MAX_LEN:
        raise para(api, f"batchTag is {len(tag)} characters; at most {HCCL_RES_TAG_MAX_LEN}")
    return tag


def batch_start(tag) -> None:
    """``HcommBatchModeStart``: keep this OS thread's tasks until ``batch_end``."""
    api = "HcommBatchModeStart"
    tag = _check_tag(tag, api)
    if program_ctx().batch is not None:
        raise para(api, f"batch {program_ctx().batch.tag!r} is already open on this thread (started at "
                        f"{site_text(program_ctx().batch.site)}); call HcommBatchModeEnd first")
    batch = Batch(tag, call_site())
    program_ctx().batch = batch
    _sim().open_batches.add(batch)  # hang reports look inside the batches not yet ended


def batch_end(tag) -> None:
    """``HcommBatchModeEnd``: launch the batch's tasks in issue order."""
    api = "HcommBatchModeEnd"
    tag = _check_tag(tag, api)
    batch = program_ctx().batch
    if batch is None:
        raise para(api, "no batch is open on this thread (HcommBatchModeStart was not called)")
    if batch.tag != tag:
        raise para(api, f"batchTag {tag!r} does not match the open batch {batch.tag!r}")
    program_ctx().batch = None
    _sim().open_batches.discard(batch)
    gone = _dead_owner(batch.tasks)
    if gone is not None:
        batch.abandon()
        raise not_found(api, f"batch {batch.tag!r} (started at {site_text(batch.site)}) launches nothing: {gone}")
    bid = batch.id
    submit = _sim().scheduler.submit
    for task in batch.tasks:
        task.batch = bid
        submit(task)
    if batch.tasks:
        _sim().record.note_batch(bid, program_ctx().program, batch.tasks[0].seq, batch.tasks[-1].seq)


def batch_drop(tag) -> None:
    """Close the caller's open batch ``tag`` without launching its tasks (recorded as skipped):
    what a caller whose batch could not be completed does (pyhcomm's; HCOMM has no such call).
    Nothing happens when no batch of that tag is open."""
    tag = _check_tag(tag, "HcommBatchModeEnd")
    batch = program_ctx().batch
    if batch is None or batch.tag != tag:
        return
    program_ctx().batch = None
    batch.abandon()


def _dead_owner(tasks):
    """Why one of ``tasks`` can no longer be launched (its stream or thread is gone), or None."""
    threads = _sim().handles.threads
    for task in tasks:
        if task.stream.destroyed:
            return (f"the stream 0x{task.stream.handle:x} of its {task.kind} task (issued at {task.where}) "
                    "was destroyed")
        if task.thread and threads.get(task.thread) is None:
            return (f"the thread 0x{task.thread:x} of its {task.kind} task (issued at {task.where}) was "
                    "released with its communicator")
    return None
