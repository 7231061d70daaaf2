"""One process of an MPI job started by tests/test_mpi.py (``mpiexec -n N python tests/mpi_worker.py``).

Runs HCCL's example ports (tests/hccl_examples) the way HCCL's MPI examples do: MPI rank ``r`` is
device ``r``, rank 0 makes the root info and broadcasts it with ``comm.bcast``, every rank runs the
sample's body for its device; then again with ``pyhcomm.launch`` starting the ranks, the root info
made and broadcast before it (``launched``). Then the seed examples (examples/seed_*.py), each in a
fresh default Sim. Process 0 prints one JSON line: ``{"ports": {sample: [digest per rank]},
"launched": {sample: [digest per rank]}, "seeds": {script: its output}, ...}``.

``mpi_worker.py launch CASE N ARGS...``: ``pyhcomm.launch(mpi_cases.CASE, N, *ARGS)`` in every
process; each prints ``{"proc", "ok", "rank", "text"}`` (its results, or its RankError).
``mpi_worker.py merged CASE N ARGS...``: the same in a Sim of its own; process 0's line also has
what the verifier finds in the merged record of every process (``findings``).
``mpi_worker.py paths CASE N ARGS...``: the same twice, then what carried the transfers
(:func:`paths_case`).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "hccl_examples")]

from mpi4py import MPI  # noqa: E402

import pyhcomm  # noqa: E402
from pyhcomm import acl  # noqa: E402
from mpi_cases import digest  # noqa: E402

PORTS = [("ex01_point_to_point", "01_send_recv"), ("ex01_point_to_point", "02_batch_send_recv_ring")] + [
    ("ex02_collectives", name) for name in ("01_allreduce", "02_broadcast", "03_allgather", "04_reduce_scatter",
                                            "05_reduce", "06_alltoall", "07_alltoallv", "08_alltoallvc",
                                            "09_scatter")]
SEEDS = ["seed_host_a2.py", "seed_device_350.py"]


def run_port(module: str, name: str, world) -> list:
    from example_main import ThreadContext
    mod = __import__(module)
    rank, size = world.rank, world.size
    acl.rt.set_device(rank)
    root_info = pyhcomm.HcclGetRootInfo()[1] if rank == 0 else None
    root_info = world.bcast(root_info, root=0)        # as HCCL's examples do with MPI_Bcast
    out = mod.SAMPLES[name](ThreadContext(root_info, rank, size))
    return world.allgather(digest(out))


def run_port_launched(module: str, name: str, world) -> list:
    """The port with ``pyhcomm.launch`` in place of the host thread: process 0's ``main()`` makes
    the root info in the default Sim and broadcasts it; each process's launch runs its rank in a
    Sim of its own, where the sample joins that root."""
    from example_main import ThreadContext
    mod = __import__(module)
    root_info = pyhcomm.HcclGetRootInfo()[1] if world.rank == 0 else None
    root_info = world.bcast(root_info, root=0)
    size = world.size
    out = pyhcomm.launch(lambda comm: mod.SAMPLES[name](ThreadContext(root_info, comm.rank, size)), size,
                         timeout=60)
    return [digest(o) for o in out]


def joined_before_the_launch_used_it(world) -> list:
    """Process 1's rank joins the root before process 0's does, and its join reaches process 0
    (the root's process) while only the default Sim, which made the root, knows it: process 0's
    launch then joins the world that join was counted in (else its rank would wait for a rank
    that joined already). Returns each rank's ``[ret, rank size]``."""
    from pyhcomm.hccl.comm import _root_key
    root_info = pyhcomm.HcclGetRootInfo()[1] if world.rank == 0 else None
    root_info = world.bcast(root_info, root=0)
    maker = pyhcomm.current_sim().transport

    def body(comm):
        if comm.rank == 0:   # (the root's process) wait until rank 1's join arrived there
            made = maker.worlds[_root_key(bytes(root_info), "test").address]
            maker.link.wait(lambda: 1 in made.procs, "rank 1's join")
        ret, handle = pyhcomm.HcclCommInitRootInfo(2, root_info, comm.rank)
        size = pyhcomm.HcclGetRankSize(handle)[1]
        pyhcomm.HcclCommDestroy(handle)
        return [int(ret), size]

    return pyhcomm.launch(body, 2, timeout=60)


def foreign_roots() -> list:
    """What ``HcclCommInitRootInfo`` logs for root infos that name no communicator of the job: one
    made without MPI (in a launch of this process's ranks only), one naming an MPI process the
    job does not have."""
    from pyhcomm.hccl.comm import root_info_bytes
    from pyhcomm.transport.base import RootKey
    alone = pyhcomm.launch(lambda comm: pyhcomm.HcclGetRootInfo()[1], 1, mpi=False)[0]
    beyond = root_info_bytes(RootKey(os.getpid(), bytes(16), (MPI.COMM_WORLD.size + 3) << 32 | 1))
    out = []
    for root in (alone, beyond):
        logged = []
        catch = logging.Handler()
        catch.emit = lambda record: logged.append(record.getMessage())
        logging.getLogger("pyhcomm").addHandler(catch)
        try:
            ret, _comm = pyhcomm.HcclCommInitRootInfo(2, root, MPI.COMM_WORLD.rank)
        finally:
            logging.getLogger("pyhcomm").removeHandler(catch)
        out.append([int(ret)] + logged)
    return out


def run_seed(script: str) -> str:
    pyhcomm.reset()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        runpy.run_path(os.path.join(HERE, "..", "examples", script), run_name="__main__")
    return text.getvalue()


def refused_join(world) -> list:
    """Process 1 also claims rank 0, which process 0 (the root's process) registered first: its
    join is refused (HCCL_E_PARA, the reason from the root's process); it then joins as rank 1.
    (Process 0 handles no message between the broadcast and its own join, so the order is fixed.)
    Returns each process's codes."""
    acl.rt.set_device(world.rank)
    root_info = pyhcomm.HcclGetRootInfo()[1] if world.rank == 0 else None
    root_info = world.bcast(root_info, root=0)
    logged = []
    catch = logging.Handler()
    catch.emit = lambda record: logged.append(record.getMessage())
    logging.getLogger("pyhcomm").addHandler(catch)
    try:
        ret, comm = pyhcomm.HcclCommInitRootInfo(2, root_info, 0)
    finally:
        logging.getLogger("pyhcomm").removeHandler(catch)
    codes = [int(ret)]
    if world.rank == 1:
        codes.append(" | ".join(logged))
        ret, comm = pyhcomm.HcclCommInitRootInfo(2, root_info, 1)
        codes.append(int(ret))
    pyhcomm.HcclCommDestroy(comm)
    return world.allgather(codes)


def main() -> None:
    world = MPI.COMM_WORLD
    assert pyhcomm.current_sim().transport.name == "mpi"
    acl.init()
    ports = {f"{m}:{n}": run_port(m, n, world) for m, n in PORTS}
    launched = {f"{m}:{n}": run_port_launched(m, n, world) for m, n in PORTS}
    refused = refused_join(world)
    early = joined_before_the_launch_used_it(world)
    foreign = foreign_roots()
    seeds = {s: run_seed(s) for s in SEEDS}
    if world.rank == 0:
        print(json.dumps({"ports": ports, "launched": launched, "seeds": seeds, "refused": refused,
                          "early": early, "foreign": foreign}), flush=True)


def launch_case(case: str, n: int, *args) -> None:
    import mpi_cases
    world = MPI.COMM_WORLD
    try:
        res = pyhcomm.launch(getattr(mpi_cases, case), n, *(int(a) for a in args), timeout=60)
        line = {"proc": world.rank, "ok": True, "rank": None, "text": res}
    except pyhcomm.RankError as exc:
        line = {"proc": world.rank, "ok": False, "rank": exc.rank, "text": str(exc)}
    print(json.dumps(line), flush=True)


def merged_case(case: str, n: int, *args) -> None:
    """Launch ``case`` in a Sim of its own, merge the processes' records at process 0
    (:func:`pyhcomm.sim.merge.gather`) and print what the verifier finds in it."""
    import mpi_cases
    from pyhcomm.analysis import analyze
    from pyhcomm.sim.merge import gather
    sim = pyhcomm.Sim(scheduler="coop")
    res = pyhcomm.launch(getattr(mpi_cases, case), n, *(int(a) for a in args), sim=sim, timeout=60)
    merged = gather(sim)
    line = {"proc": MPI.COMM_WORLD.rank, "ok": True, "rank": None, "text": res}
    if merged is not None:
        line.update(processes=list(merged.processes), findings=[f.text() for f in analyze(merged)])
    print(json.dumps(line), flush=True)


def paths_case(case: str, n: int, *args) -> None:
    """Launch ``case`` twice in a Sim of its own (``MPI_WORKER_NO_ATTACH=1``: its backend cannot
    map another process's memory) and print what carried the transfers: the processes found on
    this machine (``near``), the transfers done in their memory directly (``direct``), the
    doorbell rings, the descriptors open after each launch, the storage of other processes still
    mapped at the end, and the results of the first launch."""
    import gc
    import mpi_cases
    sim = pyhcomm.Sim(scheduler="coop")
    if os.environ.get("MPI_WORKER_NO_ATTACH"):
        def refuse(handle):
            raise PermissionError(13, "mapping another process's memory is refused here")
        sim.backend.attach = refuse
    results, fds = [], []
    for _ in range(2):
        results.append(pyhcomm.launch(getattr(mpi_cases, case), n, *(int(a) for a in args), sim=sim, timeout=60))
        gc.collect()
        fds.append(len(os.listdir("/proc/self/fd")))
    t = sim.transport
    print(json.dumps({"proc": MPI.COMM_WORLD.rank, "near": sorted(t.link.near.procs), "direct": t.direct,
                      "rings": t.link.near.rung, "fds": fds, "mapped": sum(1 for v in t.peer_memory.attached.values() if v),
                      "same": results[0] == results[1], "text": results[0]}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["launch"]:
        launch_case(sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
    elif sys.argv[1:2] == ["paths"]:
        paths_case(sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
    elif sys.argv[1:2] == ["merged"]:
        merged_case(sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
    else:
        main()
