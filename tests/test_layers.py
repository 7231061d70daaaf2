"""The stack in CANN's order: a layer imports only the layers below it, and nothing imports upward.

Every ``import`` / ``from ... import`` in every module counts, also the ones inside functions
(a lazy import is a dependency all the same). The root package (the public facade) may import
anything and is left out. :data:`LAYERS` is the order, bottom first (docs/architecture.md draws
it); a module belongs to the layer of its longest listed prefix. Inside one layer the packages
may use each other, but no import cycle may join two packages.
"""
import ast
import pathlib

import pytest

import pyhcomm

ROOT = pathlib.Path(pyhcomm.__file__).parent

#: The layers, bottom first: (name, the module prefixes it holds).
LAYERS = (
    ("codes", ("pyhcomm.errors", "pyhcomm.enums")),
    ("definitions", ("pyhcomm.config", "pyhcomm.products", "pyhcomm.defs")),
    ("machine parts", ("pyhcomm.backend", "pyhcomm.sched", "pyhcomm.transport")),
    ("simulated machine", ("pyhcomm.sim", "pyhcomm.topology", "pyhcomm.args")),
    ("acl runtime", ("pyhcomm.aclrt",)),
    ("HCOMM resources", ("pyhcomm.hcomm.resources",)),
    ("HCOMM data plane", ("pyhcomm.hcomm", "pyhcomm.ccu")),
    ("HCCL", ("pyhcomm.hccl",)),
    ("collective library", ("pyhcomm.collectives",)),
    ("tiers", ("pyhcomm.capi", "pyhcomm.acl", "pyhcomm.pythonic", "pyhcomm.aiv")),
    ("launching ranks", ("pyhcomm.spmd", "pyhcomm.spmd_child")),
    ("tools", ("pyhcomm.analysis", "pyhcomm.verify", "pyhcomm.timing", "pyhcomm.cli", "pyhcomm.demo",
               "pyhcomm.demo_kernels", "pyhcomm.__main__")),
)


def _module(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (its longest listed prefix)."""
    best, depth = None, -1
    for i, (_name, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    if best is None:
        raise KeyError(f"{module} is in no layer of tests/test_layers.py: add it to LAYERS")
    return best


def import_edges(root: pathlib.Path = ROOT) -> list:
    """``(importer, imported, line)`` for every import of a pyhcomm module by another (modules as
    dotted names; a ``from package import name`` names the submodule when ``name`` is one)."""
    files = list(root.rglob("*.py"))
    modules = {_module(p, root) for p in files}
    edges = []
    for path in files:
        me = _module(path, root)
        if me == "pyhcomm":
            continue
        base = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    up = base[: len(base) - node.level + 1]
                    target = ".".join(up + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = [target + "." + a.name for a in node.names]
                targets = [n if n in modules else target for n in names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges.extend((me, t, node.lineno) for t in targets if t.startswith("pyhcomm.") and t != "pyhcomm")
    return edges


def upward_imports(edges) -> list:
    """``file:line importer -> imported`` for each import of a higher layer."""
    out = []
    for me, target, line in edges:
        lo, hi = layer_of(me), layer_of(target)
        if hi > lo:
            out.append(f"{me}:{line} ({LAYERS[lo][0]}) imports {target} ({LAYERS[hi][0]})")
    return out


def package_graph() -> dict:
    edges: dict = {}
    for me, target, _line in import_edges():
        if _package(target) != _package(me):
            edges.setdefault(_package(me), set()).add(_package(target))
    return edges


def _cycle_through(edges, start):
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_every_module_has_a_layer():
    for path in ROOT.rglob("*.py"):
        if _module(path) != "pyhcomm":
            layer_of(_module(path))


def test_no_layer_imports_a_higher_one():
    bad = upward_imports(import_edges())
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_the_check_sees_an_upward_import(tmp_path):
    """A deliberately added upward import (the acl runtime importing HCCL) is caught."""
    pkg = tmp_path / "pyhcomm"
    (pkg / "aclrt").mkdir(parents=True)
    (pkg / "hccl").mkdir()
    for f in ("__init__.py", "aclrt/__init__.py", "hccl/__init__.py", "hccl/comm.py"):
        (pkg / f).write_text("")
    (pkg / "aclrt" / "stream.py").write_text("from ..hccl import comm\n")
    bad = upward_imports(import_edges(pkg))
    assert bad == ["pyhcomm.aclrt.stream:1 (acl runtime) imports pyhcomm.hccl.comm (HCCL)"]


def test_no_import_cycle_between_packages():
    edges = package_graph()
    cycles = [c for c in (_cycle_through(edges, p) for p in sorted(edges)) if c]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_graph_is_read_from_the_sources():
    edges = package_graph()
    assert "pyhcomm.sim" in edges["pyhcomm.hcomm"] and "pyhcomm.errors" in edges["pyhcomm.sim"]


@pytest.mark.parametrize("module, layer", [("pyhcomm.hcomm.resources.thread", "HCOMM resources"),
                                           ("pyhcomm.hcomm.local", "HCOMM data plane"),
                                           ("pyhcomm.sim.task", "simulated machine")])
def test_a_module_takes_its_longest_prefix_layer(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


_MODULES = ("np", "numpy", "array")     # np.array, array.array: not a storage's bytes


def _storage_reads(path: pathlib.Path) -> list:
    """``file:line`` of every ``.array`` / ``.mv`` attribute read in ``path`` (a CPU storage's bytes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in ("array", "mv")
            and not (isinstance(node.value, ast.Name) and node.value.id in _MODULES)]


def test_only_the_backend_touches_storage_bytes():
    outside = [hit for p in sorted(ROOT.rglob("*.py")) if "backend" not in p.relative_to(ROOT).parts
               for hit in _storage_reads(p)]
    assert not outside, "storage bytes read outside pyhcomm.backend: " + ", ".join(outside)
    assert _storage_reads(ROOT / "backend" / "cpu.py"), "the check must see the CPU backend's own reads"
