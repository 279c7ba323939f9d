"""What a published memory figure holds, read the way its source measured it.

The expected numbers come from the sources themselves (the Hugging Face perf doc's own empty-process reading,
ms-swift's and universal-llm-trainer's stated LoRA dropout, the transformers commit the perf doc pins), worked out
by hand below; none is computed by the planner.
"""

from __future__ import annotations

from bench import calibrate
from bench.calibrate import load_cases
from bench.calibrate_cases import build

BY_ID = {c["id"]: c for c in load_cases()}


def test_the_perf_docs_own_cuda_context_replaces_the_planners() -> None:
    """perf_train_gpu_one: `torch.ones((1, 1)).to("cuda")` alone shows "GPU memory occupied: 1343 MB" (MiB, pynvml
    `used // 1024**2`) on its V100. 1343 MiB = 1,408,237,568 B; the planner's context is 0.75 GiB = 805,306,368 B;
    the nvidia-smi figure therefore holds 602,931,200 B more than the plan's total."""
    for case_id in ("hf-perfdoc-bert-large-fp32-bs4-v100-mem", "hf-perfdoc-bert-large-fp16-gc-adam8bit-v100-mem"):
        assert calibrate.stated_context_excess(BY_ID[case_id]) == 602_931_200


def test_a_figure_without_a_measured_context_keeps_the_planners() -> None:
    assert calibrate.stated_context_excess(BY_ID["swift-qwen7b-lora-a100-2048-mem"]) == 0.0


def test_bert_at_the_pinned_transformers_commit_is_planned_with_eager_attention() -> None:
    """BertSelfAttention computed softmax(QK^T) in PyTorch ops until transformers#28802 (2024) added SDPA; the perf
    doc pins a 2022 commit, so its s × s probabilities are saved for backward."""
    for case_id in ("hf-perfdoc-bert-large-fp32-bs4-v100-mem", "hf-perfdoc-bert-large-fp32-bs4-v100-walltime",
                    "hf-perfdoc-bert-large-fp16-gc-adam8bit-v100-mem"):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.attention.value == "eager"


def test_a_runs_stated_lora_dropout_reaches_its_plan() -> None:
    """ms-swift's `--lora_dropout_p` default 0.05 and universal-llm-trainer's llm_lora_config.yaml `lora_dropout: 0.05`
    are written in each run's `lora` block; PEFT then keeps each adapter's dropped-out input for backward."""
    for case_id in ("swift-qwen7b-lora-a100-2048-mem", "swift-qwen7b-lora-eager-nogc-a100-2048-mem",
                    "ult-llama31-8b-lora-h100-8192-mem"):
        request = build(BY_ID[case_id]).request
        assert request is not None and request.training.lora_dropout == 0.05
