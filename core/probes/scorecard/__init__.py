"""The readiness scorecard: grade a probe run's evidence PASS/WARN/FAIL against sourced thresholds.

Every check says what was measured, what was expected and who says so (``core.probes.scorecard.thresholds``), so a user
can forward the card to the provider. Missing evidence never fails a run: a probe that did not run leaves its
checks out, and a host without an NVIDIA GPU gets INFO lines instead of GPU failures. Verdict: NOT READY on any
FAIL, READY WITH WARNINGS on any WARN, READY otherwise.

This module runs the questions in card order and words the verdict; each question is a module of its own:
``inventory`` (is this the machine ordered?), ``health`` (are the cards and links healthy?), ``network`` (does
the interconnect deliver?), ``compute`` (do the GPUs compute at speed?), ``storage`` (can storage feed the
job?) and ``stability`` (does it hold across ranks and under load?). ``expectations`` holds the expected figures
they grade against, ``common`` the view of the evidence and the helpers they share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.catalog import Catalog, load_catalog
from core.probes.evidence import Check, ProbeEvidence, Scorecard, Verdict
from core.probes.samples import GpuMetric
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import FAIL, NO_GPU, PASS, WARN, Box, check, fmt_num, size_label
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
    check_ib_ports,
    check_kernel_events,
    check_nvlink,
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
from core.probes.scorecard.network import check_collectives, check_fabric, check_pcie
from core.probes.scorecard.stability import check_burn, check_distributed
from core.probes.scorecard.storage import check_storage


def score(evidence: ProbeEvidence, catalog: Catalog | None = None, *, expected: str | None = None,
          read_need_bytes_per_s: float | None = None, samples: Sequence[GpuMetric] | None = None) -> Scorecard:
    """Grade a run. ``expected`` is the user's order ('8× H100-SXM'); ``read_need_bytes_per_s`` the plan's data
    read need per node; ``samples`` the live GPU metrics (for clocks under load). Raises ValueError only for a
    malformed ``expected``."""
    catalog = catalog or load_catalog()
    order = parse_order(expected, catalog) if expected else None
    box = Box(evidence, catalog, samples or [])
    checks: list[Check] = []
    if box.no_gpu:
        if order is not None:
            checks.append(check("inventory", "GPU count and model", FAIL, NO_GPU, f"{order.gpus or ''}× "
                                f"{order.gpu_id} as ordered".lstrip("× "), T.INVENTORY_SOURCE,
                                f"{NO_GPU}, but {order.gpu_id} GPUs were ordered"))
            checks += [c for c in no_gpu_checks(box) if c.name != "GPU count and model"]
        else:
            checks += no_gpu_checks(box)
    elif box.measured_gpus:
        checks.append(check_count_and_model(box, order))
        gpu_checks: list[Callable[[Box], Check | None]] = [
            check_persistence, check_ecc_mode, check_pcie, check_fabric, check_clock_reasons, check_ecc,
            check_retired_pages, check_remapped_rows, check_reset,
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
    if not checks:
        checks.append(check("inventory", "Probes run", WARN, "no evidence", "at least one probe result", "—",
                            "no probe produced any evidence"))
    return Scorecard(verdict=verdict_of(checks), checks=checks, summary=summarise(checks))


def verdict_of(checks: Sequence[Check]) -> Verdict:
    statuses = {c.status for c in checks}
    if FAIL in statuses:
        return Verdict.not_ready
    if WARN in statuses:
        return Verdict.ready_with_warnings
    return Verdict.ready


def summarise(checks: Sequence[Check], most: int = 3) -> str:
    """One sentence: the verdict and the main reasons (failures first, else warnings)."""
    verdict = verdict_of(checks)
    if verdict is Verdict.ready:
        graded = [c for c in checks if c.status is PASS]
        info = len(checks) - len(graded)
        tail = f" ({info} not applicable or not measured)" if info else ""
        if not graded:
            return f"READY: nothing failed or warned ({info} checks not applicable or not measured)."
        return f"READY: all {len(graded)} graded checks passed{tail}."
    status = FAIL if verdict is Verdict.not_ready else WARN
    reasons = [c.reason.rstrip(".") for c in checks if c.status is status]
    more = len(reasons) - most
    text = "; ".join(reasons[:most])
    if more > 0:
        text += f"; and {more} more {'failure' if status is FAIL else 'warning'}{'s' if more > 1 else ''}"
    return f"{verdict.value}: {text}."


__all__ = [
    "NO_GPU", "BusbwExpectation", "Order", "busbw_at_largest", "expected_busbw", "fmt_num", "matmul_reference",
    "parse_order", "probed_gpu", "score", "size_label", "summarise", "verdict_of",
]
