"""C types of the headers pyhcomm simulates, with pyhccl's field names and defaults.

One module per header family: :mod:`.res_defs` (``hcomm_res_defs.h``, ``hcomm_channel.h``),
:mod:`.hccl_channel` (``hccl_channel.h``), :mod:`.rank_graph` (``hccl_rank_graph.h``),
:mod:`.hccl_types` (``hccl_types.h``, ``hccl_comm.h``), :mod:`.primitives`
(``hcomm_primitives.h``); :mod:`.cstruct` is the struct machinery they share.
"""
