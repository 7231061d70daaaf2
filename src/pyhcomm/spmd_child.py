"""One process of ``pyhcomm.launch(..., mpi=True)``: ``python -m pyhcomm.spmd_child FOLDER``,
started by ``mpiexec``. Reads the call from ``FOLDER/call.pkl``, runs ``launch`` inside the job;
MPI process 0 writes ``(True, results)`` to ``FOLDER/outcome.pkl``, a process whose launch failed
writes ``(False, (rank, message))`` (the first to fail wins). When the caller passed a Sim, each
process also writes the snapshot of its record (``FOLDER/record.<process>.pkl``)."""
from __future__ import annotations

import os
import pickle
import sys

from .config import Config
from .spmd import RankError, launch, observe_launches


def main(folder: str) -> int:
    with open(os.path.join(folder, "call.pkl"), "rb") as f:
        fn, nranks, args, kwargs, options, want_record = pickle.load(f)
    outcome = os.path.join(folder, "outcome.pkl")
    sims: list = []
    try:
        with observe_launches(sims.append):
            results = launch(fn, nranks, *args, mpi=True, **options, **kwargs)
    except RankError as exc:
        _write_once(outcome, (False, (exc.rank, exc.details())))
        _save_record(folder, sims, want_record)
        return 1
    _save_record(folder, sims, want_record)
    if Config.from_env().launcher_rank == 0:
        _write_once(outcome, (True, results))
    return 0


def _save_record(folder: str, sims: list, wanted: bool) -> None:
    """``FOLDER/record.<process>.pkl``: the snapshot of this process's launch record (the parent
    merges them), when the caller asked for the record."""
    if wanted and sims:
        from .sim.merge import snapshot
        part = snapshot(sims[-1])
        tmp = os.path.join(folder, f".record.{part.process}.pkl")
        part.save(tmp)
        os.replace(tmp, os.path.join(folder, f"record.{part.process}.pkl"))


def _write_once(path: str, value) -> None:
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as f:
        pickle.dump(value, f)
    try:
        os.link(tmp, path)      # atomic, and only the first writer succeeds
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
