"""Apply a probe run's measurements to a plan: matmul TFLOP/s from the matmul probe, bandwidth from
the all-reduce.

The planner times every GEMM at the GPU's achievable matmul rate: the MAMF table's figure for a
healthy GPU of the class, or ``hardware.matmul_tflops`` when given. A probe measures this box, so
the slowest GPU's matmul TFLOP/s is set there (E_mm = measured ÷ peak); the slowest because
synchronous data parallelism runs at the pace of its slowest rank. The note compares it with the
MAMF reference the scorecard uses (e.g. 794.5 TFLOP/s for H100 SXM). Measured busbw replaces the
planner's link assumption: single-node runs set ``intra_node_busbw_gbs`` directly; multi-node runs
set ``inter_node_gbps`` to the per-node rate at which the planner's inter-node busbw (one rail per
GPU of rate ÷ GPUs per node, summed over the measured group's GPUs per node at 0.96 of line rate,
see ``core.planner.speed.comms``) equals the measured busbw. A cluster run measures that figure
between the nodes themselves (its NCCL all-reduce across them, else nccl-tests), so it sets
``inter_node_gbps`` of a multi-node plan the same way; a 1-node plan has no inter-node network to
set, and gloo between CPUs measures the hosts' TCP stacks, not the GPUs' network, so neither is
applied.
"""

from __future__ import annotations

from core.catalog import GPU, Catalog, CatalogError, load_catalog, network
from core.planner.measured_step import MeasuredStep
from core.planner.model.params import Architecture
from core.planner.request import (
    Attention,
    CrossEntropy,
    HardwareSpec,
    Optimizer,
    PlanRequest,
    TrainingSpec,
)
from core.planner.speed import comms
from core.probes.cluster.evidence import ClusterEvidence
from core.probes.evidence import ComputeResult, ProbeEvidence
from core.probes.samples import CollectiveResult, GpuInfo
from core.probes.scorecard import NO_GPU
from core.probes.scorecard.common import fmt_num, plural, size_label
from core.probes.scorecard.expectations import busbw_at_largest, matmul_reference, probed_gpu
from core.probes.step_spec import (
    StepPlanned,
    StepResult,
    StepSpec,
    comparable,
    gap_text,
    measured_step,
    optimizer_per_param,
    seconds_text,
)


def gpu_matmul(compute: ComputeResult | None) -> list[float]:
    """The matmul TFLOP/s a GPU reached, per device; empty when the probe did not measure a GPU."""
    if compute is None or compute.device != "cuda":
        return []
    return [v for v in compute.tflops_per_device if v > 0]


def multi_gpu_busbw(evidence: ProbeEvidence) -> tuple[float, int] | None:
    """(busbw, message size) of an all-reduce over two or more GPUs on a real link, else None."""
    coll = evidence.collectives
    if (
        coll is None
        or (coll.nranks or 0) < 2
        or (evidence.collective_interconnect or "").lower() == "loopback"
    ):
        return None
    return busbw_at_largest(coll)


def cluster_busbw(cluster: ClusterEvidence | None) -> tuple[CollectiveResult, str, str] | None:
    """The collective measured between the nodes (the NCCL all-reduce across them, else nccl-tests),
    what ran it ('nccl' or 'gloo') and in words; None when the cluster run measured none."""
    if cluster is None:
        return None
    run = cluster.allreduce
    if run is not None and run.collective is not None and run.backend == "nccl":
        return run.collective, "nccl", f"the NCCL all-reduce across {run.nnodes} nodes"
    if cluster.nccl_tests is not None:
        launcher = f" under {cluster.nccl_tests_launcher}" if cluster.nccl_tests_launcher else ""
        return (
            cluster.nccl_tests,
            "nccl",
            f"nccl-tests{launcher} across {len(cluster.nodes) or 2} nodes",
        )
    if run is not None and run.collective is not None:
        return (
            run.collective,
            run.backend,
            f"the {run.backend} all-reduce across {run.nnodes} nodes",
        )
    return None


def nothing_to_apply(evidence: ProbeEvidence | None, catalog: Catalog) -> str | None:
    """Why applying this run would change nothing, or None when it has something for a plan: a GPU
    model the catalog knows (the plan's hardware), a GPU matmul figure (its matmul TFLOP/s) or a
    multi-GPU all-reduce (its network)."""
    if evidence is None:
        return "Nothing to apply to a plan: this run has no evidence."
    if (
        gpu_matmul(evidence.compute)
        or multi_gpu_busbw(evidence) is not None
        or probed_gpu(evidence, catalog)
    ):
        return None
    if evidence.step is not None and comparable(evidence.step) is None:
        return None
    found = cluster_busbw(evidence.cluster)
    if (found is not None and found[1] == "nccl") or _cluster_gpu(evidence.cluster, catalog)[
        0
    ] is not None:
        return None
    if found is not None:
        return (
            "Nothing to apply to a plan: the all-reduce between the nodes ran over gloo on CPUs, "
            "which says nothing about the GPUs' network."
        )
    inv = evidence.inventory
    if (
        inv is not None
        and not (inv.nvidia and inv.nvidia.gpus)
        and not (evidence.health and evidence.health.gpus)
    ):
        return f"Nothing to apply to a plan: {NO_GPU} on this host."
    return (
        "Nothing to apply to a plan: this run measured no GPU model, GPU matmul or multi-GPU "
        "all-reduce."
    )


def _cluster_gpu(cluster: ClusterEvidence | None, catalog: Catalog) -> tuple[GPU | None, int]:
    """The catalog GPU the cluster's nodes report (the first node that names one the catalog knows)
    and its count."""
    for node in cluster.nodes if cluster is not None else []:
        if node.facts.gpu_model:
            try:
                return catalog.gpu(node.facts.gpu_model), node.facts.gpu_count or 0
            except CatalogError:
                continue
    return None, 0


def _probed_gpu(evidence: ProbeEvidence, catalog: Catalog) -> tuple[GPU | None, int]:
    """The catalog GPU the box reports and how many it has (0 when unknown); a cluster row's from
    its nodes."""
    if evidence.cluster is not None:
        return _cluster_gpu(evidence.cluster, catalog)
    gpus: list[GpuInfo] = []
    for report in (evidence.inventory.nvidia if evidence.inventory else None, evidence.health):
        if report is not None and report.gpus:
            gpus = report.gpus
            break
    return probed_gpu(evidence, catalog), len(gpus)


def _hardware(
    request: PlanRequest, gpu: GPU | None, count: int, catalog: Catalog, notes: list[str]
) -> HardwareSpec | None:
    """The plan's hardware, with the GPU model switched to the probed one (the measurements describe
    it)."""
    hw = request.hardware
    if gpu is None:
        if hw is None:
            notes.append(
                "The probed box has no GPU the catalog knows, and the plan names no hardware: "
                "nothing applied."
            )
        return hw
    if hw is None:
        hw = HardwareSpec(gpu=gpu.id, gpus_per_node=max(count, 1))
        notes.append(f"Hardware set to {hw.gpus_per_node}× {gpu.id}, the probed box.")
        return hw
    try:
        planned = catalog.gpu_id(hw.gpu)
    except CatalogError:
        planned = hw.gpu
    if planned != gpu.id:
        notes.append(f"GPU {hw.gpu} → {gpu.id}: the measurements describe the probed box.")
        hw = hw.model_copy(update={"gpu": gpu.id})
    return hw


def _apply_matmul(
    request: PlanRequest, evidence: ProbeEvidence, gpu: GPU | None, notes: list[str]
) -> PlanRequest:
    """The slowest GPU's measured matmul TFLOP/s becomes hardware.matmul_tflops: the planner times
    every GEMM at it (E_mm = measured ÷ peak) instead of the MAMF table's healthy-GPU figure."""
    c = evidence.compute
    hw = request.hardware
    if c is None or hw is None:
        return request
    values = gpu_matmul(c)
    if not values:
        notes.append("Matmul TFLOP/s unchanged: the matmul probe did not measure a GPU.")
        return request
    slowest = min(values)
    ref = matmul_reference(c, gpu)
    versus = (
        f" ({slowest / ref[0]:.0%} of the {fmt_num(ref[0])} TFLOP/s a healthy GPU reaches)"
        if ref
        else ""
    )
    old = f"{hw.matmul_tflops:,.0f}" if hw.matmul_tflops else "table"
    where = f"{len(values)}× {gpu.id}" if gpu is not None else plural(len(values), "GPU")
    which = "the slowest of " if len(values) > 1 else ""
    notes.append(f"Matmul TFLOP/s {old} → {slowest:,.0f} measured on {which}{where}{versus}.")
    return request.model_copy(update={"hardware": hw.model_copy(update={"matmul_tflops": slowest})})


def _apply_busbw(
    request: PlanRequest, evidence: ProbeEvidence, catalog: Catalog, notes: list[str]
) -> PlanRequest:
    coll = evidence.collectives
    hw = request.hardware
    if coll is None or hw is None:
        return request
    if coll.failures or coll.wrong_total > 0:
        notes.append("Network bandwidth unchanged: the all-reduce run reported errors.")
        return request
    ic = (evidence.collective_interconnect or "").lower()
    found = multi_gpu_busbw(evidence)
    if found is None or found[0] <= 0:
        notes.append("Network bandwidth unchanged: no multi-GPU all-reduce figure to apply.")
        return request
    busbw, size = found
    at = f" at {size_label(size)}" if size else ""
    hosts = {d.host for d in coll.devices if d.host}
    nodes = len(hosts) if hosts else (2 if ic in ("infiniband", "roce", "efa", "ethernet") else 1)
    try:
        gpu = catalog.gpu(hw.gpu)
    except CatalogError:
        gpu = None
    if nodes == 1:
        if hw.intra_node_busbw_gbs is not None:
            old = f"{hw.intra_node_busbw_gbs:,.1f}"
        elif gpu is not None:
            old = (
                f"{gpu.intra_node_bandwidth_gbs(hw.gpus_per_node) * comms.BUSBW_EFFICIENCY:,.1f} "
                "(default)"
            )
        else:
            old = "default"
        ranks = (
            ""
            if coll.nranks is None
            else f" on {plural(coll.nranks, 'GPU')}"
            + (
                f" (the plan uses {hw.gpus_per_node} per node)"
                if coll.nranks != hw.gpus_per_node
                else ""
            )
        )
        notes.append(
            f"Intra-node busbw {old} → {busbw:,.1f} GB/s from the all-reduce measured{ranks}{at}."
        )
        return request.model_copy(
            update={"hardware": hw.model_copy(update={"intra_node_busbw_gbs": busbw})}
        )
    per_node = node_gbps_for_busbw(
        busbw, hw.gpus_per_node, _ranks_per_node(coll, nodes, hw.gpus_per_node)
    )
    notes.append(
        f"Inter-node network {_old_inter_node(hw, gpu)} → {per_node:,.0f} Gb/s per node from "
        f"{busbw:,.1f} GB/s all-reduce busbw measured across {nodes} nodes{at}."
    )
    return request.model_copy(
        update={"hardware": hw.model_copy(update={"inter_node_gbps": per_node})}
    )


def node_gbps_for_busbw(
    busbw_gbs: float, gpus_per_node: int, measured_per_node: int | None = None
) -> float:
    """The per-node Gbit/s at which the planner's inter-node busbw equals ``busbw_gbs`` GB/s as
    measured with ``measured_per_node`` GPUs on each node (default: as many as the plan): the
    planner gives each GPU its rail, node_rate ÷ gpus_per_node, and a group with k GPUs per node
    sums k rails at 0.96 of their rate (core.planner.speed.comms.inter_bytes_per_s), so one rail =
    busbw × 8 ÷ 0.96 ÷ k Gbit/s and the node has gpus_per_node of them."""
    k = max(measured_per_node or gpus_per_node, 1)
    return busbw_gbs * 8 / comms.RAIL_EFFICIENCY / k * gpus_per_node


def _ranks_per_node(coll: CollectiveResult, nodes: int, default: int) -> int:
    """GPUs per node in a multi-node run: its ranks ÷ its hosts, else the plan's GPUs per node."""
    return max(coll.nranks // nodes, 1) if coll.nranks and nodes else default


def _old_inter_node(hw: HardwareSpec, gpu: GPU | None) -> str:
    """The inter-node figure the plan had, for the note: its own, else the network type's default
    per node."""
    if hw.inter_node_gbps is not None:
        return f"{hw.inter_node_gbps:,.0f}"
    if gpu is None:
        return "default"
    per_gpu = (
        network.DEFAULT_GPU_GBPS[hw.interconnect]
        if hw.interconnect
        else network.typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, hw.gpus_per_node)
    )
    return f"{float(per_gpu) * hw.gpus_per_node:,.0f} (default)"


def _apply_cluster_busbw(
    request: PlanRequest, cluster: ClusterEvidence, catalog: Catalog, notes: list[str]
) -> PlanRequest:
    """A cluster run's busbw between the nodes sets the plan's inter_node_gbps (multi-node plans
    only)."""
    hw = request.hardware
    found = cluster_busbw(cluster)
    if hw is None:
        return request
    if found is None:
        notes.append(
            "Inter-node network unchanged: the cluster run measured no all-reduce between the "
            "nodes."
        )
        return request
    coll, backend, what = found
    if hw.nodes < 2:
        notes.append(
            "Inter-node network unchanged: the plan runs on 1 node, so the bandwidth measured "
            "between nodes does not apply (plan 2 or more nodes to use it)."
        )
        return request
    if backend != "nccl":
        notes.append(
            f"Inter-node network unchanged: {what} ran over {backend} on CPUs, which measures the "
            "hosts' "
            "TCP stacks, not the GPUs' network."
        )
        return request
    if coll.failures or coll.wrong_total > 0:
        notes.append(
            "Inter-node network unchanged: the all-reduce between the nodes reported errors."
        )
        return request
    largest = busbw_at_largest(coll)
    if largest is None or largest[0] <= 0:
        notes.append(
            "Inter-node network unchanged: the all-reduce between the nodes gave no busbw figure."
        )
        return request
    busbw, size = largest
    try:
        gpu: GPU | None = catalog.gpu(hw.gpu)
    except CatalogError:
        gpu = None
    hosts = {d.host for d in coll.devices if d.host}
    per_node = node_gbps_for_busbw(
        busbw,
        hw.gpus_per_node,
        _ranks_per_node(coll, len(hosts), hw.gpus_per_node) if hosts else None,
    )
    at = f" at {size_label(size)}" if size else ""
    notes.append(
        f"Inter-node network {_old_inter_node(hw, gpu)} → {per_node:,.0f} Gb/s per node from "
        f"{busbw:,.1f} GB/s busbw measured by {what}{at}."
    )
    return request.model_copy(
        update={"hardware": hw.model_copy(update={"inter_node_gbps": per_node})}
    )


def apply_to_plan(
    request: PlanRequest, evidence: ProbeEvidence, catalog: Catalog | None = None
) -> tuple[PlanRequest, list[str]]:
    """The request with the probe's matmul TFLOP/s, bandwidth and measured step applied, and one
    sentence per change (or per skip)."""
    catalog = catalog or load_catalog()
    notes: list[str] = []
    gpu, count = _probed_gpu(evidence, catalog)
    hw = _hardware(request, gpu, count, catalog, notes)
    if hw is None:
        return request, notes
    nodes = (
        len([n for n in evidence.cluster.nodes if n.state == "completed"])
        if evidence.cluster
        else 0
    )
    # the probed cluster supplies the hardware: all of its nodes
    if request.hardware is None and nodes > 1:
        hw = hw.model_copy(update={"nodes": nodes})
        notes[-1] = (
            f"Hardware set to {nodes} nodes × {hw.gpus_per_node}× {hw.gpu}, the probed cluster."
        )
    updated = request.model_copy(update={"hardware": hw})
    updated = _apply_matmul(updated, evidence, gpu, notes)
    updated = _apply_busbw(updated, evidence, catalog, notes)
    updated = _apply_step(updated, evidence, notes)
    if evidence.cluster is not None:
        updated = _apply_cluster_busbw(updated, evidence.cluster, catalog, notes)
    # Validate the result once so a figure outside the model's bounds fails here, with the field
    # named.
    return PlanRequest.model_validate(updated.model_dump()), notes


# ------------------------------------------------------------------------------------------- the
# step


def step_spec(request: PlanRequest, catalog: Catalog | None = None) -> StepSpec:
    """One decoder layer of the plan's model and its recipe, with what the plan expects of its step;
    ValueError with the planner's one sentence when the request cannot be planned."""
    from core.planner.plan import PlanError, plan
    from core.planner.timed_layer import layer_spec

    catalog = catalog or load_catalog()
    try:
        result = plan(request, catalog)
        layer = layer_spec(result, catalog)
    except PlanError as exc:
        raise ValueError(str(exc)) from None
    arch, t = layer.architecture, layer.training
    hw, c = result.hardware, result.compute
    b = c.step_breakdown_s
    planned = StepPlanned(
        model=result.model_name,
        layers=layer.layers,
        accumulation=layer.accumulation,
        trainable_per_gpu=layer.trainable_per_gpu,
        step_s=c.step_time_s,
        gemm_s=b.gemm,
        attention_s=b.attention,
        memory_bound_s=b.memory_bound,
        optimizer_s=b.optimizer,
        other_s=b.host_transfer + b.exposed_comm + b.bubble,
        gpu=hw.gpu,
        memory_per_gpu=result.memory.per_gpu.total,
        notes=_layer_notes(arch, t),
    )
    return StepSpec(
        hidden=arch.hidden,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        head_dim=arch.qk_head_dim,
        v_head_dim=arch.value_head_dim,
        intermediate=arch.intermediate,
        gated=arch.gated_mlp,
        activation="silu" if arch.gated_mlp else "gelu",
        layer_norm=arch.layer_norm,
        attention_bias=arch.attention_bias,
        experts=arch.experts,
        top_k=arch.experts_per_token,
        expert_intermediate=arch.expert_intermediate,
        shared_intermediate=arch.shared_intermediate,
        vocab=arch.vocab,
        micro_batch=t.micro_batch_size,
        seq_len=request.data.seq_len,
        method=t.method.value,
        precision=t.precision.value,
        lora_rank=t.lora_rank or 16,
        lora_targets=layer.lora_targets,
        checkpointing=t.checkpointing,
        optimizer=t.optimizer.value,
        cross_entropy=t.cross_entropy.value,
        planned=planned,
    )


def _layer_notes(arch: Architecture, t: TrainingSpec) -> list[str]:
    """How the timed layer differs from the plan's, so nobody reads more into the figure than it
    holds."""
    notes = []
    if arch.uses_mla:
        notes.append(
            "multi-head latent attention is timed as plain attention of the same head widths"
        )
    if arch.is_moe and arch.moe_layers < arch.layers:
        notes.append(
            f"every layer is timed as a mixture-of-experts layer ({arch.layers - arch.moe_layers} "
            f"of {arch.layers} are dense)"
        )
    if t.optimizer not in (Optimizer.adamw, Optimizer.sgd, Optimizer.sgd_momentum):
        notes.append(f"the optimizer {t.optimizer.value} is timed as torch's AdamW")
    if t.cross_entropy is CrossEntropy.fused:
        notes.append(
            "the fused cross-entropy is timed as a chunked one (no fused kernel is installed by "
            "the probe)"
        )
    if t.attention is Attention.eager:
        notes.append("eager attention is timed as scaled_dot_product_attention")
    if t.tensor_parallel * t.context_parallel > 1:
        split = t.tensor_parallel * t.context_parallel
        notes.append(
            f"the layer is timed whole on one GPU; the plan splits it over {split} (tp × cp), so "
            "its "
            "time is divided by that"
        )
    return notes


def _apply_step(request: PlanRequest, evidence: ProbeEvidence, notes: list[str]) -> PlanRequest:
    """The measured layer becomes hardware.measured_step: the planner then times the step from
    it."""
    result, hw = evidence.step, request.hardware
    if result is None or hw is None:
        return request
    why = comparable(result)
    if why is not None:
        notes.append(f"Step time unchanged: the step was {why}.")
        return request
    planned = result.planned
    assert planned is not None
    t = request.training
    split = t.tensor_parallel * t.context_parallel
    measured = MeasuredStep(
        layer_s=result.layer.median_s / split,
        head_s=result.head.median_s / split,
        attention_s=(result.attention.median_s if result.attention else 0.0) / split,
        gemm_s=(result.gemm.median_s if result.gemm else 0.0) / split,
        optimizer_s_per_param=optimizer_per_param(result),
        micro_batch=t.micro_batch_size,
        seq_len=request.data.seq_len,
        method=t.method,
        source=result.where,
    )
    step = measured_step(result, planned)
    notes.append(step_sentence(result, step.step_s, planned.step_s))
    if (
        result.peak_reserved
        and planned.memory_per_gpu
        and result.peak_reserved > planned.memory_per_gpu
    ):
        notes.append(
            f"Memory: one layer alone reserved {result.peak_reserved / 1e9:.1f} GB on the box, "
            f"more than the plan's {planned.memory_per_gpu / 1e9:.1f} GB per GPU: the plan "
            "underestimates it."
        )
    return request.model_copy(
        update={"hardware": hw.model_copy(update={"measured_step": measured})}
    )


def step_sentence(result: StepResult, measured_s: float, planned_s: float) -> str:
    """'Step measured on HOST (GPU, date): X s; planned Y s (Z% slower).'"""
    how = gap_text(measured_s, planned_s) + ("" if result.on_gpu else "; timed on a CPU, not a GPU")
    return (
        f"Step measured on {result.where}: {seconds_text(measured_s)}; planned "
        f"{seconds_text(planned_s)} ({how})."
    )
