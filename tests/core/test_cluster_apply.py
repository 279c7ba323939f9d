"""A cluster run's busbw between the nodes, applied to a plan's inter-node network
(core.probes.apply).

The planner gives each GPU one rail of node_rate / gpus_per_node Gbit/s, reaches 0.96 of it as busbw
in GB/s (÷ 8; sjeaugey's ~48 GB/s per 400G NIC) and sums the rails of a group's GPUs on each node:
see core.planner.speed.comms.inter_bytes_per_s. The expected node rates below invert that by hand
from the captures' own busbw figures (SOURCES #20 and #24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.probes.apply import apply_to_plan, nothing_to_apply
from core.probes.cluster.evidence import ClusterEvidence, InterNodeRun, NodeFacts, NodeReport
from core.probes.evidence import ProbeEvidence
from core.probes.parsers import parse_nccl_tests
from core.probes.samples import CollectiveResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def collective(name: str) -> CollectiveResult:
    value = parse_nccl_tests((FIXTURES / name).read_text(encoding="utf-8")).value
    assert value is not None
    return value


def request(**hardware: object) -> PlanRequest:
    body: dict[str, object] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e8},
        "training": {"method": "full", "sharding": "zero3", "micro_batch_size": 2},
    }
    if hardware:
        body["hardware"] = hardware
    return PlanRequest.model_validate(body)


def nodes(names: list[str], model: str | None = None, count: int | None = None) -> list[NodeReport]:
    return [
        NodeReport(
            node=n,
            state="completed",
            verdict="READY",
            facts=NodeFacts(gpu_model=model, gpu_count=count),
        )
        for n in names
    ]


def moc_run(backend: str = "nccl") -> InterNodeRun:
    # SOURCES #24: 2 nodes x 1 H100, in-place busbw 15.00 GB/s at 25 GiB (the last table row)
    return InterNodeRun(
        backend=backend,
        nnodes=2,
        nproc_per_node=1,
        world_size=2,
        collective=collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log"),
    )


def test_nccl_tests_between_nodes_set_inter_node_gbps():
    # SOURCES #20: 486.4 GB/s in-place at 16 GiB on 2 x 8 H200, a sum over 8 rails. Per rail: 486.4
    # / 8 x 8 / 0.96 = 506.7 Gb/s (above the 400G wire: NCCL's tree on 2 nodes); the node carries 8
    # of them: 4,053 Gb/s.
    cluster = ClusterEvidence(
        nodes=nodes(["GPU-6550", "GPU-3841"]),
        nccl_tests_launcher="mpirun",
        nccl_tests=collective("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt"),
    )
    before = request(gpu="H200-SXM", gpus_per_node=8, nodes=2)
    after, notes = apply_to_plan(before, ProbeEvidence(cluster=cluster))
    assert after.hardware is not None and after.hardware.inter_node_gbps == pytest.approx(
        4053.33, rel=1e-4
    )
    assert after.hardware.intra_node_busbw_gbs is None
    note = notes[-1]
    assert note.startswith("Inter-node network ") and "→ 4,053 Gb/s per node" in note
    assert "486.4 GB/s busbw measured by nccl-tests under mpirun across 2 nodes at 16 GiB" in note


def test_a_slow_network_between_nodes_slows_the_plan():
    # 15.00 GB/s with 1 GPU per node (one rail): 15 x 8 / 0.96 x 1 = 125 Gb/s per node, far below a
    # typical H100 node's 400G per GPU.
    cluster = ClusterEvidence(nodes=nodes(["a", "b"]), allreduce=moc_run())
    before = request(gpu="H100-SXM", gpus_per_node=1, nodes=2)
    after, notes = apply_to_plan(before, ProbeEvidence(cluster=cluster))
    assert after.hardware is not None and after.hardware.inter_node_gbps == pytest.approx(125.0)
    assert "NCCL all-reduce across 2 nodes" in notes[-1] and "(default)" in notes[-1]
    assert plan(after).compute.comm_time_s > plan(before).compute.comm_time_s


def test_a_one_node_plan_is_refused_in_one_sentence():
    cluster = ClusterEvidence(nodes=nodes(["a", "b"]), allreduce=moc_run())
    after, notes = apply_to_plan(
        request(gpu="H100-SXM", gpus_per_node=8), ProbeEvidence(cluster=cluster)
    )
    assert after.hardware is not None and after.hardware.inter_node_gbps is None
    assert notes == [
        "Inter-node network unchanged: the plan runs on 1 node, so the bandwidth measured between "
        "nodes does not apply (plan 2 or more nodes to use it)."
    ]


def test_gloo_between_cpus_is_not_applied():
    cluster = ClusterEvidence(nodes=nodes(["a", "b"]), allreduce=moc_run("gloo"))
    after, notes = apply_to_plan(
        request(gpu="H100-SXM", gpus_per_node=1, nodes=2), ProbeEvidence(cluster=cluster)
    )
    assert after.hardware is not None and after.hardware.inter_node_gbps is None
    assert "gloo on CPUs" in notes[-1] and notes[-1].count(".") == 1


def test_a_cluster_without_hardware_in_the_plan_supplies_it():
    cluster = ClusterEvidence(
        nodes=nodes(["a", "b"], "NVIDIA H100 80GB HBM3", 1), allreduce=moc_run()
    )
    evidence = ProbeEvidence(cluster=cluster)
    assert nothing_to_apply(evidence, load_catalog()) is None
    after, notes = apply_to_plan(request(), evidence)
    assert after.hardware is not None
    assert (after.hardware.gpu, after.hardware.gpus_per_node, after.hardware.nodes) == (
        "H100-SXM",
        1,
        2,
    )
    assert notes[0] == "Hardware set to 2 nodes × 1× H100-SXM, the probed cluster."
    assert after.hardware.inter_node_gbps == pytest.approx(125.0)


def test_a_cluster_run_without_a_collective_has_nothing_to_apply():
    evidence = ProbeEvidence(cluster=ClusterEvidence(nodes=nodes(["a", "b"])))
    assert nothing_to_apply(evidence, load_catalog()) is not None


def test_a_gloo_only_cluster_run_of_gpu_less_nodes_offers_nothing_to_apply():
    """The window's "Apply to plan" is off for it, with the reason: gloo on CPUs is not the GPUs'
    network."""
    cluster = ClusterEvidence(nodes=nodes(["a", "b"]), allreduce=moc_run("gloo"))
    reason = nothing_to_apply(ProbeEvidence(cluster=cluster), load_catalog())
    assert reason is not None and "gloo on CPUs" in reason
