"""Model architecture and parameter counts from a Hugging Face config.json.

Counts every weight matrix the way the checkpoint stores it: embeddings (twice when untied), attention
(GQA, or DeepSeek's multi-head latent attention), gated or plain MLP, MoE experts (total vs active),
routers and norms. The planner needs more than the total: LoRA adapts individual matrices, ZeRO-3 gathers
the largest layer, and activations depend on the widths, so the shape is kept, not just the count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from core.planner.model import attention_layers, config_limits
from core.planner.model.attention_layers import LayerAttention
from core.planner.model.hf_config import transformers_view

_PLAIN_MLP_TYPES = {
    "falcon", "gpt2", "gpt_neox", "opt", "bloom", "phi", "stablelm_alpha", "gptj", "starcoder2", "mpt",
}
_GATED_ACTS = {"silu", "swiglu", "gelu_pytorch_tanh", "geglu", "gelu_new_gated"}
# Families whose HF modules use LayerNorm (saves its 16-bit input) rather than RMSNorm (saves an fp32 copy).
_LAYER_NORM_TYPES = {"falcon", "gpt2", "gpt_neox", "opt", "bloom", "phi", "gptj", "starcoder2", "gpt_bigcode", "mpt"}
# Families whose q, k and v are one linear module (one LoRA adapter and one dropout for all three).
_FUSED_QKV_TYPES = {"falcon", "gpt_neox", "bloom", "phi3", "gpt_bigcode", "mpt", "dbrx", "chatglm"}
# Families whose routed experts are 3-D nn.Parameter tensors, not nn.Linear modules: transformers'
# GptOssExperts (models/gpt_oss/modeling_gpt_oss.py) holds gate_up_proj and down_proj as parameters, so PEFT's
# LoRA and bitsandbytes' Linear4bit replacement (both look for nn.Linear) leave them alone.
_FUSED_EXPERT_TYPES = {"gpt_oss"}


class ConfigError(ValueError):
    """A config.json that cannot describe a transformer; the message names the key."""


def _layer_pattern(cfg: dict[str, Any], model_type: str, layers: int) -> tuple[LayerAttention, ...]:
    try:
        return attention_layers.layer_pattern(cfg, model_type, layers)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class Linear:
    """One weight matrix kind inside a layer: name, input and output width, and how many exist per layer."""

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
    experts_fused: bool = False  # routed experts stored as 3-D parameters: no LoRA adapter, no NF4 quantization
    sliding_window: int | None = None
    attention_dropout: float = 0.0  # dropout on the attention probabilities (BERT, GPT-2): eager keeps its mask
    # Each layer's attention kind and window/chunk (attention_layers.layer_pattern); empty: `sliding_window`
    # (when set) windows every layer, as for an Architecture built by hand.
    layer_attention: tuple[LayerAttention, ...] = ()
    inferred: bool = False
    notes: tuple[str, ...] = field(default=())

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_hf_config(cls, cfg: dict[str, Any], name: str = "custom") -> Architecture:
        """Read HF config keys as transformers does (hf_config.transformers_view: a multimodal model's text model,
        omitted keys at their defaults); raises ConfigError naming the first missing or invalid key."""
        if not isinstance(cfg, dict):
            raise ConfigError("config.json must be a JSON object with keys such as hidden_size")
        view = transformers_view(cfg)
        cfg = view.config

        config_limits.check(cfg, ConfigError)  # sizes bounded before any shape is built from them
        keys = _Keys(cfg)
        need, opt = keys.need, keys.opt
        hidden = need("hidden_size", "n_embd", "d_model")
        layers = need("num_hidden_layers", "n_layer", "num_layers", "n_layers")
        heads = need("num_attention_heads", "n_head", "num_heads", "n_heads")
        kv_heads = opt("num_key_value_heads", "n_head_kv", "num_kv_heads") or (1 if cfg.get("multi_query") else heads)
        if heads % kv_heads:
            raise ConfigError(
                f"config.json num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})"
            )
        head_dim = opt("head_dim") or hidden // heads
        vocab = need("vocab_size")
        model_type = str(cfg.get("model_type", "")).lower()
        mlp = _mlp_shape(cfg, keys, hidden, model_type)
        intermediate, experts, expert_inter, shared_inter = (mlp.intermediate, mlp.experts, mlp.expert_intermediate,
                                                             mlp.shared_intermediate)
        tied = cfg.get("tie_word_embeddings")
        if tied is None:
            tied = model_type in {"gemma", "gemma2", "gemma3", "gemma3_text", "falcon", "mpt"}
        return cls(
            name=name,
            hidden=hidden,
            layers=layers,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            intermediate=intermediate,
            vocab=vocab,
            tied_embeddings=bool(tied),
            gated_mlp=mlp.gated,
            max_position=opt("max_position_embeddings", "n_positions", "seq_length"),
            experts=experts,
            experts_per_token=(opt("num_experts_per_tok", "num_experts_per_token", "top_k") or 2) if experts else 0,
            expert_intermediate=expert_inter,
            shared_experts=1 if shared_inter else 0,
            shared_intermediate=shared_inter,
            dense_layers=min(opt("first_k_dense_replace") or 0, layers) if experts else 0,
            moe_every=opt("decoder_sparse_step", "interleave_moe_layer_step") or 1,
            q_lora_rank=opt("q_lora_rank"),
            kv_lora_rank=opt("kv_lora_rank"),
            qk_nope_head_dim=opt("qk_nope_head_dim"),
            qk_rope_head_dim=opt("qk_rope_head_dim"),
            v_head_dim=opt("v_head_dim"),
            parallel_block=model_type in {"falcon", "phi", "gpt_neox", "gptj"}
            and bool(cfg.get("parallel_attn", cfg.get("use_parallel_residual", True))),
            layer_norm=model_type in _LAYER_NORM_TYPES or ("layer_norm_eps" in cfg and "rms_norm_eps" not in cfg),
            fused_qkv=model_type in _FUSED_QKV_TYPES,
            experts_fused=model_type in _FUSED_EXPERT_TYPES and experts > 0,
            attention_bias=bool(cfg.get("attention_bias") or cfg.get("qkv_bias") or model_type == "qwen2"),
            sliding_window=opt("sliding_window") if cfg.get("use_sliding_window", True) else None,
            attention_dropout=_attention_dropout(cfg),
            layer_attention=_layer_pattern(cfg, model_type, layers),
            notes=view.notes,
        )

    @classmethod
    def from_param_count(cls, params: float, vocab: int = 32_000) -> Architecture:
        """A Llama-shaped dense model of about `params` parameters (hidden/layers = 128, SwiGLU 8/3·h).

        Used when the user gives only a count: activations then follow a typical shape, and the plan says so.
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
                "architecture inferred from the parameter count (Llama-like shape); import a config.json "
                "for exact activation memory",
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
        """Query width: heads × the q/k head dim (MLA: nope + rope, 128 + 64 = 192 for DeepSeek-V3)."""
        return self.heads * self.qk_head_dim

    @property
    def kv_width(self) -> int:
        """Width of the k and v projections' outputs (grouped-query: kv_heads × head_dim)."""
        return self.kv_heads * self.head_dim

    @property
    def qk_head_dim(self) -> int:
        """Per-head width of queries and keys: head_dim, or MLA's qk_nope_head_dim + qk_rope_head_dim."""
        if self.uses_mla:
            return (self.qk_nope_head_dim or 128) + (self.qk_rope_head_dim or 64)
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        """Per-head width of values and of the attention output: head_dim, or MLA's v_head_dim."""
        return (self.v_head_dim or 128) if self.uses_mla else self.head_dim

    @property
    def k_width(self) -> int:
        """Keys the attention kernel reads (and autograd saves) per token per layer. MLA expands its latent
        (kv_lora_rank + rope) to full per-head keys, heads × (nope + rope), before attention (transformers'
        DeepseekV3Attention: kv_b_proj, then k_pe broadcast to every head)."""
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
        """Values RoPE rotates per token per layer: q and k (MLA: only the rope part, qk_rope_head_dim per head of
        q plus the one k_pe shared by all heads)."""
        if self.uses_mla:
            rope = self.qk_rope_head_dim or 64
            return self.heads * rope + rope
        return self.q_width + self.kv_width

    @property
    def attention_pattern(self) -> tuple[LayerAttention, ...]:
        """Each layer's (kind, size): read from config.json, or `sliding_window` on every layer, or full."""
        if self.layer_attention:
            return self.layer_attention
        one = (attention_layers.SLIDING, self.sliding_window) if self.sliding_window else (attention_layers.FULL, 0)
        return (one,) * self.layers

    @cached_property
    def moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        return len([i for i in range(self.dense_layers, self.layers) if (i + 1) % self.moe_every == 0])

    @cached_property
    def moe_fraction(self) -> float:
        """Share of the layers that are mixture-of-experts layers (0 for a dense model)."""
        return self.moe_layers / self.layers if self.is_moe else 0.0

    @cached_property
    def active_mlp_width(self) -> float:
        """MLP width one token runs through, per layer on average: its chosen experts (and a shared one) in MoE
        layers, the dense MLP elsewhere. What its activations and elementwise passes scale with."""
        frac = self.moe_fraction
        if not self.is_moe:
            return float(self.intermediate)
        routed = self.expert_intermediate * self.experts_per_token * frac + self.intermediate * (1 - frac)
        return routed + self.shared_intermediate * frac

    def attention_linears(self) -> list[Linear]:
        h = self.hidden
        if self.uses_mla:
            nope, rope = self.qk_nope_head_dim or 128, self.qk_rope_head_dim or 64
            v = self.v_head_dim or 128
            kv_rank = self.kv_lora_rank or 512
            q = (
                [Linear("q_a", h, self.q_lora_rank), Linear("q", self.q_lora_rank, self.heads * (nope + rope))]
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
        """MLP matrices averaged per layer: dense layers, routed experts (total vs active) and shared experts."""
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
        add(self.expert_intermediate, self.experts * moe_frac, self.experts_per_token * moe_frac, expert=True)
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
            lin.params * (lin.count_active if active else lin.count_total) for lin in self.mlp_linears()
        )
        return per_layer * self.layers

    @cached_property
    def total_params(self) -> int:
        return int(self._linear_params(False) + self.embedding_params + self.router_params + self.norm_params)

    @cached_property
    def active_params(self) -> int:
        return int(self._linear_params(True) + self.embedding_params + self.router_params + self.norm_params)

    @cached_property
    def quantizable_params(self) -> int:
        """Parameters in the transformer blocks' linear layers: what NF4 quantizes (embeddings stay 16-bit).

        Fused experts (`experts_fused`) are parameters, not nn.Linear modules: bitsandbytes leaves them 16-bit.
        """
        experts = [lin for lin in self.mlp_linears() if lin.expert and self.experts_fused]
        fused = sum(lin.params * lin.count_total for lin in experts)
        return int(self._linear_params(False) - fused * self.layers)

    @cached_property
    def block_params(self) -> int:
        """Parameters of one (average) transformer block's matrices and router: one ZeRO-3/FSDP unit."""
        return int((self._linear_params(False) + self.router_params) / self.layers)

    @cached_property
    def largest_layer_params(self) -> int:
        """The biggest single module ZeRO-3/FSDP gathers at once: one block, or the (un)embedding."""
        return int(max(self.block_params, self.vocab * self.hidden))

    @cached_property
    def largest_matrix_params(self) -> int:
        return max(lin.params for lin in self.linears())


ATTENTION_DROPOUT_KEYS = ("attention_dropout", "attention_probs_dropout_prob", "attn_pdrop", "attn_dropout_prob")


def _attention_dropout(cfg: dict[str, Any]) -> float:
    """The dropout config.json puts on the attention probabilities under its family's name (Llama's
    attention_dropout, BERT's attention_probs_dropout_prob, GPT-2's attn_pdrop, Qwen's attn_dropout_prob); 0 when
    none is written."""
    for key in ATTENTION_DROPOUT_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise ConfigError(f"config.json key {key} must be a probability from 0 up to (not including) 1 "
                              f"(got {value!r})")
        return float(value)
    return 0.0


class _Keys:
    """config.json's numbers, read under any of their names: the first present must be a positive integer."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg

    def need(self, *keys: str) -> int:
        for key in keys:
            value = self.cfg.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    raise ConfigError(f"config.json key {key} must be a positive integer (got {value!r})")
                return int(value)
        raise ConfigError(f"config.json lacks {keys[0]}; it is needed to size the model")

    def opt(self, *keys: str) -> int | None:
        for key in keys:
            if self.cfg.get(key) is not None:
                return self.need(key)
        return None


@dataclass(frozen=True)
class _Mlp:
    gated: bool
    intermediate: int
    experts: int
    expert_intermediate: int
    shared_intermediate: int


def _mlp_shape(cfg: dict[str, Any], keys: _Keys, hidden: int, model_type: str) -> _Mlp:
    """The MLP's widths, dense and mixture-of-experts, under each family's own key names."""
    opt = keys.opt
    act = str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "").lower()
    gated = model_type not in _PLAIN_MLP_TYPES and (act in _GATED_ACTS or not act or model_type != "")
    # MPT states its MLP as expansion_ratio × d_model (mosaicml/llm-foundry MPTConfig, default 4).
    ratio = cfg.get("expansion_ratio")
    expanded = int(ratio * hidden) if isinstance(ratio, int | float) and not isinstance(ratio, bool) else None
    intermediate = opt("intermediate_size", "ffn_hidden_size", "n_inner") or expanded or 4 * hidden
    experts = opt("num_local_experts", "num_experts", "n_routed_experts") or 0
    expert_inter = opt("moe_intermediate_size") or (intermediate if experts else 0)
    shared = opt("n_shared_experts") or 0
    if model_type in ("llama4", "llama4_text"):
        # Llama4TextConfig: intermediate_size is each routed expert's and the one shared expert's width,
        # intermediate_size_mlp the dense (non-MoE) layers' (modeling_llama4.py Llama4TextMoe, Llama4TextMLP).
        shared = 1 if experts else 0
        intermediate = opt("intermediate_size_mlp") or intermediate
    shared_inter = opt("shared_expert_intermediate_size") or (expert_inter * shared if shared else 0)
    return _Mlp(gated, intermediate, experts, expert_inter, shared_inter)
