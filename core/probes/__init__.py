"""The probing domain's one public face: what the window (gui/) and the command line (cli/) import.

The domain's rooms: transport/ (reaching a host: SSH, this machine, Slurm), run/ (a run's options,
the runner, its events), checks/ (one module per probe), parsers/ (the tools' text output),
evidence.py and samples.py (what a run measured: the vocabulary every room shares), scorecard/
(judging it), history/ (the SQLite probe history, host groups, leases and the ledger), cluster/
(several hosts as one), output/ (the report and the run JSON), and the one bridge to the planner,
apply.py with step_spec.py.

Callers import names from here, never from a room, so a room can change without them (lint-imports
checks it). The face is lazy (PEP 562): importing ``core.probes`` loads no probe module, paramiko or
SQLite until a name is used. ``tuneplan plan`` never pays for the probes, and the window loads them
only when the Probe place needs them. Each name is looked up in its module at every use, not copied
here, so a test that replaces it in its module replaces it for every caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import lazy_names

if TYPE_CHECKING:
    from core.probes.apply import apply_to_plan, nothing_to_apply, step_sentence
    from core.probes.apply import step_spec as step_spec_for
    from core.probes.checks.base import HostFacts
    from core.probes.checks.facts import python_used
    from core.probes.cluster.evidence import ClusterEvidence, NodeReport
    from core.probes.cluster.run import ClusterNode, NodeEvent, check_nodes, run_cluster
    from core.probes.evidence import (
        Check,
        CheckStatus,
        ProbeEvidence,
        ProbeOutcome,
        ProbeStatus,
        Scorecard,
        Verdict,
    )
    from core.probes.history.host_groups import (
        HostGroup,
        delete_group,
        group_error,
        groups_with,
        rename_member,
        save_group,
    )
    from core.probes.history.host_groups import group as saved_group
    from core.probes.history.host_groups import groups as saved_groups
    from core.probes.history.leases import mark_stale_runs
    from core.probes.history.records import HostProfile, RunSummary, StoredRun
    from core.probes.history.sample_table import SampleTable
    from core.probes.history.store import ProbeStore, ProbeStoreError, default_probe_db_path
    from core.probes.output.report import build_probe_report
    from core.probes.output.run_json import run_json
    from core.probes.output.run_record import ProbeRunRecord, record_from_json, record_from_stored
    from core.probes.run.events import (
        LogEvent,
        MetricsBatch,
        ProbeFinished,
        ProbeStarted,
        RunEvent,
        RunFinished,
        RunStarted,
        RunStatus,
        SeriesPoint,
    )
    from core.probes.run.options import PROBE_NAMES, SUITES, RunOptions, resolve_probes
    from core.probes.run.replay import ReplayRunner, replay_evidence, replay_scorecard
    from core.probes.run.runner import run_suite
    from core.probes.samples import CollectiveResult, GpuMetric
    from core.probes.scorecard import NO_GPU, check_key, check_path, explain_no_verdict, score
    from core.probes.scorecard.outcomes import account_for_outcomes
    from core.probes.step_spec import StepResult, StepSpec, comparable, differences, measured_step
    from core.probes.transport.base import (
        AuthenticationFailed,
        CommandResult,
        HostKeyChanged,
        HostKeyRevoked,
        HostKeyUnknown,
        Transport,
        TransportError,
        Unreachable,
    )
    from core.probes.transport.connect import HostOverrides, open_ssh, resolve
    from core.probes.transport.connect import check as check_target
    from core.probes.transport.hostkeys import default_app_known_hosts
    from core.probes.transport.local import LocalTransport
    from core.probes.transport.slurm import (
        AllocationCancelled,
        SlurmAllocation,
        SlurmError,
        salloc_command,
    )
    from core.probes.transport.ssh import SshTransport
    from core.probes.transport.target import SshTarget

# public name -> (module, name there). A few names differ from their module's, where the module's
# would be unclear on its own here: check -> check_target, groups -> saved_groups, group ->
# saved_group, and apply's step_spec -> step_spec_for (core.probes.step_spec is a module of this
# package).
_WHERE: dict[str, tuple[str, str]] = {
    # the one recipe the command line and the window reach a host by
    "HostOverrides": ("core.probes.transport.connect", "HostOverrides"),
    "resolve": ("core.probes.transport.connect", "resolve"),
    "open_ssh": ("core.probes.transport.connect", "open_ssh"),
    "check_target": ("core.probes.transport.connect", "check"),
    "Transport": ("core.probes.transport.base", "Transport"),
    "CommandResult": ("core.probes.transport.base", "CommandResult"),
    "TransportError": ("core.probes.transport.base", "TransportError"),
    "Unreachable": ("core.probes.transport.base", "Unreachable"),
    "AuthenticationFailed": ("core.probes.transport.base", "AuthenticationFailed"),
    "HostKeyChanged": ("core.probes.transport.base", "HostKeyChanged"),
    "HostKeyRevoked": ("core.probes.transport.base", "HostKeyRevoked"),
    "HostKeyUnknown": ("core.probes.transport.base", "HostKeyUnknown"),
    "LocalTransport": ("core.probes.transport.local", "LocalTransport"),
    "SshTransport": ("core.probes.transport.ssh", "SshTransport"),
    "SshTarget": ("core.probes.transport.target", "SshTarget"),
    "default_app_known_hosts": ("core.probes.transport.hostkeys", "default_app_known_hosts"),
    "SlurmAllocation": ("core.probes.transport.slurm", "SlurmAllocation"),
    "SlurmError": ("core.probes.transport.slurm", "SlurmError"),
    "AllocationCancelled": ("core.probes.transport.slurm", "AllocationCancelled"),
    "salloc_command": ("core.probes.transport.slurm", "salloc_command"),
    # a run
    "RunOptions": ("core.probes.run.options", "RunOptions"),
    "PROBE_NAMES": ("core.probes.run.options", "PROBE_NAMES"),
    "SUITES": ("core.probes.run.options", "SUITES"),
    "resolve_probes": ("core.probes.run.options", "resolve_probes"),
    "run_suite": ("core.probes.run.runner", "run_suite"),
    "RunEvent": ("core.probes.run.events", "RunEvent"),
    "RunStatus": ("core.probes.run.events", "RunStatus"),
    "RunStarted": ("core.probes.run.events", "RunStarted"),
    "ProbeStarted": ("core.probes.run.events", "ProbeStarted"),
    "MetricsBatch": ("core.probes.run.events", "MetricsBatch"),
    "SeriesPoint": ("core.probes.run.events", "SeriesPoint"),
    "LogEvent": ("core.probes.run.events", "LogEvent"),
    "ProbeFinished": ("core.probes.run.events", "ProbeFinished"),
    "RunFinished": ("core.probes.run.events", "RunFinished"),
    "ReplayRunner": ("core.probes.run.replay", "ReplayRunner"),
    "replay_evidence": ("core.probes.run.replay", "replay_evidence"),
    "replay_scorecard": ("core.probes.run.replay", "replay_scorecard"),
    # a cluster run
    "run_cluster": ("core.probes.cluster.run", "run_cluster"),
    "ClusterNode": ("core.probes.cluster.run", "ClusterNode"),
    "NodeEvent": ("core.probes.cluster.run", "NodeEvent"),
    "check_nodes": ("core.probes.cluster.run", "check_nodes"),
    "ClusterEvidence": ("core.probes.cluster.evidence", "ClusterEvidence"),
    "NodeReport": ("core.probes.cluster.evidence", "NodeReport"),
    # the history
    "ProbeStore": ("core.probes.history.store", "ProbeStore"),
    "ProbeStoreError": ("core.probes.history.store", "ProbeStoreError"),
    "HostProfile": ("core.probes.history.records", "HostProfile"),
    "RunSummary": ("core.probes.history.records", "RunSummary"),
    "SampleTable": ("core.probes.history.sample_table", "SampleTable"),
    "StoredRun": ("core.probes.history.records", "StoredRun"),
    "default_probe_db_path": ("core.probes.history.store", "default_probe_db_path"),
    "HostGroup": ("core.probes.history.host_groups", "HostGroup"),
    "group_error": ("core.probes.history.host_groups", "group_error"),
    "save_group": ("core.probes.history.host_groups", "save_group"),
    "delete_group": ("core.probes.history.host_groups", "delete_group"),
    "groups_with": ("core.probes.history.host_groups", "groups_with"),
    "rename_member": ("core.probes.history.host_groups", "rename_member"),
    "saved_groups": ("core.probes.history.host_groups", "groups"),
    "saved_group": ("core.probes.history.host_groups", "group"),
    "mark_stale_runs": ("core.probes.history.leases", "mark_stale_runs"),
    # what a run measured and how it is judged
    "ProbeEvidence": ("core.probes.evidence", "ProbeEvidence"),
    "ProbeStatus": ("core.probes.evidence", "ProbeStatus"),
    "ProbeOutcome": ("core.probes.evidence", "ProbeOutcome"),
    "Verdict": ("core.probes.evidence", "Verdict"),
    "CheckStatus": ("core.probes.evidence", "CheckStatus"),
    "Check": ("core.probes.evidence", "Check"),
    "Scorecard": ("core.probes.evidence", "Scorecard"),
    "GpuMetric": ("core.probes.samples", "GpuMetric"),
    "CollectiveResult": ("core.probes.samples", "CollectiveResult"),
    "HostFacts": ("core.probes.checks.base", "HostFacts"),
    "python_used": ("core.probes.checks.facts", "python_used"),
    "score": ("core.probes.scorecard", "score"),
    "explain_no_verdict": ("core.probes.scorecard", "explain_no_verdict"),
    "check_key": ("core.probes.scorecard", "check_key"),
    "check_path": ("core.probes.scorecard", "check_path"),
    "NO_GPU": ("core.probes.scorecard", "NO_GPU"),
    "account_for_outcomes": ("core.probes.scorecard.outcomes", "account_for_outcomes"),
    # the report and the run JSON
    "ProbeRunRecord": ("core.probes.output.run_record", "ProbeRunRecord"),
    "build_probe_report": ("core.probes.output.report", "build_probe_report"),
    "record_from_json": ("core.probes.output.run_record", "record_from_json"),
    "record_from_stored": ("core.probes.output.run_record", "record_from_stored"),
    "run_json": ("core.probes.output.run_json", "run_json"),
    # the step probe and the plan
    "StepSpec": ("core.probes.step_spec", "StepSpec"),
    "StepResult": ("core.probes.step_spec", "StepResult"),
    "comparable": ("core.probes.step_spec", "comparable"),
    "differences": ("core.probes.step_spec", "differences"),
    "measured_step": ("core.probes.step_spec", "measured_step"),
    "apply_to_plan": ("core.probes.apply", "apply_to_plan"),
    "nothing_to_apply": ("core.probes.apply", "nothing_to_apply"),
    "step_sentence": ("core.probes.apply", "step_sentence"),
    "step_spec_for": ("core.probes.apply", "step_spec"),
}

__all__ = [
    "NO_GPU",
    "PROBE_NAMES",
    "SUITES",
    "AllocationCancelled",
    "AuthenticationFailed",
    "Check",
    "CheckStatus",
    "ClusterEvidence",
    "ClusterNode",
    "CollectiveResult",
    "CommandResult",
    "GpuMetric",
    "HostFacts",
    "HostGroup",
    "HostKeyChanged",
    "HostKeyRevoked",
    "HostKeyUnknown",
    "HostOverrides",
    "HostProfile",
    "LocalTransport",
    "LogEvent",
    "MetricsBatch",
    "NodeEvent",
    "NodeReport",
    "ProbeEvidence",
    "ProbeFinished",
    "ProbeOutcome",
    "ProbeRunRecord",
    "ProbeStarted",
    "ProbeStatus",
    "ProbeStore",
    "ProbeStoreError",
    "ReplayRunner",
    "RunEvent",
    "RunFinished",
    "RunOptions",
    "RunStarted",
    "RunStatus",
    "RunSummary",
    "SampleTable",
    "Scorecard",
    "SeriesPoint",
    "SlurmAllocation",
    "SlurmError",
    "SshTarget",
    "SshTransport",
    "StepResult",
    "StepSpec",
    "StoredRun",
    "Transport",
    "TransportError",
    "Unreachable",
    "Verdict",
    "account_for_outcomes",
    "apply_to_plan",
    "build_probe_report",
    "check_key",
    "check_nodes",
    "check_path",
    "check_target",
    "comparable",
    "default_app_known_hosts",
    "default_probe_db_path",
    "delete_group",
    "differences",
    "explain_no_verdict",
    "group_error",
    "groups_with",
    "mark_stale_runs",
    "measured_step",
    "nothing_to_apply",
    "open_ssh",
    "python_used",
    "record_from_json",
    "record_from_stored",
    "rename_member",
    "replay_evidence",
    "replay_scorecard",
    "resolve",
    "resolve_probes",
    "run_cluster",
    "run_json",
    "run_suite",
    "salloc_command",
    "save_group",
    "saved_group",
    "saved_groups",
    "score",
    "step_sentence",
    "step_spec_for",
]


__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
