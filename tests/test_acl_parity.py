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
