"""benchmarks/hccl_test.py: hccl_test's table, modeled, for every collective hccl_test measures."""
import pytest

import benchmark_script


@pytest.fixture(scope="module")
def bench():
    return benchmark_script.load("hccl_test")


def _rows(text):
    """{op: [(data_size, aveg_time, alg_bandwidth, check_result)]} from the printed tables."""
    out, op = {}, None
    for line in text.splitlines():
        if line.startswith("# ") and "_test (modeled)" in line:
            op = line.split()[1][:-len("_test")]
            out[op] = []
        elif line and line[0].isdigit():
            size, us, bw, check = (c.strip() for c in line.split("|"))
            out[op].append((int(size), float(us), float(bw), check))
    return out


def test_every_hccl_test_collective_with_its_columns_and_checked_bytes(bench, capsys):
    assert bench.main(["--product", "Atlas 800T A2", "--ranks", "4", "-b", "8K", "-e", "16K", "--check"]) == 0
    text = capsys.readouterr().out
    assert text.count("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:") == 11
    rows = _rows(text)
    assert set(rows) == {"all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "reduce_scatter_v", "reduce",
                         "broadcast", "scatter", "alltoall", "alltoallv", "alltoallvc"}
    for op, table in rows.items():
        assert [r[0] for r in table] == [8192, 16384], op
        for size, us, bw, check in table:
            assert check == "success", (op, size)
            assert us > 0 and bw == pytest.approx(size / us / 1e3, rel=1e-3), (op, size)


def test_dataless_rows_say_null_and_larger_sizes_take_longer(bench, capsys):
    assert bench.main(["--product", "Atlas A3", "--ranks", "2", "--op", "all_reduce", "-b", "1M", "-e", "4M",
                       "-f", "4"]) == 0
    table = _rows(capsys.readouterr().out)["all_reduce"]
    assert [r[0] for r in table] == [1 << 20, 4 << 20] and {r[3] for r in table} == {"NULL"}
    assert table[1][1] > table[0][1]
