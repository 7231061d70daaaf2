"""The mutation suite: every broken variant is rejected with the right kind of finding within 32
schedules; every correct collective gives no finding (CI: a representative subset; the full
matrices are marked slow: ``pytest --slow tests/test_verify_mutants.py``)."""
import pyhcomm
import pytest

from pyhcomm.verify import check
from mutation_suite import A2, A3, A350, CORRECT, MUTANTS, rejected, verify
from verify_programs import OPS, PRODUCTS, collective

pytestmark = pytest.mark.timeout(600)


def _scheduler() -> str:
    """The suite's scheduler (CI runs the suite on both)."""
    return pyhcomm.current_sim().scheduler.name


@pytest.mark.parametrize("m", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_mutant_is_rejected_with_its_kind_of_finding(m):
    report = verify(m, schedules=32)
    assert rejected(m, report), f"{m.name}: {m.what}: expected {m.expect}\n{report.text()}"
    finding = next(f for f in report.findings if f.kind in m.expect)
    assert finding.schedule and finding.replay and finding.lines


def test_the_suite_has_every_kind_of_defect_the_issue_names():
    names = {m.name for m in MUTANTS}
    assert len(MUTANTS) >= 20 and len(names) == len(MUTANTS)
    assert {k for m in MUTANTS for k in m.expect} >= {"race", "lost-record", "late-wait", "notify-left-set", "hang",
                                                       "unsynchronized"}


@pytest.mark.parametrize("name, program, nranks, product", CORRECT, ids=[c[0] for c in CORRECT])
def test_the_correct_counterparts_give_no_finding(name, program, nranks, product):
    report = check(program, nranks, product=product, schedules=6, data=False)
    assert report.ok, report.text()


SUBSET = [(p, n) for p in (A2, A3, A350) for n in (1, 2, 3, 5, 8)] + [(p, 4) for p in PRODUCTS
                                                                       if p not in (A2, A3, A350)]


@pytest.mark.parametrize("op", OPS)
def test_every_collective_is_clean_on_a_representative_subset(op):
    """One schedule each on the suite's scheduler: products x rank counts."""
    for product, n in SUBSET:
        report = check(collective(op), n, product=product, schedules=1, data=False, scheduler=_scheduler())
        assert report.ok, f"{op} on {product}, {n} ranks:\n{report.text()}"


# -- the full matrices (on demand) ---------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_every_collective_is_clean_on_1_to_16_ranks(op, product, scheduler):
    """Two calls in a row (the second reuses what the first left), 4 schedules on coop."""
    for n in range(1, 17):
        report = check(collective(op, calls=2), n, product=product, data=False, scheduler=scheduler,
                       schedules=4 if scheduler == "coop" else 1)
        assert report.ok, f"{op} on {product}, {n} ranks, {scheduler}:\n{report.text()}"


LIBRARY = [m for m in MUTANTS if m.product == A2 and m.nranks >= 3 and not m.name.startswith("custom")]


@pytest.mark.slow
@pytest.mark.parametrize("m", LIBRARY, ids=[m.name for m in LIBRARY])
@pytest.mark.parametrize("product", [A2, A3, A350])
@pytest.mark.parametrize("nranks", [3, 4, 8])
def test_every_library_mutant_is_rejected_on_every_product(m, product, nranks):
    report = verify(m, schedules=32, product=product, nranks=nranks)
    assert rejected(m, report), f"{m.name} on {product}, {nranks} ranks: expected {m.expect}\n{report.text()}"
