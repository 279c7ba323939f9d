"""The names a request may give LoRA's targets, and the one sentence when a name is unknown.

The request's validators (core/planner/request.py) check ``training.lora_targets`` and
``training.lora_target_parameters`` as the request is read; the adapter arithmetic
(core/planner/model/lora.py) resolves the same names to matrices. Both read this table, so the
request model does not import the arithmetic that itself takes a TrainingSpec (the circle request.py
⇄ lora.py).
"""

from __future__ import annotations

KINDS = ("q", "k", "v", "o", "gate", "up", "down", "head", "embed")
PRESETS = {
    "all-linear": frozenset({"q", "k", "v", "o", "gate", "up", "down"}),
    "attention": frozenset({"q", "k", "v", "o"}),
    "qv": frozenset({"q", "v"}),
}
# PEFT / Hugging Face module names (Llama, Mistral, Qwen, Gemma, gpt-oss), litgpt's and BERT-style
# names.
MODULE_NAMES: dict[str, frozenset[str]] = {
    "q_proj": frozenset({"q"}),
    "k_proj": frozenset({"k"}),
    "v_proj": frozenset({"v"}),
    "o_proj": frozenset({"o"}),
    "gate_proj": frozenset({"gate"}),
    "up_proj": frozenset({"up"}),
    "down_proj": frozenset({"down"}),
    "lm_head": frozenset({"head"}),
    "embed_tokens": frozenset({"embed"}),
    "qkv_proj": frozenset({"q", "k", "v"}),  # Phi-3's fused projection
    "query_key_value": frozenset({"q", "k", "v"}),  # Falcon, GPT-NeoX, BLOOM
    "gate_up_proj": frozenset({"gate", "up"}),  # Phi-3's fused MLP input
    "query": frozenset({"q"}),
    "key": frozenset({"k"}),
    "value": frozenset({"v"}),
    "proj": frozenset({"o"}),  # litgpt's attention output
    "mlp": frozenset({"gate", "up", "down"}),  # litgpt's lora_mlp
    **{kind: frozenset({kind}) for kind in KINDS},
}
# PEFT target_parameters (PEFT >= 0.17, peft/tuners/lora/layer.py ParamWrapper): the fused 3-D
# expert weights of transformers' MoE blocks, named as the PEFT docs do ("mlp.experts.gate_up_proj",
# Llama 4's "feed_forward.experts.gate_up_proj") or by a suffix; the short kinds name the same two
# parameters.
PARAMETER_KINDS = ("experts_gate_up", "experts_down")
_PARAMETER_SUFFIXES = {"gate_up_proj": "experts_gate_up", "down_proj": "experts_down"}
_PARAMETERS_ALLOWED = (
    "mlp.experts.gate_up_proj and mlp.experts.down_proj (or feed_forward.experts.…, experts.…; "
    "short: experts_gate_up, experts_down)"
)
_ALLOWED = (
    "all-linear, attention, qv, or module names q_proj, k_proj, v_proj, o_proj, gate_proj, "
    "up_proj, down_proj, lm_head, embed_tokens (short: q, k, v, o, gate, up, down, head, embed)"
)


def target_set(targets: str | list[str]) -> frozenset[str]:
    """The matrix kinds adapted: a preset, a comma list, or a PEFT ``target_modules`` list of
    names."""
    names = [str(t) for t in targets] if isinstance(targets, list) else targets.split(",")
    names = [n.strip().lower() for n in names if n.strip()]
    if not names:
        raise ValueError(f"training.lora_targets is empty; use {_ALLOWED}")
    if len(names) == 1 and names[0] in PRESETS:
        return PRESETS[names[0]]
    kinds: set[str] = set()
    for name in names:
        if name in PRESETS:
            raise ValueError(
                f"training.lora_targets mixes the preset '{name}' with module names; give the "
                "preset alone"
            )
        if name not in MODULE_NAMES:
            raise ValueError(f"training.lora_targets has unknown module '{name}'; use {_ALLOWED}")
        kinds |= MODULE_NAMES[name]
    return frozenset(kinds)


def target_parameter_kinds(names: list[str] | None) -> frozenset[str]:
    """The fused expert parameters PEFT's ``target_parameters`` names: experts_gate_up and/or
    experts_down."""
    if names is None:
        return frozenset()
    if not names:
        raise ValueError(
            f"training.lora_target_parameters is an empty list; name {_PARAMETERS_ALLOWED}"
        )
    kinds: set[str] = set()
    for raw in names:
        name = str(raw).strip().lower()
        if name in PARAMETER_KINDS:
            kinds.add(name)
            continue
        parts = name.split(".")
        if len(parts) >= 2 and parts[-2] == "experts" and parts[-1] in _PARAMETER_SUFFIXES:
            kinds.add(_PARAMETER_SUFFIXES[parts[-1]])
            continue
        raise ValueError(
            f"training.lora_target_parameters has unknown parameter {str(raw)!r}; use "
            f"{_PARAMETERS_ALLOWED}"
        )
    return frozenset(kinds)


def check_target_parameters(names: list[str] | None, method: str, dropout: float) -> None:
    """One sentence when ``lora_target_parameters`` cannot hold with the method or the dropout."""
    if names is None:
        return
    if method == "full":
        raise ValueError(
            "training.lora_target_parameters is only allowed with method lora or qlora (method is "
            "full: every parameter trains)"
        )
    target_parameter_kinds(names)  # one sentence naming an unknown parameter
    if dropout > 0:
        # PEFT's ParamWrapper raises "does not work with lora_dropout != 0" (x cannot be factored
        # out of B·A·x).
        raise ValueError(
            "training.lora_target_parameters needs lora_dropout 0: PEFT's ParamWrapper cannot "
            "apply "
            f"dropout to a parameter (lora_dropout is {dropout:g})"
        )
