"""Applying probe measurements to a plan: matmul TFLOP/s and busbw from the probes, on real
fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.probes.apply import apply_to_plan, nothing_to_apply
from core.probes.evidence import ComputeResult, HostInventory, ProbeEvidence
from core.probes.parsers import parse_nccl_tests, parse_nvidia_smi_q
from core.probes.run.replay import replay_evidence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def request(**hardware) -> PlanRequest:
    body = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8},
        "training": {"method": "full", "sharding": "zero3", "micro_batch_size": 2},
    }
    if hardware:
        body["hardware"] = hardware
    return PlanRequest.model_validate(body)


@pytest.fixture(scope="module")
def h100_inventory() -> HostInventory:
    q = parse_nvidia_smi_q(text("nvidia_smi_q_8xH100_535.183.01.txt")).value
    return HostInventory(hostname="xe9680", nvidia=q)


def test_single_node_busbw_sets_intra_node_busbw_and_slows_communication():
    coll = parse_nccl_tests(text("nccl_allreduce_1x8xA100_SXM4_40GB_single_node_10GiB.txt")).value
    before = request(gpu="A100-40GB-SXM", gpus_per_node=8)
    after, notes = apply_to_plan(before, ProbeEvidence(collectives=coll))
    # in-place busbw at 10 GiB: '80948 132.65 232.13 0' (the out-of-place column says 232.20)
    assert after.hardware is not None
    assert after.hardware.intra_node_busbw_gbs == pytest.approx(232.13)
    assert after.hardware.inter_node_gbps is None
    assert (
        len(notes) == 1
        and "232.1 GB/s" in notes[0]
        and "8 GPUs" in notes[0]
        and "10 GiB" in notes[0]
    )
    # The planner assumed 0.8 x 300 GB/s NVLink3 = 240 GB/s busbw; 232.13 is less, so ZeRO-3's
    # gathers take longer.
    assert "240.0 (default)" in notes[0]
    assert plan(after).compute.comm_time_s > plan(before).compute.comm_time_s


def test_measured_matmul_sets_matmul_tflops_and_the_replan_is_slower(h100_inventory):
    # Illustrative TFLOP/s (no matmul fixture exists): seven GPUs at 640, the slowest at 612.
    compute = ComputeResult(
        device="cuda", dtype="bf16", matrix_size=8192, tflops_per_device=[640.0] * 7 + [612.0]
    )
    evidence = ProbeEvidence(inventory=h100_inventory, compute=compute)
    before = request()  # no hardware: the probed box supplies it
    after, notes = apply_to_plan(before, evidence)
    assert after.hardware is not None
    # 8 × 'NVIDIA H100 80GB HBM3'
    assert (after.hardware.gpu, after.hardware.gpus_per_node) == ("H100-SXM", 8)
    # The slowest GPU sets the pace: 612 TFLOP/s, 612 / 794.5 = 77% of the stas00 MAMF reference for
    # H100 SXM.
    assert after.hardware.matmul_tflops == pytest.approx(612.0)
    assert after.assumptions.mfu is None  # the probe no longer forces an MFU
    assert notes[0] == "Hardware set to 8× H100-SXM, the probed box."
    assert notes[1] == (
        "Matmul TFLOP/s table → 612 measured on the slowest of 8× H100-SXM (77% of the 794.5 "
        "TFLOP/s a healthy GPU reaches)."
    )
    healthy = plan(
        after.model_copy(
            update={"hardware": after.hardware.model_copy(update={"matmul_tflops": None})}
        )
    )
    measured = plan(after)
    assert measured.compute.step_breakdown_s.gemm > healthy.compute.step_breakdown_s.gemm
    assert measured.time.hours > healthy.time.hours
    assert any(
        a.name == "matmul efficiency" and a.source.startswith("measured")
        for a in measured.assumptions
    )


def test_applying_twice_does_not_compound(h100_inventory):
    compute = ComputeResult(
        device="cuda", dtype="bf16", matrix_size=8192, tflops_per_device=[612.0] * 8
    )
    evidence = ProbeEvidence(inventory=h100_inventory, compute=compute)
    once, _ = apply_to_plan(request(), evidence)
    twice, notes = apply_to_plan(once, evidence)
    assert once.hardware is not None and twice.hardware is not None
    assert twice.hardware.matmul_tflops == pytest.approx(once.hardware.matmul_tflops)
    assert notes[0].startswith("Matmul TFLOP/s 612 → 612")


def test_probed_gpu_replaces_a_different_planned_gpu(h100_inventory):
    compute = ComputeResult(
        device="cuda", dtype="bf16", matrix_size=8192, tflops_per_device=[794.5] * 8
    )
    after, notes = apply_to_plan(
        request(gpu="A100-80GB-SXM", gpus_per_node=8),
        ProbeEvidence(inventory=h100_inventory, compute=compute),
    )
    assert after.hardware is not None
    assert after.hardware.gpu == "H100-SXM"
    assert notes[0] == "GPU A100-80GB-SXM → H100-SXM: the measurements describe the probed box."
    # A healthy GPU measures the MAMF reference (794.5 of 989.5 = 80.3%): the same E_mm as the
    # table's.
    assert after.hardware.matmul_tflops == pytest.approx(794.5)
    table = plan(
        after.model_copy(
            update={"hardware": after.hardware.model_copy(update={"matmul_tflops": None})}
        )
    )
    assert plan(after).compute.step_time_s == pytest.approx(table.compute.step_time_s, rel=0.01)


def test_multi_node_busbw_sets_the_inter_node_network_and_slows_the_plan():
    coll = parse_nccl_tests(
        text("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    ).value
    before = request(gpu="H100-SXM", gpus_per_node=1, nodes=2)
    after, notes = apply_to_plan(
        before, ProbeEvidence(collectives=coll, collective_interconnect="roce")
    )
    # 2 hosts (MOC-R4PCC04U35/U37), one GPU each, in-place busbw 15.00 GB/s at 25 GiB; the planner's
    # busbw over one rail is rate / 8 × 0.96 (sjeaugey's ~48 GB/s per 400G NIC), so the rate that
    # reproduces 15.00 GB/s is 15.00 × 8 / 0.96 = 125 Gb/s per GPU, and per node of 1.
    assert after.hardware is not None
    assert after.hardware.inter_node_gbps == pytest.approx(125.0)
    assert "400 (default) → 125 Gb/s per node" in notes[0] and "2 nodes" in notes[0]
    assert plan(after).compute.comm_time_s > plan(before).compute.comm_time_s
    assert plan(after).time.hours > plan(before).time.hours


def test_nothing_to_apply_says_why():
    coll = parse_nccl_tests(text("nccl_allreduce_SYNTHETIC_failure_tails.txt")).value
    before = request(gpu="H100-SXM", gpus_per_node=8)
    after, notes = apply_to_plan(before, ProbeEvidence(collectives=coll))
    assert after.hardware is not None
    assert after.hardware.intra_node_busbw_gbs is None
    assert notes == ["Network bandwidth unchanged: the all-reduce run reported errors."]
    cpu = ComputeResult(device="cpu", dtype="fp32", matrix_size=2048, tflops_per_device=[0.3])
    after, notes = apply_to_plan(before, ProbeEvidence(compute=cpu))
    assert after.hardware is not None and after.hardware.matmul_tflops is None
    assert notes == ["Matmul TFLOP/s unchanged: the matmul probe did not measure a GPU."]
    after, notes = apply_to_plan(request(), ProbeEvidence())
    assert after.hardware is None and "nothing applied" in notes[0]


def test_multi_node_busbw_reproduces_the_measured_figure_with_eight_gpus_per_node():
    """The planner's inter-node busbw after applying equals what was measured, whatever the node
    width."""
    from core.catalog import load_catalog
    from core.planner.plan import gpu_hardware
    from core.planner.speed import comms

    coll = parse_nccl_tests(
        text("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    ).value
    after, _ = apply_to_plan(
        request(gpu="H100-SXM", gpus_per_node=8, nodes=2),
        ProbeEvidence(collectives=coll, collective_interconnect="roce"),
    )
    assert after.hardware is not None
    hw = gpu_hardware(load_catalog().gpu("H100-SXM"), after.hardware, after.training.precision)
    busbw = float(comms.busbw_bytes_per_s(hw.intra_gbs, hw.gpu_net_gbps, hw.nodes))
    # fixture: in-place busbw 15.00 GB/s at the largest size (25 GiB)
    assert busbw / 1e9 == pytest.approx(15.0, rel=0.01)


def test_apply_to_plan_has_nothing_to_apply_without_a_gpu_figure():
    catalog = load_catalog()
    # an H100 the catalog knows, and a busbw sweep
    assert nothing_to_apply(replay_evidence(), catalog) is None
    cpu = ComputeResult(device="cpu", dtype="fp32", matrix_size=1024, tflops_per_device=[0.2])
    gpu_less = ProbeEvidence(inventory=HostInventory(hostname="ci"), compute=cpu)
    assert (
        nothing_to_apply(gpu_less, catalog)
        == "Nothing to apply to a plan: no NVIDIA GPU found on this host."
    )
    assert nothing_to_apply(ProbeEvidence(), catalog) == (
        "Nothing to apply to a plan: this run measured no GPU model, "
        "GPU matmul or multi-GPU all-reduce."
    )
    assert (
        nothing_to_apply(None, catalog) == "Nothing to apply to a plan: this run has no evidence."
    )
