"""The probe suite runner: run probes over a `Transport`, stream typed events, persist everything as
it arrives.

How it works: `run_suite` is a generator the caller iterates (the GUI's worker thread, or the CLI).
It starts one worker thread that runs the probes in order, and - when the host has NVIDIA GPUs - a
sampler thread with ONE streaming metrics process for the whole run. Both only put items on a queue;
the generator takes them off, writes them to the `ProbeStore` (so the store is written from the one
thread iterating the generator) and yields the public ones. Samples are flushed in batches every
half second; raw outputs, events, outcomes and the evidence so far are written at once, so a dropped
connection or a crash loses nothing already measured.

Why threads: a probe's remote command blocks for as long as it runs (minutes for fio or the burn),
while the GPU metrics must be read all along, the caller must keep getting events and a cancel must
reach the command at once. So the blocking work runs on the worker and sampler threads, and the
generator merges their two streams of items from the one queue, never waiting on it for more than
0.1 s. The worker and the sampler use the transport, each through commands (SSH channels) of its
own; they reach the generator only through the queue, and the generator reaches them only through
the ``cancel`` event.

Remote work happens in a private work directory (``transport.make_workdir()``) that is removed at
the end, also after a cancel or a failure. Every directory made on the host is written in the ledger
first (core.probes.history.ledger) and struck out once removed; what earlier runs left on this host
is swept at the start, and what this run left is retried right after a reconnect. On `Disconnected`
the probe that was running is ``lost`` (what it gathered before the drop is kept, marked partial);
the runner tries ``transport.reconnect()`` once (when the transport has it) and resumes with the
next probe, and the run ends ``incomplete``; without a reconnect the rest is ``lost`` too and the
run ends ``interrupted``. Only a run where every planned probe has an outcome and none is lost is
``completed``; the scorecard is held to that (core.probes.scorecard.outcomes). The run's row carries
a lease (core.probes.history.leases) so that a run whose client dies is found on the next start.
Cancel (the ``cancel`` event, or closing the generator) reaches the running remote command within a
fraction of a second; the transport kills its process group.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from core.probes.checks import PROBES
from core.probes.checks.base import Cancelled, HostFacts, ProbeCallbacks, ProbeContext, q
from core.probes.checks.facts import detect_facts, python_used
from core.probes.checks.gpu_metrics import MetricsSampler, sampler_command
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus
from core.probes.history import ledger
from core.probes.history.leases import mark_stale_runs, take_lease
from core.probes.history.store import ProbeStore
from core.probes.run.events import (
    MetricsBatch,
    ProbeStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatus,
    SeriesPoint,
)
from core.probes.run.options import RunOptions
from core.probes.run.outcomes import compute_scorecard, run_probe
from core.probes.run.run_queue import (
    EvidenceSnapshot,
    LedgerItem,
    Queue,
    RawItem,
    Reporter,
    Writer,
    drain,
)
from core.probes.samples import GpuMetric
from core.probes.transport.base import CommandResult, Disconnected, Transport, TransportError
from core.resources import resource_path

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# worker


class _Worker(Reporter):
    """Runs the probes on its own thread; talks to the generator only through the queue."""

    def __init__(
        self,
        transport: Transport,
        options: RunOptions,
        cancel: threading.Event,
        out: Queue,
        run_id: int,
        host: str,
        probes: list[str],
        started: float,
        resources: Path | None = None,
        leftovers: list[ledger.Created] | None = None,
    ) -> None:
        super().__init__(out, run_id, started)
        self.transport = transport
        self.options = options
        self.cancel = cancel
        self.host = host
        self.probes = probes
        self.evidence = ProbeEvidence()
        self.resources = resources or resource_path("probes")
        self.sampler: MetricsSampler | None = None
        # streams a reconnect replaced: their samples count too
        self._earlier_samples: list[MetricsSampler] = []
        self.ctx: ProbeContext | None = None
        self.workdir: str | None = None
        self.status: RunStatus = "completed"
        self.run_warnings: list[str] = []
        # what earlier runs left on this host (swept at the start)
        self.leftovers = list(leftovers or [])
        # what this run made on the host and has not removed yet: path -> kind
        self.made: dict[str, str] = {}

    # -- queue helpers
    # ---------------------------------------------------------------------------------

    def point(self, series: str, x: float, y: float, label: str) -> None:
        self.put(SeriesPoint(t=self.clock(), series=series, x=x, y=y, label=label))

    def raw(self, probe: str, result: CommandResult) -> None:
        self.put(RawItem(t=self.clock(), probe=probe or "setup", result=result))

    def metrics(self, batch: list[GpuMetric]) -> None:
        self.put(MetricsBatch(t=self.clock(), metrics=batch))

    def created(self, path: str, kind: str) -> None:
        self.made[path] = kind
        self.put(LedgerItem(path=path, kind=kind))

    def removed(self, path: str) -> None:
        self.made.pop(path, None)
        self.put(LedgerItem(path=path))

    # -- main
    # ------------------------------------------------------------------------------------------

    def main(self) -> None:
        removed = False
        self.transport.shell_wait = self._shell_wait
        try:
            self._setup()
            self._run_probes()
        except Cancelled:
            self.status = "cancelled"
        except Disconnected as exc:
            self.status = "interrupted"
            self.log("error", f"connection lost: {exc}")
        except TransportError as exc:
            self.status = "failed"
            self.log("error", str(exc))
        # by design: a bug must still end the run cleanly and keep the data
        except Exception as exc:
            log.exception("probe run failed")
            self.status = "failed"
            self.log("error", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if self.cancel.is_set() and self.status == "completed":
                self.status = "cancelled"
            if self.status == "completed" and any(
                o.status == ProbeStatus.lost for o in self.outcomes
            ):
                self.status = "incomplete"
            self._stop_sampler()
            removed = self._cleanup()
            scorecard = compute_scorecard(
                self.evidence,
                lambda m: self.log("warning", m),
                self.probes,
                self.outcomes,
                self.status,
            )
            self.put(EvidenceSnapshot(evidence=self.evidence))
            self.put(
                RunFinished(
                    t=self.clock(),
                    run_id=self.run_id,
                    evidence=self.evidence,
                    scorecard=scorecard,
                    status=self.status,
                    workdir_removed=removed,
                )
            )

    def _shell_wait(self, waited_s: float) -> None:
        """A command waits for the host's shell (its startup files run first): said, not silent."""
        self.log("warning", f"connected; waiting for the remote shell ({waited_s:.0f} s)")

    def _setup(self) -> None:
        self._sweep(self.leftovers, "left by an earlier run")
        self.workdir = self.transport.make_workdir()
        self.created(self.workdir, "workdir")
        callbacks = ProbeCallbacks(
            log=self.log, point=self.point, raw=self.raw, created=self.created, removed=self.removed
        )
        self.ctx = ProbeContext(
            transport=self.transport,
            options=self.options,
            workdir=self.workdir,
            facts=HostFacts(),
            evidence=self.evidence,
            cancel=self.cancel,
            callbacks=callbacks,
            clock=self.clock,
            resources=self.resources,
            name="setup",
        )
        self.ctx.facts = detect_facts(self.ctx)
        for warning in self.ctx.warnings:
            self.log("warning", warning, "setup")
        self.ctx.warnings = []
        self.put(
            RunStarted(
                t=self.clock(),
                run_id=self.run_id,
                host=self.host,
                probes=self.probes,
                workdir=self.workdir,
                facts=self.ctx.facts,
            )
        )
        self.log("info", f"work directory {self.workdir} on {self.host}")
        self.log("info", python_used(self.ctx.facts))
        self._start_sampler()

    def _start_sampler(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        if not ctx.facts.nvidia:
            return
        ctx.name = "gpu_metrics"
        command, method = sampler_command(ctx)
        if self.sampler is not None:
            self._earlier_samples.append(self.sampler)
        self.sampler = MetricsSampler(
            self.transport,
            command,
            interval_s=self.options.metrics_interval_ms / 1000,
            on_batch=self.metrics,
            on_raw=self.raw,
            on_log=self.log,
            clock=self.clock,
        ).start()
        ctx.sampler = self.sampler
        self.log(
            "info",
            f"streaming GPU metrics every {self.options.metrics_interval_ms} ms via {method}",
            "gpu_metrics",
        )

    def _stop_sampler(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()

    def _run_probes(self) -> None:
        ctx = self.ctx
        assert ctx is not None
        total = len(self.probes)
        for index, name in enumerate(self.probes, start=1):
            if self.cancel.is_set():
                self.not_run(
                    self.probes[index - 1 :], ProbeStatus.cancelled, "cancelled before it started"
                )
                raise Cancelled("run cancelled")
            spec = PROBES[name]
            ctx.name = name
            ctx.warnings = []
            try:
                eta: float | None = round(spec.eta(ctx), 1)
            except Exception:  # an ETA is a hint; never let it stop a probe
                eta = None
            self.put(ProbeStarted(t=self.clock(), name=name, index=index, total=total, eta_s=eta))
            outcome = run_probe(
                name,
                spec.run,
                ctx,
                transport=self.transport,
                sampler=self.sampler,
                cancel=self.cancel,
                log=self.log,
            )
            self.finish(outcome)
            self.put(EvidenceSnapshot(evidence=self.evidence.model_copy(deep=True)))
            if outcome.status == ProbeStatus.cancelled:
                self.not_run(
                    self.probes[index:], ProbeStatus.cancelled, "cancelled before it started"
                )
                raise Cancelled("run cancelled")
            if outcome.status == ProbeStatus.lost and not self._reconnect(name):
                self.not_run(
                    self.probes[index:], ProbeStatus.lost, "not run: the connection was lost"
                )
                raise Disconnected(f"the connection to {self.host} was lost during {name}")
        if self.sampler is not None and "gpu_metrics" not in self.probes:
            self._sampler_outcome()

    def _sampler_outcome(self) -> None:
        sampler = self.sampler
        assert sampler is not None
        sampler.stop()
        now = time.time()
        # The run's stream, across reconnects: samples a stream gave before a drop are the run's
        # samples (the restarted stream's first batch may come after a short last probe has ended).
        streams = [*self._earlier_samples, sampler]
        count = sum(s.count for s in streams)
        status = ProbeStatus.ok if count else ProbeStatus.failed
        error = None if count else "the GPU metrics stream gave no sample"
        warnings = list(dict.fromkeys(w for s in streams for w in s.warnings))
        self.finish(
            ProbeOutcome(
                name="gpu_metrics",
                status=status,
                started=self.t0_wall,
                ended=now,
                warnings=warnings,
                error=error,
            )
        )

    @property
    def t0_wall(self) -> float:
        return time.time() - (time.monotonic() - self.t0)

    def _reconnect(self, probe: str) -> bool:
        """One attempt to reconnect after a drop; True when the run can go on with the next
        probe."""
        reconnect = getattr(self.transport, "reconnect", None)
        self._stop_sampler()
        if not callable(reconnect) or self.cancel.is_set():
            return False
        self.log("warning", f"connection lost during {probe}; reconnecting once", probe)
        try:
            reconnect()
        except TransportError as exc:
            self.log("error", f"could not reconnect: {exc}", probe)
            return False
        ctx = self.ctx
        assert ctx is not None and self.workdir is not None
        check = self.transport.run(
            f"test -d {q(self.workdir)}", timeout=self.options.timeouts.command_s
        )
        if check.exit_code != 0:
            self.removed(self.workdir)
            self.workdir = self.transport.make_workdir()
            self.created(self.workdir, "workdir")
            ctx.workdir = self.workdir
            ctx.uploaded = {}
            self.log("info", f"work directory was gone after reconnecting; using {self.workdir}")
        # What the lost probe made outside the work directory (a storage test file in the data path)
        # goes now.
        self._sweep(self._made_besides_workdir(), f"by {probe} before the drop")
        self.log("info", f"reconnected to {self.host}; resuming with the next probe", probe)
        if ctx.facts.nvidia:
            self._start_sampler()
        return True

    def _made_besides_workdir(self) -> list[ledger.Created]:
        return [
            ledger.Created(host=self.host, path=path, kind=kind, run_id=self.run_id)
            for path, kind in self.made.items()
            if path != self.workdir
        ]

    def _sweep(self, entries: list[ledger.Created], whose: str) -> None:
        """Remove ledger entries on the host (never cancelled); what cannot go stays for the next
        connection."""
        if not entries or not self.transport.is_alive():
            return
        gone = ledger.sweep(
            self.transport,
            entries,
            lambda e: self.removed(e.path),
            lambda m: self.log("warning", m),
        )
        if gone:
            self.log(
                "info",
                f"removed {gone} director{'y' if gone == 1 else 'ies'} {whose} on {self.host}",
            )

    def _cleanup(self) -> bool:
        """Remove the work directory and anything else this run made (never cancelled: it must go
        even after a cancel); what cannot be removed stays in the ledger for the next connection to
        this host."""
        if self.workdir is None:
            return False
        if not self.transport.is_alive():
            self.log(
                "warning",
                f"the work directory {self.workdir} could not be removed: no connection (the "
                "next run on this host removes it)",
            )
            return False
        self._sweep(self._made_besides_workdir(), "by this run")
        try:
            self.transport.remove_workdir(self.workdir)
        except (TransportError, ValueError) as exc:
            self.log("warning", f"the work directory {self.workdir} could not be removed: {exc}")
            return False
        self.removed(self.workdir)
        return True


# ----------------------------------------------------------------------------------------------
# entry


def start_worker(
    transport: Transport,
    options: RunOptions,
    store: ProbeStore,
    out: Queue,
    halt: threading.Event,
    host_label: str,
    started: float,
) -> tuple[Writer, threading.Thread]:
    """Start one host's run on its own thread, reporting through ``out``: its row (with a lease) is
    made in the store first, and what earlier runs left on the host is swept by the worker. Returns
    the run's writer and thread (the caller drains the queue: core.probes.run.run_queue.drain)."""
    probes = options.probe_names()
    leftovers = ledger.leftovers(store, host_label)
    run_id = store.start_run(
        host_label,
        options.suite_label,
        probes,
        options.model_dump(mode="json"),
        started=time.time(),
    )
    take_lease(store, run_id)
    worker = _Worker(
        transport, options, halt, out, run_id, host_label, probes, started, leftovers=leftovers
    )
    thread = threading.Thread(target=worker.main, name=f"tuneplan-probe-run-{run_id}", daemon=True)
    thread.start()
    return Writer(store, run_id, host_label), thread


def run_suite(
    transport: Transport,
    options: RunOptions,
    store: ProbeStore,
    cancel: threading.Event,
    host_label: str,
) -> Iterator[RunEvent]:
    """Run the suite on a connected transport; yield events until (and including) `RunFinished`.

    Raises ValueError before starting when the options name no valid probe. Closing the generator
    early cancels the run and still cleans up and persists what arrived.

    Starts the worker thread (which starts the GPU metrics sampler thread when the host has NVIDIA
    GPUs) and waits for it at the end; see the module docstring for why and what they share.
    """
    options.probe_names()
    # before the ledger is read: a dead client's directories are swept, a live one's not
    mark_stale_runs(store)
    out: Queue = queue.Queue()
    # the worker's cancel: the caller's cancel, or the caller leaving early
    halt = threading.Event()
    writer, thread = start_worker(
        transport, options, store, out, halt, host_label, time.monotonic()
    )
    for _run_id, event in drain(out, {writer.run_id: writer}, [thread], cancel, halt):
        yield event


__all__ = ["run_suite", "start_worker"]
