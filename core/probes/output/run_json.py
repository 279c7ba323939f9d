"""One JSON shape of a stored probe run: what `tuneplan probe --json` prints and what the window's
JSON export writes, so that `tuneplan probe-report`
(``core.probes.output.run_record.record_from_json``) reads both the same way.

The export adds the samples themselves (at most ``JSON_SAMPLES_PER_GPU`` per GPU, evenly spaced) for
the report's GPU metric charts; `--json` keeps to their per-GPU summary, so that what it prints
stays short.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from core.probes.history.records import StoredRun
from core.probes.history.sample_table import SampleTable
from core.probes.output.run_record import JSON_SAMPLES_PER_GPU, samples_from_table
from core.probes.parsers._common import clock_reasons_from_mask


def samples_summary(table: SampleTable) -> dict[str, dict[str, Any]]:
    """Per GPU: sample count and min/mean/max of the live metrics, plus the clock-event reasons
    seen."""
    out: dict[str, dict[str, Any]] = {}

    def stat(values: np.ndarray, how: Callable[[np.ndarray], Any]) -> float | None:
        finite = values[~np.isnan(values)]
        return round(float(how(finite)), 2) if finite.size else None

    for gpu in table.gpus():
        rows = table.for_gpu(gpu)
        masks = rows.throttle[~np.isnan(rows.throttle)].astype(np.int64)
        combined = int(np.bitwise_or.reduce(masks)) if masks.size else 0
        out[str(gpu)] = {
            "samples": len(rows),
            "seconds": stat(rows.t, np.max),
            "util_pct_mean": stat(rows.util, np.mean),
            "util_pct_max": stat(rows.util, np.max),
            "temp_c_max": stat(rows.temp, np.max),
            "power_w_mean": stat(rows.power, np.mean),
            "power_w_max": stat(rows.power, np.max),
            "sm_clock_mhz_min": stat(rows.sm_clock, np.min),
            "sm_clock_mhz_max": stat(rows.sm_clock, np.max),
            "mem_used_bytes_max": stat(rows.mem_used, np.max),
            "clock_event_reasons": [
                r for r in clock_reasons_from_mask(combined) if r != "gpu_idle"
            ],
        }
    return out


def run_json(run: StoredRun, samples: bool = False) -> dict[str, Any]:
    """The run as one JSON object: summary, options, outcomes, evidence, scorecard, log events,
    samples summary.

    With ``samples`` the thinned samples follow (the window's export); the store keeps them all.
    """
    evidence = run.evidence.model_dump(mode="json") if run.evidence is not None else None
    doc = {
        "run_id": run.summary.id,
        "host": run.summary.host,
        "status": run.summary.status,
        "started": run.summary.started,
        "ended": run.summary.ended,
        "summary": run.summary.model_dump(mode="json"),
        "options": run.options,
        "inventory": evidence.get("inventory") if evidence else None,
        "samples_summary": samples_summary(run.samples),
        "outcomes": [o.model_dump(mode="json") for o in run.outcomes],
        "evidence": evidence,
        "scorecard": run.scorecard.model_dump(mode="json") if run.scorecard is not None else None,
        "events": [e.model_dump(mode="json") for e in run.events if e.kind == "log"],
    }
    if samples:
        doc["samples"] = [
            m.model_dump(mode="json", exclude_none=True)
            for m in samples_from_table(run.samples, JSON_SAMPLES_PER_GPU)
        ]
        doc["samples_note"] = f"at most {JSON_SAMPLES_PER_GPU} samples per GPU, evenly spaced"
    return doc
