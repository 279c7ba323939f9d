"""What becomes of a probe and of a run: one probe run on its context turned into its
`ProbeOutcome`, whatever it raised (skipped, cancelled, lost, failed), and the run's scorecard held
to those outcomes.

Kept apart from the runner's threads and queue (core.probes.run.runner) because these are the rules
a verdict is read against: which error means a lost connection and which a failed probe, that one
probe's bug never ends the run, and that a scorecard bug never loses the measurements. The cluster
worker (core.probes.cluster.worker) grades its cluster row with the same `compute_scorecard`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from core.catalog import load_catalog
from core.probes.checks.base import Cancelled, LogLevel, ProbeContext, ProbeFailed, ProbeSkipped
from core.probes.checks.gpu_metrics import MetricsSampler
from core.probes.evidence import ProbeEvidence, ProbeOutcome, ProbeStatus, Scorecard
from core.probes.scorecard import score
from core.probes.scorecard.outcomes import account_for_outcomes
from core.probes.transport.base import Disconnected, Transport, TransportError

logger = logging.getLogger(__name__)


def compute_scorecard(
    evidence: ProbeEvidence,
    warn: Callable[[str], None],
    planned: list[str] | None = None,
    outcomes: list[ProbeOutcome] | None = None,
    status: str | None = None,
) -> Scorecard | None:
    """The scorecard of the evidence, held to what became of the planned probes (lost or cancelled
    ones are listed as not measured, and the verdict is INCOMPLETE at best); a scorecard bug never
    loses the run."""
    try:
        card = score(evidence, load_catalog())
        return account_for_outcomes(card, planned or [], outcomes or [], status, evidence)
    except Exception as exc:  # by design: the verdict is optional, the measurements are not
        logger.exception("scorecard failed")
        warn(f"the scorecard could not be computed: {exc}")
        return None


def run_probe(
    name: str,
    run: Callable[[ProbeContext], None],
    ctx: ProbeContext,
    *,
    transport: Transport,
    sampler: MetricsSampler | None,
    cancel: threading.Event,
    log: Callable[[LogLevel, str, str], None],
) -> ProbeOutcome:
    """Run one probe on ``ctx`` and say what became of it: ok, skipped, cancelled, lost (the
    connection dropped, or the transport is gone after any error) or failed (its own error, or a bug
    in it: never the run's end)."""
    started = time.time()
    status, error = ProbeStatus.ok, None
    try:
        run(ctx)
        if sampler is not None and sampler.disconnected and not transport.is_alive():
            raise Disconnected("the connection was lost")
    except ProbeSkipped as exc:
        status, error = ProbeStatus.skipped, str(exc)
    except Cancelled:
        status, error = ProbeStatus.cancelled, "cancelled by the user"
    except Disconnected as exc:
        status, error = ProbeStatus.lost, f"the connection was lost: {exc}"
    except ProbeFailed as exc:
        status, error = ProbeStatus.failed, str(exc)
    except TransportError as exc:
        if not transport.is_alive():
            status, error = ProbeStatus.lost, f"the connection was lost: {exc}"
        else:
            status, error = ProbeStatus.failed, str(exc)
    except Exception as exc:  # by design: one probe's bug must not end the run
        logger.exception("probe %s failed", name)
        status, error = (
            ProbeStatus.failed,
            f"internal error in the {name} probe: {type(exc).__name__}: {exc}",
        )
    if status == ProbeStatus.ok and cancel.is_set():
        status, error = ProbeStatus.cancelled, "cancelled by the user"
    if status in (ProbeStatus.failed, ProbeStatus.lost) and error:
        log("error", f"{name}: {error}", name)
    elif status == ProbeStatus.skipped and error:
        log("info", f"{name} skipped: {error}", name)
    return ProbeOutcome(
        name=name,
        status=status,
        started=started,
        ended=time.time(),
        warnings=list(dict.fromkeys(ctx.warnings)),
        error=error,
    )


__all__ = ["compute_scorecard", "run_probe"]
