"""The flat C tier: C names, pyhccl's calling conventions, return codes instead of exceptions.

Grouped like the C headers: :mod:`.hccl_comm` (``hccl_comm.h``), :mod:`.hccl_res`
(``hccl_res.h``), :mod:`.hccl_channel` (``hccl_channel.h``), :mod:`.hccl_rank_graph`
(``hccl_rank_graph.h``), :mod:`.hcomm_primitives` (``hcomm_primitives.h``), :mod:`.hccl_ops`,
:mod:`.hccl_ops_v` and :mod:`.hccl_group` (``hccl.h`` collectives and group calls), :mod:`.ccu` (the CCU's calls); :mod:`.not_modeled` holds the calls that return ``HCCL_E_NOT_SUPPORT``,
:mod:`.pyhccl_module` the helpers of the pyhccl module itself.
"""
from . import (ccu, hccl_channel, hccl_comm, hccl_group, hccl_launch, hccl_ops, hccl_ops_v, hccl_rank_graph,  # noqa: F401
               hccl_res, hccl_team, hcomm_channel, hcomm_primitives, hcomm_res, not_modeled, pyhccl_module)

_MODULES = (hccl_comm, hccl_res, hcomm_primitives, hccl_channel, hccl_ops, hccl_ops_v, hccl_group, hccl_rank_graph,
            hccl_team, hcomm_res, hcomm_channel, hccl_launch, ccu, not_modeled, pyhccl_module)
__all__ = [name for m in _MODULES for name in m.__all__]
globals().update({name: getattr(m, name) for m in _MODULES for name in m.__all__})
