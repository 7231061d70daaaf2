"""The catalogue of simulated products and the support rules the seed page states.

Selection: ``PYHCOMM_PRODUCT`` (read when the runtime initialises) or :func:`set_product`.
The default is ``Atlas 800T A2`` (the product of the seed's first example). Names match
case-insensitively and ignore spaces, hyphens and underscores.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .enums import HcclDevType

DEFAULT_PRODUCT = "Atlas 800T A2"
ENV_PRODUCT = "PYHCOMM_PRODUCT"


@dataclass(frozen=True)
class Product:
    """One simulated Ascend product.

    ``hcomm`` says whether HCOMM primitives run on it at all (the seed's support table);
    ``device_side_only`` marks the Atlas 350 rule: local operations only in AICPU_TS mode, called on
    the device side.
    """

    name: str
    family: str            # "A2", "A3", "950", "310P", "310B", "910"
    soc_name: str
    dev_type: HcclDevType
    hcomm: bool
    devices_per_server: int
    why_not: str = ""
    device_side_only: bool = False
    aliases: tuple = field(default=())

    @property
    def is_950(self) -> bool:
        return self.dev_type == HcclDevType.DEV_TYPE_950

    def summary(self) -> str:
        if not self.hcomm:
            return f"HCOMM primitives not supported ({self.why_not})"
        if self.device_side_only:
            return "HCOMM primitives on the device side only (AI CPU kernels, COMM_ENGINE_AICPU_TS threads)"
        return "HCOMM primitives on the host (CPU_TS threads) and the device side (AICPU_TS threads)"


_A2_ONLY = ("of the Atlas A2 series only the Atlas 800T A2 training server, the Atlas 900 A2 PoD and "
            "the Atlas 200T A2 Box16 support HCOMM primitives")

PRODUCTS = (
    Product("Atlas 800T A2", "A2", "Ascend910B1", HcclDevType.DEV_TYPE_910B, True, 8,
            aliases=("Atlas A2", "Atlas A2 training series", "Atlas 800T A2 training server")),
    Product("Atlas 900 A2 PoD", "A2", "Ascend910B2", HcclDevType.DEV_TYPE_910B, True, 8,
            aliases=("Atlas 900 A2 PoD cluster basic unit",)),
    Product("Atlas 200T A2 Box16", "A2", "Ascend910B3", HcclDevType.DEV_TYPE_910B, True, 16,
            aliases=("Atlas 200T A2 Box16 heterogeneous subrack",)),
    Product("Atlas 800I A2", "A2", "Ascend910B4", HcclDevType.DEV_TYPE_910B, False, 8, why_not=_A2_ONLY,
            aliases=("Atlas A2 inference series", "Atlas 800I A2 inference server")),
    Product("Atlas A3", "A3", "Ascend910_9391", HcclDevType.DEV_TYPE_910_93, True, 16,
            aliases=("Atlas A3 training series", "Atlas A3 inference series", "Atlas 900 A3 SuperPoD")),
    Product("Atlas 350", "950", "Ascend950PR_958b", HcclDevType.DEV_TYPE_950, True, 8,
            device_side_only=True, aliases=("Atlas 350 accelerator card", "Ascend 950PR", "Ascend950")),
    Product("Atlas 200I/500 A2", "310B", "Ascend310B1", HcclDevType.DEV_TYPE_310P3, False, 1,
            why_not="Atlas 200I/500 A2 inference products are outside the support table",
            aliases=("Atlas 200I A2", "Atlas 500 A2", "Atlas 200I/500 A2 inference products")),
    Product("Atlas inference series", "310P", "Ascend310P3", HcclDevType.DEV_TYPE_310P3, False, 8,
            why_not="the Atlas inference series is outside the support table",
            aliases=("Atlas 300I Duo",)),
    Product("Atlas training series", "910", "Ascend910A", HcclDevType.DEV_TYPE_910, False, 8,
            why_not="the Atlas training series is outside the support table",
            aliases=("Atlas 800 training server",)),
)


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch not in " -_")


_BY_KEY = {}
for _p in PRODUCTS:
    for _n in (_p.name,) + _p.aliases:
        _BY_KEY[_key(_n)] = _p


def find_product(name: str) -> Product:
    """Return the product called ``name``; raise ``ValueError`` listing the valid names otherwise."""
    if isinstance(name, Product):
        return name
    product = _BY_KEY.get(_key(str(name)))
    if product is None:
        valid = ", ".join(repr(p.name) for p in PRODUCTS)
        raise ValueError(f"unknown product {name!r}; valid products: {valid}")
    return product


def catalogue_text() -> str:
    """A table of every product, for ``python -m pyhcomm products``."""
    rows = [("product", "SoC name", "family", "devices/server", "HCOMM primitives")]
    for p in PRODUCTS:
        rows.append((p.name, p.soc_name, p.family, str(p.devices_per_server), p.summary()))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4])
    lines.insert(1, "-" * len(lines[0]))
    lines.append("")
    lines.append(f"default: {DEFAULT_PRODUCT}; select with {ENV_PRODUCT}=<name> or pyhcomm.set_product(name)")
    return "\n".join(lines)
