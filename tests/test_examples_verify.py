"""``python -m pyhcomm verify`` on every shipped example gives its expected outcome: no finding;
or only the race the example makes on purpose, labelled deliberate in its code (and said so in
its own output), which does not count; or, for the verifier's own examples (examples/verify/),
the defects they exist to show. Each runs in a fresh interpreter, as a user runs it."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CLEAN, LABELLED = "clean", "labelled race"

#: example -> (arguments, expected outcome: CLEAN, LABELLED or the kinds of its findings)
EXPECTED = {
    "main_slave_device_350.py": ((), CLEAN),
    "main_slave_host_a2.py": ((), LABELLED),
    "mpi_allreduce.py": ((), CLEAN),
    "pythonic_main_slave.py": ((), LABELLED),
    "pythonic_seed_device.py": ((), CLEAN),
    "pythonic_seed_host.py": ((), LABELLED),
    "ring_allgather.py": (("--ranks", "4"), CLEAN),
    "seed_device_350.py": ((), CLEAN),
    "seed_host_a2.py": ((), CLEAN),
    "verify/deadlock.py": (("--ranks", "3"), {"hang"}),
    "verify/kernel_race.py": (("--ranks", "1", "--product", "Atlas 350"), {"race", "unsynchronized"}),
    "verify/lost_record.py": (("--ranks", "2"), {"lost-record", "hang"}),
}
LABEL = re.compile(r"#\s*pyhcomm: deliberate race")


def _programs():
    """Every example program (the kernel modules under examples/kernels are not programs)."""
    return sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.py") if "kernels" not in p.parts)


def _env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYHCOMM_") and k not in ("HCCL_EXEC_TIMEOUT", "HCCL_BUFFSIZE")}
    env["PYHCOMM_LOG_LEVEL"] = "ERROR"
    return env


def test_every_example_has_an_expected_outcome():
    assert sorted(EXPECTED) == _programs()


@pytest.mark.timeout(200)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verify_gives_the_expected_outcome(name, tmp_path):
    args, expected = EXPECTED[name]
    script = EXAMPLES / name
    if "from mpi4py" in script.read_text(encoding="utf-8") and importlib.util.find_spec("mpi4py") is None:
        pytest.skip(f"{name} needs mpi4py: pip install 'pyhcomm[mpi]'")
    out = tmp_path / "report.json"
    path = f"examples/{name}"
    proc = subprocess.run([sys.executable, "-m", "pyhcomm", "verify", path, *args, "--json", str(out)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=180)
    findings = json.loads(out.read_text())["findings"]
    shown = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    if expected == CLEAN:
        assert (proc.returncode, findings) == (0, []), shown
    elif expected == LABELLED:
        labels = [k for k, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1) if LABEL.search(line)]
        assert proc.returncode == 0 and findings, shown
        assert {f["kind"] for f in findings} == {"race"}, shown
        where = {f["deliberate"] for f in findings}
        assert where == {f"{path}:{k}" for k in labels}, shown     # every labelled race is found (all parts run)
        assert "(a deliberate race)" in proc.stdout, "the example's own output says the race is deliberate"
    else:
        assert proc.returncode == 1, shown
        assert {f["kind"] for f in findings} == expected, shown
        assert all(f["deliberate"] is None for f in findings), shown
