"""What a probe report shows, independent of drawing: the verdict, the scorecard, charts and the raw evidence.

It builds the same ``core.document.Report`` the plan PDF uses, so ``gui/pdf.py`` draws both with one look. Every
figure here is read from the run's evidence and scorecard; nothing is re-measured or re-graded except when a run
comes without a scorecard (then ``core.probes.scorecard.score`` grades it).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from core.catalog import Catalog, load_catalog
from core.document import Block, Bullets, KeyFigure, Paragraph, Report, Section, Table
from core.probes.cluster.report import cluster_gpus, cluster_key_figures, cluster_section
from core.probes.evidence import CheckStatus, ProbeEvidence, ProbeOutcome, Scorecard
from core.probes.output.charts import busbw_chart, matmul_chart, metric_charts, storage_charts
from core.probes.output.step_report import step_section
from core.probes.parsers._common import clock_reasons_from_mask
from core.probes.samples import CollectiveResult, GpuMetric
from core.probes.scorecard import (
    busbw_at_largest,
    expected_busbw,
    explain_no_verdict,
    score,
    size_label,
)
from core.probes.scorecard.common import flops_span, sweep_cut
from core.probes.scorecard.outcomes import account_for_outcomes
from core.units import fmt_bytes, plural
from core.validation import validation_message

if TYPE_CHECKING:
    from core.probes.history.records import StoredRun
    from core.probes.history.sample_table import SampleTable

# Reports and JSON exports keep at most this many samples per GPU (evenly spaced): charts draw MAX_POINTS per
# line, and an hour at 10 Hz × 8 GPUs would otherwise become 288,000 objects.
JSON_SAMPLES_PER_GPU = 2000
STATUS_ORDER = {CheckStatus.fail: 0, CheckStatus.warn: 1, CheckStatus.passed: 2, CheckStatus.info: 3}
_URL_IN_PARENS = re.compile(r"\s*\((https?://[^\s)]+)\)")
_URL = re.compile(r"https?://[^\s);,]+")


class References:
    """Numbered citations: long URLs leave the tables for a 'Sources' list, so a row stays a few lines tall."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def number(self, url: str) -> int:
        if url not in self.urls:
            self.urls.append(url)
        return self.urls.index(url) + 1

    def cite(self, text: str) -> str:
        """'Azure NHC (https://…)' → 'Azure NHC [3]'."""
        text = _URL_IN_PARENS.sub(lambda m: f" [{self.number(m.group(1))}]", text)
        return _URL.sub(lambda m: f"[{self.number(m.group(0))}]", text)

    def block(self) -> Bullets:
        return Bullets(items=[f"[{i}] {url}" for i, url in enumerate(self.urls, start=1)])


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


# --------------------------------------------------------------------------- a run, from the store or a JSON file


class ProbeRunRecord(BaseModel):
    """What a report needs from a run, whether it comes from the probe store or a `tuneplan probe --json` file."""

    host: str = "unknown host"
    started: dt.datetime | float | str | None = None
    evidence: ProbeEvidence = Field(default_factory=ProbeEvidence)
    scorecard: Scorecard | None = None
    samples: list[GpuMetric] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    status: str | None = Field(None, description="how the run ended: completed, incomplete, interrupted, ...")
    probes: list[str] = Field(default_factory=list, description="the probes the run planned")
    outcomes: list[ProbeOutcome] = Field(default_factory=list)

    def card(self, catalog: Catalog | None = None) -> Scorecard:
        """The run's scorecard (graded here when it has none: a run interrupted before grading), held to what
        became of its planned probes: lost ones are listed as not measured, the verdict is INCOMPLETE at best."""
        card = self.scorecard or score(self.evidence, catalog or load_catalog(), samples=self.samples)
        card = account_for_outcomes(card, self.probes, self.outcomes, self.status, self.evidence)
        return explain_no_verdict(card, self.outcomes, self.status)


def samples_from_table(table: SampleTable, per_gpu: int | None = None) -> list[GpuMetric]:
    """The store's sample columns as GpuMetric objects (NaN → None), optionally thinned per GPU."""
    def num(column: Any, i: int) -> float | None:
        v = float(column[i])
        return None if math.isnan(v) else v

    rows: list[int] = list(range(len(table)))
    if per_gpu is not None:
        import numpy as np

        picked = []
        for index in table.gpus():
            idx = np.flatnonzero(table.gpu == index)
            if len(idx) > per_gpu:
                idx = idx[np.unique(np.linspace(0, len(idx) - 1, per_gpu).round().astype(int))]
            picked.append(idx)
        rows = sorted(int(i) for i in np.concatenate(picked)) if picked else []
    out = []
    for i in rows:
        gpu, t = num(table.gpu, i), num(table.t, i)
        if gpu is None or t is None:
            continue  # a row without GPU index or time cannot be placed on a chart
        mask = num(table.throttle, i)
        used, total = num(table.mem_used, i), num(table.mem_total, i)
        out.append(GpuMetric(
            t=t, gpu=int(gpu), util_pct=num(table.util, i), temp_c=num(table.temp, i), power_w=num(table.power, i),
            sm_clock_mhz=num(table.sm_clock, i), mem_clock_mhz=num(table.mem_clock, i),
            mem_used_bytes=int(used) if used is not None else None,
            mem_total_bytes=int(total) if total is not None else None,
            clocks_event_mask=int(mask) if mask is not None else None,
            clocks_event_reasons=clock_reasons_from_mask(int(mask)) if mask is not None else []))
    return out


def record_from_stored(run: StoredRun) -> ProbeRunRecord:
    """A stored run as a report record: its evidence, scorecard, samples and the probes' warnings."""
    warnings = [f"{o.name}: {w}" for o in run.outcomes for w in o.warnings]
    warnings += [f"{o.name}: {o.error}" for o in run.outcomes if o.error]
    card = explain_no_verdict(run.scorecard, run.outcomes, run.summary.status) if run.scorecard else None
    return ProbeRunRecord(host=run.summary.host, started=run.summary.started,
                          evidence=run.evidence or ProbeEvidence(), scorecard=card,
                          samples=samples_from_table(run.samples, JSON_SAMPLES_PER_GPU), warnings=warnings,
                          status=run.summary.status, probes=run.summary.probes, outcomes=run.outcomes)


def record_from_json(data: Any) -> ProbeRunRecord:
    """A run JSON (``output.run_json``: `tuneplan probe --json` or the export); ValueError names the bad field."""
    if not isinstance(data, dict):
        raise ValueError("a probe run JSON must be an object with an 'evidence' key")
    if "evidence" not in data:
        raise ValueError(f"the JSON has no 'evidence' key (it has: {', '.join(sorted(data)) or 'nothing'})")
    host = data.get("host")
    if isinstance(host, dict):
        host = host.get("name") or host.get("target") or host.get("hostname")
    raw_summary = data.get("summary")
    summary: dict[str, Any] = raw_summary if isinstance(raw_summary, dict) else {}
    started = data.get("started", summary.get("started"))
    warnings = [str(w) for w in data.get("warnings") or [] if w]
    for outcome in data.get("outcomes") or []:
        if isinstance(outcome, dict):
            warnings += [f"{outcome.get('name', 'probe')}: {w}" for w in outcome.get("warnings") or []]
    outcomes = [o for o in data.get("outcomes") or [] if isinstance(o, dict)]
    try:
        return ProbeRunRecord(host=str(host or summary.get("host") or "unknown host"), started=started,
                              evidence=data["evidence"] or {}, scorecard=data.get("scorecard"),
                              samples=data.get("samples") or [], warnings=warnings,
                              status=data.get("status", summary.get("status")),
                              probes=summary.get("probes") or [], outcomes=outcomes)
    except ValidationError as exc:
        raise ValueError(validation_message(exc)) from exc


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


def key_figures(evidence: ProbeEvidence, card: Scorecard, host: str, status: str | None = None) -> list[KeyFigure]:
    counts = Counter(c.status for c in card.checks)
    tally = " · ".join(f"{counts[s]} {s.value}" for s in (CheckStatus.passed, CheckStatus.warn, CheckStatus.fail,
                                                          CheckStatus.info) if counts[s])
    verdict = card.verdict.value if card.verdict is not None else "no verdict"
    gpus = cluster_gpus(evidence.cluster) if evidence.cluster is not None else \
        _gpu_label(evidence) or "no NVIDIA GPU found"
    figures = [KeyFigure(label="Verdict", value=verdict), KeyFigure(label="Host", value=host),
               KeyFigure(label="GPUs", value=gpus), KeyFigure(label="Checks", value=tally or "none")]
    if evidence.cluster is not None:
        figures += cluster_key_figures(evidence.cluster)
    if status not in (None, "completed"):
        figures.insert(1, KeyFigure(label="Run", value=str(status)))
    c = evidence.compute
    if c is not None and c.tflops_per_device:
        values = c.tflops_per_device
        detail = f"({c.dtype})" if len(values) > 1 else f"({c.dtype}, {c.device})"
        figures.append(KeyFigure(label="Matmul", value=f"{flops_span(values, mean=False)} {detail}"))
    if evidence.collectives is not None:
        found = busbw_at_largest(evidence.collectives)
        if found is not None:
            value, size = found
            at = f" at {size_label(size)}" if size else ""
            cut = sweep_cut(evidence.collectives)
            figures.append(KeyFigure(label="All-reduce busbw",
                                     value=f"{value:,.1f} GB/s{at} ({evidence.collectives.nranks or '?'} ranks)"
                                     + (f"; partial: {cut}; not graded" if cut else "")))
    reads = [s for s in evidence.storage if s.seq_read_bytes_per_s]
    if reads:
        best = max(reads, key=lambda s: s.seq_read_bytes_per_s or 0.0)
        figures.append(KeyFigure(label="Storage read",
                                 value=f"{fmt_bytes(best.seq_read_bytes_per_s or 0)}/s at {best.path}"))
    if evidence.burn is not None and evidence.burn.max_temp_c is not None:
        figures.append(KeyFigure(label="Burn", value=f"max {evidence.burn.max_temp_c:.0f} °C over "
                                                     f"{_duration(evidence.burn.duration_s)}"))
    return figures


# --------------------------------------------------------------------------- tables


def scorecard_table(card: Scorecard, refs: References | None = None) -> Table:
    """One row per check, failures first; sources as [n] citations when ``refs`` collects the URLs."""
    checks = sorted(card.checks, key=lambda c: STATUS_ORDER[c.status])
    cite = refs.cite if refs is not None else str
    return Table(header=["check", "status", "measured", "expected", "source"], widths=[1.5, 0.75, 2.4, 2.4, 1.7],
                 rows=[[c.name, c.status.value, c.measured, c.expected, cite(c.source)] for c in checks])


def findings(card: Scorecard) -> Bullets | None:
    items = [f"{c.status.value} — {c.name}: {c.reason}." for c in sorted(card.checks, key=lambda c:
                                                                          STATUS_ORDER[c.status])
             if c.status in (CheckStatus.fail, CheckStatus.warn)]
    return Bullets(items=items) if items else None


def inventory_tables(evidence: ProbeEvidence) -> list[Block]:
    inv = evidence.inventory
    if inv is None:
        return [Paragraph(text="The inventory probe did not run.")]
    nv = inv.nvidia
    rows: list[tuple[str, str | None]] = [
        ("hostname", inv.hostname), ("OS", inv.os), ("kernel", inv.kernel),
        ("CPU", f"{inv.cpu_model or '?'} ({inv.cpu_cores} cores)" if inv.cpu_cores else inv.cpu_model),
        ("memory", fmt_bytes(inv.ram_bytes) if inv.ram_bytes else None), ("virtualisation", inv.virtualization),
        ("Python / torch", " / ".join(v for v in (inv.python, inv.torch) if v) or None),
        ("NVIDIA driver / CUDA", f"{nv.driver_version or '?'} / {nv.cuda_version or '?'}" if nv else
         "no NVIDIA GPU found"),
    ]
    blocks: list[Block] = [Table(header=["property", "value"], widths=[1, 3],
                                 rows=[[k, v] for k, v in rows if v])]
    if nv is not None and nv.gpus:
        blocks.append(Table(
            header=["GPU", "model", "memory", "PCIe now / max", "MIG", "ECC", "persist.", "UUID"],
            widths=[0.4, 2, 0.9, 1.1, 0.7, 0.7, 0.6, 2.4],
            rows=[[str(g.index), g.name or "?", fmt_bytes(g.memory_total_bytes) if g.memory_total_bytes else "?",
                   f"Gen{g.pcie_gen_current} x{g.pcie_width_current} / Gen{g.pcie_gen_max} x{g.pcie_width_max}"
                   if g.pcie_gen_current else "?", g.mig_mode or "—", g.ecc_mode or "—",
                   {True: "on", False: "off", None: "—"}[g.persistence_mode], g.uuid or "—"] for g in nv.gpus]))
    if inv.filesystems:
        first = ["mount", "type", "size", "free"]
        seen = {k for fs in inv.filesystems for k in fs}
        keys = [k for k in first if k in seen] + sorted(seen - set(first))
        blocks.append(Table(header=keys, rows=[[fs_cell(k, fs.get(k, "")) for k in keys] for fs in inv.filesystems]))
    if inv.infiniband is not None and inv.infiniband.ports:
        blocks.append(Table(header=["device", "port", "state", "physical", "rate Gb/s", "link layer", "CA"],
                            rows=[[p.device, str(p.port), p.state or "?", p.phys_state or "?",
                                   f"{p.rate_gbps:g}" if p.rate_gbps else "?", p.link_layer or "?", p.ca_type or "?"]
                                  for p in inv.infiniband.ports]))
    return blocks


def fs_cell(key: str, value: str) -> str:
    """A filesystem's cell as read: df's size and free are byte counts (df -B1), written as sizes (1.97 TB)."""
    return fmt_bytes(int(value)) if key in ("size", "free") and value.isdigit() else value


def _collective_table(coll: CollectiveResult) -> Table:
    def cell(v: float | int | None, fmt: str = "{:,.2f}") -> str:
        return "—" if v is None else fmt.format(v)

    rows = []
    for r in sorted(coll.rows, key=lambda r: r.size_bytes):
        t = r.in_place or r.out_of_place
        rows.append([size_label(r.size_bytes), r.dtype or "?", cell(t.time_us if t else None, "{:,.1f}"),
                     cell(t.algbw_gbps if t else None), cell(t.busbw_gbps if t else None),
                     cell(t.wrong if t else None, "{}")])
    return Table(header=["size", "type", "time µs", "algbw GB/s", "busbw GB/s", "#wrong"], rows=rows)


def appendix(evidence: ProbeEvidence, warnings: Sequence[str]) -> list[Block]:
    blocks: list[Block] = []
    coll = evidence.collectives
    if coll is not None:
        ranks = plural(coll.nranks, "rank") if coll.nranks else "ranks not printed"
        facts = [f"tool {coll.tool}, op {coll.op or 'not printed'}, {ranks}"
                 + (" (inferred)" if coll.nranks_inferred else ""),
                 f"hosts: {', '.join(sorted({d.host for d in coll.devices if d.host})) or 'not printed'}",
                 f"average busbw line: {coll.avg_busbw if coll.avg_busbw is not None else '—'} GB/s; peak "
                 f"{coll.peak_busbw if coll.peak_busbw is not None else '—'} GB/s",
                 f"NCCL {coll.nccl_version or 'version not printed'}; {coll.net or 'NET line not printed'}; GDR "
                 f"{ {True: 'on', False: 'off', None: 'unknown'}[coll.gdr] }; algorithm {coll.algo or 'default'}"]
        blocks += [Paragraph(text="All-reduce run (rows are in-place where printed):"), Bullets(items=facts)]
        if coll.rows:
            blocks.append(_collective_table(coll))
        if coll.failures:
            blocks.append(Bullets(items=coll.failures[:10]))
    jobs = [(s, f, j) for s in evidence.storage for f in s.fio for j in f.jobs]
    if jobs:
        rows = []
        for s, _f, j in jobs:
            for side, d in (("read", j.read), ("write", j.write)):
                if d is None or not (d.iops or d.bw_bytes_per_s):
                    continue
                rows.append([s.path, j.name, j.rw or "?", j.bs or "?", side,
                             f"{(d.bw_bytes_per_s or 0) / 1e6:,.1f}", f"{d.iops or 0:,.0f}",
                             f"{d.clat_p99_ns / 1e6:.2f}" if d.clat_p99_ns else "—"])
        blocks += [Paragraph(text="fio jobs:"), Table(
            header=["path", "job", "rw", "bs", "side", "MB/s", "IOPS", "p99 ms"], rows=rows,
            widths=[1.5, 1.2, 0.8, 0.5, 0.6, 0.8, 0.8, 0.7])]
    log = evidence.kernel_log
    if log is not None and (log.xids or log.sxids):
        blocks += [Paragraph(text="Xid lines from the kernel log:"), Table(
            header=["line", "time", "Xid", "PCI", "process", "message"], widths=[0.5, 2.1, 0.45, 1.1, 1, 3.6],
            rows=[[str(x.line_no), x.timestamp or "—", str(x.code), x.pci or "—", x.process or "—", x.message[:200]]
                  for x in log.xids[:40]])]
    burn = evidence.burn
    if burn is not None:
        blocks += [Paragraph(text="Stability burn:"), Bullets(items=[
            f"{burn.duration_s / 60:.1f} min, {burn.samples} samples, {'completed' if burn.completed else 'stopped'}",
            f"max temperature {burn.max_temp_c if burn.max_temp_c is not None else '—'} °C; lowest SM clock "
            f"{burn.min_sm_clock_mhz if burn.min_sm_clock_mhz is not None else '—'} MHz",
            f"clock-event reasons seen: {', '.join(burn.throttle_reasons_seen) or 'none'}; Xid: "
            f"{', '.join(str(c) for c in burn.xid_codes) or 'none'}",
            f"TFLOP/s first vs last minute: {burn.tflops_first_minute or '—'} → {burn.tflops_last_minute or '—'}"])]
    dist = evidence.distributed
    if dist is not None:
        blocks += [Paragraph(text=f"Distributed sanity: backend {dist.backend}, world size {dist.world_size}, "
                                  f"all_reduce {'exact' if dist.all_reduce_ok else 'WRONG'}"
                                  + (f", NCCL_SOCKET_IFNAME {dist.nccl_socket_ifname}" if dist.nccl_socket_ifname
                                     else "")
                                  + (f"; error: {dist.error}" if dist.error else ""))]
    if warnings:
        blocks += [Paragraph(text="Warnings raised while probing and parsing:"), Bullets(items=list(warnings))]
    return blocks or [Paragraph(text="No raw evidence was recorded.")]


# --------------------------------------------------------------------------- the report


def build_probe_report(run: ProbeRunRecord | StoredRun, catalog: Catalog | None = None) -> Report:
    """The probe report's content in reading order: verdict, scorecard, charts, inventory, evidence.

    A run without a scorecard (e.g. interrupted before grading) is graded here from its evidence.
    """
    record = run if isinstance(run, ProbeRunRecord) else record_from_stored(run)
    catalog = catalog or load_catalog()
    evidence, samples, warnings, host = record.evidence, record.samples, record.warnings, record.host
    card = record.card(catalog)
    refs = References()
    sections = [Section(title="Scorecard", blocks=[
        Paragraph(text="Each check compares a measured figure with a published reference; the source column "
                       "names it (numbers refer to the Sources list at the end). FAIL makes the box NOT READY, "
                       "WARN asks for a look, INFO is not graded."),
        scorecard_table(card, refs)])]
    found = findings(card)
    if found is not None:
        sections.append(Section(title="Findings", blocks=[found]))
    if evidence.partial:
        sections.append(Section(title="Partial evidence", blocks=[
            Paragraph(text="These probes stopped before their end (the connection dropped, or a benchmark was cut "
                           "short); what they had measured is kept and shown above, but it is not the whole test, "
                           "and a collective sweep that did not reach every message size is not graded."),
            Bullets(items=[f"{name}: {what}" for name, what in evidence.partial.items()])]))
    if evidence.cluster is not None:
        sections.append(cluster_section(evidence.cluster))
    network: list[Block] = []
    if evidence.collectives is not None:
        exp = expected_busbw(evidence, catalog)
        chart = busbw_chart(evidence.collectives, exp.reference if exp else None)
        cut = sweep_cut(evidence.collectives)
        if chart is not None:
            network.append(chart.model_copy(update={"title": f"{chart.title} (partial: {cut})"}) if cut else chart)
        if exp is not None:
            network.append(Paragraph(text=refs.cite(
                f"Expected for {exp.label}: {exp.reference:,.0f}–{exp.high:,.0f} GB/s busbw at large messages "
                f"({exp.source}). busbw is the bandwidth each GPU's bottleneck link carries (algbw × 2(n−1)/n); "
                "it is what to compare with a link's one-way speed.")))
    if network:
        sections.append(Section(title="Network", blocks=network))
    compute = matmul_chart(evidence, catalog)
    if compute is not None:
        sections.append(Section(title="Compute", blocks=[compute]))
    if evidence.step is not None:
        sections.append(step_section(evidence.step))
    storage: list[Block] = list(storage_charts(evidence))
    if evidence.storage:
        storage.append(Table(
            header=["role", "path", "fs", "tool", "seq read", "seq write", "rand IOPS", "p99 ms", "files/s"],
            widths=[0.8, 1.6, 0.7, 0.5, 1, 1, 0.9, 0.7, 0.8],
            rows=[[s.role, s.path, s.filesystem or "?", s.tool,
                   f"{fmt_bytes(s.seq_read_bytes_per_s)}/s" if s.seq_read_bytes_per_s else "—",
                   f"{fmt_bytes(s.seq_write_bytes_per_s)}/s" if s.seq_write_bytes_per_s else "—",
                   f"{s.rand_read_iops:,.0f}" if s.rand_read_iops else "—",
                   f"{s.rand_read_p99_ms:.2f}" if s.rand_read_p99_ms is not None else "—",
                   f"{s.small_file_ops_per_s:,.0f}" if s.small_file_ops_per_s else "—"]
                  for s in evidence.storage]))
        skipped = [f"{s.path}: {s.skipped_reason}" for s in evidence.storage if s.skipped_reason]
        if skipped:
            storage.append(Bullets(items=skipped))
    if storage:
        sections.append(Section(title="Storage", blocks=storage))
    charts = metric_charts(samples or [])
    if charts:
        sections.append(Section(title="GPU metrics over time", blocks=list(charts)))
    if evidence.cluster is None:  # a cluster run's row has no inventory of its own: each node's report has it
        sections.append(Section(title="Inventory", blocks=inventory_tables(evidence)))
    sections.append(Section(title="Appendix: evidence", blocks=appendix(evidence, warnings)))
    if refs.urls:
        sections.append(Section(title="Sources", blocks=[refs.block()]))
    kind = "cluster" if evidence.cluster is not None else "node"
    return Report(title=f"GPU {kind} readiness: {host}", date=_when(record.started), conclusion=card.summary,
                  key_figures=key_figures(evidence, card, host, record.status), sections=sections)


__all__ = [
    "ProbeRunRecord", "build_probe_report", "busbw_chart", "key_figures", "matmul_chart", "metric_charts",
    "record_from_json", "record_from_stored", "samples_from_table", "scorecard_table", "storage_charts",
]
