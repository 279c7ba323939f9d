"""What every cluster step is given, and how one is cut short: StepContext (the live node sessions,
the cluster evidence the step fills, the run's options and callbacks) and SweepCut.

The cluster steps run after every node's own suite has ended: agreement.py, rendezvous.py,
torchrun_steps.py and fabric_tools.py. Each reads and fills the cluster evidence
(core.probes.cluster.evidence) from the node sessions (core.probes.cluster.session) and raises
`ProbeSkipped` with the reason when the nodes lack what it needs (torch, nccl-tests with a launcher,
perftest, DCGM). The context stands alone so that the steps and the worker that runs them
(core.probes.cluster.worker) share it without importing one another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from core.probes.checks.base import LogLevel, ProbeFailed
from core.probes.cluster.evidence import ClusterEvidence
from core.probes.cluster.session import Launched, NodeSession
from core.probes.run.options import RunOptions


class SweepCut(ProbeFailed):
    """A sweep across the nodes stopped before its last message size (a node dropped, a rank died):
    what it measured is kept, shown as partial and never graded, and the step counts as not measured
    to its end."""


@dataclass
class StepContext:
    """What every step gets: the live sessions (first = where the rendezvous is), the evidence and
    the run's."""

    sessions: list[NodeSession]
    cluster: ClusterEvidence
    options: RunOptions
    halt: threading.Event
    run_id: int
    slurm_job: str | None
    log: Callable[[LogLevel, str], None]
    point: Callable[[float, float], None]  # inter-node busbw: (bytes, GB/s)
    warn: Callable[[str], None]
    # What a step leaves for a later one of the same run: "bench", the all_reduce benchmark's output
    # when the distributed step's torchrun launch ran it
    carried: dict[str, list[Launched]] = field(default_factory=dict)

    @property
    def first(self) -> NodeSession:
        return self.sessions[0]


__all__ = ["StepContext", "SweepCut"]
