"""Return codes and the exception hierarchy shared by every tier.

The core raises :class:`HcclError` subclasses; the flat C tier turns them into return codes
(after logging the message), the Pythonic tier lets them propagate.
"""
from __future__ import annotations

import logging
from enum import IntEnum

log = logging.getLogger("pyhcomm")
_logging_configured = False     # (configure_logging)


def configure_logging(level: str = "WARNING") -> None:
    """Print pyhcomm's log on stderr (as CANN's logs do) at ``level`` (``PYHCOMM_LOG_LEVEL``,
    parsed by :mod:`pyhcomm.config`). Done once, by the first Sim of the process (importing pyhcomm
    configures nothing); later calls change nothing."""
    global _logging_configured
    if _logging_configured:
        return
    _logging_configured = True
    level = level.upper()
    if level == "OFF":
        log.addHandler(logging.NullHandler())
        log.propagate = False
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[pyhcomm %(levelname)s] %(message)s"))
    log.addHandler(handler)
    log.setLevel(getattr(logging, level, logging.WARNING))



class HcclResult(IntEnum):
    """``HcclResult`` of ``hccl_types.h`` (HCOMM's ``HcommResult`` uses the same values)."""

    HCCL_SUCCESS = 0
    HCCL_E_PARA = 1
    HCCL_E_PTR = 2
    HCCL_E_MEMORY = 3
    HCCL_E_INTERNAL = 4
    HCCL_E_NOT_SUPPORT = 5
    HCCL_E_NOT_FOUND = 6
    HCCL_E_UNAVAIL = 7
    HCCL_E_SYSCALL = 8
    HCCL_E_TIMEOUT = 9
    HCCL_E_OPEN_FILE_FAILURE = 10
    HCCL_E_TCP_CONNECT = 11
    HCCL_E_ROCE_CONNECT = 12
    HCCL_E_TCP_TRANSFER = 13
    HCCL_E_ROCE_TRANSFER = 14
    HCCL_E_RUNTIME = 15
    HCCL_E_DRV = 16
    HCCL_E_PROFILING = 17
    HCCL_E_CCE = 18
    HCCL_E_NETWORK = 19
    HCCL_E_AGAIN = 20
    HCCL_E_REMOTE = 21
    HCCL_E_SUSPENDING = 22
    HCCL_E_OPRETRY_FAIL = 23
    HCCL_E_OOM = 24
    HCCL_E_IN_STATUS = 1041
    HCCL_E_RESERVED = 1042


class AclError(IntEnum):
    """``aclError`` values of CANN's ``acl_base_rt.h`` and ``rt_error_codes.h``."""

    ACL_SUCCESS = 0
    ACL_ERROR_INVALID_PARAM = 100000
    ACL_ERROR_UNINITIALIZE = 100001
    ACL_ERROR_REPEAT_INITIALIZE = 100002
    ACL_ERROR_INVALID_FILE = 100003
    ACL_ERROR_KERNEL_NOT_FOUND = 100029
    ACL_ERROR_REPEAT_FINALIZE = 100037
    ACL_ERROR_BAD_ALLOC = 200000
    ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003
    ACL_ERROR_FEATURE_UNSUPPORTED = 200006
    ACL_ERROR_INTERNAL_ERROR = 500000
    ACL_ERROR_RT_PARAM_INVALID = 107000
    ACL_ERROR_RT_INVALID_DEVICEID = 107001
    ACL_ERROR_RT_CONTEXT_NULL = 107002
    ACL_ERROR_RT_STREAM_CONTEXT = 107003
    ACL_ERROR_RT_ADDR_UNALIGNED = 107008
    ACL_ERROR_RT_INVALID_HANDLE = 107017
    ACL_ERROR_RT_WAIT_TIMEOUT = 107019
    ACL_ERROR_RT_TASK_TIMEOUT = 107020
    ACL_ERROR_RT_STREAM_ABORT = 107023
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
    ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
    ACL_ERROR_RT_MEMORY_FREE = 207002
    ACL_ERROR_RT_NO_NOTIFY_RESOURCE = 207009
    ACL_ERROR_RT_INTERNAL_ERROR = 507000
    ACL_ERROR_RT_STREAM_TASK_FULL = 507002
    ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004
    ACL_ERROR_RT_SYS_DMA = 507013
    ACL_ERROR_RT_AICPU_TIMEOUT = 507017
    ACL_ERROR_RT_AICPU_EXCEPTION = 507018
    ACL_ERROR_RT_DEV_SETUP_ERROR = 507033
    ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = 507034
    ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046
    ACL_ERROR_RT_DEVICE_MEM_ERROR = 507053


class HcclError(Exception):
    """An API failure: ``.code`` is the return code, ``.api`` the C name of the call."""

    def __init__(self, code: int, api: str, message: str):
        self.code = code
        self.api = api
        self.message = message
        super().__init__(f"{api}: {message}" if api else message)

    def __reduce__(self):
        return (type(self), (self.code, self.api, self.message))


class HcclUsageError(HcclError):
    """The caller passed something wrong (invalid argument, bad pointer, unknown handle)."""


class HcclNotSupportedError(HcclUsageError):
    """The call is not supported on this product, engine or side (``HCCL_E_NOT_SUPPORT``)."""


class HcclRuntimeError(HcclError):
    """Something failed while tasks ran: a timeout, a deadlock, a kernel or remote error."""


class HcclTimeoutError(HcclRuntimeError):
    """A wait or a synchronize ran past its timeout."""


class HcclDeadlockError(HcclRuntimeError):
    """Nothing can ever make progress: the blocked waits and their cause are in the message."""


class AclRuntimeError(HcclError):
    """An ``aclError`` from the acl runtime calls; ``.code`` is an :class:`AclError` value."""


_USAGE_CODES = {HcclResult.HCCL_E_PARA, HcclResult.HCCL_E_PTR, HcclResult.HCCL_E_NOT_FOUND}


def hccl_error(code: HcclResult, api: str, message: str) -> HcclError:
    """Build the exception of the right class for an HCCL return code."""
    if code == HcclResult.HCCL_E_NOT_SUPPORT:
        return HcclNotSupportedError(code, api, message)
    if code in _USAGE_CODES:
        return HcclUsageError(code, api, message)
    if code == HcclResult.HCCL_E_TIMEOUT:
        return HcclTimeoutError(code, api, message)
    return HcclRuntimeError(code, api, message)


def para(api: str, message: str) -> HcclError:
    return HcclUsageError(HcclResult.HCCL_E_PARA, api, message)


def ptr(api: str, message: str) -> HcclError:
    return HcclUsageError(HcclResult.HCCL_E_PTR, api, message)


def not_found(api: str, message: str) -> HcclError:
    return HcclUsageError(HcclResult.HCCL_E_NOT_FOUND, api, message)


def not_support(api: str, message: str) -> HcclError:
    return HcclNotSupportedError(HcclResult.HCCL_E_NOT_SUPPORT, api, message)


def acl_error(code: AclError, api: str, message: str) -> AclRuntimeError:
    return AclRuntimeError(code, api, message)


_ERROR_STRINGS = {
    HcclResult.HCCL_SUCCESS: "success",
    HcclResult.HCCL_E_PARA: "parameter error",
    HcclResult.HCCL_E_PTR: "empty pointer",
    HcclResult.HCCL_E_MEMORY: "memory error",
    HcclResult.HCCL_E_INTERNAL: "internal error",
    HcclResult.HCCL_E_NOT_SUPPORT: "not support feature",
    HcclResult.HCCL_E_NOT_FOUND: "not found specific resource",
    HcclResult.HCCL_E_UNAVAIL: "resource unavailable",
    HcclResult.HCCL_E_TIMEOUT: "timeout",
    HcclResult.HCCL_E_RUNTIME: "call runtime api fail",
    HcclResult.HCCL_E_REMOTE: "error cqe",
}


def HcclGetErrorString(code: int) -> str:
    """Return a short text for an ``HcclResult`` value (``hccl.h``)."""
    try:
        return _ERROR_STRINGS.get(HcclResult(code), HcclResult(code).name)
    except ValueError:
        return f"unknown error {code}"


def acl_code_of(exc: HcclError) -> AclError:
    """The ``aclError`` a synchronize call returns for a stream that failed with ``exc``."""
    if isinstance(exc, AclRuntimeError):
        return AclError(exc.code)
    if isinstance(exc, (HcclTimeoutError, HcclDeadlockError)):
        return AclError.ACL_ERROR_RT_TASK_TIMEOUT
    if exc.code == HcclResult.HCCL_E_MEMORY:
        return AclError.ACL_ERROR_RT_DEVICE_MEM_ERROR
    return AclError.ACL_ERROR_RT_INTERNAL_ERROR
