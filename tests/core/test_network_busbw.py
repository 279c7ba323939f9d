"""Inter-node and host-staged bus bandwidth against nccl-tests captures (tests/fixtures/probes,
SOURCES.md).

The expected figures are the captures' own busbw at their largest message, and the node hardware
each SOURCES.md row names; nothing here is computed by the code under test. Tolerances:

* a ring between nodes moves the node's NIC sum: the OCI 2×8 A100 run on 16×100G per node (SOURCES
  #19) reached 191.8 GB/s, the model must be within 5 %;
* on exactly 2 nodes NCCL's tree exceeds the wire (PROBES.md §2.1, nccl-tests#196): a hierarchical
  all-reduce of 16 ranks on 2 nodes moves 2(N−1)/N = 1 × the data per node where busbw assumes
  2(n−1)/n = 1.875 ×, so a 2-node capture lies between the ring figure (0.95 ×) and 1.875 × it;
* at 4+ nodes (no 2-node bonus) PROBES.md §2.1 gives ≈ 380 GB/s for 8×400G nodes (4× B200, EFA):
  within 5 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.catalog import load_catalog, network
from core.planner.speed import comms
from core.probes.parsers import parse_nccl_tests
from core.probes.scorecard.expectations import busbw_at_largest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
TWO_NODE_CEILING = (15 / 16) / (1 / 2)  # [2(n−1)/n] ÷ [2(N−1)/N] for n = 16 ranks on N = 2 nodes


def captured_busbw(name: str) -> float:
    coll = parse_nccl_tests((FIXTURES / name).read_text(encoding="utf-8")).value
    assert coll is not None
    found = busbw_at_largest(coll)
    assert found is not None
    return found[0]


def node_busbw(per_gpu_gbps: float, gpus_per_node: int = 8) -> float:
    """The model's busbw (GB/s) of an all-reduce over whole nodes of `gpus_per_node` GPUs, NVLink
    not limiting."""
    return float(comms.busbw_bytes_per_s(1e6, per_gpu_gbps, 2, group_per_node=gpus_per_node)) / 1e9


def test_a_ring_between_a100_nodes_moves_the_sum_of_the_rails() -> None:
    # SOURCES #19: 2× OCI BM.GPU4.8, RoCE 16×100 Gb/s per node = 200 Gb/s per GPU; 191.8 GB/s at 10
    # GiB.
    measured = captured_busbw("nccl_allreduce_2x8xA100_SXM4_40GB_OCI_RoCE_16x100G_10GiB.txt")
    assert measured == pytest.approx(191.8, abs=0.1)
    assert node_busbw(1600 / 8) == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize(
    ("name", "node_gbps"),
    [
        # SOURCES #21: p5, 3.2 Tb/s EFA per node
        ("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt", 3200),
        # SOURCES #20; PROBES.md §2.1: 8×400G
        ("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt", 3200),
        # SOURCES #23: 8×200G TCPXO
        ("nccl_allreduce_2x8xH100_GCP_A3mega_TCPXO_mangled_header.txt", 1600),
        # SOURCES #22: 4×100G EFA per node
        ("nccl_allreduce_2x8xA100_p4de_EFA_srun_rank_prefixed.txt", 400),
    ],
)
def test_two_node_captures_lie_between_the_ring_and_the_two_node_tree(
    name: str, node_gbps: float
) -> None:
    measured = captured_busbw(name)
    ring = node_busbw(node_gbps / 8)
    assert 0.95 * ring <= measured <= TWO_NODE_CEILING * ring


def test_hopper_nodes_at_scale_match_the_published_four_node_figure() -> None:
    # PROBES.md §2.1: "4+ nodes × 8 GPUs, 400G per GPU ≈ 380 GB/s" (stas00, 4× B200 on EFA v4
    # 8×400G).
    catalog = load_catalog()
    per_gpu = network.typical_gpu_gbps("H100-SXM", 8, catalog)
    assert per_gpu == 400
    assert node_busbw(per_gpu) == pytest.approx(380, rel=0.05)


def test_one_gpu_per_node_and_point_to_point_sends_get_one_rail() -> None:
    # sjeaugey (nccl-tests#119, PROBES.md §2.1): ~48 GB/s per 400G NIC, ~24 per 200G.
    assert node_busbw(400, gpus_per_node=1) == pytest.approx(48, rel=0.02)
    assert float(comms.inter_bytes_per_s(200)) / 1e9 == pytest.approx(24, rel=0.02)


def test_nvlink_still_caps_a_collective_whose_rails_are_faster() -> None:
    # 8×400G rails (384 GB/s) behind a 300 GB/s NVLink3 link × 0.8 = 240: the node's slower stage
    # rules.
    assert float(comms.busbw_bytes_per_s(300, 400, 2, group_per_node=8)) / 1e9 == pytest.approx(240)


def test_geforce_cards_collect_through_host_memory() -> None:
    # nccl-tests#287 (sjeaugey): "GeForce cards do not support P2P"; PROBES.md §2.1: PCIe boxes
    # 10–25 GB/s, the low end without P2P. The L40S (data-center Ada, P2P) keeps its PCIe figure; an
    # NVLink-bridged pair of RTX 3090s keeps the bridge.
    catalog = load_catalog()
    rtx4090 = (
        float(comms.intra_bytes_per_s(network.intra_node_gbs(catalog.gpu("RTX-4090"), 2))) / 1e9
    )
    l40s = float(comms.intra_bytes_per_s(network.intra_node_gbs(catalog.gpu("L40S"), 2))) / 1e9
    assert 10 <= rtx4090 <= 12.5 < l40s <= 25
    assert (
        network.intra_node_gbs(catalog.gpu("RTX-3090"), 2)
        == catalog.gpu("RTX-3090").nvlink_pair_gbs
    )


def test_two_rtx_4090s_ddp_fsdp_and_offload_differ_as_their_traffic_does() -> None:
    # ZeRO-3/FSDP moves at least 1.5× the bytes of DDP per step (Rajbhandari et al. 2020,
    # arXiv:1910.02054 §7.2.2: 3Ψ against 2Ψ) — more here, as its gathers repeat for every
    # micro-batch — and offloading the optimizer adds the PCIe transfers and the CPU step on top.
    # Whether FSDP's traffic shows in the step depends on how much of it the compute hides
    # (assumptions.comm_overlap), so only its time on the wire is compared with DDP's.
    from core.planner.plan import plan
    from core.planner.request import PlanRequest

    def run(sharding: str, offload: str = "none") -> tuple[float, float]:
        result = plan(
            PlanRequest.model_validate(
                {
                    "model": {"preset": "llama-3.2-1b"},
                    "data": {"tokens": 2e7, "seq_len": 2048},
                    "training": {
                        "method": "full",
                        "sharding": sharding,
                        "offload": offload,
                        "micro_batch_size": 1,
                        "gradient_checkpointing": True,
                    },
                    "hardware": {"gpu": "RTX-4090", "gpus_per_node": 2, "nodes": 1},
                }
            )
        )
        return result.compute.step_time_s, result.compute.comm_time_s

    ddp, fsdp, offload = run("none"), run("fsdp"), run("fsdp", "optimizer")
    assert fsdp[1] >= 1.5 * ddp[1]
    # FSDP may still beat DDP: it steps the optimizer on half the states
    assert max(ddp[0], fsdp[0]) < offload[0]
