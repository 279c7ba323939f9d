"""Which model a launch file loads, and the name of its decoder-layer class (FSDP's wrap unit).

A preset names its Hugging Face repository in the catalog (``hf_repo`` in
resources/catalog/models.json); a ``hf_config`` request names a config.json, whose folder is what
``from_pretrained`` loads. A bare parameter count or inline config keys name no weights at all:
formats that load a model refuse it in one sentence.
"""

from __future__ import annotations

from pathlib import Path

from core.catalog.lookup import Catalog
from core.catalog.overrides import load_catalog
from core.json_file import FileReadError, read_json_file
from core.launch.plan_view import LaunchError, LaunchPlan


def hf_model(p: LaunchPlan, fmt: str, catalog: Catalog | None = None) -> str:
    """The repository id or local folder ``from_pretrained`` reads for this plan's model."""
    spec = p.result.request.model
    if spec.preset is not None:
        return (catalog or load_catalog()).model(spec.preset).hf_repo
    if spec.hf_config is not None:
        return str(Path(spec.hf_config).expanduser().parent)
    raise LaunchError(
        f"model: a {fmt} config must name the weights to load; this plan gives only "
        f"{'a parameter count' if spec.params is not None else 'config.json keys'} — use "
        "model.preset or "
        "model.hf_config"
    )


def architecture(p: LaunchPlan, catalog: Catalog | None = None) -> str | None:
    """config.json's ``architectures[0]`` for the plan's model (None when the plan has no
    config)."""
    spec = p.result.request.model
    cfg: dict[str, object] | None = None
    if spec.preset is not None:
        cfg = (catalog or load_catalog()).model(spec.preset).config
    elif spec.inline_config is not None:
        cfg = spec.inline_config
    elif spec.hf_config is not None:
        try:
            cfg = read_json_file(Path(spec.hf_config).expanduser())
        except FileReadError:
            cfg = None
    if not isinstance(cfg, dict):
        return None
    names = cfg.get("architectures")
    return str(names[0]) if isinstance(names, list) and names else None


def decoder_layer(p: LaunchPlan, catalog: Catalog | None = None) -> str:
    """The transformers decoder-layer class to wrap, e.g. ``LlamaDecoderLayer`` for
    ``LlamaForCausalLM``.

    transformers names them ``<Model>DecoderLayer`` beside ``<Model>ForCausalLM``
    (modeling_llama.py, modeling_qwen2.py, modeling_mistral.py, ...); Gemma 3's multimodal
    checkpoints (``Gemma3ForConditionalGeneration``) wrap the text model's ``Gemma3DecoderLayer``.
    """
    arch = architecture(p, catalog)
    if arch is None:
        raise LaunchError(
            "model: FSDP wraps each decoder layer, and this plan's model names no architecture "
            "(config.json 'architectures'); use model.preset or a model.hf_config that has it"
        )
    for suffix in ("ForCausalLM", "ForConditionalGeneration"):
        if arch.endswith(suffix):
            return arch.removesuffix(suffix) + "DecoderLayer"
    raise LaunchError(f"model: architecture {arch} is not a causal language model (…ForCausalLM)")
