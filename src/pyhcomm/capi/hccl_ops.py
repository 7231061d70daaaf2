"""``hccl.h`` collectives (stream last), built on :mod:`pyhcomm.collectives`.

Each call checks its arguments, enqueues the algorithm on ``stream`` and returns at once;
synchronize ``stream`` for the result. Every rank of ``comm`` must make the same call.
"""
from __future__ import annotations

from ..collectives import allgather_mesh, run
from ..core import memory
from ..enums import DATA_TYPE_SIZE
from ..errors import para, ptr
from ..hccl import comm as _comm
from ._wrap import c_api

__all__ = ["HcclAllGather"]


def check_buffer(api: str, addr, nbytes: int, device: int, name: str) -> None:
    """A user buffer of a collective: non-NULL, wholly inside device memory of the rank's device."""
    if not addr:
        raise ptr(api, f"{name} is NULL")
    a = memory.device_map.find(addr)
    if a is None or a.device != device or addr + nbytes > a.end:
        raise para(api, f"{name} 0x{addr:x} + {nbytes} is not device memory of this rank's device {device}"
                        + (f" ({memory.describe_address(addr)})" if a is None else ""))


def check_common(api: str, comm, count, data_type, stream):
    """Check comm, count, data type and stream; return ``(Communicator, element size)``."""
    c = _comm.get_comm(comm, api)
    if not stream:
        raise ptr(api, "stream is NULL")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise para(api, f"count {count!r} must be a non-negative int")
    if data_type not in DATA_TYPE_SIZE:
        raise para(api, f"dataType {data_type!r} is not an HcclDataType")
    return c, DATA_TYPE_SIZE[data_type]


@c_api()
def HcclAllGather(sendBuf, recvBuf, sendCount, dataType, comm, stream):  # noqa: N803
    """Every rank's ``sendCount`` elements, in rank order, into every rank's ``recvBuf``."""
    api = "HcclAllGather"
    c, size = check_common(api, comm, sendCount, dataType, stream)
    nbytes = sendCount * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes * c.nranks, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, max(0, c.nranks - 2), allgather_mesh, sendBuf, recvBuf, nbytes, tag=api)
