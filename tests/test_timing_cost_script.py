"""benchmarks/timing_cost.py: the plain run, the graph and the replay of one data-less collective."""
import pytest

from pyhcomm.timing import closed_form as cf
from pyhcomm.timing import cost_model
import benchmark_script


@pytest.fixture(scope="module")
def bench():
    return benchmark_script.load("timing_cost")


def test_a_case_counts_the_record_and_models_the_closed_form(bench):
    r = bench.case("Atlas A3", "ring_allgather", 4, 1024)
    # 4 ranks: the record holds every task and host effect; each step is a positive CPU time
    assert r["entries"] > 4 * 3 * 2
    assert all(r[k] > 0 for k in ("run", "graph", "replay"))
    # the kernel splits a process's CPU time into user and system by sampling at its clock tick, so
    # a short run may show all of it as system time: only their sum is sure to grow
    assert min(r["user"] + r["system"]) >= 0 and r["user"][0] + r["system"][0] > 0
    m = cost_model("Atlas A3")
    closed = cf.ring_allgather(m, 4, 1024, m.link("COMM_PROTOCOL_HCCS"), True)
    assert r["modeled_us"] == pytest.approx(closed * 1e6, rel=0.05)


def test_the_table_has_a_row_per_rank_count(bench, capsys):
    assert bench.main(["--ranks", "2,3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line and not line.startswith(("#", " ranks"))]
    assert [row[0] for row in rows] == ["2", "3"]
    for row in rows:
        entries, modeled = int(row[1].replace(",", "")), float(row[7])
        assert entries > 0 and modeled > 0 and float(row[5]) >= 0     # ratio: (graph + replay) / run
        assert float(row[8]) >= 0                                       # the same in user time
        assert all(float(x) >= 0 for x in row[9].split("/"))          # system seconds: run / graph + replay


def test_repeat_prints_a_row_per_run_and_the_median_ratios(bench, capsys):
    assert bench.main(["--ranks", "2", "--repeat", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out if line and not line.startswith(("#", " ranks"))]
    assert [row[0] for row in rows] == ["2", "2", "2"]
    medians = [line for line in out if line.startswith("# 2 ranks, median of 3 runs:")]
    assert len(medians) == 1
    ratio = float(medians[0].split("ratio ")[1].split(",")[0])
    assert ratio == pytest.approx(sorted(float(row[5]) for row in rows)[1], abs=0.006)   # printed to 0.01
