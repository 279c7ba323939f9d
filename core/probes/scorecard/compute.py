"""Do the GPUs compute as fast as healthy ones? Matmul TFLOP/s against the reference and the spread
between GPUs.

The reference is the achievable (MAMF) figure from ``expectations.matmul_reference``, the same one
``core.probes.apply`` scales the plan's MFU by; the slowest GPU is graded because synchronous data
parallelism runs at its pace. A CPU-only host gets an INFO line with its throughput for the record;
a host whose GPUs torch cannot use gets a warning, since its figure says nothing about them. Figures
below 1 TFLOP/s (a CPU) read in GFLOP/s.
"""

from __future__ import annotations

from core.probes.evidence import Check
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    INFO,
    NO_GPU,
    PASS,
    WARN,
    Box,
    check,
    flops_span,
    fmt_num,
    grade,
    is_finite,
    plural,
)
from core.probes.scorecard.expectations import matmul_reference


def check_matmul(box: Box) -> list[Check]:
    c = box.e.compute
    if c is None:
        return []
    values = [v for v in c.tflops_per_device if is_finite(v) and v > 0]
    if not values:
        return [
            check(
                "performance",
                "Matmul TFLOP/s",
                INFO,
                "no result",
                "—",
                T.MATMUL_SOURCE,
                "the matmul probe returned no figure",
            )
        ]
    measured = f"{c.dtype} {flops_span(values)}"
    if c.device != "cuda" and box.count:
        return [
            check(
                "performance",
                "Matmul TFLOP/s",
                WARN,
                measured,
                "a bf16 matmul on every GPU",
                T.MATMUL_SOURCE,
                f"the host has {plural(box.count, 'NVIDIA GPU')} but the matmul ran on the "
                "CPU (torch cannot use CUDA there), so GPU compute was not measured",
            )
        ]
    if c.device != "cuda" or box.no_gpu:
        return [
            check(
                "performance",
                "Matmul TFLOP/s",
                INFO,
                measured,
                "—",
                T.MATMUL_SOURCE,
                f"{NO_GPU}; CPU throughput is shown for the record",
            )
        ]
    ref = matmul_reference(c, box.gpu)
    out: list[Check] = []
    if ref is None:
        out.append(
            check(
                "performance",
                "Matmul TFLOP/s",
                INFO,
                measured,
                "no reference for this GPU",
                T.MATMUL_SOURCE,
                "the catalog has no figure for this GPU and dtype",
            )
        )
    else:
        reference, source = ref
        worst = min(values)
        ratio = worst / reference
        status = grade(ratio, T.MATMUL_BAND)
        expected = (
            f"≥ {T.MATMUL_BAND.pass_at:.0%} of {fmt_num(reference)} TFLOP/s (warn below "
            f"{T.MATMUL_BAND.pass_at * reference:,.0f}, fail below "
            f"{T.MATMUL_BAND.warn_at * reference:,.0f})"
        )
        slowest = values.index(worst)
        reason = (
            f"the slowest GPU reaches {ratio:.0%} of the {fmt_num(reference)} TFLOP/s reference"
            if len(values) > 1
            else f"{ratio:.0%} of the {fmt_num(reference)} TFLOP/s reference"
        )
        if status is not PASS and len(values) > 1:
            reason += f" (GPU {slowest}: {worst:,.0f})"
        out.append(
            check("performance", "Matmul TFLOP/s", status, measured, expected, source, reason)
        )
    if len(values) > 1:
        best = max(values)
        lows = [(i, v / best) for i, v in enumerate(values)]
        worst_i, worst_r = min(lows, key=lambda t: t[1])
        status = grade(worst_r, T.SPREAD_BAND)
        measured = f"slowest GPU {worst_i} at {worst_r:.1%} of the best ({best:,.0f} TFLOP/s)"
        expected = (
            f"every GPU within {1 - T.SPREAD_BAND.pass_at:.0%} of the best (fail beyond "
            f"{1 - T.SPREAD_BAND.warn_at:.0%})"
        )
        reason = (
            "GPUs agree"
            if status is PASS
            else f"GPU {worst_i} is {1 - worst_r:.0%} slower than the node's best GPU"
        )
        out.append(
            check(
                "performance",
                "Matmul spread between GPUs",
                status,
                measured,
                expected,
                T.SPREAD_SOURCE,
                reason,
            )
        )
    return out
