"""The readiness scorecard on evidence parsed from real tool outputs.

Every expected status is derived by hand: the fixture line that decides it, and the threshold with
its source (the project's probe research, scorecard §4 / expected figures §2, as encoded in
core/probes/scorecard/thresholds.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.probes.evidence import (
    BurnResult,
    Check,
    CheckStatus,
    ComputeResult,
    DistributedResult,
    HostInventory,
    ProbeEvidence,
    ProbeOutcome,
    ProbeStatus,
    StorageResult,
    Verdict,
)
from core.probes.parsers import (
    parse_dmesg,
    parse_dmon,
    parse_ibstat,
    parse_nccl_tests,
    parse_nvidia_smi_q,
    parse_nvlink_status,
)
from core.probes.samples import GpuInfo, NvidiaSmiReport
from core.probes.scorecard import (
    NO_GPU,
    check_key,
    check_path,
    expected_busbw,
    explain_no_verdict,
    fmt_flops,
    parse_order,
    score,
    summarise,
    verdict_of,
)
from core.probes.scorecard.common import flops_span

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
PASS, WARN, FAIL, INFO = CheckStatus.passed, CheckStatus.warn, CheckStatus.fail, CheckStatus.info


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def smi_q(name: str) -> NvidiaSmiReport:
    report = parse_nvidia_smi_q(text(name)).value
    assert report is not None
    return report


def nccl(name: str):
    result = parse_nccl_tests(text(name)).value
    assert result is not None
    return result


def by_name(card, name: str):
    found = [c for c in card.checks if c.name == name]
    assert found, f"no check named {name!r}: {[c.name for c in card.checks]}"
    return found[0]


H100_Q = "nvidia_smi_q_8xH100_535.183.01.txt"
A100_NCCL = "nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt"


@pytest.fixture(scope="module")
def h100() -> ProbeEvidence:
    q = smi_q(H100_Q)
    return ProbeEvidence(inventory=HostInventory(hostname="xe9680", nvidia=q), health=q)


# --------------------------------------------------------------------------- healthy fixtures


def test_healthy_8xh100_q_passes_every_check_except_gpu2_power_brake(h100):
    card = score(h100)
    # 8 × 'Product Name : NVIDIA H100 80GB HBM3'; 'MIG Mode / Current : Disabled'; 'Total : 81559
    # MiB' = 85.5 GB >= 90 % of the catalog's 80 GB; 'Persistence Mode : Enabled'; PCIe 'Max 5 /
    # Current 5', width '16x / 16x'; 'Fabric State : Completed / Status : Success'; ECC counters all
    # 0; 'Remapped Rows Pending : No'.
    for name in (
        "GPU count and model",
        "Whole GPUs (no MIG)",
        "Persistence mode",
        "ECC mode",
        "PCIe link",
        "NVSwitch fabric",
        "ECC errors",
        "Remapped rows",
        "GPU reset status",
    ):
        assert by_name(card, name).status is PASS, name
    assert by_name(card, "GPU count and model").measured == "8× NVIDIA H100 80GB HBM3"
    # GPU 2's block (fixture lines 492-501) has 'SW Power Cap : Active', 'HW Power Brake Slowdown :
    # Active' and 'SW Thermal Slowdown : Active'. Azure NHC's throttling check warns on anything but
    # idle / SW power cap, so a snapshot gets WARN (a burn would FAIL it, scorecard §D).
    clocks = by_name(card, "Clock-event reasons")
    assert clocks.status is WARN
    assert "GPU 2" in clocks.measured and "hw_power_brake_slowdown" in clocks.measured
    assert "GPU 0" not in clocks.measured
    assert "azure_gpu_clock_throttling" in clocks.source
    assert card.verdict is Verdict.ready_with_warnings
    assert card.summary.startswith("READY WITH WARNINGS: GPU 2")


def test_order_is_compared_with_what_nvidia_smi_reports(h100):
    assert by_name(score(h100, expected="8× H100-SXM"), "GPU count and model").status is PASS
    wrong_count = by_name(score(h100, expected="4x H100"), "GPU count and model")
    assert wrong_count.status is FAIL and "8 GPUs found, 4 ordered" in wrong_count.reason
    wrong_model = by_name(score(h100, expected="8x A100-80GB-SXM"), "GPU count and model")
    assert wrong_model.status is FAIL and "A100-80GB-SXM ordered" in wrong_model.reason


def test_bad_order_text_is_one_clear_error():
    with pytest.raises(
        ValueError, match=re.escape("expected: '8' is not a GPU order; write e.g. '8× H100-SXM'")
    ):
        parse_order("8")
    with pytest.raises(ValueError, match="expected: '' is not a GPU order"):
        parse_order("")
    with pytest.raises(ValueError, match="unknown GPU"):
        parse_order("8x Z9000")
    order = parse_order("2 nodes × 8 A100 MIG")
    assert (order.gpus, order.gpu_id, order.mig) == (8, "A100-80GB-SXM", True)


def test_mig_enabled_is_not_a_whole_card_unless_ordered(h100):
    q = h100.health.model_copy(deep=True)
    q.gpus[3].mig_mode = "Enabled"
    ev = ProbeEvidence(inventory=HostInventory(nvidia=q), health=q)
    check = by_name(score(ev), "Whole GPUs (no MIG)")
    assert check.status is FAIL and "GPU 3" in check.reason
    assert by_name(score(ev, expected="8x H100 MIG"), "Whole GPUs (no MIG)").status is PASS


def test_pcie_idle_readings_never_fail(h100):
    # An idle snapshot cannot tell power saving from a downtrained link: a narrower link only
    # warns...
    q = h100.health.model_copy(deep=True)
    q.gpus[5].pcie_width_current = 8
    ev = ProbeEvidence(inventory=HostInventory(nvidia=q), health=q)
    check = by_name(score(ev), "PCIe link")
    assert check.status is WARN and "GPU 5" in check.reason and "read at idle" in check.reason
    # ... and Gen1 on a Gen5 card (fixture line 63 'Max : 5') is at most INFO.
    q = h100.health.model_copy(deep=True)
    # the fixture's metrics say GPU 1 is at 0 % utilisation: idle power saving
    q.gpus[1].pcie_gen_current = 1
    ev = ProbeEvidence(inventory=HostInventory(nvidia=q), health=q)
    check = by_name(score(ev), "PCIe link")
    assert check.status is INFO
    assert "read at idle; links downshift to save power" in check.reason
    assert "Gen1 x16 at idle on 1 GPU" in check.measured


def _under_load(gen: int, width: int, slow_gpu: int) -> list[GpuInfo]:
    """A reading under load: fixture line 59 gives GPU 0's bus id 00000000:53:00.0, lines 63/69 Gen5
    / 16x max."""
    return [
        GpuInfo(
            index=i,
            pci_bus_id="00000000:53:00.0" if i == 0 else None,
            pcie_gen_current=gen if i == slow_gpu else 5,
            pcie_gen_max=5,
            pcie_width_current=width if i == slow_gpu else 16,
            pcie_width_max=16,
        )
        for i in range(8)
    ]


def test_pcie_under_load_gen4_on_gen5_card_fails(h100):
    ev = h100.model_copy(update={"pcie_under_load": _under_load(4, 16, slow_gpu=3)})
    check = by_name(score(ev), "PCIe link")
    assert check.status is FAIL
    assert (
        "GPU 3" in check.reason
        and "slower PCIe generation" in check.reason
        and "under load" in check.reason
    )
    assert "Gen4 x16 under load on 1 GPU" in check.measured


def test_pcie_under_load_narrow_link_fails(h100):
    ev = h100.model_copy(update={"pcie_under_load": _under_load(5, 8, slow_gpu=0)})
    check = by_name(score(ev), "PCIe link")
    assert check.status is FAIL and "GPU 0" in check.reason and "narrower" in check.reason


def test_pcie_full_link_under_load_overrides_an_idle_downshift(h100):
    q = h100.health.model_copy(deep=True)
    q.gpus[0].pcie_gen_current = 1  # idle snapshot: Gen1; under load the same bus id runs Gen5 x16
    ev = ProbeEvidence(
        inventory=HostInventory(nvidia=q), health=q, pcie_under_load=_under_load(5, 16, 0)
    )
    check = by_name(score(ev), "PCIe link")
    assert check.status is PASS and check.measured == "Gen5 x16 under load on 8 GPUs"


def test_healthy_8xa100_nccl_232_gbs_passes():
    card = score(ProbeEvidence(collectives=nccl(A100_NCCL)))
    busbw = by_name(card, "All-reduce busbw")
    # In-place busbw at 10 GiB is 232.13 (fixture row ' 10737418240 ... 232.20 0 80948 132.65 232.13
    # 0'); the 8x A100 SXM reference is 230 GB/s (Azure ND A100 v4 threshold 228, OCI 232.2, stas00
    # 235): 232.13 / 230 = 101 % >= 90 % -> PASS.
    assert busbw.status is PASS
    assert busbw.measured.startswith("232.1 GB/s at 10 GiB")
    assert "230" in busbw.expected
    # '#wrong 0', 'Out of bounds values : 0 OK'
    assert by_name(card, "Collective run integrity").status is PASS
    assert card.verdict is Verdict.ready


def test_healthy_h100_inventory_plus_a100_nccl_has_only_the_power_brake_warning(h100):
    # The all-reduce is graded against the GPUs it says it ran on ('# Rank ... NVIDIA
    # A100-SXM4-40GB'), not the inventory's H100s: 232.13 GB/s passes the A100 reference and only
    # GPU 2's snapshot warning remains.
    ev = h100.model_copy(update={"collectives": nccl(A100_NCCL)})
    card = score(ev)
    not_pass = [(c.name, c.status) for c in card.checks if c.status is not PASS]
    assert not_pass == [("Clock-event reasons", WARN)]


# --------------------------------------------------------------------------- failures in the
# fixtures


def test_page_retirement_fixture_fails_on_pending_pages():
    q = smi_q("nvidia_smi_q_page_retirement_8gpu_SBE_DBE_test_modified.txt")
    card = score(ProbeEvidence(health=q))
    check = by_name(card, "Retired pages")
    # 'Pending Page Blacklist : Yes' on GPUs 00000002, 00000004, 00000006, 00000008 (indices 1, 3,
    # 5, 7): a page pending retirement needs a reset -> FAIL (NVIDIA dynamic page retirement; Azure
    # NHC).
    assert check.status is FAIL
    assert "GPUs 1, 3, 5, 7" in check.reason
    # SBE 60+2+0+6+0+20+0+8 = 96, DBE 5+61+0+0+0+45+0+56 = 167
    assert "SBE 96, DBE 167" in check.measured
    assert card.verdict is Verdict.not_ready
    assert "pending retirement" in card.summary
    # '-d PAGE_RETIREMENT' prints no clocks and no ECC counters: no clock verdict, ECC is INFO
    assert "Clock-event reasons" not in {c.name for c in card.checks}
    assert by_name(card, "ECC errors").status is INFO


def test_retired_pages_without_pending_only_warn():
    q = smi_q("nvidia_smi_q_page_retirement_8gpu_SBE_DBE_test_modified.txt")
    for h in q.health:
        h.retired_pages_pending = False
    check = by_name(score(ProbeEvidence(health=q)), "Retired pages")
    # SBE/DBE > 0 but nothing pending: scorecard §B 'SBE/DBE > 0' -> WARN
    assert check.status is WARN


def test_volatile_dbe_fails_and_sbe_growth_warns(h100):
    before = h100.health.model_copy(deep=True)
    after = h100.health.model_copy(deep=True)
    after.health[4].ecc_volatile_correctable = 3  # 0 in the inventory snapshot, 3 after the run
    ev = ProbeEvidence(inventory=HostInventory(nvidia=before), health=after)
    check = by_name(score(ev), "ECC errors")
    assert check.status is WARN and "GPU 4" in check.reason and "grew" in check.reason
    after.health[6].ecc_volatile_uncorrectable = 1
    check = by_name(
        score(ProbeEvidence(inventory=HostInventory(nvidia=before), health=after)), "ECC errors"
    )
    assert check.status is FAIL and "GPU 6" in check.reason


def test_remapped_rows_pending_fails(h100):
    q = h100.health.model_copy(deep=True)
    q.health[0].remapped_rows_pending = True
    check = by_name(score(ProbeEvidence(health=q)), "Remapped rows")
    assert check.status is FAIL and "GPU 0" in check.reason


def test_xid_119_gsp_timeout_fails():
    log = parse_dmesg(text("dmesg_xid119_gsp_rpc_timeout_H100_XE9680.log")).value
    card = score(ProbeEvidence(kernel_log=log))
    check = by_name(card, "Xid errors since boot")
    # Five 'NVRM: Xid (PCI:0000:9b:00): 119, ... Timeout after 6s of waiting for RPC response'
    # lines; Xid 119 (GSP RPC timeout, action RESET_GPU) is FAIL in the scorecard's Xid table.
    assert check.status is FAIL
    assert "Xid 119 ×5" in check.measured and "0000:9b:00" in check.reason
    # '... The GPU likely needs to be reset.' -> kernel event gpu_reset_needed -> FAIL
    assert by_name(card, "Kernel log").status is FAIL
    assert card.verdict is Verdict.not_ready


def test_xid_13_and_43_only_warn_and_oom_is_not_a_node_fault():
    log = parse_dmesg(text("dmesg_iso_xid13_xid43_app_fault_plus_oom.log")).value
    card = score(ProbeEvidence(kernel_log=log))
    # Xid 13 (graphics engine exception, usually user code) -> WARN; Xid 43 (app fault, IGNORE) ->
    # INFO-class.
    xid = by_name(card, "Xid errors since boot")
    assert xid.status is WARN and xid.reason.startswith("Xid 13")
    assert by_name(card, "Kernel log").status is PASS  # only OOM-killer lines
    assert card.verdict is Verdict.ready_with_warnings


def test_ib_ports_down_fail(h100):
    ib = parse_ibstat(text("ibstat_H100_node_some_ports_down.txt")).value
    inv = h100.inventory.model_copy(update={"infiniband": ib})
    check = by_name(score(h100.model_copy(update={"inventory": inv})), "InfiniBand/RoCE ports")
    # mlx5_2, mlx5_7, mlx5_8: 'State: Down', 'Physical state: Disabled' -> scorecard §A 'any
    # Down/Disabled' FAIL
    assert check.status is FAIL
    for device in ("mlx5_2", "mlx5_7", "mlx5_8"):
        assert device in check.reason
    assert check.measured.startswith("9 of 12 ports Active/LinkUp")


def test_ib_all_active_passes_and_ibpanic_warns(h100):
    ib = parse_ibstat(text("ibstat_H100_node_CX7_all_active.txt")).value
    inv = h100.inventory.model_copy(update={"infiniband": ib})
    assert (
        by_name(score(h100.model_copy(update={"inventory": inv})), "InfiniBand/RoCE ports").status
        is PASS
    )
    ib = parse_ibstat(text("ibstat_A100_node_ibpanic_exit255.txt")).value
    inv = h100.inventory.model_copy(update={"infiniband": ib})
    check = by_name(score(h100.model_copy(update={"inventory": inv})), "InfiniBand/RoCE ports")
    # 8 ports Active, then 'ibpanic: ... mlx5_8 failed'
    assert check.status is WARN and "ibpanic" in check.reason


def test_nvlink_all_links_inactive_fails():
    nv = parse_nvlink_status(text("nvidia_smi_nvlink_status_A100_all_links_inactive.txt")).value
    gpus = NvidiaSmiReport(gpus=[GpuInfo(index=6, name="NVIDIA A100-SXM4-80GB")])
    check = by_name(score(ProbeEvidence(inventory=HostInventory(nvidia=gpus, nvlink=nv))), "NVLink")
    # 'all links are inactive' on an NVLink GPU
    assert check.status is FAIL and "GPU 6" in check.reason
    ok = parse_nvlink_status(text("nvidia_smi_nvlink_status_8xA100.txt")).value
    check = by_name(score(ProbeEvidence(inventory=HostInventory(nvidia=gpus, nvlink=ok))), "NVLink")
    assert check.status is PASS and "12 links up on 8 GPUs at 25 GB/s" in check.measured


def test_two_node_roce_gdr0_busbw_is_below_expected_and_transport_fails():
    coll = nccl("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    card = score(ProbeEvidence(collectives=coll, collective_interconnect="roce"))
    busbw = by_name(card, "All-reduce busbw")
    # Largest size 26843545600 B (25 GiB), in-place busbw 15.00 GB/s; 2 hosts x 1 GPU, one NIC
    # 'NET/IB : Using [0]mlx5_5:1/RoCE'. Expected per 400G NIC ~48 GB/s (sjeaugey, nccl-tests#119):
    # 15.0 / 48 = 31 % < 60 %. The NIC rate comes from the H100 class (no ibstat in this evidence),
    # so it is capped at WARN ...
    assert busbw.status is WARN
    assert "31%" in busbw.reason and "48 GB/s" in busbw.reason
    # ... and the 'Connected all rings ... GDR 0' line fails the transport check (scorecard §C: 'GDR
    # 0' FAIL).
    transport = by_name(card, "NCCL transport")
    assert transport.status is FAIL and "GDR 0" in transport.reason
    assert card.verdict is Verdict.not_ready


def test_low_busbw_with_measured_nic_rate_fails():
    coll = nccl("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    # mlx5_5: Rate 400, Link layer Ethernet
    ib = parse_ibstat(text("ibstat_H100_node_CX7_all_active.txt")).value
    ev = ProbeEvidence(
        inventory=HostInventory(infiniband=ib), collectives=coll, collective_interconnect="roce"
    )
    # 15.0 / 48 = 31 % < 60 %, rate measured
    assert by_name(score(ev), "All-reduce busbw").status is FAIL


def test_two_node_a100_roce_16x100g_meets_its_rails():
    coll = nccl("nccl_allreduce_2x8xA100_SXM4_40GB_OCI_RoCE_16x100G_10GiB.txt")
    exp = expected_busbw(ProbeEvidence(collectives=coll, collective_interconnect="roce"))
    assert exp is not None and exp.kind == "inter"
    # 191.76 GB/s at 10 GiB; A100 class: 8 rails x 200 Gb/s assumed -> 8 x 24 = 192 GB/s; 191.76 /
    # 192 = 99.9 %.
    assert exp.reference == pytest.approx(8 * 24.0)
    assert (
        by_name(
            score(ProbeEvidence(collectives=coll, collective_interconnect="roce")),
            "All-reduce busbw",
        ).status
        is PASS
    )


def test_failure_tails_fail_the_run_integrity():
    card = score(ProbeEvidence(collectives=nccl("nccl_allreduce_SYNTHETIC_failure_tails.txt")))
    check = by_name(card, "Collective run integrity")
    # '#wrong' 3, 'Out of bounds values : 3 FAILED', 'Avg bus bandwidth : ... FAILED', 'Test NCCL
    # failure' lines
    assert check.status is FAIL
    for part in ("3 wrong results", "out-of-bounds values: 3", "FAILED", "Test NCCL failure"):
        assert part in check.reason


def test_small_messages_never_fail_the_busbw(h100):
    coll = nccl(A100_NCCL)
    row = coll.rows[0].model_copy(update={"size_bytes": 256 << 20})
    # 43 % of 230 would FAIL, but 256 MiB has not reached the plateau
    row.in_place.busbw_gbps = 100.0
    # a sweep that ends at 256 MiB
    whole = coll.model_copy(update={"rows": [row], "planned_sizes": [256 << 20]})
    check = by_name(score(ProbeEvidence(collectives=whole)), "All-reduce busbw")
    assert check.status is WARN and "below 1 GiB" in check.reason


# --------------------------------------------------------------------------- compute, burn,
# storage, distributed


def test_matmul_against_the_mamf_reference_and_the_spread(h100):
    # H100 SXM MAMF 794.5 TFLOP/s (stas00): >= 90 % (715) PASS, 80-90 % (636-715) WARN, < 80 % FAIL.
    def card(values):
        c = ComputeResult(
            device="cuda", dtype="bfloat16", matrix_size=8192, tflops_per_device=values
        )
        return score(h100.model_copy(update={"compute": c}))

    good = card([740.0, 735.0, 742.0, 738.0, 741.0, 739.0, 737.0, 744.0])
    assert by_name(good, "Matmul TFLOP/s").status is PASS
    assert by_name(good, "Matmul spread between GPUs").status is PASS  # 735 / 744 = 98.8 %
    warn = card([700.0] * 8)  # 700 / 794.5 = 88 %
    assert by_name(warn, "Matmul TFLOP/s").status is WARN
    fail = card([740.0] * 7 + [612.0])  # 612 / 794.5 = 77 % and 612 / 740 = 82.7 % of the best
    assert by_name(fail, "Matmul TFLOP/s").status is FAIL
    spread = by_name(fail, "Matmul spread between GPUs")
    assert spread.status is FAIL and "GPU 7" in spread.reason


def test_burn_from_real_samples_passes_and_hot_throttled_burn_fails():
    q = smi_q("nvidia_smi_q_1xH100_under_gpuburn_590.48.01.txt")  # Max Clocks SM : 1980 MHz
    samples = parse_dmon(text("nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt")).value
    # dmon: gtemp 63, 63, 64, 64, 65 °C; pclk 1980 MHz at sm 100 %: max 65 °C <= 80 °C, median 1980
    # / 1980 = 100 %
    burn = BurnResult(
        duration_s=5, completed=True, samples=5, max_temp_c=65.0, min_sm_clock_mhz=1980.0
    )
    ev = ProbeEvidence(inventory=HostInventory(nvidia=q), health=q, burn=burn)
    card = score(ev, samples=samples)
    assert by_name(card, "Temperature under load").status is PASS
    assert by_name(card, "SM clock under load").status is PASS
    assert by_name(card, "Throttling during burn").status is PASS
    assert card.verdict is Verdict.ready
    hot = burn.model_copy(
        update={
            "max_temp_c": 87.0,
            "throttle_reasons_seen": ["hw_thermal_slowdown"],
            "xid_codes": [79],
            "tflops_first_minute": 700.0,
            "tflops_last_minute": 600.0,
        }
    )
    card = score(ev.model_copy(update={"burn": hot}))
    assert by_name(card, "Temperature under load").status is FAIL  # 87 >= 85 °C
    assert by_name(card, "Throttling during burn").status is FAIL  # HW thermal slowdown
    assert by_name(card, "Xid during burn").status is FAIL  # 79: fell off the bus
    assert by_name(card, "Throughput drift").status is FAIL  # (700 - 600) / 700 = 14 % > 10 %


def test_storage_checks_use_fio_figures_and_the_jobs_need():
    # fio-3.1 PM883 randread 4k QD1 x32: clat p99 '99.000000' = 790528 ns = 0.79 ms < 2 ms -> PASS
    s = StorageResult(
        path="/data",
        role="data",
        tool="fio",
        filesystem="ext4",
        rand_read_iops=45419.1,
        rand_read_p99_ms=0.790528,
        seq_read_bytes_per_s=5e8,
        small_file_ops_per_s=200.0,
        free_bytes=95 * 10**9,
    )
    inv = HostInventory(
        filesystems=[{"mount": "/", "type": "ext4", "size": "1000GB", "free": "95GB"}]
    )
    card = score(ProbeEvidence(inventory=inv, storage=[s]))
    assert by_name(card, "Random-read latency, data (/data)").status is PASS
    # 0.5 GB/s is 25 % of a local Gen4 NVMe (2 GB/s): without the job's need it only warns
    assert by_name(card, "Sequential read, data (/data)").status is WARN
    # 200 operations/s = 5 ms per operation > 3 ms -> FAIL
    assert by_name(card, "Small files, data (/data)").status is FAIL
    # 95 GB free of 1000 GB = 90.5 % used >= 90 % -> FAIL
    assert by_name(card, "Free capacity, data (/data)").status is FAIL
    # the job needs 0.3 GB/s: 0.5 >= 0.3 -> PASS; it needs 1 GB/s: 0.5 < 0.7 x 1 -> FAIL
    assert (
        by_name(
            score(ProbeEvidence(storage=[s]), read_need_bytes_per_s=3e8),
            "Sequential read, data (/data)",
        ).status
        is PASS
    )
    assert (
        by_name(
            score(ProbeEvidence(storage=[s]), read_need_bytes_per_s=1e9),
            "Sequential read, data (/data)",
        ).status
        is FAIL
    )


def test_small_files_on_object_storage_warn():
    s = StorageResult(path="/mnt/s3", role="data", tool="python", filesystem="fuse.s3fs")
    check = by_name(score(ProbeEvidence(storage=[s])), "Small files, data (/mnt/s3)")
    assert check.status is WARN and "shards" in check.reason


def test_distributed_sanity():
    ranks = [
        {"RANK": str(i), "LOCAL_RANK": str(i), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
        for i in (0, 1)
    ]
    ok = DistributedResult(backend="gloo", world_size=2, ranks=ranks, all_reduce_ok=True)
    card = score(ProbeEvidence(distributed=ok))
    assert [c.status for c in card.checks] == [PASS, PASS]
    bad = ok.model_copy(
        update={"all_reduce_ok": False, "ranks": ranks[:1] * 2, "nccl_socket_ifname": "docker0"}
    )
    card = score(ProbeEvidence(distributed=bad))
    assert [c.status for c in card.checks] == [FAIL, FAIL, FAIL]


# --------------------------------------------------------------------------- GPU-less and missing
# evidence


def test_gpu_less_host_is_not_ready_for_gpu_training_and_its_other_checks_are_still_graded():
    ev = ProbeEvidence(
        inventory=HostInventory(hostname="ci", nvidia=None, cuda_available=False),
        compute=ComputeResult(
            device="cpu", dtype="fp32", matrix_size=2048, tflops_per_device=[0.35]
        ),
        storage=[
            StorageResult(
                path="/tmp", role="scratch", tool="fio", filesystem="ext4", rand_read_p99_ms=0.5
            )
        ],
        distributed=DistributedResult(backend="gloo", world_size=2, all_reduce_ok=True),
    )
    card = score(ev)
    assert card.verdict is Verdict.not_ready
    assert card.summary == "NOT READY for GPU training: no NVIDIA GPU found."
    count = by_name(card, "GPU count and model")
    assert (count.status, count.measured, count.reason) == (FAIL, NO_GPU, NO_GPU)
    # the GPU checks that cannot apply are INFO lines, not more failures
    for name in (
        "Whole GPUs (no MIG)",
        "PCIe link",
        "Clock-event reasons",
        "ECC errors",
        "Xid errors since boot",
    ):
        assert by_name(card, name).status is INFO
    # the rest is graded as on any host: p99 0.5 ms < 2 ms passes, gloo all_reduce exact passes
    assert by_name(card, "Random-read latency, scratch (/tmp)").status is PASS
    assert {c.status for c in card.checks if c.area == "distributed"} == {PASS}
    # 0.35 TFLOP/s of fp32 on the CPU is written as the 350 GFLOP/s it is
    matmul = by_name(card, "Matmul TFLOP/s")
    assert matmul.status is INFO and matmul.measured == "fp32 350 GFLOP/s"


def test_gpu_less_host_with_a_failing_disk_names_both():
    ev = ProbeEvidence(
        inventory=HostInventory(hostname="ci"),
        storage=[StorageResult(path="/data", role="data", tool="fio", rand_read_p99_ms=25.0)],
    )
    card = score(ev)
    assert card.summary == (
        "NOT READY for GPU training: no NVIDIA GPU found; 4 KiB random-read p99 latency is "
        "25.0 ms at queue depth 1."
    )


def test_random_reads_say_their_queue_depths_and_both_are_graded():
    """A slow volume measured 196 IOPS (queue depth 32) and a 526 ms p99 (queue depth 1): one line
    mixed the two without saying so and the IOPS were not graded. 3,000 IOPS is EBS gp3's baseline
    (AWS EBS documentation)."""
    slow = StorageResult(
        path="/data", role="data", tool="fio", rand_read_iops=196.0, rand_read_p99_ms=526.0
    )
    card = score(ProbeEvidence(inventory=HostInventory(hostname="ci"), storage=[slow]))
    latency = by_name(card, "Random-read latency, data (/data)")
    iops = by_name(card, "Random-read IOPS, data (/data)")
    assert (latency.status, latency.measured) == (
        FAIL,
        "p99 526.00 ms, 4 KiB reads at queue depth 1",
    )
    assert (iops.status, iops.measured) == (FAIL, "196 IOPS, 4 KiB reads at queue depth 32")
    assert "IOPS" not in latency.measured and "p99" not in iops.measured
    fast = slow.model_copy(update={"rand_read_iops": 450_000.0, "rand_read_p99_ms": 0.15})
    card = score(ProbeEvidence(inventory=HostInventory(hostname="ci"), storage=[fast]))
    assert by_name(card, "Random-read IOPS, data (/data)").status is PASS
    between = slow.model_copy(update={"rand_read_iops": 1_000.0, "tool": "python"})
    card = score(ProbeEvidence(inventory=HostInventory(hostname="ci"), storage=[between]))
    iops = by_name(card, "Random-read IOPS, data (/data)")
    assert (iops.status, iops.measured) == (WARN, "1,000 IOPS, 4 KiB reads at queue depth 1")
    # the connection dropped before a read completed
    cut_short = slow.model_copy(update={"rand_read_iops": 0.0})
    card = score(ProbeEvidence(inventory=HostInventory(hostname="ci"), storage=[cut_short]))
    assert not [c for c in card.checks if c.name.startswith("Random-read IOPS")]


def test_gpu_less_host_fails_when_gpus_were_ordered():
    card = score(ProbeEvidence(inventory=HostInventory(hostname="ci")), expected="8x H100")
    check = by_name(card, "GPU count and model")
    assert check.status is FAIL and check.expected == "8× H100-SXM as ordered"
    assert (
        card.summary
        == "NOT READY for GPU training: no NVIDIA GPU found, but H100-SXM GPUs were ordered."
    )


def test_gpus_that_torch_cannot_use_are_not_called_missing(h100):
    cpu = ComputeResult(device="cpu", dtype="float32", matrix_size=2048, tflops_per_device=[0.0123])
    card = score(h100.model_copy(update={"compute": cpu}))
    matmul = by_name(card, "Matmul TFLOP/s")
    assert matmul.status is WARN and matmul.measured == "float32 12 GFLOP/s"
    assert matmul.reason.startswith("the host has 8 NVIDIA GPUs but the matmul ran on the CPU")
    assert NO_GPU not in matmul.reason


def test_missing_probes_leave_checks_out_and_nothing_at_all_has_no_verdict():
    card = score(ProbeEvidence(collectives=nccl(A100_NCCL)))
    assert {c.area for c in card.checks} == {"network"}
    empty = score(ProbeEvidence())
    assert empty.verdict is None and empty.checks == []
    assert empty.summary == "No verdict: no probe produced any evidence to grade."


def test_a_run_with_only_info_lines_has_no_verdict():
    cpu = ComputeResult(device="cpu", dtype="fp32", matrix_size=2048, tflops_per_device=[0.0051])
    card = score(ProbeEvidence(compute=cpu))
    assert [c.status for c in card.checks] == [INFO]
    assert card.checks[0].measured == "fp32 5.1 GFLOP/s"
    assert card.verdict is None
    assert (
        card.summary
        == "No verdict: the one check could not be graded here (not applicable or not measured)."
    )


def test_a_run_without_evidence_says_what_became_of_its_probes():
    now = 1.0
    skipped = ProbeOutcome(
        name="collectives",
        status=ProbeStatus.skipped,
        started=now,
        ended=now,
        error="torch is not installed in the host's Python (/usr/bin/python3)",
    )
    failed = ProbeOutcome(
        name="storage",
        status=ProbeStatus.failed,
        started=now,
        ended=now,
        error="fio could not write /data: Permission denied.",
    )
    card = explain_no_verdict(score(ProbeEvidence()), [skipped, failed], "completed")
    assert card.verdict is None
    assert card.summary == (
        "No verdict: no probe produced any evidence to grade (collectives skipped: torch is not "
        "installed in the host's Python (/usr/bin/python3); storage failed: fio could not write "
        "/data: Permission denied)."
    )
    cancelled = explain_no_verdict(score(ProbeEvidence()), [], "cancelled")
    assert cancelled.summary == (
        "No verdict: no probe produced any evidence to grade (the run was cancelled before "
        "any probe finished)."
    )
    # a card with a verdict is left as it is
    graded = score(ProbeEvidence(collectives=nccl(A100_NCCL)))
    assert explain_no_verdict(graded, [skipped], "completed") == graded


def test_matmul_figures_below_one_tflops_read_in_gflops():
    assert fmt_flops(794.5) == "794.5 TFLOP/s"
    assert fmt_flops(1.0) == "1.0 TFLOP/s"
    assert fmt_flops(0.35) == "350 GFLOP/s"
    assert fmt_flops(0.0051) == "5.1 GFLOP/s"
    assert flops_span([0.2, 0.4]) == "200–400 GFLOP/s per device (mean 300)"
    assert flops_span([700.0, 790.0]) == "700–790 TFLOP/s per device (mean 745)"


def test_storage_checks_of_two_runs_line_up_by_role_not_by_scratch_directory():
    def card(path: str):
        return score(
            ProbeEvidence(
                storage=[StorageResult(path=path, role="scratch", tool="fio", rand_read_p99_ms=0.5)]
            )
        )

    a, b = card("/tmp/tuneplan.x1y2z3"), card("/tmp/tuneplan.q9w8e7")
    assert a.checks[0].name == "Random-read latency, scratch (/tmp/tuneplan.x1y2z3)"
    assert (
        check_key(a.checks[0])
        == check_key(b.checks[0])
        == ("storage", "Random-read latency, scratch")
    )
    assert check_path(b.checks[0]) == "/tmp/tuneplan.q9w8e7"
    data = score(
        ProbeEvidence(
            storage=[StorageResult(path="/data", role="data", tool="fio", rand_read_p99_ms=0.5)]
        )
    )
    assert check_key(data.checks[0]) != check_key(a.checks[0])


def test_summary_is_one_sentence_naming_the_main_failures(h100):
    log = parse_dmesg(text("dmesg_xid119_gsp_rpc_timeout_H100_XE9680.log")).value
    q = smi_q("nvidia_smi_q_page_retirement_8gpu_SBE_DBE_test_modified.txt")
    card = score(ProbeEvidence(kernel_log=log, health=q))
    assert card.summary.startswith("NOT READY: ")
    assert card.summary.count(".") == 1 and card.summary.endswith(".")
    assert "pending retirement" in card.summary and "Xid 119" in card.summary
    assert summarise(card.checks, most=1).endswith("and 2 more failures.")


def _evidence_from_fixture(name: str) -> ProbeEvidence | None:
    """Put a fixture's parsed value where the runner would (None for files the scorecard does not
    read)."""
    from core.probes.parsers import (
        parse_fio_json,
        parse_ibstatus,
        parse_nvidia_smi_table,
        parse_query_gpu,
        parse_topo_matrix,
    )

    raw = text(name)
    if name.startswith("nvidia_smi_q_"):
        q = parse_nvidia_smi_q(raw).value
        return ProbeEvidence(inventory=HostInventory(nvidia=q), health=q)
    if name.startswith("nvidia_smi_default_table"):
        return ProbeEvidence(inventory=HostInventory(nvidia=parse_nvidia_smi_table(raw).value))
    if name.startswith("nvidia_smi_query_gpu"):
        return ProbeEvidence(inventory=HostInventory(nvidia=parse_query_gpu(raw).value))
    if name.startswith("nvidia_smi_topo"):
        return ProbeEvidence(inventory=HostInventory(topology=parse_topo_matrix(raw).value))
    if name.startswith("nvidia_smi_nvlink"):
        return ProbeEvidence(inventory=HostInventory(nvlink=parse_nvlink_status(raw).value))
    if name.startswith(("nccl_", "rccl_", "torch_all_reduce")):
        return ProbeEvidence(
            collectives=parse_nccl_tests(raw).value, collective_interconnect="infiniband"
        )
    if name.startswith("nvidia_smi_dmon"):  # live samples during a burn
        return ProbeEvidence(burn=BurnResult(duration_s=5, completed=True, samples=5))
    if name.startswith("dmesg_"):
        return ProbeEvidence(kernel_log=parse_dmesg(raw).value)
    if name.startswith("ibstat_"):
        return ProbeEvidence(inventory=HostInventory(infiniband=parse_ibstat(raw).value))
    if name.startswith("ibstatus_"):
        return ProbeEvidence(inventory=HostInventory(infiniband=parse_ibstatus(raw).value))
    if name.startswith("fio_"):
        fio = parse_fio_json(raw).value
        return ProbeEvidence(
            storage=[StorageResult(path="/x", role="data", tool="fio", fio=[fio] if fio else [])]
        )
    return None


@pytest.mark.parametrize(
    "name", sorted(p.name for p in FIXTURES.iterdir() if p.suffix != ".md" or "torch" in p.name)
)
def test_every_fixture_scores_without_crashing(name):
    evidence = _evidence_from_fixture(name)
    if evidence is None:
        pytest.skip(f"{name} is not scorecard input")
    samples = parse_dmon(text(name)).value if name.startswith("nvidia_smi_dmon") else None
    card = score(evidence, samples=samples)
    # a fixture that gives no graded figure (a fio JSON without the figures the probe derives) has
    # no verdict
    assert card.summary.startswith(
        card.verdict.value if card.verdict is not None else "No verdict: "
    )
    for check in card.checks:
        assert check.measured and check.expected and check.source and check.reason


def test_a_failed_storage_step_keeps_its_check_as_a_fail_not_measured():
    s = StorageResult(
        path="/data",
        role="data",
        tool="fio",
        filesystem="ext4",
        seq_read_bytes_per_s=7e9,
        rand_read_p99_ms=0.1,
        step_failures={"small files": "OSError: [Errno 28] No space left"},
    )
    card = score(ProbeEvidence(storage=[s]))
    line = next(c for c in card.checks if c.name == "Small files, data (/data)")
    assert (line.status, line.measured) == (CheckStatus.fail, "not measured")
    assert line.reason == "the small files test failed at /data: OSError: [Errno 28] No space left"
    assert card.verdict is Verdict.not_ready


_NOT_MEASURED_LINE = st.builds(
    lambda status, n: Check(
        area="storage",
        name=f"Storage data (/d{n})",
        status=status,
        measured="not measured",
        expected="a storage measurement",
        source="s",
        reason=f"path {n} was not measured",
    ),
    st.sampled_from([CheckStatus.warn, CheckStatus.fail]),
    st.integers(0, 99),
)
_INFO_LINE = st.builds(
    lambda n: Check(
        area="inventory",
        name=f"info {n}",
        status=CheckStatus.info,
        measured="x",
        expected="—",
        source="s",
        reason="not applicable",
    ),
    st.integers(0, 99),
)


@given(st.lists(_NOT_MEASURED_LINE, min_size=1, max_size=6), st.lists(_INFO_LINE, max_size=3))
def test_a_card_whose_graded_lines_all_say_not_measured_is_incomplete(lines, infos):
    checks = [*lines, *infos]
    assert verdict_of(checks) is Verdict.incomplete
    assert summarise(checks).startswith("INCOMPLETE: nothing was measured: path ")
