"""Measure litgpt's fine-tuning peak memory on a real GPU, the way its config-hub table was made.

    python bench/litgpt_memory.py [OUT_DIR] [--cases ID ...] [--iters N] [--accumulate N] [--trace]
                                  [--optimizer-in-backward]

For each ``litgpt-*`` case of tests/fixtures/planner/calibration_cases.json it builds the model with
litgpt's own GPT and LoRA classes under Lightning Fabric (bf16-true, or bitsandbytes NF4 for QLoRA,
as litgpt/finetune/lora.py does), loads a random bf16 checkpoint through the same
``load_state_dict`` path, runs the validation sanity pass and a few optimizer steps, each over
``--accumulate`` full-length random micro-batches (micro_batch × seq_len, LM head chunked by 128,
chunked cross-entropy, the optimizer litgpt picks), and records
``torch.cuda.max_memory_allocated()`` after each phase: what litgpt prints as "Memory used". With
``--trace`` it also records the allocator's history and lists the largest live allocations at the
peak, by the source line that made them.

Each case runs in its own process. Results append to OUT_DIR/litgpt_memory.jsonl as they finish;
OUT_DIR defaults to $OUT, else ./litgpt_memory_out. Needs CUDA, torch, lightning, litgpt and
bitsandbytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.isolated import package_version, record, run_each  # noqa: E402

CASES_FILE = ROOT / "tests/fixtures/planner/calibration_cases.json"
LORA_FLAGS = {
    "q": "lora_query",
    "k": "lora_key",
    "v": "lora_value",
    "proj": "lora_projection",
    "mlp": "lora_mlp",
    "head": "lora_head",
}
SOURCES = ("litgpt", "bitsandbytes", "lightning", "litgpt_memory")


def litgpt_cases() -> dict[str, dict[str, Any]]:
    cases = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return {c["id"]: c for c in cases if c["id"].startswith("litgpt-")}


def as_full_fine_tune(case: dict[str, Any]) -> dict[str, Any]:
    """The same model, batch and sequence as a full fine-tune (litgpt/finetune/full.py); no
    published figure."""
    settings = {
        k: v for k, v in case["other_settings"].items() if k not in ("lora", "quantization")
    }
    return dict(
        case,
        id=case["id"].rsplit("-", 1)[0] + "-full",
        method="full",
        value=None,
        other_settings=settings,
    )


def gb(n: float) -> float:
    return round(n / 1e9, 3)


def peak_breakdown(snapshot: dict[str, Any], top: int = 14) -> dict[str, Any]:
    """Replay the allocator trace: the allocated peak and what was live then, grouped by the line
    that allocated it."""
    events = snapshot["device_traces"][0] if snapshot["device_traces"] else []
    current = best = 0
    best_at = -1
    for i, event in enumerate(events):
        if event["action"] == "alloc":
            current += event["size"]
        elif event["action"] == "free_requested":
            current -= event["size"]
        if current > best:
            best, best_at = current, i
    live: dict[int, dict[str, Any]] = {}
    for event in events[: best_at + 1]:
        if event["action"] == "alloc":
            live[event["addr"]] = event
        elif event["action"] == "free_requested":
            live.pop(event["addr"], None)
    groups: Counter[str] = Counter()
    for event in live.values():
        groups[_origin(event.get("frames", []))] += event["size"]
    return {
        "traced_peak_gb": gb(best),
        "live_at_peak_gb": {k: gb(v) for k, v in groups.most_common(top)},
    }


def _origin(frames: list[dict[str, Any]]) -> str:
    """The innermost frame in litgpt, bitsandbytes, Lightning or this script: who asked for the
    memory."""
    for frame in frames:
        name = frame.get("filename", "")
        if any(s in name for s in SOURCES):
            short = "/".join(Path(name).parts[-2:])
            return f"{short}:{frame.get('line')} {frame.get('name')}"
    return "other"


def measure(
    case: dict[str, Any], iters: int, trace: bool, accumulate: int = 1, in_backward: bool = False
) -> dict[str, Any]:
    """One case, in this process: build, load, validate and train like litgpt, reading the allocator
    between phases.

    Each optimizer step runs `accumulate` micro-batches, so gradients persist while the next
    micro-batch's activations are alive, as in litgpt's configs (global batch > micro-batch).
    `in_backward` steps every weight in its post-accumulate-grad hook and frees its gradient at once
    (torchtune's OptimizerInBackward).
    """
    import lightning as L
    import torch
    from lightning.fabric.plugins import BitsandbytesPrecision
    from litgpt import lora as litgpt_lora
    from litgpt.config import Config
    from litgpt.model import GPT as BaseGPT
    from litgpt.utils import chunked_cross_entropy

    if trace:
        torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
    name = case["model"]["name"].split("/")[-1]
    lora = case["other_settings"].get("lora")
    method, micro_batch, seq_len = case["method"], case["micro_batch"], case["seq_len"]
    flags = {flag: key in (lora or {}).get("targets", []) for key, flag in LORA_FLAGS.items()}
    if lora:
        config = litgpt_lora.Config.from_name(
            name, lora_r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"], **flags
        )
    else:
        config = Config.from_name(name)
    if method == "QLoRA":
        fabric = L.Fabric(
            devices=1, precision=None, plugins=BitsandbytesPrecision("nf4", torch.bfloat16)
        )
    else:
        fabric = L.Fabric(devices=1, precision="bf16-true")
    fabric.launch()
    phases: dict[str, dict[str, float]] = {}

    def mark(phase: str) -> None:
        torch.cuda.synchronize()
        phases[phase] = {
            "allocated_gb": gb(torch.cuda.memory_allocated()),
            "peak_gb": gb(torch.cuda.max_memory_allocated()),
        }

    model_cls = litgpt_lora.GPT if lora else BaseGPT
    with fabric.init_module(empty_init=False):
        model = model_cls(config)
    if lora:
        litgpt_lora.mark_only_lora_as_trainable(model)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model = fabric.setup_module(model)
    if in_backward:
        per_weight = {p: torch.optim.AdamW([p]) for p in model.parameters() if p.requires_grad}

        def step_now(p: Any) -> None:
            per_weight[p].step()
            per_weight[p].zero_grad(set_to_none=True)

        for p in per_weight:
            p.register_post_accumulate_grad_hook(step_now)
    elif method == "QLoRA":
        import bitsandbytes as bnb

        optimizer = fabric.setup_optimizers(bnb.optim.PagedAdamW(model.parameters()))
    else:
        optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters()))
    mark("init")

    with torch.device("meta"):
        shapes = {k: v.shape for k, v in BaseGPT(Config.from_name(name)).state_dict().items()}
    pool = torch.empty(max(s.numel() for s in shapes.values()), dtype=torch.bfloat16).uniform_(
        -0.02, 0.02
    )
    model.load_state_dict({k: pool[: s.numel()].view(s) for k, s in shapes.items()}, strict=False)
    del pool
    mark("load")

    model.max_seq_length = seq_len
    vocab = config.padded_vocab_size
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, min(vocab, config.vocab_size), (micro_batch, seq_len), generator=gen).to(
        fabric.device
    )

    model.eval()
    with torch.no_grad():
        logits = model(ids)
        chunked_cross_entropy(logits[..., :-1, :], ids[..., 1:], chunk_size=0)
    del logits
    model.train()
    mark("validate")

    for step in range(iters):
        for _ in range(accumulate):
            before = torch.cuda.memory_allocated()
            if lora:
                logits = model(ids, lm_head_chunk_size=128)
                logits[-1] = logits[-1][..., :-1, :]
                loss = chunked_cross_entropy(logits, ids[..., 1:])
            else:  # litgpt/finetune/full.py
                logits = model(ids)
                loss = chunked_cross_entropy(logits[..., :-1, :], ids[..., 1:])
            torch.cuda.synchronize()
            forward_held = torch.cuda.memory_allocated() - before
            fabric.backward(loss / accumulate)
            del logits, loss
        if not in_backward:
            optimizer.step()
            optimizer.zero_grad()
        mark(f"train{step + 1}")
        phases[f"train{step + 1}"]["forward_held_gb"] = gb(forward_held)

    result: dict[str, Any] = {
        "id": case["id"] + ("+optimizer_in_backward" if in_backward else ""),
        "published_gb": case["value"],
        "accumulate": accumulate,
        "memory_used_gb": gb(torch.cuda.max_memory_allocated()),
        "phases": phases,
        "trainable_params": trainable,
        "gpu": torch.cuda.get_device_name(),
        "versions": {
            "torch": torch.__version__,
            "lightning": L.__version__,
            "litgpt": package_version("litgpt"),
            "bitsandbytes": package_version("bitsandbytes"),
        },
    }
    if trace:
        result.update(peak_breakdown(torch.cuda.memory._snapshot()))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--cases", nargs="*", help="case ids (default: every litgpt-* case)")
    parser.add_argument("--iters", type=int, default=3, help="optimizer steps")
    parser.add_argument(
        "--accumulate", type=int, default=2, help="micro-batches per optimizer step"
    )
    parser.add_argument(
        "--as-full", action="store_true", help="run each case as a full fine-tune instead"
    )
    parser.add_argument(
        "--optimizer-in-backward",
        action="store_true",
        help="step each weight during backward (needs --accumulate 1)",
    )
    parser.add_argument(
        "--trace", action="store_true", help="record allocator history and list the peak's owners"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per case")
    args = parser.parse_args()
    if args.optimizer_in_backward and args.accumulate != 1:
        parser.error(
            "--optimizer-in-backward steps each weight as its gradient arrives: use --accumulate 1"
        )
    out = Path(args.out or os.environ.get("OUT") or "litgpt_memory_out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    cases = litgpt_cases()
    unknown = sorted(set(args.cases or []) - set(cases))
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; the cases are {', '.join(sorted(cases))}")
    if args.as_full:
        cases = {k: as_full_fine_tune(c) for k, c in cases.items()}
    if args.one:
        result = measure(
            cases[args.one], args.iters, args.trace, args.accumulate, args.optimizer_in_backward
        )
        record(out / "litgpt_memory.jsonl", result)
        return 0
    flags = [str(out), "--iters", str(args.iters), "--accumulate", str(args.accumulate)]
    flags += ["--trace"] * args.trace + ["--optimizer-in-backward"] * args.optimizer_in_backward
    flags += ["--as-full"] * args.as_full
    return run_each(__file__, args.cases or sorted(cases), flags, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
