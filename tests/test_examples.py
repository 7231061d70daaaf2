"""Every script in examples/ runs to completion (exit code 0) in a fresh interpreter."""
import importlib.util
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
