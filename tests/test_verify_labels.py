"""Findings a program labels deliberate (``# pyhcomm: deliberate KIND`` on a line the finding
names): still reported, marked with the label's place, and not counted (``Report.ok``, the exit
status of ``python -m pyhcomm verify``, ``raise_for_findings``); a label of another kind, or on a
line the finding does not name, labels nothing."""
import inspect
import json

import pytest

import pyhcomm
from pyhcomm.verify import cli

pytestmark = pytest.mark.timeout(120)


def _read_early(comm, how):
    dev = pyhcomm.Device(comm.device)
    t = comm.thread(stream=dev.stream())
    src, dst = dev.malloc(64), dev.malloc(64)
    t.local_copy(dst, src)
    if how == "labelled":
        dst.read()          # pyhcomm: deliberate race (the copy may not have run yet)
    elif how == "other kind":
        dst.read()          # pyhcomm: deliberate hang
    else:
        dst.read()
    t.synchronize()


def _line_of(text):
    lines, first = inspect.getsourcelines(_read_early)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_a_labelled_race_is_reported_as_deliberate_and_does_not_count():
    report = pyhcomm.verify.check(_read_early, 1, "labelled", schedules=2)
    assert [f.kind for f in report.findings] == ["race"]
    where = report.labelled[report.findings[0].key]
    assert where.endswith(f"test_verify_labels.py:{_line_of('deliberate race (')}")
    assert report.ok and report.unexpected == [] and bool(report)
    report.raise_for_findings()                          # nothing to raise
    head, first = report.text().splitlines()[:2]
    assert head.endswith("1 finding(s), 1 labelled deliberate")
    assert first.startswith(f"[1] race (deliberate, labelled at {where}): read and write of 64 bytes of rank 0's ")
    assert report.to_json()["findings"][0]["deliberate"] == where


@pytest.mark.parametrize("how", ["unlabelled", "other kind"])
def test_an_unlabelled_race_or_a_label_of_another_kind_counts(how):
    report = pyhcomm.verify.check(_read_early, 1, how, schedules=2)
    assert [f.kind for f in report.findings] == ["race"] and report.labelled == {}
    assert not report.ok and report.unexpected == report.findings
    assert "deliberate" not in report.text()
    with pytest.raises(pyhcomm.verify.VerificationError):
        report.raise_for_findings()


SCRIPT = '''
import pyhcomm

def main(comm):
    dev = pyhcomm.Device(comm.device)
    t = comm.thread(stream=dev.stream())
    src, dst = dev.malloc(64), dev.malloc(64)
    t.local_copy(dst, src)
    dst.read(){label}
    t.synchronize()
'''


@pytest.mark.parametrize("label,status", [("   # pyhcomm: deliberate race", 0), ("", 1)])
def test_the_command_line_exits_0_when_every_finding_is_labelled(tmp_path, monkeypatch, capsys, label, status):
    script = tmp_path / "early.py"
    script.write_text(SCRIPT.format(label=label))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.json"
    assert cli.main(["early.py", "--ranks", "2", "--schedules", "2", "--json", str(out)]) == status
    text = capsys.readouterr().out
    findings = json.loads(out.read_text())["findings"]
    assert [f["kind"] for f in findings] == ["race"]
    assert findings[0]["deliberate"] == ("early.py:9" if label else None)
    assert ("race (deliberate, labelled at early.py:9)" in text) == bool(label)
