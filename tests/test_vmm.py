"""Virtual memory (aclrtReserveMemAddress, aclrtMallocPhysical, aclrtMapMem and their inverses) and
HCCL's zero-copy calls on it (HcclCommSetMemoryRange, HcclCommActivateCommMemory and their
inverses): the documented steps, the bytes, and the code of every refusal."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl

E, R = pyhcomm.AclError, pyhcomm.HcclResult
G = 2 << 20                 # the granularity
PROP = {"handleType": 0, "allocationType": 0, "memAttr": 0, "location": {"id": 0, "type": 1}, "reserve": 0}
H2D, D2H = 1, 2


@pytest.fixture
def dev0():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0


def _write(ptr, data: np.ndarray):
    assert acl.rt.memcpy(ptr, data.nbytes, acl.util.numpy_to_ptr(data), data.nbytes, H2D) == 0


def _read(ptr, n):
    out = np.zeros(n, np.uint8)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, D2H)
    return ret, out


def _mapped(size=G):
    va, ret = acl.rt.reserve_mem_address(2 * size, 0, 0, 0)
    assert ret == 0 and va % G == 0
    handle, ret = acl.rt.malloc_physical(size, PROP, 0)
    assert ret == 0 and handle
    assert acl.rt.map_mem(va, size, 0, handle, 0) == 0
    return va, handle


# -- the seven steps ---------------------------------------------------------------------------------------
def test_mapped_addresses_are_device_memory_backed_by_the_physical_memory(dev0):
    va, handle = _mapped()
    x = np.arange(256, dtype=np.uint8)
    _write(va + 4096, x)
    assert _read(va + 4096, 256)[1].tolist() == x.tolist()
    va2, ret = acl.rt.reserve_mem_address(G, 0, 0, 0)     # a second view of the same physical memory
    assert ret == 0 and acl.rt.map_mem(va2, G, 0, handle, 0) == 0
    assert _read(va2 + 4096, 256)[1].tolist() == x.tolist()
    assert acl.rt.mem_get_allocation_granularity(PROP, 0) == (G, 0)
    for v in (va, va2):
        assert acl.rt.unmap_mem(v) == 0
    ret, _ = _read(va + 4096, 256)                          # unmapped: no memory there any more
    assert ret == E.ACL_ERROR_RT_PARAM_INVALID and "was unmapped (aclrtUnmapMem)" in acl.get_recent_err_msg()
    assert acl.rt.free_physical(handle) == 0
    assert acl.rt.release_mem_address(va) == 0 and acl.rt.release_mem_address(va2) == 0


def test_refusals_of_the_virtual_memory_calls(dev0):
    bad = E.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.reserve_mem_address(0, 0, 0, 0)[1] == bad                 # size 0
    assert acl.rt.reserve_mem_address(G, 4096, 0, 0)[1] == bad              # alignment is reserved
    assert acl.rt.reserve_mem_address(G, 0, 0, 2)[1] == bad                 # flags: 0 or 1
    assert acl.rt.malloc_physical(G + 1, PROP, 0)[1] == bad                 # not whole granules
    assert acl.rt.malloc_physical(G, None, 0)[1] == E.ACL_ERROR_INVALID_PARAM
    assert acl.rt.malloc_physical(G, dict(PROP, location={"id": 0, "type": 0}), 0)[1] == bad    # host memory
    assert acl.rt.malloc_physical(G, dict(PROP, handleType=1), 0)[1] == bad
    va, handle = _mapped()
    assert acl.rt.map_mem(va, G, 0, handle, 0) == bad                      # over a mapping
    assert acl.rt.map_mem(va + G, G, 4096, handle, 0) == bad               # offset is reserved
    assert acl.rt.map_mem(va + G + 4096, G, 0, handle, 0) == bad           # not aligned
    assert acl.rt.map_mem(va + G, 2 * G, 0, handle, 0) == bad              # past the reservation
    assert acl.rt.map_mem(va + G, G, 0, 0xDEAD00, 0) == bad                # not physical memory
    assert acl.rt.free_physical(handle) == bad and "still mapped" in acl.get_recent_err_msg()
    assert acl.rt.release_mem_address(va) == bad and "aclrtUnmapMem first" in acl.get_recent_err_msg()
    assert acl.rt.unmap_mem(va + G) == bad                                  # no mapping starts there
    assert acl.rt.release_mem_address(va + G) == bad                        # no reservation starts there
    assert acl.rt.unmap_mem(0) == E.ACL_ERROR_INVALID_PARAM


def test_expect_ptr_reserves_the_addresses_asked_for(dev0):
    va, ret = acl.rt.reserve_mem_address(G, 0, 0, 0)
    assert ret == 0
    want = va + 8 * G                                       # further up the same device's range
    got, ret = acl.rt.reserve_mem_address(G, 0, want, 0)
    assert (got, ret) == (want, 0)
    assert acl.rt.reserve_mem_address(G, 0, want, 0)[1] == E.ACL_ERROR_RT_MEMORY_ALLOCATION     # taken
    assert acl.rt.reserve_mem_address(G, 0, want + 4096, 0)[1] == E.ACL_ERROR_RT_PARAM_INVALID  # misaligned
    p, ret = acl.rt.malloc(G, 0)                            # later allocations stay clear of it
    assert ret == 0 and not want <= p < want + G


# -- zero copy (Atlas A3) ------------------------------------------------------------------------------------
def _a3_comms(n=2):
    pyhcomm.set_product("Atlas A3")
    ret, comms = pyhcomm.HcclCommInitAll(list(range(n)))
    assert ret == 0
    assert acl.rt.set_device(0) == 0
    return comms


def test_memory_ranges_and_active_memory_on_atlas_a3():
    comms = _a3_comms()
    va, handle = _mapped()
    c = comms[0]
    assert pyhcomm.HcclCommSetMemoryRange(c, va, 2 * G, 0, 0) == 0
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 0, handle, 0) == 0
    from pyhcomm.hccl.zero_copy import is_active
    assert is_active(va + 64, 64) and not is_active(va + G, 64)
    assert pyhcomm.HcclCommUnsetMemoryRange(c, va) == R.HCCL_E_PARA           # active memory inside
    assert pyhcomm.HcclCommDeactivateCommMemory(c, va) == 0
    assert pyhcomm.HcclCommUnsetMemoryRange(c, va) == 0


def test_refusals_of_the_zero_copy_calls():
    comms = _a3_comms()
    va, handle = _mapped()
    c, P = comms[0], R.HCCL_E_PARA
    assert pyhcomm.HcclCommSetMemoryRange(0, va, G, 0, 0) == R.HCCL_E_PTR
    assert pyhcomm.HcclCommSetMemoryRange(c, va, G, 4096, 0) == P                # alignment is reserved
    assert pyhcomm.HcclCommSetMemoryRange(c, va, G, 0, 1) == P                   # flags too
    assert pyhcomm.HcclCommSetMemoryRange(c, 0, G, 0, 0) == P
    assert pyhcomm.HcclCommSetMemoryRange(c, va, 0, 0, 0) == P
    assert pyhcomm.HcclCommSetMemoryRange(c, va, 8 * G, 0, 0) == P               # past the reservation
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 0, handle, 0) == P       # no range set yet
    assert pyhcomm.HcclCommSetMemoryRange(c, va, 2 * G, 0, 0) == 0
    assert pyhcomm.HcclCommSetMemoryRange(c, va, G, 0, 0) == P                   # set twice
    assert pyhcomm.HcclCommSetMemoryRange(c, va + G, G, 0, 0) == P               # overlapping
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 1, handle, 0) == P       # offset is reserved
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 0, 0, 0) == R.HCCL_E_PTR
    assert pyhcomm.HcclCommActivateCommMemory(c, va + G, G, 0, handle, 0) == P   # not mapped there
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 0, handle, 0) == 0
    assert pyhcomm.HcclCommActivateCommMemory(c, va, G, 0, handle, 0) == P       # overlaps active memory
    assert pyhcomm.HcclCommDeactivateCommMemory(c, va + 64) == P                 # not its start
    assert pyhcomm.HcclCommUnsetMemoryRange(c, va + G) == P                      # no range starts there


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas 350"])
def test_zero_copy_is_atlas_a3_only(product):
    pyhcomm.set_product(product)
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == 0 and acl.rt.set_device(0) == 0
    va, handle = _mapped()
    assert pyhcomm.HcclCommSetMemoryRange(comms[0], va, G, 0, 0) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclCommActivateCommMemory(comms[0], va, G, 0, handle, 0) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclCommUnsetMemoryRange(comms[0], va) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclCommDeactivateCommMemory(comms[0], va) == R.HCCL_E_NOT_SUPPORT


def _gather_on_active_memory(comm):
    """Each rank's input and output in active memory of its device: an AllGather on them."""
    va, ret = acl.rt.reserve_mem_address(G, 0, 0, 0)
    prop = dict(PROP, location={"id": comm.rank, "type": 1})
    handle, _ = acl.rt.malloc_physical(G, prop, 0)
    assert ret == 0 and acl.rt.map_mem(va, G, 0, handle, 0) == 0
    assert pyhcomm.HcclCommSetMemoryRange(comm.handle, va, G, 0, 0) == 0
    assert pyhcomm.HcclCommActivateCommMemory(comm.handle, va, G, 0, handle, 0) == 0
    n = comm.size
    _write(va, np.full(256, comm.rank + 1, np.float32).view(np.uint8))
    stream, _ = acl.rt.create_stream()
    recv = va + 4096
    assert pyhcomm.HcclAllGather(va, recv, 256, pyhcomm.HCCL_DATA_TYPE_FP32, comm.handle, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return _read(recv, 256 * 4 * n)[1].view(np.float32)


def test_a_collective_on_active_memory():
    out = pyhcomm.launch(_gather_on_active_memory, 4, product="Atlas A3")
    for got in out:
        np.testing.assert_array_equal(got, np.repeat(np.arange(1, 5, dtype=np.float32), 256))
