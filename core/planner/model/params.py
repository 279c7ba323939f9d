"""Model architecture and parameter counts, from a Hugging Face config.json (read in
config_shape.py).

Counts every weight matrix the way the checkpoint stores it: embeddings (twice when untied),
attention (GQA, or DeepSeek's multi-head latent attention), gated or plain MLP, MoE experts (total
vs active), routers and norms. The planner needs more than the total: LoRA adapts individual
matrices, ZeRO-3 gathers the largest layer, and activations depend on the widths, so the shape is
kept, not just the count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from core.planner.model import attention_layers
from core.planner.model.attention_layers import LayerAttention
from core.planner.model.config_shape import config_fields


@dataclass(frozen=True)
class Linear:
    """One weight matrix kind inside a layer: name, input and output width, and how many exist per
    layer."""

    name: str
    d_in: int
    d_out: int
    count_total: float = 1.0
    count_active: float = 1.0
    expert: bool = False  # a routed expert's matrix (MoE)

    @property
    def params(self) -> int:
        return self.d_in * self.d_out


@dataclass(frozen=True)
class Architecture:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    gated_mlp: bool = True
    max_position: int | None = None
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_experts: int = 0
    shared_intermediate: int = 0
    dense_layers: int = 0
    moe_every: int = 1
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    attention_bias: bool = False
    parallel_block: bool = False  # attention and MLP read one shared norm (Falcon, Phi-2, GPT-NeoX)
    layer_norm: bool = False  # LayerNorm instead of RMSNorm
    fused_qkv: bool = False  # q, k, v computed by one linear module
    # routed experts stored as 3-D parameters: no LoRA adapter, no NF4 quantization
    experts_fused: bool = False
    sliding_window: int | None = None
    # dropout on the attention probabilities (BERT, GPT-2): eager keeps its mask
    attention_dropout: float = 0.0
    # Each layer's attention kind and window/chunk (attention_layers.layer_pattern); empty:
    # `sliding_window` (when set) windows every layer, as for an Architecture built by hand.
    layer_attention: tuple[LayerAttention, ...] = ()
    inferred: bool = False
    notes: tuple[str, ...] = field(default=())

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_hf_config(cls, cfg: dict[str, Any], name: str = "custom") -> Architecture:
        """Read HF config keys as transformers does (hf_config.transformers_view: a multimodal
        model's text model, omitted keys at their defaults); raises ConfigError naming the first
        missing or invalid key."""
        return cls(name=name, **config_fields(cfg))

    @classmethod
    def from_param_count(cls, params: float, vocab: int = 32_000) -> Architecture:
        """A Llama-shaped dense model of about `params` parameters (hidden/layers = 128, SwiGLU
        8/3·h).

        Used when the user gives only a count: activations then follow a typical shape, and the plan
        says so.
        """
        lo, hi = 256.0, 65_536.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if 12 * mid**3 / 128 + 2 * vocab * mid < params:
                lo = mid
            else:
                hi = mid
        hidden = max(256, round(lo / 128) * 128)
        layers = max(1, round((params - 2 * vocab * hidden) / (12 * hidden * hidden)))
        intermediate = int(math.ceil(8 * hidden / 3 / 256) * 256)
        arch = cls(
            name=f"{params / 1e9:.1f}B (inferred shape)",
            hidden=hidden,
            layers=layers,
            heads=hidden // 128,
            kv_heads=hidden // 128,
            head_dim=128,
            intermediate=intermediate,
            vocab=vocab,
            tied_embeddings=False,
            inferred=True,
            notes=(
                "architecture inferred from the parameter count (Llama-like shape); import a "
                "config.json for exact activation memory",
            ),
        )
        # Scale the MLP so the total matches the requested count exactly enough for planning.
        per_layer_other = arch._attention_params_per_layer() + 2 * hidden
        mlp = (params - arch.embedding_params) / layers - per_layer_other
        inter = max(hidden, int(mlp / (3 * hidden)))
        return replace(arch, intermediate=inter)

    # ----------------------------------------------------------------- shapes

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def q_width(self) -> int:
        """Query width: heads × the q/k head dim (MLA: nope + rope, 128 + 64 = 192 for
        DeepSeek-V3)."""
        return self.heads * self.qk_head_dim

    @property
    def kv_width(self) -> int:
        """Width of the k and v projections' outputs (grouped-query: kv_heads × head_dim)."""
        return self.kv_heads * self.head_dim

    @property
    def qk_head_dim(self) -> int:
        """Per-head width of queries and keys: head_dim, or MLA's qk_nope_head_dim +
        qk_rope_head_dim."""
        if self.uses_mla:
            return (self.qk_nope_head_dim or 128) + (self.qk_rope_head_dim or 64)
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        """Per-head width of values and of the attention output: head_dim, or MLA's v_head_dim."""
        return (self.v_head_dim or 128) if self.uses_mla else self.head_dim

    @property
    def k_width(self) -> int:
        """Keys the attention kernel reads (and autograd saves) per token per layer. MLA expands its
        latent (kv_lora_rank + rope) to full per-head keys, heads × (nope + rope), before attention
        (transformers' DeepseekV3Attention: kv_b_proj, then k_pe broadcast to every head)."""
        return self.heads * self.qk_head_dim if self.uses_mla else self.kv_width

    @property
    def v_width(self) -> int:
        return self.heads * self.value_head_dim if self.uses_mla else self.kv_width

    @property
    def o_width(self) -> int:
        """The attention output (the o-projection's input): heads × the value head dim."""
        return self.heads * self.value_head_dim

    @property
    def rotary_width(self) -> int:
        """Values RoPE rotates per token per layer: q and k (MLA: only the rope part,
        qk_rope_head_dim per head of q plus the one k_pe shared by all heads)."""
        if self.uses_mla:
            rope = self.qk_rope_head_dim or 64
            return self.heads * rope + rope
        return self.q_width + self.kv_width

    @property
    def attention_pattern(self) -> tuple[LayerAttention, ...]:
        """Each layer's (kind, size): read from config.json, or `sliding_window` on every layer, or
        full."""
        if self.layer_attention:
            return self.layer_attention
        one = (
            (attention_layers.SLIDING, self.sliding_window)
            if self.sliding_window
            else (attention_layers.FULL, 0)
        )
        return (one,) * self.layers

    @cached_property
    def moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        return len(
            [i for i in range(self.dense_layers, self.layers) if (i + 1) % self.moe_every == 0]
        )

    @cached_property
    def moe_fraction(self) -> float:
        """Share of the layers that are mixture-of-experts layers (0 for a dense model)."""
        return self.moe_layers / self.layers if self.is_moe else 0.0

    @cached_property
    def active_mlp_width(self) -> float:
        """MLP width one token runs through, per layer on average: its chosen experts (and a shared
        one) in MoE layers, the dense MLP elsewhere. What its activations and elementwise passes
        scale with."""
        frac = self.moe_fraction
        if not self.is_moe:
            return float(self.intermediate)
        routed = self.expert_intermediate * self.experts_per_token * frac + self.intermediate * (
            1 - frac
        )
        return routed + self.shared_intermediate * frac

    def attention_linears(self) -> list[Linear]:
        h = self.hidden
        if self.uses_mla:
            nope, rope = self.qk_nope_head_dim or 128, self.qk_rope_head_dim or 64
            v = self.v_head_dim or 128
            kv_rank = self.kv_lora_rank or 512
            q = (
                [
                    Linear("q_a", h, self.q_lora_rank),
                    Linear("q", self.q_lora_rank, self.heads * (nope + rope)),
                ]
                if self.q_lora_rank
                else [Linear("q", h, self.heads * (nope + rope))]
            )
            return [
                *q,
                Linear("kv_a", h, kv_rank + rope),
                Linear("kv", kv_rank, self.heads * (nope + v)),
                Linear("o", self.heads * v, h),
            ]
        return [
            Linear("q", h, self.q_width),
            Linear("k", h, self.kv_width),
            Linear("v", h, self.kv_width),
            Linear("o", self.q_width, h),
        ]

    def mlp_linears(self) -> list[Linear]:
        """MLP matrices averaged per layer: dense layers, routed experts (total vs active) and
        shared experts."""
        h = self.hidden
        names = ("gate", "up", "down") if self.gated_mlp else ("up", "down")
        out: list[Linear] = []

        def add(width: int, total: float, active: float, expert: bool = False) -> None:
            if width and total:
                for n in names:
                    d_in, d_out = (width, h) if n == "down" else (h, width)
                    out.append(Linear(n, d_in, d_out, total, active, expert))

        if not self.is_moe:
            add(self.intermediate, 1, 1)
            return out
        moe_frac = self.moe_layers / self.layers
        add(self.intermediate, 1 - moe_frac, 1 - moe_frac)
        add(
            self.expert_intermediate,
            self.experts * moe_frac,
            self.experts_per_token * moe_frac,
            expert=True,
        )
        add(self.shared_intermediate, moe_frac, moe_frac)
        return out

    def linears(self) -> list[Linear]:
        return self.attention_linears() + self.mlp_linears()

    def _attention_params_per_layer(self) -> int:
        bias = (self.q_width + 2 * self.kv_width) if self.attention_bias else 0
        return sum(lin.params for lin in self.attention_linears()) + bias

    # ----------------------------------------------------------------- counts

    @cached_property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @cached_property
    def router_params(self) -> int:
        return self.moe_layers * self.hidden * self.experts

    @cached_property
    def norm_params(self) -> int:
        return ((1 if self.parallel_block else 2) * self.layers + 1) * self.hidden

    def _linear_params(self, active: bool) -> float:
        per_layer = self._attention_params_per_layer() + sum(
            lin.params * (lin.count_active if active else lin.count_total)
            for lin in self.mlp_linears()
        )
        return per_layer * self.layers

    @cached_property
    def total_params(self) -> int:
        return int(
            self._linear_params(False)
            + self.embedding_params
            + self.router_params
            + self.norm_params
        )

    @cached_property
    def active_params(self) -> int:
        return int(
            self._linear_params(True)
            + self.embedding_params
            + self.router_params
            + self.norm_params
        )

    @cached_property
    def quantizable_params(self) -> int:
        """Parameters in the transformer blocks' linear layers: what NF4 quantizes (embeddings stay
        16-bit).

        Fused experts (`experts_fused`) are parameters, not nn.Linear modules: bitsandbytes leaves
        them 16-bit.
        """
        experts = [lin for lin in self.mlp_linears() if lin.expert and self.experts_fused]
        fused = sum(lin.params * lin.count_total for lin in experts)
        return int(self._linear_params(False) - fused * self.layers)

    @cached_property
    def block_params(self) -> int:
        """Parameters of one (average) transformer block's matrices and router: one ZeRO-3/FSDP
        unit."""
        return int((self._linear_params(False) + self.router_params) / self.layers)

    @cached_property
    def largest_layer_params(self) -> int:
        """The biggest single module ZeRO-3/FSDP gathers at once: one block, or the
        (un)embedding."""
        return int(max(self.block_params, self.vocab * self.hidden))

    @cached_property
    def largest_matrix_params(self) -> int:
        return max(lin.params for lin in self.linears())
