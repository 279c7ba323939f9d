"""Which weight matrices LoRA adapts, and how many adapter parameters that makes.

Users name targets the way PEFT's ``LoraConfig(target_modules=...)`` does (``["q_proj", "v_proj"]``,
``"all-linear"``) or with the short kinds the planner has always taken (``q,v,down``). Both resolve to the
matrix kinds of `params.Linear` (q, k, v, o, gate, up, down) plus ``head`` for the output layer.

``all-linear`` follows PEFT (``peft/tuners/tuners_utils.py:_maybe_include_all_linear_layers``, PEFT 0.10
onwards): every ``nn.Linear``/``Conv1D`` except the model's output embedding (``get_output_embeddings()``,
the LM head). Experts a model stores as 3-D ``nn.Parameter`` tensors rather than ``nn.Linear`` modules
(transformers' ``GptOssExperts``: ``gate_up_proj`` and ``down_proj`` are parameters) are not linear modules,
so PEFT gives them no adapter: `Architecture.experts_fused` marks such models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.planner.model.params import Architecture, Linear
    from core.planner.models import TrainingSpec

KINDS = ("q", "k", "v", "o", "gate", "up", "down", "head")
PRESETS = {
    "all-linear": frozenset({"q", "k", "v", "o", "gate", "up", "down"}),
    "attention": frozenset({"q", "k", "v", "o"}),
    "qv": frozenset({"q", "v"}),
}
# PEFT / Hugging Face module names (Llama, Mistral, Qwen, Gemma, gpt-oss), litgpt's and BERT-style names.
MODULE_NAMES: dict[str, frozenset[str]] = {
    "q_proj": frozenset({"q"}),
    "k_proj": frozenset({"k"}),
    "v_proj": frozenset({"v"}),
    "o_proj": frozenset({"o"}),
    "gate_proj": frozenset({"gate"}),
    "up_proj": frozenset({"up"}),
    "down_proj": frozenset({"down"}),
    "lm_head": frozenset({"head"}),
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
_MLA_NAMES = {"q_a": "q", "kv_a": "k", "kv": "v"}
_ALLOWED = (
    "all-linear, attention, qv, or module names q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, "
    "lm_head (short: q, k, v, o, gate, up, down, head)"
)


def target_set(targets: str | list[str]) -> frozenset[str]:
    """The matrix kinds adapted: a preset, a comma list, or a PEFT ``target_modules`` list of names."""
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
                f"training.lora_targets mixes the preset '{name}' with module names; give the preset alone"
            )
        if name not in MODULE_NAMES:
            raise ValueError(f"training.lora_targets has unknown module '{name}'; use {_ALLOWED}")
        kinds |= MODULE_NAMES[name]
    return frozenset(kinds)


def kind(lin: Linear) -> str:
    """The target kind of one matrix (DeepSeek MLA's q_a/kv_a/kv count as q/k/v)."""
    return _MLA_NAMES.get(lin.name, lin.name)


def adaptable(arch: Architecture, lin: Linear) -> bool:
    """Whether PEFT can wrap this matrix: experts stored as fused 3-D parameters are not linear modules."""
    return not (lin.expert and arch.experts_fused)


def adapted_linears(arch: Architecture, targets: str | list[str]) -> list[Linear]:
    """The matrices of one (averaged) layer that carry an adapter."""
    wanted = target_set(targets)
    return [lin for lin in arch.linears() if kind(lin) in wanted and adaptable(arch, lin)]


def lora_params(arch: Architecture, rank: int, targets: str | list[str]) -> int:
    """r·(d_in + d_out) per adapted matrix (Hu et al. 2021, arXiv:2106.09685); every unfused expert gets one."""
    total = sum(rank * (lin.d_in + lin.d_out) * lin.count_total for lin in adapted_linears(arch, targets))
    head = rank * (arch.hidden + arch.vocab) if "head" in target_set(targets) else 0
    return int(total * arch.layers + head)


def trainable_params(arch: Architecture, training: TrainingSpec) -> float:
    """Parameters the optimizer steps: every one in a full fine-tune, the adapters under LoRA/QLoRA."""
    if training.method.value == "full":
        return float(arch.total_params)
    return float(lora_params(arch, training.lora_rank or 16, training.lora_targets))


def largest_trainable_matrix(arch: Architecture, training: TrainingSpec) -> int:
    """Elements of the biggest gradient a step produces at once: a weight matrix, the embedding, or an adapter."""
    if training.method.value == "full":
        return max(arch.largest_matrix_params, arch.vocab * arch.hidden)
    rank = training.lora_rank or 16
    widths = [max(lin.d_in, lin.d_out) for lin in adapted_linears(arch, training.lora_targets)]
    if "head" in target_set(training.lora_targets):
        widths.append(max(arch.vocab, arch.hidden))
    return rank * max(widths, default=0)
