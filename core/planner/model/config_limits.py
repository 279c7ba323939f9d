"""The range each config.json size key may take, checked before any shape is built from it.

A config.json is user input: ``num_hidden_layers: 0.5`` became 0 layers and a division by zero,
``2147483648`` a per-layer tuple too large for memory, ``hidden_size: 1e308`` an integer NumPy
cannot hold. Each key the planner reads as a size must be a whole number inside a range generous
beyond any published model (the largest hidden size is in the tens of thousands, the largest
vocabulary about 262,000, the longest context about 10 million), and the routed experts a token
picks cannot outnumber the experts there are.
"""

from __future__ import annotations

from typing import Any

from core.validation import shown_number

# 1,048,576: hidden, MLP, head and low-rank widths, heads, experts, steps between MoE layers
WIDTH = 2**20
_LIMITS: dict[str, int] = {
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "n_layer",
            "num_layers",
            "n_layers",
            "first_k_dense_replace",
            "max_window_layers",
        ),
        100_000,
    ),
    **dict.fromkeys(("vocab_size",), 2**24),
    **dict.fromkeys(
        (
            "max_position_embeddings",
            "n_positions",
            "seq_length",
            "sliding_window",
            "attention_chunk_size",
        ),
        2**32,
    ),
}
_WIDTH_KEYS = (
    "hidden_size",
    "n_embd",
    "d_model",
    "num_attention_heads",
    "n_head",
    "num_heads",
    "n_heads",
    "num_key_value_heads",
    "n_head_kv",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "ffn_hidden_size",
    "n_inner",
    "intermediate_size_mlp",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "num_experts_per_token",
    "top_k",
    "n_shared_experts",
    "decoder_sparse_step",
    "interleave_moe_layer_step",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "sliding_window_pattern",
    "no_rope_layer_interval",
)
LIMITS = {**dict.fromkeys(_WIDTH_KEYS, WIDTH), **_LIMITS}
# 0 means none of them (top_k: a generation setting older configs carry, read only beside an expert
# count)
ZERO_ALLOWED = (
    "first_k_dense_replace",
    "max_window_layers",
    "n_shared_experts",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "sliding_window",
    "top_k",
)
MOST_EXPANSION = 64.0  # MPT's expansion_ratio (d_ff / d_model); published configs use 4


def _first(cfg: dict[str, Any], *keys: str) -> tuple[str, Any] | None:
    """The first key of `keys` present with a value, and the value."""
    return next(((k, cfg[k]) for k in keys if cfg.get(k) is not None), None)


def _whole(value: Any) -> bool:
    """A whole number, compared as it is: an int past float range (10**400) is never turned into a
    float."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def check(cfg: dict[str, Any], error: type[ValueError]) -> None:
    """Raise `error` with one sentence naming the first key outside its range; None when every key
    fits."""
    for key, most in LIMITS.items():
        value = cfg.get(key)
        if value is None:
            continue
        least = 0 if key in ZERO_ALLOWED else 1
        if not _whole(value) or not least <= value <= most:
            raise error(
                f"config.json key {key} must be a whole number from {least} to {most:,} "
                f"(got {shown_number(value)})"[:300]
            )
    ratio = cfg.get("expansion_ratio")
    if ratio is not None and (
        not isinstance(ratio, int | float)
        or isinstance(ratio, bool)
        or not 0 < ratio <= MOST_EXPANSION
    ):
        raise error(
            "config.json key expansion_ratio must be a number above 0 and at most "
            f"{MOST_EXPANSION:g} (got {shown_number(ratio)})"[:300]
        )
    experts, picked = (
        _first(cfg, "num_local_experts", "num_experts", "n_routed_experts"),
        _first(cfg, "num_experts_per_tok", "num_experts_per_token", "top_k"),
    )
    if experts and experts[1] and picked and picked[1] > experts[1]:
        raise error(
            f"config.json key {picked[0]} ({picked[1]}) must be at most {experts[0]} "
            f"({experts[1]}): a "
            "token cannot be routed to more experts than there are"
        )
    hidden, heads = (
        _first(cfg, "hidden_size", "n_embd", "d_model"),
        _first(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads"),
    )
    if hidden and heads and cfg.get("head_dim") is None and heads[1] > hidden[1]:
        raise error(
            f"config.json key {heads[0]} ({heads[1]}) must be at most {hidden[0]} ({hidden[1]}) "
            "unless "
            "head_dim is given: each head is hidden_size / heads wide"
        )
