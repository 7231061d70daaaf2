"""``acl.rt``: devices, streams, memory and kernel launch with pyACL's names."""
from __future__ import annotations

from ..aclrt import device as _d
from ..aclrt import kernel as _k
from ..aclrt import memory as _m
from ..aclrt import notify as _n
from ..aclrt import stream as _s
from ..aclrt import vmm as _v
from ._wrap import acl_call

ACL_DEVICE, ACL_HOST = 0, 1

set_device = acl_call()(_d.aclrtSetDevice)
reset_device = acl_call()(_d.aclrtResetDevice)
get_device = acl_call(0)(_d.aclrtGetDevice)
get_device_count = acl_call(0)(_d.aclrtGetDeviceCount)


def get_soc_name():
    """The SoC name of the simulated product (pyACL also has it as ``acl.get_soc_name``)."""
    return _d.aclrtGetSocName()


@acl_call(0)
def get_run_mode():
    """Always ``ACL_HOST`` (1): the simulated host drives the devices."""
    return ACL_HOST


create_stream = acl_call(0)(_s.aclrtCreateStream)
destroy_stream = acl_call()(_s.aclrtDestroyStream)
synchronize_stream = acl_call()(_s.aclrtSynchronizeStream)
synchronize_stream_with_timeout = acl_call()(_s.aclrtSynchronizeStreamWithTimeout)
synchronize_device = acl_call()(_s.aclrtSynchronizeDevice)
synchronize_device_with_timeout = acl_call()(_s.aclrtSynchronizeDeviceWithTimeout)

malloc = acl_call(0)(_m.aclrtMalloc)
malloc_with_cfg = acl_call(0)(_m.aclrtMallocWithCfg)
malloc_host = acl_call(0)(_m.aclrtMallocHost)
free = acl_call()(_m.aclrtFree)
free_host = acl_call()(_m.aclrtFreeHost)
memcpy = acl_call()(_m.aclrtMemcpy)
memcpy_async = acl_call()(_m.aclrtMemcpyAsync)
memset = acl_call()(_m.aclrtMemset)
memset_async = acl_call()(_m.aclrtMemsetAsync)

reserve_mem_address = acl_call(0)(_v.aclrtReserveMemAddress)
release_mem_address = acl_call()(_v.aclrtReleaseMemAddress)
malloc_physical = acl_call(0)(_v.aclrtMallocPhysical)
free_physical = acl_call()(_v.aclrtFreePhysical)
map_mem = acl_call()(_v.aclrtMapMem)
unmap_mem = acl_call()(_v.aclrtUnmapMem)
mem_get_allocation_granularity = acl_call(0)(_v.aclrtMemGetAllocationGranularity)

binary_load_from_file = acl_call(0)(_k.aclrtBinaryLoadFromFile)
binary_unload = acl_call()(_k.aclrtBinaryUnLoad)
binary_get_function = acl_call(0)(_k.aclrtBinaryGetFunction)
kernel_args_init = acl_call(0)(_k.aclrtKernelArgsInit)
kernel_args_append = acl_call(0)(_k.aclrtKernelArgsAppend)
kernel_args_finalize = acl_call()(_k.aclrtKernelArgsFinalize)
launch_kernel_with_config = acl_call()(_k.aclrtLaunchKernelWithConfig)
launch_kernel_with_host_args = acl_call()(_k.aclrtLaunchKernelWithHostArgs)
binary_load = acl_call(0)(_k.aclrtBinaryLoad)
destroy_binary = acl_call()(_k.aclrtDestroyBinary)


def create_binary(data, data_len):
    """``binary = acl.rt.create_binary(data, data_len)``: no ``ret`` (as pyACL); 0 on failure."""
    out = acl_call(0)(_k.aclrtCreateBinary)(data, data_len)
    return out[0]

create_notify = acl_call(0)(_n.aclrtCreateNotify)
get_notify_id = acl_call(0)(_n.aclrtGetNotifyId)
record_notify = acl_call()(_n.aclrtRecordNotify)
wait_and_reset_notify = acl_call()(_n.aclrtWaitAndResetNotify)
destroy_notify = acl_call()(_n.aclrtDestroyNotify)
