"""What the card cannot vouch for: planned probes that were not measured, and evidence cut short by
a drop.

``score`` grades evidence alone; this module holds the card to what happened to the run. A probe
that failed and left no evidence to grade (a benchmark that crashed) is a FAIL line "<probe>:
failed" with its error: absent, the card would read READY on the probes that worked. Every planned
probe that has no measured outcome (``lost`` when the connection dropped, ``cancelled``, or no
outcome at all because the run was interrupted) becomes an INFO line "<probe>: not measured" - never
dropped from the card - and the verdict is at best INCOMPLETE: a card that reads READY would vouch
for checks nobody ran. A FAIL among what was measured still makes it NOT READY (a failure seen is a
failure). Evidence a lost probe gathered before the drop (``ProbeEvidence.partial``) is named
partial on its line; a collective sweep cut before its last message size is shown and never graded
(core.probes.scorecard.common.sweep_cut).

The rule is ours (heuristic in the sense of STYLE: no vendor defines "incomplete"); README "The
scorecard" states it for users.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.probes.evidence import Check, ProbeEvidence, ProbeOutcome, ProbeStatus, Scorecard, Verdict
from core.probes.scorecard import NO_GPU_VERDICT, summarise, verdict_of
from core.probes.scorecard.common import FAIL, INFO, NOT_MEASURED, Area, check

# The card area each probe's missing checks would have been in.
PROBE_AREA: dict[str, Area] = {
    "inventory": "inventory",
    "gpu_metrics": "health",
    "health": "health",
    "compute": "performance",
    "collectives": "network",
    "storage": "storage",
    "distributed": "distributed",
    "burn": "stability",
    # a cluster run's steps that can be cut short (SweepCut)
    "allreduce": "network",
    "nccl_tests": "network",
}
LOST = (ProbeStatus.lost, ProbeStatus.interrupted)
SOURCE = "tuneplan run record (the probe's outcome)"


def unmeasured(
    planned: Sequence[str], outcomes: Sequence[ProbeOutcome], status: str | None
) -> dict[str, str]:
    """Planned probe -> why it was not measured: lost, cancelled, or no outcome because the run
    ended first. Skipped and failed probes are not here: they ran, and their own checks (or their
    absence) say why."""
    last = {o.name: o for o in outcomes}
    why: dict[str, str] = {}
    for name in dict.fromkeys([*planned, *(o.name for o in outcomes if o.status in LOST)]):
        outcome = last.get(name)
        if outcome is None:
            if status not in (None, "completed"):
                ended = {
                    "interrupted": "was interrupted",
                    "cancelled": "was cancelled",
                    "failed": "failed",
                }
                why[name] = f"the run {ended.get(status, 'ended')} before it ran"
        elif outcome.status in LOST:
            why[name] = outcome.error or "the connection was lost"
        elif outcome.status is ProbeStatus.cancelled:
            why[name] = outcome.error or "cancelled"
    return why


def failed_checks(outcomes: Sequence[ProbeOutcome], evidence: ProbeEvidence | None) -> list[Check]:
    """A FAIL "not measured" line per probe that failed and left no evidence of its own to grade
    (gpu_metrics has none: its failure is always a line), or only partial evidence (a benchmark that
    stopped midway: its own lines show what it measured, ungraded); a probe whose whole evidence is
    there is graded by its own lines, and so is a cluster run's step (``cluster_checks``)."""
    if evidence is not None and evidence.cluster is not None:
        return []
    last = {o.name: o for o in outcomes}
    return [
        check(
            area,
            f"{name}: failed",
            FAIL,
            NOT_MEASURED,
            f"the {name} probe to run to its end",
            SOURCE,
            (o.error or "failed").rstrip("."),
        )
        for name, o in last.items()
        if (area := PROBE_AREA.get(name)) is not None
        and o.status is ProbeStatus.failed
        and not _whole_evidence(evidence, name)
    ]


def _whole_evidence(evidence: ProbeEvidence | None, probe: str) -> bool:
    return (
        evidence is not None
        and bool(getattr(evidence, probe, None))
        and probe not in evidence.partial
    )


def not_measured_checks(why: dict[str, str], evidence: ProbeEvidence | None) -> list[Check]:
    """One INFO line per unmeasured probe; 'partial: …' where it left evidence before the drop."""
    partial = evidence.partial if evidence is not None else {}
    out = []
    for name, reason in why.items():
        kept = partial.get(name)
        measured = f"partial: {kept}" if kept else "not measured"
        out.append(
            check(
                PROBE_AREA.get(name, "inventory"),
                f"{name}: not measured",
                INFO,
                measured,
                f"the {name} probe to run to its end",
                SOURCE,
                reason.rstrip("."),
            )
        )
    return out


def account_for_outcomes(
    card: Scorecard,
    planned: Sequence[str],
    outcomes: Sequence[ProbeOutcome],
    status: str | None,
    evidence: ProbeEvidence | None = None,
) -> Scorecard:
    """``card`` with every unmeasured planned probe listed and the verdict held to INCOMPLETE at
    best.

    Idempotent: a card that already lists a probe as not measured is not given the line twice (the
    runner saves the accounted card; the report and the CLI account again for runs saved before, or
    left running)."""
    card = _with_failures(card, outcomes, evidence)
    why = unmeasured(planned, outcomes, status)
    if not why:
        return card
    have = {c.name for c in card.checks}
    lines = [c for c in not_measured_checks(why, evidence) if c.name not in have]
    if not lines and card.verdict in (Verdict.incomplete, Verdict.not_ready):
        return card  # accounted already
    checks = [*card.checks, *lines]
    names = ", ".join(why)
    headline = (
        f"the run was {status}: {names} {'was' if len(why) == 1 else 'were'} not measured"
        if status == "interrupted"
        else f"{names} {'was' if len(why) == 1 else 'were'} not measured"
    )
    graded = _graded_tail(card)
    if any(c.status is FAIL for c in checks):
        # the card's own summary already names the failures (and its wording)
        verdict = Verdict.not_ready
        summary = f"{card.summary.rstrip('.')}; and {headline}."
    else:
        verdict = Verdict.incomplete
        summary = f"{Verdict.incomplete.value}: {headline}{graded}."
    return card.model_copy(update={"verdict": verdict, "checks": checks, "summary": summary})


def _with_failures(
    card: Scorecard, outcomes: Sequence[ProbeOutcome], evidence: ProbeEvidence | None
) -> Scorecard:
    """``card`` with the `failed_checks` it lacks, graded again (as is when it has them all)."""
    have = {c.name for c in card.checks}
    lines = [c for c in failed_checks(outcomes, evidence) if c.name not in have]
    if not lines:
        return card
    checks = [*card.checks, *lines]
    label = NO_GPU_VERDICT if card.summary.startswith(NO_GPU_VERDICT) else None
    return card.model_copy(
        update={
            "verdict": verdict_of(checks),
            "checks": checks,
            "summary": summarise(checks, label=label),
        }
    )


def _graded_tail(card: Scorecard) -> str:
    """What the measured part said, after the INCOMPLETE headline ('; of what was measured: …')."""
    if card.verdict is None or card.verdict is Verdict.incomplete or not card.summary:
        return ""
    said = card.summary.rstrip(".")
    head, colon, rest = said.partition(": ")
    return f"; of what was measured: {rest if colon and head.isupper() else said}"


__all__ = [
    "LOST",
    "PROBE_AREA",
    "account_for_outcomes",
    "failed_checks",
    "not_measured_checks",
    "unmeasured",
]
