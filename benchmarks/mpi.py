"""pyhcomm over MPI against mpi4py itself, side by side in one run (shared machines are noisy:
read the ratios).

    python benchmarks/mpi.py                  # everything below
    python benchmarks/mpi.py --quick          # smaller sizes, fewer repetitions

1. Two processes on this machine (``mpiexec -n 2``, Atlas 800T A2), one channel between rank 0 and
   rank 1:
   * large one-sided writes: ``HcommWriteOnThread`` of S bytes into the peer's HCCL buffer, k times,
     then a channel notify the peer waits for and answers; against ``MPI.Win.Put`` of S bytes
     into a window of S bytes (``Win.Allocate``, lock / put / unlock), k times, then a message the
     peer answers. GB/s and the ratio.
   * small-message latency: a ping-pong of an 8-byte ``HcommWriteOnThread`` + channel notify record,
     answered the same way after a ``NotifyWait`` (every task enqueued, then one synchronize: no
     host round trip per message), against an ``MPI.Comm.Send`` /
     ``Recv`` ping-pong of 8 bytes (``MPI_PINGS`` times as many round trips: both run about as
     long). Microseconds per one-way trip and the ratio; then the data plane alone: the same
     tasks enqueued by both ranks before either synchronizes, only the synchronize timed (what a
     device that runs behind its host would see); then the transport alone: the same channel
     notifies set with the MPI transport's ``remote_notify`` (a doorbell ring between processes of
     one machine) and awaited by serving its link, no task, stream or scheduler (what the transport
     adds to a trip; the rest is the simulator's cost of the three tasks a trip runs).
   For reference, the same ping-pong between two ranks of one process (no MPI: the tasks' own
   cost). Each is measured five times (after a warm-up), pyhcomm's and mpi4py's rounds in turn so that
   both see the same load; the best of each is kept.
2. 16 processes (``nice mpiexec -n 16``) x 1 MiB AllReduce with data (``pyhcomm.launch`` inside the
   job): wall time, the peak RSS of the largest process, and whether every rank's output matches
   the one-process run's.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.abspath(__file__)


# -- inside the jobs ---------------------------------------------------------------------------------------
def _setup(world):
    """Communicator, stream, CPU_TS thread and a channel to the other rank (ranks 0 and 1)."""
    from pyhcomm import acl
    import pyhcomm as P
    rank = world.rank
    assert acl.init() == 0 and acl.rt.set_device(rank) == 0
    root = P.HcclGetRootInfo()[1] if rank == 0 else None
    ret, comm = P.HcclCommInitRootInfo(2, world.bcast(root, root=0), rank)
    assert ret == 0
    stream, _ = acl.rt.create_stream()
    ret, thread = P.HcclThreadAcquireWithStream(comm, P.COMM_ENGINE_CPU_TS, stream, 1)
    assert ret == 0
    d = P.HcclChannelDesc()
    P.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - rank, P.COMM_PROTOCOL_HCCS, 2
    ret, (ch,) = P.HcclChannelAcquire(comm, P.COMM_ENGINE_CPU_TS, [d])
    assert ret == 0
    ret, remote, _ = P.HcclChannelGetHcclBuffer(comm, ch)
    assert ret == 0
    return P, acl, comm, stream, thread, ch, remote


def _sync(acl, stream):
    ret = acl.rt.synchronize_stream(stream)
    assert ret == 0, acl.get_recent_err_msg()


#: mpi4py's ping-pong makes this many times more round trips than pyhcomm's, so that both run
#: about as long (a few milliseconds of mpi4py fit in one time slice of a shared machine's
#: scheduler; pyhcomm's hundreds of milliseconds are preempted as often as a longer run is)
MPI_PINGS = 40


def _writes(P, acl, world, stream, thread, ch, remote, src, size, k) -> float:
    """Seconds for k writes of ``size`` bytes rank 0 -> rank 1, then a notify rank 1 answers."""
    world.Barrier()
    t0 = time.perf_counter()
    if world.rank == 0:
        for _ in range(k):
            assert P.HcommWriteOnThread(thread, ch, remote, src, size) == 0
        assert P.HcommChannelNotifyRecordOnThread(thread, ch, 0) == 0
        assert P.HcommChannelNotifyWaitOnThread(thread, ch, 1, 1836) == 0
    else:
        P.HcommChannelNotifyWaitOnThread(thread, ch, 0, 1836)
        P.HcommChannelNotifyRecordOnThread(thread, ch, 1)
    _sync(acl, stream)
    return time.perf_counter() - t0


def _puts(MPI, world, win, buf, k, flag) -> float:
    """Seconds for k puts into the peer's window, then a message rank 1 answers."""
    world.Barrier()
    t0 = time.perf_counter()
    if world.rank == 0:
        for _ in range(k):
            win.Lock(1, MPI.LOCK_SHARED)
            win.Put(buf, 1)
            win.Unlock(1)
        world.Send(flag, 1, 7)
        world.Recv(flag, 1, 8)
    else:
        world.Recv(flag, 0, 7)
        world.Send(flag, 0, 8)
    return time.perf_counter() - t0


def _pings(P, acl, world, stream, thread, ch, remote, src, pings, data_plane=False) -> float:
    """Seconds per one-way trip of an 8-byte write + channel notify ping-pong (all enqueued first).
    ``data_plane``: both ranks enqueue everything before either synchronizes; only that is timed."""
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(pings):
        if world.rank == 0:
            P.HcommWriteOnThread(thread, ch, remote, src, 8)
            P.HcommChannelNotifyRecordOnThread(thread, ch, 0)
            P.HcommChannelNotifyWaitOnThread(thread, ch, 1, 1836)
        else:
            P.HcommChannelNotifyWaitOnThread(thread, ch, 0, 1836)
            P.HcommWriteOnThread(thread, ch, remote, src, 8)
            P.HcommChannelNotifyRecordOnThread(thread, ch, 1)
    if data_plane:
        world.Barrier()
        t0 = time.perf_counter()
    _sync(acl, stream)
    return (time.perf_counter() - t0) / pings / 2


def _transport_pings(world, ch, pings) -> float:
    """Seconds per one-way trip of a channel notify through the MPI transport alone (see the module
    docstring): rank 0 sets the peer's notify 0 and waits for its own notify 1, rank 1 answers.
    Aborts the job when an answer takes longer than 30 s (no scheduler here to report a hang)."""
    from pyhcomm.hcomm.resources.channel import connected_peer, get_channel
    from pyhcomm.sim import current_sim
    from pyhcomm.transport.mpi_failures import unlink_mpi_segments
    transport = current_sim().transport
    end = get_channel(ch, "benchmarks/mpi.py")
    out = connected_peer(end, "benchmarks/mpi.py").notifies[world.rank]
    mine = end.notifies[1 - world.rank]
    send, serve = transport.remote_notify, transport.link.serve
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(pings):
        if world.rank == 0:
            send(out.peer, out.index)
        if not mine.value:
            deadline = time.monotonic() + 30
            while not mine.value:
                if not serve() and time.monotonic() > deadline:
                    print(f"process {world.rank}: no answer to a channel notify in 30 s", file=sys.stderr, flush=True)
                    unlink_mpi_segments()  # (MPI_Abort leaves MPICH's shared-memory files behind)
                    world.Abort(1)          # (the peer may be blocked in MPI: end the whole job)
        mine.consume()
        if world.rank == 1:
            send(out.peer, out.index)
    return (time.perf_counter() - t0) / pings / 2


def _mpi_pings(world, pings) -> float:
    b = np.zeros(8, np.uint8)
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(pings):
        if world.rank == 0:
            world.Send(b, 1, 9)
            world.Recv(b, 1, 9)
        else:
            world.Recv(b, 0, 9)
            world.Send(b, 0, 9)
    return (time.perf_counter() - t0) / pings / 2


def pair_job(sizes, reps, pings, rounds) -> None:
    """Each measurement ``rounds`` times, pyhcomm's and mpi4py's in turn (both see the same load),
    the best of each kept (after a warm-up round)."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    rank = world.rank
    P, acl, comm, stream, thread, ch, remote = _setup(world)
    rows = []
    flag = np.zeros(1, np.uint8)
    for size in sizes:
        k = max(2, min(reps, (512 << 20) // size))
        src, _ = acl.rt.malloc(size, P.ACL_MEM_MALLOC_HUGE_FIRST)
        acl.rt.memset(src, size, rank + 1, size)
        win = MPI.Win.Allocate(size, 1, comm=world)
        buf = np.full(size, rank + 1, np.uint8)
        ours, theirs = [], []
        for _round in range(rounds + 1):
            ours.append(_writes(P, acl, world, stream, thread, ch, remote, src, size, k))
            theirs.append(_puts(MPI, world, win, buf, k, flag))
        win.Free()
        rows.append((size, k, k * size / min(ours[1:]) / 1e9, k * size / min(theirs[1:]) / 1e9))
        acl.rt.free(src)
    src, _ = acl.rt.malloc(64, P.ACL_MEM_MALLOC_HUGE_FIRST)
    lat, dlat, tlat, mlat = [], [], [], []
    for _round in range(rounds + 1):
        lat.append(_pings(P, acl, world, stream, thread, ch, remote, src, pings))
        dlat.append(_pings(P, acl, world, stream, thread, ch, remote, src, pings, data_plane=True))
        tlat.append(_transport_pings(world, ch, pings * MPI_PINGS // 4))
        mlat.append(_mpi_pings(world, pings * MPI_PINGS))
    P.HcclCommDestroy(comm)
    if rank == 0:
        print(json.dumps({"bw": rows, "lat": [min(lat[1:]), min(mlat[1:]), min(dlat[1:]), min(tlat[1:])]}), flush=True)


def pingpong_body(comm, pings: int, rounds: int) -> float:
    """The same 8-byte write + notify ping-pong between two ranks of one process (no MPI): what
    the simulator's tasks cost alone. Seconds per one-way trip, the best of ``rounds``."""
    import pyhcomm as P
    from pyhcomm import acl
    stream, _ = acl.rt.create_stream()
    _, thread = P.HcclThreadAcquireWithStream(comm.handle, P.COMM_ENGINE_CPU_TS, stream, 1)
    d = P.HcclChannelDesc()
    P.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, P.COMM_PROTOCOL_HCCS, 2
    _, (ch,) = P.HcclChannelAcquire(comm.handle, P.COMM_ENGINE_CPU_TS, [d])
    _, remote, _ = P.HcclChannelGetHcclBuffer(comm.handle, ch)
    src, _ = acl.rt.malloc(64, P.ACL_MEM_MALLOC_HUGE_FIRST)

    class _World:       # what _pings needs of an MPI communicator
        rank = comm.rank

        @staticmethod
        def Barrier():
            comm.barrier()
    return min(_pings(P, acl, _World, stream, thread, ch, remote, src, pings) for _ in range(rounds + 1))


def allreduce_body(comm, mib: int):
    import pyhcomm as P
    from pyhcomm import acl
    count = (mib << 20) // 4
    s, _ = acl.rt.create_stream()
    a, _ = acl.rt.malloc(count * 4, P.ACL_MEM_MALLOC_HUGE_FIRST)
    b, _ = acl.rt.malloc(count * 4, P.ACL_MEM_MALLOC_HUGE_FIRST)
    data = (np.arange(count, dtype=np.float32) % 251) * (comm.rank + 1)
    acl.rt.memcpy(a, count * 4, acl.util.numpy_to_ptr(data), count * 4, P.ACL_MEMCPY_HOST_TO_DEVICE)
    assert P.HcclAllReduce(a, b, count, P.HCCL_DATA_TYPE_FP32, P.HCCL_REDUCE_SUM, comm.handle, s) == 0
    _sync(acl, s)
    out = np.zeros(count, np.float32)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), count * 4, b, count * 4, P.ACL_MEMCPY_DEVICE_TO_HOST)
    return hashlib.sha256(out.tobytes()).hexdigest()[:16]


def allreduce_job(nranks: int, mib: int) -> None:
    import pyhcomm
    from mpi4py import MPI
    t0 = time.perf_counter()
    digests = pyhcomm.launch(allreduce_body, nranks, mib)
    wall = time.perf_counter() - t0
    rss = MPI.COMM_WORLD.gather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, root=0)
    if MPI.COMM_WORLD.rank == 0:
        print(json.dumps({"digests": digests, "wall": wall, "rss_kib": max(rss)}), flush=True)


# -- the driver --------------------------------------------------------------------------------------------
def _run(n, args, nice=False):
    from pyhcomm.transport.mpi_link import mpiexec
    cmd = (["nice", "-n", "10"] if nice else []) + mpiexec() + ["-n", str(n), sys.executable, HERE] + args
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        raise SystemExit(f"mpiexec -n {n} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return lines[0], wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--ranks", type=int, default=16)
    ns, rest = ap.parse_known_args()
    if ns.job == "pair":
        sizes = [int(x) for x in rest[0].split(",")]
        return pair_job(sizes, int(rest[1]), int(rest[2]), int(rest[3]))
    if ns.job == "allreduce":
        return allreduce_job(int(rest[0]), int(rest[1]))
    sizes = [1 << 20, 16 << 20] if ns.quick else [1 << 20, 4 << 20, 16 << 20, 64 << 20]
    reps, pings, rounds = (8, 300, 2) if ns.quick else (16, 1000, 5)
    out, _ = _run(2, ["--job", "pair", ",".join(map(str, sizes)), str(reps), str(pings), str(rounds)])
    print("two processes, one machine: one-sided writes rank 0 -> rank 1")
    print(f"{'window':>10} {'writes':>7} {'pyhcomm GB/s':>13} {'mpi4py Put GB/s':>16} {'ratio':>7}")
    for size, k, ours, theirs in out["bw"]:
        print(f"{size >> 20:>7} MiB {k:>7} {ours:>13.2f} {theirs:>16.2f} {ours / theirs:>7.2f}")
    ours, theirs, plane, alone_transport = out["lat"]
    import pyhcomm
    alone = min(pyhcomm.launch(pingpong_body, 2, pings, rounds, product="Atlas 800T A2", mpi=False))
    print(f"8-byte ping-pong, one way: pyhcomm {ours * 1e6:.1f} us, mpi4py Send/Recv {theirs * 1e6:.1f} us, "
          f"ratio {ours / theirs:.1f} (the same ping-pong between two ranks of one process: {alone * 1e6:.1f} us)")
    print(f"  the data plane alone (every task enqueued before the synchronize): {plane * 1e6:.1f} us, "
          f"ratio {plane / theirs:.1f}")
    print(f"  the MPI transport alone (a channel notify's ring and its arrival, no task): "
          f"{alone_transport * 1e6:.1f} us, ratio {alone_transport / theirs:.1f}")
    n, mib = ns.ranks, 1
    one = pyhcomm.launch(allreduce_body, n, mib, mpi=False)
    got, wall = _run(n, ["--job", "allreduce", str(n), str(mib)], nice=True)
    same = got["digests"] == one
    print(f"{n} processes x {mib} MiB AllReduce (nice mpiexec -n {n}): {wall:.1f} s wall (launch {got['wall']:.1f} s), "
          f"peak RSS of the largest process {got['rss_kib'] / 1024:.0f} MiB, same bytes as one process: {same}")
    if not same:
        raise SystemExit("the MPI AllReduce differs from the one-process run")


if __name__ == "__main__":
    main()
