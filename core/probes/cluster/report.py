"""The "Cluster" section of a cluster run's report: the nodes side by side, what crossed the network
between them.

A cluster run's row holds only what needs several nodes (core.probes.cluster.evidence), so its
report shows exactly that: one row per node with the facts they must agree on (a cell that differs
from another node's is marked), the transport NCCL chose between the nodes, the busbw of the
collectives across them against the figure the scorecard grades with, the rendezvous, and the nodes
that failed. Each node's own figures stay in that node's own report.
"""

from __future__ import annotations

from collections import Counter

from core.document import BarChart, Block, Bullets, KeyFigure, Paragraph, Section, Table
from core.probes.cluster.evidence import ClusterEvidence, NcclTransport, NodeReport
from core.probes.samples import CollectiveResult
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.cluster import node_values
from core.probes.scorecard.cluster_network import cluster_transport, rails
from core.probes.scorecard.common import plural, size_label, sweep_cut
from core.probes.scorecard.expectations import busbw_at_largest

DIFFERS = " ≠"  # appended to a cell whose value another node does not share
NODE_COLUMNS = [("driver", "driver"), ("cuda", "CUDA"), ("nccl", "NCCL"), ("kernel", "kernel")]


def _differing(cluster: ClusterEvidence, field: str) -> bool:
    reported = {v for v in node_values(cluster, field).values() if v is not None}
    return len(reported) > 1


def _cell(cluster: ClusterEvidence, node: NodeReport, field: str) -> str:
    value = node_values(cluster, field).get(node.node)
    if value is None:
        return "—"
    return value + (DIFFERS if _differing(cluster, field) else "")


def _gpus(cluster: ClusterEvidence, node: NodeReport) -> str:
    model, count = node.facts.gpu_model, node.facts.gpu_count
    if model is None and count is None:
        return "—"
    # looked for and none found (a CPU-only node), not a model left unreported
    if model is None and count == 0:
        return "none" + (DIFFERS if _differing(cluster, "gpu_count") else "")
    text = f"{count if count is not None else '?'}× {model or 'model not reported'}"
    return text + (
        DIFFERS if _differing(cluster, "gpu_model") or _differing(cluster, "gpu_count") else ""
    )


def nodes_table(cluster: ClusterEvidence) -> Table:
    """One row per node: its state and own verdict, then what the nodes must agree on."""
    header = ["node", "state", "verdict", "GPUs", *(label for _, label in NODE_COLUMNS)]
    rows = [
        [
            n.node,
            n.state,
            n.verdict or "—",
            _gpus(cluster, n),
            *(_cell(cluster, n, f) for f, _ in NODE_COLUMNS),
        ]
        for n in cluster.nodes
    ]
    return Table(header=header, rows=rows, widths=[1.4, 1.1, 1.1, 1.4, 0.8, 0.6, 0.6, 1.4])


def transport_line(transport: NcclTransport | None) -> str:
    """The transport NCCL chose between the nodes, in one sentence."""
    if transport is None or transport.network is None:
        return (
            "NCCL's transport between the nodes was not reported (no NCCL_DEBUG=INFO lines were "
            "captured)."
        )
    net = (
        "TCP sockets"
        if transport.network == "Socket"
        else "NET/IB"
        if transport.network == "IB"
        else f"the {transport.network} net plugin"
    )
    parts = [f"Between the nodes NCCL used {net}"]
    if transport.devices:
        parts.append(f" on {', '.join(transport.devices)}")
    gdr = {True: "on", False: "off (GDR 0)", None: None}[transport.gdr]
    if gdr:
        parts.append(f"; GPUDirect RDMA {gdr}")
    if transport.oob_interface:
        parts.append(f"; bootstrap over {transport.oob_interface}")
    if transport.nccl_version:
        parts.append(f" (NCCL {transport.nccl_version})")
    sentence = "".join(parts) + "."
    if transport.network == "Socket":
        sentence += f" In plain words: {T.TCP_ONLY_VERDICT}."
    return sentence


def transport_paragraph(cluster: ClusterEvidence) -> str:
    """The transport sentence for this run: NCCL's choice, or, when every run between the nodes was
    gloo (nodes without GPUs) and no nccl-tests ran, that NCCL had no transport to choose — not that
    its lines went missing."""
    transport = cluster_transport(cluster)
    runs = [r for r in (cluster.distributed, cluster.allreduce) if r is not None]
    if (
        (transport is None or transport.network is None)
        and runs
        and cluster.nccl_tests is None
        and all(r.backend == "gloo" for r in runs)
    ):
        return (
            "Between the nodes torch ran gloo over TCP (no GPU on the nodes), so NCCL did not run "
            "and chose no transport; on GPU nodes this line names NCCL's choice (NET/IB or "
            "NET/Socket)."
        )
    return transport_line(transport)


def _reference(cluster: ClusterEvidence) -> float | None:
    found = rails(cluster, cluster_transport(cluster))
    return None if found is None else found[0] * found[1] / 8 * T.NCCL_PER_NIC_EFFICIENCY


def _chart(coll: CollectiveResult, title: str, reference: float | None) -> BarChart | None:
    from core.probes.output.charts import busbw_chart

    chart = busbw_chart(coll, reference)
    return None if chart is None else chart.model_copy(update={"title": title})


def _rendezvous(cluster: ClusterEvidence) -> str | None:
    rdzv = cluster.rendezvous
    if rdzv is None:
        return None
    where = f"{rdzv.host}:{rdzv.port}"
    reached = [n for n, ok in rdzv.reached_from.items() if ok]
    missed = [
        f"{n} ({rdzv.errors[n].rstrip('.')})" if n in rdzv.errors else n
        for n, ok in rdzv.reached_from.items()
        if not ok
    ]
    text = f"Rendezvous {where}: reached from {', '.join(reached) or 'no node'}"
    return text + (f"; not from {', '.join(missed)}." if missed else ".")


def cluster_gpus(cluster: ClusterEvidence) -> str:
    """'2 nodes × 8× NVIDIA H100 80GB HBM3', or each kind of node when they differ; 'not reported'
    without any."""
    kinds = Counter(
        f"{n.facts.gpu_count if n.facts.gpu_count is not None else '?'}× {n.facts.gpu_model}"
        for n in cluster.nodes
        if n.facts.gpu_model
    )
    if not kinds:
        return "not reported"
    return ", ".join(f"{plural(count, 'node')} × {kind}" for kind, count in kinds.most_common())


def cluster_key_figures(cluster: ClusterEvidence) -> list[KeyFigure]:
    """The nodes that finished and the busbw between them, for the report's key figures."""
    finished = len(cluster.nodes) - len(cluster.failed_nodes)
    figures = [KeyFigure(label="Nodes", value=f"{finished} of {len(cluster.nodes)} finished")]
    for coll, label in (
        (cluster.allreduce.collective if cluster.allreduce else None, "busbw between nodes"),
        (cluster.nccl_tests, "nccl-tests between nodes"),
    ):
        found = busbw_at_largest(coll) if coll is not None else None
        if found is not None:
            value, size = found
            at = f" at {size_label(size)}" if size else ""
            cut = sweep_cut(coll) if coll is not None else None
            partial = f" (partial: {cut}; not graded)" if cut else ""
            figures.append(
                KeyFigure(
                    label=label[0].upper() + label[1:], value=f"{value:,.1f} GB/s{at}{partial}"
                )
            )
    transport = cluster_transport(cluster)
    if transport is not None and transport.network:
        figures.append(KeyFigure(label="NCCL network", value=transport.network))
    return figures


def cluster_section(cluster: ClusterEvidence) -> Section:
    """The report's "Cluster" section for a cluster run's evidence."""
    intro = (
        f"{plural(len(cluster.nodes), 'node')} probed together"
        + (f" on Slurm allocation {cluster.slurm_job}" if cluster.slurm_job else "")
        + f"; each node's own figures are in its own report. A cell marked{DIFFERS} differs from "
        "another node's."
    )
    blocks: list[Block] = [Paragraph(text=intro)]
    if cluster.nodes:
        blocks.append(nodes_table(cluster))
    failed = cluster.failed_nodes
    if failed:
        lost = f"{plural(len(failed), 'node')} did not finish; the rest of the evidence is kept:"
        blocks.append(Paragraph(text=lost))
        blocks.append(Bullets(items=[f"{node}: {why}" for node, why in failed.items()]))
    blocks.append(Paragraph(text=transport_paragraph(cluster)))
    reference = _reference(cluster)
    for coll, title in (
        (
            cluster.allreduce.collective if cluster.allreduce else None,
            "All-reduce bus bandwidth between the nodes",
        ),
        (cluster.nccl_tests, "nccl-tests bus bandwidth between the nodes"),
    ):
        if coll is not None:
            backend = (
                cluster.allreduce.backend
                if cluster.allreduce and coll is cluster.allreduce.collective
                else "nccl"
            )
            cut = sweep_cut(coll)
            chart = _chart(
                coll,
                f"{title} (partial: {cut})" if cut else title,
                reference if backend == "nccl" else None,
            )
            if chart is not None:
                blocks.append(chart)
    if reference is not None:
        blocks.append(
            Paragraph(
                text=f"Expected: about {reference:,.0f} GB/s of ring busbw at large messages, the "
                f"NICs of a node × the per-NIC figure ({T.NCCL_INTER_SOURCE})."
            )
        )
    rendezvous = _rendezvous(cluster)
    if rendezvous:
        blocks.append(Paragraph(text=rendezvous))
    if cluster.ib_write_bw:
        blocks.append(
            Table(
                header=["client", "server", "HCA", "ib_write_bw"],
                rows=[
                    [
                        p.client,
                        p.server,
                        p.device or (p.result.device if p.result else None) or "—",
                        f"{p.result.best_avg_gbps:,.1f} Gb/s"
                        if p.result and p.result.best_avg_gbps is not None
                        else (p.error or "—"),
                    ]
                    for p in cluster.ib_write_bw
                ],
            )
        )
    if cluster.dcgm:
        blocks.append(
            Table(
                header=["node", "dcgmi diag", "not passed"],
                rows=[
                    [
                        d.node,
                        f"-r {d.level}",
                        d.error
                        or ", ".join(
                            f"{t}: {v}"
                            for t, v in d.results.items()
                            if not v.lower().startswith(("pass", "skip"))
                        )
                        or "—",
                    ]
                    for d in cluster.dcgm
                ],
            )
        )
    return Section(title="Cluster", blocks=blocks)


__all__ = [
    "DIFFERS",
    "cluster_gpus",
    "cluster_key_figures",
    "cluster_section",
    "nodes_table",
    "transport_line",
    "transport_paragraph",
]
