"""One optimizer step as a sum of explicit costs per GPU: GEMMs, attention, memory-bound passes, the
optimizer, host transfers, exposed communication and the pipeline bubble.

Why a sum of costs and not FLOPs ÷ (peak × MFU): one utilisation per GPU generation cannot know that
a LoRA step spends its time on skinny adapter GEMMs and elementwise passes, that a QLoRA step
dequantizes every weight three times, or that a tensor-parallel layer waits for its all-reduces.
Each term below is timed from its own bytes or FLOPs and a sourced rate (kernels.py, comms.py);
`step.evaluate` adds them up. Everything broadcasts over the search grid (GPU type × GPUs per node ×
nodes × micro-batch). docs/formulas.md, "Compute".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.planner.model import lora, parallel
from core.planner.model.memory import MemoryEstimate
from core.planner.model.params import Architecture
from core.planner.model.states import adamw_kernel, shard_degree, weight_bytes
from core.planner.request import (
    Attention,
    CrossEntropy,
    Method,
    Offload,
    OptimizerKernel,
    Precision,
    Sharding,
    TrainingSpec,
)
from core.planner.request_assumptions import Assumptions
from core.planner.speed import comms, compute, efficiency, kernels

if TYPE_CHECKING:
    from core.planner.speed.hardware import Hardware

Num = Any

BREAKDOWN_KEYS = (
    "gemm",
    "attention",
    "memory_bound",
    "optimizer",
    "host_transfer",
    "exposed_comm",
    "bubble",
)
# Megatron: column-parallel q,k,v,gate,up (d_out split), row-parallel o,down (d_in)
_ROW_PARALLEL = {"o", "down"}

# Bytes per element that the elementwise passes of one Hugging Face decoder layer move in bf16,
# forward, read from the op sequence of transformers' Llama modules (heuristic counts; fused = each
# input read and output written once, what TorchInductor's pointwise/reduction fusion does, Ansel et
# al. 2024, "PyTorch 2", ASPLOS): unfused: to fp32 6, pow 8, mean 4, × rsqrt 8, to bf16 6, × weight
# 4
RMSNORM_BYTES = {False: 36.0, True: 4.0}
LAYERNORM_BYTES = 4.0  # torch's native LayerNorm is one kernel: read 2, write 2
RESIDUAL_BYTES = 6.0  # read 2 + 2, write 2
# silu(gate) 4, × up 6 / fused: read gate and up, write one
GATED_ACT_BYTES = {False: 10.0, True: 6.0}
PLAIN_ACT_BYTES = 4.0
# per q/k element: × cos 6, neg 4, cat 4, × sin 6, add 6 / fused 8
ROTARY_BYTES = {False: 26.0, True: 8.0}
# per adapter output element: × scaling (4) and the add onto the base output (6)
LORA_OUT_BYTES = 10.0
LORA_DROPOUT_BYTES = 5.0  # per adapter input element: read 2, write 2, the 1-byte mask
BIAS_BYTES = 4.0
# Loss per logit (transformers' ForCausalLMLoss): upcast to fp32 6, log-softmax 8 forward; softmax
# gradient 8 and the cast back 6 backward. Chunked computes the same passes chunk by chunk. Fused
# linear cross-entropy (Liger, Apple CCE) never writes the logits: heuristic 4 B (one bf16 write and
# read of a chunk).
LOSS_BYTES = {CrossEntropy.standard: 28.0, CrossEntropy.chunked: 28.0, CrossEntropy.fused: 4.0}
# Kernels per layer forward (heuristic, from the same op sequences): unfused 2 norms × 6, 2 residual
# adds, rotary 10, attention 1 + 3 layout copies, activation 2 = 29; compiled 2 norms, rotary 1,
# attention 1 + 1, activation 1 = 6.
ELEMENTWISE_KERNELS = {False: 29.0, True: 6.0}
# FP8 linears (Transformer Engine): each GEMM input is cast to FP8 with its transposed copy for the
# other GEMM of the backward (read 2, write 1 + 1 bytes per element), forward for the activations
# and backward for the output gradients; the amax/scale update adds two small kernels per linear (TE
# docs, "FP8 primer": delayed scaling).
FP8_CAST_BYTES = 4.0
FP8_CAST_KERNELS = 2.0
# heuristic: host DRAM bandwidth one node's CPU optimizer step gets (DeepSpeed CPU Adam)
HOST_MEMORY_GBS = 100.0


@dataclass(frozen=True)
class StepCosts:
    """Seconds per optimizer step per GPU by kind (arrays broadcast over the grid), and the raw comm
    time."""

    gemm: Num
    attention: Num
    memory_bound: Num
    optimizer: Num
    host_transfer: Num
    exposed_comm: Num
    bubble: Num
    comm_s: Num  # every collective and send before overlap (compute.comm_time_s)

    @property
    def compute(self) -> Num:
        return self.gemm + self.attention + self.memory_bound + self.optimizer

    @property
    def step(self) -> Num:
        return self.compute + self.host_transfer + self.exposed_comm + self.bubble

    def scaled(self, factor: Num) -> StepCosts:
        parts = {k: getattr(self, k) * factor for k in BREAKDOWN_KEYS}
        return StepCosts(**parts, comm_s=self.comm_s)


@dataclass(frozen=True)
class _Layer:
    gemm: Num
    memory: Num
    kernels: Num


def _layer_linears(
    arch: Architecture,
    t: TrainingSpec,
    tokens: Num,
    mm: Num,
    hbm: Num,
    elem: float,
    forward_runs: float,
) -> _Layer:
    """GEMMs (forward, dgrad, wgrad of trained weights, recompute) and the adapters' elementwise
    work, one layer."""
    tp, ep = t.tensor_parallel, t.expert_parallel
    full = t.method is Method.full
    adapted = set() if full else set(lora.adapted_linears(arch, t.lora_targets))
    # Fused expert weights adapted through lora_target_parameters train as W + ΔW: their weight
    # gradient is computed in full (PEFT's ParamWrapper), then reduced to the adapters.
    wrapped = (
        set()
        if full or not arch.experts_fused
        else lora.target_parameter_kinds(t.lora_target_parameters)
    )
    wrapped_kinds = ({"gate", "up"} if "experts_gate_up" in wrapped else set()) | (
        {"down"} if "experts_down" in wrapped else set()
    )
    rank = t.lora_rank or 16
    gemm = 0.0 * tokens
    memory = 0.0 * tokens
    kernels_fwd = 0.0
    for lin in arch.linears():
        row = lin.name in _ROW_PARALLEL
        d_in = lin.d_in / (tp if row else 1)
        d_out = lin.d_out / (1 if row else tp)
        expert = lin.count_total > lin.count_active
        calls = lin.count_total / ep if expert else lin.count_total
        m = tokens * (lin.count_active / lin.count_total * ep if expert else 1.0)
        one = kernels.gemm_seconds(m, d_out, d_in, mm, hbm, elem)
        trained = full or (lin.expert and lin.name in wrapped_kinds)
        # forward(s) + dgrad (+ wgrad when trained)
        gemm = gemm + calls * one * (forward_runs + 1 + trained)
        kernels_fwd += np.ceil(calls)
        # the casts of inputs (each forward) and output gradients (backward)
        if t.precision is Precision.fp8:
            memory = memory + calls * m * (d_in * forward_runs + d_out) * FP8_CAST_BYTES
            kernels_fwd += np.ceil(calls) * FP8_CAST_KERNELS
        if t.method is Method.qlora:  # dequantize NF4 → bf16 for each forward and for the dgrad
            memory = memory + calls * d_in * d_out * kernels.DEQUANT_BYTES_PER_PARAM * (
                forward_runs + 1
            )
        if arch.attention_bias and lin.name in ("q", "k", "v"):
            memory = memory + calls * m * d_out * BIAS_BYTES * (
                forward_runs + kernels.BACKWARD_BYTES_FACTOR
            )
        # what PEFT wraps: the targets, less fused experts (lora.adapted_linears)
        if lin in adapted:
            a = kernels.gemm_seconds(m, rank, d_in, mm, hbm, elem)
            b = kernels.gemm_seconds(m, d_out, rank, mm, hbm, elem)
            # forward(s), dgrad, wgrad of A and B
            gemm = gemm + calls * (a + b) * (forward_runs + 2)
            per_token = LORA_OUT_BYTES * d_out + (
                LORA_DROPOUT_BYTES * d_in if t.lora_dropout > 0 else 0.0
            )
            memory = memory + calls * m * per_token * (elem / 2) * (
                forward_runs + kernels.BACKWARD_BYTES_FACTOR
            )
            kernels_fwd += np.ceil(calls) * (4 + (t.lora_dropout > 0))
    if wrapped:
        # Each forward builds ΔW = B·A for every expert (E GEMMs of d_in × d_out × r) and adds it
        # onto W (read W and ΔW, write W + ΔW); backward turns the weight gradient into those of A
        # and B (two GEMMs of that size).
        rank = t.lora_rank or 16
        for p in lora.expert_parameters(arch, t.lora_target_parameters):
            experts = p.experts / ep * arch.moe_fraction
            d_in = p.d_in / (tp if p.kind == "experts_down" else 1)
            d_out = p.d_out / (1 if p.kind == "experts_down" else tp)
            delta = kernels.gemm_seconds(d_in, d_out, rank, mm, hbm, elem)
            gemm = gemm + experts * delta * (forward_runs + 2)
            memory = memory + experts * d_in * d_out * 3 * elem * forward_runs
            kernels_fwd += 3.0
    return _Layer(gemm, memory, kernels_fwd)


def _layer_elementwise_bytes(arch: Architecture, t: TrainingSpec, tokens: Num, elem: float) -> Num:
    """Forward bytes of norms, residual adds, rotary and the MLP activation for one layer (sharded
    by TP/SP)."""
    tp, compiled = t.tensor_parallel, efficiency.fused_elementwise(t.framework, t.compile)
    seq_shard = tp if t.sequence_parallel else 1
    norm = LAYERNORM_BYTES if arch.layer_norm else RMSNORM_BYTES[compiled]
    norms = (1 if arch.parallel_block else 2) * norm * arch.hidden / seq_shard
    residual = 2 * RESIDUAL_BYTES * arch.hidden / seq_shard
    act = (
        (GATED_ACT_BYTES[compiled] if arch.gated_mlp else PLAIN_ACT_BYTES)
        * arch.active_mlp_width
        / tp
    )
    rotary = ROTARY_BYTES[compiled] * arch.rotary_width / tp
    return tokens * (norms + residual + act + rotary) * (elem / 2)


def _head(
    arch: Architecture, t: TrainingSpec, tokens: Num, mm: Num, hbm: Num, elem: float
) -> tuple[Num, Num]:
    """LM head GEMMs and the loss passes, on the last pipeline stage (it is the slowest stage)."""
    tp = t.tensor_parallel
    vocab = arch.vocab / tp
    one = kernels.gemm_seconds(tokens, vocab, arch.hidden, mm, hbm, elem)
    trained = t.method is Method.full
    gemm = one * (2 + trained)  # the head is not recomputed under per-layer checkpointing
    if t.method is not Method.full and "head" in lora.target_set(t.lora_targets):
        rank = t.lora_rank or 16
        gemm = gemm + 3 * (
            kernels.gemm_seconds(tokens, rank, arch.hidden, mm, hbm, elem)
            + kernels.gemm_seconds(tokens, vocab, rank, mm, hbm, elem)
        )
    # + embedding
    memory = tokens * vocab * LOSS_BYTES[t.cross_entropy] + tokens * arch.hidden * elem * 3
    return gemm, memory


def micro_batch_costs(
    arch: Architecture, t: TrainingSpec, seq_len: Num, hw: Hardware, micro_batch: Num
) -> tuple[Num, Num, Num]:
    """(GEMM, attention, memory-bound incl. the launch floor and the framework's per-layer host
    time) seconds of one micro-batch on one GPU."""
    elem = weight_bytes(t.precision)
    tokens = micro_batch * seq_len / t.context_parallel
    peak = hw.peak_tflops * 1e12
    mm = peak * hw.matmul_efficiency
    hbm = hw.hbm_gbs * 1e9
    regime = t.checkpointing
    # 2 under full recompute, 1 + 1/k every k-th block
    forward_runs = 1.0 + t.checkpointed_fraction(arch.layers)
    lin = _layer_linears(arch, t, tokens, mm, hbm, elem, forward_runs)
    elementwise = _layer_elementwise_bytes(arch, t, tokens, elem) * (
        forward_runs + kernels.BACKWARD_BYTES_FACTOR
    )
    # Flash/SDPA skip the tiles outside each layer's window or chunk; eager multiplies every query
    # by every key.
    span = seq_len if t.attention is Attention.eager else compute.attention_span(arch, seq_len)
    attn_runs = 2.0 if regime == "selective" else forward_runs
    # MLA: QKᵀ at 192, PV at 128 (the mean per matmul)
    head_dim = (arch.qk_head_dim + arch.value_head_dim) / 2
    attention = kernels.attention_seconds(
        t.attention,
        tokens,
        span,
        arch.heads / t.tensor_parallel,
        head_dim,
        attn_runs,
        peak,
        hw.attention_efficiency,
        hw.matmul_efficiency,
        hbm,
        fused_softmax=efficiency.fused_softmax(t.framework),
    )
    memory = (lin.memory + elementwise) / hbm
    fused = efficiency.fused_elementwise(t.framework, t.compile)
    launches = (ELEMENTWISE_KERNELS[fused] + lin.kernels) * (
        forward_runs + kernels.BACKWARD_BYTES_FACTOR
    )
    floor_excess = np.maximum(
        kernels.launch_floor_seconds(launches) - (lin.gemm + attention + memory), 0.0
    )
    # The framework's host time per layer (hooks, wrappers), per forward and backward pass pair.
    overhead = efficiency.layer_overhead_s(t.framework) * (forward_runs + 1.0) / 2.0
    # the LM head stays in BF16
    head_gemm, head_memory = _head(arch, t, tokens, mm / hw.fp8_gain, hbm, elem)
    layer_memory = memory + floor_excess + overhead
    # The slowest pipeline stage: the last (its layers + the output layer and loss), or with uneven
    # stages a stage of more layers when that takes longer (Llama 3 405B's middle stages of 8
    # against the last of 7).
    first, middle, last = parallel.stage_layer_counts(arch, t)
    busiest = max(first, middle if t.pipeline_parallel > 2 else 0.0)
    per_layer = lin.gemm + attention + layer_memory
    last_slowest = last * per_layer + head_gemm + head_memory / hbm >= busiest * per_layer
    layers = (
        np.where(last_slowest, last, busiest)
        if np.ndim(last_slowest)
        else (last if last_slowest else busiest)
    )
    head = np.where(last_slowest, 1.0, 0.0) if np.ndim(last_slowest) else float(last_slowest)
    return (
        layers * lin.gemm + head * head_gemm,
        layers * attention,
        layers * layer_memory + head * head_memory / hbm,
    )


def _host_seconds(
    t: TrainingSpec,
    hw: Hardware,
    mem: MemoryEstimate,
    trainable_gpu: Num,
    n_shard: Num,
    compute: Num,
    overlap: float,
) -> Num:
    """Transfers over each GPU's PCIe link per optimizer step, and the CPU optimizer step, after
    overlap.

    The bytes, and which of them the next compute waits for, are the memory model's
    (`memory.estimate`: ZeRO-Offload gradients out and parameters back, offloaded parameters
    fetched, activation offload, spilled paged states); the CPU optimizer step of ZeRO-Offload (Ren
    et al. 2021, arXiv:2101.06840) runs at host DRAM bandwidth and is waited for.
    """
    pcie = hw.pcie_gbs * 1e9
    exposed = mem.host_exposed_bytes_per_step / pcie
    hidden = (mem.host_bytes_per_step - mem.host_exposed_bytes_per_step) / pcie
    if t.offload is not Offload.none:
        cpu_bw = HOST_MEMORY_GBS * 1e9 / hw.gpus_per_node
        step_bytes = kernels.optimizer_bytes_per_param(t.optimizer, Precision.amp_bf16)
        exposed = exposed + trainable_gpu / n_shard * step_bytes / cpu_bw
    return exposed + comms.exposed_comm(hidden, compute, overlap)


def measured_applies(hw: Hardware, t: TrainingSpec, seq_len: Num, micro_batch: Num) -> bool:
    """True when the box's measured layer stands for this configuration: the micro-batch, sequence
    length and method it was timed at (a search's grid of other micro-batches keeps the planned
    compute)."""
    m = hw.measured_step
    return (
        m is not None
        and np.ndim(micro_batch) == 0
        and np.ndim(seq_len) == 0
        and int(micro_batch) == m.micro_batch
        and int(seq_len) == m.seq_len
        and t.method is m.method
    )


def measured_compute(arch: Architecture, t: TrainingSpec, hw: Hardware) -> tuple[Num, Num, Num]:
    """(GEMM, attention, the rest) seconds of one micro-batch from the measured layer: its parts ×
    the layers on the busiest GPU, the output layer and loss with the rest (the probe times the
    layer as a whole, its attention core and its linear layers apart; the rest is what the whole
    took beyond those two)."""
    m = hw.measured_step
    assert m is not None
    layers = parallel.stage_layers(arch, t)
    # parts timed alone may add up to more than the whole layer
    attention = min(m.attention_s, m.layer_s)
    gemm = min(m.gemm_s, m.layer_s - attention)
    rest = m.layer_s - attention - gemm
    return gemm * layers, attention * layers, rest * layers + m.head_s


def step_costs(
    arch: Architecture,
    t: TrainingSpec,
    seq_len: int,
    hw: Hardware,
    assumptions: Assumptions,
    micro_batch: Num,
    accumulation: Num,
    trainable: float,
    mem: MemoryEstimate,
    dp: Num,
) -> StepCosts:
    """Every cost of one optimizer step on one GPU (the slowest: the last pipeline stage), for `dp`
    data-parallel replicas (step.evaluate's, the same that set `accumulation`)."""
    tp, pp, cp, ep, v = (
        t.tensor_parallel,
        t.pipeline_parallel,
        t.context_parallel,
        t.expert_parallel,
        t.pipeline_virtual_stages,
    )
    measured = measured_applies(hw, t, seq_len, micro_batch)
    gemm_mb, attn_mb, mem_mb = (
        measured_compute(arch, t, hw)
        if measured
        else micro_batch_costs(arch, t, seq_len, hw, micro_batch)
    )
    gemm, attention, memory_bound = (
        gemm_mb * accumulation,
        attn_mb * accumulation,
        mem_mb * accumulation,
    )
    dp = np.maximum(dp, 1.0)
    # model-parallel groups fill a node first
    dp_per_node = np.maximum(hw.gpus_per_node / t.model_parallel, 1.0)
    dp_nodes = np.maximum(dp / dp_per_node, 1.0)
    n_opt = shard_degree(t.sharding, dp, dp_per_node)
    # this GPU's part of the model, as states.parallel_split holds it
    share = parallel.state_share(arch, t)
    trainable_gpu = trainable * share
    stepped = trainable_gpu / (n_opt if t.sharding is not Sharding.none else 1.0)
    optimizer = (
        0.0 * gemm
        if t.offload is not Offload.none
        else (
            stepped * hw.measured_step.optimizer_s_per_param
            if measured and hw.measured_step is not None
            else kernels.optimizer_seconds(
                stepped,
                t.optimizer,
                t.precision,
                hw.hbm_gbs * 1e9,
                foreach=adamw_kernel(t) is OptimizerKernel.foreach,
                clipped=t.gradient_clipping is not False,
            )
        )
    )
    compute = gemm + attention + memory_bound + optimizer

    # Communication.
    wb = weight_bytes(t.precision)
    elem = weight_bytes(t.precision)
    tokens = micro_batch * seq_len / cp
    intra = comms.intra_bytes_per_s(hw.intra_gbs, hw.measured_intra_busbw_gbs)
    # One rail: what HSDP's cross-node stage (dp_per_node concurrent all-reduces, one GPU per node
    # each), context and expert parallelism get. The data-parallel all-reduce of a whole node's
    # replicas runs over all of their rails (NCCL's hierarchical rings and trees: ~190 GB/s on
    # 8×200G A100 nodes, ~380-480 GB/s on 8×400G).
    busbw = comms.busbw_bytes_per_s(
        hw.intra_gbs, hw.gpu_net_gbps, hw.nodes, hw.measured_intra_busbw_gbs
    )
    busbw_dp = comms.busbw_bytes_per_s(
        hw.intra_gbs,
        hw.gpu_net_gbps,
        hw.nodes,
        hw.measured_intra_busbw_gbs,
        group_per_node=dp_per_node,
    )
    wire_bytes = comms.gradient_bytes(t)
    grad_bytes = trainable_gpu * wire_bytes
    param_bytes = arch.total_params * share * wb  # gathers move the 16-bit compute copy
    layers_gpu = parallel.stage_layers(arch, t)
    bucket = comms.bucket_bytes(t.framework, wire_bytes, dp, t.gradient_bucket_elements)
    calls = comms.collectives_per_step(t.sharding, grad_bytes, layers_gpu, accumulation, bucket)
    if t.sharding is Sharding.hsdp:
        gathers = comms.allreduce_seconds(
            param_bytes * accumulation, dp_per_node, 1.0, intra, calls
        )
        data_parallel = gathers + comms.allreduce_seconds(
            grad_bytes / dp_per_node, dp_per_node, dp_nodes, busbw
        )
    else:
        payload = comms.step_comm_bytes(
            t.sharding,
            grad_bytes,
            param_bytes,
            accumulation,
            trainable_gpu * wb,
            bool(t.gradients_all_reduced),
        )
        data_parallel = comms.allreduce_seconds(payload, dp_per_node, dp_nodes, busbw_dp, calls)
    activation = tokens * arch.hidden * elem
    forward_runs = 1.0 + t.checkpointed_fraction(arch.layers)
    tensor = (
        comms.tensor_parallel_seconds(activation, tp, layers_gpu, forward_runs, intra)
        * accumulation
    )
    send_bw = np.where(
        hw.gpus_per_node >= tp * cp * pp, intra, comms.inter_bytes_per_s(hw.gpu_net_gbps)
    )
    pipeline = (
        comms.pipeline_send_seconds(
            activation / tp if t.sequence_parallel else activation, pp, v, send_bw
        )
        * accumulation
    )
    cp_bw = np.where(hw.gpus_per_node >= tp * cp, intra, busbw)
    context = comms.context_parallel_seconds(
        tokens * (arch.k_width + arch.v_width) * elem / tp, cp, layers_gpu, cp_bw
    )
    context_exposed = np.maximum(context - attn_mb, 0.0) * accumulation
    moe_layers = (
        layers_gpu * arch.moe_fraction if parallel.uneven_stages(t) else arch.moe_layers / pp
    )
    ep_bw = np.where(hw.gpus_per_node >= ep, intra, busbw)
    expert = (
        comms.expert_parallel_seconds(activation * arch.experts_per_token, ep, moe_layers, ep_bw)
        * accumulation
    )
    tail = 0.0 * gemm
    if t.sharding is not Sharding.hsdp:
        tail = np.minimum(
            comms.data_parallel_tail(
                t.sharding,
                grad_bytes,
                param_bytes,
                layers_gpu,
                dp_per_node,
                dp_nodes,
                busbw_dp,
                efficiency.overlaps_param_gather(t.framework),
                bucket,
            ),
            data_parallel,
        )
    exposed = (
        tail
        + comms.exposed_comm(
            data_parallel - tail,
            comms.reduction_cover(
                t.sharding,
                gemm + attention + memory_bound,
                accumulation,
                t.checkpointed_fraction(arch.layers),
                pp,
                v,
            ),
            assumptions.comm_overlap,
        )
        + tensor
        + pipeline
        + context_exposed
        + expert
    )
    comm_s = data_parallel + tensor + pipeline + context * accumulation + expert

    n_shard = np.asarray(n_opt, dtype=float)
    host = _host_seconds(t, hw, mem, trainable_gpu, n_shard, compute, assumptions.comm_overlap)
    bubble = (
        comms.bubble_fraction(pp, accumulation, v) * (gemm + attention + memory_bound)
        if pp > 1
        else 0.0 * gemm
    )
    return StepCosts(gemm, attention, memory_bound, optimizer, host, exposed, bubble, comm_s)
