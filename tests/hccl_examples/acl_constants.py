"""The acl header values the ported examples use. pyACL exports no constants: its programs define
the values of ``acl_base.h`` / ``acl_rt.h`` they need themselves, as here (the same file runs on a
real machine). ``test_hccl_examples`` checks them against pyhcomm's enums."""

ACL_MEM_MALLOC_HUGE_FIRST = 0                # aclrtMemMallocPolicy
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEMCPY_HOST_TO_DEVICE = 1                # aclrtMemcpyKind
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE = 1     # aclrtLaunchKernelAttrId
ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE = 3
ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7
ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US = 8
ACL_RT_ENGINE_TYPE_AIV = 1                   # aclrtEngineType
ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE = 3   # aclrtBinaryLoadOptionType
NPY_FLOAT32 = 11                             # numpy's type numbers, as acl.util.ptr_to_numpy takes them
NPY_UBYTE = 2
