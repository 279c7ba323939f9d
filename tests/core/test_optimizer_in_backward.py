"""`training.optimizer_in_backward`: one gradient at a time and no accumulation (torchtune's
optimizer_in_bwd).

The measured effect on real hardware is in test_calibration.py (litgpt_measured.json: Llama-2-7B
full fine-tune, 67.45 GB → 48.17 GB on an H200); these tests pin the contract around it.
"""

from __future__ import annotations

from core.library.store import request_to_dict
from core.planner.plan import plan
from core.planner.request import PlanRequest

REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 1e8, "seq_len": 2048},
    "training": {
        "method": "full",
        "precision": "pure_bf16",
        "micro_batch_size": 2,
        "global_batch_size": 2,
    },
    "hardware": {"gpu": "H200", "gpus_per_node": 1},
}


def _plan(**training: object) -> dict:
    body = request_to_dict(PlanRequest.model_validate(REQUEST))
    body["training"].update(training)
    return plan(PlanRequest.model_validate(body)).model_dump()


def test_gradients_shrink_to_the_largest_matrix() -> None:
    """Llama 3.1 8B: the largest gradient is the 128,256 × 4,096 embedding or LM head, 1.05 GB in
    bf16."""
    plain, fused = _plan(), _plan(optimizer_in_backward=True)
    assert plain["memory"]["per_gpu"]["gradients"] == plain["compute"]["params_total"] * 2
    assert fused["memory"]["per_gpu"]["gradients"] == 128_256 * 4_096 * 2
    assert fused["memory"]["per_gpu"]["total"] < plain["memory"]["per_gpu"]["total"]
    assert not any("optimizer_in_backward" in w for w in fused["warnings"])


def test_gradient_accumulation_is_called_out() -> None:
    """A global batch of 8 on one GPU at micro-batch 2 needs 4 micro-batches per step, which it
    cannot do."""
    warnings = _plan(optimizer_in_backward=True, global_batch_size=8)["warnings"]
    assert any(
        "cannot accumulate 4 micro-batches" in w and "global_batch_size to 2" in w for w in warnings
    )
