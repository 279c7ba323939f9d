"""The shape a config.json describes, read under each family's own key names: widths, heads, the MLP
(gated or plain, dense or mixture-of-experts), the family's traits (LayerNorm, fused q/k/v, fused
experts, parallel block), the attention pattern and the attention dropout.

Reading a config is a question of naming (``n_embd`` or ``hidden_size``, ``moe_intermediate_size``
or the dense width, Llama 4's swapped widths) and of one clear sentence for a bad key; counting what
the shape holds is another (core/planner/model/params.py, the Architecture). The two stand apart so
each reads in one sitting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.planner.model import attention_layers, config_limits
from core.planner.model.attention_layers import LayerAttention
from core.planner.model.hf_config import transformers_view

_PLAIN_MLP_TYPES = {
    "falcon",
    "gpt2",
    "gpt_neox",
    "opt",
    "bloom",
    "phi",
    "stablelm_alpha",
    "gptj",
    "starcoder2",
    "mpt",
}


_GATED_ACTS = {"silu", "swiglu", "gelu_pytorch_tanh", "geglu", "gelu_new_gated"}


# Families whose HF modules use LayerNorm (saves its 16-bit input) rather than RMSNorm (saves an
# fp32 copy).
_LAYER_NORM_TYPES = {
    "falcon",
    "gpt2",
    "gpt_neox",
    "opt",
    "bloom",
    "phi",
    "gptj",
    "starcoder2",
    "gpt_bigcode",
    "mpt",
}


# Families whose q, k and v are one linear module (one LoRA adapter and one dropout for all three).
_FUSED_QKV_TYPES = {"falcon", "gpt_neox", "bloom", "phi3", "gpt_bigcode", "mpt", "dbrx", "chatglm"}


# Families whose routed experts are 3-D nn.Parameter tensors, not nn.Linear modules: transformers'
# GptOssExperts (models/gpt_oss/modeling_gpt_oss.py) holds gate_up_proj and down_proj as parameters,
# so PEFT's LoRA and bitsandbytes' Linear4bit replacement (both look for nn.Linear) leave them
# alone.
_FUSED_EXPERT_TYPES = {"gpt_oss"}


class ConfigError(ValueError):
    """A config.json that cannot describe a transformer; the message names the key."""


def _layer_pattern(cfg: dict[str, Any], model_type: str, layers: int) -> tuple[LayerAttention, ...]:
    try:
        return attention_layers.layer_pattern(cfg, model_type, layers)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


ATTENTION_DROPOUT_KEYS = (
    "attention_dropout",
    "attention_probs_dropout_prob",
    "attn_pdrop",
    "attn_dropout_prob",
)


def _attention_dropout(cfg: dict[str, Any]) -> float:
    """The dropout config.json puts on the attention probabilities under its family's name (Llama's
    attention_dropout, BERT's attention_probs_dropout_prob, GPT-2's attn_pdrop, Qwen's
    attn_dropout_prob); 0 when none is written."""
    for key in ATTENTION_DROPOUT_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise ConfigError(
                f"config.json key {key} must be a probability from 0 up to (not including) 1 "
                f"(got {value!r})"
            )
        return float(value)
    return 0.0


class _Keys:
    """config.json's numbers, read under any of their names: the first present must be a positive
    integer."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg

    def need(self, *keys: str) -> int:
        for key in keys:
            value = self.cfg.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    raise ConfigError(
                        f"config.json key {key} must be a positive integer (got {value!r})"
                    )
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
    gated = model_type not in _PLAIN_MLP_TYPES and (
        act in _GATED_ACTS or not act or model_type != ""
    )
    # MPT states its MLP as expansion_ratio × d_model (mosaicml/llm-foundry MPTConfig, default 4).
    ratio = cfg.get("expansion_ratio")
    expanded = (
        int(ratio * hidden)
        if isinstance(ratio, int | float) and not isinstance(ratio, bool)
        else None
    )
    intermediate = opt("intermediate_size", "ffn_hidden_size", "n_inner") or expanded or 4 * hidden
    experts = opt("num_local_experts", "num_experts", "n_routed_experts") or 0
    expert_inter = opt("moe_intermediate_size") or (intermediate if experts else 0)
    shared = opt("n_shared_experts") or 0
    if model_type in ("llama4", "llama4_text"):
        # Llama4TextConfig: intermediate_size is each routed expert's and the one shared expert's
        # width, intermediate_size_mlp the dense (non-MoE) layers' (modeling_llama4.py
        # Llama4TextMoe, Llama4TextMLP).
        shared = 1 if experts else 0
        intermediate = opt("intermediate_size_mlp") or intermediate
    shared_inter = opt("shared_expert_intermediate_size") or (
        expert_inter * shared if shared else 0
    )
    return _Mlp(gated, intermediate, experts, expert_inter, shared_inter)


def config_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """Every Architecture field but the name, from a config.json read as transformers reads it
    (hf_config.transformers_view: a multimodal model's text model, omitted keys at their defaults);
    raises ConfigError naming the first missing or invalid key."""
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
    kv_heads = opt("num_key_value_heads", "n_head_kv", "num_kv_heads") or (
        1 if cfg.get("multi_query") else heads
    )
    if heads % kv_heads:
        raise ConfigError(
            f"config.json num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
            f"({kv_heads})"
        )
    head_dim = opt("head_dim") or hidden // heads
    vocab = need("vocab_size")
    model_type = str(cfg.get("model_type", "")).lower()
    mlp = _mlp_shape(cfg, keys, hidden, model_type)
    intermediate, experts, expert_inter, shared_inter = (
        mlp.intermediate,
        mlp.experts,
        mlp.expert_intermediate,
        mlp.shared_intermediate,
    )
    tied = cfg.get("tie_word_embeddings")
    if tied is None:
        tied = model_type in {"gemma", "gemma2", "gemma3", "gemma3_text", "falcon", "mpt"}
    return dict(
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
        experts_per_token=(opt("num_experts_per_tok", "num_experts_per_token", "top_k") or 2)
        if experts
        else 0,
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
        layer_norm=model_type in _LAYER_NORM_TYPES
        or ("layer_norm_eps" in cfg and "rms_norm_eps" not in cfg),
        fused_qkv=model_type in _FUSED_QKV_TYPES,
        experts_fused=model_type in _FUSED_EXPERT_TYPES and experts > 0,
        attention_bias=bool(
            cfg.get("attention_bias") or cfg.get("qkv_bias") or model_type == "qwen2"
        ),
        sliding_window=opt("sliding_window") if cfg.get("use_sliding_window", True) else None,
        attention_dropout=_attention_dropout(cfg),
        layer_attention=_layer_pattern(cfg, model_type, layers),
        notes=view.notes,
    )
