"""What the probe history holds, as objects: a saved host, a run's row, its chart points, events and
raw tool output, everything one run left behind; and how a row read back becomes one of them.

Kept apart from the store (core.probes.history.store: the SQLite file, its opening, faults and
statements) because these are what the rest of the program handles: the window lists RunSummary rows
and edits HostProfile, the report and the run JSON read a StoredRun, and none of them needs SQLite
to do so. A row that cannot be read (bad JSON, a status this version does not know) becomes an empty
value or is skipped, never an error: an old run stays openable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.probes.evidence import ProbeEvidence, ProbeOutcome, Scorecard
from core.probes.history.sample_table import SampleTable


class HostProfile(BaseModel):
    """A saved host: how to reach it and where its data lives. Never a password or passphrase."""

    name: str = Field(min_length=1, description="label shown in the host list (unique)")
    target: str = Field(
        description="[user@]host[:port] or an ~/.ssh/config alias; 'local' for this machine"
    )
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    identity_file: str | None = Field(
        default=None, description="path of a private key file (not its content)"
    )
    data_path: str | None = None
    checkpoint_path: str | None = None
    local: bool = False
    python: str | None = Field(
        default=None,
        description="the host's Python with torch (a venv or conda env); "
        "None: the probe looks for one",
    )


class RunSummary(BaseModel):
    """One row of the run history: what the list shows without parsing evidence."""

    id: int
    host: str
    suite: str
    probes: list[str] = Field(default_factory=list)
    started: float = Field(description="Unix time")
    ended: float | None = None
    status: str = Field(
        description="one of running, completed, incomplete, cancelled, interrupted, failed"
    )
    verdict: str | None = None
    workdir: str | None = None


class StoredSeriesPoint(BaseModel):
    """A chart point as the runner emitted it (busbw per size, fio throughput over time,
    TFLOP/s...)."""

    t: float = Field(description="seconds since the run started, when the point arrived")
    series: str
    x: float
    y: float
    label: str = ""


class StoredEvent(BaseModel):
    t: float
    kind: str
    level: str
    probe: str | None = None
    message: str


class RawOutput(BaseModel):
    """What one remote command printed, kept verbatim so a user can send it to the provider."""

    t: float
    probe: str
    command: str
    stdout: str
    stderr: str
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    cancelled: bool = False


@dataclass
class StoredRun:
    """Everything one run left behind; ``evidence``/``scorecard`` are None when absent or
    unreadable."""

    summary: RunSummary
    options: dict[str, Any]
    evidence: ProbeEvidence | None
    scorecard: Scorecard | None
    outcomes: list[ProbeOutcome]
    samples: SampleTable
    series: list[StoredSeriesPoint] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)
    raw_outputs: list[RawOutput] = field(default_factory=list)


# --------------------------------------------------------------------------- rows read back


def _loads(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def host_from_row(row: dict[str, Any]) -> HostProfile:
    """A ``hosts`` row as the profile it was saved from."""
    return HostProfile(
        name=row["name"],
        target=row["target"],
        port=row["port"],
        user=row["user"],
        identity_file=row["identity_file"],
        data_path=row["data_path"],
        checkpoint_path=row["checkpoint_path"],
        local=bool(row["local"]),
        python=row["python"],
    )


def summary_from_row(row: dict[str, Any]) -> RunSummary:
    """A ``runs`` row as the history list shows it (its probe list unreadable: none)."""
    probes = _loads(row["probes"], [])
    return RunSummary(
        id=row["id"],
        host=row["host"],
        suite=row["suite"],
        probes=[str(p) for p in probes] if isinstance(probes, list) else [],
        started=row["started"],
        ended=row["ended"],
        status=row["status"],
        verdict=row["verdict"],
        workdir=row["workdir"],
    )


def _evidence(text: str | None) -> ProbeEvidence | None:
    try:
        return ProbeEvidence.model_validate_json(text) if text else None
    except ValidationError:
        return None


def _scorecard(text: str | None) -> Scorecard | None:
    try:
        return Scorecard.model_validate_json(text) if text else None
    except ValidationError:
        return None


def _outcomes(rows: list[dict[str, Any]]) -> list[ProbeOutcome]:
    outcomes = []
    for r in rows:
        try:
            outcomes.append(
                ProbeOutcome(
                    name=r["name"],
                    status=r["status"],
                    started=r["started"],
                    ended=r["ended"],
                    warnings=_loads(r["warnings"], []),
                    error=r["error"],
                )
            )
        except ValidationError:
            continue
    return outcomes


def stored_run(
    row: dict[str, Any],
    samples: SampleTable,
    *,
    outcome_rows: list[dict[str, Any]],
    series_rows: list[dict[str, Any]],
    event_rows: list[dict[str, Any]],
    raw_rows: list[dict[str, Any]],
) -> StoredRun:
    """One run's ``runs`` row and the rows of its other tables, as a StoredRun."""
    options = _loads(row["options"], {})
    return StoredRun(
        summary=summary_from_row(row),
        options=options if isinstance(options, dict) else {},
        evidence=_evidence(row["evidence"]),
        scorecard=_scorecard(row["scorecard"]),
        outcomes=_outcomes(outcome_rows),
        samples=samples,
        series=[StoredSeriesPoint(**r) for r in series_rows],
        events=[StoredEvent(**r) for r in event_rows],
        raw_outputs=[
            RawOutput(
                t=r["t"],
                probe=r["probe"],
                command=r["command"],
                stdout=r["stdout"],
                stderr=r["stderr"],
                exit_code=r["exit_code"],
                duration_s=r["duration_s"],
                timed_out=bool(r["timed_out"]),
                cancelled=bool(r["cancelled"]),
            )
            for r in raw_rows
        ],
    )


__all__ = [
    "HostProfile",
    "RawOutput",
    "RunSummary",
    "StoredEvent",
    "StoredRun",
    "StoredSeriesPoint",
    "host_from_row",
    "stored_run",
    "summary_from_row",
]
