"""One declaration per task kind, read through accessors; modules keep their private parts.

Scans every module of ``src/pyhcomm`` (the source, not the running objects):

* no module but the kind declarations (``pyhcomm/sim/kinds.py``) names a task kind: no string
  constant equal to a kind's name, no test of a ``kind`` with ``startswith``/``endswith`` or ``in``
  on a string (a reader asks the kind's traits and accessors instead);
* no positional read of a task's ``args`` (``x.args[k]``, ``a, b = x.args``, ``attrgetter("args")``)
  outside the kind declarations, which name them;
* no access to another package's private attribute (``obj._x``, ``getattr(obj, "_x")``, ``from
  ..pkg.mod import _x``): a name that starts with one underscore, defined in another package of
  pyhcomm (``pyhcomm.sim``, ``pyhcomm.timing`` ...; a top-level module is a package of its own)
  and not in the accessing one. Python's own protocol names (a NamedTuple's ``_fields``, a ctypes
  structure's ``_fields_`` ...) are not pyhcomm's private attributes;
* no function longer than :data:`MAX_LINES` lines (see :data:`LONG` for the ones still being split).

Each scan is also run on a small package with one planted violation of its rule: it must find it.
"""
import ast
import pathlib

import pytest

import pyhcomm
from pyhcomm.sim.kinds import KINDS

ROOT = pathlib.Path(pyhcomm.__file__).parent
#: The module that declares the task kinds (relative to the package root).
DECLARATIONS = "sim/kinds.py"
#: Names Python gives a meaning (NamedTuple, ctypes, enum protocols), not private attributes.
PROTOCOL = frozenset(("_fields", "_fields_", "_replace", "_asdict", "_make", "_field_defaults", "_pack_",
                      "_anonymous_", "_value_", "_name_", "_missing_"))
MAX_LINES = 80
#: Functions over MAX_LINES that another change is splitting: (module path, function name).
LONG = frozenset()


def _modules(root: pathlib.Path):
    """``(relative path, dotted module name, tree)`` of every module under ``root``."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield rel, name, path, ast.parse(path.read_text(encoding="utf-8"))


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PROTOCOL


def _is_kind(expr) -> bool:
    """``x.kind`` or a name ``kind``."""
    return (isinstance(expr, ast.Attribute) and expr.attr == "kind") or (isinstance(expr, ast.Name)
                                                                          and expr.id == "kind")


def kind_strings(root: pathlib.Path, names) -> list:
    """``path:line: ...`` of every kind name or kind test by string outside the declarations."""
    out = []
    for rel, _name, _path, tree in _modules(root):
        if rel == DECLARATIONS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                out.append(f"{rel}:{node.lineno}: kind name {node.value!r}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("startswith", "endswith") and _is_kind(node.func.value)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif (isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
                  and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
                  and any(_is_kind(c) for c in node.comparators)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def positional_args(root: pathlib.Path) -> list:
    """``path:line: ...`` of every positional read of a task's ``args`` outside the declarations
    (a class's own ``self.args`` is its own business)."""
    out = []
    for rel, _name, _path, tree in _modules(root):
        if rel == DECLARATIONS:
            continue
        for node in ast.walk(tree):
            target = None
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "args":
                target = node.value
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "args"
                  and any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets)):
                target = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "attrgetter"
                  and any(isinstance(a, ast.Constant) and a.value == "args" for a in node.args)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
                continue
            if target is not None and not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def _defined(tree) -> set:
    """The private names a module defines: functions, classes, names and attributes it assigns,
    ``__slots__`` entries, parameters."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[0])
        elif (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                   for t in node.targets)
              and isinstance(node.value, (ast.Tuple, ast.List))):
            out.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return {n for n in out if isinstance(n, str) and _private(n)}


def private_access(root: pathlib.Path) -> list:
    """``path:line: ...`` of every access to another package's private attribute (see the module
    docstring)."""
    mods = list(_modules(root))
    by_package: dict = {}
    for _rel, name, _path, tree in mods:
        by_package.setdefault(_package(name), set()).update(_defined(tree))
    owners: dict = {}
    for pkg, names in by_package.items():
        for n in names:
            owners.setdefault(n, set()).add(pkg)
    out = []
    for rel, name, path, tree in mods:
        mine = _package(name)
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = (".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
                          if node.level else (node.module or ""))
                for a in node.names:
                    if _private(a.name) and target.startswith(root.name) and _package(target) != mine:
                        out.append(f"{rel}:{node.lineno}: imports {a.name} from {target}")
                continue
            attr = None
            if (isinstance(node, ast.Attribute) and _private(node.attr)
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                attr = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str) and _private(node.args[1].value)):
                attr = node.args[1].value
            if attr is not None and attr not in by_package.get(mine, ()) and owners.get(attr):
                out.append(f"{rel}:{node.lineno}: {attr} of {', '.join(sorted(owners[attr]))}")
    return out


def long_functions(root: pathlib.Path, limit: int = MAX_LINES) -> list:
    """``(path, function, lines)`` of every function longer than ``limit`` lines."""
    out = []
    for rel, _name, _path, tree in _modules(root):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    out.append((rel, node.name, lines))
    return out


NAMES = frozenset(str(k) for k in KINDS)


def test_no_module_but_the_declarations_names_a_task_kind():
    assert kind_strings(ROOT, NAMES) == []


def test_no_task_args_are_read_by_position_outside_their_kind():
    assert positional_args(ROOT) == []


def test_no_module_reaches_into_another_packages_private_attributes():
    assert private_access(ROOT) == []


def test_no_function_is_longer_than_80_lines():
    assert [f for f in long_functions(ROOT) if (f[0], f[1]) not in LONG] == []


# -- the scans find what they look for -----------------------------------------------------------------
PLANTED = {
    "__init__.py": "",
    "sim/__init__.py": "",
    "sim/kinds.py": 'LOCAL_COPY = "LocalCopy"\n\ndef nbytes(e):\n    return e.args[4]\n',
    "sim/graph.py": ("class Graph:\n    def __init__(self):\n        self._cols = {}\n\n"
                     "    def cols(self):\n        return self._cols\n\n\ndef _helper():\n    return 1\n"),
    "sim/other.py": "from .graph import _helper\n\n\ndef ok(g):\n    return g._cols, _helper()\n",
    "timing/__init__.py": "",
    "timing/clean.py": ("from ..sim import kinds\n\n\ndef f(e, graph):\n    return e.kind is kinds.LOCAL_COPY, "
                        "graph.cols(), e.kind.role\n"),
}


def _plant(tmp_path, extra: dict) -> pathlib.Path:
    root = tmp_path / "pkg"
    for rel, text in {**PLANTED, **extra}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_clean_planted_package_passes_every_scan(tmp_path):
    root = _plant(tmp_path, {})
    names = {"LocalCopy", "Write"}
    assert kind_strings(root, names) == [] and positional_args(root) == [] and private_access(root) == []
    assert long_functions(root) == []


@pytest.mark.parametrize("code, found", [
    ('def f(e):\n    return e.kind == "LocalCopy"\n', ["timing/bad.py:2: kind name 'LocalCopy'"]),
    ('def f(e):\n    return e.kind.startswith("Wri")\n', ["timing/bad.py:2: e.kind.startswith('Wri')"]),
    ('def f(kind):\n    return "Reduce" in kind\n', ["timing/bad.py:2: 'Reduce' in kind"]),
    ('READS = frozenset(("Write", "Read"))\n', ["timing/bad.py:1: kind name 'Write'",
                                                "timing/bad.py:1: kind name 'Read'"]),
])
def test_a_planted_kind_string_is_found(tmp_path, code, found):
    root = _plant(tmp_path, {"timing/bad.py": code})
    assert sorted(kind_strings(root, {"LocalCopy", "Write", "Read"})) == sorted(found)


@pytest.mark.parametrize("code, found", [
    ("def f(t):\n    return t.args[5]\n", "timing/bad.py:2: t.args[5]"),
    ("def f(t):\n    d, n = t.args\n    return d\n", "timing/bad.py:2: d, n = t.args"),
    ("from operator import attrgetter\nARGS = attrgetter('args')\n", "timing/bad.py:2: attrgetter('args')"),
])
def test_a_planted_positional_read_of_args_is_found(tmp_path, code, found):
    root = _plant(tmp_path, {"timing/bad.py": code})
    assert positional_args(root) == [found]


@pytest.mark.parametrize("code, found", [
    ("def f(graph):\n    return graph._cols\n", "timing/bad.py:2: _cols of pkg.sim"),
    ("def f(graph):\n    return getattr(graph, '_cols')\n", "timing/bad.py:2: _cols of pkg.sim"),
    ("from ..sim.graph import _helper\n", "timing/bad.py:1: imports _helper from pkg.sim.graph"),
])
def test_a_planted_private_access_across_packages_is_found(tmp_path, code, found):
    root = _plant(tmp_path, {"timing/bad.py": code})
    assert private_access(root) == [found]


def test_a_planted_long_function_is_found(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    root = _plant(tmp_path, {"timing/bad.py": f"def long():\n{body}"})
    assert long_functions(root) == [("timing/bad.py", "long", 81)]
