"""The rates a plan times a GPU's work with, and where each comes from: the sourced lines of a
plan's assumptions.

One place so a single plan (plan.gpu_hardware), the search's GPU table and the assumptions list
agree on the matmul efficiency (MAMF table, the probe's measurement or the heuristic), the attention
kernel efficiency, HBM bandwidth and the host link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.catalog import GPU, network
from core.planner.request import Attention, PlanRequest, Precision
from core.planner.result import Assumption
from core.planner.speed import efficiency, kernels

if TYPE_CHECKING:
    from core.planner.speed.step import StepEstimate

PCIE_SOURCE = (
    "stas00/ml-engineering network/README.md: ~80% of the x16 per-direction spec is achieved"
)


@dataclass(frozen=True)
class GpuRates:
    hbm_gbs: float
    matmul_efficiency: float
    matmul_source: str
    attention_efficiency: float
    attention_source: str
    pcie_gbs: float
    fp8_gain: float = 1.0  # FP8 GEMM rate ÷ BF16 GEMM rate (1 unless the plan trains in FP8)


def pcie_gbs(gpu: GPU) -> float:
    """Per-direction host-link GB/s of the GPU's PCIe generation (Gen4 x16 ≈ 25, Gen5 ≈ 50; Gen4 if
    unknown)."""
    return network.PCIE_ACHIEVED_GBS.get(gpu.pcie_gen or 4, network.PCIE_ACHIEVED_GBS[4])


def rates(gpu: GPU, precision: Precision, measured_matmul_tflops: float | None = None) -> GpuRates:
    """The benchmark rates times the efficiencies of efficiency.py: the GEMM rate × the family's
    sustained factor, the FlashAttention-2 rate × the attention scale, an Ada card's power-capped
    clock (each at its cited prior)."""
    mm, mm_source = kernels.matmul_efficiency(gpu, precision, measured_matmul_tflops)
    attn, attn_source = kernels.attention_efficiency(gpu.architecture)
    # attention is matmuls with a softmax between: never faster than the card's own GEMMs
    if attn > mm:
        attn = mm
        attn_source += f"; held at this card's matmul rate ({mm:.0%})"
    clock = efficiency.power_clock(gpu.architecture, gpu.tdp_w, gpu.bf16_tflops)
    sustained = efficiency.gemm_sustained(gpu.architecture)
    if sustained != 1:
        mm_source += (
            f"; × {sustained:.2f} sustained in training ({efficiency.family(gpu.architecture)} "
            "family)"
        )
    if efficiency.ATTENTION_SCALE != 1:
        attn_source += f"; × {efficiency.ATTENTION_SCALE:.2f} in training"
    if clock < 1:
        clock_note = (
            f"; × {clock:.2f}, the clock its {gpu.tdp_w:g} W cap allows "
            f"({efficiency.ADA_TFLOPS_PER_WATT:.2f}"
            " nameplate TFLOP/s per W, the datasheet's)"
        )
        mm_source += clock_note
        attn_source += clock_note
    gain = 1.0
    if (
        precision is Precision.fp8
        and gpu.fp8_tflops
        and gpu.bf16_tflops
        and measured_matmul_tflops is None
    ):
        # FP8 training runs only the linear layers' GEMMs in FP8: attention (FlashAttention in
        # BF16), the LM head and every elementwise pass stay in 16 bits (Transformer Engine docs,
        # "Using FP8 with Transformer Engine"; Micikevicius et al. 2022, arXiv:2209.05433 §4:
        # softmax/attention and the output layer in higher precision). Attention's efficiency is
        # restated against the FP8 peak so it keeps the BF16 rate.
        bf16_mm, _ = kernels.matmul_efficiency(gpu, Precision.amp_bf16)
        gain = max(gpu.fp8_tflops * mm / (gpu.bf16_tflops * bf16_mm), 1.0)
        attn *= gpu.bf16_tflops / gpu.fp8_tflops
        attn_source += "; BF16 attention under FP8 training (restated against the FP8 peak)"
    return GpuRates(
        kernels.hbm_bytes_per_s(gpu) / 1e9,
        min(mm * sustained * clock, 1.0),
        mm_source,
        attn * efficiency.ATTENTION_SCALE * clock,
        attn_source,
        pcie_gbs(gpu),
        gain,
    )


def time_assumptions(request: PlanRequest, gpu: GPU, est: StepEstimate) -> list[Assumption]:
    """The assumption lines of the time model, and the achieved MFU it yields."""
    t, hw = request.training, request.hardware
    r = rates(gpu, t.precision, hw.matmul_tflops if hw else None)
    lines = [
        Assumption(
            name="matmul efficiency",
            value=f"{r.matmul_efficiency:.1%} of peak",
            source=r.matmul_source,
        ),
        Assumption(
            name="attention kernel efficiency",
            value=(
                f"{r.attention_efficiency:.0%} of peak"
                if t.attention is not Attention.eager
                else "eager: s² matmuls at the matmul efficiency + score passes at HBM bandwidth"
            ),
            source=r.attention_source
            if t.attention is not Attention.eager
            else "docs/formulas.md, Compute",
        ),
        Assumption(
            name="memory bandwidth",
            value=f"{r.hbm_gbs:,.0f} GB/s",
            source=gpu.sources.get("memory_bandwidth_gbs")
            or f"heuristic: {kernels.HBM_FALLBACK_GBS:,.0f} GB/s (no figure for {gpu.id})",
        ),
    ]
    if request.assumptions.mfu is not None:
        lines.append(
            Assumption(
                name="MFU (forced)",
                value=f"{request.assumptions.mfu:.0%}",
                source="user override: the step takes model FLOPs ÷ (peak × MFU)",
            )
        )
    lines.append(
        Assumption(
            name="achieved MFU",
            value=f"{float(est.mfu):.0%} (HFU {float(est.hfu):.0%})",
            source="result: model FLOPs (6N or 4N + 6T for adapters, + causal attention) × "
            "tokens/s ÷ peak",
        )
    )
    return lines
