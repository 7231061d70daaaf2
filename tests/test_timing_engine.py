"""The discrete-event engine: timed edges, fixed bodies, flows that share bandwidth."""
import pytest

from pyhcomm.timing.engine import (END_TO_DEP, END_TO_ISSUE, END_TO_START, ISSUE_TO_ISSUE, START_TO_ISSUE,
                                   Plan)


def test_a_chain_adds_dispatch_body_and_latencies():
    p = Plan()
    a = p.add(dispatch=1.0, body=2.0)
    b = p.add(dispatch=0.5, body=1.0)
    c = p.add(body=4.0)
    p.edge(a, b, END_TO_START)              # b waits for a on its stream
    p.edge(a, c, END_TO_DEP, latency=3.0)   # c needs a's signal, 3 s later
    assert p.run() == []
    assert (p.start[a], p.end[a]) == (0.0, 3.0)
    assert (p.start[b], p.end[b]) == (3.0, 4.5)
    assert (p.start[c], p.end[c]) == (0.0, 10.0)


def test_program_order_and_blocking_calls_move_the_issue_time():
    p = Plan()
    first = p.add(body=5.0)
    second = p.add(body=1.0)
    sync = p.add(body=0.25)
    after = p.add()
    launch = p.add(dispatch=1.0, body=0.0)
    inside = p.add()
    p.edge(first, second, ISSUE_TO_ISSUE, 2.0)   # submitted 2 s after the first
    p.edge(second, sync, ISSUE_TO_ISSUE, 2.0)
    p.edge(second, sync, END_TO_DEP)            # the sync returns after the second task ended
    p.edge(sync, after, END_TO_ISSUE, 2.0)      # the program goes on after the sync returned
    p.edge(after, launch, ISSUE_TO_ISSUE, 2.0)
    p.edge(launch, inside, START_TO_ISSUE, 30.0)
    assert p.run() == []
    assert p.issue[second] == 2.0 and p.end[second] == 3.0
    assert p.issue[sync] == 4.0 and p.end[sync] == 4.25
    assert p.issue[after] == 6.25 and p.issue[launch] == 8.25
    assert p.issue[inside] == 38.25


def test_flows_on_one_link_share_its_bandwidth():
    p = Plan()
    p.capacity = {"link": 10.0, "other": 10.0}
    a = p.add(nbytes=100, resources=["link"])
    b = p.add(nbytes=100, resources=["link"])
    c = p.add(nbytes=100, resources=["other"], body=1.0)
    assert p.run() == []
    assert p.end[a] == pytest.approx(20.0) and p.end[b] == pytest.approx(20.0)  # half the rate each
    assert p.end[c] == pytest.approx(11.0)                                      # alone: full rate


def test_a_flow_speeds_up_when_the_other_one_ends():
    p = Plan()
    p.capacity = {"port": 10.0}
    short = p.add(nbytes=50, resources=["port"])
    long = p.add(nbytes=150, resources=["port"])
    assert p.run() == []
    assert p.end[short] == pytest.approx(10.0)      # 5 B/s while both run
    assert p.end[long] == pytest.approx(20.0)       # 100 B left at 10 B/s


def test_the_slowest_resource_sets_the_rate():
    p = Plan()
    p.capacity = {"out0": 10.0, "in1": 10.0, "out2": 10.0}
    a = p.add(nbytes=100, resources=["out0", "in1"])
    b = p.add(nbytes=100, resources=["out2", "in1"])     # both enter rank 1: its port is shared
    assert p.run() == []
    assert p.end[a] == pytest.approx(20.0) and p.end[b] == pytest.approx(20.0)


def test_flows_that_do_not_overlap_in_time_do_not_contend():
    p = Plan()
    p.capacity = {"link": 10.0}
    a = p.add(nbytes=100, resources=["link"])
    b = p.add(nbytes=100, resources=["link"])
    p.edge(a, b, END_TO_DEP)
    assert p.run() == []
    assert p.end[a] == pytest.approx(10.0) and p.end[b] == pytest.approx(20.0)


def test_a_cycle_is_reported_not_hung():
    p = Plan()
    a = p.add()
    b = p.add()
    p.edge(a, b, END_TO_DEP)
    p.edge(b, a, END_TO_DEP)
    assert sorted(p.run()) == [a, b]


def _random_plan(rng, bulk: bool):
    """A random DAG of nodes (a third of them flows on four shared links) and timed edges."""
    import numpy as np
    n = 300
    dispatch, body = rng.random(n), rng.random(n)
    nbytes = np.where(rng.random(n) < 0.35, rng.integers(1, 1000, n), 0)
    res = [tuple(f"link{k}" for k in sorted(set(rng.integers(0, 4, 2).tolist()))) if b else None for b in nbytes]
    src = rng.integers(0, n - 1, 900)
    dst = src + 1 + (rng.random(900) * (n - 1 - src)).astype(np.int64)      # forward edges only: a DAG
    kind = rng.integers(0, 7, 900)
    lat = rng.random(900)
    p = Plan()
    p.capacity = {f"link{k}": 50.0 + 25 * k for k in range(4)}
    if bulk:
        p.add_nodes(dispatch, body, nbytes, res)
        p.add_edges(src[:500], dst[:500], kind[:500], lat[:500])
        p.add_edges(src[500:], dst[500:], kind[500:], lat[500:])
    else:
        for i in range(n):
            p.add(float(dispatch[i]), float(body[i]), int(nbytes[i]), res[i])
        for e in range(900):
            p.edge(int(src[e]), int(dst[e]), int(kind[e]), float(lat[e]))
    return p


def test_nodes_and_edges_added_as_arrays_give_the_same_times_as_one_by_one():
    import numpy as np
    for seed in range(5):
        one, many = _random_plan(np.random.default_rng(seed), False), _random_plan(np.random.default_rng(seed), True)
        assert one.run() == [] and many.run() == []
        assert list(one.issue) == list(many.issue)
        assert list(one.start) == list(many.start)
        assert list(one.end) == list(many.end)
        assert max(one.end) > 0 and len(one.res) > 50       # flows contended: a real case


def test_an_edge_to_a_node_that_does_not_exist_or_of_no_kind_is_refused():
    p = Plan()
    a = p.add()
    p.edge(a, a + 5, END_TO_DEP)
    with pytest.raises(IndexError, match="does not exist"):
        p.run()
    p = Plan()
    a, b = p.add(), p.add()
    p.edge(a, b, 9)
    with pytest.raises(ValueError, match="edge kind"):
        p.run()
