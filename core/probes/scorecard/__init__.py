"""The readiness scorecard: grade a probe run's evidence PASS/WARN/FAIL against sourced thresholds.

Every check says what was measured, what was expected and who says so
(``core.probes.scorecard.thresholds``), so a user can forward the card to the provider. Missing
evidence never fails a run: a probe that did not run leaves its checks out. Verdict: NOT READY on
any FAIL, READY WITH WARNINGS on any WARN, READY otherwise. Two cases are worded apart because the
plain rule would mislead: a host without an NVIDIA GPU is "NOT READY for GPU training: no NVIDIA GPU
found" (its GPU count fails; the GPU checks become INFO lines, every other check is graded as
usual), and a run with nothing graded (no evidence, or only INFO lines) has no verdict at all
(``verdict`` None), with a summary that says why: "READY" would vouch for a box that nothing was
measured on. A run whose graded lines all say only what was not measured (a storage path that could
not be tested, and nothing else) is INCOMPLETE for the same reason, not READY WITH WARNINGS.

This module runs the questions in card order and words the verdict; each question is a module of its
own: ``inventory`` (is this the machine ordered?), ``health`` (are the cards and links healthy?),
``network`` (does the interconnect deliver?), ``compute`` (do the GPUs compute at speed?),
``storage`` (can storage feed the job?) and ``stability`` (does it hold across ranks and under
load?); a cluster run's row adds ``cluster`` (do the nodes agree and finish?) and
``cluster_network`` (does the network between them deliver?). ``expectations`` holds the expected
figures they grade against, ``common`` the view of the evidence and the helpers they share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.catalog import Catalog, load_catalog
from core.probes.evidence import Check, ProbeEvidence, ProbeOutcome, ProbeStatus, Scorecard, Verdict
from core.probes.samples import GpuMetric
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.cluster import cluster_checks
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    NO_GPU,
    NOT_MEASURED,
    PASS,
    WARN,
    Box,
    check,
    fmt_flops,
    fmt_num,
    size_label,
)
from core.probes.scorecard.compute import check_matmul
from core.probes.scorecard.expectations import (
    BusbwExpectation,
    busbw_at_largest,
    expected_busbw,
    matmul_reference,
    probed_gpu,
)
from core.probes.scorecard.health import (
    check_clock_reasons,
    check_ecc,
    check_kernel_events,
    check_remapped_rows,
    check_reset,
    check_retired_pages,
    check_xid,
)
from core.probes.scorecard.inventory import (
    Order,
    check_count_and_model,
    check_ecc_mode,
    check_persistence,
    check_topology,
    check_whole_cards,
    no_gpu_checks,
    parse_order,
)
from core.probes.scorecard.links import check_ib_ports, check_nvlink
from core.probes.scorecard.network import check_collectives, check_fabric, check_pcie
from core.probes.scorecard.stability import check_burn, check_distributed
from core.probes.scorecard.step import check_step
from core.probes.scorecard.storage import check_key, check_path, check_storage

# What a host without an NVIDIA GPU is, in place of the bare "NOT READY" (which would read as a
# broken GPU box).
NO_GPU_VERDICT = f"{Verdict.not_ready.value} for GPU training"


def score(
    evidence: ProbeEvidence,
    catalog: Catalog | None = None,
    *,
    expected: str | None = None,
    read_need_bytes_per_s: float | None = None,
    samples: Sequence[GpuMetric] | None = None,
) -> Scorecard:
    """Grade a run. ``expected`` is the user's order ('8× H100-SXM'); ``read_need_bytes_per_s`` the
    plan's data read need per node; ``samples`` the live GPU metrics (for clocks under load). Raises
    ValueError only for a malformed ``expected``."""
    catalog = catalog or load_catalog()
    order = parse_order(expected, catalog) if expected else None
    box = Box(evidence, catalog, samples or [])
    checks: list[Check] = []
    if box.no_gpu:
        want = (
            f"{order.gpus or ''}× {order.gpu_id} as ordered".lstrip("× ")
            if order is not None
            else "at least one NVIDIA GPU (for GPU training)"
        )
        reason = f"{NO_GPU}, but {order.gpu_id} GPUs were ordered" if order is not None else NO_GPU
        checks.append(
            check(
                "inventory", "GPU count and model", FAIL, NO_GPU, want, T.INVENTORY_SOURCE, reason
            )
        )
        checks += [c for c in no_gpu_checks(box) if c.name != "GPU count and model"]
    elif box.measured_gpus:
        checks.append(check_count_and_model(box, order))
        gpu_checks: list[Callable[[Box], Check | None]] = [
            check_persistence,
            check_ecc_mode,
            check_pcie,
            check_fabric,
            check_clock_reasons,
            check_ecc,
            check_retired_pages,
            check_remapped_rows,
            check_reset,
        ]
        whole = check_whole_cards(box, order)
        checks += [c for c in [whole, *(fn(box) for fn in gpu_checks)] if c is not None]
    for fn in (check_xid, check_kernel_events, check_nvlink, check_ib_ports, check_topology):
        if box.no_gpu and fn in (check_xid, check_nvlink):
            continue  # already INFO above
        found = fn(box)
        if found is not None:
            checks.append(found)
    checks += check_matmul(box)
    checks += check_collectives(box)
    checks += check_storage(box, read_need_bytes_per_s)
    checks += check_distributed(evidence.distributed, box)
    checks += check_burn(evidence.burn, box)
    checks += check_step(evidence.step)
    # a cluster run's own row: what only the nodes together can answer
    if evidence.cluster is not None:
        checks += cluster_checks(evidence.cluster, catalog)
    summary = summarise(checks, label=NO_GPU_VERDICT if box.no_gpu else None)
    return Scorecard(verdict=verdict_of(checks), checks=checks, summary=summary)


def no_verdict_summary(why: str = "") -> str:
    """The sentence a run without evidence gets instead of a verdict; ``why`` is what became of its
    probes (see :func:`why_no_evidence`), when the caller knows."""
    return f"No verdict: no probe produced any evidence to grade{f' ({why})' if why else ''}."


def why_no_evidence(outcomes: Sequence[ProbeOutcome], status: str | None = None) -> str:
    """What became of a run's probes, for a run that produced no evidence: 'collectives skipped:
    torch is not installed …; storage failed: …', or how the run ended before any probe finished."""
    ended = [
        f"{o.name} {o.status.value}" + (f": {o.error.rstrip('.')}" if o.error else "")
        for o in outcomes
        if o.status is not ProbeStatus.ok
    ]
    if ended:
        return "; ".join(ended)
    if outcomes:
        names = ", ".join(o.name for o in outcomes)
        return (
            f"{names} ran but {'gives' if len(outcomes) == 1 else 'give'} no figure the scorecard "
            "grades"
        )
    if status and status != "completed":
        return f"the run was {status} before any probe finished"
    return "no probe finished"


def explain_no_verdict(
    card: Scorecard, outcomes: Sequence[ProbeOutcome], status: str | None = None
) -> Scorecard:
    """``card`` with its summary saying what became of the probes when the run gave nothing to grade
    (the runner grades evidence alone; the window, the CLI and the report know the outcomes); any
    other card as it is."""
    if card.verdict is not None or card.checks:
        return card
    return card.model_copy(
        update={"summary": no_verdict_summary(why_no_evidence(outcomes, status))}
    )


def verdict_of(checks: Sequence[Check]) -> Verdict | None:
    """The verdict of a list of checks; None when none of them is graded (nothing measured, or only
    INFO lines), INCOMPLETE when every graded line says only what was not measured: a box nothing
    was measured on is not READY, nor READY WITH WARNINGS."""
    statuses = {c.status for c in checks}
    if not statuses - {INFO}:
        return None
    if all(c.measured == NOT_MEASURED for c in checks if c.status is not INFO):
        return Verdict.incomplete
    if FAIL in statuses:
        return Verdict.not_ready
    if WARN in statuses:
        return Verdict.ready_with_warnings
    return Verdict.ready


def summarise(checks: Sequence[Check], most: int = 3, label: str | None = None) -> str:
    """One sentence: the verdict (or ``label`` in its place) and the main reasons (failures first,
    else warnings)."""
    verdict = verdict_of(checks)
    if verdict is None:
        if not checks:
            return no_verdict_summary()
        which = "the one check" if len(checks) == 1 else f"none of the {len(checks)} checks"
        return (
            f"No verdict: {which} could{' not' if len(checks) == 1 else ''} be graded here (not "
            "applicable "
            "or not measured)."
        )
    if verdict is Verdict.ready:
        graded = [c for c in checks if c.status is PASS]
        info = len(checks) - len(graded)
        tail = f" ({info} not applicable or not measured)" if info else ""
        return f"READY: all {len(graded)} graded checks passed{tail}."
    if verdict is Verdict.incomplete:
        reasons = [c.reason.rstrip(".") for c in checks if c.status is not INFO]
        return f"{verdict.value}: nothing was measured: {_first(reasons, most, 'reason')}."
    status = FAIL if verdict is Verdict.not_ready else WARN
    reasons = [c.reason.rstrip(".") for c in checks if c.status is status]
    return (
        f"{label or verdict.value}: "
        f"{_first(reasons, most, 'failure' if status is FAIL else 'warning')}."
    )


def _first(reasons: Sequence[str], most: int, noun: str) -> str:
    """The first ``most`` reasons, and how many more ('; and 2 more warnings')."""
    more = len(reasons) - most
    text = "; ".join(reasons[:most])
    if more > 0:
        text += f"; and {more} more {noun}{'s' if more > 1 else ''}"
    return text


__all__ = [
    "NO_GPU",
    "NO_GPU_VERDICT",
    "BusbwExpectation",
    "Order",
    "busbw_at_largest",
    "check_key",
    "check_path",
    "expected_busbw",
    "explain_no_verdict",
    "fmt_flops",
    "fmt_num",
    "matmul_reference",
    "no_verdict_summary",
    "parse_order",
    "probed_gpu",
    "score",
    "size_label",
    "summarise",
    "verdict_of",
    "why_no_evidence",
]
