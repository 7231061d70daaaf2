"""``from pyhcomm import *`` against the real pyhccl 0.1.0, name by name.

``tests/data/pyhccl_api.json`` is pyhccl's API as ``tools/capture_pyhccl.py`` read it from the
wheel (``pip download --no-deps pyhccl==0.1.0``): every function's parameter names, order and
return shape, every enum's members and values, every struct's fields and defaults, every
constant, the module's helpers outside ``__all__``. A script written against pyhccl must find the
same here; pyhcomm may have more.

The return shape is checked by calling each function in a fresh Sim with NULL / 0 arguments, then
with arguments of the annotated types: a call answers with its code and its outputs, each of the
annotated type, instead of raising or hanging.
"""
import fnmatch
import inspect
import json
import logging
import pathlib
import re
import reprlib

import pytest

import pyhcomm

API = json.loads((pathlib.Path(__file__).parent / "data" / "pyhccl_api.json").read_text(encoding="utf-8"))

EXPORTED = set(pyhcomm.__all__)


def test_every_name_is_exported():
    missing = [n for n in sorted(API["names"]) if n not in EXPORTED or not hasattr(pyhcomm, n)]
    assert not missing, f"{len(missing)} pyhccl names missing from `from pyhcomm import *`: {missing}"


def _params(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", sorted(API["functions"]))
def test_function_parameters_match(name):
    want = [p for p, _ in API["functions"][name]["params"]]
    assert _params(getattr(pyhcomm, name)) == want


def _null_args(params):
    """NULL / 0 for every parameter: 0 for numbers and enums, None for the rest."""
    return [0 if kind in ("int", "float") or kind in API["enums"] else None for _, kind in params]


def _typed_args(params):
    """A value of each parameter's annotated type: 0, an enum's first member, a default-constructed
    struct, an empty str, an empty list for ``object`` (pyhccl's lists)."""
    def one(kind):
        if kind in API["enums"]:
            return next(iter(getattr(pyhcomm, kind)))
        if kind in API["structs"]:
            return getattr(pyhcomm, kind)()
        return {"int": 0, "float": 0.0, "str": "", "object": []}[kind]
    return [one(kind) for _, kind in params]


def _is(value, kind):
    """``value`` has annotated type ``kind`` (an int is no bool; a struct is its class)."""
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "None":
        return value is None
    builtin = {"bool": bool, "str": str, "bytes": bytes, "list": list}.get(kind)
    return isinstance(value, builtin) if builtin else type(value).__name__ == kind


def _shape_ok(result, returns):
    """``result`` has pyhccl's return shape: one value, or a tuple ``(ret, out, ...)``, each of
    its annotated type (a binding returns its outputs, default-constructed, on failure too)."""
    if not returns.startswith("tuple["):
        return _is(result, returns)
    kinds = [t.strip() for t in returns[len("tuple["):-1].split(",")]
    return (isinstance(result, tuple) and len(result) == len(kinds)
            and all(_is(v, k) for v, k in zip(result, kinds)))


@pytest.mark.parametrize("name", sorted(API["functions"]))
def test_function_return_shape(name):
    """NULL / 0 arguments, then arguments of the annotated types: each call answers with its code
    (and its outputs) in pyhccl's shape, instead of raising or hanging."""
    spec = API["functions"][name]
    for args in (_null_args(spec["params"]), _typed_args(spec["params"])):
        pyhcomm.reset()
        result = getattr(pyhcomm, name)(*args)
        assert _shape_ok(result, spec["returns"]), \
            f"{name}{tuple(args)} returned {reprlib.repr(result)}, pyhccl returns {spec['returns']}"


@pytest.mark.parametrize("name", sorted(API["enums"]))
def test_enum_members_and_values(name):
    cls = getattr(pyhcomm, name)
    have = {k: int(v) for k, v in cls.__members__.items()}
    want = API["enums"][name]
    assert {k: have.get(k) for k in want} == want
    for member, value in want.items():
        assert getattr(pyhcomm, member) == value, member


def _check_default(value, spec, where):
    default = spec["default"]
    if isinstance(default, dict) and "bytes" in default:
        assert isinstance(value, bytes) and len(value) == default["bytes"], where
        assert sorted(set(value)) == default["values"], where
    elif isinstance(default, dict):
        _check_struct(value, default["struct"], where)
    else:
        assert value == default and _is(value, type(default).__name__ if default is not None else "None"), \
            f"{where}: {value!r} != {default!r}"


def _check_struct(inst, name, where):
    assert type(inst).__name__ == name, f"{where} is a {type(inst).__name__}, not {name}"
    for field, spec in API["structs"][name].items():
        assert hasattr(inst, field), f"{where}.{field} is missing"
        _check_default(getattr(inst, field), spec, f"{where}.{field}")
        if spec["settable"]:                  # a script sets fields: writing the default back works
            value = getattr(inst, field)
            setattr(inst, field, value)
            assert getattr(inst, field) == value, f"{where}.{field}"


@pytest.mark.parametrize("name", sorted(API["structs"]))
def test_struct_fields_and_defaults(name):
    _check_struct(getattr(pyhcomm, name)(), name, name)


@pytest.mark.parametrize("name", sorted(API["constants"]))
def test_constant_values(name):
    assert getattr(pyhcomm, name) == API["constants"][name]["value"]


@pytest.mark.parametrize("name", sorted(API["helpers"]))
def test_module_helpers(name):
    """pyhccl's own helpers outside ``__all__`` (``pyhccl.data_type_size`` ...) are attributes."""
    assert _params(getattr(pyhcomm, name)) == API["helpers"][name]["params"]


def test_data_type_sizes():
    have = {k: pyhcomm.data_type_size(getattr(pyhcomm, k)) for k in API["data_type_sizes"]}
    assert have == API["data_type_sizes"]


def test_error_string_helper():
    assert pyhcomm.get_error_string(pyhcomm.HCCL_E_PARA) == pyhcomm.HcclGetErrorString(pyhcomm.HCCL_E_PARA) != ""


def test_failure_outputs_are_fresh():
    """A failed call's outputs belong to the caller: changing one changes no later answer."""
    pyhcomm.reset()
    ret, threads = pyhcomm.HcommThreadAlloc(-1, [1])
    assert ret != pyhcomm.HCCL_SUCCESS and threads == []
    threads.append(7)
    assert pyhcomm.HcommThreadAlloc(-1, [1])[1] == []
    ret, mem = pyhcomm.HcommMemImport(0, 0, 0)
    assert ret == pyhcomm.HCCL_E_PTR and mem == pyhcomm.CommMem()
    mem.size = 64
    assert pyhcomm.HcommMemImport(0, 0, 0)[1] == pyhcomm.CommMem()


def _readme_not_modelled() -> set:
    """The pyhccl functions README's "not modeled" table names (a ``*`` pattern expanded)."""
    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("| calls | why |", 1)[1].split("\n\n", 1)[0]
    names = set()
    for row in table.splitlines()[2:]:
        for pattern in re.findall(r"`([^`]+)`", row.split("|")[1]):
            found = {n for n in API["functions"] if fnmatch.fnmatchcase(n, pattern)}
            assert found, f"README's not-modeled table names {pattern}, which pyhccl does not have"
            names |= found
    return names


def test_readme_lists_exactly_the_calls_that_are_not_modelled():
    from pyhcomm.capi import not_modeled
    assert _readme_not_modelled() == set(not_modeled.CALLS)


@pytest.mark.parametrize("name", sorted(_readme_not_modelled()))
def test_a_call_not_modelled_returns_not_support_and_logs_why(name, caplog):
    from pyhcomm.capi import not_modeled
    pyhcomm.reset()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        result = getattr(pyhcomm, name)(*_typed_args(API["functions"][name]["params"]))
    code = result[0] if isinstance(result, tuple) else result
    assert code == pyhcomm.HCCL_E_NOT_SUPPORT
    assert f"{name}: {not_modeled.CALLS[name][2]}" in caplog.text


@pytest.mark.parametrize("name", sorted(n for n, f in API["functions"].items() if any(k == "object" for _, k in f["params"])))
def test_a_list_argument_given_an_int_is_refused_by_name(name):
    """pyhccl's ``object`` parameters are lists: an int there is a code or a ``TypeError`` naming
    the call and the argument, never a bare Python error from inside pyhcomm."""
    spec = API["functions"][name]
    pyhcomm.reset()
    args = [5 if kind == "object" else arg for (_, kind), arg in zip(spec["params"], _null_args(spec["params"]))]
    try:
        result = getattr(pyhcomm, name)(*args)
    except TypeError as exc:
        assert str(exc).startswith(f"{name}: "), exc
    else:
        assert _shape_ok(result, spec["returns"])
