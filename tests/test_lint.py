"""The lint: ruff with the pyflakes rules (pyproject.toml's [tool.ruff.lint]) over the whole tree."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TREES = ("src", "tests", "benchmarks", "examples", "tools")


def _ruff(*paths):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *paths], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_no_unused_import_variable_or_undefined_name():
    out = _ruff(*TREES)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_lint_sees_an_unused_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    out = _ruff(str(bad))
    assert out.returncode == 1 and "F401" in out.stdout, out.stdout + out.stderr
