"""Which weight matrices LoRA adapts, and how many adapter parameters that makes.

Users name targets the way PEFT's ``LoraConfig(target_modules=...)`` does (``["q_proj", "v_proj"]``,
``"all-linear"``) or with the short kinds the planner has always taken (``q,v,down``). Both resolve
to the matrix kinds of `params.Linear` (q, k, v, o, gate, up, down) plus ``head`` for the output
layer and ``embed`` for the input embedding (``embed_tokens``: PEFT's lora.Embedding,
lora_embedding_A r × vocab and lora_embedding_B hidden × r, so r·(vocab + hidden) parameters, as for
the head).

``all-linear`` follows PEFT (``peft/tuners/tuners_utils.py:_maybe_include_all_linear_layers``, PEFT
0.10 onwards): every ``nn.Linear``/``Conv1D`` except the model's output embedding
(``get_output_embeddings()``, the LM head). Experts a model stores as 3-D ``nn.Parameter`` tensors
rather than ``nn.Linear`` modules (transformers' ``GptOssExperts``: ``gate_up_proj`` and
``down_proj`` are parameters) are not linear modules, so PEFT gives them no adapter:
`Architecture.experts_fused` marks such models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.planner.model.params import Architecture, Linear
    from core.planner.request import TrainingSpec

from core.planner.model.lora_targets import target_parameter_kinds, target_set

_MLA_NAMES = {"q_a": "q", "kv_a": "k", "kv": "v"}


@dataclass(frozen=True)
class ExpertParameter:
    """One fused expert weight PEFT wraps: (experts, d_in, d_out) per MoE layer. ParamWrapper gives
    every expert its own rank-r pair: lora_A is Linear(d_in, r·E), lora_B Linear(r·E, d_out)
    (update_layer), so r·E·(d_in + d_out) trainable elements, and each forward materialises ΔW = B·A
    for all E experts (get_delta_weight)."""

    kind: str
    experts: int
    d_in: int
    d_out: int

    @property
    def elements(self) -> int:
        """Elements of the fused weight (and of the ΔW and W + ΔW each forward builds)."""
        return self.experts * self.d_in * self.d_out

    def adapter_params(self, rank: int) -> int:
        return rank * self.experts * (self.d_in + self.d_out)


def expert_parameters(arch: Architecture, names: list[str] | None) -> list[ExpertParameter]:
    """The fused expert weights one MoE layer has adapted through ``target_parameters``.

    transformers' GptOssExperts: gate_up_proj (E, hidden, 2·expert_dim), down_proj (E, expert_dim,
    hidden); a model without a gated MLP has an up projection alone (E, hidden, expert_dim).
    """
    kinds = target_parameter_kinds(names)
    h, w, e = arch.hidden, arch.expert_intermediate, arch.experts
    out = []
    if "experts_gate_up" in kinds:
        out.append(ExpertParameter("experts_gate_up", e, h, (2 if arch.gated_mlp else 1) * w))
    if "experts_down" in kinds:
        out.append(ExpertParameter("experts_down", e, w, h))
    return out


def target_parameters_problem(arch: Architecture, names: list[str] | None) -> str | None:
    """One sentence when the model has no fused expert weights for ``target_parameters`` to
    adapt."""
    if names is None:
        return None
    if not arch.is_moe:
        return (
            "training.lora_target_parameters adapts fused mixture-of-experts weights; "
            f"{arch.name} is dense: "
            "leave it out and name its modules in training.lora_targets"
        )
    if not arch.experts_fused:
        return (
            "training.lora_target_parameters adapts experts stored as 3-D parameters (gpt-oss); "
            f"the experts of {arch.name} are linear modules that training.lora_targets adapts: "
            "leave it out"
        )
    return None


def expert_parameter_lora_params(arch: Architecture, rank: int, names: list[str] | None) -> int:
    """Adapter elements on the fused experts of every MoE layer: r·E·(d_in + d_out) per wrapped
    parameter."""
    if not arch.experts_fused:
        return 0
    return sum(p.adapter_params(rank) for p in expert_parameters(arch, names)) * arch.moe_layers


def kind(lin: Linear) -> str:
    """The target kind of one matrix (DeepSeek MLA's q_a/kv_a/kv count as q/k/v)."""
    return _MLA_NAMES.get(lin.name, lin.name)


def adaptable(arch: Architecture, lin: Linear) -> bool:
    """Whether PEFT can wrap this matrix: experts stored as fused 3-D parameters are not linear
    modules."""
    return not (lin.expert and arch.experts_fused)


def adapted_linears(arch: Architecture, targets: str | list[str]) -> list[Linear]:
    """The matrices of one (averaged) layer that carry an adapter."""
    wanted = target_set(targets)
    return [lin for lin in arch.linears() if kind(lin) in wanted and adaptable(arch, lin)]


def lora_params(arch: Architecture, rank: int, targets: str | list[str]) -> int:
    """r·(d_in + d_out) per adapted matrix (Hu et al. 2021, arXiv:2106.09685); every unfused expert
    gets one."""
    total = sum(
        rank * (lin.d_in + lin.d_out) * lin.count_total for lin in adapted_linears(arch, targets)
    )
    # lm_head and embed_tokens: r·(hidden + vocab) each
    ends = len(target_set(targets) & {"head", "embed"})
    return int(total * arch.layers + ends * rank * (arch.hidden + arch.vocab))


def trainable_params(arch: Architecture, training: TrainingSpec) -> float:
    """Parameters the optimizer steps: every one in a full fine-tune, the adapters under LoRA/QLoRA
    (on the target modules, and on the fused expert weights ``lora_target_parameters`` names)."""
    if training.method.value == "full":
        return float(arch.total_params)
    rank = training.lora_rank or 16
    return float(
        lora_params(arch, rank, training.lora_targets)
        + expert_parameter_lora_params(arch, rank, training.lora_target_parameters)
    )


def largest_trainable_matrix(arch: Architecture, training: TrainingSpec) -> int:
    """Elements of the biggest gradient a step produces at once: a weight matrix, the embedding, or
    an adapter."""
    if training.method.value == "full":
        return max(arch.largest_matrix_params, arch.vocab * arch.hidden)
    rank = training.lora_rank or 16
    widths = [max(lin.d_in, lin.d_out) for lin in adapted_linears(arch, training.lora_targets)]
    if target_set(training.lora_targets) & {"head", "embed"}:
        widths.append(max(arch.vocab, arch.hidden))
    experts = [
        p.experts * max(p.d_in, p.d_out)
        for p in expert_parameters(arch, training.lora_target_parameters)
    ]
    return rank * max([*widths, *experts], default=0)
