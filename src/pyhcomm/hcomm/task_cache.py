"""The AI CPU task cache (``HcommAicpuTsTaskCache*``): record an operator's expansion once, replay
it with new addresses.

Atlas 350 only, inside an AI CPU kernel (``HCCL_E_NOT_SUPPORT`` elsewhere). The flow HCCL uses:

    Lookup(tag) -> hit?  no:  Start(tag, addrs, sizes)  ... the primitive calls ...  End(tag)
                         yes: Execute(tag, addrs, sizes)

Between ``Start`` and ``End`` every successful data-plane call of the kernel (copies, reduces,
notifies, channel transfers), made through any tier, is recorded with its arguments, as well as
issued: each data-plane function of :mod:`pyhcomm.hcomm` calls :func:`capture` once it issued
its tasks from a kernel (the calls HCCL's own collectives make inside the kernel are theirs, not
recorded one by one). ``Execute`` issues the recorded calls again in order with every address
that fell in ``[addrs[i], addrs[i] + sizes[i])`` at ``Start`` moved to the same offset from the
new ``addrs[i]`` (also the addresses inside ``HcommBatchTransferDesc`` lists). Entries are per
device and tag; ``Clear(tag)`` drops one. A kernel that ends while it records drops the recording. Errors: ``Start`` / ``Execute`` for another tag than the last
``Lookup``'s, ``Execute`` on a miss, another count or other sizes than at ``Start``, a second
``Start`` before ``End``: ``HCCL_E_PARA``; ``Clear`` of an unknown tag: ``HCCL_E_NOT_FOUND``.
"""
from __future__ import annotations

import copy

from .. import args as argcheck
from ..defs.primitives import HcommBatchTransferDesc
from ..errors import not_found, not_support, para, ptr
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from .state import HcommState, hcomm_state


class _State:
    """The task-cache context of one running kernel (what ``Lookup`` found, what is recorded)."""

    def __init__(self):
        self.tag = None
        self.hit = False
        self.recording = None       # [(impl, args)] while Start..End
        self.ranges = None          # [(addr, size)] given to Start


def _kernel(api: str):
    product = _sim().runtime.product
    if not product.is_950:
        raise not_support(api, f"the AI CPU task cache is an Atlas 350 feature, not on {product.name}")
    kernels = program_ctx().kernels
    if not kernels:
        raise not_support(api, "the task cache is used inside an AI CPU kernel (device side) only")
    return kernels[-1]


def _state(kctx) -> _State:
    """The task-cache context of the running kernel ``kctx`` (dropped when it ends)."""
    caches = hcomm_state().kernel_caches
    st = caches.get(kctx)
    if st is None:
        st = caches[kctx] = _State()
        kctx.at_end(_kernel_ended)
    return st


def _kernel_ended(kctx) -> None:
    """A kernel ended: forget its context (a recording it never ended is dropped)."""
    state = hcomm_state()
    st = state.kernel_caches.pop(kctx, None)
    if st is not None and st.recording is not None:
        state.recordings -= 1


def _entries() -> dict:
    return hcomm_state().task_caches


def _tag(tag, api: str) -> str:
    if tag is None:
        raise ptr(api, "tag is NULL")
    if not isinstance(tag, str) or not tag:
        raise para(api, "tag must be a non-empty str")
    return tag


def _ranges(addrs, sizes, api: str) -> list:
    if addrs is None or sizes is None:
        raise ptr(api, "addrs or sizes is NULL")
    addrs, sizes = [argcheck.plain(a) for a in addrs], [argcheck.plain(n) for n in sizes]
    if len(addrs) != len(sizes):
        raise para(api, f"{len(addrs)} addrs but {len(sizes)} sizes")
    for a, n in zip(addrs, sizes):
        if isinstance(a, bool) or not isinstance(a, int) or isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise para(api, f"addrs / sizes must hold ints (got {a!r}, {n!r})")
    return list(zip(addrs, sizes))


def lookup(tag) -> bool:
    api = "HcommAicpuTsTaskCacheLookup"
    kctx = _kernel(api)
    tag = _tag(tag, api)
    st = _state(kctx)
    st.tag, st.hit = tag, (kctx.device, tag) in _entries()
    return st.hit


def start(tag, addrs, sizes) -> None:
    api = "HcommAicpuTsTaskCacheStart"
    st = _state(_kernel(api))
    tag = _tag(tag, api)
    if st.tag != tag:
        raise para(api, f"tag {tag!r} is not the tag of the last HcommAicpuTsTaskCacheLookup ({st.tag!r})")
    if st.recording is not None:
        raise para(api, f"tag {tag!r} is already being recorded (HcommAicpuTsTaskCacheEnd first)")
    st.ranges = _ranges(addrs, sizes, api)
    st.recording = []
    hcomm_state().recordings += 1


def end(tag) -> None:
    api = "HcommAicpuTsTaskCacheEnd"
    kctx = _kernel(api)
    st = _state(kctx)
    tag = _tag(tag, api)
    if st.recording is None or st.tag != tag:
        raise para(api, f"tag {tag!r} is not being recorded (HcommAicpuTsTaskCacheStart first)")
    _entries()[(kctx.device, tag)] = (st.ranges, st.recording)
    st.recording = st.ranges = None
    hcomm_state().recordings -= 1


def capture(ctx, fn, args) -> None:
    """``fn(*args)``, a data-plane call of :mod:`pyhcomm.hcomm`, succeeded in the program context
    ``ctx``: record it when ``ctx`` is a kernel that records (else nothing). The data-plane
    functions call it on their device-side path only (the host path never records)."""
    kernels = ctx.kernels
    if not kernels or ctx.library:
        return
    state = ctx.sim.layer_state(HcommState)
    if state.recordings:
        st = state.kernel_caches.get(kernels[-1])
        if st is not None and st.recording is not None:
            st.recording.append((fn, copy.deepcopy(args)))


def _moved(value, old, new):
    if isinstance(value, HcommBatchTransferDesc):
        d = copy.deepcopy(value)
        d.dst, d.src = _moved(d.dst, old, new), _moved(d.src, old, new)
        return d
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        for (a, n), b in zip(old, new):
            if a <= value < a + n:
                return b + (value - a)
    return value


def execute(tag, addrs, sizes) -> None:
    api = "HcommAicpuTsTaskCacheExecute"
    kctx = _kernel(api)
    st = _state(kctx)
    tag = _tag(tag, api)
    if st.tag != tag:
        raise para(api, f"tag {tag!r} is not the tag of the last HcommAicpuTsTaskCacheLookup ({st.tag!r})")
    entry = _entries().get((kctx.device, tag))
    if entry is None or not st.hit:
        raise para(api, f"tag {tag!r} is a cache miss: record it with HcommAicpuTsTaskCacheStart / End")
    old, calls = entry
    new = _ranges(addrs, sizes, api)
    if [n for _, n in new] != [n for _, n in old]:
        raise para(api, f"sizes {[n for _, n in new]} differ from those recorded {[n for _, n in old]}")
    bases = [addr for addr, _ in new]
    for impl, args in calls:
        impl(*[_moved(arg, old, bases) for arg in args])


def clear(tag) -> None:
    api = "HcommAicpuTsTaskCacheClear"
    kctx = _kernel(api)
    if _entries().pop((kctx.device, _tag(tag, api)), None) is None:
        raise not_found(api, f"no cache entry for tag {tag!r} on device {kctx.device}")
