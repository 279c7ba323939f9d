"""nccl-tests / rccl-tests logs and the torch all_reduce_bench table. Values read by hand from the
fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.probes.parsers.nccl_tests import parse_nccl_tests
from core.probes.scorecard.common import sweep_cut

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# (file, rows, nranks, avg busbw line, peak busbw, size of the peak)
CASES = [
    # line 17: ' 10737418240 ... 232.20 0 80948 132.65 232.13 0'; line 19 'Avg bus bandwidth :
    # 232.167'
    ("nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt", 1, 8, 232.167, 232.20, 10737418240),
    # line 25: '... 104989 102.27 191.76 ...'; line 27: 191.752; 16 '# Rank' lines
    (
        "nccl_allreduce_2x8xA100_SXM4_40GB_OCI_RoCE_16x100G_10GiB.txt",
        1,
        16,
        191.752,
        191.76,
        10737418240,
    ),
    # line 57: ' 17179869184 ... 66214 259.46 486.49 ...'; line 59: 476.572
    ("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt", 5, 16, 476.572, 486.49, 17179869184),
    # line 34: '0:  17179869184 ... 66109 259.87 487.26 0' (in-place); no footer in the excerpt
    ("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt", 32, 16, None, 487.26, 17179869184),
    # line 31: '0:   2147483648 ... 78.33 ... 78.33'
    ("nccl_allreduce_2x8xA100_p4de_EFA_srun_rank_prefixed.txt", 29, 16, None, 78.33, 2147483648),
    # line 54: '  8589934592 ... 47535 180.71 338.82 ...'; line 56: 'Avg bus bandwidth : 70.742'
    (
        "nccl_allreduce_2x8xH100_GCP_A3mega_TCPXO_mangled_header.txt",
        31,
        16,
        70.742,
        338.82,
        8589934592,
    ),
    # line 57: '  3221225472 ... 212263 15.18 15.18 ...'; line 71: 15.0418; 2 '# Rank' lines
    (
        "nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log",
        13,
        2,
        15.0418,
        15.18,
        3221225472,
    ),
    # line 47: '8589934592 ... 40903 210.01 367.51 0' (in-place); line 50: 'Avg bus bandwidth :
    # 111.827'
    (
        "rccl_allreduce_1x8xMI350X_single_node_whitespace_collapsed.txt",
        31,
        8,
        111.827,
        367.51,
        8589934592,
    ),
    # line 12: ' 17179869184 ... 121800 141.05 141.05 0'; line 14: '140.935 FAILED'
    ("nccl_allreduce_SYNTHETIC_failure_tails.txt", 1, 2, 140.935, 141.05, 17179869184),
]


@pytest.mark.parametrize(("name", "rows", "nranks", "avg", "peak", "peak_size"), CASES)
def test_headline_numbers(name, rows, nranks, avg, peak, peak_size):
    result = parse_nccl_tests(fixture(name)).value
    assert result is not None
    assert len(result.rows) == rows
    assert result.nranks == nranks
    assert result.avg_busbw == avg
    assert result.peak_busbw == peak
    assert result.peak_busbw_size_bytes == peak_size


def test_single_node_a100_details():
    result = parse_nccl_tests(fixture("nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt"))
    assert result.warnings == []
    run = result.value
    assert run is not None
    assert run.tool == "nccl-tests" and run.op == "all_reduce"  # line 1
    assert run.completed and run.out_of_bounds == 0 and run.out_of_bounds_ok is True  # line 18
    row = run.rows[0]
    # line 17
    assert (row.count, row.dtype, row.redop, row.root) == (2684354560, "float", "sum", -1)
    assert row.out_of_place is not None and row.in_place is not None
    assert (row.out_of_place.time_us, row.out_of_place.algbw_gbps) == (80922, 132.69)
    assert (row.in_place.busbw_gbps, row.in_place.wrong) == (232.13, 0)
    assert run.devices[7].name == "NVIDIA A100-SXM4-40GB"  # line 12
    assert run.devices[7].pci == "0000:da:00"
    assert run.devices[0].host == "inst-lscuv-ao-ub24"


def test_mangled_header_keeps_rank_zero():
    run = parse_nccl_tests(
        fixture("nccl_allreduce_2x8xH100_GCP_A3mega_TCPXO_mangled_header.txt")
    ).value
    assert run is not None
    # line 4 lost its '#'
    assert run.devices[0].rank == 0 and run.devices[0].host == "ztan-mig-235z"
    assert run.devices[15].host == "ztan-mig-gq73"  # line 19
    assert run.rows[0].size_bytes == 8  # line 24


def test_slurm_wrapper_noise_is_ignored():
    result = parse_nccl_tests(fixture("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt"))
    assert result.warnings == []
    run = result.value
    assert run is not None
    assert run.nccl_version == "2.27.5+cuda12.8"  # line 48
    assert [r.size_bytes for r in run.rows] == [
        1073741824,
        2147483648,
        4294967296,
        8589934592,
        17179869184,
    ]  # lines 53-57
    # line 53
    assert run.rows[0].out_of_place is not None and run.rows[0].out_of_place.busbw_gbps == 457.90


def test_rank_prefixed_table_only_infers_ranks():
    result = parse_nccl_tests(fixture("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt"))
    run = result.value
    assert run is not None
    assert run.nranks_inferred is True  # no '# Rank' lines; 2 nodes x 8 GPUs per the source
    assert run.completed is False
    assert any("footer" in w for w in result.warnings)
    assert run.rows[0].size_bytes == 8 and run.rows[0].in_place is not None  # line 3
    assert run.rows[0].in_place.time_us == 72.43  # line 3


def test_low_busbw_log_reports_gdr_off_and_ring():
    run = parse_nccl_tests(
        fixture("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    ).value
    assert run is not None
    assert run.gdr is False  # line 55: 'Connected all rings, use ring PXN 0 GDR 0'
    assert run.algo == "RING"  # line 30: 'NCCL_ALGO set by environment to RING'
    assert run.net is not None and run.net.startswith("NET/IB : Using [0]mlx5_5:1/RoCE")  # line 14
    assert run.nccl_version == "2.26.2+cuda."  # line 9, as printed


def test_rccl_collapsed_whitespace_and_dips():
    run = parse_nccl_tests(
        fixture("rccl_allreduce_1x8xMI350X_single_node_whitespace_collapsed.txt")
    ).value
    assert run is not None
    assert run.tool == "rccl-tests"  # line 3
    dip = next(r for r in run.rows if r.size_bytes == 67108864)  # line 40
    assert dip.out_of_place is not None and dip.in_place is not None
    assert (dip.out_of_place.busbw_gbps, dip.in_place.busbw_gbps) == (111.92, 289.92)
    assert run.devices[3].name == "AMD Instinct MI350X"  # line 8


def test_failure_tails():
    run = parse_nccl_tests(fixture("nccl_allreduce_SYNTHETIC_failure_tails.txt")).value
    assert run is not None
    assert run.tests_version == "2.17.6"  # line 1
    assert run.wrong_total == 3  # line 12, out-of-place #wrong
    assert run.out_of_bounds == 3 and run.out_of_bounds_ok is False  # line 13
    assert run.avg_busbw_ok is False  # line 14
    assert len(run.failures) == 4  # lines 17-20
    assert run.failures[0].startswith("node-b: Test NCCL failure common.cu:1126")
    assert "invalid device ordinal" in run.failures[3]


def test_torch_markdown_table():
    result = parse_nccl_tests(fixture("torch_all_reduce_bench_py_table_4nodes.md"))
    run = result.value
    assert run is not None
    assert run.tool == "torch_all_reduce_bench"
    assert len(run.rows) == 20  # lines 3-22
    assert run.rows[0].size_bytes == 32 * 1024  # line 3 '32KiB'
    assert run.rows[-1].size_bytes == 16 * 2**30  # line 22 '16GiB'
    assert run.peak_busbw == 98.34  # line 13 '32MiB | 98.34GBps'
    assert run.peak_busbw_size_bytes == 32 * 2**20
    last = run.rows[-1].in_place
    assert last is not None and (last.busbw_gbps, last.algbw_gbps) == (91.69, 47.32)  # line 22
    assert run.nranks == 32 and run.nranks_inferred  # 4 nodes x 8 GPUs per the source book


def test_json_output():
    # -J layout as documented for nccl-tests 2.19 (keys only; numbers typed for this test)
    data = {
        "config": {"nthreads": 1, "ngpus": 8},
        "devices": [
            {"rank": r, "group": 0, "pid": 1, "hostname": "h", "device": r} for r in range(8)
        ],
        "results": [
            {
                "size": 1024,
                "count": 256,
                "type": "float",
                "redop": "sum",
                "root": -1,
                "out_of_place": {"time": 20.5, "alg_bw": 0.05, "bus_bw": 0.09, "nwrong": 0},
                "in_place": {"time": 19.5, "alg_bw": 0.05, "bus_bw": 0.10, "nwrong": 0},
            }
        ],
        "out_of_bounds": {"count": 0, "okay": True},
        "average_bus_bandwidth": {"bandwidth": 0.095, "okay": True},
    }
    run = parse_nccl_tests("some banner\n" + json.dumps(data)).value
    assert run is not None
    assert run.nranks == 8 and run.avg_busbw == 0.095 and run.peak_busbw == 0.10
    assert run.rows[0].out_of_place is not None and run.rows[0].out_of_place.time_us == 20.5


def test_mpirun_tag_output_prefix_and_ansi():
    lines = fixture("nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt").split("\n")
    tagged = "\r\n".join(f"[1,0]<stdout>:\x1b[32m{line}\x1b[0m" for line in lines)
    run = parse_nccl_tests(tagged).value
    assert run is not None
    assert run.peak_busbw == 232.20 and run.avg_busbw == 232.167 and run.nranks == 8


def test_cut_before_the_table():
    lines = fixture("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt").split("\n")
    result = parse_nccl_tests("\n".join(lines[:50]))  # stops at the header rows
    assert result.value is None
    assert result.warnings


def test_not_nccl_output():
    assert parse_nccl_tests("bash: all_reduce_perf: command not found\n").value is None


def test_the_header_gives_the_sweep_and_a_cut_log_lacks_its_last_sizes() -> None:
    """'minBytes 1073741824 maxBytes 17179869184 step: 2(factor)': 1, 2, 4, 8 and 16 GiB, the five
    rows the whole log has (read by hand); the same log cut after its third row has not reached 8
    and 16 GiB."""
    text = fixture("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt")
    whole = parse_nccl_tests(text).value
    assert whole is not None
    assert whole.planned_sizes == [1 << 30, 2 << 30, 4 << 30, 8 << 30, 16 << 30]
    assert whole.unreached_sizes == [] and sweep_cut(whole) is None
    lines = text.split("\n")
    fourth = next(i for i, line in enumerate(lines) if line.strip().startswith("8589934592 "))
    cut = parse_nccl_tests("\n".join(lines[:fourth])).value
    assert cut is not None and [r.size_bytes for r in cut.rows] == [1 << 30, 2 << 30, 4 << 30]
    assert cut.unreached_sizes == [8 << 30, 16 << 30]
    assert sweep_cut(cut) == "3 of 5 message sizes, up to 4 GiB (8 GiB and 16 GiB not reached)"


def test_a_sweep_in_steps_of_bytes_and_one_without_a_header_plan() -> None:
    """'minBytes 1073741824 maxBytes 27950841856 step: 2147483648(bytes)': 1 GiB then 2 GiB more
    each time, up to 25 GiB: 13 sizes, the 13 rows of the log; the log without that header has no
    plan, so nothing is 'cut'."""
    text = fixture("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    log = parse_nccl_tests(text).value
    assert (
        log is not None
        and len(log.planned_sizes) == 13 == len(log.rows)
        and log.unreached_sizes == []
    )
    assert log.planned_sizes[-1] == (1 << 30) + 12 * (2 << 30)
    rows = "\n".join(
        line for line in text.split("\n") if "nThread" not in line and "maxBytes" not in line
    )
    headless = parse_nccl_tests(rows).value
    assert (
        headless is not None
        and headless.rows
        and headless.planned_sizes == []
        and sweep_cut(headless) is None
    )
