"""A probe run as its report reads it (ProbeRunRecord), whether it comes from the probe history or
from a run JSON file (`tuneplan probe --json`, the window's export): the two ways in, and the
samples thinned on the way.

Kept apart from the report's layout (core.probes.output.report) because the run JSON
(core.probes.output.run_json) and `tuneplan probe-report` read runs the same way without drawing
anything; a bad JSON file is one sentence naming its field here, before any report is built.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from core.catalog import Catalog, load_catalog
from core.probes.evidence import ProbeEvidence, ProbeOutcome, Scorecard
from core.probes.parsers._common import clock_reasons_from_mask
from core.probes.samples import GpuMetric
from core.probes.scorecard import explain_no_verdict, score
from core.probes.scorecard.outcomes import account_for_outcomes
from core.validation import validation_message

if TYPE_CHECKING:
    from core.probes.history.records import StoredRun
    from core.probes.history.sample_table import SampleTable

# Reports and JSON exports keep at most this many samples per GPU (evenly spaced): charts draw
# MAX_POINTS per line, and an hour at 10 Hz × 8 GPUs would otherwise become 288,000 objects.
JSON_SAMPLES_PER_GPU = 2000


class ProbeRunRecord(BaseModel):
    """What a report needs from a run, whether it comes from the probe store or a `tuneplan probe
    --json` file."""

    host: str = "unknown host"
    started: dt.datetime | float | str | None = None
    evidence: ProbeEvidence = Field(default_factory=ProbeEvidence)
    scorecard: Scorecard | None = None
    samples: list[GpuMetric] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    status: str | None = Field(
        None, description="how the run ended: completed, incomplete, interrupted, ..."
    )
    probes: list[str] = Field(default_factory=list, description="the probes the run planned")
    outcomes: list[ProbeOutcome] = Field(default_factory=list)

    def card(self, catalog: Catalog | None = None) -> Scorecard:
        """The run's scorecard (graded here when it has none: a run interrupted before grading),
        held to what became of its planned probes: lost ones are listed as not measured, the verdict
        is INCOMPLETE at best."""
        card = self.scorecard or score(
            self.evidence, catalog or load_catalog(), samples=self.samples
        )
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
        out.append(
            GpuMetric(
                t=t,
                gpu=int(gpu),
                util_pct=num(table.util, i),
                temp_c=num(table.temp, i),
                power_w=num(table.power, i),
                sm_clock_mhz=num(table.sm_clock, i),
                mem_clock_mhz=num(table.mem_clock, i),
                mem_used_bytes=int(used) if used is not None else None,
                mem_total_bytes=int(total) if total is not None else None,
                clocks_event_mask=int(mask) if mask is not None else None,
                clocks_event_reasons=clock_reasons_from_mask(int(mask)) if mask is not None else [],
            )
        )
    return out


def record_from_stored(run: StoredRun) -> ProbeRunRecord:
    """A stored run as a report record: its evidence, scorecard, samples and the probes'
    warnings."""
    warnings = [f"{o.name}: {w}" for o in run.outcomes for w in o.warnings]
    warnings += [f"{o.name}: {o.error}" for o in run.outcomes if o.error]
    card = (
        explain_no_verdict(run.scorecard, run.outcomes, run.summary.status)
        if run.scorecard
        else None
    )
    return ProbeRunRecord(
        host=run.summary.host,
        started=run.summary.started,
        evidence=run.evidence or ProbeEvidence(),
        scorecard=card,
        samples=samples_from_table(run.samples, JSON_SAMPLES_PER_GPU),
        warnings=warnings,
        status=run.summary.status,
        probes=run.summary.probes,
        outcomes=run.outcomes,
    )


def record_from_json(data: Any) -> ProbeRunRecord:
    """A run JSON (``output.run_json``: `tuneplan probe --json` or the export); ValueError names the
    bad field."""
    if not isinstance(data, dict):
        raise ValueError("a probe run JSON must be an object with an 'evidence' key")
    if "evidence" not in data:
        raise ValueError(
            f"the JSON has no 'evidence' key (it has: {', '.join(sorted(data)) or 'nothing'})"
        )
    host = data.get("host")
    if isinstance(host, dict):
        host = host.get("name") or host.get("target") or host.get("hostname")
    raw_summary = data.get("summary")
    summary: dict[str, Any] = raw_summary if isinstance(raw_summary, dict) else {}
    started = data.get("started", summary.get("started"))
    warnings = [str(w) for w in data.get("warnings") or [] if w]
    for outcome in data.get("outcomes") or []:
        if isinstance(outcome, dict):
            warnings += [
                f"{outcome.get('name', 'probe')}: {w}" for w in outcome.get("warnings") or []
            ]
    outcomes = [o for o in data.get("outcomes") or [] if isinstance(o, dict)]
    try:
        return ProbeRunRecord(
            host=str(host or summary.get("host") or "unknown host"),
            started=started,
            evidence=data["evidence"] or {},
            scorecard=data.get("scorecard"),
            samples=data.get("samples") or [],
            warnings=warnings,
            status=data.get("status", summary.get("status")),
            probes=summary.get("probes") or [],
            outcomes=outcomes,
        )
    except ValidationError as exc:
        raise ValueError(validation_message(exc)) from exc


__all__ = [
    "JSON_SAMPLES_PER_GPU",
    "ProbeRunRecord",
    "record_from_json",
    "record_from_stored",
    "samples_from_table",
]
