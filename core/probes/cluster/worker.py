"""The cluster run's own worker: after every node's suite has ended, the steps that need all nodes,
in order.

It runs on a thread of its own and reports through the run queue (core.probes.run.run_queue),
exactly as a node's worker does, so every step's events, raw outputs and evidence are persisted as
they arrive. Before the steps it asks every node that finished its suite to answer (``true`` within
a short timeout): a node that hangs is named and left out, and the steps go on with the others.
Every work directory it made is removed at the end, also after a cancel or a failure; what cannot be
removed stays in the ledger of that node for its next run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from core.probes.checks.base import (
    Cancelled,
    HostFacts,
    ProbeCallbacks,
    ProbeContext,
    ProbeFailed,
    ProbeSkipped,
)
from core.probes.cluster.agreement import agreement
from core.probes.cluster.evidence import ClusterEvidence, NodeReport
from core.probes.cluster.fabric_tools import dcgm, ib_write_bw, nccl_tests
from core.probes.cluster.rendezvous import rendezvous
from core.probes.cluster.session import Launched, NodeSession, not_answering, on_every_node
from core.probes.cluster.step_context import StepContext, SweepCut
from core.probes.cluster.torchrun_steps import allreduce, distributed
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus
from core.probes.run.events import ProbeStarted, RunFinished, RunStatus, SeriesPoint
from core.probes.run.options import RunOptions
from core.probes.run.outcomes import compute_scorecard
from core.probes.run.run_queue import EvidenceSnapshot, LedgerItem, Queue, RawItem, Reporter
from core.probes.transport.base import CommandResult, Transport, TransportError
from core.resources import resource_path

log = logging.getLogger(__name__)

CLUSTER_STEPS = (
    "nodes",
    "agreement",
    "rendezvous",
    "distributed",
    "allreduce",
    "nccl_tests",
    "ib_write_bw",
    "dcgm",
)
ANSWER_S = 10.0  # a node that does not run `true` within this after its suite is taken as hung
# Steps that need at least two answering nodes (everything after the agreement).
_NEED_TWO = ("rendezvous", "distributed", "allreduce", "nccl_tests", "ib_write_bw", "dcgm")


class ClusterWorker(Reporter):
    """Runs the cluster steps for one cluster run; talks to the generator only through the queue."""

    def __init__(
        self,
        transports: dict[str, Transport],
        facts: dict[str, HostFacts],
        cluster: ClusterEvidence,
        options: RunOptions,
        halt: threading.Event,
        out: Queue,
        run_id: int,
        t0: float,
        *,
        addresses: dict[str, str | None],
        slurm_job: str | None = None,
    ) -> None:
        super().__init__(out, run_id, t0)
        self.transports = transports
        self.facts = facts
        self.cluster = cluster
        self.options = options
        self.halt = halt
        self.addresses = addresses
        self.slurm_job = slurm_job
        self.sessions: list[NodeSession] = []
        self.finished = False  # RunFinished is on the queue
        self.left_behind = False  # a work directory stayed on a node that stopped answering
        # what a step leaves for a later one (StepContext.carried)
        self.carried: dict[str, list[Launched]] = {}
        # step -> what it measured before it was cut (ProbeEvidence.partial)
        self.partial: dict[str, str] = {}

    # -- main
    # --------------------------------------------------------------------------------------------

    def main(self, nodes_started: float) -> None:
        status: RunStatus = "completed"
        try:
            self._nodes_outcome(nodes_started)
            answering = self._answering()
            self._open_sessions(answering)
            self._run_steps()
        except Cancelled:
            status = "cancelled"
        # by design: a bug must still end the run cleanly and keep the data
        except Exception as exc:
            log.exception("cluster run failed")
            status = "failed"
            self.log("error", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if self.halt.is_set():
                status = "cancelled"
            elif status == "completed" and (self.cluster.failed_nodes or self.partial):
                status = "incomplete"
            removed = self._close_sessions() and not self.left_behind
            evidence = ProbeEvidence(cluster=self.cluster, partial=dict(self.partial))
            card = compute_scorecard(
                evidence,
                lambda m: self.log("warning", m),
                list(CLUSTER_STEPS),
                self.outcomes,
                status,
            )
            self.put(EvidenceSnapshot(evidence=evidence))
            self.put(
                RunFinished(
                    t=self.clock(),
                    run_id=self.run_id,
                    evidence=evidence,
                    scorecard=card,
                    status=status,
                    workdir_removed=removed,
                )
            )
            self.finished = True

    def finish(self, outcome: ProbeOutcome) -> None:
        """The outcome, then the evidence so far (persisted after every step, as a host's run
        does)."""
        super().finish(outcome)
        self.put(
            EvidenceSnapshot(
                evidence=ProbeEvidence(
                    cluster=self.cluster.model_copy(deep=True), partial=dict(self.partial)
                )
            )
        )

    def _nodes_outcome(self, started: float) -> None:
        failed = self.cluster.failed_nodes
        error = "; ".join(f"{node}: {why}" for node, why in failed.items()) or None
        status = (
            ProbeStatus.cancelled
            if self.halt.is_set()
            else ProbeStatus.failed
            if failed
            else ProbeStatus.ok
        )
        self.finish(
            ProbeOutcome(
                name="nodes", status=status, started=started, ended=time.time(), error=error
            )
        )
        if self.halt.is_set():
            self.not_run(
                list(CLUSTER_STEPS[1:]), ProbeStatus.cancelled, "cancelled before it started"
            )
            raise Cancelled("cluster run cancelled")

    def _answering(self) -> list[NodeReport]:
        """The nodes that ran their suite and still answer; a hung one is named and left out."""
        candidates = [n for n in self.cluster.nodes if n.state in ("completed", "incomplete")]
        gone = not_answering({n.node: self.transports[n.node] for n in candidates}, ANSWER_S)
        for report in candidates:
            if report.node in gone:
                report.state, report.error = "failed", f"after its suite: {gone[report.node]}"
                self.log(
                    "error", f"{report.node} {report.error}; the cluster steps go on without it"
                )
        return [n for n in candidates if n.node not in gone]

    # -- sessions
    # ----------------------------------------------------------------------------------------

    def _open_sessions(self, reports: list[NodeReport]) -> None:
        """A work directory on every node at once (each in the ledger as soon as it exists); when
        one node fails, the sessions opened on the others are kept, so that the end of the run
        removes their directories."""
        opened: dict[str, NodeSession] = {}

        def open_one(report: NodeReport) -> None:
            transport = self.transports[report.node]
            workdir = transport.make_workdir()
            self.put(LedgerItem(path=workdir, kind="workdir", host=report.node))
            ctx = ProbeContext(
                transport=transport,
                options=self.options,
                workdir=workdir,
                facts=self.facts.get(report.node, HostFacts()),
                evidence=ProbeEvidence(),
                cancel=self.halt,
                callbacks=self._callbacks(report.node),
                clock=self.clock,
                resources=resource_path("probes"),
            )
            opened[report.node] = NodeSession(
                node=report.node,
                transport=transport,
                facts=ctx.facts,
                ctx=ctx,
                address=self.addresses.get(report.node),
            )

        try:
            on_every_node(reports, open_one)
        finally:
            self.sessions = [opened[r.node] for r in reports if r.node in opened]

    def _callbacks(self, node: str) -> ProbeCallbacks:
        def raw(probe: str, result: CommandResult) -> None:
            self.put(
                RawItem(
                    t=self.clock(),
                    probe=probe if "@" in probe else f"{probe}@{node}",
                    result=result,
                )
            )

        return ProbeCallbacks(
            log=lambda level, message, probe: self.log(level, f"{node}: {message}", probe),
            point=lambda series, x, y, label: None,
            raw=raw,
            created=lambda path, kind: self.put(LedgerItem(path=path, kind=kind, host=node)),
            removed=lambda path: self.put(LedgerItem(path=path, host=node)),
        )

    def _close_sessions(self) -> bool:
        """Remove every session's work directory, on all nodes at once; True when all went (what
        stays is in that node's ledger)."""
        return all(on_every_node(self.sessions, self._close_session))

    def _close_session(self, session: NodeSession) -> bool:
        try:
            if session.transport.is_alive():
                session.transport.remove_workdir(session.workdir)
                self.put(LedgerItem(path=session.workdir, host=session.node))
                return True
        except (TransportError, ValueError) as exc:
            self.log(
                "warning",
                f"{session.node}: the work directory {session.workdir} could not be removed: {exc}",
            )
            return False
        self.log(
            "warning",
            f"{session.node}: the work directory {session.workdir} could not be removed: no "
            "connection (the next run on this node removes it)",
        )
        return False

    # -- steps
    # -------------------------------------------------------------------------------------------

    def _run_steps(self) -> None:
        steps = CLUSTER_STEPS[1:]
        for index, name in enumerate(steps, start=2):
            if self.halt.is_set():
                self.not_run(
                    list(steps[index - 2 :]), ProbeStatus.cancelled, "cancelled before it started"
                )
                raise Cancelled("cluster run cancelled")
            self.put(ProbeStarted(t=self.clock(), name=name, index=index, total=len(CLUSTER_STEPS)))
            for session in self.sessions:
                session.ctx.name = name
            outcome = self._run_one(name)
            self._mark_gone(name, outcome)
            self.finish(outcome)
            if outcome.status == ProbeStatus.cancelled:
                self.not_run(
                    list(steps[index - 1 :]), ProbeStatus.cancelled, "cancelled before it started"
                )
                raise Cancelled("cluster run cancelled")

    def _mark_gone(self, step: str, outcome: ProbeOutcome) -> None:
        """After a failed step (or one cut short: `SweepCut`), the nodes whose connection died or
        that no longer answer (a hung node) did not run to the end: their reports say so, so the run
        is incomplete and names them (each node's own suite had completed, which alone would call
        the cluster complete), the step's failed node is the gone one rather than the peer that
        timed out waiting for it, and the later steps go on without them."""
        if outcome.status not in (ProbeStatus.failed, ProbeStatus.lost):
            return
        gone = not_answering({s.node: s.transport for s in self.sessions}, ANSWER_S)
        for node, why in gone.items():
            report = self.cluster.node(node)
            if report is not None and report.state == "completed":
                report.state, report.error = "interrupted", f"{why} during the {step} step"
                self.log(
                    "error", f"{node}: {report.error}; the cluster steps go on without it", step
                )
        run = {"distributed": self.cluster.distributed, "allreduce": self.cluster.allreduce}.get(
            step
        )
        if run is not None and gone and run.failed_node not in gone:
            run.failed_node = next(iter(gone))
        for session in [s for s in self.sessions if s.node in gone]:
            self.sessions.remove(session)
            if self._reclaim(session, step):
                continue
            self.left_behind = True
            self.log(
                "warning",
                f"{session.node}: the work directory {session.workdir} could not be removed: the "
                "node does not answer (the next run on this node removes it)",
            )

    def _reclaim(self, session: NodeSession, step: str) -> bool:
        """Connect again to a node the steps go on without and end what its abandoned step left
        running there, then remove its work directory; True when that is done. Its torchrun would
        otherwise run on for minutes (a dropped connection does not end a remote command) and the
        next run would remove the directory from under it. The reconnect ends the commands: an SSH
        transport kills, on connecting, the process groups a lost connection kept it from killing
        (core.probes.transport.ssh)."""
        reconnect = getattr(session.transport, "reconnect", None)
        if not callable(reconnect):
            return False
        try:
            reconnect()
            session.transport.remove_workdir(session.workdir)
        except (TransportError, ValueError) as exc:
            self.log(
                "warning",
                f"{session.node}: could not reconnect to end the {step} step's processes: {exc}",
                step,
            )
            return False
        self.put(LedgerItem(path=session.workdir, host=session.node))
        self.log(
            "info",
            f"{session.node}: reconnected; what the {step} step left running there was ended and "
            f"the work directory {session.workdir} removed",
            step,
        )
        return True

    def _step(self, name: str) -> Callable[[StepContext], object]:
        level = 2 if "burn" in self.options.probe_names() else 1
        return {
            "agreement": agreement,
            "rendezvous": rendezvous,
            "distributed": distributed,
            "allreduce": allreduce,
            "nccl_tests": nccl_tests,
            "ib_write_bw": ib_write_bw,
            "dcgm": lambda step: dcgm(step, level),
        }[name]

    def _run_one(self, name: str) -> ProbeOutcome:
        started = time.time()
        warnings: list[str] = []
        step = StepContext(
            sessions=self.sessions,
            cluster=self.cluster,
            options=self.options,
            halt=self.halt,
            run_id=self.run_id,
            slurm_job=self.slurm_job,
            carried=self.carried,
            log=lambda level, message: self.log(level, message, name),
            point=lambda x, y: self.put(
                SeriesPoint(t=self.clock(), series="busbw", x=x, y=y, label="inter-node")
            ),
            warn=lambda message: warnings.append(message),
        )
        status, error = ProbeStatus.ok, None
        try:
            if name in _NEED_TWO and len(self.sessions) < 2:
                raise ProbeSkipped(
                    f"only {len(self.sessions)} node answers, so nothing crosses a network"
                )
            self._step(name)(step)
        except ProbeSkipped as exc:
            status, error = ProbeStatus.skipped, str(exc)
        except Cancelled:
            status, error = ProbeStatus.cancelled, "cancelled by the user"
        # measured in part: kept, shown partial, never graded; the run is incomplete
        except SweepCut as exc:
            status, error = ProbeStatus.lost, str(exc)
            self.partial[name] = str(exc)
        except ProbeFailed as exc:
            status, error = ProbeStatus.failed, str(exc)
        except TransportError as exc:
            status, error = ProbeStatus.failed, str(exc)
        except Exception as exc:  # by design: one step's bug must not end the run
            log.exception("cluster step %s failed", name)
            status, error = (
                ProbeStatus.failed,
                f"internal error in the {name} step: {type(exc).__name__}: {exc}",
            )
        if status == ProbeStatus.ok and self.halt.is_set():
            status, error = ProbeStatus.cancelled, "cancelled by the user"
        if status in (ProbeStatus.failed, ProbeStatus.lost) and error:
            self.log("error", f"{name}: {error}", name)
        elif status == ProbeStatus.skipped and error:
            self.log("info", f"{name} skipped: {error}", name)
        for session in self.sessions:
            warnings.extend(f"{session.node}: {w}" for w in session.ctx.warnings)
            session.ctx.warnings = []
        return ProbeOutcome(
            name=name,
            status=status,
            started=started,
            ended=time.time(),
            warnings=list(dict.fromkeys(warnings)),
            error=error,
        )


__all__ = ["ANSWER_S", "CLUSTER_STEPS", "ClusterWorker"]
