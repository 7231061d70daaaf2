"""Capture the public API of the real pyhccl bindings as JSON, without CANN.

pyhccl imports without its native libraries, so its names can be read here:

    pip download --no-deps pyhccl==0.1.0 -d /tmp/pyhccl && cd /tmp/pyhccl && unzip -q pyhccl-*.whl
    python tools/capture_pyhccl.py /tmp/pyhccl tests/data/pyhccl_api.json

It records every name of ``pyhccl.__all__``: each function's parameter names, parameter types and
return type (from the signature line pybind11 puts first in ``__doc__``), each enum's members and
values, each struct's fields with their type, the value a default-constructed struct holds and
whether it can be set, and every other constant; then the module's own helpers outside
``__all__`` (``data_type_size``, ``get_error_string``): their parameters, and the size
``data_type_size`` gives each ``HcclDataType`` member. ``tests/test_pyhccl_parity.py`` compares ``from pyhcomm import *`` with
the file this writes.
"""
from __future__ import annotations

import enum
import importlib
import inspect
import json
import re
import sys

_SIG = re.compile(r"^(\w+)\((.*)\)\s*->\s*(.+)$")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` on ``sep`` outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def short_type(text: str) -> str:
    """A type annotation in a short form: ``int``, ``float``, ``str``, ``object``, a class name,
    or ``tuple[...]`` of those."""
    text = text.strip()
    if text.startswith("tuple[") and text.endswith("]"):
        return "tuple[" + ", ".join(short_type(t) for t in split_top(text[6:-1])) + "]"
    if "SupportsFloat" in text:
        return "float"
    if "SupportsInt" in text:
        return "int"
    return text.rsplit(".", 1)[-1]


def function_entry(fn) -> dict:
    """Parameters and return type of a pybind11 function, from its ``__doc__`` signature line."""
    line = (fn.__doc__ or "").strip().splitlines()[0]
    m = _SIG.match(line)
    if m is None:
        raise ValueError(f"cannot read the signature of {fn.__name__}: {line!r}")
    params = []
    for part in split_top(m.group(2)):
        name, _, annotation = part.partition(":")
        params.append([name.strip(), short_type(annotation)])
    return {"params": params, "returns": short_type(m.group(3))}


def default_value(value):
    """A struct field's default value in JSON form (bytes: their length and distinct values)."""
    if isinstance(value, enum.Enum) or (hasattr(type(value), "__members__") and hasattr(value, "value")):
        return int(value)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value), "values": sorted(set(value))}
    return {"struct": type(value).__name__}


def struct_entry(cls) -> dict:
    """Every property of a pybind11 struct: its type and the default-constructed value."""
    inst = cls()
    fields = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") or not isinstance(getattr(cls, name), property):
            continue
        doc = (getattr(cls, name).fget.__doc__ or "").strip()
        fields[name] = {"type": short_type(doc.rsplit("->", 1)[-1]) if "->" in doc else "?",
                        "default": default_value(getattr(inst, name)),
                        "settable": getattr(cls, name).fset is not None}
    return fields


def capture(module) -> dict:
    out = {"module": module.__name__, "version": getattr(module, "__version__", "?"),
           "names": sorted(module.__all__), "functions": {}, "enums": {}, "structs": {}, "constants": {}}
    for name in sorted(module.__all__):
        obj = getattr(module, name)
        if type(obj).__name__ == "builtin_function_or_method":
            out["functions"][name] = function_entry(obj)
        elif isinstance(obj, type) and hasattr(obj, "__members__"):
            out["enums"][name] = {k: int(v) for k, v in obj.__members__.items()}
        elif isinstance(obj, type):
            out["structs"][name] = struct_entry(obj)
        elif type(obj).__name__ in out["enums"] or hasattr(type(obj), "__members__"):
            out["constants"][name] = {"enum": type(obj).__name__, "value": int(obj)}
        else:
            out["constants"][name] = {"value": obj}
    out["helpers"] = {}
    for name, obj in sorted(vars(module).items()):
        if not name.startswith("_") and name not in module.__all__ and inspect.isfunction(obj):
            out["helpers"][name] = {"params": list(inspect.signature(obj).parameters)}
    out["data_type_sizes"] = {k: module.data_type_size(v) for k, v in module.HcclDataType.__members__.items()}
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    sys.path.insert(0, argv[1])
    module = importlib.import_module("pyhccl")
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(capture(module), f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
