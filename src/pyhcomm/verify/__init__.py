"""The verifier: races, lost notifies and hangs across ranks, under explored schedules.

* :func:`check` (``pyhcomm.verify.check(fn, nranks, ...)``): run a program under several
  schedules, return a :class:`Report` of every finding;
* ``python -m pyhcomm verify script.py``: the same from the command line (:mod:`.cli`);
* ``PYHCOMM_VERIFY=1``: every ``pyhcomm.launch`` is checked when it ends (:mod:`.env`);
* the pytest plugin ``pyhcomm.verify.pytest_plugin``: a ``pyhcomm_verify`` fixture and a
  ``--pyhcomm-verify`` option;
* :mod:`.explore`: the schedules (the hang report is the Sim's own: :mod:`pyhcomm.sim.hang`).

The checks themselves read the record: :mod:`pyhcomm.analysis`.
"""
from __future__ import annotations

from .check import Report, VerificationError, check, run_findings  # noqa: F401
from .env import session  # noqa: F401

__all__ = ["check", "Report", "VerificationError", "run_findings", "session"]
