"""Wall time is more than steps: the start, evaluation passes, checkpoint writes and failures, each
named.

A 70B full fine-tune over two A100 nodes planned at 1.1 h of steps took 13.5 h as published, with
evaluation passes and sharded checkpoints of full states inside it. The plan's hours add, in seconds
(`time.breakdown_s`):

- steps: steps × step time;
- start-up: the first start, `assumptions.restart_minutes` (requeue, model load, warm-up);
- evaluation: ⌊steps ÷ eval_every_steps⌋ passes of `eval_tokens` tokens, forward only, at the step's
  own model FLOPs utilisation (a forward pass is 2N of the 6N a trained token costs; Kaplan et al.
  2020, arXiv:2001.08361);
- checkpoint writes: the writes at the planned interval (Daly's optimum, reliability.py), each of
  the checkpoint's size at its tier's write bandwidth;
- failures: the rest of Daly's expected wall time, the restarts and the work lost between the last
  checkpoint and a failure (or a spot preemption).
"""

from __future__ import annotations

import math

from core.planner.request_assumptions import Assumptions
from core.planner.result import CheckpointResult, TimeBreakdown


def evaluation_seconds(
    a: Assumptions,
    steps: float,
    tokens_per_s: float,
    forward_flops_per_token: float,
    model_flops_per_token: float,
) -> float:
    """Seconds of evaluation passes: forward-only tokens at the training step's FLOP rate."""
    if (
        a.eval_every_steps <= 0
        or a.eval_tokens <= 0
        or tokens_per_s <= 0
        or model_flops_per_token <= 0
    ):
        return 0.0
    passes = math.floor(steps / a.eval_every_steps)
    return passes * a.eval_tokens * forward_flops_per_token / model_flops_per_token / tokens_per_s


def breakdown(
    steps_s: float, start_s: float, eval_s: float, ckpt: CheckpointResult, hours: float
) -> TimeBreakdown:
    """The plan's hours split by what fills them; the parts add up to `hours` × 3600 (failures take
    the rest)."""
    total = hours * 3600.0
    tau = ckpt.interval_minutes * 60.0
    writes = (steps_s / tau) * ckpt.write_seconds if tau > 0 else 0.0
    writes = min(writes, max(total - steps_s - start_s - eval_s, 0.0))
    failures = max(total - steps_s - start_s - eval_s - writes, 0.0)
    return TimeBreakdown(
        steps=steps_s,
        start_up=start_s,
        evaluation=eval_s,
        checkpoint_writes=writes,
        failures=failures,
    )
