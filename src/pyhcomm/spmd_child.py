"""One process of ``pyhcomm.launch(..., mpi=True)``: ``python -m pyhcomm.spmd_child FOLDER``,
started by ``mpiexec``. Reads the call from ``FOLDER/call.pkl``, runs ``launch`` inside the job;
MPI process 0 writes ``(True, results)`` to ``FOLDER/outcome.pkl``, a process whose launch failed
writes ``(False, (rank, message))`` (the first to fail wins)."""
from __future__ import annotations

import os
import pickle
import sys

from .spmd import RankError, launch


def main(folder: str) -> int:
    with open(os.path.join(folder, "call.pkl"), "rb") as f:
        fn, nranks, args, kwargs, options = pickle.load(f)
    outcome = os.path.join(folder, "outcome.pkl")
    try:
        results = launch(fn, nranks, *args, mpi=True, **options, **kwargs)
    except RankError as exc:
        _write_once(outcome, (False, (exc.rank, str(exc.__cause__ or exc))))
        return 1
    if int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))) == 0:
        _write_once(outcome, (True, results))
    return 0


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
