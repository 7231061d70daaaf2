"""docs/tutorial.md runs as written: its code blocks are extracted from the page (the page is the
only copy of the tutorial's code). Every ```python block names its file (``title="ring.py"``) and is
written into an empty folder; every ``$`` command of the ```console blocks runs there, in order, in a
fresh interpreter, and prints what the page shows below it (``...`` alone on a line stands for any
lines, inside a line for any text)."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
TITLE = re.compile(r'title="([^"]+)"')


def blocks(text: str) -> list:
    """``(language, title or None, body)`` of every fenced block, in order."""
    out = []
    for m in FENCE.finditer(text):
        title = TITLE.search(m.group(2))
        out.append((m.group(1), title.group(1) if title else None, m.group(3)))
    return out


def commands(body: str) -> list:
    """``(command, expected output lines)`` of a console block."""
    out = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def matches(expected: list, actual: list) -> bool:
    """Whether ``actual`` lines fit ``expected`` (``...`` lines match any lines, ``...`` inside a line
    any text; trailing spaces ignored)."""
    def line_ok(pattern, line):
        return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("...")), line) is not None

    expected = [e.rstrip() for e in expected]
    actual = [a.rstrip() for a in actual]
    memo = {}

    def go(i, j):
        if (i, j) not in memo:
            if i == len(expected):
                memo[i, j] = j == len(actual)
            elif expected[i] == "...":
                memo[i, j] = any(go(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[i, j] = j < len(actual) and line_ok(expected[i], actual[j]) and go(i + 1, j + 1)
        return memo[i, j]

    return go(0, 0)


def test_the_matcher():
    assert matches(["a", "...", "d ... f"], ["a", "b", "c", "d e f"])
    assert matches(["a", "..."], ["a"]) and not matches(["a", "b"], ["a"])
    assert not matches(["x ... y"], ["x y z"]) and matches(["x ... z"], ["x y z"])


def test_every_python_block_is_a_named_file_and_every_command_shows_its_output():
    found = blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert [b for b in found if b[0] == "python" and b[1] is None] == []
    cmds = [c for lang, _t, body in found if lang == "console" for c in commands(body)]
    assert len(cmds) >= 8 and all(expected for _c, expected in cmds)


def _env(folder: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYHCOMM_") and k not in ("HCCL_EXEC_TIMEOUT", "HCCL_BUFFSIZE")}
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYHCOMM_LOG_LEVEL"] = "ERROR"
    return env


@pytest.mark.timeout(400)
def test_the_tutorial_runs_as_written(tmp_path):
    text = TUTORIAL.read_text(encoding="utf-8")
    ran = 0
    for lang, title, body in blocks(text):
        if lang == "python":
            (tmp_path / title).write_text(body, encoding="utf-8")
        elif lang == "console":
            for command, expected in commands(body):
                argv = shlex.split(command)
                assert argv[0] == "python", command
                proc = subprocess.run([sys.executable] + argv[1:], cwd=tmp_path, env=_env(tmp_path),
                                      capture_output=True, text=True, timeout=300)
                got = proc.stdout.splitlines()
                assert matches(expected, got), (f"$ {command}\nexpected:\n" + "\n".join(expected)
                                                 + "\ngot:\n" + proc.stdout + proc.stderr[-3000:])
                ran += 1
    assert ran >= 8
