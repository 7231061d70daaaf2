"""The fuzz suite (issue 8): random valid and invalid call sequences over the C and acl tiers, on
2-4 ranks, from one host thread, several host threads and AI CPU kernels, with a model of every
buffer's bytes and canaries around each (:mod:`fuzz_machine`, :mod:`fuzz_concurrency`), on Atlas A2
(host orchestration), Atlas A3 and Atlas 350 (AI CPU orchestration; Atlas 350 runs local
operations on the device side only). Issue 31 widened it to the classes of what a second fuzzer
found: every integer, enum and float argument of the calls it can make valid as ``None``, a bool
and numpy scalars (:mod:`fuzz_forms`), host-only runtime calls made inside AI CPU kernels, kernels
waiting for their own stream (alone or through another kernel), and resources created while a
blocking call is in progress (:mod:`fuzz_concurrency`).

CI runs the ``ci`` profile (a fixed seed, a bounded budget: Atlas A2 gets most examples). A long
run::

    PYHCOMM_FUZZ_MINUTES=3 python -m pytest tests/fuzz --hypothesis-profile=long --hypothesis-seed=7

fuzzes for that many minutes in all (split over the products), in rounds of examples whose seeds
derive from ``--hypothesis-seed``, and prints the number of calls; a finding prints the shortest
call sequence that shows it.
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

#: Product -> its share of the examples (and of a long run's minutes).
PRODUCTS = {"Atlas 800T A2": 3, "Atlas A3": 1, "Atlas 350": 1}


def machine_for(product: str):
    class Counted(FuzzMachine):
        PRODUCT = product

        def __init__(self):
            super().__init__()
            STATS.examples += 1

    Counted.__name__ = f"FuzzMachine_{product.replace(' ', '_')}"
    return Counted


@pytest.fixture
def quiet():
    """Failed calls log an error each: thousands of them are noise here."""
    log = logging.getLogger("pyhcomm")
    level = log.level
    log.setLevel(logging.CRITICAL)
    yield
    log.setLevel(level)


@pytest.mark.parametrize("product", list(PRODUCTS))
def test_fuzz_c_and_acl_tiers(request, quiet, product):
    machine = machine_for(product)
    share = PRODUCTS[product] / sum(PRODUCTS.values())
    profile = request.config.getoption("hypothesis_profile", None) or "ci"
    if profile != "long":
        base = settings()
        run_state_machine_as_test(machine, settings=settings(base, max_examples=max(
            1, round(base.max_examples * share * len(PRODUCTS) / 3))))
        return
    minutes = float(os.environ.get("PYHCOMM_FUZZ_MINUTES", "3")) * share
    seed = int(request.config.getoption("hypothesis_seed", None) or 0)
    deadline = time.monotonic() + minutes * 60
    rounds = 0
    while time.monotonic() < deadline:
        test = get_state_machine_test(machine, settings=settings())
        hypothesis.seed(seed * 1_000_003 + rounds)(test)()
        rounds += 1
