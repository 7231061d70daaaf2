"""A pytest plugin: a user's tests fail on the verifier's findings.

Load it with ``-p pyhcomm.verify.pytest_plugin`` or ``pytest_plugins = ["pyhcomm.verify.pytest_plugin"]``
in a ``conftest.py``. Then:

* a test that takes the ``pyhcomm_verify`` fixture is checked: every ``pyhcomm.launch`` it makes
  and its default simulation (what it did without ``launch``) are analysed when the test's body
  returns, and the test fails with the findings (:class:`pyhcomm.verify.VerificationError`);
* ``pytest --pyhcomm-verify`` checks every test that way.

The fixture's value is the :class:`pyhcomm.verify.env.Session` collecting the launches; it also
offers ``check(fn, nranks, ...)`` (:func:`pyhcomm.verify.check`, which explores schedules) whose
findings fail the test the same way.
"""
from __future__ import annotations

import pytest

from .check import Report, VerificationError, check, run_findings
from .env import Session, _sessions, schedule_of


def pytest_addoption(parser):
    parser.addoption("--pyhcomm-verify", action="store_true", default=False,
                     help="pyhcomm: fail every test whose launches (or default simulation) have verifier findings")


class _Checked(Session):
    """The fixture's session: launches, and the reports of ``check`` calls made in the test."""

    def __init__(self):
        super().__init__()
        self.reports: list = []
        self.default = None

    def check(self, fn, nranks, *args, **kwargs) -> Report:
        report = check(fn, nranks, *args, **kwargs)
        self.reports.append(report)
        return report


def _findings(s: _Checked) -> Report:
    import pyhcomm
    report = Report("this test", 0, pyhcomm.get_product().name)
    for sim, error in s.launches:
        report.add(run_findings(sim, error), *schedule_of(sim))
    sim = pyhcomm.current_sim()
    if sim is not s.default and (len(sim.record) or sim.record.host_effects()):
        report.add(run_findings(sim), *schedule_of(sim))
    for r in s.reports:
        report.add(r.findings, None, None)
    report.schedules.append(("this test", len(report.findings), 0.0))
    return report


@pytest.fixture
def pyhcomm_verify():
    """Check the test's launches and default simulation after its body (see the module docstring)."""
    s = _Checked()
    _sessions.append(s)
    try:
        yield s
    finally:
        if s in _sessions:
            _sessions.remove(s)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    s = None
    if "pyhcomm_verify" in getattr(item, "fixturenames", ()):
        s = item.funcargs.get("pyhcomm_verify")
    elif item.config.getoption("--pyhcomm-verify"):
        s = _Checked()
        _sessions.append(s)
    outcome = yield
    if s is None:
        return
    try:
        if outcome.excinfo is None:
            report = _findings(s)
            if not report.ok:
                # the test fails with them (VerificationError's text, without this hook's frames)
                outcome.force_exception(pytest.fail.Exception(str(VerificationError(report)), pytrace=False))
    finally:
        if s in _sessions and "pyhcomm_verify" not in getattr(item, "fixturenames", ()):
            _sessions.remove(s)


__all__ = ["pyhcomm_verify"]
