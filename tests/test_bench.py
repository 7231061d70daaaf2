"""``python -m pyhcomm bench``: hccl_test's flags, a row per size with time, algbw and busbw per
algorithm, the selection's pick, checked bytes, custom collectives, the plot."""
import io
import textwrap

import pytest

from pyhcomm.cli import main as cli
from pyhcomm.timing import bench

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = bench.main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


def tables(text):
    """[(header cells, [row cells])] of every printed table."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if line.startswith("data_size"):
            out.append((cells, []))
        elif line[:1].isdigit():
            out[-1][1].append(cells)
    return out


def test_the_compare_sweep_of_the_issue_prints_busbw_for_both_algorithms_at_every_size():
    status, out, err = run(["-o", "allreduce", "-p", "8", "-b", "1K", "-e", "1G", "-f", "4", "--compare",
                            "ring,fullmesh"])
    assert status == 0, err
    [(head, rows)] = tables(out)
    assert head == ["data_size(Bytes)", "ring:time(us)", "ring:algbw(GB/s)", "ring:busbw(GB/s)", "fullmesh:time(us)",
                    "fullmesh:algbw(GB/s)", "fullmesh:busbw(GB/s)", "selected", "check_result"]
    assert [int(r[0]) for r in rows] == [KIB * 4 ** k for k in range(11)]
    for r in rows:
        size = int(r[0])
        for t, alg, bus in ((r[1], r[2], r[3]), (r[4], r[5], r[6])):
            assert float(alg) == pytest.approx(size / float(t) / 1e3, rel=2e-3)
            assert float(bus) == pytest.approx(float(alg) * 2 * 7 / 8, rel=2e-3)
        assert r[8] == "NULL"
    big = rows[-1]
    assert float(big[4]) < float(big[1])        # one server's full mesh beats the ring on 1 GiB
    assert "bench: 22 points in" in err


def test_a_hierarchy_named_in_hccl_algo_syntax_runs_on_two_servers_and_checks():
    status, out, err = run(["-o", "allreduce", "-p", "4", "--servers", "2", "-b", "64K", "-e", "64K", "-c", "1",
                            "--compare", "ring,level0:fullmesh;level1:NHR"])
    assert status == 0, err
    [(head, [row])] = tables(out)
    assert head[4] == "level0:fullmesh;level1:NHR:time(us)" and row[-1] == "success"


def test_checked_bytes_succeed_for_the_library_and_fail_for_a_collective_that_moves_nothing(tmp_path):
    status, out, _ = run(["-o", "allgather", "-p", "4", "-b", "16K", "-e", "32K", "-c", "1"])
    [(head, rows)] = tables(out)
    assert status == 0 and head[-2:] == ["algorithm", "check_result"]
    assert [r[-1] for r in rows] == ["success", "success"] and {r[-2] for r in rows} == {"mesh"}
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def nothing(comm, send, recv, nbytes, stream):\n    pass\n")
    status, out, _ = run(["-o", "allgather", "-p", "4", "-b", "16K", "-e", "16K", "-c", "1", "--custom",
                          f"{lazy}:nothing"])
    assert status == 0 and tables(out)[0][1][0][-1] == "failed"


def test_a_custom_collective_is_timed_as_a_region_with_its_busbw(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text(textwrap.dedent("""
        from pyhcomm.collectives import allgather_ring, run

        def my_allgather(comm, send, recv, nbytes, stream):
            run(comm.handle, stream, 0, allgather_ring, send, recv, nbytes // comm.size)
    """))
    status, out, err = run(["-o", "allgather", "-p", "4", "-b", "64K", "-e", "256K", "-f", "4", "-c", "1",
                            "--custom", f"{mine}:my_allgather"])
    assert status == 0, err
    [(_head, rows)] = tables(out)
    for r in rows:
        assert r[4] == "my_allgather (custom)" and r[5] == "success"
        assert float(r[3]) == pytest.approx(float(r[2]) * 3 / 4, rel=2e-3)


def test_flags_servers_products_and_hccl_algo_strings():
    setup = bench.Setup("Atlas 800T A2", 4, 2, bench.find_collective("allgather"), bench.DATA_TYPES["fp32"],
                        bench.REDUCE_OPS["sum"])
    assert setup.nranks == 8 and setup.devices() == [0, 1, 2, 3, 8, 9, 10, 11]
    assert bench.parse_algo("level0:NA;level1:ring") == "ring" and bench.parse_algo("fullmesh") == "fullmesh"
    assert bench.parse_algo("level0:fullmesh;level1:H-D_R") == "level0:mesh;level1:hdr"
    assert [bench.parse_size(x) for x in ("8K", "1M", "1G", "512")] == [8192, MIB, GIB, 512]
    status, out, _ = run(["-o", "broadcast", "-p", "2", "-b", "8K", "-e", "8K", "--product", "Atlas 800T A2,Atlas A3"])
    heads = [line for line in out.splitlines() if line.startswith("# broadcast")]
    assert status == 0 and len(heads) == 2 and "Atlas A3" in heads[1]
    for _head, [row] in tables(out):
        assert row[2] == row[3]            # Broadcast: busbw factor 1


@pytest.mark.parametrize("argv,message", [
    (["-o", "foo"], "unknown collective 'foo'"),
    (["--algo", "NHR2"], "no algorithm 'NHR2' in the collective library"),
    (["-o", "alltoall", "--algo", "ring"], "algorithm 'ring' does not run alltoall"),
    (["--algo", "level0:NA;level1:ring;level2:NHR"], "names 2 algorithms"),
    (["--compare", "ring"], "--compare takes two or more"),
    (["-p", "9"], "more NPUs than a server of Atlas 800T A2 has (8)"),
    (["-d", "fp7"], "-d 'fp7' is not one of"),
    (["-b", "1K", "-e", "2K", "-o", "allgather", "-p", "3"], "no size from 1024 to 2048 bytes"),
])
def test_bad_flags_are_refused_with_a_message(argv, message):
    status, _out, err = run(argv)
    assert status == 2 and message in err


def test_python_m_pyhcomm_bench_plots_busbw(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "busbw.png"
    assert cli(["bench", "-o", "allgather", "-p", "4", "-b", "64K", "-e", "1M", "-f", "4", "--compare", "ring,mesh",
                "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"busbw plot written to {png}" in capsys.readouterr().err
