"""The one queue probe runs report through, and the loop that persists and yields what arrives on
it.

A run's work happens on threads (core.probes.run.runner says why); they only put ``(run_id, item)``
pairs on a queue. `drain` is the generator side: it takes items off, writes each to the `ProbeStore`
through that run's `Writer` (so the store is written from the one thread iterating it) and yields
the public events. Several runs may share one queue — a cluster run's nodes each have a run of their
own (core.probes.cluster.run) — and `drain` ends when every run it waits for has sent its
`RunFinished`. Closing it early sets ``halt`` and keeps persisting until the workers have finished
(or `JOIN_S` passed), so nothing that arrived is lost.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator

from pydantic import BaseModel

from core.probes.checks.base import LogLevel
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus
from core.probes.history import ledger
from core.probes.history.records import StoredSeriesPoint
from core.probes.history.store import ProbeStore
from core.probes.run.events import (
    LogEvent,
    MetricsBatch,
    ProbeFinished,
    ProbeStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    SeriesPoint,
)
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult

SAMPLE_FLUSH_S = 0.5
JOIN_S = 60.0


class RawItem(BaseModel):
    """A finished command's raw output, to persist (not yielded)."""

    t: float
    probe: str
    result: CommandResult


class EvidenceSnapshot(BaseModel):
    """The evidence so far, persisted after every probe (not yielded)."""

    evidence: ProbeEvidence


class LedgerItem(BaseModel):
    """A directory made on a host (``kind`` set) or removed (``kind`` None), for the ledger;
    ``host`` is the run's own host unless a step works on several (a cluster run's)."""

    path: str
    kind: str | None = None
    host: str | None = None


Item = (
    RunStarted
    | ProbeStarted
    | MetricsBatch
    | SeriesPoint
    | LogEvent
    | ProbeFinished
    | RunFinished
    | RawItem
    | EvidenceSnapshot
    | LedgerItem
)
Queue = queue.Queue[tuple[int, Item]]


class Reporter:
    """What a run's worker (a host's, or a cluster's) reports through: its items on the queue,
    tagged with its run, and the run's clock (seconds since it started)."""

    def __init__(self, out: Queue, run_id: int, t0: float) -> None:
        self.out = out
        self.run_id = run_id
        self.t0 = t0
        # what became of each planned probe (or step), in order
        self.outcomes: list[ProbeOutcome] = []

    def clock(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def put(self, item: Item) -> None:
        self.out.put((self.run_id, item))

    def log(self, level: LogLevel, message: str, probe: str | None = None) -> None:
        self.put(LogEvent(t=self.clock(), level=level, message=message, probe=probe))

    def finish(self, outcome: ProbeOutcome) -> None:
        self.outcomes.append(outcome)
        self.put(ProbeFinished(t=self.clock(), outcome=outcome))

    def not_run(self, names: list[str], status: ProbeStatus, why: str) -> None:
        """Planned probes that will not run (cancelled, or the connection is gone): an outcome each,
        with why."""
        now = time.time()
        for name in names:
            self.finish(ProbeOutcome(name=name, status=status, started=now, ended=now, error=why))


class Writer:
    """Persists one run's items; samples and chart points are buffered and flushed every
    `SAMPLE_FLUSH_S`."""

    def __init__(self, store: ProbeStore, run_id: int, host: str) -> None:
        self.store = store
        self.run_id = run_id
        self.host = host
        self.samples: list[GpuMetric] = []
        self.points: list[StoredSeriesPoint] = []
        self.last_flush = time.monotonic()

    def persist(self, item: Item) -> None:
        store, run_id = self.store, self.run_id
        if isinstance(item, MetricsBatch):
            self.samples.extend(item.metrics)
        elif isinstance(item, SeriesPoint):
            self.points.append(
                StoredSeriesPoint(
                    t=item.t, series=item.series, x=item.x, y=item.y, label=item.label
                )
            )
        elif isinstance(item, RawItem):
            store.add_raw_output(run_id, item.probe, item.result, item.t)
        elif isinstance(item, LogEvent):
            store.add_event(run_id, item.t, "log", item.level, item.message, item.probe)
        elif isinstance(item, RunStarted):
            if item.workdir:
                store.set_workdir(run_id, item.workdir)
        elif isinstance(item, ProbeStarted):
            store.add_event(
                run_id,
                item.t,
                "probe_started",
                "info",
                f"{item.name} ({item.index}/{item.total})",
                item.name,
            )
        elif isinstance(item, ProbeFinished):
            self.flush()
            store.add_outcome(run_id, item.outcome)
        elif isinstance(item, EvidenceSnapshot):
            store.save_evidence(run_id, item.evidence)
        elif isinstance(item, LedgerItem):
            host = item.host or self.host
            if item.kind is not None:
                ledger.remember(
                    store,
                    host,
                    item.path,
                    "storage" if item.kind == "storage" else "workdir",
                    run_id,
                )
            else:
                ledger.forget(store, host, item.path)
        elif isinstance(item, RunFinished):
            self.flush()
            store.finish_run(run_id, item.status, item.evidence, item.scorecard)
        self.flush_if_due()

    def flush_if_due(self) -> None:
        if time.monotonic() - self.last_flush >= SAMPLE_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        self.last_flush = time.monotonic()
        if self.samples:
            batch, self.samples = self.samples, []
            self.store.add_samples(self.run_id, batch)
        if self.points:
            points, self.points = self.points, []
            self.store.add_series(self.run_id, points)


def drain(
    out: Queue,
    writers: dict[int, Writer],
    threads: list[threading.Thread],
    cancel: threading.Event,
    halt: threading.Event,
    until: set[int] | None = None,
) -> Iterator[tuple[int, RunEvent]]:
    """Persist and yield ``(run_id, event)`` until every run in ``until`` (default: every run in
    ``writers``) has finished (see the module doc). ``cancel`` is the caller's; ``halt`` is the
    workers' (set on cancel or when the caller leaves early); ``threads`` are the workers', joined
    at the end."""
    pending = set(writers if until is None else until)
    try:
        while pending:
            if cancel.is_set():
                halt.set()
            try:
                run_id, item = out.get(timeout=0.1)
            except queue.Empty:
                for writer in writers.values():
                    writer.flush_if_due()
                if not any(t.is_alive() for t in threads) and out.empty():
                    return  # a worker died without a RunFinished (should not happen)
                continue
            writers[run_id].persist(item)
            if isinstance(item, RawItem | EvidenceSnapshot | LedgerItem):
                continue
            if isinstance(item, RunFinished):
                pending.discard(run_id)
            yield run_id, item
    finally:
        if pending:
            halt.set()
            _persist_rest(out, writers, threads, pending)
        for thread in threads:
            thread.join(timeout=5.0)


def _persist_rest(
    out: Queue, writers: dict[int, Writer], threads: list[threading.Thread], pending: set[int]
) -> None:
    """The caller left early: keep persisting what the halted workers still send, up to `JOIN_S`."""
    deadline = time.monotonic() + JOIN_S
    while pending and time.monotonic() < deadline:
        try:
            run_id, item = out.get(timeout=0.1)
        except queue.Empty:
            if not any(t.is_alive() for t in threads):
                break
            continue
        with contextlib.suppress(Exception):
            writers[run_id].persist(item)
        if isinstance(item, RunFinished):
            pending.discard(run_id)
    for writer in writers.values():
        with contextlib.suppress(Exception):
            writer.flush()


__all__ = [
    "JOIN_S",
    "SAMPLE_FLUSH_S",
    "EvidenceSnapshot",
    "Item",
    "LedgerItem",
    "Queue",
    "RawItem",
    "Reporter",
    "Writer",
    "drain",
]
