"""``python -m pyhcomm bench``: hccl_test's table from the timing model, with busbw and algorithms.

    python -m pyhcomm bench -o allreduce -p 8 -b 1K -e 1G -f 4 --compare ring,fullmesh

For each size from ``-b`` to ``-e`` (times ``-f``) the ranks run the collective on their stream in a
fresh data-less Sim (real bytes with ``-c 1``), the record is replayed on the product's cost model
(:mod:`pyhcomm.timing`) and a row gives, per algorithm run: the modeled time of one call
(``aveg_time``: ``-n`` calls back to back after ``-w`` warm-up ones, from the first measured call's
first entry to the last one's end, divided by ``-n``), its algorithm bandwidth and its bus
bandwidth (:mod:`.bandwidth`: nccl-tests' factor per collective); then the algorithm the library's
selection picks for the call, and ``check_result`` (``success`` / ``failed`` with ``-c 1``, every
rank's output compared with numpy; ``NULL`` otherwise, as hccl_test with ``-c 0``).

The flags are hccl_test's where it has them: ``-b`` / ``-e`` / ``-f`` sizes (``K``, ``M``, ``G``
suffixes), ``-p`` NPUs per server, ``-d`` data type, ``-n`` iterations, ``-w`` warm-up iterations,
``-c`` check, ``-r`` root; but ``-o`` names the collective (hccl_test has a program per collective
and ``-o`` for the reduce operation, here ``--reduce``). ``data_size`` is hccl_test's: the
AllReduce's, Reduce's and Broadcast's buffer, the AllGather's gathered output, the ReduceScatter's
and Scatter's input, each rank's AlltoAll send buffer (the V variants with equal counts, as its
``*v_test`` programs). Beyond hccl_test: ``--product`` (repeatable), ``--servers`` (``-p`` NPUs on
each of that many servers: rank ``k`` on device ``k % p`` of server ``k // p``), ``--algo``,
``--compare``, ``--custom``, ``--png``.

``--algo NAME`` runs one algorithm of the collective library by name instead of the selection's,
``--compare A,B,...`` several side by side. The names are the catalogue's
(:mod:`pyhcomm.collectives.algorithms`: ``ring``, ``mesh``, ``hdr``, ``nhr``, ``nb`` ...) or
HCCL_ALGO's (``fullmesh``, ``H-D_R``, ``NHR`` ...); an HCCL_ALGO string naming one algorithm
besides ``NA`` (``level0:NA;level1:ring``) is that algorithm, one naming every level a hierarchy
of the catalogue (``level0:fullmesh;level1:NHR``: the mesh in each server, NHR between them).
HCCL_ALGO itself (the environment) configures the selection, whose pick is the ``selected``
column.

``--custom FILE.py:FUNC`` times a caller's own collective: ``FUNC(comm, send, recv, nbytes,
stream)`` (a :class:`pyhcomm.Comm`, device addresses of the collective's buffers, the data size,
the stream handle) runs inside :func:`pyhcomm.timing.region` and its row is reported as the
library's are.

``--png FILE`` plots busbw against size, a line per product and algorithm (matplotlib: ``pip
install 'pyhcomm[plot]'``). A progress line goes to stderr (at most one a second) and a summary of
what the model cost at the end.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .. import enums
from ..collectives import dispatch, selector
from ..collectives import algorithms as catalogue
from ..collectives.algorithm import Algorithm, Op
from ..config import Config
from ..enums import HcclDataType, HcclReduceOp
from ..products import find_product
from .region import region
from .replay import replay

DEFAULT_PRODUCT = "Atlas 800T A2"
CHECK_LIMIT = 16 << 20          # bytes per rank buffer moved for real at most with -c 1
H2D, D2H = 1, 2

#: -d names (hccl_test's) -> HcclDataType
DATA_TYPES = {"int8": HcclDataType.HCCL_DATA_TYPE_INT8, "int16": HcclDataType.HCCL_DATA_TYPE_INT16,
              "int32": HcclDataType.HCCL_DATA_TYPE_INT32, "int64": HcclDataType.HCCL_DATA_TYPE_INT64,
              "uint8": HcclDataType.HCCL_DATA_TYPE_UINT8, "uint16": HcclDataType.HCCL_DATA_TYPE_UINT16,
              "uint32": HcclDataType.HCCL_DATA_TYPE_UINT32, "uint64": HcclDataType.HCCL_DATA_TYPE_UINT64,
              "fp16": HcclDataType.HCCL_DATA_TYPE_FP16, "fp32": HcclDataType.HCCL_DATA_TYPE_FP32,
              "fp64": HcclDataType.HCCL_DATA_TYPE_FP64, "bfp16": HcclDataType.HCCL_DATA_TYPE_BFP16}
REDUCE_OPS = {"sum": HcclReduceOp.HCCL_REDUCE_SUM, "prod": HcclReduceOp.HCCL_REDUCE_PROD,
              "max": HcclReduceOp.HCCL_REDUCE_MAX, "min": HcclReduceOp.HCCL_REDUCE_MIN}
#: HCCL_ALGO's names for the catalogue's algorithms where they differ
ALIASES = {"fullmesh": "mesh", "h-d_r": "hdr"}


# -- the collectives ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Collective:
    """How the bench runs one collective: its ``op``, the ``hccl.h`` API, whether it reduces or has
    a root, and the buffers of ``data_size`` bytes on ``n`` ranks (``parts``: the data size is
    every rank's part, ``data_size / n`` each)."""

    name: str
    op: Op
    api: str
    parts: bool = False         # every rank holds data_size / n of the data
    reduces: bool = False
    rooted: bool = False
    aliases: tuple = field(default=())


COLLECTIVES = (
    Collective("allreduce", Op.HCCL_CMD_ALLREDUCE, "HcclAllReduce", reduces=True, aliases=("all_reduce",)),
    Collective("allgather", Op.HCCL_CMD_ALLGATHER, "HcclAllGather", parts=True, aliases=("all_gather",)),
    Collective("allgather_v", Op.HCCL_CMD_ALLGATHER_V, "HcclAllGatherV", parts=True,
               aliases=("all_gather_v", "allgatherv")),
    Collective("reduce_scatter", Op.HCCL_CMD_REDUCE_SCATTER, "HcclReduceScatter", parts=True, reduces=True,
               aliases=("reducescatter",)),
    Collective("reduce_scatter_v", Op.HCCL_CMD_REDUCE_SCATTER_V, "HcclReduceScatterV", parts=True, reduces=True,
               aliases=("reducescatterv",)),
    Collective("reduce", Op.HCCL_CMD_REDUCE, "HcclReduce", reduces=True, rooted=True),
    Collective("broadcast", Op.HCCL_CMD_BROADCAST, "HcclBroadcast", rooted=True),
    Collective("scatter", Op.HCCL_CMD_SCATTER, "HcclScatter", parts=True, rooted=True),
    Collective("alltoall", Op.HCCL_CMD_ALLTOALL, "HcclAlltoAll", parts=True),
    Collective("alltoallv", Op.HCCL_CMD_ALLTOALLV, "HcclAlltoAllV", parts=True),
    Collective("alltoallvc", Op.HCCL_CMD_ALLTOALLVC, "HcclAlltoAllVC", parts=True),
)
_BY_NAME = {k: c for c in COLLECTIVES for k in (c.name,) + c.aliases}


def find_collective(name: str) -> Collective:
    try:
        return _BY_NAME[name.strip().lower()]
    except KeyError:
        raise ValueError(f"bench: unknown collective {name!r} (-o takes {', '.join(c.name for c in COLLECTIVES)})") \
            from None


def buffer_bytes(c: Collective, size: int, n: int) -> tuple:
    """``(send bytes, recv bytes)`` per rank for data size ``size`` on ``n`` ranks."""
    part = size // n
    if c.op in (Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_REDUCE):
        return size, size
    if c.op == Op.HCCL_CMD_BROADCAST:
        return size, 0
    if c.op in (Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V):
        return part, size
    if c.op in (Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_REDUCE_SCATTER_V, Op.HCCL_CMD_SCATTER):
        return size, part
    return size, size               # alltoall*: each rank's send and receive buffers


def _api_call(c: Collective, comm, send, recv, size, n, stream, dtype, redop, root, elem):
    """The ``hccl.h`` call of ``c`` for data size ``size`` (its return code)."""
    import pyhcomm as h
    count, part = size // elem, size // n // elem
    if c.op == Op.HCCL_CMD_ALLREDUCE:
        return h.HcclAllReduce(send, recv, count, dtype, redop, comm, stream)
    if c.op == Op.HCCL_CMD_ALLGATHER:
        return h.HcclAllGather(send, recv, part, dtype, comm, stream)
    if c.op == Op.HCCL_CMD_ALLGATHER_V:
        return h.HcclAllGatherV(send, part, recv, [part] * n, [i * part for i in range(n)], dtype, comm, stream)
    if c.op == Op.HCCL_CMD_REDUCE_SCATTER:
        return h.HcclReduceScatter(send, recv, part, dtype, redop, comm, stream)
    if c.op == Op.HCCL_CMD_REDUCE_SCATTER_V:
        return h.HcclReduceScatterV(send, [part] * n, [i * part for i in range(n)], recv, part, dtype, redop, comm,
                                    stream)
    if c.op == Op.HCCL_CMD_REDUCE:
        return h.HcclReduce(send, recv, count, dtype, redop, root, comm, stream)
    if c.op == Op.HCCL_CMD_BROADCAST:
        return h.HcclBroadcast(send, count, dtype, root, comm, stream)
    if c.op == Op.HCCL_CMD_SCATTER:
        return h.HcclScatter(send, recv, part, dtype, root, comm, stream)
    if c.op == Op.HCCL_CMD_ALLTOALL:
        return h.HcclAlltoAll(send, part, dtype, recv, part, dtype, comm, stream)
    displs = [i * part for i in range(n)]
    if c.op == Op.HCCL_CMD_ALLTOALLV:
        return h.HcclAlltoAllV(send, [part] * n, displs, dtype, recv, [part] * n, displs, dtype, comm, stream)
    return h.HcclAlltoAllVC(send, [[part] * n for _ in range(n)], dtype, recv, dtype, comm, stream)


def _arguments(c: Collective, send, recv, size, n, dtype, redop, root, elem) -> tuple:
    """The arguments of ``c`` as the collective library's algorithms take them
    (:data:`pyhcomm.collectives.algorithm.ARGUMENTS`)."""
    count, part = size // elem, size // n // elem
    pb = part * elem
    if c.op in (Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLTOALL):
        return send, recv, pb
    if c.op == Op.HCCL_CMD_ALLGATHER_V:
        return send, recv, [pb] * n, [i * pb for i in range(n)]
    if c.op == Op.HCCL_CMD_REDUCE_SCATTER:
        return send, recv, part, dtype, redop
    if c.op == Op.HCCL_CMD_REDUCE_SCATTER_V:
        return send, recv, [part] * n, [i * part for i in range(n)], dtype, redop
    if c.op == Op.HCCL_CMD_ALLREDUCE:
        return send, recv, count, dtype, redop
    if c.op == Op.HCCL_CMD_REDUCE:
        return send, recv, count, dtype, redop, root
    if c.op == Op.HCCL_CMD_BROADCAST:
        return send, size, root
    if c.op == Op.HCCL_CMD_SCATTER:
        return send, recv, pb, root
    sizes, displs = [pb] * n, [i * pb for i in range(n)]
    return send, sizes, displs, recv, sizes, displs


def _per_rank_bytes(c: Collective, size: int, n: int) -> int:
    """HCCL's bytes of the call (``Call.nbytes``: the count argument times the element size)."""
    return size // n if c.parts else size


# -- the algorithms -----------------------------------------------------------------------------------------
def parse_algo(text: str) -> str:
    """The algorithm an ``--algo`` value names: a name; an HCCL_ALGO string whose levels name one
    algorithm besides ``NA`` (``level0:NA;level1:ring``: ``ring``); one whose every level names an
    algorithm: the catalogue's hierarchy (``level0:fullmesh;level1:NHR``:
    ``level0:mesh;level1:nhr``). Per-operator forms are the selection's (HCCL_ALGO).
    ``ValueError`` otherwise."""
    text = text.strip()
    if ":" not in text and "=" not in text:
        return text
    if "=" in text:
        raise ValueError(f"bench: --algo {text!r}: a per-operator HCCL_ALGO string configures the selection "
                         "(set HCCL_ALGO); give one algorithm (ring, fullmesh) or one per level")
    levels = []
    for part in text.split(";"):
        level, _, name = part.partition(":")
        if not level.strip().startswith("level") or not name.strip():
            raise ValueError(f"bench: --algo {text!r}: {part!r} is not levelN:ALGO")
        levels.append(name.strip())
    named = [name for name in levels if name.upper() != "NA"]
    if len(named) == 1:
        return named[0]
    if len(named) == len(levels) > 1:
        return ";".join(f"level{i}:{_catalogue_name(name)}" for i, name in enumerate(levels))
    raise ValueError(f"bench: --algo {text!r} names {len(named)} algorithms and leaves a level NA; the bench "
                     "runs one algorithm, or one per level (level0:fullmesh;level1:NHR)")


def _catalogue_name(name: str) -> str:
    return ALIASES.get(name.lower(), name.lower())


def resolve(name: str, c: Collective) -> Algorithm:
    """The algorithm called ``name`` (HCCL_ALGO's name or string, :func:`parse_algo`, or the
    catalogue's) that runs ``c``."""
    key = parse_algo(name)
    for candidate in (key, key.lower(), ALIASES.get(key.lower(), key.lower())):
        try:
            algorithm = catalogue.find(candidate)
        except KeyError:
            continue
        if c.op in algorithm.ops:
            return algorithm
        raise ValueError(f"bench: algorithm {name!r} does not run {c.name} "
                         f"(it runs {', '.join(sorted(dispatch.op_name(o) for o in algorithm.ops))})")
    known = sorted({a.name for a in catalogue.CATALOGUE} | set(ALIASES))
    raise ValueError(f"bench: no algorithm {name!r} in the collective library (today: {', '.join(known)})")


# -- one point ----------------------------------------------------------------------------------------------
@dataclass
class Point:
    """One size of one run: seconds per call, the algorithm that ran, the selection's, the check."""

    size: int
    seconds: float
    algorithm: str | None
    selected: str | None
    check: str
    op: str
    nranks: int
    run_s: float = 0.0
    replay_s: float = 0.0

    @property
    def algbw(self) -> float:
        return self.size / self.seconds if self.seconds > 0 else 0.0

    @property
    def busbw(self) -> float:
        from .bandwidth import busbw_factor
        return self.algbw * busbw_factor(self.op, self.nranks)


@dataclass
class Setup:
    """What every point of a sweep shares."""

    product: str
    per_server: int
    servers: int
    collective: Collective
    dtype: HcclDataType
    redop: HcclReduceOp
    root: int = 0
    iters: int = 1
    warmup: int = 0
    check: bool = False
    check_limit: int = CHECK_LIMIT

    @property
    def nranks(self) -> int:
        return self.per_server * self.servers

    def devices(self) -> list:
        """Rank ``k`` on device ``k % p`` of server ``k // p`` of the product."""
        per = find_product(self.product).devices_per_server
        if self.per_server > per:
            raise ValueError(f"bench: -p {self.per_server} is more NPUs than a server of {self.product} has ({per})")
        return [(k // self.per_server) * per + k % self.per_server for k in range(self.nranks)]


def _expected(c: Collective, me: int, n: int, size: int, elem_dtype, root: int):
    """What rank ``me`` holds after the call (inputs of rank ``r``: all ``r + 1``), or None
    (nothing to check on it); ``"send"``: the send buffer is checked (Broadcast)."""
    total = n * (n + 1) / 2
    count, part = size // np.dtype(elem_dtype).itemsize, size // n // np.dtype(elem_dtype).itemsize
    if c.op == Op.HCCL_CMD_ALLREDUCE:
        return np.full(count, total)
    if c.op == Op.HCCL_CMD_REDUCE:
        return np.full(count, total) if me == root else None
    if c.op == Op.HCCL_CMD_BROADCAST:
        return "send"
    if c.op in (Op.HCCL_CMD_ALLGATHER, Op.HCCL_CMD_ALLGATHER_V, Op.HCCL_CMD_ALLTOALL, Op.HCCL_CMD_ALLTOALLV,
                Op.HCCL_CMD_ALLTOALLVC):
        return np.repeat(np.arange(1, n + 1), part)
    if c.op in (Op.HCCL_CMD_REDUCE_SCATTER, Op.HCCL_CMD_REDUCE_SCATTER_V):
        return np.full(part, total)
    return np.full(part, root + 1)          # scatter: the root's slices


def run_point(setup: Setup, size: int, algorithm: Algorithm | None = None, custom=None) -> Point:
    """Run ``setup``'s collective of data size ``size`` (by ``algorithm``, ``custom``, or the
    selection's choice) and replay it; a :class:`Point`."""
    import pyhcomm
    from .. import acl
    c, n = setup.collective, setup.nranks
    elem = enums.DATA_TYPE_SIZE[int(setup.dtype)]
    np_dtype = enums.NUMPY_DTYPE.get(int(setup.dtype))
    send_b, recv_b = buffer_bytes(c, size, n)
    data = setup.check and max(send_b, recv_b) <= setup.check_limit
    if data and np_dtype is None:
        raise ValueError(f"bench: -c 1 cannot check {setup.dtype.name} (no numpy type)")
    name = custom.__name__ if custom is not None else c.api

    def body(comm):
        me = comm.rank
        send, _ = acl.rt.malloc(max(send_b, elem), 0)
        recv, _ = acl.rt.malloc(max(recv_b, elem), 0)
        stream, _ = acl.rt.create_stream()
        if data:
            host = np.full(max(send_b, elem) // elem, me + 1, dtype=np_dtype)
            acl.rt.memcpy(send, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes, H2D)
        call = dispatch.describe(comm.handle, c.op, _per_rank_bytes(c, size, n), api=c.api,
                                 root=setup.root if c.rooted else None, data_type=setup.dtype,
                                 reduce_op=setup.redop if c.reduces else None)
        selected = selector.select(call).name
        for _ in range(setup.warmup + setup.iters):
            if custom is not None:
                with region(name, bytes=size, op=dispatch.op_name(c.op), comm=comm):
                    custom(comm, send, recv, size, stream)
            elif algorithm is None:
                ret = _api_call(c, comm.handle, send, recv, size, n, stream, setup.dtype, setup.redop, setup.root,
                                elem)
                if ret != 0:
                    raise RuntimeError(f"bench: {c.api} returned {ret}")
            else:
                args = _arguments(c, send, recv, size, n, setup.dtype, setup.redop, setup.root, elem)
                dispatch.run_algorithm(c.api, comm.handle, stream, algorithm, call, args)
        acl.rt.synchronize_stream(stream)
        if not data:
            return selected, None
        want = _expected(c, me, n, size, np_dtype, setup.root)
        if want is None:
            return selected, True
        src = send if isinstance(want, str) else recv
        want = np.full(send_b // elem, 1) if isinstance(want, str) else want
        out = np.zeros(want.size, dtype=np_dtype)
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, src, out.nbytes, D2H)
        return selected, bool(np.array_equal(out, want.astype(np_dtype)))

    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=0), product=setup.product, data=data,
                      scheduler="coop")
    t0 = time.perf_counter()
    results = pyhcomm.launch(body, n, sim=sim, devices=setup.devices())
    t1 = time.perf_counter()
    tl = replay(sim)
    t2 = time.perf_counter()
    calls = [k for k in tl.calls if k.name == name][setup.warmup:]     # (a call that ran nothing has none)
    seconds = (max(k.end for k in calls) - min(k.begin for k in calls)) / setup.iters if calls else 0.0
    checks = [ok for _sel, ok in results]
    check = "NULL" if not data else ("success" if all(checks) else "failed")
    ran = f"{name} (custom)" if custom is not None else calls[0].algorithm if calls else None
    return Point(size, seconds, ran, results[0][0], check, dispatch.op_name(c.op), n, t1 - t0, t2 - t1)


# -- the sweep and its table ---------------------------------------------------------------------------------
def parse_size(text: str) -> int:
    """``8K`` -> 8192 (``K``, ``M``, ``G`` powers of 1024; a plain number of bytes)."""
    t = str(text).strip().upper().removesuffix("B")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise ValueError(f"bench: {text!r} is not a size (bytes, or with K, M or G)") from None


def sizes(minbytes: int, maxbytes: int, factor: int, setup: Setup) -> list:
    """The sweep's sizes, each a whole number of elements per rank (hccl_test's ``-f``)."""
    if factor < 2:
        raise ValueError(f"bench: -f {factor}: the step factor must be at least 2")
    elem = enums.DATA_TYPE_SIZE[int(setup.dtype)]
    unit = elem * (setup.nranks if setup.collective.parts else 1)
    out, size = [], minbytes
    while size <= maxbytes:
        if size % unit == 0:
            out.append(size)
        size *= factor
    if not out:
        raise ValueError(f"bench: no size from {minbytes} to {maxbytes} bytes holds a whole number of "
                         f"{setup.dtype.name} elements per rank on {setup.nranks} ranks (a multiple of {unit})")
    return out


class Progress:
    """A progress line on stderr, at most one a second, and a summary at the end."""

    def __init__(self, total: int, out=None):
        self.total, self.done, self.out = total, 0, out if out is not None else sys.stderr
        self.t0 = self.last = time.perf_counter()
        self.run_s = self.replay_s = 0.0

    def step(self, point: Point, what: str) -> None:
        self.done += 1
        self.run_s += point.run_s
        self.replay_s += point.replay_s
        now = time.perf_counter()
        if now - self.last >= 1.0 and self.done < self.total:
            self.last = now
            print(f"bench: {self.done}/{self.total} points ({what}, {point.size} bytes), {now - self.t0:.1f} s",
                  file=self.out, flush=True)

    def finish(self) -> None:
        print(f"bench: {self.done} points in {time.perf_counter() - self.t0:.1f} s (runs {self.run_s:.1f} s, "
              f"replays {self.replay_s:.1f} s)", file=self.out, flush=True)


def table(setup: Setup, points: dict, out) -> None:
    """Print one product's table: a row per size, a column group per algorithm (see the module)."""
    runs = list(points)
    first = points[runs[0]]
    c = setup.collective
    redop = f", {setup.redop.name[len('HCCL_REDUCE_'):].lower()}" if c.reduces else ""
    print(f"# {c.name} (modeled): {setup.product}, {setup.servers} server(s) x {setup.per_server} NPUs = "
          f"{setup.nranks} ranks, {setup.dtype.name[len('HCCL_DATA_TYPE_'):].lower()}{redop}, "
          f"{setup.iters} iteration(s)", file=out)
    head = ["data_size(Bytes)"]
    for run in runs:
        if run is None:
            head += ["aveg_time(us)", "alg_bandwidth(GB/s)", "bus_bandwidth(GB/s)"]
        else:
            head += [f"{run}:time(us)", f"{run}:algbw(GB/s)", f"{run}:busbw(GB/s)"]
    head += ["algorithm" if runs == [None] else "selected", "check_result"]
    rows = []
    for i, p0 in enumerate(first):
        row = [str(p0.size)]
        checks = []
        for run in runs:
            p = points[run][i]
            row += [f"{p.seconds * 1e6:.2f}", f"{p.algbw / 1e9:.5f}", f"{p.busbw / 1e9:.5f}"]
            checks.append(p.check)
        pick = p0.algorithm if runs == [None] else p0.selected
        check = "NULL" if "NULL" in checks else ("success" if set(checks) == {"success"} else "failed")
        rows.append(row + [str(pick), check])
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(head)]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths)), file=out)
    for r in rows:
        print(" | ".join(v.ljust(w) for v, w in zip(r, widths)), file=out)
    print(file=out)


def write_png(curves: dict, path: str, title: str) -> None:
    """busbw against size, a line per ``(label) -> [Point]``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("bench --png needs matplotlib: pip install 'pyhcomm[plot]'") from exc
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, pts in curves.items():
        ax.plot([p.size for p in pts], [p.busbw / 1e9 for p in pts], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: _human(v)))
    ax.set_xlabel("data size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s, modeled)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _human(v: float) -> str:
    """``1048576`` -> ``1M`` (tick labels)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def _load_custom(spec: str):
    path, sep, func = spec.rpartition(":")
    if not sep or not os.path.isfile(path):
        raise ValueError(f"bench: --custom {spec!r} must be FILE.py:FUNCTION of an existing file")
    module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ValueError(f"bench: --custom {spec!r}: {path} has no function {func!r}")
    return fn


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pyhcomm bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--op", default="allreduce", help=f"the collective: {', '.join(c.name for c in COLLECTIVES)}")
    p.add_argument("-b", "--minbytes", default="8K", help="smallest data size (default 8K)")
    p.add_argument("-e", "--maxbytes", default="64M", help="largest data size (default 64M)")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size factor between rows (default 2)")
    p.add_argument("-p", "--npus", type=int, default=8, help="NPUs per server (default 8)")
    p.add_argument("--servers", type=int, default=1, help="servers (default 1)")
    p.add_argument("-d", "--datatype", default="fp32", help=f"{', '.join(DATA_TYPES)} (default fp32)")
    p.add_argument("--reduce", default="sum", help="reduce operation: sum, prod, max, min (default sum)")
    p.add_argument("-r", "--root", type=int, default=0, help="root rank of Reduce, Broadcast, Scatter (default 0)")
    p.add_argument("-n", "--iters", type=int, default=1, help="measured iterations (default 1)")
    p.add_argument("-w", "--warmup", type=int, default=0, help="warm-up iterations, not measured (default 0)")
    p.add_argument("-c", "--check", type=int, choices=(0, 1), default=0,
                   help=f"1: real bytes, every rank's output checked (buffers up to {CHECK_LIMIT >> 20} MiB)")
    p.add_argument("--product", action="append", help=f"repeatable or comma-separated (default {DEFAULT_PRODUCT})")
    p.add_argument("--algo", help="run this algorithm (HCCL_ALGO's name, or levelN:NAME;...) instead of the selection's")
    p.add_argument("--compare", help="comma-separated algorithms, side by side")
    p.add_argument("--custom", help="FILE.py:FUNCTION: time your own collective FUNCTION(comm, send, recv, nbytes, "
                                    "stream)")
    p.add_argument("--png", help="plot busbw against size into this PNG file")
    return p


def main(argv=None, out=None, err=None) -> int:
    args = parser().parse_args(argv)
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        return _main(args, out, err)
    except (ValueError, ImportError) as exc:
        print(exc, file=err)
        return 2


def _main(args, out, err) -> int:
    c = find_collective(args.op)
    if args.datatype.lower() not in DATA_TYPES:
        raise ValueError(f"bench: -d {args.datatype!r} is not one of {', '.join(DATA_TYPES)}")
    if args.reduce.lower() not in REDUCE_OPS:
        raise ValueError(f"bench: --reduce {args.reduce!r} is not one of {', '.join(REDUCE_OPS)}")
    for flag, v in (("-p", args.npus), ("--servers", args.servers), ("-n", args.iters)):
        if v < 1:
            raise ValueError(f"bench: {flag} {v} must be at least 1")
    if args.warmup < 0:
        raise ValueError(f"bench: -w {args.warmup} must be at least 0")
    if sum(x is not None for x in (args.algo, args.compare, args.custom)) > 1:
        raise ValueError("bench: --algo, --compare and --custom exclude each other")
    products = [find_product(x.strip()).name for p in (args.product or [DEFAULT_PRODUCT]) for x in p.split(",")]
    runs: list = [None]
    if args.algo:
        runs = [parse_algo(args.algo)]
    elif args.compare:
        runs = [x.strip() for x in args.compare.split(",") if x.strip()]
        if len(runs) < 2:
            raise ValueError("bench: --compare takes two or more algorithms, comma-separated")
    custom = _load_custom(args.custom) if args.custom else None
    algos = {r: None if r is None else resolve(r, c) for r in runs}
    setups = []
    for product in products:
        setup = Setup(product, args.npus, args.servers, c, DATA_TYPES[args.datatype.lower()],
                      REDUCE_OPS[args.reduce.lower()], args.root, args.iters, args.warmup, bool(args.check))
        if c.rooted and not 0 <= setup.root < setup.nranks:
            raise ValueError(f"bench: -r {setup.root} is not a rank of {setup.nranks}")
        setup.devices()
        setups.append((setup, sizes(parse_size(args.minbytes), parse_size(args.maxbytes), args.stepfactor, setup)))
    progress = Progress(sum(len(s) for _setup, s in setups) * len(runs), err)
    curves: dict = {}
    for setup, sweep in setups:
        points = {}
        for run in runs:
            pts = []
            for size in sweep:
                p = run_point(setup, size, algos[run], custom)
                pts.append(p)
                progress.step(p, f"{setup.product}, {run or 'selected'}")
            points[run] = pts
            label = run or (custom.__name__ if custom else "selected")
            curves[label if len(setups) == 1 else f"{setup.product}, {label}"] = pts
        table(setup, points, out)
    progress.finish()
    if args.png:
        write_png(curves, args.png, f"{c.name}: {', '.join(products)}, {args.servers} x {args.npus} NPUs")
        print(f"bench: busbw plot written to {args.png}", file=err)
    return 0


__all__ = ["main", "run_point", "Setup", "Point", "COLLECTIVES", "find_collective", "resolve", "parse_algo",
           "parse_size"]
