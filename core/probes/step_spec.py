"""The training-step probe's contract: which layer to build (`StepSpec`), what it measured
(`StepResult`), and the measured step that follows from them (`measured_step`).

The spec is made on the client from a plan (core.probes.apply.step_spec: the one place probes read
the planner) and sent to ``resources/probes/step.py`` as JSON; it also carries what the plan expects
of that layer's step (`StepPlanned`), so the scorecard can compare planned with measured without the
planner. The measured step is the planner's own decomposition with the compute parts replaced by
measurements: one layer's forward + backward × the layers on the busiest GPU + the output layer and
loss, × the micro-batches per step, + the optimizer step scaled from the layer's trainable
parameters to the GPU's; the host transfers, exposed communication and pipeline bubble stay as
planned (communication from the measured bus bandwidth when the run measured it and it was applied).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Widths, vocabulary and sequence are divided by this on a CPU (heads keep their head dim), so a CPU
# finishes one layer in seconds; a GPU measures the plan's own shapes (scale 1).
CPU_SCALE = 32


class StepPlanned(BaseModel):
    """What the plan expects of the step the layer belongs to, for the comparison (seconds per
    optimizer step)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(..., description="the model's name")
    layers: float = Field(
        ..., gt=0, description="decoder layers on the busiest GPU (all of them without pp)"
    )
    accumulation: float = Field(
        ..., ge=1, description="micro-batches each GPU runs per optimizer step"
    )
    trainable_per_gpu: float = Field(
        ..., ge=0, description="trainable parameters one GPU steps (after sharding)"
    )
    step_s: float = Field(..., gt=0, description="the plan's step time")
    gemm_s: float = 0.0
    attention_s: float = 0.0
    memory_bound_s: float = 0.0
    optimizer_s: float = 0.0
    other_s: float = Field(
        0.0, description="host transfers, exposed communication and the pipeline bubble"
    )
    gpu: str = Field("", description="the plan's GPU")
    memory_per_gpu: int = Field(0, description="the plan's memory per GPU (reserved), bytes")
    notes: list[str] = Field(
        default_factory=list, description="how the layer differs from the plan's, in words"
    )


class StepSpec(BaseModel):
    """One decoder layer of the plan's model and its recipe; the remote script reads every field but
    ``planned``."""

    model_config = ConfigDict(extra="forbid")

    hidden: int = Field(..., ge=1)
    heads: int = Field(..., ge=1)
    kv_heads: int = Field(..., ge=1)
    head_dim: int = Field(..., ge=1)
    v_head_dim: int | None = None
    intermediate: int = Field(..., ge=1)
    gated: bool = True
    activation: str = "silu"
    layer_norm: bool = False
    attention_bias: bool = False
    experts: int = 0
    top_k: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0
    vocab: int = Field(..., ge=1)
    micro_batch: int = Field(..., ge=1)
    seq_len: int = Field(..., ge=1)
    method: Literal["full", "lora", "qlora"] = "lora"
    precision: str = "amp_bf16"
    lora_rank: int = 16
    lora_targets: list[str] = Field(default_factory=list)
    checkpointing: Literal["none", "selective", "full"] = "full"
    optimizer: str = "adamw"
    cross_entropy: str = "standard"
    # How the probe runs: scale divides the shapes (1 on a GPU), reps timed after warm-up, a time
    # bound.
    scale: int = Field(1, ge=1, le=1024)
    reps: int = Field(5, ge=2, le=100)
    warmup: int = Field(2, ge=0, le=20)
    max_seconds: float = Field(120.0, gt=0, le=3600)
    device: Literal["auto", "cpu"] = "auto"
    planned: StepPlanned | None = None

    def script_json(self, scale: int, device: Literal["auto", "cpu"]) -> str:
        """The JSON the remote script reads: the layer and recipe at ``scale``, without the plan's
        figures."""
        return self.model_copy(update={"scale": scale, "device": device}).model_dump_json(
            exclude={"planned"}
        )


class Timing(BaseModel):
    """Seconds of repeated timed runs of one piece of work."""

    median_s: float
    min_s: float
    max_s: float
    spread: float = Field(..., description="(max − min) ÷ median")
    reps: int


class StepResult(BaseModel):
    """What the step probe measured for one layer (seconds per micro-batch unless named
    otherwise)."""

    device: str = Field(..., description="cuda or cpu")
    name: str = Field("", description="the GPU as torch names it, or cpu")
    dtype: str = ""
    scale: int = Field(1, description="shapes divided by this (1: the plan's own shapes)")
    shape: str = ""
    host: str = ""
    date: str = Field("", description="UTC date and time of the measurement")
    params_layer: int = 0
    trainable_layer: int = 0
    params_head: int = 0
    flops_layer: float | None = Field(
        None, description="FLOPs of one forward + backward, as torch counts them"
    )
    tflops: float | None = None
    layer: Timing
    layer_times: list[float] = Field(default_factory=list)
    optimizer: Timing
    head: Timing
    attention: Timing | None = None
    gemm: Timing | None = None
    peak_allocated: int | None = None
    peak_reserved: int | None = None
    memory_source: str = "CPU: memory not measured"
    planned: StepPlanned | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def on_gpu(self) -> bool:
        return self.device == "cuda"

    @property
    def where(self) -> str:
        """'HOST (GPU, date)' as the plan and the report say it."""
        what = self.name if self.on_gpu else "CPU"
        scaled = f", shapes ÷ {self.scale}" if self.scale > 1 else ""
        return f"{self.host or 'the host'} ({what}, {self.date[:10] or 'undated'}{scaled})"


class MeasuredStep(BaseModel):
    """A step time built from the measured layer, with its parts (seconds per optimizer step)."""

    step_s: float
    layers_s: float = Field(..., description="forward + backward of the layers, all micro-batches")
    head_s: float
    optimizer_s: float
    attention_s: float | None = None
    gemm_s: float | None = None
    other_s: float


def seconds_text(value: float) -> str:
    """'0.0123 s', '4.61 s', '10,033 s': three significant figures, a long step in whole seconds."""
    return f"{value:,.0f} s" if value >= 100 else f"{value:.3g} s"


def gap_text(measured: float, planned: float) -> str:
    """'12% slower', '8% faster', 'as planned', or '4.59e+03× the planned time' for a gap a
    percentage hides."""
    ratio = measured / planned if planned > 0 else 1.0
    if ratio > 2:
        return f"{ratio:.3g}× the planned time"
    if abs(ratio - 1) < 0.005:
        return "as planned"
    return f"{abs(ratio - 1):.0%} {'slower' if ratio > 1 else 'faster'}"


def optimizer_per_param(result: StepResult) -> float:
    """Seconds per trainable parameter of the measured optimizer step (0 when the layer trains
    nothing)."""
    return result.optimizer.median_s / result.trainable_layer if result.trainable_layer else 0.0


def measured_step(result: StepResult, planned: StepPlanned) -> MeasuredStep:
    """The plan's step with its compute measured: (layer × layers + head) × micro-batches +
    optimizer + the rest."""
    acc, layers = planned.accumulation, planned.layers
    layers_s = result.layer.median_s * layers * acc
    head_s = result.head.median_s * acc
    optimizer_s = optimizer_per_param(result) * planned.trainable_per_gpu
    attention = result.attention.median_s * layers * acc if result.attention else None
    gemm = result.gemm.median_s * layers * acc if result.gemm else None
    return MeasuredStep(
        step_s=layers_s + head_s + optimizer_s + planned.other_s,
        layers_s=layers_s,
        head_s=head_s,
        optimizer_s=optimizer_s,
        attention_s=attention,
        gemm_s=gemm,
        other_s=planned.other_s,
    )


def comparable(result: StepResult) -> str | None:
    """Why a measured step cannot stand for the plan's, or None when it can (the plan's own
    shapes)."""
    if result.scale > 1:
        return (
            f"measured at shapes divided by {result.scale} on the "
            f"{'GPU' if result.on_gpu else 'CPU'}, so it "
            "says how the probe works, not how long the plan's step takes"
        )
    if result.planned is None:
        return "the run was not given a plan to compare with"
    return None


def differences(result: StepResult, step: MeasuredStep, planned: StepPlanned) -> list[str]:
    """Where measured and planned differ, largest first: GEMMs, attention and the rest of the
    layer."""
    rows: list[tuple[float, str]] = []
    rest_measured = step.layers_s + step.head_s - (step.gemm_s or 0.0) - (step.attention_s or 0.0)
    pairs = (
        ("GEMMs", step.gemm_s, planned.gemm_s),
        ("attention", step.attention_s, planned.attention_s),
        (
            "the rest of the layer (norms, activations, loss)",
            max(rest_measured, 0.0),
            planned.memory_bound_s,
        ),
        ("optimizer", step.optimizer_s, planned.optimizer_s),
    )
    for name, measured, plan in pairs:
        if measured is None or plan <= 0:
            continue
        rows.append(
            (
                abs(measured - plan),
                f"{name} {seconds_text(measured)} measured vs {seconds_text(plan)} planned",
            )
        )
    return [text for _gap, text in sorted(rows, reverse=True)]
