"""A collective library built only from HCOMM primitives (see :mod:`.context` for how each
product runs an algorithm)."""
from .allgather import allgather_mesh  # noqa: F401
from .context import CollectiveContext, context, run  # noqa: F401
