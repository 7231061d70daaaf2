"""Engines as objects: what each ``CommEngine`` may do on each product.

:mod:`.base` defines :class:`Engine` (sides, threads and their limits, channel protocols,
engine-context memory, how it submits work and what that costs, the task kinds it runs); one module
per engine family describes its engines per product (:mod:`.cpu`, :mod:`.aicpu`, :mod:`.aiv`,
:mod:`.ccu`); :mod:`.catalogue` lists the families and keeps, per Sim, the table every rule reads.
Adding an engine is one module plus its registration (docs/architecture.md, "Adding an engine").
"""
from .base import (AIV_OPS, CCU_OPS, CHANNEL_OPS, DEVICE, FENCE, HOST, HOST_NBI, LOCAL_OPS, THREAD_SYNC, Channels,
                   Engine, Submit, Threads)
from .catalogue import (BUILTIN, EngineTable, check_engine, collective_engine, config_engine, config_pairs,
                        dedicated_engine, engine_table, engines, engines_text, expansion_engine, find, register,
                        supported)

__all__ = ["Engine", "Threads", "Channels", "Submit", "HOST", "DEVICE", "LOCAL_OPS", "THREAD_SYNC", "CHANNEL_OPS",
           "HOST_NBI", "FENCE", "AIV_OPS", "CCU_OPS", "BUILTIN", "EngineTable", "engine_table", "register", "engines",
           "find", "check_engine", "supported", "config_engine", "config_pairs", "dedicated_engine", "collective_engine",
           "expansion_engine", "engines_text"]
