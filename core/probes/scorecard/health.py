"""Are the GPUs healthy? Clock reasons, ECC, retired pages, remapped rows, reset, Xid and kernel-log
lines.

A box can be the one ordered and still carry a failing card: these checks read the counters and logs
that say a GPU needs a reset or a replacement (ECC, page retirement, row remapping, Xid and
kernel-log lines); the state of the links between them is core.probes.scorecard.links. ``xid_grade``
is shared with the burn's Xid check in ``stability``, so an Xid code grades the same whenever it
appears.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from core.probes.evidence import Check, CheckStatus
from core.probes.parsers.xid_catalog import classify_xid
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    NO_GPU,
    PASS,
    RANK,
    WARN,
    Box,
    check,
    gpus_text,
    plural,
    worst,
)


def check_clock_reasons(box: Box) -> Check | None:
    reasons: dict[int, set[str]] = defaultdict(set)
    for h in box.health:
        reasons[h.index].update(h.clocks_event_reasons)
    for m in box.snapshot:
        reasons[m.gpu].update(m.clocks_event_reasons)
    reported = any(reasons.values()) or any(
        m.sm_clock_mhz is not None or m.clocks_event_mask is not None for m in box.snapshot
    )
    if not reported:
        return None  # e.g. `nvidia-smi -q -d PAGE_RETIREMENT` says nothing about clocks
    odd = {
        i: sorted(r - T.BENIGN_CLOCK_REASONS)
        for i, r in reasons.items()
        if r - T.BENIGN_CLOCK_REASONS
    }
    expected = "only idle or SW power cap"
    if not odd:
        return check(
            "health",
            "Clock-event reasons",
            PASS,
            "none besides idle / SW power cap",
            expected,
            T.THROTTLE_SOURCE,
            "no throttling",
        )
    measured = "; ".join(f"GPU {i}: {', '.join(r)}" for i, r in sorted(odd.items()))
    hw = sorted(i for i, r in odd.items() if set(r) & T.HW_CLOCK_REASONS)
    what = (
        "hardware slowdown (power brake / thermal)"
        if hw
        else "clock-event reasons beyond idle and power cap"
    )
    who = hw or sorted(odd)
    return check(
        "health",
        "Clock-event reasons",
        WARN,
        measured,
        expected,
        T.THROTTLE_SOURCE,
        f"{gpus_text(who)} {'reports' if len(who) == 1 else 'report'} {what} in the snapshot; "
        "watch under load",
    )


def check_ecc(box: Box) -> Check | None:
    if not box.health:
        return None
    counted = [
        h
        for h in box.health
        if any(
            v is not None
            for v in (
                h.ecc_volatile_uncorrectable,
                h.ecc_aggregate_uncorrectable,
                h.ecc_volatile_correctable,
                h.ecc_aggregate_correctable,
                h.ecc_aggregate_sram_correctable,
            )
        )
    ]
    expected = (
        f"0 uncorrectable; SRAM correctable < {T.SRAM_CORRECTABLE_WARN:,} "
        f"(fail > {T.SRAM_CORRECTABLE_FAIL:,})"
    )
    if not counted:
        return check(
            "health",
            "ECC errors",
            INFO,
            "counters not reported",
            expected,
            T.ECC_SOURCE,
            "nvidia-smi did not report ECC counters",
        )
    findings: list[tuple[CheckStatus, str]] = []
    dbe = [h.index for h in counted if (h.ecc_volatile_uncorrectable or 0) > 0]
    agg = [h.index for h in counted if (h.ecc_aggregate_uncorrectable or 0) > 0]
    if dbe:
        findings.append((FAIL, f"volatile uncorrectable ECC errors on {gpus_text(dbe)}"))
    if agg:
        findings.append(
            (FAIL, f"uncorrectable ECC errors in the lifetime counters of {gpus_text(agg)}")
        )
    for h in counted:
        sram = h.ecc_aggregate_sram_correctable
        if sram is None:
            continue
        if sram > T.SRAM_CORRECTABLE_FAIL:
            findings.append((FAIL, f"GPU {h.index} has {sram:,} correctable SRAM errors"))
        elif sram >= T.SRAM_CORRECTABLE_WARN:
            findings.append((WARN, f"GPU {h.index} has {sram:,} correctable SRAM errors"))
    flagged = [h.index for h in counted if h.sram_threshold_exceeded]
    if flagged:
        findings.append((WARN, f"the SRAM error threshold is exceeded on {gpus_text(flagged)}"))
    before = {h.index: h.ecc_volatile_correctable for h in box.before}
    grew = [
        h.index
        for h in counted
        if (h.ecc_volatile_correctable or 0) > (before.get(h.index) or 0)
        and before.get(h.index) is not None
    ]
    if grew:
        findings.append((WARN, f"correctable ECC errors grew during the run on {gpus_text(grew)}"))
    total_vol = sum(h.ecc_volatile_uncorrectable or 0 for h in counted)
    total_agg = sum(h.ecc_aggregate_uncorrectable or 0 for h in counted)
    measured = (
        f"uncorrectable: {total_vol} volatile, {total_agg} aggregate over "
        f"{plural(len(counted), 'GPU')}"
    )
    if not findings:
        return check(
            "health",
            "ECC errors",
            PASS,
            measured,
            expected,
            T.ECC_SOURCE,
            "no uncorrectable ECC errors",
        )
    status = worst(s for s, _ in findings)
    reason = "; ".join(r for s, r in findings if s is status)
    return check("health", "ECC errors", status, measured, expected, T.ECC_SOURCE, reason)


def check_retired_pages(box: Box) -> Check | None:
    known = [
        h
        for h in box.health
        if h.retired_pages_pending is not None
        or h.retired_pages_sbe is not None
        or h.retired_pages_dbe is not None
    ]
    if not known:
        return None
    pending = [h.index for h in known if h.retired_pages_pending]
    retired = [
        h.index for h in known if (h.retired_pages_sbe or 0) + (h.retired_pages_dbe or 0) > 0
    ]
    sbe = sum(h.retired_pages_sbe or 0 for h in known)
    dbe = sum(h.retired_pages_dbe or 0 for h in known)
    measured = (
        f"retired pages SBE {sbe}, DBE {dbe}; pending on {len(pending)} of "
        f"{plural(len(known), 'GPU')}"
    )
    expected = "no page pending retirement (retired pages warn)"
    if pending:
        return check(
            "health",
            "Retired pages",
            FAIL,
            measured,
            expected,
            T.RETIRED_SOURCE,
            f"{len(pending)} GPUs have pages pending retirement ({gpus_text(pending)}): reset "
            "needed",
        )
    if retired:
        return check(
            "health",
            "Retired pages",
            WARN,
            measured,
            expected,
            T.RETIRED_SOURCE,
            f"{gpus_text(retired)} have retired memory pages",
        )
    return check(
        "health", "Retired pages", PASS, measured, expected, T.RETIRED_SOURCE, "no retired pages"
    )


def check_remapped_rows(box: Box) -> Check | None:
    known = [
        h
        for h in box.health
        if h.remapped_rows_pending is not None
        or h.remapped_rows_failure is not None
        or h.remapped_rows_uncorrectable is not None
    ]
    if not known:
        return None
    pending = [h.index for h in known if h.remapped_rows_pending]
    failed = [h.index for h in known if h.remapped_rows_failure]
    many = [
        h.index for h in known if (h.remapped_rows_uncorrectable or 0) > T.REMAP_UNCORRECTABLE_FAIL
    ]
    some = [h.index for h in known if (h.remapped_rows_uncorrectable or 0) > 0]
    low = [
        h.index
        for h in known
        if (h.remap_histogram.get("low", 0) + h.remap_histogram.get("none", 0)) > 0
    ]
    unc = sum(h.remapped_rows_uncorrectable or 0 for h in known)
    measured = (
        f"{unc} uncorrectable rows remapped; pending on {len(pending)}, failure on {len(failed)} "
        f"of {plural(len(known), 'GPU')}"
    )
    expected = f"pending No, failure No, uncorrectable rows ≤ {T.REMAP_UNCORRECTABLE_FAIL}"
    if pending or failed or many:
        parts = []
        if pending:
            parts.append(f"row remapping pending on {gpus_text(pending)} (reset needed)")
        if failed:
            parts.append(f"row remapping failed on {gpus_text(failed)}")
        if many:
            parts.append(
                f"more than {T.REMAP_UNCORRECTABLE_FAIL} uncorrectable rows on {gpus_text(many)}"
            )
        return check(
            "health", "Remapped rows", FAIL, measured, expected, T.REMAP_SOURCE, "; ".join(parts)
        )
    if some or low:
        which = sorted(set(some) | set(low))
        return check(
            "health",
            "Remapped rows",
            WARN,
            measured,
            expected,
            T.REMAP_SOURCE,
            f"{gpus_text(which)} have remapped rows or few spare rows left",
        )
    return check(
        "health",
        "Remapped rows",
        PASS,
        measured,
        expected,
        T.REMAP_SOURCE,
        "no remapped rows pending",
    )


def check_reset(box: Box) -> Check | None:
    known = [
        h
        for h in box.health
        if h.reset_required is not None
        or h.drain_and_reset_recommended is not None
        or h.recovery_action is not None
    ]
    if not known:
        return None
    required = [
        h.index
        for h in known
        if h.reset_required
        or (h.recovery_action or "none").strip().lower() not in ("none", "n/a", "")
    ]
    drain = [h.index for h in known if h.drain_and_reset_recommended]
    measured = (
        f"reset required on {len(required)}, drain recommended on {len(drain)} of "
        f"{plural(len(known), 'GPU')}"
    )
    if required:
        return check(
            "health",
            "GPU reset status",
            FAIL,
            measured,
            "No / No",
            T.RESET_SOURCE,
            f"{gpus_text(required)} need a reset",
        )
    if drain:
        return check(
            "health",
            "GPU reset status",
            WARN,
            measured,
            "No / No",
            T.RESET_SOURCE,
            f"drain and reset recommended on {gpus_text(drain)}",
        )
    return check(
        "health", "GPU reset status", PASS, measured, "No / No", T.RESET_SOURCE, "no reset pending"
    )


def xid_grade(codes: Sequence[tuple[int, str]]) -> tuple[CheckStatus, list[str]]:
    """Worst status over Xid (code, message) pairs and a phrase per distinct code, worst first."""
    by_code: dict[int, list[str]] = defaultdict(list)
    for code, message in codes:
        by_code[code].append(message)
    graded: list[tuple[CheckStatus, str]] = []
    for code, messages in sorted(by_code.items()):
        infos = [classify_xid(code, m) for m in messages]
        severities = {i.severity for i in infos}
        status = (
            FAIL if "FAIL" in severities else WARN if severities & {"WARN", "UNKNOWN"} else PASS
        )
        if code == 94 and len(messages) > 1:
            status = FAIL  # repeated contained ECC errors
        times = f" ×{len(messages)}" if len(messages) > 1 else ""
        meaning = (infos[0].meaning or "").split(" (")[0]
        graded.append((status, f"Xid {code}{times} ({meaning})"))
    graded.sort(key=lambda g: -RANK[g[0]])
    return worst(s for s, _ in graded), [text for _, text in graded]


def check_xid(box: Box) -> Check | None:
    log = box.e.kernel_log
    if log is None:
        return None
    expected = "no Xid since boot (13/31/43/45/92/94/121 warn; 48/62/64/74/79/95/119/120… fail)"
    if not log.xids and not log.sxids:
        measured = "none"
        if box.no_gpu:
            return check("health", "Xid errors since boot", INFO, NO_GPU, "—", T.XID_SOURCE, NO_GPU)
        return check(
            "health",
            "Xid errors since boot",
            PASS,
            measured,
            expected,
            T.XID_SOURCE,
            "no Xid errors",
        )
    status, phrases = xid_grade([(x.code, x.message) for x in log.xids])
    pcis = sorted({x.pci for x in log.xids if x.pci})
    for s in log.sxids:
        sx = FAIL if s.fatal or any(x.code == 74 for x in log.xids) else WARN
        status = worst([status, sx])
        phrases.append(
            f"SXid {s.code} ({'fatal' if s.fatal else 'non-fatal'}) on NVSwitch {s.switch}"
        )
    measured = "; ".join(phrases)
    where = f" on {', '.join(pcis)}" if pcis else ""
    if status is PASS:
        return check(
            "health",
            "Xid errors since boot",
            PASS,
            measured,
            expected,
            T.XID_SOURCE,
            f"only informational Xid codes{where}",
        )
    return check(
        "health",
        "Xid errors since boot",
        status,
        measured,
        expected,
        T.XID_SOURCE,
        f"{phrases[0]}{where}",
    )


def check_kernel_events(box: Box) -> Check | None:
    log = box.e.kernel_log
    if log is None or not log.events:
        return None
    kinds = Counter(ev.kind for ev in log.events if ev.kind != "pcie_downtrained")
    if not kinds:
        return None
    measured = ", ".join(f"{kind.replace('_', ' ')} ×{n}" for kind, n in kinds.most_common())
    fail = [k for k in kinds if k in ("gpu_fell_off_bus", "gpu_reset_needed")]
    warn = [k for k in kinds if k in ("machine_check", "nvlink_error", "hung_task")]
    expected = "no GPU reset / fell-off-bus / machine-check lines"
    if fail:
        return check(
            "health",
            "Kernel log",
            FAIL,
            measured,
            expected,
            T.XID_SOURCE,
            "the kernel log says a GPU "
            + ("fell off the bus" if "gpu_fell_off_bus" in fail else "needs a reset"),
        )
    if warn:
        return check(
            "health",
            "Kernel log",
            WARN,
            measured,
            expected,
            T.XID_SOURCE,
            f"the kernel log has {', '.join(k.replace('_', ' ') for k in warn)} lines",
        )
    return check(
        "health",
        "Kernel log",
        PASS,
        measured,
        expected,
        T.XID_SOURCE,
        "only application-level events (OOM kills, segfaults) in the kernel log",
    )
