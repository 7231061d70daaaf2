"""The fuzz suite (issue 8): random valid and invalid call sequences over the C and acl tiers, on
2-4 ranks, from one host thread, several host threads and AI CPU kernels, with a model of every
buffer's bytes and canaries around each (:mod:`fuzz_machine`, :mod:`fuzz_concurrency`).

CI runs the ``ci`` profile (a fixed seed, a bounded budget). A long run::

    PYHCOMM_FUZZ_MINUTES=3 python -m pytest tests/fuzz --hypothesis-profile=long --hypothesis-seed=7 -p no:cacheprovider

runs the machine for that many minutes, in rounds of examples whose seeds derive from
``--hypothesis-seed``; a finding prints the shortest call sequence that shows it.
"""
import logging
import os
import time

import hypothesis
import pytest
from hypothesis import settings
from hypothesis.stateful import get_state_machine_test, run_state_machine_as_test

from fuzz_calls import STATS
from fuzz_concurrency import FuzzMachine

pytestmark = pytest.mark.threads


class Counted(FuzzMachine):
    def __init__(self):
        super().__init__()
        STATS.examples += 1


@pytest.fixture
def quiet():
    """Failed calls log an error each: thousands of them are noise here."""
    log = logging.getLogger("pyhcomm")
    level = log.level
    log.setLevel(logging.CRITICAL)
    yield
    log.setLevel(level)


def test_fuzz_c_and_acl_tiers(request, quiet):
    profile = request.config.getoption("hypothesis_profile", None) or "ci"
    if profile != "long":
        run_state_machine_as_test(Counted, settings=settings())
        return
    minutes = float(os.environ.get("PYHCOMM_FUZZ_MINUTES", "3"))
    base = int(request.config.getoption("hypothesis_seed", None) or 0)
    deadline = time.monotonic() + minutes * 60
    rounds = 0
    while time.monotonic() < deadline:
        test = get_state_machine_test(Counted, settings=settings())
        hypothesis.seed(base * 1_000_003 + rounds)(test)()
        rounds += 1
