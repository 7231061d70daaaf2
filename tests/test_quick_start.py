"""README's quick start: its two commands are what CI runs (``.ci/run``), and the demo needs only
the core dependencies (``pip install -e .``)."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")        # (Python 3.11+)

ROOT = Path(__file__).resolve().parent.parent


def _commands(text: str) -> list:
    """The command lines of a shell text: comments and blank lines dropped, trailing comments cut."""
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_ci_runs_exactly_the_readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    shown = _commands(block)
    assert shown == ['pip install -e . && python -m pyhcomm demo',
                     'pip install -e ".[test]" && python -m pytest && PYHCOMM_SCHEDULER=coop python -m pytest']
    ci = _commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert [line for line in ci if line not in ("set -euo pipefail", 'cd "$(dirname "$0")/.."')] == shown


def test_the_demo_needs_only_the_core_dependencies():
    """``python -m pyhcomm demo`` with every package outside ``[project] dependencies`` made
    unimportable (what ``pip install -e .`` leaves out)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower().replace("-", "_") for d in project["dependencies"]}
    extras = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower().replace("-", "_")
              for deps in project["optional-dependencies"].values() for d in deps} - core - {"pyhcomm"}
    blocked = sorted(extras | {"mpich", "mpi4py", "matplotlib", "pytest", "hypothesis", "perfetto", "wasmtime",
                               "viztracer", "cupy"})
    program = textwrap.dedent(f"""
        import importlib.abc, runpy, sys
        BLOCKED = {blocked!r}

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0].lower() in BLOCKED:
                    raise ImportError(f"{{name}} is not a core dependency")
                return None

        sys.meta_path.insert(0, Block())
        sys.argv = ["pyhcomm", "demo"]
        runpy.run_module("pyhcomm", run_name="__main__")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYHCOMM_")}
    proc = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith("demo passed")
