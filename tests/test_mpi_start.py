"""MPI starts only when a program asks for it: ``import pyhcomm`` (also under ``mpiexec``, where
the configuration says MPI) starts no thread and does not initialise MPI; a Sim's MPI transport
starts the process's link at its first use; the one link of a process refuses settings other
than its own; the launcher's variables are parsed in ``config.py``."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import pyhcomm
from pyhcomm.config import Config
from pyhcomm.transport import mpi_link
from pyhcomm.transport.mpi import MpiTransport
from pyhcomm.transport.mpi_link import LinkSettings

HAVE_MPI = importlib.util.find_spec("mpi4py") is not None

#: imports pyhcomm, then makes the default Sim, then (argument ``use``) uses its transport; prints
#: the threads and whether MPI is initialised after each step
PROGRAM = """
import json, sys, threading

def state():
    mpi = sys.modules.get("mpi4py.MPI")
    return {"threads": sorted(t.name for t in threading.enumerate()),
            "mpi": None if mpi is None else bool(mpi.Is_initialized())}

import pyhcomm
out = {"import": state()}
sim = pyhcomm.current_sim()
out["sim"] = state()
out["transport"] = sim.transport.name
if sys.argv[1:] == ["use"]:
    out["processes"] = list(sim.transport.processes())
    out["use"] = state()
print(json.dumps(out), flush=True)
"""


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYHCOMM_", "HCCL_", "PMI_", "OMPI_"))}
    src = str(Path(pyhcomm.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run(cmd) -> list:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out, dec, i = [], json.JSONDecoder(), proc.stdout.find("{")   # (mpiexec may join two processes' lines)
    while i >= 0:
        obj, end = dec.raw_decode(proc.stdout, i)
        out.append(obj)
        i = proc.stdout.find("{", end)
    return out


NOTHING = {"threads": ["MainThread"], "mpi": None}


def test_import_pyhcomm_starts_no_thread_and_no_mpi():
    (out,) = _run([sys.executable, "-c", PROGRAM])
    assert out == {"import": NOTHING, "sim": NOTHING, "transport": "local"}


@pytest.mark.skipif(not HAVE_MPI, reason="needs mpi4py and MPICH: pip install 'pyhcomm[mpi]'")
def test_under_mpiexec_import_starts_nothing_and_the_transport_starts_mpi_at_first_use():
    lines = _run(mpi_link.mpiexec() + ["-n", "2", sys.executable, "-c", PROGRAM, "use"])
    assert len(lines) == 2
    for out in lines:
        # the configuration says MPI (two processes), yet nothing started before the first use
        assert out["import"] == NOTHING and out["sim"] == NOTHING and out["transport"] == "mpi", out
        assert out["use"] == {"threads": ["MainThread", "pyhcomm-mpi-heartbeat"], "mpi": True}, out
    assert sorted(tuple(out["processes"]) for out in lines) == [(2, 0), (2, 1)]


def test_a_sims_mpi_transport_is_one_process_s_until_its_first_use(monkeypatch):
    monkeypatch.setattr(mpi_link, "_link", None)
    sim = pyhcomm.Sim(Config(transport="mpi"))
    t = sim.transport
    assert isinstance(t, MpiTransport) and t.link is None
    assert (t.progress(), t.watch(), t.world_idle()) == (False, False, True)   # nothing can come
    assert (t.abort_origin(), t.remote_hang_facts()) == (None, None)
    assert mpi_link._link is None       # (nothing above started the link)


def test_device_memory_is_shareable_before_the_link_starts_where_the_launcher_says_processes_share_the_machine():
    shared = pyhcomm.Sim(Config(transport="mpi", launcher_size=2, launcher_local_size=2))
    alone = pyhcomm.Sim(Config(transport="mpi", launcher_size=2, launcher_local_size=1))
    no_shm = pyhcomm.Sim(Config(transport="mpi", launcher_size=2, mpi_shm=False))
    for sim, expected in ((shared, True), (alone, False), (no_shm, False)):
        storage = sim.transport.device_storage(4096)
        assert (sim.backend.share(storage) is not None) == expected
        assert sim.transport.link is None


def test_the_link_refuses_settings_other_than_those_it_runs_with(monkeypatch):
    running = SimpleNamespace(settings=LinkSettings(10.0, True, 2))
    monkeypatch.setattr(mpi_link, "_link", running)
    assert mpi_link.link(LinkSettings(10.0, True, 2)) is running
    with pytest.raises(ValueError) as err:
        mpi_link.link(LinkSettings(5.0, True, 2))
    assert str(err.value) == (
        "the MPI link of this process runs with PYHCOMM_MPI_LIVENESS=10, PYHCOMM_MPI_SHM=1, 2 processes on "
        "this machine; a Sim asks for PYHCOMM_MPI_LIVENESS=5, PYHCOMM_MPI_SHM=1, 2 processes on this machine: "
        "every Sim of a process shares the one link, their settings must agree")
    with pytest.raises(ValueError, match="a Sim asks for PYHCOMM_MPI_LIVENESS=10, PYHCOMM_MPI_SHM=0, all"):
        mpi_link.link(LinkSettings(10.0, False, None))
    # a Sim's transport asks at its first use, with the settings of its configuration
    sim = pyhcomm.Sim(Config(transport="mpi", mpi_liveness=3.0, launcher_local_size=2))
    with pytest.raises(ValueError, match="a Sim asks for PYHCOMM_MPI_LIVENESS=3, PYHCOMM_MPI_SHM=1, 2 processes"):
        sim.transport.new_root()
    assert sim.transport.link is None


def test_the_launchers_variables_are_parsed_in_the_configuration():
    hydra = Config.from_env({"PMI_SIZE": "4", "PMI_RANK": "3", "MPI_LOCALNRANKS": "2"})
    assert (hydra.launcher_size, hydra.launcher_rank, hydra.launcher_local_size) == (4, 3, 2)
    ompi = Config.from_env({"OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_RANK": "5",
                            "OMPI_COMM_WORLD_LOCAL_SIZE": "4"})
    assert (ompi.launcher_size, ompi.launcher_rank, ompi.launcher_local_size) == (8, 5, 4)
    alone = Config.from_env({"PMI_RANK": "x"})
    assert (alone.launcher_size, alone.launcher_rank, alone.launcher_local_size) == (1, 0, None)
    assert not alone.errors         # a launcher's variable is never the user's error
    assert LinkSettings.of(hydra) == LinkSettings(10.0, True, 2)
