"""The cost model: what each link, engine and task costs on each simulated product.

Every number here is a parameter of the timing model (:mod:`pyhcomm.timing.replay`) and of the
closed forms (:mod:`pyhcomm.timing.closed_form`); docs/timing.md gives each one's public source,
or says that none exists and what was assumed instead. Units: seconds and bytes per second.

A :class:`CostModel` is frozen; ``model.with_values(task_dispatch=2e-6)`` gives a variant (for
what-if studies and for tests that want round numbers). :func:`cost_model` returns the model of a
product (by default the current Sim's).

What is modelled (the replay applies it; see there for how):

* links (:class:`Link`): a transfer of ``n`` bytes costs ``latency + n / bandwidth`` when alone;
  transfers that share a resource (:func:`pyhcomm.topology.link_resources`: a dedicated pair link
  or a device's port) share its bandwidth equally;
* device memory: a local copy moves ``n`` bytes at ``copy_bandwidth`` after its fixed
  ``copy_latency`` (an SDMA task), a local reduce at ``reduce_bandwidth`` after ``reduce_latency``;
  concurrent local operations of one device share the bandwidth (:meth:`CostModel.local_seconds`);
* per task: ``task_dispatch`` (the task scheduler starts a queued task), ``notify_record``,
  ``notify_wait`` (after its record arrived), ``notify_latency`` (a record reaching a notify of the
  same device; a channel notify crosses the link and costs the link's latency instead);
* orchestration: what issuing one entry costs its program is its engine's
  (:attr:`pyhcomm.hcomm.resources.engines.Engine.submit` names the parameter,
  :meth:`CostModel.submit_cost`): a host program (CPU, CPU_TS, CCU threads) spends
  ``host_submit`` per entry it issues; an AI CPU kernel (AICPU_TS threads) ``aicpu_submit`` per
  entry, or in batch mode ``batch_submit`` per task plus ``batch_fixed`` per batch, all of a
  batch's tasks reaching their streams together at ``HcommBatchModeEnd``; an entry of no engine
  costs what its side's program pays. An engine may declare a parameter of its own
  (``Submit.cost`` naming no field here, with its ``default``): it lives in ``engine_params``, and
  ``with_values`` sets it by name like any other; ``engine_submit`` prices an engine's entries by
  its name instead (tasks added to a batch still pay ``batch_submit``). Launching an AI CPU kernel
  costs ``kernel_launch`` before its body runs (a CCU kernel's mission: ``ccu_launch``); a blocking
  host call returns ``sync_return`` after what it waited for ended;
* AIV kernels (:mod:`pyhcomm.sim.aiv`): each entry a block issues costs ``aiv_task``, its engine's
  parameter (1 us, ``cost_model.cc``'s AIV per-task latency); a move through its device's memory
  runs at most at ``aiv_copy_bandwidth`` (the device's memory is shared with the other copies), a
  move to or from another device over its AIV channel's link at most at ``aiv_link_bandwidth`` per
  device pair (and shares the link), after the link's latency (twice for a load: request and data);
* the CCU (:mod:`pyhcomm.ccu`): every entry of a mission (and its launch) costs ``ccu_task`` to issue
  (an engine parameter of the CCU's, priced from either side); its local copies and reduces flow
  through the device's CCU at ``ccu_copy_bandwidth`` / ``ccu_reduce_bandwidth`` (and its memory);
  its remote moves over the channel's link like any transfer.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

GB = 1e9
US = 1e-6


@dataclass(frozen=True)
class Link:
    """One link class: bandwidth per direction (bytes/s) and one-way latency (s)."""

    bandwidth: float
    latency: float

    def time(self, nbytes: int) -> float:
        """Seconds to move ``nbytes`` alone on the link: ``latency + nbytes / bandwidth``."""
        return self.latency + nbytes / self.bandwidth


@dataclass(frozen=True)
class CostModel:
    """The parameters of the timing model for one product (see the module docstring)."""

    product: str
    family: str
    links: dict = field(default_factory=dict)   # CommProtocol name -> Link
    host_link: Link = Link(25 * GB, 2 * US)     # PCIe between host and device (aclrtMemcpy H2D/D2H)
    copy_bandwidth: float = 642 * GB            # LocalCopy, D2D memcpy (bytes moved per second)
    reduce_bandwidth: float = 428 * GB          # LocalReduce (bytes of the result per second)
    copy_latency: float = 0.6 * US              # an SDMA copy's fixed part (HCCL task_profiling.h)
    reduce_latency: float = 0.6 * US            # a reduce task's fixed part (HCCL task_profiling.h)
    ccu_copy_bandwidth: float = 200 * GB        # a CCU's LocalCopy (cost_model.cc's ccuLocalCopyBw_)
    ccu_reduce_bandwidth: float = 35 * GB       # a CCU's LocalReduce (ccuLocalReduceBw_)
    ccu_launch: float = 2.0 * US                # a CCU kernel's mission starts this long after its launch task
    task_dispatch: float = 0.0
    notify_record: float = 0.5 * US
    notify_wait: float = 0.02 * US
    notify_latency: float = 0.0
    host_submit: float = 0.2 * US
    aicpu_submit: float = 1.0 * US
    batch_submit: float = 0.2 * US
    batch_fixed: float = 5.0 * US
    kernel_launch: float = 30.0 * US
    sync_return: float = 5.0 * US
    aiv_copy_bandwidth: float = 1400 * GB       # an AIV kernel's moves in its device's memory (cost_model.cc)
    aiv_link_bandwidth: float = 56 * GB         # ... to or from another device, per pair (cost_model.cc)
    #: engine name -> what a program pays per entry it issues that runs on that engine, in place of
    #: its description's cost (tasks added to a batch still pay ``batch_submit``; the record names
    #: each entry's engine: ``sim.kinds.engine_name``)
    engine_submit: dict = field(default_factory=dict)
    engine_params: dict = field(default_factory=dict)   # parameters engines declare: name -> seconds
    #: the engines of the Sim the model was made for, on its product: name -> Engine
    engines: dict = field(default_factory=dict, repr=False)

    def link(self, protocol) -> Link:
        """The :class:`Link` of ``protocol`` (a ``CommProtocol`` or its name); ``KeyError`` naming
        the product when it has no such link."""
        name = _canonical(protocol)
        try:
            return self.links[name]
        except KeyError:
            raise KeyError(f"{self.product}: the cost model has no {name} link "
                           f"(it has {', '.join(sorted(self.links))})") from None

    def local_seconds(self, what: str, nbytes) -> float:
        """Seconds a local ``"copy"`` or ``"reduce"`` of ``nbytes`` (the bytes written) takes alone:
        its fixed part, then the bytes at the device memory's bandwidth (what the replay charges a
        ``LocalCopy`` / ``LocalReduce`` task after its dispatch)."""
        if what == "reduce":
            return self.reduce_latency + nbytes / self.reduce_bandwidth
        return self.copy_latency + nbytes / self.copy_bandwidth

    def param(self, name: str, default: float | None = None) -> float:
        """The value of parameter ``name``: a field, else an engine's parameter (else ``default``;
        ``KeyError`` when there is none)."""
        if name in _FIELDS:
            return getattr(self, name)
        value = self.engine_params.get(name, default)
        if value is None:
            raise KeyError(f"{self.product}: the cost model has no parameter {name!r}")
        return value

    def submit_cost(self, engine, batched: bool = False) -> float:
        """Seconds issuing one entry costs on ``engine`` (an :class:`~pyhcomm.hcomm.resources.engines.Engine`):
        for a task added to an HCOMM batch its ``submit.batch_cost`` (else ``submit.cost``); for
        any other entry ``engine_submit``'s value for its name, else its ``submit.cost``."""
        submit = engine.submit
        if batched:
            return self.param(submit.batch_cost or submit.cost, submit.default)
        if engine.name in self.engine_submit:
            return self.engine_submit[engine.name]
        return self.param(submit.cost, submit.default)

    def engine_prices(self) -> dict:
        """The engines whose entries their side's parameters do not price: engine name ->
        ``(seconds per entry, per task added to a batch or NaN to keep the side's, the side whose
        entries it prices or None for any)``. They are the described engines whose submit costs
        differ from their side's (a host program's ``host_submit``; a kernel's ``aicpu_submit``,
        ``batch_submit``), priced where issued from their side, and the names in
        ``engine_submit``, priced from any side, batched tasks apart; an engine whose submit cost
        says ``anywhere`` (Atlas 350's CCU: its missions' entries are the device's, its launches the
        host's) is priced from any side. Empty for the other built-in engines at their defaults:
        the replay then reads no entry's engine."""
        out = {}
        for name, e in self.engines.items():
            cost = (self.submit_cost(e), self.submit_cost(e, True))
            side = (self.host_submit, self.host_submit) if e.host_side else (self.aicpu_submit, self.batch_submit)
            if e.submit.anywhere:
                out[name] = cost + (None,)
            elif cost != side:
                out[name] = cost + (e.side,)
        for name, value in self.engine_submit.items():
            out[name] = (value, float("nan"), None)
        return out

    def with_values(self, **values) -> "CostModel":
        """A copy with ``values`` replaced (``links=`` replaces the whole table; ``link_<NAME>=Link``
        replaces one protocol's; an engine's parameter, one in ``engine_params``, by its name)."""
        links = dict(values.pop("links", self.links))
        for key in [k for k in values if k.startswith("link_")]:
            links[_canonical(key[5:])] = values.pop(key)
        params = dict(values.pop("engine_params", self.engine_params))
        for key in [k for k in values if k not in _FIELDS and k in params]:
            params[key] = values.pop(key)
        return dataclasses.replace(self, links=links, engine_params=params, **values)


_FIELDS = frozenset(f.name for f in dataclasses.fields(CostModel))


def _canonical(protocol) -> str:
    """The ``CommProtocol`` name of ``protocol`` (a member, its value, or any of its names)."""
    from ..topology import CommProtocol
    if isinstance(protocol, str):
        if protocol in CommProtocol.__members__:
            return CommProtocol[protocol].name
        return protocol
    return CommProtocol(protocol).name


def _links(**by_protocol) -> dict:
    return {_canonical(f"COMM_PROTOCOL_{k}"): v for k, v in by_protocol.items()}


# -- per family (docs/timing.md: sources, and whether each figure is measured or nominal) ----------
_SDMA = 0.6 * US                        # an SDMA transfer's fixed part below 512 KB (task_profiling.h)
_RDMA = 7.0 * US                        # an RDMA transfer's fixed part, measured (task_profiling.h)
_ROCE_200G = Link(22.6 * GB, _RDMA)     # 200GE per 910B: 22.6 GB/s measured (HIXL, two A2 servers)
_ROCE_400G_DIE = Link(25 * GB, _RDMA)   # 400 Gb/s per Ascend 910C package, split over its two dies
_ROCE_400G = Link(50 * GB, _RDMA)
_UBOE = Link(50 * GB, 2 * US)          # UB over Ethernet (Atlas 350 between super pods): a 400GE port

_FAMILIES = {
    # Atlas 800T A2 / 900 A2 PoD / 200T A2 Box16: Ascend 910B, 8 NPUs a server in an HCCS full mesh;
    # HCCS at HCCL's own per-link figure (device_capacity.cc), which measurements bear out
    "A2": dict(links=_links(HCCS=Link(18.3 * GB, _SDMA), HCCS_ONLY=Link(18.3 * GB, _SDMA), ROCE=_ROCE_200G,
                            PCIE=Link(25 * GB, 2 * US)),
               copy_bandwidth=642 * GB, reduce_bandwidth=642 * GB * 2 / 3),
    # Atlas A3 (900 A3 SuperPoD): Ascend 910C, two dies a package (one device each) joined by SIO,
    # every die on the UB switches (HCCS protocol) of the super pod
    "A3": dict(links=_links(SIO=Link(204 * GB, _SDMA), HCCS=Link(196 * GB, _SDMA),
                            HCCS_ONLY=Link(196 * GB, _SDMA), ROCE=_ROCE_400G_DIE, PCIE=Link(64 * GB, 2 * US)),
               host_link=Link(64 * GB, 2 * US), copy_bandwidth=585 * GB, reduce_bandwidth=585 * GB * 2 / 3),
    # Atlas 350: Ascend 950PR, UB links in a super node
    "950": dict(links=_links(UB_CTP=Link(1000 * GB, 1 * US), UBC_TP=Link(1000 * GB, 1 * US),
                             UB_MEM=Link(1000 * GB, 1 * US), UB_RTP=Link(1000 * GB, 1 * US), UBOE=_UBOE, ROCE=_ROCE_400G,
                             PCIE=Link(64 * GB, 2 * US)),
                host_link=Link(64 * GB, 2 * US), copy_bandwidth=1400 * GB, reduce_bandwidth=900 * GB),
}
#: Products without HCOMM (their primitives return HCCL_E_NOT_SUPPORT): PCIe and RoCE only.
_OTHER = dict(links=_links(PCIE=Link(25 * GB, 2 * US), ROCE=_ROCE_200G))


def cost_model(product=None, sim=None) -> CostModel:
    """The cost model of ``product`` (a name or :class:`pyhcomm.products.Product`; default: the
    product of ``sim``, default the current Sim), with the engines of ``sim`` on that product
    (``engines``) and the parameters they declare of their own at their defaults
    (``engine_params``)."""
    from ..hcomm.resources.engines import engines
    from ..products import find_product
    from ..sim import current_sim
    sim = sim if sim is not None else current_sim()
    product = find_product(product if product is not None else sim.runtime.product)
    described = {e.name: e for e in engines(product, sim)}
    params = {e.submit.cost: e.submit.default for e in described.values()
              if e.submit.cost not in _FIELDS and e.submit.default is not None}
    return CostModel(product=product.name, family=product.family, engine_params=params, engines=described,
                     **_FAMILIES.get(product.family, _OTHER))
