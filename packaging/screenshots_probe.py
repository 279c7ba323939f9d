"""Render the Probe place to docs/screenshots/probe-*.png: the pane in the middle of a replayed run,
its scorecard once the run ends, and a real run on this GPU-less machine (``probe-*-no-gpu.png``).
Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python
packaging/screenshots_probe.py [OUT_DIR]`` (without a display it falls back to Qt's offscreen
platform).

There is no GPU on the machines that build the docs, so the run is a replay of real captures from
``resources/samples/probe_run`` (see its SOURCES.md) through the project's parsers: `nvidia-smi
--query-gpu` and `dmon` under gpu-burn on one H100 (#4, #7), its `nvidia-smi -q` (#3), the
nccl-tests sweep of two p5 nodes (#21) and a fio JSON, parsed as the pane's tests parse them
(``core/probes/run/replay.py``). Values and their timing are the captured ones; the host is named
after what it is. Everything is written to a throwaway user folder.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# A real window where there is a display (docs are made under `xvfb-run`), else offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
os.environ["PYQTGRAPH_QT_LIB"] = "PySide6"

from PySide6.QtCore import QCoreApplication  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import wait  # noqa: E402

SIZE = (1280, 900)
HOST = "h100-burn (replayed capture)"


class CaptureReplay:
    """A ``run_suite`` stand-in that streams the captured outputs and holds in the burn until
    released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.in_burn = threading.Event()

    def __call__(
        self, transport: Any, options: Any, store: Any, cancel: threading.Event, host_label: str
    ) -> Iterator[Any]:
        from core.probes.checks.base import HostFacts
        from core.probes.evidence import ProbeOutcome, ProbeStatus
        from core.probes.history.records import StoredSeriesPoint
        from core.probes.run.events import (
            LogEvent,
            MetricsBatch,
            ProbeFinished,
            ProbeStarted,
            RunFinished,
            RunStarted,
            SeriesPoint,
        )
        from core.probes.run.replay import burn_metrics, replay_evidence
        from core.probes.scorecard import score

        evidence = replay_evidence()
        smi, nccl, burn = evidence.health, evidence.collectives, burn_metrics()
        read = evidence.storage[0].fio[0].jobs[0].read
        assert smi and nccl and read is not None
        probes = ["inventory", "health", "collectives", "storage", "burn"]
        run_id = store.start_run(host_label, ",".join(probes), probes)
        facts = HostFacts(
            tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
            gpu_lines=[f"GPU {g.index}: {g.name}" for g in smi.gpus],
        )
        yield RunStarted(run_id=run_id, host=host_label, probes=probes, facts=facts)
        t = 0.0
        for index, name in enumerate(probes, start=1):
            t += 1.0
            started = time.time()
            eta = {"burn": 600.0, "collectives": 60.0, "storage": 30.0}.get(name)
            yield ProbeStarted(t=t, name=name, index=index, total=len(probes), eta_s=eta)
            if name == "inventory":
                gpu = smi.gpus[0]
                yield LogEvent(
                    t=t,
                    level="info",
                    probe=name,
                    message=f"1 × {gpu.name}, driver {smi.driver_version}, PCIe "
                    f"Gen{gpu.pcie_gen_current} x{gpu.pcie_width_current}",
                )
            elif name == "collectives":
                points = []
                for row in nccl.rows:
                    timing = row.in_place
                    if timing is None or timing.busbw_gbps is None or timing.algbw_gbps is None:
                        continue
                    for series, value in (
                        ("busbw", timing.busbw_gbps),
                        ("algbw", timing.algbw_gbps),
                    ):
                        points.append(
                            StoredSeriesPoint(
                                t=t, series=series, x=row.size_bytes, y=value, label="nccl-tests"
                            )
                        )
                        yield SeriesPoint(
                            t=t, series=series, x=row.size_bytes, y=value, label="nccl-tests"
                        )
                store.add_series(run_id, points)
                yield LogEvent(
                    t=t,
                    level="info",
                    probe=name,
                    message=f"all_reduce peak busbw {nccl.peak_busbw:.1f} GB/s over {nccl.nranks} "
                    "ranks",
                )
            elif name == "storage":
                mb_s = (read.bw_bytes_per_s or 0) / 1e6
                store.add_series(
                    run_id,
                    [
                        StoredSeriesPoint(
                            t=t, series="fio_read", x=t, y=mb_s, label="data randread"
                        ),
                        StoredSeriesPoint(
                            t=t, series="fio_iops", x=t, y=read.iops or 0, label="data randread"
                        ),
                    ],
                )
                yield SeriesPoint(t=t, series="fio_read", x=t, y=mb_s, label="data randread")
                yield SeriesPoint(
                    t=t, series="fio_iops", x=t, y=read.iops or 0, label="data randread"
                )
            elif name == "burn":
                samples = [m.model_copy(update={"t": m.t + t}) for m in burn]
                store.add_samples(run_id, samples)
                for sample in samples:
                    yield MetricsBatch(t=sample.t, metrics=[sample])
                yield LogEvent(
                    t=t,
                    level="info",
                    probe=name,
                    message="burn: GPU 0 at 100 % utilisation, 1980 MHz",
                )
                self.in_burn.set()
                while not (self.release.is_set() or cancel.is_set()):
                    time.sleep(0.05)
            status = ProbeStatus.cancelled if cancel.is_set() else ProbeStatus.ok
            outcome = ProbeOutcome(name=name, status=status, started=started, ended=time.time())
            store.add_outcome(run_id, outcome)
            yield ProbeFinished(t=t, outcome=outcome)
        card = score(evidence, samples=burn)
        state = "cancelled" if cancel.is_set() else "completed"
        store.finish_run(run_id, state, evidence=evidence, scorecard=card)
        yield RunFinished(t=t, run_id=run_id, evidence=evidence, scorecard=card, status=state)


def save(widget: QWidget, path: Path) -> None:
    for _ in range(20):
        QCoreApplication.processEvents()
        time.sleep(0.02)
    if not widget.grab().save(str(path)):
        raise RuntimeError(f"cannot write {path}")
    print(path)


def gpu_less_run(executor: Any, store: Any, scratch: Path, out: Path) -> None:
    """A real run on the machine the docs are built on, which has no GPU: its scorecard and empty
    charts."""
    from gui.probe.pane import ProbePane

    pane = ProbePane(executor, store, known_hosts_file=scratch / "known_hosts")
    pane.resize(*SIZE)
    pane.show()
    pane.hosts.select("This machine")
    pane.connect_button.click()
    wait(pane.start_button.isEnabled, 30, "the connection")
    pane.suite.set_choice(("inventory", "health", "compute"))
    pane.start()
    wait(lambda: not pane.running, 180, "the run's end")
    pane.tabs.setCurrentIndex(1)
    save(pane, out / "probe-scorecard-no-gpu.png")
    pane.tabs.setCurrentIndex(0)
    save(pane, out / "probe-live-no-gpu.png")
    pane.shutdown()
    pane.close()


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tuneplan-probe-shots-"))
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    from core.probes.history.records import HostProfile
    from core.probes.history.store import ProbeStore
    from core.probes.transport.local import LocalTransport
    from gui.app import make_app
    from gui.probe.pane import ProbePane
    from gui.workers import ThreadExecutor

    app = make_app(["screenshots"])
    store = ProbeStore(scratch / "probes.db")
    store.save_host(
        HostProfile(
            name=HOST, target="ubuntu@h100-burn", data_path="/data", checkpoint_path="/checkpoints"
        )
    )
    replay = CaptureReplay()
    executor = ThreadExecutor()
    pane = ProbePane(
        executor,
        store,
        run_suite=replay,
        make_options=lambda choice: choice,
        known_hosts_file=scratch / "known_hosts",
    )
    pane.resize(*SIZE)
    pane.show()
    pane.hosts.select(HOST)
    pane.link.pending = pane.hosts.current()  # stand in for the SSH connection: the run is a replay
    pane.link.host_connected(LocalTransport())
    pane.suite.set_choice(
        ("inventory", "health", "collectives", "storage", "burn"), burn_seconds=600
    )
    pane.start()
    wait(replay.in_burn.is_set, 30, "the replayed run's burn")
    wait(lambda: pane.gpu_charts.history.samples >= 6, 30, "six GPU samples")
    pane.gpu_charts.window_box.setCurrentIndex(pane.gpu_charts.window_box.findText("whole run"))
    save(pane, out / "probe-pane.png")
    replay.release.set()
    wait(lambda: not pane.running, 30, "the replayed run's end")
    pane.tabs.setCurrentIndex(1)
    save(pane, out / "probe-scorecard.png")
    pane.shutdown()
    gpu_less_run(executor, store, scratch, out)
    executor.stop_all(5000)
    store.close()
    pane.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
    )
