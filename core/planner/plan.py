"""From a PlanRequest to a PlanResult: the one entry point the CLI, the GUI and the reports call."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from core.catalog import (
    GPU,
    PRICING_MODES,
    Catalog,
    CatalogError,
    load_catalog,
    network,
)
from core.json_file import FileReadError, read_json_file
from core.planner.choices import OVERRIDABLE
from core.planner.choose import search
from core.planner.model import parallel, savers
from core.planner.model.config_shape import ConfigError
from core.planner.model.params import Architecture
from core.planner.money import pricing, sanity, storage
from core.planner.money.plan_cost import UNPRICED, plan_cost, price_for, withheld
from core.planner.plan_assumptions import grown_batch_warning, plan_assumptions
from core.planner.plan_memory import memory_result
from core.planner.plan_storage import StoragePlan, storage_plan, storage_result
from core.planner.request import (
    TEN_YEARS_HOURS,
    HardwareSpec,
    Method,
    ModelSpec,
    PlanRequest,
    Precision,
    Sharding,
    TrainingSpec,
)
from core.planner.result import (
    Candidate,
    ComputeResult,
    PlanResult,
    StepBreakdown,
    TimeResult,
)
from core.planner.speed import bands, gpu_rates, sustained, wall_time
from core.planner.speed.frameworks import effective_training
from core.planner.speed.hardware import Hardware
from core.planner.speed.step import (
    StepEstimate,
    evaluate,
    global_batch,
)
from core.planner.speed.step_time import measured_applies
from core.units import fmt_hours


class PlanError(ValueError):
    """A request the planner cannot honour; the message is one sentence naming the field."""


def resolve_model(spec: ModelSpec, catalog: Catalog) -> tuple[Architecture, list[str]]:
    """The architecture behind a model spec, plus warnings about how it was obtained."""
    try:
        if spec.preset is not None:
            preset = catalog.model(spec.preset)
            return Architecture.from_hf_config(preset.config, preset.id), []
        if spec.hf_config is not None:
            path = Path(spec.hf_config).expanduser()
            try:
                cfg = read_json_file(path)
            except FileReadError as exc:
                raise PlanError(f"model.hf_config: {exc}") from None
            # the checkpoint's folder
            named = path.parent.name if path.name == "config.json" else path.stem
            # a non-object: from_hf_config says
            name = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
            arch = Architecture.from_hf_config(cfg, str(name or named))
        elif spec.inline_config is not None:
            cfg = spec.inline_config
            arch = Architecture.from_hf_config(cfg, str(cfg.get("_name_or_path", "custom config")))
        else:
            assert spec.params is not None
            arch = Architecture.from_param_count(spec.params)
        return arch, list(arch.notes)
    except ConfigError as exc:
        raise PlanError(f"model: {exc}") from exc
    except CatalogError as exc:
        raise PlanError(str(exc)) from exc


def gpu_hardware(
    gpu: GPU, spec: HardwareSpec, precision: Precision, training: TrainingSpec | None = None
) -> Hardware:
    """The GPU's rates and topology; with `training`, the framework's sustained share of the step on
    it too."""
    r = gpu_rates.rates(gpu, precision, spec.matmul_tflops)
    kept = (
        sustained.factor(training.framework, training.method, gpu.architecture) if training else 1.0
    )
    return Hardware(
        sustained=kept,
        fp8_gain=r.fp8_gain,
        memory_bytes=gpu.memory_bytes,
        peak_tflops=gpu.peak_tflops(precision.value),
        intra_gbs=network.intra_node_gbs(gpu, spec.gpus_per_node)
        if spec.gpus_per_node > 1
        else 1e6,
        hbm_gbs=r.hbm_gbs,
        matmul_efficiency=r.matmul_efficiency,
        attention_efficiency=r.attention_efficiency,
        pcie_gbs=r.pcie_gbs,
        gpus_per_node=spec.gpus_per_node,
        nodes=spec.nodes,
        gpu_net_gbps=(
            spec.inter_node_gbps / spec.gpus_per_node
            if spec.inter_node_gbps
            else network.named_gpu_gbps(spec.interconnect, gpu.architecture)
            if spec.interconnect
            else network.typical_gpu_net_gbps(
                gpu.intra_node_link, gpu.architecture, spec.gpus_per_node
            )
        ),
        measured_intra_busbw_gbs=spec.intra_node_busbw_gbs,
        measured_step=spec.measured_step,
    )


def _check_request(request: PlanRequest, arch: Architecture) -> None:
    seq = request.data.seq_len
    if arch.max_position and seq > arch.max_position:
        raise PlanError(
            f"data.seq_len {seq} is longer than {arch.name}'s context of {arch.max_position} "
            f"tokens; use at most {arch.max_position}"
        )
    hw = request.hardware
    if hw and request.training.sharding is Sharding.hsdp and hw.nodes < 2:
        raise PlanError(
            "training.sharding hsdp needs hardware.nodes ≥ 2 (it replicates across nodes)"
        )
    problem = parallel.model_problem(arch, request.training, seq)
    if problem is None and hw:
        t = request.training
        problem = parallel.hardware_problem(
            t,
            hw.gpus_per_node,
            hw.gpus,
            t.micro_batch_size,
            global_batch(t, seq, max(hw.gpus // t.model_parallel, 1)),
        )
    if problem:
        raise PlanError(problem)


def on_candidate(request: PlanRequest, c: Candidate) -> PlanRequest:
    """The request set to a search candidate: its hardware and the training settings the search
    chose for it."""
    return request.model_copy(
        update={
            "hardware": HardwareSpec(gpu=c.gpu, gpus_per_node=c.gpus_per_node, nodes=c.nodes),
            "training": request.training.model_copy(
                update={
                    "sharding": c.sharding,
                    "gradient_checkpointing": c.gradient_checkpointing,
                    "micro_batch_size": c.micro_batch_size,
                    "tensor_parallel": c.tensor_parallel,
                    "pipeline_parallel": c.pipeline_parallel,
                    # Virtual stages and sequence parallel need pp > 1 and tp > 1: keep them only
                    # where they still apply.
                    "pipeline_virtual_stages": request.training.pipeline_virtual_stages
                    if c.pipeline_parallel > 1
                    else 1,
                    "sequence_parallel": request.training.sequence_parallel
                    and c.tensor_parallel > 1,
                    **parallel.unkept_fields(
                        request.training, c.pipeline_parallel, c.gradient_checkpointing
                    ),
                }
            ),
        }
    )


def _best_settings(request: PlanRequest, arch: Architecture, catalog: Catalog) -> PlanRequest:
    """The user's hardware with the micro-batch, sharding and recomputation the search would give
    it, each one the request (or its framework's recipe) leaves unset: the search table lists that
    GPU at its best, and a plan on it must not keep micro-batch 1 and cost more. What the user set
    is kept."""
    t = request.training
    held = {name for name in OVERRIDABLE if name in t.model_fields_set}
    if t.activation_offload or t.checkpoint_every_k_blocks is not None:
        # both need every block (or every k-th) recomputed, as asked
        held.add("gradient_checkpointing")
    if held >= set(OVERRIDABLE):
        return request
    try:
        best = search.on_hardware(arch, request, catalog, frozenset(held))
    except CatalogError:
        return request  # an unknown GPU: plan() names it in one sentence
    if best is None:
        return request  # nothing fits on it: the plan says so, by how much and what would
    return request.model_copy(
        update={
            "training": t.model_copy(
                update={
                    "sharding": best.sharding,
                    "gradient_checkpointing": best.gradient_checkpointing,
                    "micro_batch_size": best.micro_batch_size,
                }
            )
        }
    )


def _hardware(
    request: PlanRequest, arch: Architecture, catalog: Catalog
) -> tuple[PlanRequest, list[Candidate], list[str]]:
    """The request with its hardware: the user's (at its best settings), or the search's
    recommendation (with the rows it ranked)."""
    if request.hardware is not None:
        return _best_settings(request, arch, catalog), [], []
    found = search.search(arch, request, catalog)
    if not found.best:
        raise PlanError(
            found.reason
            or "nothing fits: no GPU, count and sharding in the catalog can hold this "
            "model; try method qlora or a shorter data.seq_len"
        )
    return on_candidate(request, found.best), found.candidates, found.warnings


def _warnings(
    request: PlanRequest, est: StepEstimate, gpu: GPU, st: StoragePlan, hours: float
) -> list[str]:
    """What the plan should say beside its figures: it spills, stalls, is communication-bound (that
    it does not fit is the first sanity finding: core/planner/money/sanity.py)."""
    hw_spec, t, mem = request.hardware, request.training, est.memory
    assert hw_spec is not None
    out = []
    stall = storage.data_stall_warning(
        st.needed, request.assumptions.data_tier, not request.data.packing, nodes=hw_spec.nodes
    )
    if stall:
        out.append(stall)
    spill = savers.paged_spill_warning(float(mem.paged), float(mem.paged_spilled))
    if spill:
        out.append(spill)
    if float(est.scaling_efficiency) < 0.7:
        out.append(
            f"communication-bound: scaling efficiency {float(est.scaling_efficiency):.0%}; fewer "
            "nodes or a faster interconnect may finish cheaper"
        )
    # Data-parallel replicas; _check_request already refused more replicas × micro-batch than the
    # global batch.
    replicas = int(parallel.data_parallel(hw_spec.gpus, t))
    if t.optimizer_in_backward and float(est.accumulation) > 1:
        out.append(
            "optimizer_in_backward steps each weight as its gradient arrives, so it cannot "
            f"accumulate {int(est.accumulation)} micro-batches per step (torchtune refuses it): "
            "raise the micro-batch or GPUs, lower global_batch_size to "
            f"{t.micro_batch_size * replicas}, or turn it off"
        )
    if t.method is Method.full and t.lora_rank is not None:
        out.append("lora_rank ignored for a full fine-tune")
    if not hours <= TEN_YEARS_HOURS:  # NaN too
        out.append(
            f"the run would take {fmt_hours(hours)}, more than 10 years: no one can run this; "
            "check "
            "data.tokens and data.epochs, or give it more GPUs"
        )
    return out


def _compute_result(arch: Architecture, est: StepEstimate) -> ComputeResult:
    return ComputeResult(
        params_total=arch.total_params,
        params_active=arch.active_params,
        params_trainable=int(est.trainable_params),
        flops_per_token=float(est.flops_per_token),
        model_flops_per_token=float(est.model_flops_per_token),
        total_flops=float(est.total_flops),
        tokens_per_second=float(est.tokens_per_s),
        mfu=float(est.mfu),
        hfu=float(est.hfu),
        achieved_tflops_per_gpu=float(est.achieved_tflops),
        step_time_s=float(est.step_s),
        comm_time_s=float(est.comm_s),
        scaling_efficiency=float(est.scaling_efficiency),
        steps=int(est.steps),
        tokens_per_step=int(est.tokens_per_step),
        step_breakdown_s=StepBreakdown(**{k: float(v) for k, v in est.breakdown.items()}),
    )


def _step_source(
    arch: Architecture, request: PlanRequest, hw: Hardware, warnings: list[str]
) -> tuple[str, float | None]:
    """Where the step time comes from ('planned', or 'measured on HOST (GPU, date)') and, when
    measured, the planner's own figure to compare with; a measured layer that no longer matches the
    plan is said and ignored."""
    m = hw.measured_step
    if m is None:
        return "planned", None
    t, seq = request.training, request.data.seq_len
    if not measured_applies(hw, t, seq, t.micro_batch_size):
        warnings.append(
            f"hardware.measured_step was timed at micro-batch {m.micro_batch} × {m.seq_len} tokens "
            f"({m.method.value}); this plan runs {t.micro_batch_size} × {seq} ({t.method.value}), "
            "so "
            "its step time is planned, not measured"
        )
        return "planned", None
    planned = evaluate(
        arch, t, request.data, dataclasses.replace(hw, measured_step=None), request.assumptions
    )
    return f"measured on {m.source}", float(planned.step_s)


def plan(
    request: PlanRequest, catalog: Catalog | None = None, today: dt.date | None = None
) -> PlanResult:
    """Plan one request. Without `hardware`, search the catalog and plan the recommended
    configuration."""
    catalog = catalog or load_catalog()
    today = today or dt.date.today()
    try:
        request = request.model_copy(update={"training": effective_training(request.training)})
    except ValueError as exc:
        raise PlanError(str(exc)) from exc
    arch, warnings = resolve_model(request.model, catalog)
    _check_request(request, arch)
    searched = request.hardware is None
    request, candidates, search_warnings = _hardware(request, arch, catalog)
    warnings += search_warnings
    hw_spec, a = request.hardware, request.assumptions
    assert hw_spec is not None
    try:
        gpu = catalog.gpu(hw_spec.gpu)
    except CatalogError as exc:
        raise PlanError(str(exc)) from exc
    hw = gpu_hardware(gpu, hw_spec, request.training.precision, request.training)
    est = evaluate(arch, request.training, request.data, hw, request.assumptions)
    step_source, planned_step = _step_source(arch, request, hw, warnings)
    st = storage_plan(arch, request, est, catalog)
    trusted_only = not pricing.low_confidence_ok(request, gpu.id, searched=searched)
    offers = {
        mode: price_for(catalog, gpu, request, mode, hw_spec.gpus_per_node, trusted_only)
        for mode in PRICING_MODES
    }
    eval_s = wall_time.evaluation_seconds(
        a,
        float(est.steps),
        float(est.tokens_per_s),
        2.0 * arch.active_params,
        float(est.model_flops_per_token),
    )
    cost_result, cost_warnings, price_assumptions = plan_cost(
        request,
        catalog,
        gpu,
        hw_spec,
        float(est.hours) + eval_s / 3600,
        st.ckpt_on_demand,
        st.lines,
        st.disk,
        offers,
        trusted_only=trusted_only,
    )
    hours = (float(est.hours) + eval_s / 3600) * (1 + st.ckpt.overhead_fraction)
    fits = bool(est.fits)  # a plan that cannot run quotes no price, not even in a warning
    warnings += (cost_warnings if fits else []) + _warnings(request, est, gpu, st, hours)
    compute_result = _compute_result(arch, est)
    compute_result.step_source, compute_result.planned_step_time_s = step_source, planned_step
    # the bands describe the step model against published runs, not a measurement
    tps_band = hours_band = None
    if planned_step is None:
        tps_band, hours_band = bands.time_bands(
            request.training,
            hw_spec.gpus,
            hw_spec.nodes,
            float(est.tokens_per_s),
            hours,
            a.restart_minutes / 60 * (1 + st.ckpt.overhead_fraction),
        )
    compute_result.tokens_per_second_range = tps_band
    chosen_usd = getattr(cost_result.compute_usd, request.pricing.mode.value)
    cost_result.total_usd_range = bands.cost_band(
        hours_band, hours, chosen_usd, cost_result.total_usd
    )
    if not fits:  # what cannot run has no cost: no figure, no price, nothing to budget
        cost_result, price_assumptions = withheld(cost_result, UNPRICED), []
        chosen_usd, offers = None, dict.fromkeys(offers)
    if candidates:
        # The chosen row shows the plan's own figures (checkpoint writes and restarts included), so
        # the headline and the table agree figure for figure; the other rows stay failure-free
        # estimates.
        candidates[0] = candidates[0].model_copy(
            update={
                "hours": hours,
                "cost_usd": chosen_usd,
                "billed_gpus": cost_result.billed_gpus_per_node,
                "instance": cost_result.instance,
            }
        )
    result = PlanResult(
        request=request,
        model_name=arch.name,
        hardware=hw_spec,
        memory=memory_result(arch, request, est, gpu, hw),
        compute=compute_result,
        time=TimeResult(
            hours=hours,
            gpu_hours=hours * hw_spec.gpus,
            hours_range=hours_band,
            breakdown_s=wall_time.breakdown(
                float(est.steps * est.step_s), a.restart_minutes * 60, eval_s, st.ckpt, hours
            ),
        ),
        checkpoint=st.ckpt,
        storage=storage_result(request, st, priced=fits),
        cost=cost_result,
        candidates=candidates,
        assumptions=plan_assumptions(arch, request, gpu, est) + price_assumptions,
        warnings=warnings,
    )
    grown = grown_batch_warning(result)
    if grown:
        result.warnings.append(grown)
    priced_from = {mode: (offer.row if offer else None) for mode, offer in offers.items()}
    result.sanity = sanity.sanity_checks(request, result, catalog, today, prices=priced_from)
    return result
