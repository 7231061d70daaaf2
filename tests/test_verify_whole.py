"""``python -m pyhcomm verify`` on whole programs, and what its race findings say across ranks.

A script whose ``main()`` takes no parameter (the usual Python idiom, every HCCL example port) runs
whole, as does any script with ``--whole``; the report names the product the program ran on; the
default simulations a ``pyhcomm.reset()`` makes are checked too. A race between one rank's task and
another rank's host call is fixed in terms that rank's host can carry out; the two sides of a
transfer are named by their role (source, destination)."""
import os
import textwrap

import pytest

import pyhcomm
from pyhcomm.verify import check

E = pyhcomm.CommEngine
pytestmark = pytest.mark.timeout(120)

RING_BODY = """
    import numpy as np
    import pyhcomm
    from pyhcomm import COMM_ENGINE_CPU_TS

    def body(comm):
        dev = pyhcomm.Device(comm.device)
        stream = dev.stream()
        thread = comm.thread(COMM_ENGINE_CPU_TS, stream=stream)
        a, b = dev.malloc(64), dev.malloc(64)
        a.write(np.full(64, comm.rank + 1, np.uint8))
        thread.local_copy(b, a)
        stream.synchronize()
        return int(b.read()[0])
"""


def _script(tmp_path, text: str):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(RING_BODY) + textwrap.dedent(text))
    return str(path)


def _verify(capsys, *argv) -> tuple:
    from pyhcomm.cli import main
    code = main(["verify", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_main_without_parameters_runs_the_program_whole(tmp_path, capsys):
    script = _script(tmp_path, """
        def main():
            pyhcomm.set_product("Atlas A3")
            print("results", pyhcomm.launch(body, 2))

        if __name__ == "__main__":
            main()
    """)
    code, out, err = _verify(capsys, script, "--schedules", "2")
    assert (code, err) == (0, "")
    assert out.count("results [1, 2]") == 2
    assert f"pyhcomm verify: {script}, Atlas A3: 2 schedule(s), no findings" in out


def test_a_main_without_parameters_and_without_a_main_block_is_called(tmp_path, capsys):
    script = _script(tmp_path, """
        def main():
            print("results", pyhcomm.launch(body, 3))
    """)
    code, out, _err = _verify(capsys, script, "--schedules", "1")
    assert code == 0 and out.count("results [1, 2, 3]") == 1 and "no findings" in out


def test_whole_runs_a_script_whose_main_is_a_rank_body(tmp_path, capsys):
    script = _script(tmp_path, """
        def main(comm):
            return body(comm)

        if __name__ == "__main__":
            print("results", pyhcomm.launch(main, 4, product="Atlas A3"))
    """)
    code, out, _err = _verify(capsys, script, "--whole", "--schedules", "1")
    assert code == 0 and "results [1, 2, 3, 4]" in out
    assert f"pyhcomm verify: {script}, Atlas A3: 1 schedule(s), no findings" in out
    code, out, _err = _verify(capsys, script, "--schedules", "1", "--ranks", "2")    # a rank body without it
    assert code == 0 and f"pyhcomm verify: {script} --function main on 2 rank(s)" in out and "results" not in out


def test_a_function_named_as_rank_body_must_take_the_comm(tmp_path, capsys):
    script = _script(tmp_path, """
        def start():
            pass
    """)
    code, _out, err = _verify(capsys, script, "--function", "start")
    assert code == 2
    assert err == (f"verify: {script}'s start() takes no parameter: a rank body takes its rank's comm (to run the "
                   "script whole: --whole)\n")


def test_the_simulations_after_a_reset_are_checked_and_their_products_named(tmp_path, capsys):
    script = _script(tmp_path, """
        def racy():
            dev = pyhcomm.Device(0)
            (comm,) = pyhcomm.Comm.init_all([0])
            stream = dev.stream()
            thread = comm.thread(COMM_ENGINE_CPU_TS, stream=stream)
            a, b = dev.malloc(64), dev.malloc(64)
            thread.local_copy(b, a)
            b.read()                                   # not ordered after the copy
            stream.synchronize()
            comm.close()

        print("part 1", pyhcomm.launch(body, 2))
        pyhcomm.reset()
        pyhcomm.set_product("Atlas A3")
        racy()
    """)
    code, out, _err = _verify(capsys, script, "--schedules", "2")
    assert code == 1
    assert f"pyhcomm verify: {script}, Atlas 800T A2, Atlas A3: 2 schedule(s), 1 finding(s)" in out
    assert "read : the source of aclrtMemcpy" in out and f"at {script}:" in out


# -- what a race across ranks says --------------------------------------------------------------------------
def _peer_write_then_host_read(comm):
    """Rank 0 writes into rank 1's HCCL buffer (one-sided); rank 1's host reads it after a barrier
    that rank 0 passes right after queuing the write, not after it ran."""
    dev = pyhcomm.Device(comm.device)
    stream = dev.stream()
    thread = comm.thread(E.COMM_ENGINE_CPU_TS, stream=stream)
    channel = comm.channel(1 - comm.rank, notify_num=1)
    theirs = channel.peer_hccl_buffer()
    src = dev.malloc(256)
    if comm.rank == 0:
        channel.write(thread, theirs[:256], src)  # the write
    comm.barrier()
    if comm.rank == 1:
        comm.hccl_buffer()[:256].read()  # the read
    stream.synchronize()
    comm.barrier()


def _line(marker: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        (line,) = [k for k, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    return line


def test_a_race_across_ranks_is_fixed_in_terms_of_both_ranks():
    (f,) = check(_peer_write_then_host_read, 2, schedules=1).findings
    here = os.path.abspath(__file__)
    write, read = f"{here}:{_line('the write')}", f"{here}:{_line('the read')}"
    assert f.title == "write and read of 256 bytes of rank 1's HCCL buffer [+0x0, +0x100) are not ordered"
    assert f.lines[0].startswith("write: the destination of Write task #") and f"queued at {write}" in f.lines[0]
    assert f.lines[1].startswith("read : the source of aclrtMemcpy #") and "by rank 1's host program" in f.lines[1]
    thread = f.lines[0].split(" on ", 1)[1].split(",", 1)[0]            # rank 0 thread 0x...
    stream = f.lines[2].split("wait for stream ", 1)[1].split(" ", 1)[0]
    assert f.lines[2] == (
        f"nothing orders them. To fix: make aclrtMemcpy at {read} wait for Write at {write}, which rank 0's host "
        f"program queued: only rank 0's host program can wait for stream {stream} ({thread}); it synchronizes that "
        "stream after queuing the task and then meets rank 1's host program at a barrier (Comm.barrier, "
        "HcclBarrier) that rank 1's host program passes before the call; or "
        f"{thread} records a channel notify after the task (HcommChannelNotifyRecordOnThread) that a thread of rank "
        "1's host program waits for (HcommChannelNotifyWaitOnThread), and rank 1's host program synchronizes that "
        "thread's stream before the call")


def test_a_race_on_a_transfers_source_names_its_source():
    def body(comm):
        dev = pyhcomm.Device(comm.device)
        stream = dev.stream()
        thread = comm.thread(E.COMM_ENGINE_CPU_TS, stream=stream)
        channel = comm.channel(1 - comm.rank, notify_num=1)
        theirs = channel.peer_hccl_buffer()
        src = dev.malloc(256)
        if comm.rank == 0:
            channel.write(thread, theirs[:256], src)
            src.write(bytes(256))                   # overwrites the source before the write ran
        stream.synchronize()
        comm.barrier()

    races = [f for f in check(body, 2, schedules=1).findings if "rank 0's device memory" in f.title]
    (f,) = races
    assert f.lines[0].startswith("write: the destination of aclrtMemcpy #")
    assert f.lines[1].startswith("read : the source of Write task #")
    assert "synchronize stream 0x" in f.lines[2] and "before the call" in f.lines[2]    # one program: as before
