"""The task record: every enqueued task with kind, rank, device, thread, stream, byte ranges, the
user's call site and a global order."""
import os
import sys

import pytest

import pyhcomm
from pyhcomm import HcommLocalCopyOnThread, acl
from hcomm_testutil import D2D, KERNELS_PY, host_setup, malloc, pattern, write

THIS = os.path.abspath(__file__)


def _line():
    """The line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


def test_local_copy_task_fields():
    comm, stream, thread = host_setup()
    src, dst = malloc(256), malloc(256)
    line = _line()
    assert HcommLocalCopyOnThread(thread, dst, src, 256) == 0
    tasks = pyhcomm.record.tasks()
    assert len(tasks) == 1
    t = tasks[0]
    assert t.kind == "LocalCopy"
    assert t.rank == 0 and t.device == 0
    assert t.thread == thread
    assert t.stream.handle == stream
    assert [tuple(r) for r in t.reads] == [(src, 256)]
    assert [tuple(w) for w in t.writes] == [(dst, 256)]
    assert t.where == f"{THIS}:{line}"
    assert t.seq >= 1
    assert t.side == "host"


def test_where_is_the_line_of_each_call():
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    lines = []
    for i in range(3):
        lines.append(_line())
        HcommLocalCopyOnThread(thread, dst, src, 64 - i)
    lines.append(_line())
    HcommLocalCopyOnThread(thread, dst, src,
                           1)
    wheres = [t.where for t in pyhcomm.record.tasks()]
    assert wheres[:3] == [f"{THIS}:{lines[0]}"] * 3
    assert wheres[3] in (f"{THIS}:{lines[3]}", f"{THIS}:{lines[3] + 1}")


def _record_in_a_helper(thread, other):
    line = _line()
    pyhcomm.HcommThreadNotifyRecordOnThread(thread, other, 0)
    return line


def test_a_data_plane_call_is_the_line_of_its_caller_and_attributes_nothing_after_it():
    comm, stream, thread = host_setup()
    other_stream, _ = acl.rt.create_stream()
    _, other = pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CPU_TS, other_stream, 2)
    line = _line()
    assert pyhcomm.HcommThreadNotifyRecordOnThread(thread, other, 1) == 0
    helper = _record_in_a_helper(thread, other)
    assert pyhcomm.HcommThreadNotifyRecordOnThread(thread, other, 99) != 0     # refused: issues nothing
    a, b = malloc(64), malloc(64)
    after = _line()
    assert acl.rt.memcpy_async(b, 64, a, 64, D2D, stream) == 0            # walks its own frames
    wheres = [t.where for t in pyhcomm.record.tasks()]
    assert wheres == [f"{THIS}:{line}", f"{THIS}:{helper}", f"{THIS}:{after}"]


def test_seq_is_the_global_enqueue_order_across_streams_and_kinds():
    _comm, stream, thread = host_setup()
    other, _ = acl.rt.create_stream()
    a, b, c = malloc(64), malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(thread, b, a, 64) == 0
    assert acl.rt.memcpy_async(c, 64, a, 64, D2D, other) == 0
    assert acl.rt.memset_async(a, 64, 1, 64, stream) == 0
    assert HcommLocalCopyOnThread(thread, c, b, 32) == 0
    tasks = pyhcomm.record.tasks()
    assert [t.kind for t in tasks] == ["LocalCopy", "MemcpyAsync", "MemsetAsync", "LocalCopy"]
    seqs = [t.seq for t in tasks]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert [t.stream.handle for t in tasks] == [stream, other, stream, stream]
    assert tasks[1].reads == ((a, 64),) and tasks[1].writes == ((c, 64),)
    assert tasks[2].writes == ((a, 64),)
    assert all(t.where.startswith(THIS + ":") for t in tasks)
    # executing does not reorder or drop records
    assert acl.rt.synchronize_device() == 0
    assert [t.seq for t in pyhcomm.record.tasks()] == seqs
    assert {t.state for t in pyhcomm.record.tasks()} == {"done"}


def test_refused_calls_record_nothing():
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(0, dst, src, 64) != 0
    assert HcommLocalCopyOnThread(thread, dst + 1, src, 64) != 0
    assert HcommLocalCopyOnThread(thread, dst, 0xDEAD, 64) != 0
    assert acl.rt.memcpy_async(dst, 32, src, 64, D2D, 0) != 0
    assert pyhcomm.record.tasks() == []
    assert len(pyhcomm.record) == 0


def test_zero_length_copy_is_recorded():
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(thread, dst, src, 0) == 0
    (t,) = pyhcomm.record.tasks()
    assert t.kind == "LocalCopy" and t.reads == ((src, 0),) and t.writes == ((dst, 0),)


def test_filters_by_rank_device_and_kind():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([2, 5])
    per_rank = {}
    for rank, (comm, dev) in enumerate(zip(comms, (2, 5))):
        assert acl.rt.set_device(dev) == 0
        stream, _ = acl.rt.create_stream()
        _, thread = pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CPU_TS, stream, 1)
        src, dst = malloc(128), malloc(128)
        write(src, pattern(128, rank))
        for _ in range(rank + 1):
            assert HcommLocalCopyOnThread(thread, dst, src, 128) == 0
        assert acl.rt.memcpy_async(src, 128, dst, 128, D2D, stream) == 0
        per_rank[rank] = (thread, stream)
    assert len(pyhcomm.record.tasks(rank=0)) == 1
    assert len(pyhcomm.record.tasks(rank=1)) == 2
    r1 = pyhcomm.record.tasks(rank=1)
    assert {t.device for t in r1} == {5} and {t.thread for t in r1} == {per_rank[1][0]}
    assert len(pyhcomm.record.tasks(device=2)) == 2                 # one copy + one memcpy
    assert len(pyhcomm.record.tasks(device=5, kind="MemcpyAsync")) == 1
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == 3
    mc = pyhcomm.record.tasks(kind="MemcpyAsync")
    assert all(t.rank is None and t.thread is None for t in mc)


def test_kernel_launch_and_device_side_tasks_are_recorded():
    pyhcomm.set_product("Atlas 350")   # eager device-side primitives (no batch mode)
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, comms = pyhcomm.HcclCommInitAll([0])
    _, (thread,) = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_AICPU_TS, 1, 1)
    src, dst = malloc(64), malloc(64)
    stream, _ = acl.rt.create_stream()
    binary, _ = acl.rt.binary_load_from_file(KERNELS_PY, [])
    func, _ = acl.rt.binary_get_function(binary, "copy_ret_kernel")
    args, _ = acl.rt.kernel_args_init(func)
    for v in ([], thread, dst, src, 64):
        acl.rt.kernel_args_append(args, v)
    acl.rt.kernel_args_finalize(args)
    line = _line()
    assert acl.rt.launch_kernel_with_config(func, 1, stream, None, args, 0) == 0
    (launch,) = pyhcomm.record.tasks()
    assert launch.kind == "KernelLaunch" and launch.stream.handle == stream
    assert launch.where == f"{THIS}:{line}"
    assert acl.rt.synchronize_device() == 0
    launch2, copy = pyhcomm.record.tasks()
    assert launch2 is launch
    assert copy.kind == "LocalCopy" and copy.seq > launch.seq
    assert copy.side == "device" and copy.thread == thread and copy.rank == 0
    # the call site of a device-side call is the kernel's own line
    path, _, lineno = copy.where.rpartition(":")
    assert os.path.samefile(path, KERNELS_PY) and int(lineno) > 0
    with open(KERNELS_PY) as f:
        assert "HcommLocalCopyOnThread" in f.read().splitlines()[int(lineno) - 1]


def test_describe_names_the_call_site():
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    line = _line()
    HcommLocalCopyOnThread(thread, dst, src, 64)
    (t,) = pyhcomm.record.tasks()
    text = t.describe()
    assert "LocalCopy" in text and f"{os.path.basename(THIS)}:{line}" in text and "rank 0" in text


def test_clear():
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    HcommLocalCopyOnThread(thread, dst, src, 64)
    assert len(pyhcomm.record) == 1
    pyhcomm.record.clear()
    assert pyhcomm.record.tasks() == []
    HcommLocalCopyOnThread(thread, dst, src, 64)
    assert len(pyhcomm.record.tasks()) == 1


def test_pythonic_calls_record_the_users_line():
    import numpy as np
    from pyhcomm import Comm, Device, Kernel
    with Device(0) as dev:
        comm = Comm.init_all([0])[0]
        stream = dev.stream()
        t = comm.thread(stream=stream)
        a, b = dev.malloc(32), dev.malloc(32)
        line = _line()
        t.local_copy(b, a)
        kline = _line()
        Kernel(lambda: None).launch(stream)
        copy, launch = pyhcomm.record.tasks()
        assert copy.where == f"{THIS}:{line}" and copy.kind == "LocalCopy"
        assert launch.where == f"{THIS}:{kline}" and launch.kind == "KernelLaunch"
        stream.synchronize()
        assert (b.read() == np.zeros(32)).all()


def test_a_data_plane_call_that_is_the_outermost_frame_issues_its_task_without_a_line():
    greenlet = pytest.importorskip("greenlet").greenlet
    comm, stream, thread = host_setup()
    other_stream, _ = acl.rt.create_stream()
    _, other = pyhcomm.HcclThreadAcquireWithStream(comm, pyhcomm.COMM_ENGINE_CPU_TS, other_stream, 2)
    # a greenlet's first frame has no caller: the entry point finds no user frame to attribute to
    assert greenlet(pyhcomm.HcommThreadNotifyRecordOnThread).switch(thread, other, 0) == 0
    (task,) = pyhcomm.record.tasks()
    assert task.kind == "ThreadNotifyRecord" and task.site is None
