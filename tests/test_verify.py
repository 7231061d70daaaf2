"""The verifier's checks on small programs (what each finding says), its schedules, and its
interfaces: check(), python -m pyhcomm verify, PYHCOMM_VERIFY, the pytest plugin."""
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.analysis import analyze
from pyhcomm.verify import VerificationError, check
from pyhcomm.verify.explore import Explorer, PCTPolicy, ReplayPolicy, parse
from hcomm_testutil import D2H, host_setup, malloc
from mutation_suite import _two_streams_allgather, _two_waiters, custom_allgather, nbi_put

E, P = pyhcomm.CommEngine, pyhcomm.CommProtocol
THIS = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(THIS))
pytestmark = pytest.mark.timeout(120)


def _kinds(findings):
    return sorted({f.kind for f in findings})


def _channel(comm, notifies=2):
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, P.COMM_PROTOCOL_HCCS, notifies
    _, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, [d])
    return ch


def racy(comm, wait_first=False):
    """Rank 0 writes into rank 1's HCCL buffer and records its notify; rank 1 copies out of it
    (after waiting for the notify only when ``wait_first``)."""
    ch = _channel(comm)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    buf, _ = acl.rt.malloc(256, 0)
    if comm.rank == 0:
        _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
        pyhcomm.HcommWriteOnThread(t, ch, remote, buf, 256)
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
    else:
        if wait_first:
            pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
        pyhcomm.HcommLocalCopyOnThread(t, buf, comm.hccl_buffer().addr, 256)
        if not wait_first:
            pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
    assert acl.rt.synchronize_stream(stream) == 0


# -- what the checks say ------------------------------------------------------------------------------
def test_a_race_across_ranks_names_both_accesses_and_the_notify_that_would_order_them():
    report = check(racy, 2, schedules=1)
    (f,) = report.findings
    assert f.kind == "race" and report.kinds() == {"race"}
    assert "256 bytes of rank 1's HCCL buffer [+0x0, +0x100)" in f.title
    text = f.text()
    assert "Write task" in text and "on rank 0 thread 0x" in text and "LocalCopy task" in text and "on rank 1 thread" in text
    assert f"{THIS}:" in text                                   # both call sites
    assert "HcommChannelNotifyRecordOnThread" in text and "HcommChannelNotifyWaitOnThread" in text
    assert f.schedule == "fifo" and "--replay fifo" in f.replay and f.replay.startswith("python -m pyhcomm verify")
    assert check(racy, 2, schedules=3, wait_first=True).ok     # the wait first: ordered


def test_a_host_read_of_memory_a_queued_task_still_writes_is_a_race():
    comm, stream, t = host_setup()
    src, dst = malloc(256), malloc(256)
    assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 256) == 0
    out = np.zeros(256, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 256, dst, 256, D2H) == 0       # not synchronized first
    assert acl.rt.synchronize_stream(stream) == 0
    (f,) = analyze(pyhcomm.current_sim())
    assert f.kind == "race" and "of 256 bytes of rank 0's device memory at 0x" in f.title
    sides = sorted(line.split(":", 1)[0].strip() for line in f.lines[:2])
    assert sides == ["read", "write"]
    text = f.text()
    assert "LocalCopy task #" in text and "on rank 0 thread 0x" in text and "aclrtMemcpy #" in text
    assert text.count(f"{THIS}:") >= 4         # both call sites, in the accesses and in the fix
    assert f"synchronize stream 0x{stream:x}" in text and "before the call" in text


def test_a_call_site_names_its_own_file_when_another_file_holds_the_same_code(tmp_path):
    comm, stream, t = host_setup()
    src, dst = malloc(64), malloc(64)
    code = "import pyhcomm\ndef copy(t, dst, src):\n    pyhcomm.HcommLocalCopyOnThread(t, dst, src, 64)\n"
    where = []
    for name in ("a.py", "b.py"):                       # equal code objects, two files
        ns: dict = {}
        exec(compile(code, str(tmp_path / name), "exec"), ns)
        ns["copy"](t, dst, src)
        task = pyhcomm.current_sim().record.entries()[-1]
        where.append(task.where)
    assert where == [f"{tmp_path / 'a.py'}:3", f"{tmp_path / 'b.py'}:3"]
    assert acl.rt.synchronize_stream(stream) == 0


def slot_reuse(comm, ack=True):
    """Rank 0 sends two rounds through one slot of rank 1's HCCL buffer (channel notify 0: DATA);
    rank 1 copies each round out and acknowledges it (notify 1: ACK). Rank 0 waits for the ACK
    of round 1 before writing round 2 only when ``ack``."""
    ch = _channel(comm)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    buf, _ = acl.rt.malloc(512, 0)
    rec, wait = pyhcomm.HcommChannelNotifyRecordOnThread, pyhcomm.HcommChannelNotifyWaitOnThread
    if comm.rank == 0:
        _, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
        for r in range(2):
            if r and ack:
                wait(t, ch, 1, 0)
            pyhcomm.HcommWriteOnThread(t, ch, remote, buf + 256 * r, 256)
            rec(t, ch, 0)
        wait(t, ch, 1, 0)
    else:
        for r in range(2):
            wait(t, ch, 0, 0)
            pyhcomm.HcommLocalCopyOnThread(t, buf + 256 * r, comm.hccl_buffer().addr, 256)
            rec(t, ch, 1)
    assert acl.rt.synchronize_stream(stream) == 0


def test_reusing_a_peers_hccl_buffer_slot_before_its_ack_is_a_race():
    assert check(slot_reuse, 2, schedules=4, data=False).ok
    # fifo runs rank 0 ahead: both DATA records before rank 1's first wait (a lost record: that wait
    # orders nothing after the second record, as in the schedules where it runs between the two)
    report = check(slot_reuse, 2, schedules=1, data=False, ack=False)
    assert {"lost-record", "race"} <= report.kinds()
    f = next(f for f in report.findings if f.kind == "race")
    assert f.title in ("write and read of 256 bytes of rank 1's HCCL buffer [+0x0, +0x100) are not ordered",
                       "read and write of 256 bytes of rank 1's HCCL buffer [+0x0, +0x100) are not ordered")
    copy = next(line for line in f.lines[:2] if "LocalCopy task #" in line)
    write = next(line for line in f.lines[:2] if "Write task #" in line)
    assert copy.startswith("read : ") and "on rank 1 thread" in copy
    assert write.startswith("write: ") and "on rank 0 thread" in write
    fixes = " ".join(f.lines[2:])
    assert "rank 1 records a channel notify of rank 0 after LocalCopy" in fixes and "rank 0 waits for it before Write" in fixes
    assert f.replay == f"pyhcomm.verify.check(slot_reuse, 2, ack=False, data=False, replay={f.schedule!r})"


def test_two_collectives_of_one_communicator_on_unordered_streams_race_on_its_buffer():
    assert check(_two_streams_allgather, 4, schedules=2, data=False, ordered=True).ok
    report = check(_two_streams_allgather, 4, schedules=1, data=False)
    src, first = inspect.getsourcelines(_two_streams_allgather)
    calls = [f":{first + k}" for k, line in enumerate(src) if "HcclAllGather(" in line]
    assert len(calls) == 2
    races = [f for f in report.findings if f.kind == "race" and "HCCL buffer" in f.title]
    assert races
    for f in races:        # one access from each collective call
        assert sorted(next(c for c in calls if c in line) for line in f.lines[:2]) == calls


def test_a_host_read_of_what_a_kernel_queued_elsewhere_is_a_race(product):
    product("Atlas 350")
    comm, stream, _ = host_setup()
    _, (t,) = pyhcomm.HcclThreadAcquire(comm, E.COMM_ENGINE_AICPU_TS, 1, 1)
    src, ccl = malloc(64), pyhcomm.Comm._wrap(pyhcomm.hccl.comm.get_comm(comm, "test")).hccl_buffer().addr

    def kernel():
        pyhcomm.HcommLocalCopyOnThread(t, ccl, src, 64)

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.synchronize_stream(stream) == 0      # the launch stream only
    out = np.zeros(64, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 64, ccl, 64, D2H) == 0
    found = analyze(pyhcomm.current_sim())
    race = next(f for f in found if f.kind == "race")
    # the copy ran before the read (coop) or never (threaded: nothing waited for it); a race either way
    assert race.title.endswith("of 64 bytes of rank 0's HCCL buffer [+0x0, +0x40) are not ordered")
    assert "synchronizing the kernel's launch stream waits for the kernel, not for what it queued" in race.text()
    assert any(f.kind == "unsynchronized" for f in found)


def test_two_records_before_one_wait_is_a_lost_record():
    comm, _stream, _ = host_setup()
    _, (a, b) = pyhcomm.HcclThreadAcquire(comm, E.COMM_ENGINE_CPU_TS, 2, 1)
    for _ in range(2):
        assert pyhcomm.HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert pyhcomm.HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert acl.rt.synchronize_device() == 0
    (f,) = analyze(pyhcomm.current_sim())
    assert f.kind == "lost-record" and f.details["happened"] and f.title.startswith(f"notify 0 of rank 0 thread 0x{b:x}")
    assert "the notify holds one bit, so 2 records counted once" in f.text()


def records_twice(comm):
    """Rank 0 records rank 1's notify twice (the second after its own synchronize: ordered after the
    first record, not after rank 1's wait); rank 1 waits twice."""
    ch = _channel(comm)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
    if comm.rank == 0:
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
        acl.rt.synchronize_stream(stream)
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
    else:
        pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
        pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)
    acl.rt.synchronize_stream(stream)


def test_a_record_not_ordered_after_the_last_wait_can_be_lost_in_another_schedule():
    (f,) = check(records_twice, 2, replay="fifo").findings    # the wait ran between the records here ...
    assert f.kind == "lost-record" and not f.details["happened"]
    assert "nothing orders the next record after that wait: in another schedule it comes first" in f.text()
    found = check(records_twice, 2, replay="pct:3:1:20").findings   # ... and not in this schedule
    assert {f.kind for f in found} == {"lost-record", "hang"}
    assert next(f for f in found if f.kind == "lost-record").details["happened"]


def test_two_waits_for_one_notify_that_nothing_orders_are_a_late_wait():
    report = check(_two_waiters, 2, schedules=1)
    (f,) = report.findings
    assert f.kind == "late-wait" and f.title.startswith("notify 0 of rank 1 channel 0x")
    assert f.title.endswith("two waits are not ordered: either can be satisfied by the other's record")
    a, b = f.lines[:2]
    assert a.startswith("wait: ChannelNotifyWait task #") and b.startswith("wait: ChannelNotifyWait task #")
    assert re.search(r"rank 1 thread (0x[0-9a-f]+)", a).group(1) != re.search(r"rank 1 thread (0x[0-9a-f]+)", b).group(1)
    assert "to fix: order the waits" in f.text()


def test_a_notify_left_set_and_waits_that_can_never_be_satisfied():
    comm, stream, main = host_setup(notify=2)
    _, (s,) = pyhcomm.HcclThreadAcquire(comm, E.COMM_ENGINE_CPU_TS, 1, 1)
    assert pyhcomm.HcommThreadNotifyRecordOnThread(s, main, 1) == 0     # meant notify 0
    assert pyhcomm.HcommThreadNotifyWaitOnThread(main, 0, 0) == 0
    assert acl.rt.synchronize_device() != 0
    found = {f.kind: f for f in analyze(pyhcomm.current_sim())}
    assert set(found) == {"hang", "notify-left-set"}
    hang = found["hang"]
    assert hang.title == "1 wait(s) can never be satisfied"
    assert f"waits for notify 0 of rank 0 thread 0x{main:x}: nobody ever records it" in hang.text()
    assert "deadlock: every host thread is blocked" in hang.details["scheduler_report"]   # kept too
    assert found["notify-left-set"].title == f"notify 1 of rank 0 thread 0x{main:x} is still set when the run ends"


def test_a_wait_for_cycle_is_printed_from_the_record():
    def body(comm):
        ch = _channel(comm)
        stream, _ = acl.rt.create_stream()
        _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, 1)
        pyhcomm.HcommChannelNotifyWaitOnThread(t, ch, 0, 0)          # both wait first
        pyhcomm.HcommChannelNotifyRecordOnThread(t, ch, 0)
        acl.rt.synchronize_stream(stream)

    report = check(body, 2, schedules=1)
    hang = next(f for f in report.findings if f.kind == "hang")
    assert hang.title == "2 wait(s) can never be satisfied"
    assert "never ran: rank 0 thread" in hang.text() and "was stuck at ChannelNotifyWait" in hang.text()
    assert "wait-for cycle: rank 0 thread" in hang.text() and "-> back to rank 0 thread" in hang.text()


def test_a_failing_rank_is_its_one_finding():
    def body(comm):
        send, _ = acl.rt.malloc(256, 0)
        recv, _ = acl.rt.malloc(256 * comm.size, 0)
        stream, _ = acl.rt.create_stream()
        assert pyhcomm.HcclAllGather(send, recv, 64, pyhcomm.HCCL_DATA_TYPE_FP32, comm.handle, stream) == 0
        if comm.rank == 1:
            raise ValueError("wrong result on rank 1")

    report = check(body, 2, schedules=1)
    kinds = {f.kind: f for f in report.findings}
    assert kinds["error"].title == "rank 1 failed: ValueError: wrong result on rank 1"
    assert kinds["error"].lines[0].startswith(f"at {THIS}:")
    assert sorted(kinds) == ["error"]   # rank 0's AllGather never ran because rank 1 failed: no finding of its own


def test_nbi_transfers_need_a_fence():
    assert check(nbi_put(True), 2, product="Atlas 350", schedules=2).ok
    report = check(nbi_put(False), 2, product="Atlas 350", schedules=1)
    (f,) = report.findings
    assert f.kind == "race" and "WriteNbi #" in f.text() and "HcommChannelFence" in f.text()


def test_the_custom_allgather_is_clean_and_a_broken_one_is_not():
    assert check(custom_allgather(), 3, schedules=3).ok
    report = check(custom_allgather("missing_wait"), 3, schedules=1)
    assert "race" in report.kinds()


# -- schedules -------------------------------------------------------------------------------------------
def test_schedule_tokens_name_their_policy_and_replay_the_same_run():
    assert isinstance(parse("fifo"), ReplayPolicy) and parse("random:5").token == "random:5"
    assert parse("pct:3:7:100").token == "pct:3:7:100" and parse("dfs:0.2.1").prefix == [0, 2, 1]
    for bad in ("pct:3", "nope", "random:x", "pct:0:1:5"):
        with pytest.raises(ValueError, match="is not fifo, random:SEED, pct:DEPTH:SEED:STEPS or dfs"):
            parse(bad)

    def run(token):
        sim = pyhcomm.Sim(scheduler="coop", data=False)
        sim.scheduler.set_policy(parse(token))
        pyhcomm.launch(custom_allgather(), 3, sim=sim)
        return [(e.seq, e.kind, s) for e, s in zip(sim.record.entries(), [])] + sim.record.exec_log()

    for token in ("pct:3:11:60", "random:4", "dfs:1.0.1"):
        assert run(token) == run(token)
    assert run("random:4") != run("fifo")


def test_pct_lowers_the_chosen_priority_at_its_change_points():
    class Choice:
        def __init__(self, name):
            self.name = name

    a, b = Choice("a"), Choice("b")
    policy = PCTPolicy(depth=2, seed=1, steps=1)    # one change point, at the first decision
    first = policy.pick([a, b])
    assert policy.pick([a, b]) != first             # the first choice dropped below the other
    assert policy.decisions == 2 and len(policy.trace) == 2


def test_bounded_exhaustive_exploration_runs_every_schedule_within_its_bound():
    explorer = Explorer("dfs", bound=1)
    seen = []
    token = explorer.first()
    while token is not None:
        policy = parse(token)
        sim = pyhcomm.Sim(scheduler="coop", data=False)
        sim.scheduler.set_policy(policy)
        pyhcomm.launch(racy, 2, sim=sim, wait_first=True)
        seen.append(tuple(i for i, _n in policy.trace))
        explorer.after(policy)
        token = explorer.next_token()
    assert explorer.complete and len(seen) == len(set(seen)) > 1
    assert all(sum(1 for c in s if c) <= 1 for s in seen)     # at most one deviation from fifo
    report = check(racy, 2, strategy="dfs", bound=1, schedules=1000, wait_first=True)
    assert report.complete and report.ok and len(report.schedules) == len(seen)


def test_bounded_exhaustive_exploration_finds_a_hang_fifo_does_not_show():
    report = check(records_twice, 2, strategy="dfs", bound=1, schedules=1000)
    assert report.complete
    assert [(f.kind, f.schedule == "fifo") for f in report.findings if f.kind != "lost-record" or
            not f.details["happened"]] == [("lost-record", True), ("hang", False)]    # fifo: it may be lost


def test_bounded_exhaustive_exploration_of_four_ranks_is_complete():
    report = check(custom_allgather(nbytes=64, loops=1), 4, strategy="dfs", bound=1, schedules=10000, data=False)
    assert report.complete and report.ok and len(report.schedules) > 20
    tokens = [t for t, _n, _s in report.schedules]
    assert len(set(tokens)) == len(tokens) and tokens[0] == "fifo"
    assert all(re.fullmatch(r"dfs:\d+=\d+", t) for t in tokens[1:])      # one deviation each


def test_every_printed_replay_command_replays_its_finding(capsys, monkeypatch, tmp_path):
    from pyhcomm.cli import main
    monkeypatch.chdir(ROOT)
    out = tmp_path / "report.json"
    assert main(["verify", "examples/verify/lost_record.py", "--ranks", "2", "--json", str(out)]) == 1
    capsys.readouterr()
    findings = json.loads(out.read_text())["findings"]
    assert any(f["schedule"] != "fifo" for f in findings)          # some only another schedule shows
    for f in findings:
        argv = shlex.split(f["replay"])
        assert argv[:4] == ["python", "-m", "pyhcomm", "verify"] and argv[-2:] == ["--replay", f["schedule"]]
        assert main(argv[3:]) == 1
        text = capsys.readouterr().out
        assert "1 schedule(s)" in text and f"{f['kind']}: {f['title']}" in text


def test_a_replay_of_a_function_called_with_arguments_is_a_check_call():
    def body(comm, twice):
        if twice:
            records_twice(comm)

    report = check(body, 2, True, strategy="dfs", bound=1, schedules=100)
    hang = next(f for f in report.findings if f.kind == "hang")
    assert hang.schedule != "fifo"
    assert hang.replay == f"pyhcomm.verify.check(body, 2, True, replay={hang.schedule!r})"
    again = eval(hang.replay, {"pyhcomm": pyhcomm, "body": body})     # noqa: S307 - the printed call itself
    assert len(again.schedules) == 1 and hang.key in {f.key for f in again.findings}


def test_the_readme_shows_what_the_commands_print(capsys, monkeypatch):
    """README's "Verifying a program": every line shown under a command is a line it prints."""
    from pyhcomm.cli import main
    monkeypatch.chdir(ROOT)
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = readme.split("Three real findings", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    runs = re.split(r"^\$ ", block.strip(), flags=re.M)[1:]
    assert len(runs) == 3
    for run in runs:
        command, *shown = run.strip().splitlines()
        argv = shlex.split(command)
        assert argv[:3] == ["python", "-m", "pyhcomm"]
        assert main(argv[3:]) == 1
        printed = capsys.readouterr().out.splitlines()
        assert [line for line in shown if line.strip() and line not in printed and line.strip() != "..."] == [], "\n".join(printed)


# -- interfaces --------------------------------------------------------------------------------------------
def test_the_command_line_reports_and_exits_1_on_findings(tmp_path, capsys):
    from pyhcomm.cli import main
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(THIS)!r})
        from test_verify import racy as main
    """))
    out = tmp_path / "report.json"
    assert main(["verify", str(script), "--ranks", "2", "--schedules", "2", "--data", "off", "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "1 finding(s)" in text and "race: read and write of 256 bytes" in text
    assert f"replay: python -m pyhcomm verify {script} --function main --ranks 2 --data off --replay fifo" in text
    doc = json.loads(out.read_text())
    assert doc["findings"][0]["kind"] == "race" and doc["schedules"][0]["schedule"] == "fifo"
    assert main(["verify", str(script), "--ranks", "2", "--replay", "random:3"]) == 1
    assert "1 schedule(s)" in capsys.readouterr().out
    assert main(["verify", str(script), "--replay", "bogus"]) == 2
    assert main(["verify", str(script), "--function", "nope"]) == 2
    assert main(["verify", str(script), "--product", "Atlas 9999"]) == 2
    err = capsys.readouterr().err
    assert f"verify: {script} defines no function 'nope'" in err and "'Atlas 9999'" in err


def test_the_command_line_runs_a_whole_program(tmp_path, capsys):
    from pyhcomm.cli import main
    script = tmp_path / "whole.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(THIS)!r})
        import pyhcomm
        from test_verify import racy
        pyhcomm.launch(racy, 2, wait_first=True)
    """))
    assert main(["verify", str(script), "--schedules", "2"]) == 0
    assert "2 schedule(s), no findings" in capsys.readouterr().out


def test_pyhcomm_verify_checks_every_launch(monkeypatch, capsys):
    monkeypatch.setenv("PYHCOMM_VERIFY", "1")
    pyhcomm.launch(racy, 2, wait_first=True)                 # clean: returns
    with pytest.raises(VerificationError, match="race: read and write") as info:
        pyhcomm.launch(racy, 2)
    assert info.value.report.kinds() == {"race"}
    assert "race: read and write" in capsys.readouterr().err
    with pytest.raises(VerificationError) as info:          # a cooperative run says how to run it again
        pyhcomm.launch(racy, 2, scheduler="coop", seed=5)
    (f,) = info.value.report.findings
    assert f.schedule == "random:5" and f.replay.startswith("run it again with PYHCOMM_SCHEDULER=coop PYHCOMM_SEED=5")
    assert f.key in {g.key for g in check(racy, 2, replay="random:5").findings}
    with pytest.raises(VerificationError) as info:
        pyhcomm.launch(racy, 2, scheduler="threaded")
    assert info.value.report.findings[0].schedule == "threaded" and info.value.report.findings[0].replay is None
    monkeypatch.setenv("PYHCOMM_VERIFY", "yes please")
    with pytest.raises(ValueError, match="PYHCOMM_VERIFY='yes please' is not valid: expected 0 or 1"):
        pyhcomm.launch(racy, 2)


def test_the_pytest_plugin_fails_a_test_on_findings(pytester):
    pytester.makepyfile(test_user=textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(THIS)!r})
        import pyhcomm
        from test_verify import racy

        def test_racy(pyhcomm_verify):
            pyhcomm.launch(racy, 2)

        def test_clean(pyhcomm_verify):
            pyhcomm.launch(racy, 2, wait_first=True)

        def test_unchecked():
            pyhcomm.launch(racy, 2)
    """))
    # the fixture checks test_racy; --pyhcomm-verify checks test_unchecked too
    result = pytester.runpytest_inprocess("-p", "pyhcomm.verify.pytest_plugin", "--pyhcomm-verify", "-q",
                                          "-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*test_racy*", "*race: read and write of 256 bytes*"])
    assert "test_clean" not in "".join(line for line in result.stdout.lines if line.startswith("FAILED"))


def test_pyhcomm_verify_checks_a_launch_in_a_sim_made_before_any_other(tmp_path):
    """The first thing a script does is ``launch(..., sim=pyhcomm.Sim())``: no default Sim exists
    yet, and the launch is checked all the same."""
    script = tmp_path / "first.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(THIS)!r})
        import pyhcomm
        from pyhcomm.sim import existing_sim
        from test_verify import racy
        try:
            pyhcomm.launch(racy, 2, sim=pyhcomm.Sim())
        except pyhcomm.verify.VerificationError as exc:
            print("found", sorted(exc.report.kinds()), existing_sim() is None)
        else:
            print("not checked")
    """))
    env = dict(os.environ, PYHCOMM_VERIFY="1", PYHCOMM_LOG_LEVEL="OFF")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split("\n")[0] == "found ['race'] True", out.stdout + out.stderr
