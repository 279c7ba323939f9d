"""What a probe report shows, independent of drawing: the verdict, the scorecard, charts and the raw
evidence.

It builds the same ``core.document.Report`` the plan PDF uses, so ``gui/pdf.py`` draws both with one
look. Every figure here is read from the run's evidence and scorecard; nothing is re-measured or
re-graded except when a run comes without a scorecard (then ``core.probes.scorecard.score`` grades
it).

This module decides what the report says first (its key figures) and the order of its sections; the
run it reads comes from core.probes.output.run_record, the evidence's tables from
core.probes.output.evidence_tables, the charts from core.probes.output.charts.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING

from core.catalog import Catalog, load_catalog
from core.document import Block, Bullets, KeyFigure, Paragraph, Report, Section, Table
from core.probes.cluster.report import cluster_gpus, cluster_key_figures, cluster_section
from core.probes.evidence import CheckStatus, ProbeEvidence, Scorecard
from core.probes.output.charts import busbw_chart, matmul_chart, metric_charts, storage_charts
from core.probes.output.evidence_tables import (
    References,
    appendix,
    findings,
    inventory_tables,
    scorecard_table,
)
from core.probes.output.run_record import ProbeRunRecord, record_from_stored
from core.probes.output.step_report import step_section
from core.probes.scorecard import busbw_at_largest, expected_busbw, size_label
from core.probes.scorecard.common import flops_span, sweep_cut
from core.units import fmt_bytes

if TYPE_CHECKING:
    from core.probes.history.records import StoredRun


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _when(started: dt.datetime | str | float | None) -> str:
    """The run's start as 'YYYY-MM-DD HH:MM UTC' (epoch seconds, ISO text or a datetime)."""
    if started is None or started == "":
        return dt.date.today().isoformat()
    if isinstance(started, int | float):
        moment = dt.datetime.fromtimestamp(float(started), tz=dt.UTC)
    elif isinstance(started, str):
        try:
            moment = dt.datetime.fromisoformat(started.replace("Z", "+00:00"))
        except ValueError:
            return started
    else:
        moment = started
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M")


def _gpu_label(evidence: ProbeEvidence) -> str | None:
    for report in (evidence.inventory.nvidia if evidence.inventory else None, evidence.health):
        if report is not None and report.gpus:
            names = Counter(g.name or "unnamed GPU" for g in report.gpus)
            return ", ".join(f"{n}× {name}" for name, n in names.most_common())
    return None


# --------------------------------------------------------------------------- key figures


def key_figures(
    evidence: ProbeEvidence, card: Scorecard, host: str, status: str | None = None
) -> list[KeyFigure]:
    counts = Counter(c.status for c in card.checks)
    tally = " · ".join(
        f"{counts[s]} {s.value}"
        for s in (CheckStatus.passed, CheckStatus.warn, CheckStatus.fail, CheckStatus.info)
        if counts[s]
    )
    verdict = card.verdict.value if card.verdict is not None else "no verdict"
    gpus = (
        cluster_gpus(evidence.cluster)
        if evidence.cluster is not None
        else _gpu_label(evidence) or "no NVIDIA GPU found"
    )
    figures = [
        KeyFigure(label="Verdict", value=verdict),
        KeyFigure(label="Host", value=host),
        KeyFigure(label="GPUs", value=gpus),
        KeyFigure(label="Checks", value=tally or "none"),
    ]
    if evidence.cluster is not None:
        figures += cluster_key_figures(evidence.cluster)
    if status not in (None, "completed"):
        figures.insert(1, KeyFigure(label="Run", value=str(status)))
    c = evidence.compute
    if c is not None and c.tflops_per_device:
        values = c.tflops_per_device
        detail = f"({c.dtype})" if len(values) > 1 else f"({c.dtype}, {c.device})"
        figures.append(
            KeyFigure(label="Matmul", value=f"{flops_span(values, mean=False)} {detail}")
        )
    if evidence.collectives is not None:
        found = busbw_at_largest(evidence.collectives)
        if found is not None:
            value, size = found
            at = f" at {size_label(size)}" if size else ""
            cut = sweep_cut(evidence.collectives)
            figures.append(
                KeyFigure(
                    label="All-reduce busbw",
                    value=f"{value:,.1f} GB/s{at} ({evidence.collectives.nranks or '?'} ranks)"
                    + (f"; partial: {cut}; not graded" if cut else ""),
                )
            )
    reads = [s for s in evidence.storage if s.seq_read_bytes_per_s]
    if reads:
        best = max(reads, key=lambda s: s.seq_read_bytes_per_s or 0.0)
        figures.append(
            KeyFigure(
                label="Storage read",
                value=f"{fmt_bytes(best.seq_read_bytes_per_s or 0)}/s at {best.path}",
            )
        )
    if evidence.burn is not None and evidence.burn.max_temp_c is not None:
        figures.append(
            KeyFigure(
                label="Burn",
                value=f"max {evidence.burn.max_temp_c:.0f} °C over "
                f"{_duration(evidence.burn.duration_s)}",
            )
        )
    return figures


# --------------------------------------------------------------------------- the report


def build_probe_report(run: ProbeRunRecord | StoredRun, catalog: Catalog | None = None) -> Report:
    """The probe report's content in reading order: verdict, scorecard, charts, inventory, evidence.

    A run without a scorecard (e.g. interrupted before grading) is graded here from its evidence.
    """
    record = run if isinstance(run, ProbeRunRecord) else record_from_stored(run)
    catalog = catalog or load_catalog()
    evidence, samples, warnings, host = (
        record.evidence,
        record.samples,
        record.warnings,
        record.host,
    )
    card = record.card(catalog)
    refs = References()
    sections = [
        Section(
            title="Scorecard",
            blocks=[
                Paragraph(
                    text="Each check compares a measured figure with a published reference; the "
                    "source column names it (numbers refer to the Sources list at the end). "
                    "FAIL makes the box NOT READY, WARN asks for a look, INFO is not graded."
                ),
                scorecard_table(card, refs),
            ],
        )
    ]
    found = findings(card)
    if found is not None:
        sections.append(Section(title="Findings", blocks=[found]))
    if evidence.partial:
        sections.append(
            Section(
                title="Partial evidence",
                blocks=[
                    Paragraph(
                        text="These probes stopped before their end (the connection dropped, or a "
                        "benchmark was cut short); what they had measured is kept and shown "
                        "above, but it is not the whole test, and a collective sweep that did "
                        "not reach every message size is not graded."
                    ),
                    Bullets(items=[f"{name}: {what}" for name, what in evidence.partial.items()]),
                ],
            )
        )
    if evidence.cluster is not None:
        sections.append(cluster_section(evidence.cluster))
    network: list[Block] = []
    if evidence.collectives is not None:
        exp = expected_busbw(evidence, catalog)
        chart = busbw_chart(evidence.collectives, exp.reference if exp else None)
        cut = sweep_cut(evidence.collectives)
        if chart is not None:
            network.append(
                chart.model_copy(update={"title": f"{chart.title} (partial: {cut})"})
                if cut
                else chart
            )
        if exp is not None:
            network.append(
                Paragraph(
                    text=refs.cite(
                        f"Expected for {exp.label}: {exp.reference:,.0f}–{exp.high:,.0f} GB/s "
                        f"busbw at large messages ({exp.source}). busbw is the bandwidth each "
                        "GPU's bottleneck link carries (algbw × 2(n−1)/n); "
                        "it is what to compare with a link's one-way speed."
                    )
                )
            )
    if network:
        sections.append(Section(title="Network", blocks=network))
    compute = matmul_chart(evidence, catalog)
    if compute is not None:
        sections.append(Section(title="Compute", blocks=[compute]))
    if evidence.step is not None:
        sections.append(step_section(evidence.step))
    storage: list[Block] = list(storage_charts(evidence))
    if evidence.storage:
        storage.append(
            Table(
                header=[
                    "role",
                    "path",
                    "fs",
                    "tool",
                    "seq read",
                    "seq write",
                    "rand IOPS",
                    "p99 ms",
                    "files/s",
                ],
                widths=[0.8, 1.6, 0.7, 0.5, 1, 1, 0.9, 0.7, 0.8],
                rows=[
                    [
                        s.role,
                        s.path,
                        s.filesystem or "?",
                        s.tool,
                        f"{fmt_bytes(s.seq_read_bytes_per_s)}/s" if s.seq_read_bytes_per_s else "—",
                        f"{fmt_bytes(s.seq_write_bytes_per_s)}/s"
                        if s.seq_write_bytes_per_s
                        else "—",
                        f"{s.rand_read_iops:,.0f}" if s.rand_read_iops else "—",
                        f"{s.rand_read_p99_ms:.2f}" if s.rand_read_p99_ms is not None else "—",
                        f"{s.small_file_ops_per_s:,.0f}" if s.small_file_ops_per_s else "—",
                    ]
                    for s in evidence.storage
                ],
            )
        )
        skipped = [f"{s.path}: {s.skipped_reason}" for s in evidence.storage if s.skipped_reason]
        if skipped:
            storage.append(Bullets(items=skipped))
    if storage:
        sections.append(Section(title="Storage", blocks=storage))
    charts = metric_charts(samples or [])
    if charts:
        sections.append(Section(title="GPU metrics over time", blocks=list(charts)))
    # a cluster run's row has no inventory of its own: each node's report has it
    if evidence.cluster is None:
        sections.append(Section(title="Inventory", blocks=inventory_tables(evidence)))
    sections.append(Section(title="Appendix: evidence", blocks=appendix(evidence, warnings)))
    if refs.urls:
        sections.append(Section(title="Sources", blocks=[refs.block()]))
    kind = "cluster" if evidence.cluster is not None else "node"
    return Report(
        title=f"GPU {kind} readiness: {host}",
        date=_when(record.started),
        conclusion=card.summary,
        key_figures=key_figures(evidence, card, host, record.status),
        sections=sections,
    )


__all__ = ["build_probe_report", "key_figures"]
