"""Replay of real GPU tool output for the probe pane's tests, and checks that the replay reads the fixtures.

The only thing replayed is what a GPU box prints: the `nvidia-smi --query-gpu` CSV and `nvidia-smi dmon`
captured under gpu-burn on one H100 (tests/fixtures/probes/SOURCES.md #4 and #7), the nccl-tests sweep of two
p5 nodes (#21) and a fio JSON (see SOURCES.md). They go through the project's own parsers into the runner's
event types, so the pane sees exactly what a run on such a box would stream.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.probes.events import (
    LogEvent,
    MetricsBatch,
    ProbeFinished,
    ProbeStarted,
    RunFinished,
    RunStarted,
    SeriesPoint,
)
from core.probes.evidence import (
    HostInventory,
    ProbeEvidence,
    ProbeOutcome,
    ProbeStatus,
    Scorecard,
    StorageResult,
)
from core.probes.parsers import parse_dmon, parse_fio_json, parse_nccl_tests, parse_nvidia_smi_q, parse_query_gpu
from core.probes.samples import GpuMetric
from core.probes.store import ProbeStore, StoredSeriesPoint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
QUERY_CSV = "nvidia_smi_query_gpu_csv_1xH100_under_gpuburn_590.48.01.csv"
DMON = "nvidia_smi_dmon_1xH100_under_gpuburn_590.48.01.txt"
SMI_Q = "nvidia_smi_q_1xH100_under_gpuburn_590.48.01.txt"
NCCL = "nccl_allreduce_2x8xH100_p5_EFA_srun_rank_prefixed.txt"
FIO = "fio_json_fio3.1_randread_4k_qd1_32jobs_SATA_SSD_PM883.json"

def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8", errors="replace")


def burn_metrics() -> list[GpuMetric]:
    """The query-gpu CSV row (t = 0 s) followed by the five dmon rows (dmon's 1 s ticks, t = 1..5 s)."""
    csv = parse_query_gpu(fixture(QUERY_CSV)).value
    dmon = parse_dmon(fixture(DMON)).value
    assert csv is not None and dmon is not None
    return [*csv.metrics, *(m.model_copy(update={"t": m.t + 1.0}) for m in dmon)]


def nccl_points() -> list[tuple[float, float]]:
    """(message size, in-place busbw) of every row of the p5 sweep."""
    result = parse_nccl_tests(fixture(NCCL)).value
    assert result is not None
    return [(float(r.size_bytes), float(r.in_place.busbw_gbps)) for r in result.rows
            if r.in_place is not None and r.in_place.busbw_gbps is not None]


def replay_evidence() -> ProbeEvidence:
    """Evidence as the runner would have gathered it on the captured boxes."""
    smi = parse_nvidia_smi_q(fixture(SMI_Q)).value
    fio = parse_fio_json(fixture(FIO)).value
    nccl = parse_nccl_tests(fixture(NCCL)).value
    job = fio.jobs[0] if fio is not None and fio.jobs else None
    read = job.read if job is not None else None
    storage = StorageResult(path="/data", role="data", tool="fio",
                            rand_read_iops=read.iops if read else None,
                            rand_read_p99_ms=(read.clat_p99_ns / 1e6) if read and read.clat_p99_ns else None,
                            fio=[fio] if fio is not None else [])
    return ProbeEvidence(inventory=HostInventory(hostname="h100-burn", nvidia=smi), health=smi,
                         collectives=nccl, collective_interconnect="efa", storage=[storage])


def replay_scorecard(evidence: ProbeEvidence) -> Scorecard:
    from core.probes.scorecard import score

    return score(evidence, samples=burn_metrics())


class ReplayRunner:
    """A stand-in for ``run_suite`` that streams the replayed outputs and writes them to the store.

    ``hold`` names a probe that then waits (up to ``hold_s``) for the cancel event, as a long burn would, so a
    test can press Stop mid-run. ``pause_s`` sleeps between events (threaded tests and screenshots).
    """

    def __init__(self, hold: str | None = None, hold_s: float = 20.0, pause_s: float = 0.0) -> None:
        self.hold, self.hold_s, self.pause_s = hold, hold_s, pause_s
        self.calls: list[dict[str, Any]] = []
        self.cancel_seen = threading.Event()

    def __call__(self, transport: Any, options: Any, store: ProbeStore, cancel: threading.Event,
                 host_label: str) -> Iterator[Any]:
        self.calls.append({"transport": transport, "options": options, "host": host_label})
        probes = ["inventory", "gpu_metrics", "collectives", "storage", "burn"]
        run_id = store.start_run(host_label, "replay", probes, {"replay": True})
        evidence = replay_evidence()
        started = time.time()
        status = "completed"
        yield RunStarted(run_id=run_id, host=host_label, probes=probes)
        for index, name in enumerate(probes, start=1):
            t0 = time.time()
            yield ProbeStarted(name=name, index=index, total=len(probes), eta_s=30.0 if name == "burn" else None)
            if name == "gpu_metrics":
                metrics = burn_metrics()
                store.add_samples(run_id, metrics)
                yield MetricsBatch(metrics=metrics[:3])
                yield MetricsBatch(metrics=metrics[3:])
            elif name == "collectives":
                points = nccl_points()
                store.add_series(run_id, [StoredSeriesPoint(t=time.time() - started, series="busbw", x=x, y=y,
                                                            label="nccl-tests") for x, y in points])
                for x, y in points:
                    yield SeriesPoint(series="busbw", x=x, y=y, label="nccl-tests")
            elif name == "storage":
                iops = evidence.storage[0].rand_read_iops or 0.0
                store.add_series(run_id, [StoredSeriesPoint(t=1.0, series="fio_iops", x=1.0, y=iops,
                                                            label="data randread")])
                yield SeriesPoint(series="fio_iops", x=1.0, y=iops, label="data randread")
            elif name == "burn":
                store.add_event(run_id, time.time() - started, "log", "warning", "GPU 0: replayed burn", "burn")
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


# --------------------------------------------------------------------------- the replay reads the fixtures


def test_burn_metrics_are_the_captured_values():
    metrics = burn_metrics()
    # Read by hand: CSV row power.draw 631.95 W, temperature.gpu 59, memory.used 19818 MiB; dmon pwr column.
    assert [m.power_w for m in metrics] == [631.95, 631.0, 634.0, 633.0, 634.0, 636.0]
    assert [m.temp_c for m in metrics] == [59.0, 63.0, 63.0, 64.0, 64.0, 65.0]
    assert metrics[0].mem_used_bytes == 19818 * 2**20
    assert [m.t for m in metrics] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert {m.sm_clock_mhz for m in metrics} == {1980.0}


def test_nccl_points_are_the_sweep():
    points = nccl_points()
    # 8 B … 16 GiB by ×2 is 32 rows; the last in-place busbw printed is 487.26 GB/s.
    assert len(points) == 32
    assert points[0] == (8.0, 0.0)
    assert points[-1] == (17179869184.0, 487.26)
