"""HcommLocalReduceOnThread: bit-exact results, supported sets per product and side, check order.

The oracle is independent of the implementation's arithmetic path: integers are reduced with
Python ints and wrapped modulo 2**bits; floats are computed in float64 (exact or correctly
rounded for every operand pair of these widths) and rounded once to the element type.
"""
from __future__ import annotations

import itertools

from pyhcomm import HcommBatchModeEnd, HcommBatchModeStart

import ml_dtypes
import numpy as np
import pytest

import pyhcomm
from pyhcomm import Comm, Device, HcclNotSupportedError, HcclUsageError, acl

from pyhcomm.backend import cpu as cpu_backend
from pyhcomm.enums import DATA_TYPE_SIZE, NUMPY_DTYPE, CommEngine, HcommDataType, HcommReduceOp
from pyhcomm.errors import HcclResult
from pyhcomm.hcomm import reduce as red

API = pyhcomm.HcommLocalReduceOnThread
D = HcommDataType
O = HcommReduceOp  # noqa: E741
SUM, PROD, MAX, MIN = O.HCOMM_REDUCE_SUM, O.HCOMM_REDUCE_PROD, O.HCOMM_REDUCE_MAX, O.HCOMM_REDUCE_MIN
OK, PARA, PTR, NOT_SUPPORT, NOT_FOUND = 0, 1, 2, 5, 6
CPU_TS, AICPU_TS = CommEngine.COMM_ENGINE_CPU_TS, CommEngine.COMM_ENGINE_AICPU_TS

HOST_SET = [(dt, op) for dt in sorted(red.HOST_DTYPES) for op in sorted(red.HOST_OPS)]
SET_950 = [(dt, op) for dt in sorted(red.DTYPES_950) for op in sorted(red.OPS_950)]
UNMAPPED_DTYPES = [13, 18, 255, 256, -1, 2**40]
BAD_OPS = [4, 254, 255, -1, 2**33]


# -- oracle and data -------------------------------------------------------------------------
def oracle(a: np.ndarray, b: np.ndarray, op: int) -> np.ndarray:
    """``op(a, b)`` element-wise, computed independently of the backend (see module docstring)."""
    dt = a.dtype
    if dt.kind in "iu":
        bits = dt.itemsize * 8
        fn = {SUM: lambda x, y: x + y, PROD: lambda x, y: x * y, MAX: max, MIN: min}[op]
        out = [fn(int(x), int(y)) % (1 << bits) for x, y in zip(a.tolist(), b.tolist())]
        return np.array(out, dtype=f"u{dt.itemsize}").view(dt)
    ufunc = {SUM: np.add, PROD: np.multiply, MAX: np.maximum, MIN: np.minimum}[op]
    with np.errstate(all="ignore"):
        return ufunc(a.astype(np.float64), b.astype(np.float64)).astype(dt)


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}")


def edge_values(dt: np.dtype) -> np.ndarray:
    """Edge operands of ``dt``: limits, zeros of both signs, inf, NaN, subnormals, rounding ties."""
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = {info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 7, info.max // 2,
                info.max // 2 + 1}
        if info.min < 0:
            vals |= {-1, -2, -3, info.min // 2}
        return np.array(sorted(vals), dtype=dt)
    fi = ml_dtypes.finfo(dt) if dt.kind == "V" else np.finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, 0.5, float(fi.max), -float(fi.max), float(fi.tiny),
            -float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal), np.inf, -np.inf,
            np.nan, -np.nan, float(fi.eps), 1.0 + float(fi.eps)]
    # sums that are exact ties between two representable values (round half to even)
    unit = 2.0 ** (fi.nmant + 1)
    vals += [unit, unit + 2.0, unit + 4.0, -unit, 1.0 / 3.0]
    return np.array(vals, dtype=np.float64).astype(dt)


def operands(dt: np.dtype, seed: int, random_n: int = 2048):
    """All pairs of edge values, then random bit patterns (every class of value, NaNs included)."""
    edges = edge_values(dt)
    pairs = np.array(list(itertools.product(range(len(edges)), repeat=2)))
    a, b = edges[pairs[:, 0]], edges[pairs[:, 1]]
    rng = np.random.default_rng(seed)
    ra = rng.integers(0, 256, random_n * dt.itemsize, dtype=np.uint8).view(dt)
    rb = rng.integers(0, 256, random_n * dt.itemsize, dtype=np.uint8).view(dt)
    if dt.kind == "f" and dt.itemsize >= 4:
        # keep NaNs quiet: the hardware and numpy may quiet a signalling NaN differently
        ra = np.where(np.isnan(ra), np.array(np.nan, dt), ra)
        rb = np.where(np.isnan(rb), np.array(np.nan, dt), rb)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


# -- setup -----------------------------------------------------------------------------------
def host_env(product_fixture=None, name=None):
    if name is not None:
        product_fixture(name)
    dev = Device(0)
    comm = Comm.init_all([0])[0]
    thread = comm.thread(CPU_TS, stream=dev.stream(), notify_num=1)
    return dev, comm, thread


def upload(dev, arr: np.ndarray):
    buf = dev.malloc(max(arr.nbytes, 1))
    if arr.nbytes:
        buf.write(arr.view(np.uint8))
    return buf


def device_env(product, name="Atlas 350", engine=AICPU_TS):
    product(name)
    dev = Device(0)
    comm = Comm.init_all([0])[0]
    thread = comm.threads(engine, 1, 1)[0]
    return dev, comm, thread


def run_in_kernel(dev, fn, *args):
    """Run ``fn(*args)`` inside an AI CPU kernel, synchronise, return what it returned."""
    out = []

    def kernel():
        HcommBatchModeStart("reduce")  # Atlas A2/A3 device-side code must use batch mode
        out.append(fn(*args))
        HcommBatchModeEnd("reduce")
        return 0

    stream = dev.stream()
    stream.launch(kernel)
    dev.synchronize()
    assert len(out) == 1
    return out[0]


def dtype_id(v):
    return D(v).name.removeprefix("HCOMM_DATA_TYPE_")


def case_id(case):
    dt, op = case
    return f"{dtype_id(dt)}-{O(op).name.removeprefix('HCOMM_REDUCE_')}"


# -- bit-exact results -----------------------------------------------------------------------
@pytest.mark.parametrize("case", HOST_SET, ids=case_id)
def test_host_a2_bit_exact(case):
    dt_v, op = case
    dev, _, t = host_env()
    dt = NUMPY_DTYPE[dt_v]
    a, b = operands(dt, seed=dt_v * 10 + op)
    dst, src = upload(dev, a), upload(dev, b)
    assert API(t.handle, dst.addr, src.addr, len(a), dt_v, op) == OK
    assert bits(dst.read(dt)).tolist() == bits(a).tolist(), "the reduce ran before the stream did"
    t.synchronize()
    np.testing.assert_array_equal(bits(dst.read(dt)), bits(oracle(a, b, op)))
    np.testing.assert_array_equal(bits(src.read(dt)), bits(b))


@pytest.mark.parametrize("name", ["Atlas A3", "Atlas 900 A2 PoD", "Atlas 200T A2 Box16"])
def test_host_other_products(product, name):
    dev, _, t = host_env(product, name)
    for dt_v, op in HOST_SET:
        dt = NUMPY_DTYPE[dt_v]
        a, b = operands(dt, seed=3, random_n=64)
        dst, src = upload(dev, a), upload(dev, b)
        assert API(t.handle, dst.addr, src.addr, len(a), dt_v, op) == OK
        t.synchronize()
        np.testing.assert_array_equal(bits(dst.read(dt)), bits(oracle(a, b, op)))


@pytest.mark.parametrize("case", SET_950, ids=case_id)
def test_950_device_bit_exact(product, case):
    dt_v, op = case
    dev, _, t = device_env(product)
    dt = NUMPY_DTYPE[dt_v]
    a, b = operands(dt, seed=dt_v * 10 + op, random_n=512)
    dst, src = upload(dev, a), upload(dev, b)
    assert run_in_kernel(dev, API, t.handle, dst.addr, src.addr, len(a), dt_v, op) == OK
    np.testing.assert_array_equal(bits(dst.read(dt)), bits(oracle(a, b, op)))


def test_a2_device_side_uses_the_host_set(product):
    dev, _, t = device_env(product, "Atlas 800T A2")
    a = np.array([1, -2, 3.5, np.inf], np.float32)
    b = np.array([4, 5, -3.5, 1], np.float32)
    dst, src = upload(dev, a), upload(dev, b)
    codes = run_in_kernel(dev, lambda: [
        API(t.handle, dst.addr, src.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM),
        API(t.handle, dst.addr, src.addr, 4, D.HCOMM_DATA_TYPE_FP64, SUM),
        API(t.handle, dst.addr, src.addr, 4, D.HCOMM_DATA_TYPE_UINT8, SUM),
        API(t.handle, dst.addr, src.addr, 4, D.HCOMM_DATA_TYPE_FP32, PROD)])
    assert codes == [OK, PARA, PARA, PARA]
    np.testing.assert_array_equal(dst.read(np.float32), a + b)


def test_int_wraparound_examples():
    dev, _, t = host_env()
    cases = [
        (D.HCOMM_DATA_TYPE_INT8, SUM, [127, -128, -1], [1, -1, -128], [-128, 127, 127]),
        (D.HCOMM_DATA_TYPE_INT16, SUM, [32767, -32768], [1, -1], [-32768, 32767]),
        (D.HCOMM_DATA_TYPE_INT32, SUM, [2**31 - 1, -2**31], [2**31 - 1, -2**31], [-2, 0]),
    ]
    for dt_v, op, a, b, want in cases:
        dt = NUMPY_DTYPE[dt_v]
        dst, src = upload(dev, np.array(a, dt)), upload(dev, np.array(b, dt))
        assert API(t.handle, dst.addr, src.addr, len(a), dt_v, op) == OK
        t.synchronize()
        assert dst.read(dt).tolist() == want


def test_16_bit_floats_round_once_from_fp32():
    dev, _, t = host_env()
    # fp16: 2048 + 1 is a tie (-> 2048, even), 2050 + 1 -> 2052; 65504 + 8 rounds back to 65504,
    # 65504 + 16 is a tie whose even neighbour is 65536: it overflows to inf
    a = np.array([2048, 2050, 65504, 65504, -0.0, -0.0], np.float16)
    b = np.array([1, 1, 8, 16, 0.0, -0.0], np.float16)
    dst, src = upload(dev, a), upload(dev, b)
    assert API(t.handle, dst.addr, src.addr, 6, D.HCOMM_DATA_TYPE_FP16, SUM) == OK
    t.synchronize()
    got = dst.read(np.float16)
    assert got[:4].tolist() == [2048, 2052, 65504, np.inf]
    assert bits(got[4:]).tolist() == [0x0000, 0x8000]     # -0 + 0 = +0, -0 + -0 = -0
    bf = ml_dtypes.bfloat16
    a = np.array([256, 258, 1, 1], bf)
    b = np.array([1, 1, 2.0 ** -8, 3 * 2.0 ** -9], bf)
    dst, src = upload(dev, a), upload(dev, b)
    assert API(t.handle, dst.addr, src.addr, 4, D.HCOMM_DATA_TYPE_BFP16, SUM) == OK
    t.synchronize()
    # 1 + 2**-8 is a tie (-> 1); 1 + 3 * 2**-9 is above it (-> 1 + 2**-7); computed in fp16 or in
    # two roundings from float64 through a narrower type it could differ, here it must not
    assert dst.read(bf).astype(np.float32).tolist() == [256, 260, 1.0, 1.0 + 2.0 ** -7]


def test_max_min_nan_and_signed_zero_as_numpy():
    dev, _, t = host_env()
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, -np.inf], np.float32)
    b = np.array([1.0, np.nan, -np.nan, 0.0, -0.0, np.inf], np.float32)
    for op, ufunc in ((MAX, np.maximum), (MIN, np.minimum)):
        for dt_v in (D.HCOMM_DATA_TYPE_FP32, D.HCOMM_DATA_TYPE_FP16, D.HCOMM_DATA_TYPE_BFP16):
            dt = NUMPY_DTYPE[dt_v]
            x, y = a.astype(dt), b.astype(dt)
            dst, src = upload(dev, x), upload(dev, y)
            assert API(t.handle, dst.addr, src.addr, len(x), dt_v, op) == OK
            t.synchronize()
            want = ufunc(x.astype(np.float32), y.astype(np.float32)).astype(dt)
            np.testing.assert_array_equal(bits(dst.read(dt)), bits(want))
            assert np.isnan(dst.read(dt).astype(np.float32)[:3]).all()


def test_dst_equal_src_and_count_zero():
    dev, _, t = host_env()
    a = np.array([1, -2, 100, 127], np.int8)
    buf = upload(dev, a)
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_INT8, SUM) == OK
    assert API(t.handle, buf.addr, buf.addr, 0, D.HCOMM_DATA_TYPE_INT8, SUM) == OK
    t.synchronize()
    assert buf.read(np.int8).tolist() == [2, -4, -56, -2]
    tasks = pyhcomm.record.tasks(kind="LocalReduce")
    assert len(tasks) == 2 and tasks[1].reads == ((buf.addr, 0), (buf.addr, 0))


def test_stream_order_with_copy_and_partial_ranges():
    dev, _, t = host_env()
    a = np.arange(16, dtype=np.int32)
    src = upload(dev, a)
    dst = dev.malloc(64)
    t.local_copy(dst, src)                           # dst = a
    assert API(t.handle, dst.addr + 16, src.addr, 8, D.HCOMM_DATA_TYPE_INT32, SUM) == OK   # dst[4:12] += a[:8]
    t.synchronize()
    want = a.copy()
    want[4:12] += a[:8]
    assert dst.read(np.int32).tolist() == want.tolist()


def test_task_record():
    dev, _, t = host_env()
    dst, src = dev.malloc(64), dev.malloc(64)
    assert API(t.handle, dst.addr, src.addr, 32, D.HCOMM_DATA_TYPE_BFP16, MIN) == OK
    (task,) = pyhcomm.record.tasks(kind="LocalReduce")
    assert task.reads == ((dst.addr, 64), (src.addr, 64))
    assert task.writes == ((dst.addr, 64),)
    assert task.detail == (D.HCOMM_DATA_TYPE_BFP16, MIN)
    assert task.thread == t.handle and task.stream.handle == t.stream.handle and task.side == "host"
    assert task.where.endswith(f"test_local_reduce.py:{test_task_record.__code__.co_firstlineno + 3}")
    t.synchronize()
    assert task.state == "done"


def test_950_device_task_record_side(product):
    dev, _, t = device_env(product)
    dst, src = dev.malloc(64), dev.malloc(64)
    assert run_in_kernel(dev, API, t.handle, dst.addr, src.addr, 8, D.HCOMM_DATA_TYPE_FP64, PROD) == OK
    (task,) = pyhcomm.record.tasks(kind="LocalReduce")
    assert task.side == "device" and task.detail == (D.HCOMM_DATA_TYPE_FP64, PROD)


# -- supported sets and codes ----------------------------------------------------------------
@pytest.mark.parametrize("dt_v", [5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 17] + UNMAPPED_DTYPES)
def test_host_unsupported_dtype_is_para(dt_v):
    dev, _, t = host_env()
    buf = dev.malloc(256)
    assert API(t.handle, buf.addr, buf.addr, 4, dt_v, SUM) == PARA


@pytest.mark.parametrize("op", [PROD] + BAD_OPS)
def test_host_unsupported_op_is_para(op):
    dev, _, t = host_env()
    buf = dev.malloc(256)
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, op) == PARA


def test_950_device_codes(product):
    dev, _, t = device_env(product)
    buf = dev.malloc(1024)

    def body():
        call = lambda dt, op: API(t.handle, buf.addr, buf.addr, 4, dt, op)  # noqa: E731
        return ([call(dt, SUM) for dt in UNMAPPED_DTYPES],
                [call(D.HCOMM_DATA_TYPE_FP32, op) for op in BAD_OPS],
                [call(dt, op) for dt in (12, 14, 15, 16, 17) for op in (SUM, PROD)],
                [call(dt, PROD) for dt in sorted(red.DTYPES_950)])

    unmapped, bad_ops, mapped_unsupported, prod = run_in_kernel(dev, body)
    assert unmapped == [PARA] * len(UNMAPPED_DTYPES)
    assert bad_ops == [PARA] * len(BAD_OPS)
    assert mapped_unsupported == [NOT_SUPPORT] * 10
    assert prod == [OK] * len(red.DTYPES_950)


def test_950_engine_split(product):
    product("Atlas 350")
    assert red.check_dtype_op(D.HCOMM_DATA_TYPE_UINT16, MAX, True)[2] == "sdma"
    assert red.check_dtype_op(D.HCOMM_DATA_TYPE_UINT16, PROD, True)[2] == "aicpu"
    assert red.check_dtype_op(D.HCOMM_DATA_TYPE_INT64, SUM, True)[2] == "aicpu"
    assert red.check_dtype_op(D.HCOMM_DATA_TYPE_FP32, SUM, False)[2] == "sdma"
    with pytest.raises(HcclUsageError) as e:
        red.check_dtype_op(D.HCOMM_DATA_TYPE_UINT16, SUM, False)     # host path set
    assert e.value.code == PARA


def test_950_host_side(product):
    dev, _, t = device_env(product)
    buf = dev.malloc(256)
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM) == NOT_SUPPORT
    # the host path checks its own (narrower) set first
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP64, SUM) == PARA
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, PROD) == PARA
    with pytest.raises(HcclNotSupportedError, match="device side"):
        API.raising(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM)
    assert not pyhcomm.record.tasks(kind="LocalReduce")


def test_950_cpu_thread_in_kernel_is_not_supported(product):
    dev, _, t = device_env(product, engine=CommEngine.COMM_ENGINE_CPU)
    buf = dev.malloc(256)
    assert run_in_kernel(dev, API, t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM) == NOT_SUPPORT


def test_unsupported_product(product):
    dev, _, t = host_env(product, "Atlas 800I A2")
    buf = dev.malloc(256)
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM) == NOT_SUPPORT
    assert API(t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP64, SUM) == PARA


def test_host_thread_inside_kernel_is_not_supported():
    dev, _, t = host_env()
    buf = dev.malloc(256)
    assert run_in_kernel(dev, API, t.handle, buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM) == NOT_SUPPORT


# -- check order -----------------------------------------------------------------------------
def test_check_order():
    dev, _, t = host_env()
    buf = dev.malloc(256)
    a, h = buf.addr, t.handle
    FP32, FP64 = D.HCOMM_DATA_TYPE_FP32, D.HCOMM_DATA_TYPE_FP64
    huge = 2**64
    # NULL pointers first, even with every other argument wrong
    assert API(0, 0, a, huge, 255, 255) == PTR
    assert API(0, a, 0, huge, 255, 255) == PTR
    assert API(0, None, a, 4, FP32, SUM) == PTR
    # then data type / op, before the thread
    assert API(0, a, a, huge, FP64, SUM) == PARA
    assert API(0xDEAD, a, a, huge, FP32, PROD) == PARA
    # then the thread: NULL, unknown
    assert API(0, a, a, huge, FP32, SUM) == PTR
    assert API(0xDEAD0000, a, a, huge, FP32, SUM) == NOT_FOUND
    # then product / side rules (a CPU_TS thread inside a kernel), before count and ranges
    assert run_in_kernel(dev, API, h, a, 0x10, huge, FP32, SUM) == NOT_SUPPORT
    # then count, then the ranges
    with pytest.raises(HcclUsageError, match="overflows") as e:
        API.raising(h, 0x10, 0x20, 2**62, FP32, SUM)
    assert e.value.code == PARA
    with pytest.raises(HcclUsageError, match="dst"):
        API.raising(h, 0x10, 0x20, 4, FP32, SUM)
    with pytest.raises(HcclUsageError, match="src"):
        API.raising(h, a, 0x20, 4, FP32, SUM)
    assert not pyhcomm.record.tasks(kind="LocalReduce")


def test_numpy_integer_enums_are_accepted():
    dev, _, t = host_env()
    buf = upload(dev, np.array([1, 2], np.int32))
    assert API(t.handle, buf.addr, buf.addr, 2, np.int64(2), np.uint8(0)) == OK
    t.synchronize()
    assert buf.read(np.int32).tolist() == [2, 4]


def test_wrong_python_types_raise_type_error():
    dev, _, t = host_env()
    buf = dev.malloc(256)
    for args in ((buf.addr, buf.addr, 4, 4.0, SUM), (buf.addr, buf.addr, 4, D.HCOMM_DATA_TYPE_FP32, "sum"),
                 (buf.addr, buf.addr, 4, True, SUM), (buf.addr, buf.addr, 4.0, 4, SUM)):
        with pytest.raises(TypeError):
            API(t.handle, *args)


# -- count overflow, bounds, overlap ---------------------------------------------------------
@pytest.mark.parametrize("dt_v, count", [(D.HCOMM_DATA_TYPE_INT16, 2**63), (D.HCOMM_DATA_TYPE_FP32, 2**62),
                                         (D.HCOMM_DATA_TYPE_INT8, 2**64), (D.HCOMM_DATA_TYPE_INT8, -1)])
def test_count_overflow_is_para(dt_v, count):
    dev, _, t = host_env()
    buf = dev.malloc(256)
    assert API(t.handle, buf.addr, buf.addr, count, dt_v, SUM) == PARA
    with pytest.raises(HcclUsageError, match="overflows|outside"):
        API.raising(t.handle, buf.addr, buf.addr, count, dt_v, SUM)


def test_count_just_below_overflow_fails_bounds():
    dev, _, t = host_env()
    buf = dev.malloc(256)
    count = (2**64 - 1) // 4
    with pytest.raises(HcclUsageError, match="runs past") as e:
        API.raising(t.handle, buf.addr, buf.addr, count, D.HCOMM_DATA_TYPE_FP32, SUM)
    assert e.value.code == PARA


def test_bounds():
    dev, _, t = host_env()
    x, y = dev.malloc(256), dev.malloc(256)
    FP32 = D.HCOMM_DATA_TYPE_FP32
    assert API(t.handle, x.addr, y.addr, 64, FP32, SUM) == OK
    assert API(t.handle, x.addr + 4, y.addr, 64, FP32, SUM) == PARA      # dst runs past
    assert API(t.handle, x.addr, y.addr + 4, 64, FP32, SUM) == PARA      # src runs past
    assert API(t.handle, x.addr, y.addr, 65, FP32, SUM) == PARA
    host = np.zeros(64, np.float32)
    hptr = acl.util.numpy_to_ptr(host)
    with pytest.raises(HcclUsageError, match="host memory"):
        API.raising(t.handle, x.addr, hptr, 64, FP32, SUM)
    z = dev.malloc(256)
    z.close()
    with pytest.raises(HcclUsageError, match="freed"):
        API.raising(t.handle, z.addr, y.addr, 64, FP32, SUM)
    assert len(pyhcomm.record.tasks(kind="LocalReduce")) == 1


def test_other_device_memory_is_para():
    dev, _, t = host_env()
    with Device(1) as d1:
        other = d1.malloc(256)
        mine = dev.malloc(256)
        with pytest.raises(HcclUsageError, match="device 1") as e:
            API.raising(t.handle, mine.addr, other.addr, 4, D.HCOMM_DATA_TYPE_INT32, SUM)
        assert e.value.code == PARA


def test_partial_overlap_is_para():
    dev, _, t = host_env()
    buf = dev.malloc(256)
    FP16 = D.HCOMM_DATA_TYPE_FP16
    assert API(t.handle, buf.addr + 2, buf.addr, 8, FP16, SUM) == PARA
    assert API(t.handle, buf.addr, buf.addr + 14, 8, FP16, SUM) == PARA
    assert API(t.handle, buf.addr, buf.addr + 16, 8, FP16, SUM) == OK        # adjacent
    with pytest.raises(HcclUsageError, match="overlap"):
        API.raising(t.handle, buf.addr + 2, buf.addr, 8, FP16, SUM)


def test_memory_freed_before_the_task_fails_the_stream():
    dev, _, t = host_env()
    x, y = dev.malloc(256), dev.malloc(256)
    assert API(t.handle, x.addr, y.addr, 4, D.HCOMM_DATA_TYPE_FP32, SUM) == OK
    y.close()
    with pytest.raises(pyhcomm.HcclError):
        t.synchronize()


# -- Pythonic tier ---------------------------------------------------------------------------
def test_pythonic_local_reduce():
    dev, _, t = host_env()
    a = np.array([1.5, -2, 3, 4], ml_dtypes.bfloat16)
    b = np.array([1, 1, 1, 8], ml_dtypes.bfloat16)
    dst, src = upload(dev, a), upload(dev, b)
    t.local_reduce(dst, src, dtype=ml_dtypes.bfloat16)                       # count from the buffers, SUM
    t.local_reduce(dst, src, dtype=D.HCOMM_DATA_TYPE_BFP16, op="max")
    t.local_reduce(dst.addr, src.addr, 2, np.dtype(ml_dtypes.bfloat16), O.HCOMM_REDUCE_MIN)
    t.synchronize()
    assert dst.read(ml_dtypes.bfloat16).astype(np.float32).tolist() == [1, 1, 4, 12]   # [2.5, -1, 4, 12] -> max -> min of 2
    i = upload(dev, np.array([100, -100], np.int8))
    t.local_reduce(i, i, dtype=np.int8, op=pyhcomm.HcclReduceOp.HCCL_REDUCE_SUM)
    t.synchronize()
    assert i.read(np.int8).tolist() == [-56, 56]


def test_pythonic_errors():
    dev, _, t = host_env()
    dst, src = dev.malloc(16), dev.malloc(32)
    with pytest.raises(HcclUsageError, match="give count"):
        t.local_reduce(dst, src, dtype=np.float32)
    with pytest.raises(HcclUsageError, match="give count"):
        t.local_reduce(dev.malloc(6), dev.malloc(6), dtype=np.float32)
    with pytest.raises(HcclUsageError) as e:
        t.local_reduce(dst, dst, dtype=np.float64)
    assert e.value.code == HcclResult.HCCL_E_PARA and e.value.api == "HcommLocalReduceOnThread"
    with pytest.raises(HcclUsageError, match="no HcommDataType"):
        t.local_reduce(dst, dst, dtype=np.complex64)
    with pytest.raises(HcclUsageError, match="not sum"):
        t.local_reduce(dst, dst, dtype=np.float32, op="avg")
    with pytest.raises(TypeError):
        t.local_reduce(dst, dst)
    with pytest.raises(HcclUsageError) as e:
        t.local_reduce(dst, dst, dtype=np.float32, op="prod")
    assert e.value.code == HcclResult.HCCL_E_PARA


def test_pythonic_950_kernel(product):
    dev, _, t = device_env(product)
    a = np.array([2**63 - 1, 5, -7], np.int64)
    b = np.array([3, -2, -9], np.int64)
    dst, src = upload(dev, a), upload(dev, b)
    stream = dev.stream()
    stream.launch(lambda: t.local_reduce(dst, src, dtype=np.int64, op="prod"))
    dev.synchronize()
    assert dst.read(np.int64).tolist() == [2**63 - 3, -10, 63]
    with pytest.raises(HcclNotSupportedError):                # from the host on Atlas 350
        t.local_reduce(dst, src, 2, dtype=np.float32)


# -- backend ---------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16,
                                      ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", [SUM, PROD, MAX, MIN], ids=lambda o: O(o).name)
def test_backend_narrow_floats_exhaustive_pairs_or_random(np_dtype, op):
    dt = np.dtype(np_dtype)
    be = pyhcomm.current_sim().backend
    if dt.itemsize == 1:                                    # every pair of fp8 values
        pairs = np.array(list(itertools.product(range(256), repeat=2)), dtype=np.uint8)
        a, b = pairs[:, 0].copy().view(dt), pairs[:, 1].copy().view(dt)
    else:
        a, b = operands(dt, seed=op, random_n=1 << 16)
    want = oracle(a, b, op)
    da, db = be.allocate(a.nbytes), be.allocate(b.nbytes)
    da.array[:] = a.view(np.uint8)
    db.array[:] = b.view(np.uint8)
    be.reduce(da, 0, db, 0, len(a), dt, op)
    got = da.array.view(dt)
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def test_backend_chunks_and_offsets(monkeypatch):
    monkeypatch.setattr(cpu_backend, "REDUCE_CHUNK", 7)
    be = pyhcomm.current_sim().backend
    rng = np.random.default_rng(5)
    for dt in (np.dtype(np.float16), np.dtype(np.int32), np.dtype(ml_dtypes.bfloat16)):
        a = rng.standard_normal(100).astype(dt) if dt.kind != "i" else rng.integers(-9, 9, 100, dtype=dt)
        b = rng.standard_normal(100).astype(dt) if dt.kind != "i" else rng.integers(-9, 9, 100, dtype=dt)
        d, s = be.allocate(a.nbytes + 3), be.allocate(b.nbytes + 5)
        d.array[3:] = a.view(np.uint8)
        s.array[5:] = b.view(np.uint8)                 # unaligned element offsets
        be.reduce(d, 3, s, 5, 100, dt, SUM)
        np.testing.assert_array_equal(bits(d.array[3:].view(dt)), bits(oracle(a, b, SUM)))
        be.reduce(d, 3, s, 5, 0, dt, SUM)              # count 0 touches nothing


def test_sizes_match_the_size_table():
    for dt_v in red.DTYPES_950:
        assert NUMPY_DTYPE[dt_v].itemsize == DATA_TYPE_SIZE[dt_v]
