"""The cluster card, graded from real captures (tests/fixtures/probes, SOURCES.md). Every expected
verdict is worked out from the sources' own figures in the comments (sjeaugey, nccl-tests#119: ~48
GB/s of ring busbw per 400 Gb/s NIC, 24 per 200, 12 per 100; >= 80 % passes, 60-80 % warns), never
from the code under test."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.catalog import load_catalog
from core.probes.cluster.evidence import (
    AgreementRow,
    ClusterEvidence,
    DcgmDiag,
    InterNodeRun,
    NodeFacts,
    NodeReport,
    PairBandwidth,
    Rendezvous,
)
from core.probes.evidence import Check, CheckStatus, ProbeEvidence, Verdict
from core.probes.parsers import (
    parse_dcgmi_diag,
    parse_ibstat,
    parse_ibstatus,
    parse_nccl_debug,
    parse_nccl_tests,
    parse_perftest,
    parse_topo_matrix,
)
from core.probes.samples import CollectiveResult, IbPort
from core.probes.scorecard import score
from core.probes.scorecard.cluster import cluster_checks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
PASS, WARN, FAIL, INFO = CheckStatus.passed, CheckStatus.warn, CheckStatus.fail, CheckStatus.info


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def collective(name: str) -> CollectiveResult:
    value = parse_nccl_tests(fixture(name)).value
    assert value is not None
    return value


def ports(rate: float, count: int, prefix: str = "mlx5_", layer: str = "Ethernet") -> list[IbPort]:
    return [
        IbPort(
            device=f"{prefix}{i}",
            port=1,
            state="Active",
            phys_state="LinkUp",
            rate_gbps=rate,
            link_layer=layer,
        )
        for i in range(count)
    ]


def node(name: str, hca: list[IbPort] | None = None, **facts: object) -> NodeReport:
    return NodeReport(
        node=name,
        run_id=1,
        state="completed",
        verdict="READY",
        facts=NodeFacts(hostname=name, hca_ports=hca or [], **facts),
    )


def card(cluster: ClusterEvidence) -> dict[str, Check]:
    return {c.name: c for c in cluster_checks(cluster, load_catalog())}


def sweep(
    coll: CollectiveResult, nodes: list[str], backend: str = "nccl", **extra: object
) -> InterNodeRun:
    return InterNodeRun(
        backend=backend,
        nnodes=len(nodes),
        nproc_per_node=max(1, (coll.nranks or 2) // len(nodes)),
        world_size=coll.nranks or 2,
        nodes=nodes,
        collective=coll,
        **extra,
    )


# --------------------------------------------------------------------------- busbw against NICs


def test_roce_400g_at_15_gbps_with_gdr_off_fails():
    # SOURCES #24: 2 nodes x 1 H100, NCCL_IB_HCA=mlx5_5 (one 400 Gb/s RoCE port), busbw ~15 GB/s.
    # One 400G NIC carries ~48 GB/s: 15/48 = 31 % < 60 % -> FAIL; NCCL uses NET/IB but 'GDR 0' with
    # RDMA up -> WARN.
    log = fixture("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    nodes = ["MOC-R4PCC04U37", "MOC-R4PCC04U35"]  # the log's '# Rank' lines
    cluster = ClusterEvidence(
        nodes=[
            node(
                n,
                [
                    IbPort(
                        device="mlx5_5",
                        port=1,
                        state="Active",
                        rate_gbps=400.0,
                        link_layer="Ethernet",
                    )
                ],
            )
            for n in nodes
        ],
        allreduce=sweep(
            collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log"),
            nodes,
            transport=parse_nccl_debug(log).value,
        ),
    )
    lines = card(cluster)
    busbw = lines["All-reduce busbw between nodes"]
    assert busbw.status is FAIL
    assert "15.0 GB/s" in busbw.measured and "1 × 400 Gb/s" in busbw.expected
    transport = lines["NCCL transport between nodes"]
    assert transport.status is WARN and "GDR 0" in transport.reason
    assert "mlx5_5:1/RoCE" in transport.measured
    verdict = score(ProbeEvidence(cluster=cluster))
    assert verdict.verdict is Verdict.not_ready


@pytest.mark.parametrize(
    ("name", "nic_gbps", "nics", "layer"),
    [
        # SOURCES #20: 2x BM.GPU.H200.8, 3.2 Tb/s RoCE per node (8 x 400): 8 x 48 = 384 GB/s; 486.4
        # >= 0.8 x 384.
        ("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt", 400.0, 8, "Ethernet"),
        # SOURCES #19: 2x BM.GPU4.8, 16 x 100 Gb/s RoCE per node: 16 x 12 = 192 GB/s; 191.75 is ~100
        # % of it.
        ("nccl_allreduce_2x8xA100_SXM4_40GB_OCI_RoCE_16x100G_10GiB.txt", 100.0, 16, "Ethernet"),
    ],
)
def test_nccl_tests_at_line_rate_pass(name, nic_gbps, nics, layer):
    coll = collective(name)
    hosts = sorted({d.host for d in coll.devices if d.host})
    cluster = ClusterEvidence(
        nodes=[node(h, ports(nic_gbps, nics, layer=layer)) for h in hosts],
        nccl_tests=coll,
        nccl_tests_launcher="mpirun",
    )
    line = card(cluster)["nccl-tests between nodes (mpirun)"]
    assert line.status is PASS, line.reason


def test_p5_efa_sweep_passes():
    # SOURCES #21: 2x p5.48xlarge, 32 EFA x 100 Gb/s per node: 32 x 12 = 384 GB/s; 487.26 GB/s at 16
    # GiB passes. The excerpt is the table alone (no footer), so it is graded as the torchrun sweep,
    # which has none either.
    coll = collective("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt")
    nodes = ["p5-a", "p5-b"]
    cluster = ClusterEvidence(
        nodes=[node(n, ports(100.0, 32, prefix="rdmap", layer="InfiniBand")) for n in nodes],
        allreduce=sweep(coll, nodes),
    )
    assert card(cluster)["All-reduce busbw between nodes"].status is PASS


def test_a_cut_nccl_tests_log_fails_its_integrity():
    # no footer in the excerpt
    coll = collective("nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt")
    cluster = ClusterEvidence(
        nodes=[node(n, ports(100.0, 32)) for n in ("a", "b")], nccl_tests=coll
    )
    line = card(cluster)["nccl-tests between nodes"]
    assert line.status is FAIL and "no footer" in line.reason


def test_gloo_between_cpus_is_reported_not_graded():
    coll = collective("torch_all_reduce_bench_py_table_4nodes.md")
    nodes = ["n0", "n1", "n2", "n3"]
    cluster = ClusterEvidence(
        nodes=[node(n, ports(400.0, 8)) for n in nodes], allreduce=sweep(coll, nodes, "gloo")
    )
    line = card(cluster)["All-reduce busbw between nodes"]
    assert line.status is INFO and "not a NIC test" in line.reason
    assert "91.7 GB/s" in line.measured  # the table's 16 GiB row


def test_busbw_with_nics_assumed_from_the_gpu_class_warns_at_worst():
    # No port inventory: one NIC per GPU at the H100 class's typical 400 Gb/s
    # (core.catalog.network); 15.0 GB/s is 31 % of ~48 GB/s, a FAIL on measured ports, but an
    # assumed rate only warns.
    coll = collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    hosts = ["MOC-R4PCC04U37", "MOC-R4PCC04U35"]
    cluster = ClusterEvidence(
        nodes=[node(h, gpu_model="NVIDIA H100 80GB HBM3", gpu_count=1) for h in hosts],
        allreduce=sweep(coll, hosts),
    )
    line = card(cluster)["All-reduce busbw between nodes"]
    assert line.status is WARN and "assumed" in line.reason and "1 × 400 Gb/s" in line.expected


def test_busbw_without_a_port_inventory_is_not_graded():
    coll = collective("nccl_allreduce_2x8xH200_OCI_RoCE_slurm_wrapper.txt")
    cluster = ClusterEvidence(
        nodes=[node("GPU-6550"), node("GPU-3841")], allreduce=sweep(coll, ["a", "b"])
    )
    assert card(cluster)["All-reduce busbw between nodes"].status is INFO


# --------------------------------------------------------------------------- NCCL's transport


def test_sockets_while_rdma_ports_are_up_fail():
    # SOURCES #39: NCCL_NET=Socket on DGX-A100 nodes; their HCAs are up (ibstatus of an A100 node,
    # SOURCES #33).
    inventory = parse_ibstatus(fixture("ibstatus_A100_node_all_active.txt")).value
    assert inventory is not None
    transport = parse_nccl_debug(
        fixture("nccl_debug_2node_DGX-A100_NET_Socket_forced_nccl676.log")
    ).value
    coll = collective("nccl_allreduce_2x8xA100_SXM4_40GB_OCI_RoCE_16x100G_10GiB.txt")
    cluster = ClusterEvidence(
        nodes=[node("gpu01", inventory.ports), node("gpu02", inventory.ports)],
        allreduce=sweep(coll, ["gpu01", "gpu02"], transport=transport),
    )
    line = card(cluster)["NCCL transport between nodes"]
    assert line.status is FAIL
    assert "TCP sockets" in line.reason and "gpu01, gpu02" in line.reason
    assert "enp225s0f1" in line.measured


def test_sockets_without_rdma_say_the_seed_verdict():
    # SOURCES #40: NET/IB found no device, NCCL used bond0 over TCP; the nodes report no RDMA port.
    transport = parse_nccl_debug(
        fixture("nccl_debug_2node_A100_NET_Socket_bond0_no_IB_device_nccl-tests136.log")
    )
    coll = collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    nodes = ["nlp-gpu-05", "nlp-gpu-07"]
    cluster = ClusterEvidence(
        nodes=[node(n) for n in nodes], allreduce=sweep(coll, nodes, transport=transport.value)
    )
    lines = card(cluster)
    line = lines["NCCL transport between nodes"]
    assert line.status is WARN
    assert (
        "nodes talk over plain TCP sockets: multi-node training will be communication-bound"
        in line.reason
    )
    assert "nccl#450" in line.source
    assert lines["All-reduce busbw between nodes"].status is INFO  # no NIC figure to hold TCP to


def test_transport_from_nccl_tests_own_lines():
    # carries NET/IB, GDR 0
    coll = collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    cluster = ClusterEvidence(nodes=[node(n, ports(400.0, 1)) for n in ("a", "b")], nccl_tests=coll)
    line = card(cluster)["NCCL transport between nodes"]
    assert line.status is WARN and line.measured.startswith("IB (mlx5_5:1/RoCE)")


# --------------------------------------------------------------------------- ports, affinity,
# ib_write_bw


def test_nodes_with_different_ports_fail():
    # 8 x 400 + 4 x 100, all Active
    good = parse_ibstat(fixture("ibstat_H100_node_CX7_all_active.txt")).value
    bad = parse_ibstat(fixture("ibstat_H100_node_some_ports_down.txt")).value  # two ports Down
    assert good is not None and bad is not None
    cluster = ClusterEvidence(
        nodes=[node("a", good.ports), node("b", good.ports), node("c", bad.ports)]
    )
    line = card(cluster)["RDMA ports across nodes"]
    assert line.status is FAIL
    assert line.reason.startswith("c has ") and "8 × 400 Gb/s + 4 × 100 Gb/s" in line.reason


def test_same_ports_everywhere_pass():
    good = parse_ibstat(fixture("ibstat_H100_node_CX7_all_active.txt")).value
    assert good is not None
    cluster = ClusterEvidence(nodes=[node("a", good.ports), node("b", good.ports)])
    assert card(cluster)["RDMA ports across nodes"].status is PASS


def test_gpus_far_from_their_nic_warn():
    # Both topo fixtures with NICs reach every NIC at NODE or SYS only (SOURCES #11, #12).
    far4 = parse_topo_matrix(
        fixture("nvidia_smi_topo_m_4xRTX6000Ada_PCIe_no_NVLink_4NICs.txt")
    ).value
    far2 = parse_topo_matrix(fixture("nvidia_smi_topo_m_2GPU_PCIe_PHB_workstation_2NICs.txt")).value
    cluster = ClusterEvidence(nodes=[node("a", topology=far4), node("b", topology=far2), node("c")])
    line = card(cluster)["GPU–NIC affinity"]
    assert line.status is WARN
    assert "a: GPUs 0, 1, 2, 3" in line.reason and "b: GPUs 0, 1" in line.reason
    assert "0 of 2 nodes" in line.measured  # node c has no topology: not counted


def test_ib_write_bw_at_56_percent_of_the_port_fails():
    # SOURCES #34: ib_write_bw, 1 QP host memory, ~224 Gb/s on a 400 Gb/s port: 56 % < 75 % -> FAIL.
    result = parse_perftest(fixture("ib_write_bw_roce400_hostmem_1qp_sweep.log")).value
    hosts = ["mocr4pcc02u31", "mocr4pcc02u32"]  # the file name's client and server
    hca = [IbPort(device="mlx5_2", port=1, state="Active", rate_gbps=400.0, link_layer="Ethernet")]
    cluster = ClusterEvidence(
        nodes=[node(h, hca) for h in hosts],
        ib_write_bw=[PairBandwidth(client=hosts[0], server=hosts[1], result=result)],
    )
    line = card(cluster)["ib_write_bw between nodes"]
    assert line.status is FAIL and "224.1 of 400 Gb/s (56%)" in line.measured


# --------------------------------------------------------------------------- nodes, agreement,
# rendezvous


def test_a_lost_node_is_named_and_fails():
    cluster = ClusterEvidence(
        nodes=[
            node("a"),
            NodeReport(node="b", state="unreachable", error="b:22 refused the SSH connection."),
        ]
    )
    line = card(cluster)["Every node probed"]
    assert line.status is FAIL and "b: b:22 refused the SSH connection" in line.reason


def test_a_not_ready_node_fails_the_cluster():
    cluster = ClusterEvidence(
        nodes=[node("a"), node("b").model_copy(update={"verdict": "NOT READY"})]
    )
    line = card(cluster)["Node verdicts"]
    assert line.status is FAIL and line.reason.startswith("b is NOT READY")


def test_drivers_that_differ_fail_naming_who_has_what():
    # driver/CUDA from the headers of SOURCES #1 (535.183.01, CUDA 12.2) and #17 (550.90.07, CUDA
    # 12.4)
    cluster = ClusterEvidence(
        nodes=[
            node(
                "a",
                gpu_model="NVIDIA H100 80GB HBM3",
                gpu_count=8,
                driver="535.183.01",
                cuda="12.2",
                kernel="5.15",
            ),
            node(
                "b",
                gpu_model="NVIDIA H100 80GB HBM3",
                gpu_count=8,
                driver="550.90.07",
                cuda="12.4",
                kernel="6.8",
            ),
        ]
    )
    lines = card(cluster)
    stack = lines["Same driver, CUDA, NCCL and torch"]
    assert stack.status is FAIL
    assert (
        "driver differs: a 535.183.01, b 550.90.07" in stack.reason
        and "CUDA differs" in stack.reason
    )
    assert lines["Same GPUs on every node"].status is PASS
    assert lines["Same kernel"].status is WARN


def test_the_runs_own_agreement_row_is_used():
    cluster = ClusterEvidence(
        nodes=[node("a"), node("b")],
        agreement=[AgreementRow(field="nccl", values={"a": "2.21.5", "b": "2.26.2"}, agree=False)],
    )
    assert (
        "NCCL differs: a 2.21.5, b 2.26.2"
        in card(cluster)["Same driver, CUDA, NCCL and torch"].reason
    )


@pytest.mark.parametrize(("offset", "status"), [(0.2, PASS), (4.0, WARN), (900.0, FAIL)])
def test_clock_offsets(offset, status):
    cluster = ClusterEvidence(
        nodes=[node("a", clock_offset_s=0.0), node("b", clock_offset_s=-offset)]
    )
    assert card(cluster)["Clocks in step"].status is status


def test_rendezvous_not_reached_names_the_node():
    rdzv = Rendezvous(
        host="10.0.0.1",
        port=29500,
        reached_from={"b": True, "c": False},
        errors={"c": "connection refused"},
    )
    line = card(ClusterEvidence(nodes=[node("a")], rendezvous=rdzv))["Rendezvous port"]
    assert line.status is FAIL and line.reason.startswith("c could not reach 10.0.0.1:29500")


def test_torchrun_across_nodes():
    ranks = [
        {"RANK": str(r), "LOCAL_RANK": str(r % 2), "WORLD_SIZE": "4", "host": f"n{r // 2}"}
        for r in range(4)
    ]
    ok = InterNodeRun(
        backend="gloo", nnodes=2, nproc_per_node=2, world_size=4, ranks=ranks, all_reduce_ok=True
    )
    assert card(ClusterEvidence(distributed=ok))["Torchrun across nodes"].status is PASS
    short = ok.model_copy(update={"ranks": ranks[:3]})
    assert (
        card(ClusterEvidence(distributed=short))["Torchrun across nodes"].reason
        == "3 of 4 ranks reported"
    )
    wrong = ok.model_copy(update={"all_reduce_ok": False})
    assert card(ClusterEvidence(distributed=wrong))["Torchrun across nodes"].status is FAIL
    hung = ok.model_copy(update={"error": "timed out after 120 s", "failed_node": "n1"})
    assert "on n1" in card(ClusterEvidence(distributed=hung))["Torchrun across nodes"].reason


def test_dcgm_fail_on_one_node_fails():
    good = parse_dcgmi_diag(fixture("dcgmi_diag_r4_all_pass_gcm.txt")).value or {}
    bad = (
        parse_dcgmi_diag(
            fixture("dcgmi_diag_r2_gpu_memory_fail_gpu0_thermal_warning_stas00.txt")
        ).value
        or {}
    )
    cluster = ClusterEvidence(
        dcgm=[DcgmDiag(node="a", level=4, results=good), DcgmDiag(node="b", level=2, results=bad)]
    )
    line = card(cluster)["DCGM diagnostics"]
    assert line.status is FAIL and line.reason == "b GPU Memory: Fail - GPU: 0"
    assert (
        card(ClusterEvidence(dcgm=[DcgmDiag(node="a", level=4, results=good)]))[
            "DCGM diagnostics"
        ].status
        is PASS
    )


def test_score_grades_the_cluster_row_and_keeps_the_verdict_rules():
    good = parse_ibstat(fixture("ibstat_H100_node_CX7_all_active.txt")).value
    assert good is not None
    clean = ClusterEvidence(nodes=[node("a", good.ports), node("b", good.ports)])
    assert score(ProbeEvidence(cluster=clean)).verdict is Verdict.ready
    assert score(ProbeEvidence()).verdict is None  # a single-host run without evidence is untouched
    warned = clean.model_copy(
        update={"nodes": [node("a", good.ports, clock_offset_s=2.0), node("b", good.ports)]}
    )
    assert score(ProbeEvidence(cluster=warned)).verdict is Verdict.ready_with_warnings


def test_efa_plugin_transport_passes():
    # SOURCES #46: 2x g5.8xlarge over EFA, 'Using network AWS Libfabric' ('found 1 nics' per node).
    transport = parse_nccl_debug(
        fixture("nccl_debug_2node_g5_EFA_aws-ofi-nccl_GDR_disabled.log")
    ).value
    coll = collective("nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log")
    hosts = ["compute-gpu-st-distributed-ml-1", "compute-gpu-st-distributed-ml-2"]
    cluster = ClusterEvidence(
        nodes=[node(h, ports(100.0, 1, prefix="rdmap", layer="InfiniBand")) for h in hosts],
        allreduce=sweep(coll, hosts, transport=transport),
    )
    line = card(cluster)["NCCL transport between nodes"]
    assert (
        line.status is PASS
        and line.reason == "NCCL uses its AWS Libfabric net plugin between the nodes"
    )
    assert "NET/AWS Libfabric/0" in line.measured and "GPUDirect RDMA off" in line.measured
