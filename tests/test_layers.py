"""The packages import downward only: no import cycle between pyhcomm's packages.

Every ``import`` / ``from ... import`` in every module counts, also the ones inside functions
(a lazy import is a dependency all the same). The root package (the public facade) may import
anything and is left out.
"""
import ast
import pathlib

import pyhcomm

ROOT = pathlib.Path(pyhcomm.__file__).parent


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph() -> dict:
    files = list(ROOT.rglob("*.py"))
    modules = {_module(p) for p in files}
    edges: dict = {}
    for path in files:
        me = _module(path)
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
            for t in targets:
                if t.startswith("pyhcomm.") and _package(t) != _package(me):
                    edges.setdefault(_package(me), set()).add(_package(t))
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


def test_no_import_cycle_between_packages():
    edges = package_graph()
    cycles = [c for c in (_cycle_through(edges, p) for p in sorted(edges)) if c]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_graph_is_read_from_the_sources():
    edges = package_graph()
    assert "pyhcomm.sim" in edges["pyhcomm.hcomm"] and "pyhcomm.errors" in edges["pyhcomm.sim"]


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
