"""Wall time = steps + start-up + evaluation + checkpoint writes + failures, each named
(speed/wall_time.py).

Expected figures come from the request itself (its restart minutes, its evaluation cadence and
tokens) and from arithmetic a reader can redo: a forward pass costs 2N FLOPs of a trained token's 6N
(Kaplan et al. 2020).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.planner.plan import plan
from core.planner.request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]


def _request(**assumptions: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 5e7, "seq_len": 2048},
            "training": {"method": "full", "sharding": "fsdp", "global_batch_size": 64},
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
            "assumptions": assumptions,
        }
    )


def _parts(result: Any) -> dict[str, float]:
    return dict(result.time.breakdown_s.model_dump())


def test_the_parts_add_up_to_the_wall_hours() -> None:
    result = plan(_request())
    parts = _parts(result)
    assert set(parts) == {"steps", "start_up", "evaluation", "checkpoint_writes", "failures"}
    assert sum(parts.values()) == pytest.approx(result.time.hours * 3600, rel=1e-9)
    assert parts["start_up"] == 600.0  # restart_minutes' default of 10
    assert parts["steps"] == pytest.approx(result.compute.steps * result.compute.step_time_s)
    assert parts["evaluation"] == 0.0


def test_evaluation_passes_run_forward_only_at_the_steps_rate() -> None:
    """Every 10 steps, 2,048,000 tokens forward: ⌊steps ÷ 10⌋ passes, each 2N ÷ (model FLOPs per
    token) of the time those tokens take to train."""
    plain = plan(_request())
    result = plan(_request(eval_every_steps=10, eval_tokens=2_048_000))
    c = result.compute
    passes = c.steps // 10
    forward_share = 2 * c.params_active / c.model_flops_per_token
    expected = passes * 2_048_000 * forward_share / c.tokens_per_second
    assert result.time.breakdown_s.evaluation == pytest.approx(expected, rel=1e-6)
    # 2N of 6N plus attention (6N counts the non-embedding weights)
    assert 0.25 < forward_share < 0.36
    assert result.time.hours > plain.time.hours
    assert sum(_parts(result).values()) == pytest.approx(result.time.hours * 3600, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    every=st.integers(min_value=0, max_value=10**6),
    tokens=st.floats(min_value=0, max_value=1e10),
    restart=st.floats(min_value=0, max_value=600),
)
def test_any_cadence_keeps_the_parts_whole(every: int, tokens: float, restart: float) -> None:
    result = plan(_request(eval_every_steps=every, eval_tokens=tokens, restart_minutes=restart))
    parts = _parts(result)
    assert all(v >= 0 for v in parts.values())
    assert sum(parts.values()) == pytest.approx(result.time.hours * 3600, rel=1e-9)


def test_the_time_line_names_every_part_and_json_carries_them() -> None:
    argv = [
        "plan",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "5e7",
        "--gpu",
        "H100-SXM",
        "--method",
        "full",
    ]
    text = subprocess.run(
        [sys.executable, "-m", "cli", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    ).stdout
    line = next(x for x in text.splitlines() if x.startswith("Parts "))
    for word in (
        "steps",
        "start-up",
        "evaluation none (assumptions.eval_every_steps 0)",
        "checkpoint writes",
        "failures",
        "assumptions.restart_minutes 10",
    ):
        assert word in line
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "cli", *argv, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=True,
        ).stdout
    )
    assert sum(data["time"]["breakdown_s"].values()) == pytest.approx(
        data["time"]["hours"] * 3600, rel=1e-6
    )
    assert data["time"]["hours_range"]["sources"] >= 3


def test_a_bad_cadence_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValueError, match="eval_every_steps"):
        _request(eval_every_steps=-1)
