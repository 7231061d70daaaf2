"""``hcomm_primitives.h``: the descriptor of ``HcommBatchTransferOnThread``.

``HcommBatchTransferDesc`` is ``transType`` and a 56-byte union ``transferInfoRaws``; the named
members read and write it at their C offsets: ``len`` / ``count`` (uint64 at 0), ``dst`` (8),
``src`` (16), ``reduceOp`` (uint32 at 24), ``dataType`` (28), and ``notifyIdx`` (uint32), which
sits at 0 for NOTIFY_RECORD, 24 for WRITE_WITH_NOTIFY and 32 for WRITE_REDUCE_WITH_NOTIFY.
"""
from __future__ import annotations

import struct
from enum import IntEnum

from .cstruct import CStruct, RawField, raw_bytes


class HcommTransferType(IntEnum):
    HCOMM_TRANSFER_TYPE_INVALID = -1
    HCOMM_TRANSFER_TYPE_WRITE = 0
    HCOMM_TRANSFER_TYPE_WRITE_REDUCE = 1
    HCOMM_TRANSFER_TYPE_WRITE_WITH_NOTIFY = 2
    HCOMM_TRANSFER_TYPE_WRITE_REDUCE_WITH_NOTIFY = 3
    HCOMM_TRANSFER_TYPE_READ = 4
    HCOMM_TRANSFER_TYPE_READ_REDUCE = 5
    HCOMM_TRANSFER_TYPE_NOTIFY_RECORD = 6


T = HcommTransferType
_NOTIFY_OFFSET = {T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD: 0, T.HCOMM_TRANSFER_TYPE_WRITE_WITH_NOTIFY: 24,
                  T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE_WITH_NOTIFY: 32}


class HcommBatchTransferDesc(CStruct):
    """One descriptor of ``HcommBatchTransferOnThread`` (see the module docstring)."""

    _raws_ = (("transferInfoRaws", 56),)
    _fields_ = (("transType", T.HCOMM_TRANSFER_TYPE_WRITE),)
    transferInfoRaws = raw_bytes("transferInfoRaws", 56)
    len = RawField("transferInfoRaws", 0, "Q")
    count = RawField("transferInfoRaws", 0, "Q")
    dst = RawField("transferInfoRaws", 8, "Q")
    src = RawField("transferInfoRaws", 16, "Q")
    reduceOp = RawField("transferInfoRaws", 24, "I")
    dataType = RawField("transferInfoRaws", 28, "I")

    @property
    def notifyIdx(self) -> int:
        return struct.unpack_from("<I", self._transferInfoRaws, _NOTIFY_OFFSET.get(self.transType, 0))[0]

    @notifyIdx.setter
    def notifyIdx(self, value: int) -> None:
        struct.pack_into("<I", self._transferInfoRaws, _NOTIFY_OFFSET.get(self.transType, 0), value)
