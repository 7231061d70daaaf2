"""benchmarks/hccl_test.py: hccl_test's table, modeled, for every collective hccl_test measures
(``python -m pyhcomm bench`` under the script's flags)."""
import pytest

import benchmark_script


@pytest.fixture(scope="module")
def hccl_test():
    return benchmark_script.load("hccl_test")


def rows(text):
    """{collective: [(data_size, aveg_time, alg_bandwidth, bus_bandwidth, algorithm, check_result)]}."""
    out, op = {}, None
    for line in text.splitlines():
        if line.startswith("# ") and "(modeled)" in line:
            op = line.split()[1]
            out[op] = []
        elif line and line[0].isdigit():
            size, us, alg, bus, algorithm, check = (c.strip() for c in line.split("|"))
            out[op].append((int(size), float(us), float(alg), float(bus), algorithm, check))
    return out


def test_every_hccl_test_collective_with_its_columns_and_checked_bytes(hccl_test, capsys):
    assert hccl_test.main(["--product", "Atlas 800T A2", "--ranks", "4", "-b", "8K", "-e", "16K", "--check"]) == 0
    text = capsys.readouterr().out
    header = ["data_size(Bytes)", "aveg_time(us)", "alg_bandwidth(GB/s)", "bus_bandwidth(GB/s)", "algorithm",
              "check_result"]
    assert sum([c.strip() for c in line.split("|")] == header for line in text.splitlines()) == 11
    got = rows(text)
    assert set(got) == {"allreduce", "allgather", "allgather_v", "reduce_scatter", "reduce_scatter_v", "reduce",
                        "broadcast", "scatter", "alltoall", "alltoallv", "alltoallvc"}
    for op, table in got.items():
        assert [r[0] for r in table] == [8192, 16384], op
        for size, us, alg, bus, algorithm, check in table:
            assert check == "success", (op, size)
            assert us > 0 and alg == pytest.approx(size / us / 1e3, rel=1e-3), (op, size)


def test_dataless_rows_say_null_and_larger_sizes_take_longer(hccl_test, capsys):
    assert hccl_test.main(["--product", "Atlas A3", "--ranks", "2", "--op", "all_reduce", "-b", "1M", "-e", "4M",
                           "-f", "4"]) == 0
    table = rows(capsys.readouterr().out)["allreduce"]
    assert [r[0] for r in table] == [1 << 20, 4 << 20] and {r[5] for r in table} == {"NULL"}
    assert table[1][1] > table[0][1]
