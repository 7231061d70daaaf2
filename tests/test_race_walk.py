"""The race detector's walk against the graph it walks, and the notify checks' two paths.

The walk joins only the edges it needs and visits only some entries (pyhcomm.analysis.race,
``_Plan``); its vector clocks must still say exactly what a search of the graph says. The notify
checks read numpy columns when every notify use ran, per-use objects otherwise; both must give
the same findings.
"""
import pytest

import pyhcomm
from pyhcomm.spmd import LaunchTimeout, RankError
from pyhcomm.analysis import analyze, notifies
from pyhcomm.analysis.happens_before import NBI_KINDS, build
from pyhcomm.analysis.notifies import notify_queries, notify_uses
from pyhcomm.analysis.race import RaceDetector
from pyhcomm.verify.check import quiet_log
from pyhcomm.verify.explore import parse
from mutation_suite import MUTANTS, applied, custom_allgather
from verify_programs import collective

pytestmark = pytest.mark.timeout(120)
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"


def _run(fn, nranks, product, schedule="fifo", expect_error=False):
    sim = pyhcomm.Sim(product=product, scheduler="coop", data=False, product_chosen=True)
    sim.scheduler.set_policy(parse(schedule))
    with quiet_log():
        try:
            pyhcomm.launch(fn, nranks, sim=sim, timeout=60)
        except (RankError, LaunchTimeout):
            if not expect_error:
                raise
    return sim


@pytest.mark.parametrize("fn, nranks, product, schedule", [
    (collective("ring_allgather"), 4, A2, "fifo"),
    (collective("allreduce"), 4, A2, "random:3"),
    (collective("allgather"), 3, A3, "fifo"),          # AI CPU kernels, thread notifies
    (collective("alltoall"), 4, A350, "random:5"),
    (custom_allgather(None), 4, A2, "pct:3:5:120"),
], ids=["ring-A2", "allreduce-A2", "allgather-A3", "alltoall-350", "custom-A2"])
def test_the_walks_clocks_order_exactly_what_a_path_of_the_graph_orders(fn, nranks, product, schedule):
    sim = _run(fn, nranks, product, schedule)
    g = build(sim)
    det = RaceDetector(g, notify_queries(g, notify_uses(g))).run()
    assert not g.coalesced and not det.never_ran     # every edge guaranteed: the clocks are the graph's
    seqs, entries = g.seqs, g.entries
    ran = set(g.order())
    executed = [i for i, s in enumerate(seqs) if s in ran]
    ends = {}                                           # program -> its last host effect
    for i in executed:
        e = entries[i]
        if e.entry == "host" and e.kind not in NBI_KINDS and e.program is not None:
            ends[e.program] = i
    assert len(ends) >= nranks
    checked = ordered = 0
    for p, end in ends.items():
        for i in executed:
            if i == end or det.chain_of[i] == det.chain_of[end]:
                continue
            expect = g.happens_before(seqs[i], seqs[end])
            assert det.ordered_before_end(i, p) == expect, (entries[i], entries[end])
            checked += 1
            ordered += expect
    assert 0 < ordered < checked                         # both answers occur


_NOTIFY_MUTANTS = [m for m in MUTANTS if {"lost-record", "late-wait", "notify-left-set"} & set(m.expect)]


@pytest.mark.parametrize("m", _NOTIFY_MUTANTS, ids=[m.name for m in _NOTIFY_MUTANTS])
@pytest.mark.parametrize("schedule", ["fifo", "random:2"])
def test_the_notify_checks_find_the_same_from_columns_as_from_use_objects(m, schedule, monkeypatch):
    with applied(m):
        sim = _run(m.program, m.nranks, m.product, schedule, expect_error=True)
    fast = analyze(sim)
    g = build(sim)
    took_columns = notify_uses(g).fast is not None
    monkeypatch.setattr(notifies, "_fast_columns", lambda graph: None)
    slow = analyze(sim)
    assert [f.text() for f in fast] == [f.text() for f in slow]
    if took_columns:
        assert {f.kind for f in fast} & {"lost-record", "late-wait", "notify-left-set"}


def test_columns_are_used_when_every_notify_use_ran_and_not_after_a_hang():
    clean = build(_run(collective("ring_allgather"), 4, A2))
    assert notify_uses(clean).fast is not None
    hang = next(m for m in MUTANTS if m.name == "custom_wrong_notify_index")
    with applied(hang):
        stuck = build(_run(hang.program, hang.nranks, hang.product, expect_error=True))
    assert notify_uses(stuck).fast is None
