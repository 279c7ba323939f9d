"""Communication per step: data-parallel collectives, tensor/pipeline/context/expert parallel
traffic.

Bandwidth terms follow nccl-tests PERFORMANCE.md: an all-reduce moves 2(n−1)/n × bytes per GPU,
reduce-scatter and all-gather (n−1)/n each, at the bus bandwidth (busbw). Latency follows what NCCL
does: a ring inside the node (2(g−1) hops) and, across nodes, the cheaper of a ring (2(N−1) hops)
and a tree (2·log2 N hops) — NCCL switches to trees at scale, which is why a flat-ring latency of
2(n−1) hops at 2,048 GPUs (0.25 s) is wrong. Inside a node the GPU's NVLink/PCIe busbw applies (or
the measured one). Across nodes NCCL gives each GPU its own NIC (a rail): a collective whose group
has k GPUs on each node runs k rings at once, one per rail, so its bus bandwidth is the sum over
those k rails — 8 × 400G ≈ 384 GB/s for an H100 node, 8 × 200G ≈ 192 GB/s for an A100 node, which is
what nccl-tests measures between such nodes (PROBES.md §2.1), not one NIC's ~48 GB/s. DDP
all-reduces gradients once per optimizer step; ZeRO-1/2 reduce-scatter + all-gather (the same
volume); ZeRO-3/FSDP all-gather the parameters in forward and backward of every micro-batch. Tensor
parallelism (Megatron-LM, arXiv:1909.08053) all-reduces activations twice forward and twice backward
per layer; sequence parallelism (arXiv:2205.05198) replaces each by a reduce-scatter + all-gather of
the same volume. Pipelines idle for (p−1)/(m·v) of the compute (Narayanan et al. 2021,
arXiv:2104.04473). See docs/formulas.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.planner.request import Framework, Precision, ReduceDtype, Sharding, TrainingSpec

Num = Any

# NCCL reaches ~80% of link bandwidth as busbw at large sizes inside a node (PROBES.md §2.1: 8×H100
# NVSwitch ≈ 360–480 of 450 GB/s).
BUSBW_EFFICIENCY = 0.80
# Across nodes a ring reaches ~48 GB/s per 400G NIC, ~24 per 200G, ~12 per 100G (sjeaugey,
# nccl-tests#119; PROBES.md §2.1 and its inter-node verdict row): 96% of the line rate per rail.
RAIL_EFFICIENCY = 0.96
# NCCL's own cost model for the Simple protocol that large buckets use (src/graph/tuning.cc,
# ncclTunerConstantsDefaults): a base latency per collective, and per ring step 3.4 µs over NVLink
# and 14 µs over the network (its tree's network step is the same 14 µs). Every node is taken as
# NVLink-joined; NCCL's PCIe step is 5.7 µs.
LATENCY_BASE_S = 8.4e-6
LATENCY_S = {"intra": 3.4e-6, "inter": 14e-6}  # per hop
# PyTorch DistributedDataParallel bucket_cap_mb = 25: one all-reduce per bucket
DDP_BUCKET_BYTES = 25 * 2**20
# Megatron-Core's default bucket: max(40,000,000, 1,000,000 × dp) parameters ("larger DP sizes need
# larger buckets to ensure collectives do not become latency-bound",
# megatron/core/distributed/distributed_data_parallel_config.py)
MEGATRON_BUCKET_PARAMS = (40_000_000, 1_000_000)
# DeepSpeed's zero_optimization.reduce_bucket_size default, 5e8 elements (its config docs); its
# pipeline engine all-reduces in buffers of the same MEMORY_OPT_ALLREDUCE_SIZE
DEEPSPEED_BUCKET_ELEMENTS = 5e8


def intra_bytes_per_s(intra_gbs: Num, measured_intra_gbs: float | None = None) -> Num:
    """busbw inside a node: the measured all-reduce figure, else the catalog link × 0.8."""
    return (measured_intra_gbs * 1e9) if measured_intra_gbs else intra_gbs * 1e9 * BUSBW_EFFICIENCY


def inter_bytes_per_s(gpu_net_gbps: Num, rails: Num = 1.0) -> Num:
    """busbw across nodes over `rails` NICs of `gpu_net_gbps` each (one per GPU), × 0.96 per rail.

    One rail is what a point-to-point send or a group with one GPU per node gets; a group with k
    GPUs per node drives k rails at once (NCCL builds one ring per NIC), so the rails add up."""
    return gpu_net_gbps * np.asarray(rails, dtype=float) * 1e9 / 8 * RAIL_EFFICIENCY


def busbw_bytes_per_s(
    intra_gbs: Num,
    gpu_net_gbps: Num,
    nodes: Num,
    measured_intra_gbs: float | None = None,
    group_per_node: Num = 1.0,
) -> Num:
    """The bus bandwidth a collective sees: the intra-node link on one node, else the slower of it
    and the sum over the rails of the group's `group_per_node` GPUs on each node (a hierarchical
    collective is limited by its slowest stage). A data-parallel group spanning whole 8-GPU nodes
    thus gets all 8 rails."""
    intra = intra_bytes_per_s(intra_gbs, measured_intra_gbs)
    inter = inter_bytes_per_s(gpu_net_gbps, np.maximum(group_per_node, 1.0))
    return np.where(np.asarray(nodes) > 1, np.minimum(intra, inter), intra)


def latency_seconds(gpus_per_node: Num, nodes: Num) -> Num:
    """Latency of one all-reduce: NCCL's base latency, a ring inside the node, NCCL's cheaper of
    ring and tree across nodes."""
    g = np.maximum(np.asarray(gpus_per_node, dtype=float), 1.0)
    n = np.maximum(np.asarray(nodes, dtype=float), 1.0)
    inside = 2 * (g - 1) * LATENCY_S["intra"]
    across = np.minimum(2 * (n - 1), 2 * np.log2(n)) * LATENCY_S["inter"]
    return LATENCY_BASE_S + inside + across


def allreduce_seconds(
    payload: Num, gpus_per_node: Num, nodes: Num, busbw: Num, collectives: Num = 1.0
) -> Num:
    """All-reduce of `payload` bytes per GPU over gpus_per_node × nodes GPUs, in `collectives`
    calls."""
    n = np.maximum(np.asarray(gpus_per_node * nodes, dtype=float), 1.0)
    ring = 2 * (n - 1) / n * payload / busbw
    return np.where(n > 1, ring + collectives * latency_seconds(gpus_per_node, nodes), 0.0)


# Stacks that reduce bf16/fp8 training's gradients in fp32. Megatron-LM forces it ("bfloat16
# requires gradient accumulation and all-reduce to be done in fp32", megatron/training/arguments.py,
# unless --grad-reduce-in-bf16); NeMo's and Megatron-Bridge's recipes set
# DistributedDataParallelConfig(grad_reduce_in_fp32=True); Megatron-DeepSpeed's BF16_Optimizer
# all-reduces its fp32 gradient buffers (DeepSpeed pipe/engine.py, _bf16_reduce_grads).
FP32_REDUCE_FRAMEWORKS = frozenset({Framework.megatron})
_AUTOCAST = (Precision.amp_bf16, Precision.amp_fp16)


def gradient_bytes(training: TrainingSpec) -> float:
    """Bytes per gradient element on the data-parallel wire: 4 where the stack reduces in fp32
    (Megatron; fp32 training; PyTorch DDP under autocast, whose parameters and so gradients stay
    fp32, alone or under an optimizer that steps a share after DDP's whole-gradient all-reduce),
    else the 16-bit compute dtype. A request's `gradient_reduce_dtype` overrides the stack's."""
    if training.gradient_reduce_dtype is not None:
        return 4.0 if training.gradient_reduce_dtype is ReduceDtype.fp32 else 2.0
    if training.precision is Precision.fp32 or training.framework in FP32_REDUCE_FRAMEWORKS:
        return 4.0
    if training.precision in _AUTOCAST and (
        training.sharding is Sharding.none or training.gradients_all_reduced
    ):
        return 4.0
    return 2.0


def bucket_bytes(
    framework: Framework, element_bytes: float, dp: Num, elements: int | None = None
) -> Num:
    """The gradient bucket one data-parallel collective carries: the request's, else the stack's
    default. Fewer, larger buckets pay the per-call latency fewer times."""
    if elements is not None:
        return float(elements) * element_bytes
    if framework is Framework.megatron:
        floor, per_replica = MEGATRON_BUCKET_PARAMS
        return np.maximum(floor, per_replica * np.asarray(dp, dtype=float)) * element_bytes
    if framework is Framework.deepspeed:
        return DEEPSPEED_BUCKET_ELEMENTS * element_bytes
    return float(DDP_BUCKET_BYTES)


def step_comm_bytes(
    sharding: Sharding,
    grad_bytes: Num,
    param_bytes: Num,
    accumulation: Num,
    stepped_param_bytes: Num,
    gradients_all_reduced: bool = False,
) -> Num:
    """Bytes each GPU must move per optimizer step, expressed as all-reduce-equivalent payload.

    DDP all-reduces the gradients. ZeRO-1/2 reduce-scatter them (half an all-reduce, in the
    gradients' wire dtype) and all-gather the updated 16-bit parameters the optimizer steps (the
    other half, `stepped_param_bytes`): one all-reduce's volume when both are 16-bit, 1.5 × that
    when the gradients travel in fp32. ZeRO-2 reduce-scatters in every micro-batch's backward, as it
    keeps only its partition of the gradients (DeepSpeed stage_1_and_2.py hooks each gradient's
    accumulation with reduce_ready_partitions_and_remove_grads). DeepSpeed's BF16_Optimizer
    (`gradients_all_reduced`) all-reduces the whole fp32 gradient instead of reduce-scattering it
    (pipe/engine.py, _bf16_reduce_grads) and then all-gathers the parameters: 2.5 × a 16-bit
    all-reduce."""
    if sharding is Sharding.none:
        return grad_bytes
    if sharding in (Sharding.zero1, Sharding.zero2):
        reduced = grad_bytes if gradients_all_reduced else 0.5 * grad_bytes
        # ZeRO-2 keeps only its gradient partition, so it reduces in every micro-batch's backward
        times = accumulation if sharding is Sharding.zero2 else 1.0
        return reduced * times + 0.5 * stepped_param_bytes
    # ZeRO-3 / FSDP / HSDP: two all-gathers of the parameters every micro-batch, one reduce-scatter.
    return 0.5 * (2 * param_bytes * accumulation) + 0.5 * grad_bytes


def collectives_per_step(
    sharding: Sharding,
    grad_bytes: Num,
    layers_per_gpu: float,
    accumulation: Num,
    bucket: Num,
) -> Num:
    """How many collective calls pay latency per step: gradient buckets (`bucket_bytes`), or
    per-layer gathers under ZeRO-3/FSDP."""
    buckets = np.maximum(np.ceil(grad_bytes / bucket), 1.0)
    if sharding is Sharding.zero2:
        # a reduce-scatter per bucket in every micro-batch, one all-gather per bucket after the step
        return buckets * (accumulation + 1)
    if sharding in (Sharding.none, Sharding.zero1):
        return buckets * (1 if sharding is Sharding.none else 2)
    # gathers forward + backward, one reduce-scatter
    return 2 * layers_per_gpu * accumulation + layers_per_gpu


def data_parallel_tail(
    sharding: Sharding,
    grad_bytes: Num,
    param_bytes: Num,
    layers_per_gpu: float,
    gpus_per_node: Num,
    nodes: Num,
    busbw: Num,
    param_gather_overlapped: bool,
    bucket: Num,
) -> Num:
    """The data-parallel traffic no compute can hide, whatever the overlap: it runs after the last
    backward layer or before the first forward one.

    DDP's last gradient bucket (`bucket_bytes`) is reduced after backward ends (PyTorch DDP notes:
    buckets fire in reverse order as they fill); ZeRO-1/2's updated parameters are all-gathered
    after the optimizer step, before the next forward can start (ZeRO paper §5, arXiv:1910.02054),
    unless the stack overlaps that gather with the next forward (Megatron-Core
    --overlap-param-gather, set by NeMo's recipes); ZeRO-3/FSDP's first layer's gather and last
    layer's reduce-scatter have nothing to prefetch behind. The gather grows with the replicas,
    (n−1)/n, and its latency with the node count: this is what makes hundreds of GPUs slower per GPU
    than tens."""
    if sharding in (Sharding.zero3, Sharding.fsdp, Sharding.hsdp):
        unit = param_bytes / max(layers_per_gpu, 1.0)
        # one gather + one reduce-scatter
        return allreduce_seconds(unit, gpus_per_node, nodes, busbw)
    last_bucket = allreduce_seconds(np.minimum(grad_bytes, bucket), gpus_per_node, nodes, busbw)
    if sharding is Sharding.none or param_gather_overlapped:
        return last_bucket
    # the all-gather half
    return last_bucket + 0.5 * allreduce_seconds(param_bytes, gpus_per_node, nodes, busbw)


def reduction_cover(
    sharding: Sharding,
    passes_s: Num,
    accumulation: Num,
    recomputed: float,
    pp: int = 1,
    v: int = 1,
) -> Num:
    """The compute a data-parallel gradient reduction can run behind, from the step's forward and
    backward passes (`passes_s`, every micro-batch).

    DDP and ZeRO-1 reduce once per optimizer step, in the backward of the last micro-batch: the
    micro-batches before it accumulate under no_sync (PyTorch DDP: "gradients ... synchronized in
    the first forward-backward pass exiting the context"; Megatron-Core's overlap_grad_reduce starts
    a bucket's reduction in the last micro-batch's backward), and buckets only fill as backward
    produces them; an interleaved pipeline widens that window (`chunk_window`). That backward is
    (2 + r)/(3 + r) of a micro-batch's passes (backward FLOPs twice the forward's, r the share of
    blocks whose forward is recomputed in it). ZeRO-2 reduces in every backward (step_comm_bytes)
    and ZeRO-3/FSDP prefetch their gathers through forward and backward: the whole step."""
    if sharding not in (Sharding.none, Sharding.zero1):
        return passes_s
    backward = (2.0 + recomputed) / (3.0 + recomputed)
    acc = np.maximum(np.asarray(accumulation, dtype=float), 1.0)
    return passes_s / acc * backward * chunk_window(acc, pp, v)


def chunk_window(accumulation: Num, pp: int, v: int) -> Num:
    """How many micro-batch backwards a once-per-step gradient reduction can hide behind: one, or
    ((v − 1)·p + 1)/v under an interleaved pipeline of v model chunks per GPU.

    Megatron-Core's interleaved schedule starts a chunk's gradient reduction as soon as that chunk's
    last micro-batch backward ends (is_last_microbatch_for_model_chunk → config.grad_sync_func,
    megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving);
    its cool-down runs the chunks' last backwards one group of p micro-batches per chunk, last chunk
    first. The first chunk to finish has (v − 1)·p chunk-backwards (each 1/v of a micro-batch's)
    still to run behind its reduction, the last one only its own; the reductions queue on one
    stream, so together they hide behind ((v − 1)·p + 1)/v micro-batch backwards, never more than
    the step has. Without interleaving (v = 1) a stage holds one chunk: one micro-batch backward."""
    acc = np.maximum(np.asarray(accumulation, dtype=float), 1.0)
    if pp <= 1 or v <= 1:
        return np.ones_like(acc)
    return np.minimum(((v - 1) * pp + 1) / v, acc)


def exposed_comm(comm_s: Num, compute_s: Num, overlap: float) -> Num:
    """Communication not hidden behind compute: only `overlap` of the compute time can hide
    transfers."""
    return np.maximum(comm_s - overlap * compute_s, 0.0)


# ----------------------------------------------------------------------------- model parallelism


def tensor_parallel_seconds(
    activation_bytes: Num, tp: int, layers: float, forward_runs: float, busbw: Num
) -> Num:
    """Megatron TP per micro-batch: 2 all-reduces of the (tokens × h) activations per layer forward
    (after the attention and MLP row-parallel linears) and 2 backward; a recomputed forward repeats
    its 2. Sequence parallelism swaps each for a reduce-scatter + all-gather of the same volume, so
    the time is the same."""
    if tp <= 1:
        return 0.0
    per = 2 * (tp - 1) / tp * activation_bytes / busbw + latency_seconds(tp, 1)
    return layers * (2 * forward_runs + 2) * per


def bubble_fraction(pp: int, micro_batches: Num, virtual_stages: int = 1) -> Num:
    """Idle share of a pipeline step relative to its compute: (p − 1)/(m·v) (Narayanan et al. 2021,
    §2.2)."""
    return (pp - 1) / (np.asarray(micro_batches, dtype=float) * virtual_stages)


def pipeline_send_seconds(
    activation_bytes: Num, pp: int, virtual_stages: int, bandwidth: Num
) -> Num:
    """Point-to-point sends per micro-batch on one GPU: an activation forward and its gradient
    backward per stage boundary it owns (v chunks per GPU under interleaving)."""
    if pp <= 1:
        return 0.0
    return 2 * virtual_stages * (activation_bytes / bandwidth + LATENCY_BASE_S + LATENCY_S["inter"])


def context_parallel_seconds(kv_bytes_per_layer: Num, cp: int, layers: float, busbw: Num) -> Num:
    """Ring attention: each layer passes (cp−1)/cp of the K,V block around the ring forward, and K,V
    plus their gradients backward (3× the forward volume)."""
    if cp <= 1:
        return 0.0
    return layers * 4 * (cp - 1) / cp * kv_bytes_per_layer / busbw


def expert_parallel_seconds(token_bytes: Num, ep: int, moe_layers: float, busbw: Num) -> Num:
    """MoE all-to-all: tokens·h·2·k bytes dispatched and combined forward, and both again backward,
    per MoE layer; (ep−1)/ep of it leaves the GPU."""
    if ep <= 1:
        return 0.0
    return moe_layers * 4 * (ep - 1) / ep * token_bytes / busbw
