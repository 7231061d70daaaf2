"""A collective library built only from HCOMM primitives (see :mod:`.context` for how each
product runs an algorithm, :mod:`.patterns` for the handshakes the algorithms share).

Each algorithm family is a descriptor (:mod:`.algorithm`) in the catalogue (:mod:`.algorithms`);
:mod:`.selector` chooses one per call and :mod:`.dispatch` runs it for the tiers
(docs/algorithms.md)."""
from .allgather import allgather_mesh  # noqa: F401
from .context import CollectiveContext, context, run  # noqa: F401
from .pairwise import alltoall, alltoallv, batch_send_recv  # noqa: F401,E402
from .reduce import barrier, reduce_to_root  # noqa: F401,E402
from .broadcast import broadcast  # noqa: F401,E402
from .scatter import scatter_ring  # noqa: F401,E402
from .allgather import allgather_ring, allgatherv_ring, ring_peers  # noqa: F401,E402
from .reduce_scatter import reduce_scatter_mesh, reduce_scatter_ring, reduce_scatterv_ring  # noqa: F401,E402
from .all_reduce import all_reduce_ring  # noqa: F401,E402
