"""Every ``PYHCOMM_*`` / ``HCCL_*`` environment variable, parsed once into a frozen :class:`Config`.

A :class:`pyhcomm.sim.Sim` reads its configuration when it is created (the default one at first use, at
``pyhcomm.reset()``, at each ``pyhcomm.launch``); nothing else reads the environment.

A value that does not parse never raises here: the field keeps its default and the problem is kept
in :attr:`Config.errors`. The API that depends on the variable then fails with a clear error naming
it (:meth:`Config.check`: ``HCCL_E_PARA`` for the HCCL variables, so the C tier returns a code);
``pyhcomm.launch`` refuses a bad ``PYHCOMM_*`` value with ``ValueError``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from .defs import hccl_algo
from .errors import para

DEFAULT_BUFFSIZE_MB = 200
DEFAULT_CONNECT_TIMEOUT = 120.0
DEFAULT_EXEC_TIMEOUT = 1836
DEFAULT_RECORD_CAPACITY = 1_000_000
DEFAULT_QUEUE_BUDGET = 1024
SCHEDULERS = ("threaded", "coop")
TRANSPORTS = ("auto", "local", "mpi")
DEFAULT_MPI_LIVENESS = 10.0
#: set by MPI launchers in every process they start (Hydra / MPICH, Open MPI): the number of
#: processes, this process's number, the number of processes on this machine
LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
LAUNCHER_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")
LAUNCHER_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
#: the byte movers ``PYHCOMM_BACKEND`` names (:func:`pyhcomm.backend.make_backend`); ``null`` keeps no bytes
BACKENDS = ("cpu", "null")
#: ``HCCL_OP_EXPANSION_MODE``'s values (the ``HcclOpExpansionMode`` names without their prefix)
EXPANSION_MODES = ("AI_CPU", "AIV", "HOST", "HOST_TS", "CCU_MS", "CCU_SCHED", "AIV_ONLY")

def _parse_int(raw: str, minimum: int) -> int:
    value = int(raw.strip())
    if value < minimum:
        raise ValueError
    return value


def _parse_seconds(raw: str) -> float:
    value = float(raw.strip())
    if not value >= 0 or value == float("inf"):
        raise ValueError
    return value


def _parse_bool(raw: str) -> bool:
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("", "0", "false", "no", "off"):
        return False
    raise ValueError


_VARS = {
    # variable: (field, parse, valid values said in errors)
    "PYHCOMM_PRODUCT": ("product", str.strip, "a product name (python -m pyhcomm products)"),
    "PYHCOMM_DEVICE_COUNT": ("device_count", lambda r: _parse_int(r, 1), "an integer >= 1"),
    "HCCL_BUFFSIZE": ("buffsize_mb", lambda r: _parse_int(r, 1), "an integer number of MB >= 1"),
    "HCCL_CONNECT_TIMEOUT": ("connect_timeout", lambda r: _parse_seconds(r), "a number of seconds >= 0"),
    "HCCL_EXEC_TIMEOUT": ("exec_timeout", lambda r: _parse_int(r, 0), "an integer number of seconds >= 0"),
    "PYHCOMM_COPY_THREADS": ("copy_threads", lambda r: _parse_int(r, 1), "an integer >= 1"),
    "PYHCOMM_LOG_LEVEL": ("log_level", lambda r: _choice(r.upper(), ("DEBUG", "INFO", "WARNING", "ERROR", "OFF")),
                          "DEBUG, INFO, WARNING, ERROR or OFF"),
    "PYHCOMM_RECORD_CAPACITY": ("record_capacity", lambda r: _parse_int(r, 0), "an integer >= 0 (0: unbounded)"),
    "PYHCOMM_NOTIFY_COUNTING": ("notify_counting", _parse_bool, "0 or 1"),
    "PYHCOMM_DEVICES_PER_SERVER": ("devices_per_server", lambda r: _parse_int(r, 1), "an integer >= 1"),
    "PYHCOMM_SUPER_POD_SIZE": ("super_pod_size", lambda r: _parse_int(r, 1), "an integer >= 1"),
    "PYHCOMM_DATA": ("data", _parse_bool, "0 (data-less) or 1"),
    "PYHCOMM_BACKEND": ("backend", lambda r: _choice(r.strip().lower(), BACKENDS), " or ".join(BACKENDS)),
    "PYHCOMM_SCHEDULER": ("scheduler", lambda r: _choice(r.strip().lower(), SCHEDULERS), "threaded or coop"),
    "PYHCOMM_SEED": ("seed", lambda r: _parse_int(r, 0), "an integer >= 0"),
    "PYHCOMM_TRANSPORT": ("transport", lambda r: _choice(r.strip().lower(), TRANSPORTS), "auto, local or mpi"),
    "PYHCOMM_MPI_LIVENESS": ("mpi_liveness", lambda r: _parse_seconds(r), "a number of seconds >= 0"),
    "PYHCOMM_MPI_SHM": ("mpi_shm", _parse_bool, "0 or 1"),
    "PYHCOMM_QUEUE_BUDGET": ("queue_budget", lambda r: _parse_int(r, 0), "an integer >= 0 (0: unbounded)"),
    "PYHCOMM_VERIFY": ("verify", _parse_bool, "0 or 1"),
    "PYHCOMM_CCU_DIES": ("ccu_dies", lambda r: _parse_dies(r), "IO die numbers among 0 and 1, comma separated"),
    "HCCL_OP_EXPANSION_MODE": ("op_expansion_mode", lambda r: _choice(r.strip().upper(), EXPANSION_MODES),
                               ", ".join(EXPANSION_MODES)),
    "HCCL_ALGO": ("hccl_algo", hccl_algo.parse, hccl_algo.EXPECT),
}


def _launcher_value(env, variables):
    """The first of ``variables`` (an MPI launcher's, set in every process it starts) that holds an
    integer, else None (a launcher's variable is never an error of the user's)."""
    for var in variables:
        try:
            return int(env.get(var, ""))
        except ValueError:
            continue
    return None


def _parse_dies(raw: str) -> tuple:
    dies = tuple(sorted({int(x) for x in raw.split(",") if x.strip()}))
    if not dies or any(d not in (0, 1) for d in dies):
        raise ValueError
    return dies


def _choice(value: str, allowed) -> str:
    if value not in allowed:
        raise ValueError
    return value


@dataclass(frozen=True)
class Config:
    """The parsed configuration (defaults where a variable is unset or invalid)."""

    product: str | None = None
    device_count: int | None = None         # None: max(devices per server, 16)
    buffsize_mb: int = DEFAULT_BUFFSIZE_MB
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    exec_timeout: int = DEFAULT_EXEC_TIMEOUT
    copy_threads: int | None = None         # None: the usable cores
    log_level: str = "WARNING"
    record_capacity: int = DEFAULT_RECORD_CAPACITY
    notify_counting: bool = False
    devices_per_server: int | None = None   # None: the product's
    super_pod_size: int = 768
    data: bool = True                       # False: data-less (the null backend, whatever ``backend`` says)
    backend: str = "cpu"                    # what moves the bytes when there are bytes (BACKENDS)
    scheduler: str | None = None            # None: threaded, but coop for pyhcomm.launch
    seed: int = 0
    transport: str = "auto"                 # auto: mpi when an MPI launcher started several processes
    mpi_liveness: float = DEFAULT_MPI_LIVENESS  # seconds of silence after which a process is dead
    mpi_shm: bool = True                    # MPI processes of one machine share exposed memory
    launcher_size: int = 1                  # processes an MPI launcher started (PMI_SIZE, ...)
    launcher_rank: int = 0                  # this process's number among them (PMI_RANK, ...)
    launcher_local_size: int | None = None  # ... how many run on this machine (None: not said)
    queue_budget: int = DEFAULT_QUEUE_BUDGET   # coop: tasks an actor issues before it yields
    verify: bool = False                    # check every launch (pyhcomm.verify)
    ccu_dies: tuple = (0, 1)                # the enabled CCU IO dies of every Atlas 350 device
    op_expansion_mode: str | None = None    # HCCL_OP_EXPANSION_MODE (None: the product's default)
    hccl_algo: hccl_algo.AlgoConfig = field(default_factory=hccl_algo.AlgoConfig)   # HCCL_ALGO, parsed
    #: variable -> message, for every variable whose value did not parse
    errors: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_env(cls, env=None) -> "Config":
        """Parse ``env`` (default ``os.environ``); never raises."""
        env = os.environ if env is None else env
        values, errors = {}, {}
        for var, (name, parse, valid) in _VARS.items():
            raw = env.get(var)
            if raw is None or (raw.strip() == "" and name != "product"):
                continue
            try:
                values[name] = parse(raw)
            except (ValueError, TypeError) as exc:
                errors[var] = f"{var}={raw!r} is not valid: " + (str(exc) if var == "HCCL_ALGO" else f"expected {valid}")
        if values.get("product") == "":
            values.pop("product")
        for name, variables, minimum in (("launcher_size", LAUNCHER_SIZE_VARS, 1),
                                         ("launcher_rank", LAUNCHER_RANK_VARS, 0),
                                         ("launcher_local_size", LAUNCHER_LOCAL_SIZE_VARS, 1)):
            value = _launcher_value(env, variables)
            if value is not None:
                values[name] = max(minimum, value)
        return cls(errors=errors, **values)

    def __post_init__(self):
        if self.backend == "null" and self.data:    # the null backend keeps no bytes: data-less
            object.__setattr__(self, "data", False)

    @property
    def backend_name(self) -> str:
        """The backend a Sim with this configuration uses: ``backend``, or ``null`` in data-less mode."""
        return self.backend if self.data else "null"

    @property
    def use_mpi(self) -> bool:
        """Whether a Sim joins other processes over MPI (``PYHCOMM_TRANSPORT``; ``auto``: when an MPI
        launcher started more than one process)."""
        return self.transport == "mpi" or (self.transport == "auto" and self.launcher_size > 1)

    @staticmethod
    def child_environment(**changes) -> dict:
        """This process's environment with ``changes``, for a process it starts."""
        return dict(os.environ, **changes)

    def with_values(self, **changes) -> "Config":
        """A copy with some fields changed."""
        return replace(self, **changes)

    def check(self, var: str, api: str) -> None:
        """``HCCL_E_PARA`` from ``api`` when ``var`` had a value that did not parse."""
        msg = self.errors.get(var)
        if msg is not None:
            raise para(api, msg)

    def check_pyhcomm(self, where: str) -> None:
        """``ValueError`` when any ``PYHCOMM_*`` variable did not parse (``pyhcomm.launch``)."""
        bad = [m for v, m in self.errors.items() if v.startswith("PYHCOMM_")]
        if bad:
            raise ValueError(f"{where}: " + "; ".join(bad))
