"""A config.json as transformers reads it, before the planner sizes the model from it
(params.Architecture).

Checkpoints ship configs that name only what differs from their configuration class:
google/gemma-3-4b-it's ``text_config`` has no ``vocab_size``, ``num_attention_heads``,
``num_key_value_heads`` or ``head_dim``, and transformers fills them from ``Gemma3TextConfig``'s
defaults. A multimodal checkpoint's text model is what the planner plans; its vision tower is named
as left out, with its size. A quantized checkpoint's ``quantization_config`` is read into a note
that says how fine-tuning loads the weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# transformers' configuration classes' __init__ defaults for the keys a model is sized by, for the
# families whose shipped configs leave them out. Gemma3TextConfig:
# transformers/models/gemma3/configuration_gemma3.py.
TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "sliding_window": 4096,
    },
}
# The text model type a multimodal config's text_config takes when it names none
# (Gemma3Config.sub_configs).
TEXT_MODEL_TYPES = {"gemma3": "gemma3_text"}
# SiglipVisionConfig.__init__ defaults (transformers/models/siglip/configuration_siglip.py).
SIGLIP_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
    "vision_use_head": True,
}
SIGLIP_TYPES = {"siglip_vision_model", "siglip"}


@dataclass(frozen=True)
class ConfigView:
    """The keys the planner reads (text model, transformers' defaults filled) and what it says about
    them."""

    config: dict[str, Any]
    notes: tuple[str, ...]
    vision_params: int | None = None  # the vision tower left out, when its kind is known


def transformers_view(cfg: dict[str, Any]) -> ConfigView:
    """`cfg` as transformers builds the text model from it, with a note for each thing read or left
    out."""
    notes: list[str] = []
    text = cfg.get("text_config")
    if "hidden_size" not in cfg and isinstance(text, dict):
        text_type = str(
            text.get("model_type") or TEXT_MODEL_TYPES.get(str(cfg.get("model_type")), "")
        )
        text = _with_defaults(dict(text, model_type=text_type) if text_type else text, notes)
        merged = dict(text, **{k: v for k, v in cfg.items() if k != "text_config"})
        cfg = merged
    else:
        cfg = _with_defaults(cfg, notes)
    vision = _vision(cfg.get("vision_config"), notes)
    _quantization(cfg.get("quantization_config"), notes)
    return ConfigView(cfg, tuple(notes), vision)


def _with_defaults(cfg: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    model_type = str(cfg.get("model_type") or "")
    defaults = TEXT_DEFAULTS.get(model_type, {})
    missing = {k: v for k, v in defaults.items() if k not in cfg}
    if not missing:
        return cfg
    filled = ", ".join(
        f"{k} {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} {v}"
        for k, v in missing.items()
        if k in _SIZING_KEYS
    )
    if filled:
        notes.append(
            f"config.json leaves out keys that transformers fills from its {model_type} defaults: "
            f"{filled}"
        )
    return {**missing, **cfg}


_SIZING_KEYS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)


def siglip_params(vision: dict[str, Any]) -> int:
    """Parameters of a SigLIP vision tower (transformers' SiglipVisionTransformer): patch and
    position embeddings, per layer q/k/v/out projections with biases, two LayerNorms and a two-layer
    MLP, the final LayerNorm, and the attention-pooling head when vision_use_head is true."""
    v = {**SIGLIP_DEFAULTS, **vision}
    h, i, layers = int(v["hidden_size"]), int(v["intermediate_size"]), int(v["num_hidden_layers"])
    patch, channels = int(v["patch_size"]), int(v["num_channels"])
    positions = (int(v["image_size"]) // patch) ** 2
    embeddings = channels * patch * patch * h + h + positions * h
    layer = 4 * (h * h + h) + 2 * 2 * h + (h * i + i) + (i * h + h)
    head = (h + 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h)) if v["vision_use_head"] else 0
    return embeddings + layers * layer + 2 * h + head


def _sized(vision: dict[str, Any]) -> bool:
    """True when every size a SigLIP tower is counted from is a positive integer (after the
    defaults)."""
    v = {**SIGLIP_DEFAULTS, **vision}
    return all(
        isinstance(v[k], int) and not isinstance(v[k], bool) and v[k] > 0 for k in _SIGLIP_SIZES
    )


_SIGLIP_SIZES = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_channels",
    "image_size",
    "patch_size",
)


def _vision(vision: Any, notes: list[str]) -> int | None:
    if not isinstance(vision, dict):
        return None
    kind = str(vision.get("model_type") or "vision")
    if kind not in SIGLIP_TYPES or not _sized(vision):
        notes.append(
            f"the vision tower (vision_config, {kind}) is left out: the plan is of the text "
            "model, which a "
            "text-only fine-tune trains; loaded frozen beside it, the tower adds its weights to "
            "each GPU"
        )
        return None
    count = siglip_params(vision)
    layers = vision.get("num_hidden_layers", SIGLIP_DEFAULTS["num_hidden_layers"])
    notes.append(
        f"the vision tower (vision_config: {kind}, {layers} layers, {count / 1e6:,.0f}M "
        "parameters) is "
        "left out: the plan is of the text model, which a text-only fine-tune trains and "
        "transformers "
        f"can load alone; loaded frozen beside it, the tower adds {2 * count / 1e9:.2f} GB of "
        "bf16 weights "
        "to each GPU"
    )
    return count


def _quantization(quant: Any, notes: list[str]) -> None:
    if not isinstance(quant, dict):
        return
    method = str(quant.get("quant_method") or "unnamed")
    kept = quant.get("modules_to_not_convert")
    unconverted = (
        f" ({', '.join(map(str, kept))} stay 16-bit)" if isinstance(kept, list) and kept else ""
    )
    if method == "mxfp4":
        notes.append(
            f"quantization_config: the checkpoint stores its experts in MXFP4{unconverted}; "
            "fine-tuning "
            "loads them dequantized to bf16 (transformers' Mxfp4Config(dequantize=True)), as this "
            "plan counts them"
        )
    else:
        notes.append(
            f"quantization_config: the checkpoint is stored quantized ({method}){unconverted}; "
            "the plan "
            "counts the weights at the request's precision and method (qlora: NF4), not as stored"
        )
