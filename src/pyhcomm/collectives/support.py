"""Where HCCL runs each collective, and with which data types and reduce operations.

The tables follow HCCL's API reference (``docs/zh/api_ref/comm_op_interface`` of HCCL, and the
``HcclBarrier`` / ``HcclGroupStart`` pages of HCOMM), product by product:

* ``950`` Atlas 350 (Ascend 950PR/950DT), ``A3`` Atlas A3, ``A2`` Atlas A2 (training and
  inference), ``910`` Atlas training series, ``310P`` Atlas inference series (Atlas 300I Duo).
  Atlas 200I/500 A2 runs no collective.
* Atlas 800I A2 (an A2 inference product) runs everything Atlas A2 runs except AlltoAll and
  AlltoAllVC (HCCL lists only the 800T A2, 900 A2 PoD and 200T A2 Box16 for those).

A call on a product that does not run it, and a data type or reduce operation outside the
product's list (or no data type / operation at all), are ``HCCL_E_NOT_SUPPORT``, as HCCL's
``CheckDataType`` / ``CheckReduceOp`` answer. Both are refused before anything is enqueued.
"""
from __future__ import annotations

from ..enums import HcclDataType as D
from ..enums import HcclReduceOp as O
from ..errors import not_support
from ..sim import current_sim as _sim

ALL = frozenset({"950", "A3", "A2", "910", "310P"})
NO_310P = ALL - {"310P"}
NO_910 = ALL - {"910"}
NEW = frozenset({"950", "A3", "A2"})

#: The products (families) on which HCCL runs each call.
PRODUCTS = {
    "HcclAllReduce": ALL, "HcclReduceScatter": ALL, "HcclAllGather": ALL, "HcclAlltoAll": ALL,
    "HcclAlltoAllV": ALL, "HcclReduce": NO_310P, "HcclBroadcast": NO_310P, "HcclScatter": NO_310P,
    "HcclSend": NO_310P, "HcclRecv": NO_310P, "HcclBatchSendRecv": NO_310P, "HcclBarrier": NO_310P,
    "HcclAllGatherV": NO_910, "HcclReduceScatterV": NO_910, "HcclAlltoAllVC": NEW,
    "HcclGroupStart": NEW, "HcclGroupEnd": NEW, "HcclGroupStatusGet": frozenset({"950"}),
}
#: Calls Atlas 800I A2 does not run although Atlas A2 does.
NOT_ON_800I_A2 = frozenset({"HcclAlltoAll", "HcclAlltoAllVC"})

_MOVE_A2 = frozenset({D.HCCL_DATA_TYPE_INT8, D.HCCL_DATA_TYPE_UINT8, D.HCCL_DATA_TYPE_INT16,
                      D.HCCL_DATA_TYPE_UINT16, D.HCCL_DATA_TYPE_INT32, D.HCCL_DATA_TYPE_UINT32,
                      D.HCCL_DATA_TYPE_INT64, D.HCCL_DATA_TYPE_UINT64, D.HCCL_DATA_TYPE_FP16,
                      D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_FP64, D.HCCL_DATA_TYPE_BFP16})
#: Data types of the calls that only move bytes (gathers, scatters, all-to-alls, send/recv).
MOVE_DTYPES = {
    "950": _MOVE_A2 | {D.HCCL_DATA_TYPE_FP8E5M2, D.HCCL_DATA_TYPE_FP8E4M3, D.HCCL_DATA_TYPE_FP8E8M0,
                       D.HCCL_DATA_TYPE_HIF8},
    "A3": _MOVE_A2, "A2": _MOVE_A2,
    "910": _MOVE_A2 - {D.HCCL_DATA_TYPE_BFP16}, "310P": _MOVE_A2 - {D.HCCL_DATA_TYPE_BFP16},
}

SUM, PROD, MAX, MIN = O.HCCL_REDUCE_SUM, O.HCCL_REDUCE_PROD, O.HCCL_REDUCE_MAX, O.HCCL_REDUCE_MIN
ALL_OPS = (SUM, PROD, MAX, MIN)


def _pairs(dtypes, ops=ALL_OPS, without=()) -> frozenset:
    """``(dtype, op)`` pairs: every ``dtypes`` x ``ops`` except the ``(dtypes, ops)`` in ``without``."""
    out = {(d, o) for d in dtypes for o in ops}
    for ds, os_ in without:
        out -= {(d, o) for d in ds for o in os_}
    return frozenset(out)


_I8, _I16, _I32, _I64 = D.HCCL_DATA_TYPE_INT8, D.HCCL_DATA_TYPE_INT16, D.HCCL_DATA_TYPE_INT32, D.HCCL_DATA_TYPE_INT64
_F16, _F32, _BF16 = D.HCCL_DATA_TYPE_FP16, D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_BFP16
_NO_PROD_16 = (((_I16, _BF16), (PROD,)),)
_REDUCE_A2 = _pairs((_I8, _I16, _I32, _I64, _F16, _F32, _BF16), without=_NO_PROD_16)
#: ``(dataType, op)`` of AllReduce, ReduceScatter and Reduce.
REDUCE_PAIRS = {
    "950": _pairs((_I8, _I16, _I32, _I64, D.HCCL_DATA_TYPE_UINT64, _F16, _F32, D.HCCL_DATA_TYPE_FP64, _BF16),
                  without=_NO_PROD_16),
    "A3": _REDUCE_A2, "A2": _REDUCE_A2,
    "910": _pairs((_I8, _I32, _I64, _F16, _F32)),
    "310P": _pairs((_I8, _I16, _I32, _F16, _F32), without=(((_I16,), (PROD, MAX, MIN)),)),
}
#: ``(dataType, op)`` of ReduceScatterV (narrower than ReduceScatter's).
REDUCE_SCATTER_V_PAIRS = {
    "950": _pairs((_I8, _I16, _I32, _I64, _F16, _F32, _BF16), without=_NO_PROD_16),
    "A3": _pairs((_I8, _I16, _I32, _I64, _F16, _F32, _BF16), (SUM, MAX, MIN)),
    "A2": _pairs((_I8, _I16, _I32, _F16, _F32, _BF16), (SUM, MAX, MIN)),
    "310P": _pairs((_I16, _F16, _F32), (SUM,)),
}


def family() -> str:
    """The product family whose tables apply now (``"950"``, ``"A3"``, ``"A2"``, ``"910"``, ...)."""
    return _sim().runtime.product.family


def check_product(api: str) -> str:
    """``HCCL_E_NOT_SUPPORT`` unless HCCL runs ``api`` on this product; returns the family."""
    product = _sim().runtime.product
    fam = product.family
    runs = fam in PRODUCTS.get(api, ALL) and not (product.name == "Atlas 800I A2" and api in NOT_ON_800I_A2)
    if not runs:
        raise not_support(api, f"HCCL does not run {api} on {product.name}")
    return fam


def _name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return repr(value)


def check_move_dtype(api: str, data_type, name: str = "dataType") -> None:
    """A data type of a call that moves bytes: in this product's list, else ``HCCL_E_NOT_SUPPORT``."""
    allowed = MOVE_DTYPES.get(family(), frozenset())
    if data_type not in allowed:
        raise not_support(api, f"{name} {_name(D, data_type)} is not supported on {_sim().runtime.product.name} "
                        f"(supported: {_names(D, allowed)})")


def check_reduce_pair(api: str, data_type, op) -> None:
    """``(dataType, op)`` of a reducing call: in this product's list for ``api``, else
    ``HCCL_E_NOT_SUPPORT``."""
    table = REDUCE_SCATTER_V_PAIRS if api == "HcclReduceScatterV" else REDUCE_PAIRS
    allowed = table.get(family(), frozenset())
    if (data_type, op) in allowed:
        return
    product = _sim().runtime.product.name
    if data_type not in {d for d, _ in allowed}:
        raise not_support(api, f"dataType {_name(D, data_type)} is not supported by {api} on {product} "
                        f"(supported: {_names(D, {d for d, _ in allowed})})")
    ops = {o for d, o in allowed if d == data_type}
    raise not_support(api, f"op {_name(O, op)} is not supported with {_name(D, data_type)} by {api} on {product} "
                    f"(supported: {_names(O, ops)})")


def _names(enum, values) -> str:
    return ", ".join(enum(v).name.split("_")[-1] for v in sorted(values))
