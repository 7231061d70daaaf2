"""The timing model: a cost model per product, a discrete-event replay of the record on a virtual
clock, the alpha-beta closed forms it is checked against, and the outputs (the modeled time of
every collective call, a Perfetto / Chrome trace, a PNG timeline).

* :mod:`.costs`: :class:`CostModel` and :func:`cost_model` (every parameter and its source:
  docs/timing.md);
* :mod:`.engine`: the discrete-event engine (nodes, timed edges, flows sharing bandwidth);
* :mod:`.closed_form`: alpha-beta forms of the collective library's algorithms, derived from
  their descriptors' steps (:mod:`pyhcomm.collectives.algorithm`);
* :mod:`.timeline`, :mod:`.trace`, :mod:`.png`: the replay's result and its writers;
* :mod:`.bandwidth`: algbw and busbw of a call; :mod:`.region`: a caller's own collective timed
  as one call; :mod:`.bench`: ``python -m pyhcomm bench``, hccl_test's table, modeled.
"""
from .costs import CostModel, Link, cost_model  # noqa: F401
from .timeline import Arrow, CallTime, Timeline  # noqa: F401
from .trace import trace_dict, write_trace  # noqa: F401
from .region import region  # noqa: F401
