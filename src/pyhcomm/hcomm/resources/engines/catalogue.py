"""The catalogue of engines: the families pyhcomm models (:data:`BUILTIN`) and, per Sim, an
:class:`EngineTable` that describes them for the Sim's product, plus any family registered in
that Sim (:func:`register`: a test's toy engine, a new engine before it joins :data:`BUILTIN`).

Nothing is filled at import: a table is made on first use in each Sim, and its descriptions are
rebuilt when the product changes (the product cannot change while threads exist). Every rule
about engines asks here: :func:`check_engine` (is the value an engine: ``HCCL_E_PARA``),
:func:`supported` (which engines an API accepts on this product: ``HCCL_E_NOT_SUPPORT``),
:func:`collective_engine`, :func:`config_engine`, :func:`expansion_engine`.
"""
from __future__ import annotations

from .... import args
from ....errors import not_support, para
from ....sim import LayerState
from ....sim import current_sim as _sim
from . import aicpu, aiv, ccu, cpu
from .base import DEVICE, HOST, Engine

#: The engine families pyhcomm models: each a function ``engines(product)`` giving its engines'
#: descriptions on ``product`` (one module per family; a new engine adds its module here).
BUILTIN = (cpu.engines, aicpu.engines, aiv.engines, ccu.engines)


class EngineTable(LayerState):
    """The engines of one Sim (see the module docstring): the families it describes, and their
    descriptions for the product they were last asked about (HCOMM resources' state in a Sim:
    ``sim.layer_state(EngineTable)``)."""

    def __init__(self, families=BUILTIN):
        self.families = list(families)
        self._product = None
        self._engines: dict = {}

    def register(self, family, product) -> None:
        """Add an engine family: a callable ``family(product)`` giving its :class:`Engine`
        descriptions (an engine module's ``engines``, or a module that has one). Its engines
        exist from now on, on every product; ``ValueError`` (and no change) when one takes a
        value or name another engine has on ``product``."""
        family = getattr(family, "engines", family)
        if not callable(family):
            raise TypeError(f"an engine family is a callable family(product) -> engines, not {family!r}")
        engines = self._describe(product, self.families + [family])
        self.families.append(family)
        self._product, self._engines = product, engines

    def by_value(self, product) -> dict:
        """``{value: Engine}`` on ``product`` (kept until another product is asked about)."""
        if product is not self._product:
            self._engines = self._describe(product, self.families)
            self._product = product
        return self._engines

    def describe(self, product) -> dict:
        """``{value: Engine}`` on ``product``, made afresh (nothing kept)."""
        return self._describe(product, self.families)

    @staticmethod
    def _describe(product, families) -> dict:
        out: dict = {}
        names: set = set()
        for family in families:
            for e in family(product):
                if not isinstance(e, Engine):
                    raise TypeError(f"engine family {family!r} gave {e!r}, not an Engine")
                if e.value in out or e.name in names:
                    raise ValueError(f"engine {e.name} ({e.value}): the value or name is already taken "
                                     f"by {out.get(e.value, e.name)!r}")
                out[e.value] = e
                names.add(e.name)
        return dict(sorted(out.items()))


def engine_table(sim=None) -> EngineTable:
    """The :class:`EngineTable` of ``sim`` (default: the current one), made on first use."""
    return (sim if sim is not None else _sim()).layer_state(EngineTable)


def _table(sim=None) -> dict:
    """``{value: Engine}`` of ``sim`` (default: the current one) on its product."""
    sim = sim if sim is not None else _sim()
    return engine_table(sim).by_value(sim.runtime.product)


def register(family, sim=None) -> None:
    """Register an engine family in ``sim`` (default: the current Sim): :meth:`EngineTable.register`."""
    sim = sim if sim is not None else _sim()
    engine_table(sim).register(family, sim.runtime.product)


def engines(product=None, sim=None) -> list:
    """Every engine of ``sim`` (default: the current one) on ``product`` (default: its own), by value."""
    sim = sim if sim is not None else _sim()
    if product is None or product is sim.runtime.product:
        return list(_table(sim).values())
    return list(engine_table(sim).describe(product).values())


def find(value) -> Engine | None:
    """The engine of ``value`` (an int or an :class:`Engine`) on the current product, or None."""
    return _table().get(int(value))


def _values_text(values) -> str:
    values = sorted(values)
    if values and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(map(str, values))


def check_engine(engine, api: str) -> Engine:
    """The :class:`Engine` of a ``CommEngine`` argument; ``HCCL_E_PARA`` when no engine has that value."""
    if isinstance(engine, Engine):
        engine = engine.value
    value = args.integer(engine, api, "engine", -(1 << 64), args.UINT64_MAX)
    table = _table()
    e = table.get(value)
    if e is None:
        raise para(api, f"engine {value} is not a valid CommEngine ({_values_text(table)})")
    return e


def supported(engine: Engine, rule, api: str) -> None:
    """``HCCL_E_NOT_SUPPORT`` unless ``rule(engine)`` holds; the message names the engines for
    which it holds on this product."""
    if rule(engine):
        return
    product = _sim().runtime.product
    names = ", ".join(sorted(e.name for e in engines() if rule(e))) or "none"
    raise not_support(api, f"engine {engine.name} is not supported on {product.name} (supported: {names})")


def config_engine(engine: Engine, thread_type) -> Engine | None:
    """The engine whose threads ``HcclThreadAcquireWithConfig(engine, thread_type)`` makes."""
    key = (engine.value, thread_type)
    for e in engines():
        if any((int(v), t) == key for v, t in e.threads.config):
            return e
    return None


def config_pairs() -> str:
    """The (engine, thread type) pairs ``HcclThreadAcquireWithConfig`` accepts, in words."""
    from ....defs.res_defs import ThreadType
    table = _table()
    out = []
    for e in engines():
        for v, t in e.threads.config:
            named = table.get(int(v))
            out.append(f"{named.name if named else v} with {ThreadType(t).name}")
    return ", ".join(out)


def dedicated_engine() -> Engine:
    """The engine of the communicator's dedicated threads (``HcclDedicatedThreadAcquire``)."""
    return _one(lambda e: e.threads.dedicated, "dedicated threads")


def collective_engine(product=None) -> Engine:
    """The engine HCCL's collectives orchestrate on for ``product`` (default: the current one)."""
    return _one(lambda e: e.collectives, "HCCL's collectives", product)


def expansion_engine(mode) -> Engine | None:
    """The engine an ``HcclOpExpansionMode`` value names (None: none does)."""
    for e in engines():
        if int(mode) in {int(m) for m in e.expansion}:
            return e
    return None


def _one(rule, what: str, product=None) -> Engine:
    found = [e for e in engines(product) if rule(e)]
    if len(found) != 1:
        name = (product or _sim().runtime.product).name
        raise LookupError(f"{name}: {len(found)} engines for {what} ({', '.join(e.name for e in found)}), not one")
    return found[0]


# -- python -m pyhcomm products ----------------------------------------------------------------------------------


def _short(e: Engine) -> str:
    return e.name.replace("COMM_ENGINE_", "")


def _protocols(ps) -> str:
    return ",".join(sorted(p.name.replace("COMM_PROTOCOL_", "") for p in ps)) or "-"


def _runs(kinds: frozenset) -> str:
    from .base import AIV_OPS, CCU_OPS, CHANNEL_OPS, FENCE, HOST_NBI, LOCAL_OPS, THREAD_SYNC
    out, left = [], set(kinds)
    for word, group in (("local", LOCAL_OPS), ("notify", THREAD_SYNC), ("channel", CHANNEL_OPS), ("nbi", HOST_NBI),
                        ("fence", FENCE), ("aiv-kernel", AIV_OPS), ("ccu", CCU_OPS)):
        if group <= left:
            out.append(word)
            left -= group
    return ",".join(out + sorted(left)) or "-"


def engine_rows(product) -> list:
    """One row per engine of ``product``: (engine, side, threads, channel protocols, context memory,
    task kinds it runs (by group), submit cost, what it is)."""
    rows = []
    for e in engines(product):
        t = e.threads
        threads = "+".join(w for w, on in (("acquire", t.acquire), ("stream", t.with_stream),
                                           ("dedicated", t.dedicated)) if on) or "exported only"
        if t.any:
            threads += f" ({t.notify_max} notifies)"
        protocols = _protocols(e.channels.protocols)
        if not product.hcomm:
            protocols = f"HCCL only: {_protocols(e.channels.library)}" if e.channels.library else "-"
        submit = e.submit.cost + (f"/{e.submit.batch_cost}" if e.submit.batch_cost else "")
        rows.append((_short(e), e.side, threads, protocols, e.context, _runs(e.runs), submit,
                     e.doc + (" [HCCL's collectives]" if e.collectives else "")))
    return rows


def engines_text(products) -> str:
    """The engines of each product, for ``python -m pyhcomm products`` (products whose engines are
    alike share one table)."""
    head = ("engine", "side", "threads", "channel protocols", "context", "runs", "submit cost", "")
    groups: dict = {}
    for p in products:
        groups.setdefault(tuple(engine_rows(p)), []).append(p.name)
    lines = []
    for rows, names in groups.items():
        rows = [head] + list(rows)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines.append(", ".join(names) + ":")
        for r in rows:
            lines.append(("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip())
    return "\n".join(lines)


__all__ = ["BUILTIN", "EngineTable", "engine_table", "register", "engines", "find", "check_engine", "supported",
           "config_engine", "config_pairs", "dedicated_engine", "collective_engine", "expansion_engine",
           "engines_text", "HOST", "DEVICE"]
