"""The mutation suite: every broken variant is rejected with the right kind of finding within 32
schedules; every correct collective runs and gives no finding on every product whose support table
has it, and returns the refusal code, enqueuing nothing, on every other (CI: a representative subset
of rank counts; the full matrices are marked slow: ``pytest --slow tests/test_verify_mutants.py``)."""
import pyhcomm
import pytest

from pyhcomm.verify import check
from ccu_programs import ccu_allgather
from mutation_suite import A2, A3, A350, AIV_CORRECT, CORRECT, MUTANTS, Mutant, applied, rejected, verify
from verify_programs import OPS, PRODUCTS, SUCCESS, collective, expected_code

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


def _aiv_correct_is_clean(nranks: int, schedules: int) -> None:
    program, patches = AIV_CORRECT
    with applied(Mutant("aiv_correct", "", (), program, patches=patches)):
        report = check(program, nranks, product=A350, schedules=schedules, data=True)
    assert report.ok, f"the corrected AIV AllGather on {nranks} ranks:\n{report.text()}"


@pytest.mark.parametrize("nranks", [2, 3, 5, 8])
def test_the_corrected_aiv_allgather_gives_no_finding(nranks):
    _aiv_correct_is_clean(nranks, schedules=4)


def test_the_suite_has_the_aiv_defects_the_issue_names():
    aiv = {m.name for m in MUTANTS if m.name.startswith("aiv_")}
    assert aiv >= {"aiv_missing_flag_wait", "aiv_wrong_peer_flag", "aiv_constant_tag_no_reset", "aiv_read_before_copy"}


SUBSET = [(p, n) for p in (A2, A3, A350) for n in (1, 2, 3, 5, 8)] + [(p, 4) for p in PRODUCTS
                                                                       if p not in (A2, A3, A350)]
RANKS = {p: [n for q, n in SUBSET if q == p] for p in PRODUCTS}
SUPPORTED = [(op, p) for op in OPS for p in PRODUCTS if expected_code(op, p) == SUCCESS]
REFUSED = [(op, p) for op in OPS for p in PRODUCTS if expected_code(op, p) != SUCCESS]


def _checked(op, product, n, **options):
    """``check`` of collective ``op`` on ``n`` ranks of ``product``; with the code each rank's call
    returned and the tasks the run recorded (as each rank saw them when it ended)."""
    body, codes, tasks = collective(op, **options.pop("program", {})), {}, {}

    def run(comm):
        codes[comm.rank] = body(comm)
        tasks[comm.rank] = len(pyhcomm.current_sim().record.tasks())

    report = check(run, n, product=product, data=False, **options)
    return report, [codes.get(r) for r in range(n)], max(tasks.values(), default=0)


def test_the_matrix_splits_into_supported_and_refused_pairs():
    """The support tables (collectives/support.py) refuse 30 of the 16 x 9 op x product pairs."""
    assert len(SUPPORTED) + len(REFUSED) == len(OPS) * len(PRODUCTS) == 144 and len(REFUSED) == 30


@pytest.mark.parametrize("op, product", SUPPORTED, ids=[f"{op}-{p}" for op, p in SUPPORTED])
def test_every_supported_collective_runs_and_is_clean(op, product):
    """One schedule each on the suite's scheduler, on the subset's rank counts: every rank's call
    succeeds, tasks run (on 2 ranks and more), and the verifier finds nothing."""
    for n in RANKS[product]:
        report, codes, tasks = _checked(op, product, n, schedules=1, scheduler=_scheduler())
        assert codes == [SUCCESS] * n, f"{op} on {product}, {n} ranks: {codes}"
        assert tasks or n == 1, f"{op} on {product}, {n} ranks recorded no task"
        assert report.ok, f"{op} on {product}, {n} ranks:\n{report.text()}"


@pytest.mark.parametrize("op, product", REFUSED, ids=[f"{op}-{p}" for op, p in REFUSED])
def test_every_refused_collective_returns_its_code_and_enqueues_nothing(op, product):
    for n in (2, 4):
        sim = pyhcomm.Sim(product=product, data=False)
        codes = pyhcomm.launch(collective(op), n, sim=sim)
        assert codes == [expected_code(op, product)] * n, f"{op} on {product}, {n} ranks"
        assert len(sim.record.tasks()) == 0


# -- the full matrices (on demand) ---------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("op, product", SUPPORTED, ids=[f"{op}-{p}" for op, p in SUPPORTED])
@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_every_collective_is_clean_on_1_to_16_ranks(op, product, scheduler):
    """Two calls in a row (the second reuses what the first left), 4 schedules on coop."""
    for n in range(1, 17):
        report, codes, _tasks = _checked(op, product, n, scheduler=scheduler, program={"calls": 2},
                                         schedules=4 if scheduler == "coop" else 1)
        assert codes == [SUCCESS] * n and report.ok, f"{op} on {product}, {n} ranks, {scheduler}: {codes}\n{report.text()}"


@pytest.mark.slow
@pytest.mark.parametrize("nranks", range(2, 17))
def test_the_corrected_aiv_allgather_is_clean_on_2_to_16_ranks(nranks):
    _aiv_correct_is_clean(nranks, schedules=8)


def test_the_suite_has_the_ccu_defects_the_issue_names():
    ccu = {m.name for m in MUTANTS if m.name.startswith("ccu_")}
    assert ccu >= {"ccu_missing_notify_wait", "ccu_wrong_mask", "ccu_no_post_sync", "ccu_write_before_pre_sync",
                   "ccu_loadarg_count_mismatch", "ccu_event_wait_unrecorded"}


@pytest.mark.parametrize("nranks", [2, 5])
def test_the_ccu_allgather_is_clean_on_a_representative_subset(nranks):
    report = check(ccu_allgather(None), nranks, product=A350, schedules=2, data=False, scheduler=_scheduler())
    assert report.ok, report.text()


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_the_ccu_allgather_is_clean_on_2_to_16_ranks(scheduler):
    for n in range(2, 17):
        report = check(ccu_allgather(None), n, product=A350, data=False, scheduler=scheduler,
                       schedules=4 if scheduler == "coop" else 1)
        assert report.ok, f"CCU AllGather on {n} ranks, {scheduler}:\n{report.text()}"


LIBRARY = [m for m in MUTANTS if m.product == A2 and m.nranks >= 3 and not m.name.startswith("custom")]


@pytest.mark.slow
@pytest.mark.parametrize("m", LIBRARY, ids=[m.name for m in LIBRARY])
@pytest.mark.parametrize("product", [A2, A3, A350])
@pytest.mark.parametrize("nranks", [3, 4, 8])
def test_every_library_mutant_is_rejected_on_every_product(m, product, nranks):
    report = verify(m, schedules=32, product=product, nranks=nranks)
    assert rejected(m, report), f"{m.name} on {product}, {nranks} ranks: expected {m.expect}\n{report.text()}"
