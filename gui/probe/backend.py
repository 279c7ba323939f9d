"""The core calls the pane makes to run a suite (one host, or a cluster of them), behind injectable
callables.

Tests and the screenshot script pass their own (a replay of recorded events); the app uses the real
runner. The runner is imported when first used, so the window opens even where it is not installed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from core.catalog import load_catalog
from core.planner import PlanRequest
from core.probes import (
    ProbeEvidence,
    ProbeStore,
    Scorecard,
    StoredRun,
    Transport,
    account_for_outcomes,
    explain_no_verdict,
    nothing_to_apply,
)
from gui.probe.suite_picker import SuiteChoice
from gui.workers import Job

# The plan "Apply to plan" starts from when the window gives none: DESIGN §3.1's example without
# hardware, so the probed box's GPUs become the plan's hardware.
DEFAULT_PLAN = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2.0e8, "epochs": 1, "seq_len": 4096},
    "training": {"method": "lora", "lora_rank": 16},
}

RunSuite = Callable[[Transport, Any, ProbeStore, threading.Event, str], Iterator[Any]]
MakeOptions = Callable[[SuiteChoice], Any]


def make_options(choice: SuiteChoice) -> Any:
    """The runner's RunOptions for a suite picked in the pane."""
    from core.probes import RunOptions

    suite: str | list[str] = choice.suite if isinstance(choice.suite, str) else list(choice.suite)
    return RunOptions(
        suite=suite,
        data_path=choice.data_path,
        checkpoint_path=choice.checkpoint_path,
        burn_seconds=choice.burn_seconds,
        python=choice.python,
    )


def with_step(options: Any, request: PlanRequest | None) -> Any:
    """The options with the plan's layer for the step probe (runs on the worker: it plans once). The
    step runs when picked, and joins the full suite when a plan is open; without a plan it is
    skipped with the reason."""
    from core.probes import RunOptions

    # no plan, or a test's stand-in for the options
    if request is None or not isinstance(options, RunOptions):
        return options
    names = options.probe_names()
    if "step" not in names and options.suite != "full":
        return options
    from core.probes import step_spec_for

    try:
        spec = step_spec_for(request)
    except ValueError:
        # the step probe says it had no plan; the plan's own page says what is wrong with it
        return options
    return options.model_copy(
        update={"step": spec, "suite": names if "step" in names else [*names, "step"]}
    )


def run_suite(
    transport: Transport, options: Any, store: ProbeStore, cancel: threading.Event, host_label: str
) -> Iterator[Any]:
    """`core.probes.run.runner.run_suite`: yields RunEvents until RunFinished."""
    from core.probes import run_suite as real

    return real(transport, options, store, cancel, host_label)


def measured_plan(
    evidence: ProbeEvidence | None, source: Callable[[], PlanRequest | None] | None
) -> tuple[PlanRequest | None, list[str], str]:
    """ "Apply to plan": the plan from ``source`` (or DEFAULT_PLAN) with the run's measured TFLOP/s
    and busbw put in, the notes on what changed, and the status line; no plan, and the status saying
    why, when nothing applies."""
    reason = nothing_to_apply(evidence, load_catalog())
    if reason is not None or evidence is None:
        return None, [], reason or ""
    from core.probes import apply_to_plan

    request = source() if source is not None else None
    if request is None:
        request = PlanRequest.model_validate(DEFAULT_PLAN)
    try:
        new, notes = apply_to_plan(request, evidence, load_catalog())
    except (ValueError, LookupError) as exc:
        return None, [], f"Cannot apply to the plan: {exc}"
    return new, notes, "Measured figures sent to the plan" + (f": {notes[0]}" if notes else "")


def stored_scorecard(run: StoredRun) -> Scorecard | None:
    """A reopened run's scorecard as the pane shows it: lost probes listed as not measured, and why
    there is no verdict when there is none (the same account a live run gets at its end)."""
    if run.scorecard is None:
        return None
    card = account_for_outcomes(
        run.scorecard, run.summary.probes, run.outcomes, run.summary.status, run.evidence
    )
    return explain_no_verdict(card, run.outcomes, run.summary.status)


def relay(
    make_stream: Callable[[], Iterator[Any]], cancel: threading.Event
) -> Callable[[Job], Iterator[Any]]:
    """The worker's view of a run: its events one by one; a cancelled job sets the run's ``cancel``,
    and the run's generator is closed however the relay ends (its finally blocks kill the remote
    processes)."""

    def events(job: Job) -> Iterator[Any]:
        stream = make_stream()
        try:
            for event in stream:
                yield event
                if job.cancelled:
                    cancel.set()
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    return events


def cluster_nodes(nodes: list[tuple[str, Transport]]) -> list[Any]:
    """``ClusterNode``s for connected nodes: each filed under its host's label, reached at the
    address found on the node itself (the server address of its connection)."""
    from core.probes import ClusterNode

    return [ClusterNode(label=label, transport=transport) for label, transport in nodes]


RunCluster = Callable[[list[Any], Any, ProbeStore, threading.Event, str], Iterator[Any]]


def run_cluster(
    nodes: list[Any], options: Any, store: ProbeStore, cancel: threading.Event, label: str
) -> Iterator[Any]:
    """`core.probes.cluster.run.run_cluster` on connected nodes (``ClusterNode``): yields the
    cluster run's events and each node's own, wrapped in ``NodeEvent``, until the cluster's
    RunFinished."""
    from core.probes import run_cluster as real

    return real(nodes, options, store, cancel, label)
