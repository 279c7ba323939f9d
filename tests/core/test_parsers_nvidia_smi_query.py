"""nvidia-smi --query-gpu CSV (one-shot and -lms stream). Expected values read by hand from the
fixtures."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from core.probes.parsers.nvidia_smi_query import QueryGpuStream, iter_query_gpu, parse_query_gpu

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
MIB = 2**20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


H100 = "nvidia_smi_query_gpu_csv_1xH100_under_gpuburn_590.48.01.csv"
L40S = "nvidia_smi_query_gpu_csv_1xL40S_idle_595.80.csv"
P100 = "nvidia_smi_query_gpu_csv_nounits_1xTeslaP100.csv"


def test_h100_under_load_inventory():
    result = parse_query_gpu(fixture(H100))
    assert result.warnings == []
    report = result.value
    assert report is not None
    assert report.attached_gpus == 1  # field 'count': '1'
    assert report.driver_version == "590.48.01"  # field 'driver_version'
    (gpu,) = report.gpus
    assert gpu.name == "NVIDIA H100 80GB HBM3"  # field 'name'
    assert gpu.pci_bus_id == "00000000:00:09.0"  # field 'pci.bus_id'
    assert gpu.memory_total_bytes == 81559 * MIB  # 'memory.total [MiB]': '81559 MiB'
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (5, 5)  # 'pcie.link.gen.current/max': '5'
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (16, 16)  # 'pcie.link.width.*': '16'
    assert gpu.persistence_mode is True  # 'persistence_mode': 'Enabled'
    assert gpu.power_limit_w == 700.0  # 'enforced.power.limit [W]': '700.00 W'
    assert gpu.max_sm_clock_mhz == 1980.0  # 'clocks.max.sm [MHz]': '1980 MHz'
    assert gpu.fabric_state == "Completed"  # 'fabric.state'
    assert gpu.compute_cap == "9.0"


def test_h100_under_load_metric_and_health():
    report = parse_query_gpu(fixture(H100)).value
    assert report is not None
    (metric,) = report.metrics
    assert metric.t == 0.0
    # 'timestamp': '2026/07/14 08:12:53.353'
    assert metric.wall_time == datetime(2026, 7, 14, 8, 12, 53, 353000)
    assert metric.util_pct == 100.0  # 'utilization.gpu [%]': '100 %'
    assert metric.mem_used_bytes == 19818 * MIB  # 'memory.used [MiB]': '19818 MiB'
    assert metric.power_w == 631.95  # 'power.draw [W]': '631.95 W'
    assert metric.temp_c == 59.0  # 'temperature.gpu': '59'
    assert metric.mem_temp_c == 54.0  # 'temperature.memory': '54'
    assert metric.sm_clock_mhz == 1980.0  # 'clocks.current.sm [MHz]': '1980 MHz'
    assert metric.clocks_event_mask == 0  # 'clocks_event_reasons.active': '0x0000000000000000'
    assert metric.clocks_event_reasons == []
    (health,) = report.health
    assert health.ecc_aggregate_uncorrectable == 0  # 'ecc.errors.uncorrected.aggregate.total': '0'
    assert health.retired_pages_sbe is None  # 'retired_pages.single_bit_ecc.count': '[N/A]'
    assert health.remapped_rows_pending is False  # 'remapped_rows.pending': 'No'
    assert health.remap_histogram["max"] == 2560  # 'remapped_rows.histogram.max': '2560'
    assert health.recovery_action == "None"  # 'gpu_recovery_action': 'None'


def test_l40s_missing_values_become_none():
    report = parse_query_gpu(fixture(L40S)).value
    assert report is not None
    gpu, metric = report.gpus[0], report.metrics[0]
    assert gpu.name == "NVIDIA L40S"
    assert gpu.mig_mode is None  # 'mig.mode.current': '[N/A]'
    assert gpu.persistence_mode is False  # 'persistence_mode': 'Disabled'
    assert gpu.pcie_gen_max == 4  # 'pcie.link.gen.max': '4'
    assert metric.mem_temp_c is None  # 'temperature.memory': 'N/A'
    assert metric.power_w == 144.97  # 'power.draw [W]': '144.97 W'
    assert metric.util_pct == 100.0  # labelled idle upstream but 'utilization.gpu [%]': '100 %'
    assert report.health[0].remap_histogram["max"] == 192  # 'remapped_rows.histogram.max': '192'


def test_p100_nounits_uses_header_units():
    result = parse_query_gpu(fixture(P100))
    report = result.value
    assert report is not None and result.warnings == []
    gpu, metric = report.gpus[0], report.metrics[0]
    assert gpu.name == "Tesla P100-PCIE-16GB"
    assert gpu.uuid == "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6"
    assert metric.mem_used_bytes == 0  # 'memory.used [MiB]' = '0'
    assert metric.temp_c == 37.0
    assert metric.power_w == 28.16  # 'power.draw [W]' = '28.16' (nounits)
    assert metric.sm_clock_mhz == 405.0
    assert metric.mem_clock_mhz == 715.0


def test_throttle_bitmask_decodes_reasons():
    # pre-535 field name; 0x48 = 0x40 HW thermal slowdown + 0x8 HW slowdown
    text = "index, clocks_throttle_reasons.active\n0, 0x0000000000000048\n"
    report = parse_query_gpu(text).value
    assert report is not None
    assert report.metrics[0].clocks_event_mask == 0x48
    assert set(report.metrics[0].clocks_event_reasons) == {"hw_slowdown", "hw_thermal_slowdown"}


def test_stream_in_small_chunks_with_repeated_header():
    header, row = fixture(P100).rstrip("\n").split("\n")
    text = "\n".join([header, row, row, header, row]) + "\n"
    stream = QueryGpuStream(interval_s=0.5)
    samples = []
    for start in range(0, len(text), 7):
        samples.extend(stream.feed(text[start : start + 7]))
    samples.extend(stream.flush())
    assert [s.t for s in samples] == [0.0, 0.5, 1.0]  # same GPU repeats -> one tick each
    assert all(s.temp_c == 37.0 for s in samples)
    assert stream.warnings == []


def test_stream_two_gpus_timestamps():
    text = (
        "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
        "2025/01/02 03:04:05.000, 0, 10 %, 100 MiB\n"
        "2025/01/02 03:04:05.000, 1, 20 %, 200 MiB\n"
        "2025/01/02 03:04:05.500, 0, 30 %, 300 MiB\n"
        "2025/01/02 03:04:05.500, 1, 40 %, 400 MiB"  # no final newline: stream ended
    )
    samples = list(iter_query_gpu(text.split("\n")))
    assert [(s.t, s.gpu, s.util_pct) for s in samples] == [
        (0.0, 0, 10.0),
        (0.0, 1, 20.0),
        (0.5, 0, 30.0),
        (0.5, 1, 40.0),
    ]
    assert samples[3].mem_used_bytes == 400 * MIB


def test_noheader_needs_fields():
    row = fixture(P100).split("\n")[1]
    without = parse_query_gpu(row)
    assert without.value is None
    assert any("header" in w for w in without.warnings)
    fields = [
        "name",
        "uuid",
        "fan.speed [%]",
        "pstate",
        "memory.reserved [MiB]",
        "memory.used [MiB]",
        "memory.free [MiB]",
        "utilization.gpu [%]",
        "utilization.memory [%]",
        "temperature.gpu",
        "power.draw [W]",
        "clocks.current.graphics [MHz]",
        "clocks.current.sm [MHz]",
        "clocks.current.memory [MHz]",
        "clocks.current.video [MHz]",
    ]
    report = parse_query_gpu(row, fields=fields).value
    assert report is not None and report.metrics[0].power_w == 28.16


@pytest.mark.parametrize(
    "text",
    [
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "No devices were found\n",
        "",
    ],
)
def test_failure_text_gives_none_and_warning(text):
    result = parse_query_gpu(text)
    assert result.value is None
    assert result.warnings


def test_cut_row_is_skipped_with_warning():
    header, row = fixture(H100).split("\n")[:2]
    result = parse_query_gpu(header + "\n" + row[: len(row) // 2])
    assert result.value is None
    assert any("expected 212 values" in w for w in result.warnings)  # 212 fields in the header
