"""pyACL parity: binaries made from data, launches with host arguments, ptr_to_numpy's type codes,
and HcclEngineCtxGet's quiet miss."""
import logging
import struct

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl

from hcomm_testutil import read

KERNEL_SOURCE = b'''
import struct
from pyhcomm.sim.kernel import current_kernel

seen = []


def record_args(args):
    """Keep the argument bytes (and the block) the kernel got."""
    seen.append((bytes(args), current_kernel().block_idx))
'''


def test_create_binary_load_and_launch_with_host_args():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    src = np.frombuffer(KERNEL_SOURCE, dtype=np.uint8).copy()
    binary = acl.rt.create_binary(acl.util.numpy_to_ptr(src), src.nbytes)
    assert isinstance(binary, int) and binary                    # the binary alone, no ret (as pyACL)
    bin_handle, ret = acl.rt.binary_load(binary)
    assert ret == 0 and bin_handle
    func, ret = acl.rt.binary_get_function(bin_handle, "record_args")
    assert ret == 0
    stream, _ = acl.rt.create_stream()
    args = np.frombuffer(struct.pack("<QQ", 7, 9), dtype=np.uint8).copy()
    assert acl.rt.launch_kernel_with_host_args(func, 2, stream, [], acl.util.numpy_to_ptr(args), 16, [], 0) == 0
    args[:] = 0                                                  # the arguments were copied at the launch
    assert acl.rt.synchronize_stream(stream) == 0
    module = pyhcomm.current_sim().handles.kernels.get(bin_handle).module
    assert module.seen == [(struct.pack("<QQ", 7, 9), 0), (struct.pack("<QQ", 7, 9), 1)]
    assert acl.rt.destroy_binary(binary) == 0
    assert acl.rt.destroy_binary(binary) == pyhcomm.ACL_ERROR_INVALID_PARAM
    assert acl.rt.binary_load(binary) == (0, pyhcomm.ACL_ERROR_INVALID_PARAM)


def test_place_holders_point_at_device_copies_of_the_arguments():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    binary = acl.rt.create_binary(KERNEL_SOURCE, len(KERNEL_SOURCE))
    bin_handle, _ = acl.rt.binary_load(binary)
    func, _ = acl.rt.binary_get_function(bin_handle, "record_args")
    stream, _ = acl.rt.create_stream()
    blob = struct.pack("<Q", 0) + b"payload!"                    # slot 0 gets the address of the payload
    ret = acl.rt.launch_kernel_with_host_args(func, 1, stream, [], blob, len(blob),
                                              [{"addrOffset": 0, "dataOffset": 8}], 1)
    assert ret == 0 and acl.rt.synchronize_stream(stream) == 0
    module = pyhcomm.current_sim().handles.kernels.get(bin_handle).module
    got, _ = module.seen[0]
    (addr,) = struct.unpack_from("<Q", got)
    assert bytes(read(addr, 8)) == b"payload!" and got[8:] == b"payload!"
    bad = acl.rt.launch_kernel_with_host_args(func, 1, stream, [], blob, len(blob),
                                              [{"addrOffset": 12, "dataOffset": 0}], 1)
    assert bad == pyhcomm.ACL_ERROR_INVALID_PARAM                # the slot runs past the arguments
    assert acl.rt.launch_kernel_with_host_args(func, 1, stream, [], blob, len(blob), [], 1) == \
        pyhcomm.ACL_ERROR_INVALID_PARAM


def test_bad_binaries():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    assert acl.rt.create_binary(0, 10) == 0
    broken = acl.rt.create_binary(b"def (:", 6)
    assert acl.rt.binary_load(broken) == (0, pyhcomm.ACL_ERROR_INVALID_FILE)


def test_ptr_to_numpy_refuses_codes_that_are_not_number_types():
    assert acl.init() == 0
    h, _ = acl.rt.malloc_host(64)
    for code in (17, 18, 256):                                   # object, bytes, an extension's number
        with pytest.raises(ValueError, match="not a numpy type number"):
            acl.util.ptr_to_numpy(h, (4,), code)
    assert acl.util.ptr_to_numpy(h, (8,), np.int64(12)).dtype == np.float64


def test_engine_ctx_get_of_a_missing_context_is_not_an_error(caplog):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (comm,) = pyhcomm.HcclCommInitAll([0])
    with caplog.at_level(logging.INFO, logger="pyhcomm"):
        assert pyhcomm.HcclEngineCtxGet(comm, "op_tag", pyhcomm.COMM_ENGINE_AICPU_TS) == \
            (pyhcomm.HCCL_E_NOT_FOUND, 0, 0)
    (rec,) = [r for r in caplog.records if "HcclEngineCtxGet" in r.getMessage()]
    assert rec.levelno == logging.INFO and "create it with HcclEngineCtxCreate" in rec.getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pyhcomm"):
        assert pyhcomm.HcclEngineCtxGet(comm, None, pyhcomm.COMM_ENGINE_AICPU_TS)[0] == pyhcomm.HCCL_E_PTR
    assert [r.levelno for r in caplog.records] == [logging.ERROR]     # other failures stay errors


def _pair(result):
    """pyACL's ``value, ret``: an int value (nonzero) and 0."""
    value, ret = result
    assert ret == 0 and isinstance(value, int) and not isinstance(value, bool) and value, result
    return value


def test_return_shapes_of_the_calls_the_examples_and_the_seed_flow_use():
    """pyACL's documented shapes: ``ret`` alone, ``value, ret`` (value first, unlike pyhccl), or
    the value alone for ``acl.util``, ``get_soc_name``, ``get_recent_err_msg`` and ``create_binary``."""
    assert acl.init() == 0
    assert _pair(acl.rt.get_device_count()) >= 8
    assert acl.rt.set_device(0) == 0
    assert isinstance(acl.get_soc_name(), str) and isinstance(acl.get_recent_err_msg(), str)
    stream = _pair(acl.rt.create_stream())
    dev = _pair(acl.rt.malloc(64, 1))                              # ACL_MEM_MALLOC_HUGE_ONLY
    host = _pair(acl.rt.malloc_host(64))
    cfg_dev = _pair(acl.rt.malloc_with_cfg(64, 0, {}))
    assert acl.rt.memcpy(dev, 64, host, 64, 1) == 0               # ACL_MEMCPY_HOST_TO_DEVICE
    assert acl.rt.memset(dev, 64, 0, 64) == 0
    assert acl.rt.synchronize_stream(stream) == 0 and acl.rt.synchronize_device() == 0
    assert isinstance(acl.util.numpy_to_ptr(np.zeros(4, np.uint8)), int)
    assert isinstance(acl.util.bytes_to_ptr(b"abcd"), int)
    assert acl.util.ptr_to_bytes(host, 4) == bytes(4)
    assert acl.util.ptr_to_numpy(host, (16,), 11).dtype == np.float32      # NPY_FLOAT32
    binary = _pair(acl.rt.binary_load_from_file("pyhcomm.demo_kernels", []))
    names = [n for n in dir(__import__("pyhcomm.demo_kernels", fromlist=["_"])) if not n.startswith("_")]
    func = _pair(acl.rt.binary_get_function(binary, names[0]))
    args = _pair(acl.rt.kernel_args_init(func))
    _pair(acl.rt.kernel_args_append(args, acl.util.bytes_to_ptr(bytes(8)), 8))
    assert acl.rt.kernel_args_finalize(args) == 0
    src = np.frombuffer(KERNEL_SOURCE, dtype=np.uint8).copy()
    blob = acl.rt.create_binary(acl.util.numpy_to_ptr(src), src.nbytes)
    assert isinstance(blob, int) and blob and acl.rt.destroy_binary(blob) == 0
    for ptr in (dev, cfg_dev):
        assert acl.rt.free(ptr) == 0
    assert acl.rt.free_host(host) == 0 and acl.rt.destroy_stream(stream) == 0
    assert acl.rt.reset_device(0) == 0 and acl.finalize() == 0


#: numpy's NPY_TYPES numbers of the number types (as pyACL's ptr_to_numpy takes them) on a 64-bit
#: Linux host (NPY_LONG and NPY_LONGLONG are both 64 bits there).
NPY_NUMBERS = {0: np.bool_, 1: np.int8, 2: np.uint8, 3: np.int16, 4: np.uint16, 5: np.int32, 6: np.uint32,
               7: np.int64, 8: np.uint64, 9: np.int64, 10: np.uint64, 11: np.float32, 12: np.float64,
               13: np.longdouble, 14: np.complex64, 15: np.complex128, 16: np.clongdouble, 23: np.float16}


def test_ptr_to_numpy_takes_every_numpy_number_type_code():
    assert acl.init() == 0
    h, _ = acl.rt.malloc_host(256)
    for code, want in NPY_NUMBERS.items():
        view = acl.util.ptr_to_numpy(h, (2,), code)
        assert view.dtype == np.dtype(want) and view.shape == (2,), code
