"""``hccl_types.h``: the root info of ``HcclGetRootInfo`` and the constants around it."""
from __future__ import annotations

from .cstruct import CStruct, raw_bytes

HCCL_ROOT_INFO_BYTES = 4108


class HcclRootInfo(CStruct):
    """``HcclRootInfo``: ``internal`` is ``char[4108]``; ``bytes(root_info)`` gives them."""

    _raws_ = (("internal", HCCL_ROOT_INFO_BYTES),)
    internal = raw_bytes("internal", HCCL_ROOT_INFO_BYTES)

    def __bytes__(self) -> bytes:
        return bytes(self._internal)
