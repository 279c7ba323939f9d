"""nvidia-smi dmon and the default nvidia-smi table. Expected values read by hand from the
fixtures."""

from __future__ import annotations

from pathlib import Path

from core.probes.parsers.nvidia_smi_dmon import parse_dmon
from core.probes.parsers.nvidia_smi_table import parse_nvidia_smi_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
MIB = 2**20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_dmon_h100_under_gpu_burn():
    result = parse_dmon(fixture("nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt"))
    assert result.warnings == []
    samples = result.value
    assert samples is not None
    assert [s.power_w for s in samples] == [631, 634, 633, 634, 636]  # lines 3-7, column 'pwr'
    assert [s.temp_c for s in samples] == [63, 63, 64, 64, 65]  # column 'gtemp'
    assert [s.mem_temp_c for s in samples] == [57, 58, 58, 59, 59]  # column 'mtemp'
    assert {s.util_pct for s in samples} == {100}  # column 'sm'
    assert {s.sm_clock_mhz for s in samples} == {1980}  # column 'pclk'
    assert {s.mem_clock_mhz for s in samples} == {2619}  # column 'mclk'
    assert [s.t for s in samples] == [0.0, 1.0, 2.0, 3.0, 4.0]  # default 1 s interval
    assert {s.gpu for s in samples} == {0}


def test_dmon_l40s_dash_means_unsupported():
    samples = parse_dmon(
        fixture("nvidia_smi_dmon_1xL40S_under_load_595.80.txt"), interval_s=2.0
    ).value
    assert samples is not None and len(samples) == 5
    assert all(s.mem_temp_c is None for s in samples)  # 'mtemp' is '-' on GDDR6
    assert samples[0].power_w == 109  # line 3
    assert samples[0].util_pct == 10  # line 3, 'sm'
    assert samples[0].mem_clock_mhz == 9001
    assert samples[4].t == 8.0  # fifth tick x 2 s


def test_dmon_multi_gpu_with_time_columns_and_repeated_header():
    # dmon -o DT layout with two GPUs, typed from the dmon format
    text = (
        "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem\n"
        "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %\n"
        " 20250101   10:00:00      0    300     50     40     90     20\n"
        " 20250101   10:00:00      1    310     51     41     91     21\n"
        "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem\n"
        " 20250101   10:00:02      0    320     52     42     92     22\n"
        " 20250101   10:00:02      1    garbled\n"
    )
    result = parse_dmon(text)
    samples = result.value
    assert samples is not None
    assert [(s.t, s.gpu, s.power_w) for s in samples] == [
        (0.0, 0, 300),
        (0.0, 1, 310),
        (2.0, 0, 320),
    ]
    assert any("garbled" in w for w in result.warnings)


def test_default_table_8x_h100():
    result = parse_nvidia_smi_table(fixture("nvidia_smi_default_table_8xH100_550.90.07.txt"))
    assert result.warnings == []
    report = result.value
    assert report is not None
    assert (report.driver_version, report.cuda_version) == ("550.90.07", "12.4")  # line 3
    assert len(report.gpus) == 8
    assert {g.name for g in report.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert report.gpus[0].pci_bus_id == "00000000:19:00.0"  # line 9
    assert report.gpus[7].pci_bus_id == "00000000:DB:00.0"  # line 37
    assert report.gpus[0].persistence_mode is True  # line 9 'On'
    assert report.gpus[0].memory_total_bytes == 81559 * MIB  # line 10 '1MiB /  81559MiB'
    m0 = report.metrics[0]
    assert (m0.temp_c, m0.power_w, m0.power_limit_w) == (27, 72, 700)  # line 10 '27C P0 72W / 700W'
    assert m0.mem_used_bytes == 1 * MIB
    assert m0.util_pct == 0
    assert report.metrics[5].temp_c == 22  # line 30
    assert report.health[0].ecc_volatile_uncorrectable == 0  # line 9, last column


def test_default_table_cut_after_first_line_of_a_gpu():
    lines = fixture("nvidia_smi_default_table_8xH100_550.90.07.txt").split("\n")
    result = parse_nvidia_smi_table("\n".join(lines[:13]))  # stops after GPU 1's first line
    report = result.value
    assert report is not None
    assert len(report.gpus) == 2
    assert report.gpus[1].memory_total_bytes is None
    assert any("[1]" in w for w in result.warnings)


def test_default_table_failure_text():
    result = parse_nvidia_smi_table("No devices were found\n")
    assert result.value is None
    assert any("no GPU" in w for w in result.warnings)
