"""Does the box hold up across ranks and under sustained load? The distributed environment and the
burn.

The distributed checks confirm an all-reduce sums right and every rank sees a consistent environment
on a real network interface; the burn checks temperature, throttling, SM clock, Xid and throughput
drift over minutes of load, which a snapshot or a short benchmark cannot show.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from core.probes.evidence import BurnResult, Check, DistributedResult
from core.probes.samples import GpuMetric
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import FAIL, PASS, WARN, Box, cap, check, grade, is_finite
from core.probes.scorecard.health import xid_grade

# --------------------------------------------------------------------------- distributed


def check_distributed(d: DistributedResult | None, box: Box) -> list[Check]:
    if d is None:
        return []
    src = T.DIST_SOURCE
    out = []
    expected = f"all_reduce(ones) == {d.world_size} on every rank"
    if d.error or not d.all_reduce_ok:
        out.append(
            check(
                "distributed",
                "All-reduce sanity",
                FAIL,
                d.error or "wrong sum",
                expected,
                src,
                f"the {d.backend} all_reduce sanity check failed"
                + (f": {d.error[:100]}" if d.error else ""),
            )
        )
    else:
        out.append(
            check(
                "distributed",
                "All-reduce sanity",
                PASS,
                f"exact on {d.world_size} ranks ({d.backend})",
                expected,
                src,
                "all ranks agree",
            )
        )
    if d.ranks:
        ranks = [r.get("RANK") for r in d.ranks]
        sizes = {r.get("WORLD_SIZE") for r in d.ranks}
        want = {str(i) for i in range(d.world_size)}
        ok = sorted(ranks, key=str) == sorted(want, key=str) and sizes == {str(d.world_size)}
        measured = (
            f"{len(d.ranks)} ranks reported, WORLD_SIZE {', '.join(sorted(str(s) for s in sizes))}"
        )
        exp = f"ranks 0..{d.world_size - 1} once each, WORLD_SIZE {d.world_size} everywhere"
        out.append(
            check(
                "distributed",
                "Rank environment",
                PASS if ok else FAIL,
                measured,
                exp,
                src,
                "rank environment consistent" if ok else "missing, duplicate or inconsistent ranks",
            )
        )
    iface = d.nccl_socket_ifname
    if iface:
        bad = iface.startswith(T.BAD_SOCKET_IFACES)
        out.append(
            check(
                "distributed",
                "NCCL interface",
                FAIL if bad else PASS,
                iface,
                "a real network interface (not lo/docker0/virbr/bond)",
                T.IFACE_SOURCE,
                f"NCCL is bound to {iface}, which does not reach other nodes"
                if bad
                else "NCCL interface looks right",
            )
        )
    return out


# --------------------------------------------------------------------------- stability burn


def _load_medians(samples: Sequence[GpuMetric]) -> dict[int, float]:
    by_gpu: dict[int, list[float]] = defaultdict(list)
    for m in samples:
        if m.sm_clock_mhz is not None and (m.util_pct or 0) >= T.LOAD_UTIL_PCT:
            by_gpu[m.gpu].append(m.sm_clock_mhz)
    return {g: statistics.median(v) for g, v in by_gpu.items() if v}


def check_burn(b: BurnResult | None, box: Box) -> list[Check]:
    if b is None:
        return []
    out: list[Check] = []
    minutes = f"{b.duration_s / 60:.0f} min" if b.duration_s >= 120 else f"{b.duration_s:.0f} s"
    if not b.completed:
        out.append(
            check(
                "stability",
                "Burn completed",
                WARN,
                f"stopped after {minutes}, {b.samples} samples",
                "the full burn",
                T.DRIFT_SOURCE,
                "the burn did not run to its end",
            )
        )
    if b.max_temp_c is not None:
        t = b.max_temp_c
        status = PASS if t <= T.TEMP_PASS_C else WARN if t < T.TEMP_FAIL_C else FAIL
        out.append(
            check(
                "stability",
                "Temperature under load",
                status,
                f"max {t:.0f} °C over {minutes}",
                f"≤ {T.TEMP_PASS_C:.0f} °C (fail from {T.TEMP_FAIL_C:.0f} °C)",
                T.TEMP_SOURCE,
                "cool under load" if status is PASS else f"GPUs reached {t:.0f} °C",
            )
        )
    reasons = set(b.throttle_reasons_seen)
    hw = sorted(reasons & T.HW_CLOCK_REASONS)
    odd = sorted(reasons - T.BENIGN_CLOCK_REASONS - T.HW_CLOCK_REASONS)
    status = FAIL if hw else WARN if odd else PASS
    out.append(
        check(
            "stability",
            "Throttling during burn",
            status,
            ", ".join(sorted(reasons)) or "none",
            "only idle / SW power cap; HW slowdown, thermal or power brake fail",
            T.THROTTLE_SOURCE,
            f"hardware throttling during the burn: {', '.join(hw)}"
            if hw
            else f"clock-event reasons during the burn: {', '.join(odd)}"
            if odd
            else "no throttling",
        )
    )
    out += _burn_clock(b, box)
    if b.xid_codes is not None:
        if b.xid_codes:
            status, phrases = xid_grade([(c, "") for c in b.xid_codes])
            out.append(
                check(
                    "stability",
                    "Xid during burn",
                    status if status is not PASS else WARN,
                    "; ".join(phrases),
                    "none",
                    T.XID_SOURCE,
                    f"{phrases[0]} during the burn",
                )
            )
        else:
            out.append(
                check(
                    "stability",
                    "Xid during burn",
                    PASS,
                    "none",
                    "none",
                    T.XID_SOURCE,
                    "no Xid during the burn",
                )
            )
    first, last = b.tflops_first_minute, b.tflops_last_minute
    if is_finite(first) and is_finite(last) and first:
        assert first is not None and last is not None
        drop = (first - last) / first
        status = PASS if drop <= T.DRIFT_PASS else WARN if drop <= T.DRIFT_FAIL else FAIL
        out.append(
            check(
                "stability",
                "Throughput drift",
                status,
                f"{first:,.0f} → {last:,.0f} TFLOP/s first vs last minute ({-drop:+.1%})",
                f"drop ≤ {T.DRIFT_PASS:.0%} (fail beyond {T.DRIFT_FAIL:.0%})",
                T.DRIFT_SOURCE,
                "throughput held"
                if status is PASS
                else f"throughput fell {drop:.0%} during the burn",
            )
        )
    return out


def _burn_clock(b: BurnResult, box: Box) -> list[Check]:
    maxes = [g.max_sm_clock_mhz for g in box.gpus if g.max_sm_clock_mhz]
    if not maxes:
        return []
    top = max(maxes)
    medians = _load_medians(box.samples)
    expected = (
        f"median ≥ {T.SM_CLOCK_BAND.pass_at:.0%} of {top:,.0f} MHz under load (fail below "
        f"{T.SM_CLOCK_BAND.warn_at:.0%})"
    )
    if medians:
        gpu, low = min(medians.items(), key=lambda kv: kv[1])
        status = grade(low / top, T.SM_CLOCK_BAND)
        measured = f"lowest GPU median {low:,.0f} MHz (GPU {gpu})"
    elif b.min_sm_clock_mhz is not None:
        low = b.min_sm_clock_mhz
        # a minimum, not the median the band is for
        status = cap(grade(low / top, T.SM_CLOCK_BAND), WARN)
        measured = f"lowest sample {low:,.0f} MHz"
    else:
        return []
    reason = (
        "clocks held under load"
        if status is PASS
        else f"SM clock fell to {low / top:.0%} of its maximum"
    )
    return [
        check(
            "stability",
            "SM clock under load",
            status,
            measured,
            expected,
            T.SM_CLOCK_SOURCE,
            reason,
        )
    ]
