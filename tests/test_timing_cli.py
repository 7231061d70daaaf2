"""``python -m pyhcomm trace script.py -o trace.json``: run a script, write its modeled trace."""
import json
import textwrap

import pytest

from pyhcomm.cli import main

SCRIPT = textwrap.dedent("""
    import sys
    import pyhcomm
    from pyhcomm import acl
    from pyhcomm.capi import hccl_ops as ops

    def body(comm):
        send, _ = acl.rt.malloc(4096, 0)
        recv, _ = acl.rt.malloc(4096, 0)
        stream, _ = acl.rt.create_stream()
        ops.HcclAllReduce(send, recv, 1024, 4, 0, comm.handle, stream)
        acl.rt.synchronize_stream(stream)

    pyhcomm.launch(body, int(sys.argv[1]), data=False)
""")


def test_trace_runs_the_script_with_its_arguments_and_writes_the_trace(tmp_path, capsys):
    script = tmp_path / "allreduce.py"
    script.write_text(SCRIPT)
    out = tmp_path / "t.json"
    assert main(["trace", str(script), "4", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"trace: {out}" in printed and "HcclAllReduce on ranks 0..3:" in printed and "us modeled" in printed
    doc = json.loads(out.read_text())
    procs = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert procs == {f"rank {r} (device {r})" for r in range(4)}


def test_trace_reports_a_missing_script_and_a_script_that_records_nothing(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["trace", str(tmp_path / "missing.py")])
    assert exc.value.code == 2 and "no such script" in capsys.readouterr().err
    empty = tmp_path / "empty.py"
    empty.write_text("print('hello')\n")
    assert main(["trace", str(empty), "-o", str(tmp_path / "t.json")]) == 1
    captured = capsys.readouterr()
    assert "hello" in captured.out and "recorded nothing" in captured.err
    assert not (tmp_path / "t.json").exists()
