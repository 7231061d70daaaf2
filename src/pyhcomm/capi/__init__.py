"""The flat C tier: C names, pyhccl's calling conventions, return codes instead of exceptions.

Grouped like the C headers: :mod:`.hccl_comm` (``hccl_comm.h``), :mod:`.hccl_res`
(``hccl_res.h``), :mod:`.hcomm_primitives` (``hcomm_primitives.h``).
"""
from .hccl_channel import *  # noqa: F401,F403
from .hccl_channel import __all__ as _d
from .hccl_comm import *  # noqa: F401,F403
from .hccl_comm import __all__ as _a
from .hccl_ops import *  # noqa: F401,F403  (last: the collectives use the modules above)
from .hccl_ops import __all__ as _e
from .hccl_ops_v import *  # noqa: F401,F403
from .hccl_ops_v import __all__ as _f
from .hccl_group import *  # noqa: F401,F403
from .hccl_group import __all__ as _g
from .hccl_res import *  # noqa: F401,F403
from .hccl_res import __all__ as _b
from .hcomm_primitives import *  # noqa: F401,F403
from .hcomm_primitives import __all__ as _c

__all__ = list(_a) + list(_b) + list(_c) + list(_d) + list(_e) + list(_f) + list(_g)
