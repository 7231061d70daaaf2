"""Every script in examples/ runs to completion (exit code 0) in a fresh interpreter, and uses only
names a real machine has (pyhccl's, or the acl values it defines itself)."""
import ast
import builtins
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def _clean_env():
    """The examples choose their own product; nothing from the caller's environment may steer them."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYHCOMM_") and k not in ("HCCL_EXEC_TIMEOUT", "HCCL_BUFFSIZE")}
    env["PYHCOMM_LOG_LEVEL"] = "ERROR"
    return env


def test_examples_are_found():
    names = {p.name for p in SCRIPTS}
    assert {"seed_host_a2.py", "seed_device_350.py", "main_slave_host_a2.py", "main_slave_device_350.py",
            "pythonic_main_slave.py"} <= names


@pytest.mark.timeout(120)
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_example_runs(script):
    if "from mpi4py" in script.read_text(encoding="utf-8") and importlib.util.find_spec("mpi4py") is None:
        pytest.skip(f"{script.name} needs mpi4py: pip install 'pyhcomm[mpi]'")
    proc = subprocess.run([sys.executable, str(script)], cwd=EXAMPLES.parent, env=_clean_env(),
                          capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, f"{script.name} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"


PYHCCL = set(json.loads((Path(__file__).parent / "data" / "pyhccl_api.json").read_text(encoding="utf-8"))["names"])
#: Names a script takes from ``from pyhcomm import *`` that pyhccl 0.1.0 does not have.
NOT_IN_PYHCCL = {"main_slave_device_350.py": {"HcclThreadExportToCommEngine"}}
STAR_SCRIPTS = [p for p in SCRIPTS if "from pyhcomm import *" in p.read_text(encoding="utf-8")]


def _names(tree):
    """(names the script defines or imports by name, names it reads)."""
    defined, used = {"__file__"}, set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else used).add(node.id)
    return defined, used


@pytest.mark.parametrize("script", STAR_SCRIPTS, ids=[p.name for p in STAR_SCRIPTS])
def test_star_imported_names_are_pyhccl_names(script):
    """``from pyhcomm import *`` stands for ``from pyhccl import *``: whatever else a script uses
    (acl's constants: pyACL has none) it defines itself, with acl's values."""
    import pyhcomm
    tree = ast.parse(script.read_text(encoding="utf-8"))
    defined, used = _names(tree)
    assert used - defined - set(dir(builtins)) - PYHCCL == NOT_IN_PYHCCL.get(script.name, set())
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            if not all(isinstance(e, ast.Name) for e in elts):
                continue
            names = [e.id for e in elts]
            if all(n.isupper() and hasattr(pyhcomm, n) for n in names):
                values = ast.literal_eval(node.value)
                values = values if isinstance(target, ast.Tuple) else (values,)
                assert {n: v for n, v in zip(names, values)} == {n: int(getattr(pyhcomm, n)) for n in names}
