"""A published case's architecture as the config.json keys the planner reads.

The calibration fixtures (throughput_cases.json, published_runs.json, calibration_cases.json) give
each model's shape in their own field names and its family in words; this turns both into the keys
`Architecture.from_hf_config` reads, with the family's MLP, norm and head.
"""

from __future__ import annotations

from typing import Any


def shape_keys(model: dict[str, Any]) -> dict[str, Any]:
    """A case's `model` shape (hidden, layers, heads, kv_heads, vocab, intermediate) as config.json
    keys.

    The calibration fixtures (throughput_cases.json, calibration_cases.json) describe models this
    way; the family keys (model_type, activation, tied head) are the caller's.
    """
    return {
        "hidden_size": model["hidden"],
        "num_hidden_layers": model["layers"],
        "num_attention_heads": model["heads"],
        "num_key_value_heads": model["kv_heads"] or model["heads"],
        "vocab_size": model["vocab"],
        "intermediate_size": model["intermediate"] or 4 * model["hidden"],
    }


def model_config(case: dict[str, Any]) -> dict[str, Any]:
    """The case's architecture as inline config.json keys, with the family's MLP, norm and head.

    MPT (llm-foundry), Megatron's GPT, GPT-2 and BERT have a plain 4h GELU MLP with LayerNorm; the
    shape comes in Llama-style key names, so they are planned as model_type "gpt2", which params.py
    reads that way. MPT ties its embedding (`tied wte` in the notes), GPT-2-style models in
    LLMs-from-scratch and Megatron's GPT do not. Llama, Qwen and TinyLlama are SwiGLU with RMSNorm,
    untied, except Llama 3.2 (1B, 3B), which ties its head to the embedding (tie_word_embeddings
    true in its config.json). A case that states its head (`model.tied`, from its config.json)
    is planned so.
    """
    m = case["model"]
    name = m["name"].lower()
    cfg = shape_keys(m)
    # "mosaicml/mpt-7b": the model's own name after its owner's
    plain = name.removeprefix("mosaicml/").startswith(("mpt", "gpt", "bert"))
    if plain:
        cfg.update(
            model_type="gpt2",
            hidden_act="gelu",
            tie_word_embeddings=name.startswith(("mpt", "bert")),
        )
    elif "qwen2" in name:
        cfg.update(model_type="qwen2", hidden_act="silu", tie_word_embeddings=False)
    else:
        cfg.update(model_type="llama", hidden_act="silu", tie_word_embeddings="llama-3.2" in name)
    if m.get("tied") is not None:
        # the case states its head (its config.json's tie_word_embeddings): that wins over the
        # family's usual choice (santacoder, nanoGPT's GPT-2 and BLOOM tie theirs)
        cfg["tie_word_embeddings"] = bool(m["tied"])
    if name.startswith("bert"):
        # bert-large-uncased config.json (BertConfig's default too)
        cfg["attention_probs_dropout_prob"] = 0.1
    return cfg
