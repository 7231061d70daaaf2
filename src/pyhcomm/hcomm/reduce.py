"""Local operations: ``HcommLocalReduceOnThread`` (``dst[i] = op(dst[i], src[i])``).

A2/A3 realise the reduce as an SDMA inline-reduce task ("Reduce_Inline") on the thread's stream;
Atlas 350 in the AI CPU's thread code. Here the task reduces with the backend when the stream
reaches it, like the copy (:mod:`.local`): the call validates, enqueues and returns at once.

Supported data types and operations (checked before the thread handle):

* Host path (every product) and the A2/A3 device path, as documented: ``FP32, FP16, INT8, INT16,
  INT32, BFP16`` x ``SUM, MAX, MIN``. Anything else is ``HCCL_E_PARA``.
* Atlas 350 device path (pyhcomm's decision; the real API layer no longer checks, its thread maps
  all 17 data types and 4 ops, and the hardware is narrower):

  - SDMA inline reduce: ``INT8, INT16, INT32, FP16, FP32, BFP16, UINT8, UINT16, UINT32`` x
    ``SUM, MAX, MIN``;
  - executed by the AI CPU: ``INT64, UINT64, FP64`` with any of ``SUM, PROD, MAX, MIN``, and
    ``PROD`` on every data type above (:func:`check_dtype_op` says which engine).
  - Values the 950 path maps but neither engine reduces here (``INT128``, ``HIF8``, ``FP8E4M3``,
    ``FP8E5M2``, ``FP8E8M0``) are ``HCCL_E_NOT_SUPPORT``; values outside the mapping (13, 255,
    negative, ...) and op values outside 0..3 are ``HCCL_E_PARA``.

  Which set applies depends on the side of the call: a host call on Atlas 350 is checked against
  the host path's set (as the host implementation does before it reaches the CPU_TS thread), so
  ``FP64`` from the host is ``HCCL_E_PARA`` and ``FP32`` from the host is ``HCCL_E_NOT_SUPPORT``.

Arithmetic (:meth:`~pyhcomm.backend.cpu.CpuBackend.reduce`): integers wrap (two's complement, no
saturation); FP32/FP64 use IEEE arithmetic of that width; FP16/BFP16 are computed in FP32 and rounded
once (round to nearest even) to 16 bits; MAX/MIN propagate NaN as ``numpy.maximum``/``minimum``.

Deliberate differences from the hardware: ranges outside one live allocation of the thread's
device, and partially overlapping ``dst``/``src``, are refused at the call with ``HCCL_E_PARA``
(``dst == src`` is accepted: ``dst = op(dst, dst)``); memory freed before the task runs fails the
stream. HCCL joins every thread before a 64-bit or PROD reduce on Atlas 350 because the AI CPU
executes it; pyhcomm runs those reductions in stream order as well, so code that joins first gets
the same bytes, and code that does not is not punished here.
"""
from __future__ import annotations

from .. import args
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx, on_device_side
from ..sim import kinds
from ..sim.task import Task, call_site
from ..enums import DATA_TYPE_SIZE, NUMPY_DTYPE, HcommDataType, HcommReduceOp
from ..errors import HcclError, HcclResult, HcclRuntimeError, not_support, para
from .resources.thread import get_thread
from . import validate as v
from .enqueue import enqueue
from .task_cache import capture

API = "HcommLocalReduceOnThread"

_D = HcommDataType
_O = HcommReduceOp

#: Host path and A2/A3 device path (documented).
HOST_DTYPES = frozenset({_D.HCOMM_DATA_TYPE_FP32, _D.HCOMM_DATA_TYPE_FP16, _D.HCOMM_DATA_TYPE_INT8,
                         _D.HCOMM_DATA_TYPE_INT16, _D.HCOMM_DATA_TYPE_INT32, _D.HCOMM_DATA_TYPE_BFP16})
HOST_OPS = frozenset({_O.HCOMM_REDUCE_SUM, _O.HCOMM_REDUCE_MAX, _O.HCOMM_REDUCE_MIN})

#: Atlas 350 device path: what the SDMA inline reduce does.
SDMA_950_DTYPES = HOST_DTYPES | {_D.HCOMM_DATA_TYPE_UINT8, _D.HCOMM_DATA_TYPE_UINT16,
                                 _D.HCOMM_DATA_TYPE_UINT32}
SDMA_950_OPS = HOST_OPS
#: Atlas 350 device path: further data types (every op) and PROD (every data type), by the AI CPU.
AICPU_950_DTYPES = frozenset({_D.HCOMM_DATA_TYPE_INT64, _D.HCOMM_DATA_TYPE_UINT64, _D.HCOMM_DATA_TYPE_FP64})
DTYPES_950 = SDMA_950_DTYPES | AICPU_950_DTYPES
OPS_950 = frozenset({_O.HCOMM_REDUCE_SUM, _O.HCOMM_REDUCE_PROD, _O.HCOMM_REDUCE_MAX, _O.HCOMM_REDUCE_MIN})
#: Values the 950 path maps (every data type with a size; ops 0..3).
MAPPED_950_DTYPES = frozenset(DATA_TYPE_SIZE)


def _name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _int_arg(value, name: str, enum, api: str = API) -> int:
    """An enum argument as an int (numpy integers too); ``TypeError`` for anything else, as a binding."""
    return args.integer(value, api, f"{name} ({enum.__name__})", -(1 << 64), args.UINT64_MAX)


def check_dtype_op(data_type, reduce_op, device_side: bool | None = None, api: str = API) -> tuple:
    """Check ``(dataType, reduceOp)`` for the current product and side; return them as enums.

    Returns:
        ``(HcommDataType, HcommReduceOp, engine)`` where ``engine`` is ``"sdma"`` or ``"aicpu"``.

    Raises:
        HcclUsageError: ``HCCL_E_PARA`` for a value outside the supported (or mapped) set.
        HcclNotSupportedError: a value the Atlas 350 path maps but does not reduce.
    """
    if device_side is None:
        device_side = on_device_side()
    is_950 = _sim().runtime.product.is_950
    key = None
    if type(data_type) is int and type(reduce_op) is int:
        key = (data_type, reduce_op, device_side, is_950)
        hit = _CHECKED.get(key)
        if hit is not None:
            return hit
    dt = _int_arg(data_type, "dataType", HcommDataType, api)
    op = _int_arg(reduce_op, "reduceOp", HcommReduceOp, api)
    out = _check_dtype_op(dt, op, device_side, is_950, api)
    if key is not None:
        _CHECKED[key] = out
    return out


#: ``(dataType, reduceOp, device side, Atlas 350)`` -> what :func:`check_dtype_op` returned (the
#: valid combinations only: a collective's reduce steps check the same pair again and again).
_CHECKED: dict = {}


def _check_dtype_op(dt: int, op: int, device_side: bool, is_950: bool, api: str) -> tuple:
    if device_side and is_950:
        if dt not in MAPPED_950_DTYPES:
            raise para(api, f"dataType {dt} is not an HcommDataType the {_sim().runtime.product.name} path maps")
        if op not in OPS_950:
            raise para(api, f"reduceOp {op} is not an HcommReduceOp the {_sim().runtime.product.name} path maps "
                            "(SUM 0, PROD 1, MAX 2, MIN 3)")
        if dt not in DTYPES_950:
            raise not_support(api, f"dataType {_name(_D, dt)} cannot be reduced on {_sim().runtime.product.name} "
                                   f"(supported: {_names(_D, DTYPES_950)})")
        engine = "sdma" if dt in SDMA_950_DTYPES and op in SDMA_950_OPS else "aicpu"
        return _D(dt), _O(op), engine
    path = "the host path" if not device_side else f"the {_sim().runtime.product.name} device path"
    if dt not in HOST_DTYPES:
        raise para(api, f"dataType {_name(_D, dt)} is not supported on {path} "
                        f"(supported: {_names(_D, HOST_DTYPES)})")
    if op not in HOST_OPS:
        raise para(api, f"reduceOp {_name(_O, op)} is not supported on {path} "
                        f"(supported: {_names(_O, HOST_OPS)})")
    return _D(dt), _O(op), "sdma"


def _names(enum, values) -> str:
    return ", ".join(enum(x).name.split("_")[-1] for x in sorted(values))


def _run_reduce(dst_alloc, dst_off, src_alloc, src_off, count, np_dtype, op):
    dst, src = dst_alloc.storage, src_alloc.storage
    if dst is None or src is None:
        which = "dst" if dst is None else "src"
        raise HcclRuntimeError(HcclResult.HCCL_E_MEMORY, API, f"{which} memory was freed before the reduce ran")
    _sim().backend.reduce(dst, dst_off, src, src_off, count, np_dtype, op)


def local_reduce(thread: int, dst: int, src: int, count: int, data_type: int, reduce_op: int) -> None:
    """Enqueue ``dst[i] = reduce_op(dst[i], src[i])`` for ``count`` elements on ``thread``; returns at once.

    Args:
        thread: a thread handle (``ThreadHandle``).
        dst: device address of the destination (and first operand).
        src: device address of the second operand.
        count: number of elements (bytes = ``count * size(data_type)``).
        data_type: an ``HcommDataType`` value.
        reduce_op: an ``HcommReduceOp`` value.

    Raises:
        HcclUsageError: NULL pointers or thread (``HCCL_E_PTR``); an unsupported data type or op,
            ``count * size`` of 2**64 or more, a range outside device memory the thread can access
            or a partial overlap (``HCCL_E_PARA``); an unknown thread (``HCCL_E_NOT_FOUND``).
        HcclNotSupportedError: product, side or engine rules, or a data type Atlas 350 maps but
            does not reduce (``HCCL_E_NOT_SUPPORT``).
    """
    dst = v.nonnull(dst, API, "dst")
    src = v.nonnull(src, API, "src")
    device_side = on_device_side()
    dt, op, _engine = check_dtype_op(data_type, reduce_op, device_side)
    _enqueue(thread, dst, src, count, dt, op, device_side)
    if device_side:
        capture(program_ctx(), local_reduce, (thread, dst, src, count, data_type, reduce_op))


def hccl_reduce(thread: int, dst: int, src: int, count: int, data_type: int, reduce_op: int) -> None:
    """Enqueue the reduce step of an HCCL collective: :func:`local_reduce` where the primitive
    takes ``(data_type, reduce_op)`` on this path, else HCCL's own reduce.

    HCCL reduces what the SDMA inline reduce cannot (64-bit types, PROD, ...) itself: on the AI CPU
    (``AicpuReduce``, after joining the threads) or, host-orchestrated, with a vector kernel on the
    stream. pyhcomm records it as the same ``LocalReduce`` task, run in stream order with the same
    arithmetic. The collective checked ``(data_type, reduce_op)`` against HCCL's tables first
    (:mod:`pyhcomm.collectives.support`); any value the backend cannot reduce is ``HCCL_E_PARA``.
    """
    device_side = on_device_side()
    try:
        dt, op, _engine = check_dtype_op(data_type, reduce_op, device_side)
    except HcclError:
        if data_type not in NUMPY_DTYPE or reduce_op not in OPS_950:
            raise
        dt, op = _D(data_type), _O(reduce_op)
    _enqueue(thread, dst, src, count, dt, op, device_side)


def _enqueue(thread, dst, src, count, dt, op, device_side) -> None:
    """Validate thread and ranges of a reduce whose data type and op are settled; enqueue it.
    (Each check has a cheap test for the common case and falls back to the validate helper,
    which produces the error: this runs for every reduce step of a collective.)"""
    if not dst or type(dst) is not int:
        v.nonnull(dst, API, "dst")
    if not src or type(src) is not int:
        v.nonnull(src, API, "src")
    ctx = program_ctx()
    sim = ctx.sim
    t = sim.handles.threads.by_handle.get(thread) if type(thread) is int else None
    if t is None or t.stream.destroyed:
        t = get_thread(thread, API)
    product = sim.runtime.product
    if not product.hcomm and not ctx.library:
        v.product_supports_hcomm(API)
    kernels = ctx.kernels
    if t.local_side != ("device" if kernels else "host"):
        v.thread_side(t, API)
    if kernels:
        v.kernel_device(t, kernels[-1], API)
    if type(count) is not int or not 0 <= count <= v.UINT64_MAX:
        count = v.length(count, API, "count")
    n = count * DATA_TYPE_SIZE[dt]
    if n > v.UINT64_MAX:
        raise para(API, f"count {count} x {DATA_TYPE_SIZE[dt]} bytes ({dt.name}) = {n} bytes overflows "
                        "uint64 (must be < 2**64)")
    dst_alloc, dst_off = v.thread_dst(t, dst, n, API)
    src_alloc, src_off = v.thread_src(t, src, n, API)
    v.no_partial_overlap(dst, src, n, API)
    task = Task(kinds.LOCAL_REDUCE, t.stream, _run_reduce,
                (dst_alloc, dst_off, src_alloc, src_off, count, NUMPY_DTYPE[dt], int(op)),
                ((dst, n), (src, n)), ((dst, n),), t.handle, t.rank, call_site(), None, None, 0.0, (dt, op),
                "device" if device_side else "host", t.engine)
    if not kernels and ctx.batch is None:   # (enqueue's common case, inline)
        task.program = ctx.program
        sim.scheduler.submit(task)
    else:
        enqueue(task, API, ctx)
