"""The step probe's layer against independent counts, and the probe run on this machine as a user
runs it.

The layer the remote script builds (resources/probes/step.py) is counted on the meta device at the
plan's own shapes, and its parameters and FLOPs are checked against figures worked out here by hand
from the published config.json files (not from the planner): Llama-3.1-8B's config
(meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate
14336, vocab 128256, untied) gives 218,112,000 parameters a layer, and 32 of them plus the two
embedding matrices and the final norm make the 8,030,261,248 of its safetensors index (total_size
16,060,522,496 bytes in bf16); Mixtral-8x7B's (8 experts of intermediate 14336) gives 1,451,270,144
a layer and 46,702,792,704 in all, its safetensors index's count. FLOPs are 6N per token for trained
weights, 4N for frozen ones (forward and input gradient, no weight gradient), plus PaLM's attention
term 12·heads·head_dim·seq per token (Chowdhery et al. 2022, appendix B), as torch's FLOP counter
sees them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main as cli_main
from core.planner.request import PlanRequest
from core.probes.apply import step_spec

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "resources" / "probes" / "step.py"
# q, k, v, o, MLP, norms
LLAMA_LAYER = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
LLAMA_TOTAL = 8_030_261_248
MIXTRAL_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 8 * 3 * 4096 * 14336 + 4096 * 8 + 2 * 4096
MIXTRAL_TOTAL = 46_702_792_704


def request(preset: str, method: str, seq: int = 1024, **training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": preset},
            "data": {"tokens": "1M", "seq_len": seq},
            "training": {
                "method": method,
                "gradient_checkpointing": False,
                "micro_batch_size": 1,
                **training,
            },
            "hardware": {"gpu": "H100-SXM"},
        }
    )


def count(req: PlanRequest) -> dict[str, Any]:
    """The script's count of one layer and the output layer, at the plan's own shapes (meta
    device)."""
    spec = step_spec(req).script_json(1, "cpu")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "count", "--spec", spec],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (result,) = [r for r in map(json.loads, done.stdout.splitlines()) if r["event"] == "result"]
    return result


def test_a_llama_3_1_8b_layer_has_the_published_configs_parameters_and_6n_plus_attention_flops(
    need_torch: None,
) -> None:
    assert LLAMA_LAYER == 218_112_000
    # the hand count is the published one
    assert 32 * LLAMA_LAYER + 2 * 128256 * 4096 + 4096 == LLAMA_TOTAL
    got = count(request("llama-3.1-8b", "full"))
    assert got["params_layer"] == LLAMA_LAYER
    assert got["params_head"] == 128256 * 4096 + 4096
    tokens, matmul = 1024, LLAMA_LAYER - 2 * 4096  # norms do no matmul
    attention = 12 * 32 * 128 * 1024 * tokens
    assert got["flops_layer"] == pytest.approx(6 * matmul * tokens + attention, rel=1e-6)
    assert got["flops_head"] == 6 * 128256 * 4096 * tokens


def test_a_lora_layer_trains_only_its_adapters_and_costs_4n_plus_6n_lora(need_torch: None) -> None:
    got = count(request("llama-3.1-8b", "lora", lora_rank=16, lora_targets="all-linear"))
    # r·(d_in + d_out) for q, k, v, o, gate, up, down (Hu et al. 2021)
    adapters = 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)
    assert got["trainable_layer"] == adapters == 1_310_720
    assert got["params_layer"] == LLAMA_LAYER + adapters
    tokens, matmul = 1024, LLAMA_LAYER - 2 * 4096
    expected = 4 * matmul * tokens + 6 * adapters * tokens + 12 * 32 * 128 * 1024 * tokens
    assert got["flops_layer"] == pytest.approx(expected, rel=1e-6)
    assert got["trainable_head"] == 0 and got["flops_head"] == 4 * 128256 * 4096 * tokens


def test_a_mixtral_layer_holds_all_eight_experts_of_the_published_config(need_torch: None) -> None:
    assert 32 * MIXTRAL_LAYER + 2 * 32000 * 4096 + 4096 == MIXTRAL_TOTAL
    got = count(request("mixtral-8x7b", "full"))
    assert got["params_layer"] == MIXTRAL_LAYER


def test_the_spec_carries_the_plans_step_for_the_comparison() -> None:
    spec = step_spec(request("llama-3.1-8b", "lora", micro_batch_size=2))
    assert (
        spec.micro_batch == 2
        and spec.seq_len == 1024
        and spec.lora_targets == ["down", "gate", "k", "o", "q", "up", "v"]
    )
    planned = spec.planned
    assert planned is not None and planned.layers == 32 and planned.gpu == "H100-SXM"
    # the default global batch of 262,144 tokens over micro-batches of 2 × 1024 on one GPU
    assert planned.accumulation == 128
    assert planned.trainable_per_gpu == 32 * 1_310_720


def test_an_unplannable_request_is_one_sentence() -> None:
    bad = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": "1M", "seq_len": 1_000_000},
            "hardware": {"gpu": "H100-SXM"},
        }
    )
    with pytest.raises(
        ValueError, match=r"^data.seq_len 1000000 is longer than llama-3.1-8b's context"
    ) as info:
        step_spec(bad)
    assert "\n" not in str(info.value)


# -- the probe on this machine, as a user runs it
# -------------------------------------------------------------


def write_plan(tmp_path: Path, training: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "request.json"
    path.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "200M", "seq_len": 2048},
                "training": {"method": "lora", "micro_batch_size": 1, **(training or {})},
                "hardware": {"gpu": "H100-SXM"},
            }
        )
    )
    return path


def test_probe_local_step_prints_the_layer_time_and_that_a_cpu_measures_no_memory(
    need_torch: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(
        [
            "probe",
            "--local",
            "--suite",
            "step",
            "--plan",
            str(write_plan(tmp_path)),
            "--python",
            sys.executable,
            "--db",
            str(tmp_path / "p.db"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "step ok" in out
    assert "step: one layer of llama-3.1-8b on " in out and "CPU, " in out and "shapes ÷ 32" in out
    assert (
        "hidden 128, 1 heads (1 KV) x 128, intermediate 448, micro-batch 1 x 64 tokens (float32)"
        in out
    )
    assert "  memory   CPU: memory not measured" in out
    layer = next(line for line in out.splitlines() if line.startswith("  layer    "))
    assert float(layer.split()[1]) > 0 and "forward + backward (median of " in layer
    assert "not applied to the plan: measured at shapes divided by 32 on the CPU" in out
    assert err == ""


def test_the_step_suite_without_a_plan_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["probe", "--local", "--suite", "step", "--db", str(tmp_path / "p.db")])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        err
        == "tuneplan: --suite step needs --plan REQUEST.json: the layer it times is the plan's\n"
    )


def test_a_plan_joins_the_step_to_the_full_suite_and_is_refused_with_a_suite_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.probe_step import options_step

    values: dict[str, Any] = {"suite": "full"}
    options_step(values, str(write_plan(tmp_path)), None)
    assert values["suite"] == [
        "inventory",
        "health",
        "compute",
        "collectives",
        "storage",
        "distributed",
        "burn",
        "step",
    ]
    assert values["step"].planned.model == "llama-3.1-8b"
    code = cli_main(
        [
            "probe",
            "--local",
            "--suite",
            "quick",
            "--plan",
            str(write_plan(tmp_path)),
            "--db",
            str(tmp_path / "p.db"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "tuneplan: --plan is for the step probe: add it to --suite (e.g. --suite step, or full)\n"
    )


def test_a_layer_too_big_for_the_cpu_is_said_in_one_sentence_never_shrunk(
    need_torch: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write_plan(tmp_path, {"micro_batch_size": 64})
    code = cli_main(
        [
            "probe",
            "--local",
            "--suite",
            "step",
            "--plan",
            str(plan),
            "--step-scale",
            "1",
            "--python",
            sys.executable,
            "--db",
            str(tmp_path / "p.db"),
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (outcome,) = doc["outcomes"]
    assert outcome["status"] == "failed"
    assert outcome["error"].startswith(
        "one layer of hidden 4096, 32 heads (8 KV) x 128, intermediate 14336, "
        "micro-batch 64 x 2048 tokens needs about "
    )
    assert outcome["error"].endswith(" GB allowed here") and "\n" not in outcome["error"]
    assert doc["evidence"].get("step") is None


# -- the measured step applied to a plan
# ----------------------------------------------------------------------

# A small Llama-shaped model, measured at its own shapes on this CPU (scale 1): hidden 256, 4
# layers, 4 heads of 64 with 2 KV heads, intermediate 688, vocabulary 2048. By hand: q and o 256·256
# each, k and v 256·128 each, the gated MLP 3·256·688, two norms of 256: 725,504 a layer; with the
# untied embeddings and the final norm 4 · 725,504 + 2 · 2048 · 256 + 256 = 3,950,848 trainable in a
# full fine-tune. The default global batch is 2^round(log2(262,144 ÷ 128)) = 2048 sequences: 1024
# micro-batches of 2 per step on one GPU.
TINY = {
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 688,
    "vocab_size": 2048,
    "model_type": "llama",
    "_name_or_path": "tiny-llama",
}
TINY_LAYER, TINY_TRAINABLE, TINY_MICRO_BATCHES = 725_504, 3_950_848, 1024


def test_apply_to_plan_makes_the_measured_step_the_plans_and_says_so(
    need_torch: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "tiny.json"
    plan.write_text(
        json.dumps(
            {
                "model": TINY,
                "data": {"tokens": "2M", "seq_len": 128},
                "training": {
                    "method": "full",
                    "micro_batch_size": 2,
                    "gradient_checkpointing": False,
                },
                "hardware": {"gpu": "H100-SXM"},
            }
        )
    )
    run = tmp_path / "run.json"
    code = cli_main(
        [
            "probe",
            "--local",
            "--suite",
            "step",
            "--plan",
            str(plan),
            "--step-scale",
            "1",
            "--json",
            "--python",
            sys.executable,
            "--db",
            str(tmp_path / "p.db"),
        ]
    )
    run.write_text(capsys.readouterr().out)
    assert code == 0
    step = json.loads(run.read_text())["evidence"]["step"]
    assert step["scale"] == 1 and step["params_layer"] == step["trainable_layer"] == TINY_LAYER

    assert cli_main(["plan", str(plan), "--probe-run", str(run), "--json"]) == 0
    compute = json.loads(capsys.readouterr().out)["compute"]
    expected = (
        step["layer"]["median_s"] * 4 + step["head"]["median_s"]
    ) * TINY_MICRO_BATCHES + step["optimizer"]["median_s"] / TINY_LAYER * TINY_TRAINABLE
    assert compute["step_time_s"] == pytest.approx(expected, rel=1e-6)
    assert compute["step_source"].startswith(
        f"measured on {step['host']} (CPU, {step['date'][:10]})"
    )
    assert (
        compute["planned_step_time_s"] > 0
        and compute["planned_step_time_s"] != compute["step_time_s"]
    )
    # The calibration band describes the step model against published runs, not a measurement: none
    # is drawn.
    assert compute["tokens_per_second_range"] is None

    assert cli_main(["plan", str(plan), "--probe-run", str(run)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert (
        first.startswith(f"Applied  Step measured on {step['host']} (CPU, ")
        and "; planned " in first
    )
    assert "; timed on a CPU, not a GPU)." in first
    line = next(x for x in out.splitlines() if x.startswith("Step     "))
    assert line.startswith(f"Step     measured on {step['host']} (CPU, ")
    shown = re.search(r"\): ([\d,.]+) s; planned ([\d,.]+) s \(", line)
    assert shown is not None, line
    assert float(shown[1].replace(",", "")) == pytest.approx(compute["step_time_s"], rel=0.01)
    assert float(shown[2].replace(",", "")) == pytest.approx(
        compute["planned_step_time_s"], rel=0.01
    )


def test_a_measured_step_no_longer_matching_the_plan_is_said_and_the_plan_keeps_its_own(
    tmp_path: Path,
) -> None:
    from core.planner.plan import plan

    measured = {
        "layer_s": 0.5,
        "head_s": 0.1,
        "micro_batch": 4,
        "seq_len": 128,
        "method": "full",
        "source": "box (NVIDIA H100 80GB HBM3, 2026-12-01)",
    }
    req = PlanRequest.model_validate(
        {
            "model": TINY,
            "data": {"tokens": "2M", "seq_len": 128},
            "training": {"method": "full", "micro_batch_size": 2},
            "hardware": {"gpu": "H100-SXM", "measured_step": measured},
        }
    )
    result = plan(req)
    assert result.compute.step_source == "planned" and result.compute.planned_step_time_s is None
    assert (
        "hardware.measured_step was timed at micro-batch 4 × 128 tokens (full); this plan runs 2 "
        "× 128 (full), so its step time is planned, not measured"
    ) in result.warnings


def test_the_plans_pdf_content_puts_planned_and_measured_side_by_side() -> None:
    from core.planner.analysis import analyse
    from core.planner.report import build_report

    # one layer of 40 ms, an output layer of 30 ms: (0.040 · 4 + 0.030) · 1024 micro-batches =
    # 194.56 s before the optimizer, whatever the planner would have said
    measured = {
        "layer_s": 0.040,
        "head_s": 0.030,
        "micro_batch": 2,
        "seq_len": 128,
        "method": "full",
        "source": "box (NVIDIA H100 80GB HBM3, 2026-12-01)",
    }
    req = PlanRequest.model_validate(
        {
            "model": TINY,
            "data": {"tokens": "2M", "seq_len": 128},
            "training": {"method": "full", "micro_batch_size": 2, "gradient_checkpointing": False},
            "hardware": {"gpu": "H100-SXM", "measured_step": measured},
        }
    )
    report = build_report(analyse(req))
    time = next(s for s in report.sections if s.title == "Time")
    texts = [b.text for b in time.blocks if b.kind == "paragraph"]
    line = next(t for t in texts if t.startswith("Planned vs measured: "))
    assert line.startswith(
        "Planned vs measured: the step was measured on box (NVIDIA H100 80GB HBM3, 2026-12-01): "
        "195 s; planned "
    )
