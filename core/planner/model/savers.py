"""The memory savers today's fine-tuning stacks use: loss kernels, activation offload and paged
optimizer states.

Each function is one saver's arithmetic, vectorised like the rest of the memory model (scalars or
NumPy arrays for micro-batch, sequence and GPU memory). `memory.estimate` composes them;
docs/formulas.md ("Memory savers") gives the sources.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.planner.model.params import Architecture
from core.planner.request import Attention, CrossEntropy, Framework, Precision, TrainingSpec

Num = Any

# torchtune CEWithChunkedOutputLoss(num_output_chunks=8)
# (torchtune/modules/loss/ce_chunked_output_loss.py): the output projection and the fp32 upcast run
# one of 8 sequence chunks at a time.
CE_CHUNKS = 8
# torchtune OffloadActivations(max_fwd_stash_size=5) (torchtune/training/_activation_offloading.py):
# at most 5 saved tensors stay on the GPU while their copy to the host is in flight; with per-layer
# checkpointing each layer saves one (its input), so 5 layers' inputs. Backward brings one back
# while the next is in use (2 ≤ 5).
OFFLOAD_IN_FLIGHT_LAYERS = 5
# Frameworks that torch.compile the loss when training.compile is on: torchtitan's
# build_cross_entropy_loss (torchtitan/components/loss.py: `if job_config.training.compile: loss_fn
# = torch.compile(loss_fn)`) and torchtune (training.compile compiles the loss as well).
LOSS_COMPILED_BY = (Framework.torchtitan, Framework.torchtune)


def logits_bytes(arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num) -> Num:
    """Logits and loss buffers per micro-batch at their peak, by cross-entropy implementation.

    standard: 16-bit logits, an fp32 upcast, the fp32 log-softmax autograd keeps and a 16-bit
    gradient
      (transformers' ForCausalLMLoss): 2 + 4 + 4 + 2 = 12 B per logit; pure bf16 computes the loss
      on bf16 logits (litgpt): 2 + 2 + 2 = 6 B.
    chunked: torchtune's CEWithChunkedOutputLoss upcasts one chunk of n = 8 at a time, but autograd
    still keeps
      every chunk's fp32 log-softmax output for backward (log_softmax saves its result): 16-bit
      logits 2 (the recipe frees them after the loss) + 4 + one chunk's fp32 upcast 4/n = 6.5 B per
      logit; compiled (torchtune `compile: True` compiles the loss) the fp32 log-softmax is not
      saved: 2 + 4/n = 2.5 B.
    fused: fused linear cross-entropy (Liger `LigerFusedLinearCrossEntropyLoss`, Apple Cut
    Cross-Entropy) never
      holds the whole logits: one chunk of chunk × V logits, the hidden states' gradient (tokens ×
      h) computed in the forward, and an fp32 loss per token.
    """
    tokens = micro_batch * seq_len
    elem = 4.0 if training.precision is Precision.fp32 else 2.0
    if training.cross_entropy is CrossEntropy.fused:
        chunk = fused_ce_chunk_tokens(tokens, arch.vocab, arch.hidden)
        return chunk * arch.vocab * elem + tokens * arch.hidden * elem + tokens * 4.0
    if training.cross_entropy is CrossEntropy.chunked:
        if training.compile:
            # torchtune compiles the loss (training.compile_loss); AOTAutograd's min-cut partitioner
            # saves the 16-bit chunk and its log-sum-exp instead of the fp32 log-softmax,
            # recomputing it pointwise.
            return tokens * arch.vocab * (elem + 4.0 / CE_CHUNKS)
        return tokens * arch.vocab * (elem + 4.0 + 4.0 / CE_CHUNKS)
    if training.compile and training.framework in LOSS_COMPILED_BY:
        # A compiled `cross_entropy(pred.float(), labels)` saves the 16-bit logits and two fp32
        # numbers per token (the row max and log-sum-exp: AOTAutograd's min-cut recomputes the fp32
        # log-softmax in the fused backward kernel, which writes the 16-bit gradient): 16-bit logits
        # + their gradient, 2 + 2 B per logit.
        return tokens * arch.vocab * 2 * elem + tokens * 8.0
    per_logit = 6.0 if training.precision is Precision.pure_bf16 else 12.0
    return tokens * arch.vocab * per_logit


def fused_ce_chunk_tokens(tokens: Num, vocab: int, hidden: int) -> Num:
    """Liger's chunk: next_power_of_2(ceil(BT / ceil(V / H))), at most BT — one chunk's logits ≈ the
    hidden states.

    Liger-Kernel src/liger_kernel/ops/fused_linear_cross_entropy.py: `inc_factor = triton.cdiv(V,
    H)`, `chunk_size = triton.next_power_of_2(triton.cdiv(BT, inc_factor))`; Hsu et al. 2024,
    arXiv:2410.10989 ("Fused Linear Cross Entropy").
    """
    inc_factor = -(-vocab // hidden)
    per_chunk = np.ceil(np.asarray(tokens, dtype=float) / inc_factor)
    chunk = 2.0 ** np.ceil(np.log2(np.maximum(per_chunk, 1.0)))
    out = np.minimum(chunk, tokens)
    return float(out) if np.ndim(out) == 0 else out


def op_sac_parts(arch: Architecture, training: TrainingSpec) -> tuple[float, float, float]:
    """16-bit elements per token per layer that torchtitan's selective "op" checkpointing keeps, as
    (replicated by tp, sharded by tp, key/value) like `activations.activation_parts`.

    torchtitan's `_apply_ac_to_transformer_block` (selective_ac_option = "op", the default of its
    Llama train configs) marks MUST_SAVE the outputs of the ops in `_save_list` (aten.mm, the
    flash/efficient SDPA kernels, reduce_scatter, max) "except every second mm", counting mm calls
    afresh in each block; every other op is recomputed in backward. So a block keeps its input, the
    outputs of its 1st, 3rd, 5th… matmul in call order and the attention output with its fp32
    log-sum-exp (one per head). Llama (q, k, v, o, gate, up, down) keeps q, v, gate and down: h + q
    + v + (o + 2·heads) + F + h. Float8 linears are still aten.mm when the checkpoint's dispatch
    mode sees them (the mode runs before the Float8 tensor subclass), so FP8 keeps the same.
    """
    h, mlp = float(arch.hidden), float(arch.active_mlp_width)
    attn_mms = (
        [("split", float(arch.q_width + arch.k_width + arch.v_width))]
        if arch.fused_qkv
        else [
            ("split", float(arch.q_width)),
            ("kv", float(arch.k_width)),
            ("kv", float(arch.v_width)),
        ]
    )
    mlp_mms = [("split", mlp), ("split", mlp)] if arch.gated_mlp else [("split", mlp)]
    # The row-parallel outputs (o, down) are whole-width partial sums on every tp rank.
    mms = [*attn_mms, ("rest", h), *mlp_mms, ("rest", h)]
    kept = {"rest": h, "split": 0.0, "kv": 0.0}  # the block's input, for the recomputation
    for kind, width in mms[::2]:
        kept[kind] += width
    if training.attention is not Attention.eager:
        kept["split"] += arch.o_width + 2.0 * arch.heads  # SDPA output + fp32 log-sum-exp per head
    return kept["rest"], kept["split"], kept["kv"]


def checkpointed_inputs_bytes(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """Every layer's input kept by per-layer checkpointing: L · h · e_b per token."""
    elem = 4.0 if training.precision is Precision.fp32 else 2.0
    return arch.layers * arch.hidden * elem * micro_batch * seq_len


def offloaded_activation_bytes(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """Host copies of the checkpointed layer inputs (torchtune `enable_activation_offloading`), per
    micro-batch."""
    if not (training.activation_offload and training.checkpointing == "full"):
        return 0.0 * np.asarray(micro_batch * seq_len, dtype=float)
    return checkpointed_inputs_bytes(arch, training, micro_batch, seq_len)


def inputs_kept_on_gpu(
    arch: Architecture, training: TrainingSpec, micro_batch: Num, seq_len: Num
) -> Num:
    """Layer inputs on the GPU under full checkpointing: all L, or the few in flight when
    offloaded."""
    kept = checkpointed_inputs_bytes(arch, training, micro_batch, seq_len)
    if training.activation_offload and training.checkpointing == "full":
        return kept * min(arch.layers, OFFLOAD_IN_FLIGHT_LAYERS) / arch.layers
    return kept


def paged_resident(paged: Num, fixed_total: Num, gpu_memory: Num | None) -> Num:
    """Paged optimizer bytes that stay in GPU memory: what the rest leaves free, at most all of
    them.

    bitsandbytes allocates paged states with cudaMallocManaged (unified memory): the driver evicts
    pages to host RAM when the GPU is full and faults them back for the optimizer step. Without a
    GPU size, all stay.
    """
    if gpu_memory is None:
        return paged
    return np.clip(np.asarray(gpu_memory, dtype=float) - fixed_total, 0.0, paged)


def paged_spill_warning(paged: float, spilled: float) -> str | None:
    """What a plan says when paged optimizer states spill; nothing while they fit.

    The driver evicts unified-memory pages only under pressure (when the GPU is full), so states
    that fit next to the peak are never paged out and cost no host traffic. The spilled part is
    faulted back for every optimizer step (bitsandbytes prefetches the paged states and synchronises
    before its update kernels) and evicted again when the next forward needs the room: twice over
    PCIe per step, waited for.
    """
    if paged <= 0 or spilled <= 0:
        return None
    return (
        f"paged optimizer states: {spilled / 1e9:.1f} of {paged / 1e9:.1f} GB do not fit next to "
        "the peak and page out to host RAM; each optimizer step pages them back and out again "
        f"({2 * spilled / 1e9:.1f} GB "
        "over PCIe, waited for). A smaller micro-batch or checkpointing keeps them on the GPU"
    )
