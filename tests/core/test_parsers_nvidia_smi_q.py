"""nvidia-smi -q and -q -d PAGE_RETIREMENT. Expected values read by hand; comments give the fixture
line."""

from __future__ import annotations

from pathlib import Path

from core.probes.parsers.nvidia_smi_q import parse_nvidia_smi_q

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
MIB = 2**20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_8x_h100_inventory():
    result = parse_nvidia_smi_q(fixture("nvidia_smi_q_8xH100_535.183.01.txt"))
    assert result.warnings == []
    report = result.value
    assert report is not None
    assert report.driver_version == "535.183.01"  # line 4
    assert report.cuda_version == "12.2"  # line 5
    assert report.attached_gpus == 8  # line 7
    assert len(report.gpus) == 8
    assert {g.name for g in report.gpus} == {"NVIDIA H100 80GB HBM3"}  # line 9 and each block
    bus_ids = [g.pci_bus_id for g in report.gpus]
    # block headers, lines 8, 213, 418, 629, 834, 1039, 1244, 1449
    assert bus_ids == [
        "00000000:53:00.0",
        "00000000:64:00.0",
        "00000000:75:00.0",
        "00000000:86:00.0",
        "00000000:97:00.0",
        "00000000:A8:00.0",
        "00000000:B9:00.0",
        "00000000:CA:00.0",
    ]
    gpu0 = report.gpus[0]
    assert gpu0.uuid == "GPU-566e6f65-c38e-b12f-4824-6944218668b9"  # line 25
    assert gpu0.serial == "1655022005478"  # line 24
    assert gpu0.vbios == "96.00.74.00.01"  # line 27
    assert gpu0.virtualization_mode == "Pass-Through"  # line 47: a VM
    assert (gpu0.pcie_gen_max, gpu0.pcie_gen_current) == (5, 5)  # lines 63-64
    assert (gpu0.pcie_width_max, gpu0.pcie_width_current) == (16, 16)  # lines 69-70: '16x'
    assert gpu0.memory_total_bytes == 81559 * MIB  # line 94
    assert gpu0.power_limit_w == 700.0  # line 171
    assert gpu0.max_sm_clock_mhz == 1980.0  # line 198
    assert (gpu0.fabric_state, gpu0.fabric_status) == ("Completed", "Success")  # lines 209-210
    assert gpu0.mig_mode == "Disabled"  # line 17
    assert gpu0.ecc_mode == "Enabled"  # line 123


def test_8x_h100_metrics_and_clock_events():
    report = parse_nvidia_smi_q(fixture("nvidia_smi_q_8xH100_535.183.01.txt")).value
    assert report is not None
    m0, m2 = report.metrics[0], report.metrics[2]
    assert m0.temp_c == 36.0  # line 161
    assert m0.mem_temp_c == 44.0  # line 167
    assert m0.power_w == 71.97  # line 170
    assert m0.sm_clock_mhz == 345.0  # line 185
    assert m0.util_pct == 0.0  # line 108 'Gpu : 0 %'
    assert m0.clocks_event_reasons == ["gpu_idle"]  # line 83 'Idle : Active'
    assert m2.mem_used_bytes == 9221 * MIB  # line 506, GPU 75:00.0 'Used : 9221 MiB'
    assert m2.power_w == 118.01  # line 580
    # lines 495, 498, 500: SW Power Cap, HW Power Brake Slowdown (nested), SW Thermal Slowdown
    # active
    assert set(m2.clocks_event_reasons) == {
        "sw_power_cap",
        "hw_power_brake_slowdown",
        "sw_thermal_slowdown",
    }


def test_8x_h100_health_counters():
    report = parse_nvidia_smi_q(fixture("nvidia_smi_q_8xH100_535.183.01.txt")).value
    assert report is not None
    h0 = report.health[0]
    assert h0.pcie_replays == 120  # line 74 'Replays Since Reset : 120'
    assert report.health[1].pcie_replays == 111  # line 279
    assert report.health[2].pcie_replays == 58  # line 484
    assert h0.ecc_volatile_correctable == 0  # lines 127-131
    assert h0.ecc_aggregate_uncorrectable == 0  # lines 133-137
    assert h0.sram_threshold_exceeded is False  # line 138
    assert h0.retired_pages_sbe is None  # line 146 'N/A' (H100 uses row remapping)
    assert h0.remapped_rows_pending is False  # line 152
    assert h0.remapped_rows_failure is False  # line 153
    # lines 155-159
    assert h0.remap_histogram == {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0}
    assert h0.reset_required is False  # line 50
    assert h0.drain_and_reset_recommended is False  # line 51


def test_590_driver_under_load():
    result = parse_nvidia_smi_q(fixture("nvidia_smi_q_1xH100_under_gpuburn_590.48.01.txt"))
    assert result.warnings == []
    report = result.value
    assert report is not None
    assert (report.driver_version, report.cuda_version) == ("590.48.01", "13.1")  # lines 5-6
    gpu, metric, health = report.gpus[0], report.metrics[0], report.health[0]
    assert gpu.pci_bus_id == "00000000:00:09.0"  # line 71
    assert gpu.virtualization_mode == "Pass-Through"  # line 57
    assert metric.power_w == 629.45  # line 194 'Average Power Draw' (no plain 'Power Draw' on 590)
    assert metric.util_pct == 100.0  # line 126
    assert metric.temp_c == 59.0  # line 185
    assert metric.mem_temp_c == 55.0  # line 191
    assert metric.mem_used_bytes == 19818 * MIB  # line 114
    assert metric.clocks_event_reasons == []  # lines 95-103 all 'Not Active'
    assert health.pcie_replays == 9  # line 86
    assert health.recovery_action == "None"  # line 60
    assert gpu.power_limit_w == 700.0  # line 196


def test_truncated_invalid_output_keeps_what_was_read():
    result = parse_nvidia_smi_q(fixture("nvidia_smi_q_8xH100_535.183.01_truncated_invalid.txt"))
    report = result.value
    assert report is not None
    assert report.attached_gpus == 8  # line 7, but the file stops inside GPU 0
    assert len(report.gpus) == 1
    assert report.gpus[0].uuid == "GPU-566e6f65-c38e-b12f-4824-6944218668b9"  # line 25
    assert report.health[0].pcie_replays == 120  # line 74
    assert report.gpus[0].memory_total_bytes is None  # cut before 'FB Memory Usage'
    assert report.metrics[0].clocks_event_reasons == ["gpu_idle"]  # line 83
    assert any("8" in w and "1 GPU" in w for w in result.warnings)
    assert any("Invalid HW Slowdown" in w for w in result.warnings)  # line 86


def test_page_retirement_sbe_dbe_counts():
    result = parse_nvidia_smi_q(
        fixture("nvidia_smi_q_page_retirement_8gpu_SBE_DBE_test_modified.txt")
    )
    assert result.warnings == []
    report = result.value
    assert report is not None
    assert report.driver_version == "535.86.10"  # line 5
    assert len(report.health) == 8
    counts = [
        (h.retired_pages_sbe, h.retired_pages_dbe, h.retired_pages_pending) for h in report.health
    ]
    assert counts == [
        (60, 5, False),  # lines 11-13
        (2, 61, True),  # lines 17-19
        (0, 0, False),  # lines 23-25
        (6, 0, True),  # lines 29-31
        (0, 0, False),  # lines 35-37
        (20, 45, True),  # lines 41-43
        (0, 0, False),  # lines 47-49
        (8, 56, True),  # lines 53-55
    ]
    assert report.health[7].pci_bus_id == "00000008:00:00.0"  # line 51
    assert report.gpus[0].name is None  # -d PAGE_RETIREMENT prints no product name


def test_older_single_double_bit_ecc_layout():
    # pre-R510 layout of the ECC section, typed from the documented format
    text = (
        "Driver Version : 470.82.01\n"
        "Attached GPUs : 1\n"
        "GPU 00000000:3B:00.0\n"
        "    Product Name : Tesla V100-SXM2-32GB\n"
        "    ECC Errors\n"
        "        Volatile\n"
        "            Single Bit\n"
        "                Device Memory : 3\n"
        "                Total : 3\n"
        "            Double Bit\n"
        "                Device Memory : 1\n"
        "                Total : 1\n"
        "        Aggregate\n"
        "            Single Bit\n"
        "                Total : 17\n"
        "            Double Bit\n"
        "                Total : 2\n"
        "    Clocks Throttle Reasons\n"
        "        Idle : Not Active\n"
        "        HW Slowdown : Active\n"
    )
    report = parse_nvidia_smi_q(text).value
    assert report is not None
    health = report.health[0]
    assert (health.ecc_volatile_correctable, health.ecc_volatile_uncorrectable) == (3, 1)
    assert (health.ecc_aggregate_correctable, health.ecc_aggregate_uncorrectable) == (17, 2)
    assert health.clocks_event_reasons == ["hw_slowdown"]


def test_failure_and_garbage():
    failed = parse_nvidia_smi_q(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    assert failed.value is None
    assert any("has failed" in w for w in failed.warnings)
    assert parse_nvidia_smi_q("\x1b[31mgarbage\x00\n::::\n").value is None
