"""Every algorithm of the catalogue on every collective HCCL runs it for, byte-exact against numpy
(int32 sums: tests/algorithm_cases.py), with no finding of the verifier's checks; the hierarchies
HCCL's selection composes on two and four servers; the closed forms of every schedule against
the replay from 2 to 64 ranks.

CI runs a representative subset (each implementation at one rank count, each level-1 algorithm of
a hierarchy on one topology); ``--slow`` runs the whole matrix: 2..16 ranks and four servers, both
topologies of the hierarchies, every product HCCL runs the algorithm on, and the closed forms at
2..64 ranks.
"""

import pytest

import pyhcomm
from pyhcomm.collectives import algorithms
from pyhcomm.collectives.algorithm import Op
from pyhcomm.verify.check import run_findings
from algorithm_cases import A2A, A2AV, A2AVC, AG, AGV, AR, BCAST, REDUCE, RS, RSV, SCATTER, check_case

pytestmark = pytest.mark.timeout(600)
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
OPS = (AG, AGV, RS, RSV, AR, BCAST, REDUCE, SCATTER, A2A, A2AV, A2AVC)

#: The products HCCL runs each algorithm on (HCCL_ALGO.md, inter_server_algo_support.md; the A3
#: double ring; Atlas 350: NHR and the mesh), the first where CI runs it.
PRODUCTS = {
    "ring": (A2, A3), "mesh": (A2, A3, A350), "mesh_oneshot": (A2, A3, A350), "double_ring": (A3,),
    "hdr": (A2, A3), "nhr": (A2, A3, A350), "nhr_v1": (A2,), "nb": (A2, A3), "pipeline": (A2,),
    "pairwise": (A2, A3), "ahc": (A3, A2), "ahc_broke": (A3, A2), "star": (A2,),
}
#: Algorithms that need servers: (ranks, ranks a server) to run on.
SERVERS = {"pipeline": [(8, 4), (6, 2), (9, 3), (4, 1), (16, 8)], "ahc": [(7, 4), (5, 3), (11, 4), (8, 4)],
           "ahc_broke": [(8, 4), (6, 3), (12, 4), (4, 2)]}


def _impls():
    for a in algorithms.CATALOGUE:
        if a.name == "p2p":
            continue
        for op in OPS:
            if op in a.ops:
                yield a.name, op


IMPLS = list(_impls())
CI_RANKS = (3, 8, 5, 6, 7, 4, 2)


#: Four servers for the flat algorithms: (ranks, ranks a server)
FLAT_ON_SERVERS = [(8, 2), (16, 4)]


def _topologies(name, nranks_list):
    if name in SERVERS:
        return SERVERS[name]
    return [(n, 0) for n in nranks_list]


def _check(name, op, nranks, per_server, product, root=None):
    root = nranks - 1 if root is None else root
    sim = check_case(name, op, nranks, 37, product=product, per_server=per_server, root=root)
    found = run_findings(sim)
    assert not found, [f.title for f in found]


@pytest.mark.parametrize("name,op", IMPLS, ids=[f"{n}-{Op(o).name[9:]}" for n, o in IMPLS])
def test_every_algorithm_runs_its_collectives_byte_exact(name, op):
    """One rank count per implementation (CI), on the first product HCCL runs it on."""
    i = IMPLS.index((name, op))
    nranks, per = _topologies(name, [CI_RANKS[i % len(CI_RANKS)]])[i % len(_topologies(name, [1]))] \
        if name in SERVERS else (CI_RANKS[i % len(CI_RANKS)], 0)
    _check(name, op, nranks, per, PRODUCTS[name][0])


@pytest.mark.slow
@pytest.mark.parametrize("name,op", IMPLS, ids=[f"{n}-{Op(o).name[9:]}" for n, o in IMPLS])
def test_every_algorithm_on_2_to_16_ranks_on_every_product(name, op):
    """2..16 ranks (two servers past a server's devices), and four servers of two and of four."""
    for product in PRODUCTS[name]:
        for nranks, per in _topologies(name, range(2, 17)) + ([] if name in SERVERS else FLAT_ON_SERVERS):
            for root in sorted({0, nranks - 1, nranks // 2}) if op in (BCAST, REDUCE, SCATTER) else (None,):
                _check(name, op, nranks, per, product, root)


# -- the hierarchies on two and four servers ------------------------------------------------------------------
#: (product, hierarchy, ops): what HCCL's selection composes (collectives/selector.py)
HIERARCHIES = [(A2, f"level0:mesh;level1:{l1}", (AR, AG, AGV, RS, RSV, BCAST, REDUCE, SCATTER))
               for l1 in ("ring", "nhr", "hdr", "nb", "nhr_v1")]
HIERARCHIES += [(A3, "level0:double_ring;level1:nhr", (AR, AG, AGV, RS, RSV)),
                (A3, "level0:ring;level1:ring", (BCAST, REDUCE, SCATTER, AR)),
                (A3, "level0:double_ring;level1:ring;level2:nhr", (AR, AG, RS)),
                (A3, "level0:ring;level1:nb;level2:hdr", (AR, BCAST, RS)),
                (A3, "level0:ring;level1:ring;level2:hdr", (REDUCE, BCAST)),
                (A350, "level0:mesh;level1:nhr", (AR, AG, RS, BCAST, REDUCE, SCATTER))]
# (Atlas 350 between super pods: its collectives' channels are UB ones, which stop at a super pod
# in pyhcomm's topology today: no three-level Atlas 350 case.)
#: (ranks, ranks a server, ranks a super pod): two and four servers (and two super pods)
TWO_SERVERS, FOUR_SERVERS = (8, 4, 0), (8, 2, 0)
PODS = {2: (8, 2, 4), 4: (16, 2, 4)}


def _hier_cases(every: bool):
    out = []
    for product, name, listed in HIERARCHIES:
        ops = [op for op in listed if op in algorithms.find(name).ops]
        levels = name.count(";") + 1
        tops = [PODS[2], PODS[4]] if levels == 3 else [TWO_SERVERS, FOUR_SERVERS]
        if product == A3 and levels == 2:
            tops = [(8, 4, 0), (16, 4, 0)]          # whole SIO pairs in a server (the double ring)
        for i, op in enumerate(ops):
            for j, top in enumerate(tops):
                if every or (i + j) % len(tops) == 0 and i < 3:
                    out.append((product, name, op, top))
    return out


@pytest.mark.parametrize("product,name,op,top", _hier_cases(False),
                         ids=[f"{p[6:]}-{n}-{Op(o).name[9:]}-{t[0]}r{t[1]}" for p, n, o, t in _hier_cases(False)])
def test_hierarchies_byte_exact_on_two_and_four_servers(product, name, op, top):
    nranks, per, pod = top
    sim = check_case(name, op, nranks, 37, product=product, per_server=per, pod=pod, root=per + 1)
    assert not run_findings(sim)


@pytest.mark.slow
@pytest.mark.parametrize("product,name,op,top", _hier_cases(True),
                         ids=[f"{p[6:]}-{n}-{Op(o).name[9:]}-{t[0]}r{t[1]}" for p, n, o, t in _hier_cases(True)])
def test_every_hierarchy_on_two_and_four_servers(product, name, op, top):
    nranks, per, pod = top
    for root in (0, per + 1, nranks - 1) if op in (BCAST, REDUCE, SCATTER) else (0,):
        sim = check_case(name, op, nranks, 37, product=product, per_server=per, pod=pod, root=root)
        assert not run_findings(sim)


# -- through the C tier: the selection's choice, byte-exact ------------------------------------------------------
@pytest.mark.parametrize("product,nranks,per", [(A2, 16, 8), (A2, 32, 8), (A3, 32, 16), (A350, 16, 8)])
def test_the_selected_algorithms_through_the_c_tier(product, nranks, per):
    """HcclAllReduce / HcclAllGather / HcclReduceScatter / HcclBroadcast on two and four servers:
    the record names the hierarchy or algorithm HCCL's selection chose; every rank's bytes are numpy's."""
    import numpy as np
    from pyhcomm import acl
    from pyhcomm.config import Config
    from hcomm_testutil import malloc, read, write
    I32, SUM = pyhcomm.HCCL_DATA_TYPE_INT32, pyhcomm.HCCL_REDUCE_SUM
    count = 4099
    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=0, devices_per_server=per), product=product)
    out = {}

    def x(r, n):
        return (np.arange(n) * (r + 1) - 3 * r).astype(np.int32)

    def body(comm):
        r, n, h = comm.rank, comm.size, comm.handle
        stream, _ = acl.rt.create_stream()
        a, b = malloc(4 * count * n), malloc(4 * count * n)
        c = malloc(4 * count)
        write(a, x(r, count * n).view(np.uint8))
        write(c, x(r, count).view(np.uint8) if r == 1 else np.zeros(4 * count, np.uint8))
        assert pyhcomm.HcclAllReduce(a, b, count, I32, SUM, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        ar = read(b, 4 * count).view(np.int32).copy()
        assert pyhcomm.HcclReduceScatter(a, b, count, I32, SUM, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        rs = read(b, 4 * count).view(np.int32).copy()
        assert pyhcomm.HcclAllGather(a, b, count, I32, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        ag = read(b, 4 * count * n).view(np.int32).copy()
        assert pyhcomm.HcclBroadcast(c, count, I32, 1, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        out[r] = (ar, rs, ag, read(c, 4 * count).view(np.int32).copy())

    pyhcomm.launch(body, nranks, sim=sim)
    whole = [x(r, count * nranks) for r in range(nranks)]
    total = np.sum(whole, axis=0, dtype=np.int32)
    for r in range(nranks):
        ar, rs, ag, bc = out[r]
        assert np.array_equal(ar, np.sum([w[:count] for w in whole], axis=0, dtype=np.int32))
        assert np.array_equal(rs, total[r * count:(r + 1) * count])
        assert np.array_equal(ag, np.concatenate([w[:count] for w in whole]))
        assert np.array_equal(bc, x(1, count))
    names = {(e.name, e.algorithm) for e in sim.record.events() if e.kind == "Collective"}
    assert len({n for n, _a in names}) == 4 and len(names) == 4, names
    assert any(";" in a or a in ("nhr", "pipeline") for _n, a in names), names


def test_atlas_350_across_super_pods_runs_three_levels_over_ub_over_ethernet():
    """16 Atlas 350 ranks, servers of 4, super pods of 8: HcclAllReduce runs HCCL's three levels
    (UB inside a pod, UBoE between the pods) and every rank gets numpy's sum."""
    import numpy as np
    from pyhcomm import acl
    from pyhcomm.config import Config
    from hcomm_testutil import malloc, read, write
    I32, SUM = pyhcomm.HCCL_DATA_TYPE_INT32, pyhcomm.HCCL_REDUCE_SUM
    n, count = 16, 1031
    sim = pyhcomm.Sim(Config.from_env().with_values(devices_per_server=4, super_pod_size=8), product=A350)
    out = {}

    def x(r):
        return (np.arange(count) * (r + 1) - r).astype(np.int32)

    def body(comm):
        stream, _ = acl.rt.create_stream()
        a, b = malloc(4 * count), malloc(4 * count)
        write(a, x(comm.rank).view(np.uint8))
        assert pyhcomm.HcclAllReduce(a, b, count, I32, SUM, comm.handle, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        out[comm.rank] = read(b, 4 * count).view(np.int32).copy()

    pyhcomm.launch(body, n, sim=sim)
    want = np.sum([x(r) for r in range(n)], axis=0, dtype=np.int32)
    assert all(np.array_equal(out[r], want) for r in range(n))
    assert {e.algorithm for e in sim.record.events() if e.kind == "Collective"} == {"level0:mesh;level1:nhr;level2:nhr"}


# -- the closed forms from 2 to 64 ranks --------------------------------------------------------------------------
FLAT_RANKS = (2, 3, 4, 5, 7, 8, 12, 16, 31, 64)
#: More topologies for the algorithms that run between servers: (ranks, ranks a server)
MORE_SERVERS = [(32, 4), (64, 8)]


def closed_form_cases():
    """(product, algorithm, op, [(ranks, ranks a server, ranks a super pod), ...]): every
    implementation with a schedule on every product HCCL runs it on (and Atlas A2 and A3), flat
    from 2 to 64 ranks and on four servers or, between servers, on the topologies above; every
    hierarchy on two and four servers (or super pods) and on 64 ranks."""
    out = []
    for a in algorithms.CATALOGUE:
        for i in a.implementations:
            if i.schedule is None:
                continue
            tops = [(n, per, 0) for n, per in SERVERS[a.name] + MORE_SERVERS] if a.name in SERVERS \
                else [(n, 0, 0) for n in FLAT_RANKS] + [(n, per, 0) for n, per in FLAT_ON_SERVERS]
            for product in sorted(set(PRODUCTS[a.name]) | {A2, A3}):
                out.append((product, a.name, i.op, tops))
    for product, name, listed in HIERARCHIES:
        levels = name.count(";") + 1
        tops = [PODS[2], PODS[4], (64, 4, 16)] if levels == 3 else \
            [(8, 4, 0), (16, 4, 0), (64, 16, 0)] if product == A3 else [TWO_SERVERS, FOUR_SERVERS, (64, 8, 0)]
        out += [(product, name, op, tops) for op in listed if op in algorithms.find(name).ops]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("product,algorithm,op,tops", closed_form_cases(),
                         ids=[f"{p[6:]}-{a}-{Op(o).name[9:]}" for p, a, o, _t in closed_form_cases()])
def test_every_closed_form_within_5_percent_of_the_replay_from_2_to_64_ranks(product, algorithm, op, tops):
    from timing_cases import modeled
    for nranks, per, pod in tops:
        seconds, closed, _tl = modeled(product, (algorithm, op), nranks, 64 << 10, per_server=per, pod=pod)
        assert seconds == pytest.approx(closed, rel=0.05), (nranks, per, pod, seconds, closed)
