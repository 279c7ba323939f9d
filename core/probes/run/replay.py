"""A probe run recorded from real tool outputs, replayed: for screenshots, demos and tests.

There is no GPU where the docs are built or the tests run, so the Probe place is shown a run of a
real box instead: the `nvidia-smi --query-gpu` CSV and `nvidia-smi dmon` captured under gpu-burn on
one H100, its `nvidia-smi -q`, the nccl-tests sweep of two p5 nodes and a fio JSON, shipped in
``resources/samples/probe_run`` (see its SOURCES.md). They go through the project's own parsers into
the runner's event types, so the pane sees exactly what a run on such a box would stream.
:class:`ReplayRunner` stands in for ``run_suite``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from core.probes.evidence import (
    HostInventory,
    ProbeEvidence,
    ProbeOutcome,
    ProbeStatus,
    Scorecard,
    StorageResult,
)
from core.probes.history.records import StoredSeriesPoint
from core.probes.history.store import ProbeStore
from core.probes.parsers import (
    parse_dmon,
    parse_fio_json,
    parse_nccl_tests,
    parse_nvidia_smi_q,
    parse_query_gpu,
)
from core.probes.run.events import (
    LogEvent,
    MetricsBatch,
    ProbeFinished,
    ProbeStarted,
    RunFinished,
    RunStarted,
    SeriesPoint,
)
from core.probes.samples import GpuMetric
from core.resources import resource_path

SAMPLES = ("samples", "probe_run")  # under resources/
QUERY_CSV = "nvidia_smi_query_gpu_csv_1xH100_under_gpuburn_590.48.01.csv"
DMON = "nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt"
SMI_Q = "nvidia_smi_q_1xH100_under_gpuburn_590.48.01.txt"
NCCL = "nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt"
FIO = "fio_json_fio3.1_randread_4k_qd1_32jobs_SATA_SSD_PM883.json"
CAPTURES = (QUERY_CSV, DMON, SMI_Q, NCCL, FIO)


def capture(name: str) -> str:
    """The text of one captured tool output."""
    return resource_path(*SAMPLES, name).read_text(encoding="utf-8", errors="replace")


def burn_metrics() -> list[GpuMetric]:
    """The query-gpu CSV row (t = 0 s) followed by the five dmon rows (dmon's 1 s ticks, t = 1..5
    s)."""
    csv = parse_query_gpu(capture(QUERY_CSV)).value
    dmon = parse_dmon(capture(DMON)).value
    assert csv is not None and dmon is not None
    return [*csv.metrics, *(m.model_copy(update={"t": m.t + 1.0}) for m in dmon)]


def nccl_points() -> list[tuple[float, float]]:
    """(message size, in-place busbw) of every row of the p5 sweep."""
    result = parse_nccl_tests(capture(NCCL)).value
    assert result is not None
    return [
        (float(r.size_bytes), float(r.in_place.busbw_gbps))
        for r in result.rows
        if r.in_place is not None and r.in_place.busbw_gbps is not None
    ]


def replay_evidence() -> ProbeEvidence:
    """Evidence as the runner would have gathered it on the captured boxes."""
    smi = parse_nvidia_smi_q(capture(SMI_Q)).value
    fio = parse_fio_json(capture(FIO)).value
    nccl = parse_nccl_tests(capture(NCCL)).value
    job = fio.jobs[0] if fio is not None and fio.jobs else None
    read = job.read if job is not None else None
    storage = StorageResult(
        path="/data",
        role="data",
        tool="fio",
        rand_read_iops=read.iops if read else None,
        rand_read_p99_ms=(read.clat_p99_ns / 1e6) if read and read.clat_p99_ns else None,
        fio=[fio] if fio is not None else [],
    )
    return ProbeEvidence(
        inventory=HostInventory(hostname="h100-burn", nvidia=smi),
        health=smi,
        collectives=nccl,
        collective_interconnect="efa",
        storage=[storage],
    )


def replay_scorecard(evidence: ProbeEvidence) -> Scorecard:
    from core.probes.scorecard import score

    return score(evidence, samples=burn_metrics())


class ReplayRunner:
    """A stand-in for ``run_suite`` that streams the replayed outputs and writes them to the store.

    ``hold`` names a probe that then waits (up to ``hold_s``) for the cancel event, as a long burn
    would, so a test can press Stop mid-run. ``pause_s`` sleeps between events (threaded tests and
    screenshots).
    """

    def __init__(self, hold: str | None = None, hold_s: float = 20.0, pause_s: float = 0.0) -> None:
        self.hold, self.hold_s, self.pause_s = hold, hold_s, pause_s
        self.calls: list[dict[str, Any]] = []
        self.cancel_seen = threading.Event()

    def __call__(
        self,
        transport: Any,
        options: Any,
        store: ProbeStore,
        cancel: threading.Event,
        host_label: str,
    ) -> Iterator[Any]:
        self.calls.append({"transport": transport, "options": options, "host": host_label})
        probes = ["inventory", "gpu_metrics", "collectives", "storage", "burn"]
        run_id = store.start_run(host_label, "replay", probes, {"replay": True})
        evidence = replay_evidence()
        started = time.time()
        status = "completed"
        yield RunStarted(run_id=run_id, host=host_label, probes=probes)
        for index, name in enumerate(probes, start=1):
            t0 = time.time()
            yield ProbeStarted(
                name=name, index=index, total=len(probes), eta_s=30.0 if name == "burn" else None
            )
            if name == "gpu_metrics":
                metrics = burn_metrics()
                store.add_samples(run_id, metrics)
                yield MetricsBatch(metrics=metrics[:3])
                yield MetricsBatch(metrics=metrics[3:])
            elif name == "collectives":
                points = nccl_points()
                store.add_series(
                    run_id,
                    [
                        StoredSeriesPoint(
                            t=time.time() - started, series="busbw", x=x, y=y, label="nccl-tests"
                        )
                        for x, y in points
                    ],
                )
                for x, y in points:
                    yield SeriesPoint(series="busbw", x=x, y=y, label="nccl-tests")
            elif name == "storage":
                iops = evidence.storage[0].rand_read_iops or 0.0
                store.add_series(
                    run_id,
                    [
                        StoredSeriesPoint(
                            t=1.0, series="fio_iops", x=1.0, y=iops, label="data randread"
                        )
                    ],
                )
                yield SeriesPoint(series="fio_iops", x=1.0, y=iops, label="data randread")
            elif name == "burn":
                store.add_event(
                    run_id, time.time() - started, "log", "warning", "GPU 0: replayed burn", "burn"
                )
                yield LogEvent(level="warning", message="GPU 0: replayed burn")
                if self.hold == name:
                    cancel.wait(self.hold_s)
            if self.pause_s:
                time.sleep(self.pause_s)
            state = ProbeStatus.cancelled if cancel.is_set() else ProbeStatus.ok
            outcome = ProbeOutcome(name=name, status=state, started=t0, ended=time.time())
            store.add_outcome(run_id, outcome)
            yield ProbeFinished(outcome=outcome)
            if cancel.is_set():
                self.cancel_seen.set()
                status = "cancelled"
                break
        card = replay_scorecard(evidence) if status == "completed" else None
        store.finish_run(run_id, status, evidence=evidence, scorecard=card)
        yield RunFinished(run_id=run_id, evidence=evidence, scorecard=card, status=status)
