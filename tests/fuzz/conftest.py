"""The fuzz suite's settings: profiles ``ci`` (the default: a fixed seed and a bounded budget) and
``long`` (``python -m pytest tests/fuzz --hypothesis-profile=long``: the suite runs for
``PYHCOMM_FUZZ_MINUTES`` minutes in all, 3 by default, from ``--hypothesis-seed``, 0 by default);
the suite runs on the threaded scheduler only, so the cooperative pass of CI leaves it out. Its
tests' timeouts cover the budget and the shrinking of a finding."""
import os

import pytest
from hypothesis import HealthCheck, settings

from fuzz_calls import STATS

_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, print_blob=True)
settings.register_profile("ci", max_examples=250, stateful_step_count=30, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=40, stateful_step_count=60, **_COMMON)


def pytest_configure(config):
    settings.load_profile(config.getoption("hypothesis_profile", None) or "ci")


#: Seconds a finding may take to be shrunk and explained (Hypothesis stops shrinking after 300 s)
#: on top of a test's budget: the test's timeout covers them, so a finding is reported shrunk.
SHRINK_S = 600


def pytest_collection_modifyitems(config, items):
    long = (config.getoption("hypothesis_profile", None) or "ci") == "long"
    budget = float(os.environ.get("PYHCOMM_FUZZ_MINUTES", "3")) * 60 + 120 if long else 120
    for item in items:
        if "fuzz" in item.nodeid.split("::")[0]:
            item.add_marker(pytest.mark.timeout(budget + SHRINK_S))
    if os.environ.get("PYHCOMM_SCHEDULER") == "coop":
        skip = pytest.mark.skip(reason="the fuzz suite runs once, on the threaded scheduler")
        for item in items:
            if "fuzz" in item.nodeid.split("::")[0]:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    if STATS.calls:
        terminalreporter.write_line(f"fuzz: {STATS.calls} calls in {STATS.examples} examples")
