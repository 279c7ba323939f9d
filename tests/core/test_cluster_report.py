"""The report's "Cluster" section, built from a cluster run's evidence made of fixture-derived
values (SOURCES #24: the 2-node H100 RoCE capture, its NCCL lines and its sweep; a third node
lost)."""

from __future__ import annotations

from pathlib import Path

from core.document import BarChart, Bullets, Paragraph, Section, Table
from core.probes.cluster.evidence import (
    ClusterEvidence,
    InterNodeRun,
    NodeFacts,
    NodeReport,
    Rendezvous,
)
from core.probes.cluster.report import DIFFERS, cluster_section
from core.probes.evidence import ProbeEvidence
from core.probes.output.report import build_probe_report
from core.probes.output.run_record import ProbeRunRecord
from core.probes.parsers import parse_nccl_debug, parse_nccl_tests
from core.probes.samples import IbPort

LOG = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "probes"
    / "nccl_allreduce_2node_1xH100_each_roce400_GDR0_low_busbw.log"
).read_text(encoding="utf-8")
HOSTS = ["MOC-R4PCC04U37", "MOC-R4PCC04U35"]  # the log's '# Rank' lines


def facts(kernel: str) -> NodeFacts:
    # 'NVIDIA H100 80GB HBM3' and one GPU per node from the '# Rank' lines; NCCL 2.26.2 from 'NCCL
    # version'; the RoCE port NCCL used (NCCL_IB_HCA=mlx5_5) at the 400 Gb/s the source states.
    # Driver and kernel are not in the log: values are set here to exercise the marking of a
    # difference.
    return NodeFacts(
        gpu_model="NVIDIA H100 80GB HBM3",
        gpu_count=1,
        driver="550.90.07",
        cuda="12.4",
        nccl="2.26.2",
        kernel=kernel,
        hca_ports=[
            IbPort(device="mlx5_5", port=1, state="Active", rate_gbps=400.0, link_layer="Ethernet")
        ],
    )


def evidence() -> ClusterEvidence:
    coll = parse_nccl_tests(LOG).value
    assert coll is not None
    return ClusterEvidence(
        nodes=[
            NodeReport(
                node=HOSTS[0],
                run_id=11,
                state="completed",
                verdict="READY",
                facts=facts("5.14.0-427"),
            ),
            NodeReport(
                node=HOSTS[1],
                run_id=12,
                state="completed",
                verdict="READY",
                facts=facts("5.14.0-503"),
            ),
            NodeReport(node="moc-spare", state="unreachable", error="moc-spare:22 timed out."),
        ],
        rendezvous=Rendezvous(
            host="169.254.103.56",
            port=29500,
            reached_from={HOSTS[1]: True, "moc-spare": False},
            errors={"moc-spare": "no route to host"},
        ),
        allreduce=InterNodeRun(
            backend="nccl",
            nnodes=2,
            nproc_per_node=1,
            world_size=2,
            nodes=HOSTS,
            collective=coll,
            transport=parse_nccl_debug(LOG).value,
        ),
        slurm_job="4711",
    )


def blocks(section: Section, kind: type) -> list:
    return [b for b in section.blocks if isinstance(b, kind)]


def test_nodes_table_marks_the_cell_that_differs():
    section = cluster_section(evidence())
    assert section.title == "Cluster"
    table = blocks(section, Table)[0]
    assert table.header == ["node", "state", "verdict", "GPUs", "driver", "CUDA", "NCCL", "kernel"]
    first, second, lost = table.rows
    assert first[:4] == [HOSTS[0], "completed", "READY", "1× NVIDIA H100 80GB HBM3"]
    assert first[4:7] == ["550.90.07", "12.4", "2.26.2"]  # the same on both nodes: not marked
    assert first[7] == f"5.14.0-427{DIFFERS}" and second[7] == f"5.14.0-503{DIFFERS}"
    assert lost[:3] == ["moc-spare", "unreachable", "—"] and lost[4] == "—"


def test_transport_chart_rendezvous_and_failed_nodes():
    section = cluster_section(evidence())
    text = " ".join(p.text for p in blocks(section, Paragraph))
    assert "Slurm allocation 4711" in text
    assert (
        "Between the nodes NCCL used NET/IB on mlx5_5:1/RoCE; GPUDirect RDMA off (GDR 0); "
        "bootstrap over eno7np0 (NCCL 2.26.2+cuda)."
    ) in text
    assert (
        "Rendezvous 169.254.103.56:29500: reached from MOC-R4PCC04U35; not from moc-spare (no "
        "route to host)." in text
    )
    assert "about 48 GB/s" in text  # one 400 Gb/s NIC x ~48 GB/s (nccl-tests#119)
    assert blocks(section, Bullets)[0].items == ["moc-spare: moc-spare:22 timed out."]
    chart = blocks(section, BarChart)[0]
    assert chart.title == "All-reduce bus bandwidth between the nodes"
    assert chart.categories[-1] == "25 GiB" and abs(chart.series[0].values[-1] - 15.0) < 1e-9
    assert chart.markers is not None and abs((chart.markers[0] or 0) - 48.0) < 1e-9


def test_socket_transport_says_the_plain_words():
    ev = evidence()
    assert ev.allreduce is not None and ev.allreduce.transport is not None
    socket = ev.allreduce.transport.model_copy(
        update={"network": "Socket", "devices": ["eth0"], "gdr": None}
    )
    ev = ev.model_copy(update={"allreduce": ev.allreduce.model_copy(update={"transport": socket})})
    text = " ".join(p.text for p in blocks(cluster_section(ev), Paragraph))
    assert "NCCL used TCP sockets on eth0" in text
    assert (
        "nodes talk over plain TCP sockets: multi-node training will be communication-bound" in text
    )


def test_the_probe_report_of_a_cluster_run_has_the_section():
    report = build_probe_report(
        ProbeRunRecord(
            host="moc-pair", evidence=ProbeEvidence(cluster=evidence()), status="completed"
        )
    )
    assert report.title == "GPU cluster readiness: moc-pair"
    titles = [s.title for s in report.sections]
    assert titles.index("Scorecard") < titles.index("Cluster")
    assert report.conclusion.startswith("NOT READY")  # a lost node, 15 of ~48 GB/s
    figures = {f.label: f.value for f in report.key_figures}
    assert figures["GPUs"] == "2 nodes × 1× NVIDIA H100 80GB HBM3"
    assert figures["Nodes"] == "2 of 3 finished"
    assert (
        figures["Busbw between nodes"] == "15.0 GB/s at 25 GiB" and figures["NCCL network"] == "IB"
    )
    single = build_probe_report(ProbeRunRecord(host="box", evidence=ProbeEvidence()))
    assert (
        "Cluster" not in [s.title for s in single.sections]
        and single.title == "GPU node readiness: box"
    )


def test_nodes_without_gpus_on_gloo_say_so_and_not_that_nccl_lines_went_missing():
    ev = evidence()
    assert ev.allreduce is not None
    # what node_facts keeps from a GPU-less node's inventory
    cpu_only = NodeFacts(gpu_count=0, kernel="6.18.44")
    gloo = ev.allreduce.model_copy(update={"backend": "gloo", "transport": None})
    ev = ev.model_copy(
        update={
            "nodes": [n.model_copy(update={"facts": cpu_only}) for n in ev.nodes[:2]],
            "allreduce": gloo,
            "distributed": gloo.model_copy(update={"collective": None}),
        }
    )
    section = cluster_section(ev)
    assert [row[3] for row in blocks(section, Table)[0].rows] == ["none", "none"]
    text = " ".join(p.text for p in blocks(section, Paragraph))
    assert "torch ran gloo over TCP (no GPU on the nodes), so NCCL did not run" in text
    assert "no NCCL_DEBUG=INFO lines were captured" not in text
    # NCCL ran: lines missing
    ev = ev.model_copy(update={"allreduce": gloo.model_copy(update={"backend": "nccl"})})
    assert "no NCCL_DEBUG=INFO lines were captured" in " ".join(
        p.text for p in blocks(cluster_section(ev), Paragraph)
    )


def test_a_cluster_report_leaves_the_inventory_to_each_nodes_own_report():
    report = build_probe_report(
        ProbeRunRecord(
            host="moc-pair", evidence=ProbeEvidence(cluster=evidence()), status="completed"
        )
    )
    assert "Inventory" not in [s.title for s in report.sections]
    single = build_probe_report(ProbeRunRecord(host="box", evidence=ProbeEvidence()))
    assert "Inventory" in [s.title for s in single.sections]


def test_a_sweep_cut_before_its_last_sizes_is_marked_partial_in_the_report_and_never_graded():
    """The log cut before its 11th row (21 GiB): 10 of the 13 sizes its header announces (1 GiB,
    then 2 GiB more each time, up to 25 GiB), the largest 19 GiB at 15.0 GB/s (read by hand from the
    log)."""
    lines = LOG.split("\n")
    eleventh = next(
        i for i, line in enumerate(lines) if line.strip().startswith(str(21 << 30) + " ")
    )
    cut = parse_nccl_tests("\n".join(lines[:eleventh])).value
    assert cut is not None
    ev = evidence()
    assert ev.allreduce is not None
    ev = ev.model_copy(update={"allreduce": ev.allreduce.model_copy(update={"collective": cut})})
    report = build_probe_report(
        ProbeRunRecord(host="moc-pair", evidence=ProbeEvidence(cluster=ev), status="incomplete")
    )
    said = "10 of 13 message sizes, up to 19 GiB (21 GiB, 23 GiB and 25 GiB not reached)"
    figures = {f.label: f.value for f in report.key_figures}
    assert figures["Busbw between nodes"] == f"15.0 GB/s at 19 GiB (partial: {said}; not graded)"
    chart = blocks(next(s for s in report.sections if s.title == "Cluster"), BarChart)[0]
    assert chart.title == f"All-reduce bus bandwidth between the nodes (partial: {said})"
    card = next(s for s in report.sections if s.title == "Scorecard")
    rows = [row for table in blocks(card, Table) for row in table.rows]
    line = next(row for row in rows if "All-reduce busbw between nodes" in " ".join(map(str, row)))
    assert line[1:4] == [
        "INFO",
        "partial: 15.0 GB/s at 19 GiB",
        "every message size of the sweep measured",
    ]
