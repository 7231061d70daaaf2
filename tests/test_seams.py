"""The seams between the layers: launching through the scheduler's interface, the verifier's
policy API, what the Sim owns (task states, hang report, layer states, launch observers), the
backend chosen by configuration, and an import that creates nothing."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm import sched as sched_pkg
from pyhcomm.backend import CpuBackend, NullBackend
from pyhcomm.config import Config
from pyhcomm.sched import ABORTED
from pyhcomm.sched.coop import CoopScheduler, SeededPolicy
from pyhcomm.sched.threaded import ThreadedScheduler
from pyhcomm.sim import LayerState, Sim

from hcomm_testutil import malloc, pattern, read, write

SRC = pathlib.Path(pyhcomm.__file__).parent


# -- import pyhcomm creates nothing ---------------------------------------------------------------

_PROBE = """
import threading
before = threading.active_count()
import pyhcomm, pyhcomm.sim as s
print(before, threading.active_count(), s.default_sim(create=False) is None)
if FIRST_USE:
    pyhcomm.current_sim()
    print(s.default_sim(create=False) is not None, threading.active_count())
"""


@pytest.mark.parametrize("launcher", [{}, {"PMI_SIZE": "2", "PMI_RANK": "0"}], ids=["plain", "under-a-launcher"])
def test_importing_pyhcomm_starts_no_thread_and_makes_no_sim(launcher):
    """A fresh interpreter: the import starts no thread and makes no Sim (nor MPI, where a
    launcher's variables say there are processes); the default Sim comes at first use."""
    env = dict(os.environ, PYTHONPATH=str(SRC.parent), **launcher)
    for var in ("PYHCOMM_TRANSPORT", "OMPI_COMM_WORLD_SIZE"):
        env.pop(var, None)
    probe = f"FIRST_USE = {not launcher}\n" + _PROBE
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    expected = ["1 1 True"] + ([] if launcher else ["True 1"])
    assert out.stdout.split("\n")[:-1] == expected, out.stdout + out.stderr


# -- the scheduler seam -----------------------------------------------------------------------------

@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_launch_runs_its_ranks_through_run_programs_on_both_schedulers(scheduler, monkeypatch):
    cls = CoopScheduler if scheduler == "coop" else ThreadedScheduler
    runs = []
    real = cls.run_programs

    def spy(self, programs, timeout=None):
        runs.append(([name for name, _body in programs], timeout))
        return real(self, programs, timeout)

    monkeypatch.setattr(cls, "run_programs", spy)
    assert pyhcomm.launch(lambda comm: comm.rank * 10, 3, scheduler=scheduler, timeout=60) == [0, 10, 20]
    assert runs == [(["rank 0", "rank 1", "rank 2"], 60)]


def test_launching_knows_no_scheduler_by_name():
    """``pyhcomm.launch`` uses the scheduler's interface only: no name tests, no coop-only calls."""
    text = (SRC / "spmd.py").read_text(encoding="utf-8")
    for needle in ("scheduler.name", "sched.name", ".spawn(", ".drive(", ".actors", "run_coop", "run_threads",
                   "abort_reason = "):
        assert needle not in text, needle


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_a_launch_whose_ranks_never_end_names_them_in_its_timeout(scheduler):
    """A rank that waits for what never comes (and waits again when told it never will) runs
    past the launch's timeout: the launch aborts it and names it (rank 0, which returned and
    waits for it at the launch's barrier, may be named too)."""
    def body(comm):
        if comm.rank == 1:
            sched = pyhcomm.current_sim().scheduler
            while sched.run_until(lambda: False, None, "forever", detect_stuck=False) != ABORTED:
                pass

    with pytest.raises(pyhcomm.LaunchTimeout, match=r"^(rank 0, )?rank 1 still ran after 1 s$"):
        pyhcomm.launch(body, 2, scheduler=scheduler, timeout=1)


# -- the verifier's policy API -------------------------------------------------------------------

def test_only_the_cooperative_scheduler_takes_a_policy():
    coop, threaded = Sim(scheduler="coop").scheduler, Sim(scheduler="threaded").scheduler
    assert coop.explorable and not threaded.explorable
    assert threaded.policy is None
    with pytest.raises(ValueError, match="the threaded scheduler takes no scheduling policy"):
        threaded.set_policy(SeededPolicy(3))
    assert isinstance(coop.policy, SeededPolicy)


def test_a_policy_set_through_the_api_makes_the_choices():
    class Counting(SeededPolicy):
        picks = 0

        def pick(self, choices):
            Counting.picks += 1
            return super().pick(choices)

    sim = Sim(scheduler="coop")
    policy = Counting(7)
    sim.scheduler.set_policy(policy)
    assert sim.scheduler.policy is policy
    assert pyhcomm.launch(lambda comm: comm.rank, 2, sim=sim) == [0, 1]
    assert Counting.picks > 0


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_waits_names_the_blocking_calls_the_programs_are_in(scheduler):
    seen = []

    def body(comm):
        sched = pyhcomm.current_sim().scheduler

        def rank_0_waits():
            now = sched.waits()
            if "waiting for rank 1" in now:
                seen.append(now)
            return bool(seen)

        if comm.rank == 0:
            sched.run_until(lambda: bool(seen), 30, "waiting for rank 1", detect_stuck=False)
        else:
            sched.run_until(rank_0_waits, 30, "looking", detect_stuck=False)
            sched.poke()

    pyhcomm.launch(body, 2, scheduler=scheduler, timeout=60)
    assert seen[0] == ["waiting for rank 1", "looking"] or seen[0] == ["looking", "waiting for rank 1"]


# -- what the Sim owns --------------------------------------------------------------------------------

def test_the_task_states_and_the_skip_flag_belong_to_the_simulated_machine():
    for name in ("PENDING", "RUNNING", "DONE", "FAILED", "SKIPPED", "SKIP_FLAG", "hang_report", "HangReport"):
        assert not hasattr(sched_pkg.base, name), name
    sim = Sim()
    assert sim.task_states.SKIPPED == "skipped" and sim.hang_report.sim is sim
    assert Sim().hang_report is not sim.hang_report


def test_each_sim_has_its_own_layer_states_released_newest_first():
    released = []

    class Older(LayerState):
        def release_device(self, sim, device_id):
            released.append(("older", device_id))

    class Newer(LayerState):
        def release_device(self, sim, device_id):
            released.append(("newer", device_id))

    sim = pyhcomm.current_sim()
    older = sim.layer_state(Older)
    assert sim.layer_state(Older) is older and Sim().layer_state(Older) is not older
    sim.layer_state(Newer)
    acl.init()
    acl.rt.set_device(2)
    acl.rt.reset_device(2)
    assert released == [("newer", 2), ("older", 2)]


def test_a_kernel_gives_back_what_it_was_given_when_it_ends():
    pyhcomm.set_product("Atlas 350")
    ended = []

    def kernel():
        pyhcomm.sim.kernel.current_kernel().at_end(lambda kctx: ended.append(kctx.name))

    with pyhcomm.Device(0) as d:
        s = d.stream()
        s.launch(kernel)
        s.synchronize()
    assert len(ended) == 1


# -- the task cache records a call of any tier ------------------------------------------------------

def test_the_task_cache_records_a_call_made_through_the_pythonic_tier():
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (comm,) = pyhcomm.HcclCommInitAll([0])
    ret, (handle,) = pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    assert ret == 0
    thread = pyhcomm.Thread(handle)
    a_src, a_dst, b_src, b_dst = malloc(512), malloc(512, fill=0), malloc(512), malloc(512, fill=0)
    a, b = write(a_src, pattern(512, 1)), write(b_src, pattern(512, 2))
    hits = []

    def op(src, dst):
        _, hit = pyhcomm.HcommAicpuTsTaskCacheLookup("pythonic_op")
        hits.append(hit)
        if hit:
            assert pyhcomm.HcommAicpuTsTaskCacheExecute("pythonic_op", [src, dst], [512, 512]) == 0
            return
        assert pyhcomm.HcommAicpuTsTaskCacheStart("pythonic_op", [src, dst], [512, 512]) == 0
        thread.local_copy(dst, src, 512)                      # the Pythonic tier
        assert pyhcomm.HcommAicpuTsTaskCacheEnd("pythonic_op") == 0

    stream, _ = acl.rt.create_stream()
    s = pyhcomm.Stream(stream, owned=False)
    s.launch(op, a_src, a_dst)
    s.launch(op, b_src, b_dst)
    assert acl.rt.synchronize_device() == 0
    assert hits == [False, True]
    assert np.array_equal(read(a_dst, 512), a) and np.array_equal(read(b_dst, 512), b)   # replayed at b
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == 2
    from pyhcomm.hcomm.state import hcomm_state
    assert hcomm_state().recordings == 0 and not hcomm_state().kernel_caches   # the kernels ended


# -- the backend, by configuration ---------------------------------------------------------------------

def test_pyhcomm_backend_chooses_the_byte_mover():
    assert isinstance(Sim(Config.from_env({"PYHCOMM_BACKEND": "cpu"})).backend, CpuBackend)
    null = Sim(Config.from_env({"PYHCOMM_BACKEND": "null"}))
    assert isinstance(null.backend, NullBackend) and null.data is False
    dataless = Sim(Config.from_env({"PYHCOMM_BACKEND": "cpu", "PYHCOMM_DATA": "0"}))
    assert isinstance(dataless.backend, NullBackend)
    assert isinstance(Sim(data=False).backend, NullBackend)
    bad = Config.from_env({"PYHCOMM_BACKEND": "gpu"})
    assert bad.backend == "cpu" and bad.errors == {"PYHCOMM_BACKEND": "PYHCOMM_BACKEND='gpu' is not valid: "
                                                                       "expected cpu or null"}


def test_launch_refuses_an_unknown_backend(monkeypatch):
    monkeypatch.setenv("PYHCOMM_BACKEND", "tpu")
    with pytest.raises(ValueError, match="PYHCOMM_BACKEND='tpu' is not valid: expected cpu or null"):
        pyhcomm.launch(lambda comm: None, 1)
