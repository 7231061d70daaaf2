"""HCCL_ALGO and the communicator config's hcclAlgo: parsed with HCCL's syntax (defs/hccl_algo.py),
refused where HCCL refuses them (communicator init: HCCL_E_PARA), and the algorithm a call then
runs (in the record), an unsupported choice falling back with a log line."""
import logging

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.config import Config
from pyhcomm.defs import hccl_algo
from pyhcomm.defs.hccl_types import HcclCMDType as Op
from hcomm_testutil import malloc, read, write

A2 = "Atlas 800T A2"


@pytest.mark.parametrize("text,levels", [
    ("level0:NA;level1:NHR", ("NA", "NHR", "", "")),
    (" level0:NA; level1:H-D_R ;level2:ring", ("NA", "H-D_R", "ring", "")),
    ("level1:pipeline", ("", "pipeline", "", "")),
    ("level0:null;level1:AHC", ("null", "AHC", "", "")),
    ("level3:NB;level0:NA", ("NA", "", "", "NB")),
])
def test_the_common_form(text, levels):
    cfg = hccl_algo.parse(text)
    assert cfg.every == levels and cfg.levels(Op.HCCL_CMD_ALLREDUCE) == levels
    assert cfg.levels(Op.HCCL_CMD_BROADCAST) == levels


def test_the_per_operator_form_and_what_alltoall_configures():
    cfg = hccl_algo.parse("allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R/alltoall=level0:NA;"
                          "level1:pairwise")
    assert cfg.levels(Op.HCCL_CMD_ALLREDUCE) == ("NA", "ring", "", "")
    assert cfg.levels(Op.HCCL_CMD_ALLGATHER) == ("NA", "H-D_R", "", "")
    assert cfg.levels(Op.HCCL_CMD_ALLGATHER_V) == ("", "", "", "")       # the code configures AllGather only
    assert cfg.levels(Op.HCCL_CMD_ALLTOALLV) == cfg.levels(Op.HCCL_CMD_ALLTOALLVC) == ("NA", "pairwise", "", "")
    assert cfg.levels(Op.HCCL_CMD_REDUCE) == ("", "", "", "")
    assert not hccl_algo.parse("   ") and not hccl_algo.parse(None)


@pytest.mark.parametrize("text,why", [
    ("level1:ringx", "algo ringx is not supported"),
    ("level1:Ring", "algo Ring is not supported"),
    ("level4:ring", "level level4 is not supported"),
    ("level1:ring;level1:NHR", "level1 is configured twice"),
    (";level1:ring", "a ';' first or last"),
    ("level1:ring;", "a ';' first or last"),
    ("level1:ring/", "a '/' first or last"),
    ("/level1:ring", "a '/' first or last"),
    ("level1", "is not level:algorithm"),
    ("level1:", "is not level:algorithm"),
    (":ring", "is not level:algorithm"),
    ("level0:NA;level1:ring;level2:NHR;level3:NB;level1:ring", "more than 4 levels"),
    ("level0:NA;level1:ring/allreduce=level0:NA;level1:ring", "both the common and the per-operator form"),
    ("level0:NA/level1:ring", "more than one common form"),
    ("=level0:NA;level1:ring", "an '=' first or last"),
    ("allreduce=", "an '=' first or last"),
    ("others=level0:NA;level1:ring", "optype[others] is invalid"),
    ("allgatherv=level0:NA;level1:ring", "optype[allgatherv] is invalid"),
    ("allreduce=level0:null;level1:ring", "level0 cannot be null"),
])
def test_what_hccl_refuses(text, why):
    with pytest.raises(ValueError) as err:
        hccl_algo.parse(text)
    assert why in str(err.value) and hccl_algo.EXPECT in str(err.value)


def test_a_bad_hccl_algo_fails_communicator_init(env, caplog):
    env("HCCL_ALGO", "level1:NHRR")
    acl.init()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == pyhcomm.HCCL_E_PARA
    assert "HCCL_ALGO='level1:NHRR' is not valid" in caplog.text and "algo NHRR is not supported" in caplog.text
    assert Config.from_env({"HCCL_ALGO": "level0:NA;level1:NB"}).hccl_algo.every[1] == "NB"


def test_a_bad_hccl_algo_config_fails_the_config_init(caplog):
    cfg = pyhcomm.HcclCommConfig()
    pyhcomm.HcclCommConfigInit(cfg)
    cfg.hcclAlgo = "level0:NA;level1:ring;level1:NB"
    acl.init()
    assert acl.rt.set_device(0) == 0
    _, root = pyhcomm.HcclGetRootInfo()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcclCommInitRootInfoConfig(1, root, 0, cfg) == (pyhcomm.HCCL_E_PARA, 0)
    assert "config.hcclAlgo" in caplog.text and "level1 is configured twice" in caplog.text


def _allreduce_algorithm(product, nranks, count, config=None, per_server=None, op="allreduce"):
    """Run one HcclAllReduce (or HcclBroadcast) of ``count`` int32 on ``nranks`` ranks; returns
    (the algorithm the record names, every rank's output)."""
    cfg = Config.from_env().with_values(record_capacity=0)
    if per_server:
        cfg = cfg.with_values(devices_per_server=per_server)
    sim = pyhcomm.Sim(cfg, product=product)
    out = {}

    def body(comm):
        me = comm.rank
        x = (np.arange(count) + 10 * me).astype(np.int32)
        buf = malloc(x.nbytes)
        write(buf, x.view(np.uint8))
        stream, _ = acl.rt.create_stream()
        h = comm.handle
        if config is not None:
            c = pyhcomm.HcclCommConfig()
            pyhcomm.HcclCommConfigInit(c)
            c.hcclAlgo = config
            ret, _parent, h = pyhcomm.HcclCreateSubCommConfig(comm.handle, list(range(comm.size)), 1, me, c)
            assert ret == 0, ret
        if op == "allreduce":
            assert pyhcomm.HcclAllReduce(buf, buf, count, pyhcomm.HCCL_DATA_TYPE_INT32, pyhcomm.HCCL_REDUCE_SUM, h,
                                         stream) == 0
        else:
            assert pyhcomm.HcclBroadcast(buf, count, pyhcomm.HCCL_DATA_TYPE_INT32, 0, h, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        out[me] = read(buf, x.nbytes).view(np.int32)

    pyhcomm.launch(body, nranks, sim=sim)
    names = {e.algorithm for e in sim.record.events() if e.kind == "Collective"}
    return names, out


def test_hccl_algo_changes_the_level_one_algorithm(env):
    """Two A2 servers, 1 MiB: HCCL's per-call choice is the ring between servers; HCCL_ALGO NHR
    makes it NHR; the bytes are the same."""
    count, n = 1 << 18, 16
    want = np.sum([(np.arange(count) + 10 * r).astype(np.int32) for r in range(n)], axis=0, dtype=np.int32)
    names, out = _allreduce_algorithm(A2, n, count)
    assert names == {"level0:mesh;level1:ring"}
    env("HCCL_ALGO", "level0:NA;level1:NHR")
    names, out2 = _allreduce_algorithm(A2, n, count)
    assert names == {"level0:mesh;level1:nhr"}
    for r in range(n):
        assert np.array_equal(out[r], want) and np.array_equal(out2[r], want)


def test_the_communicator_config_comes_before_the_environment(env):
    """A sub-communicator made with hcclAlgo NB runs NB where HCCL_ALGO says NHR."""
    env("HCCL_ALGO", "level0:NA;level1:NHR")
    names, _out = _allreduce_algorithm(A2, 8, 1 << 16, config="level0:NA;level1:NB", per_server=4)
    assert names == {"level0:mesh;level1:nb"}


def test_an_unsupported_choice_falls_back_with_one_log_line(env, caplog):
    """Broadcast cannot run the ring between A2 servers: H-D_R runs, and the log says so once."""
    env("HCCL_ALGO", "level0:NA;level1:ring")
    with caplog.at_level(logging.WARNING, logger="pyhcomm"):
        names, out = _allreduce_algorithm(A2, 12, 1000, per_server=4, op="broadcast")
    assert names == {"level0:mesh;level1:hdr"}
    lines = [r.getMessage() for r in caplog.records if "HCCL_ALGO" in r.getMessage()]
    assert lines == ["HCCL_ALGO: BroadCastOperator: level1 ring does not run HCCL_CMD_BROADCAST, reset to hdr."]
    for r in range(12):
        assert np.array_equal(out[r], np.arange(1000, dtype=np.int32))
