"""A step measured on the box: one decoder layer of the plan timed by the probe's step suite.

Apart from core.planner.request and core.planner.result, which both use them: the request's
``hardware.measured_step`` and the result's ``compute.step_source``; the step time model reads the
first in ``speed.step_time.measured_compute``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.planner.choices import Method
from core.planner.request_fields import left_out


class MeasuredStep(BaseModel):
    """One decoder layer of this plan timed on the box (the probe's step suite), per micro-batch:
    the planner builds the step from it (layer × layers + output layer, × micro-batches, + the
    optimizer) in place of its own compute estimate, while the micro-batch, sequence length and
    method are the ones measured."""

    model_config = ConfigDict(extra="forbid")

    layer_s: float = Field(
        ..., gt=0, le=3600, description="one layer's forward + backward, seconds"
    )
    head_s: float = Field(
        0.0, ge=0, le=3600, description="the output layer and loss, forward + backward, seconds"
    )
    attention_s: float = Field(
        0.0, ge=0, le=3600, description="the layer's attention core, seconds"
    )
    gemm_s: float = Field(0.0, ge=0, le=3600, description="the layer's linear layers, seconds")
    optimizer_s_per_param: float = Field(
        0.0, ge=0, le=1, description="optimizer step seconds per trainable parameter"
    )
    micro_batch: int = Field(..., ge=1, description="the micro-batch measured")
    seq_len: int = Field(..., ge=1, description="the sequence length measured")
    method: Method = Field(..., description="the method measured")
    source: str = Field(..., description="where and when: 'HOST (GPU, date)'")


class StepSource(BaseModel):
    """Where a plan's step time comes from (the base of ``ComputeResult``, whose other keys follow
    these)."""

    step_source: str = Field(
        "planned",
        description="'planned', or 'measured on HOST (GPU, date)' when "
        "hardware.measured_step set the step time",
    )
    planned_step_time_s: float | None = Field(
        None,
        exclude_if=left_out,
        description="the planner's own step time, when a measured step replaced it",
    )


class MeasuredHardware(BaseModel):
    """The box's measured step, a part of ``HardwareSpec`` (its other keys are the GPU and the
    network)."""

    measured_step: MeasuredStep | None = Field(
        None,
        title="Measured step",
        exclude_if=left_out,
        description="one layer timed on the box by the step probe",
    )
