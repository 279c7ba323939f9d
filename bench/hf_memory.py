"""Measure Hugging Face transformers + PEFT fine-tuning peak memory on a real GPU.

    python bench/hf_memory.py [OUT_DIR] [--cases ID ...] [--iters N] [--accumulate N]

Each case takes a catalog preset's config.json (resources/catalog/models.json) with random weights
and trains it the way transformers' Trainer does with ``bf16=True``: weights loaded in bf16, a bf16
autocast around the forward, the loss from ``model(input_ids, labels=...)``, PEFT LoRA adapters,
SDPA attention, no gradient checkpointing. QLoRA loads the model through ``BitsAndBytesConfig``
(NF4, bf16 compute, no double quantization) from a checkpoint written to /dev/shm, and steps
bitsandbytes' paged 32-bit AdamW; LoRA steps torch's AdamW. ``prepare_model_for_kbit_training`` is
not called (it would upcast norms and the head to fp32). The peak is
``torch.cuda.max_memory_allocated()`` over the training steps, reset after loading.

Each case runs in its own process; results append to OUT_DIR/hf_memory.jsonl. OUT_DIR defaults to
$OUT, else ./hf_memory_out. Needs CUDA, torch, transformers, peft and bitsandbytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.isolated import package_version, record, run_each  # noqa: E402

MODELS = ROOT / "resources/catalog/models.json"
CASES: dict[str, dict[str, Any]] = {
    "hf-llama-2-7b-lora-qv": {
        "preset": "llama-2-7b",
        "method": "lora",
        "targets": ["q_proj", "v_proj"],
        "micro_batch": 2,
        "seq_len": 512,
    },
    "hf-llama-3.1-8b-lora-all": {
        "preset": "llama-3.1-8b",
        "method": "lora",
        "targets": "all-linear",
        "micro_batch": 2,
        "seq_len": 1024,
    },
    "hf-llama-3.1-8b-qlora-all": {
        "preset": "llama-3.1-8b",
        "method": "qlora",
        "targets": "all-linear",
        "micro_batch": 2,
        "seq_len": 1024,
    },
}
RANK, ALPHA, DROPOUT = 16, 32, 0.05


def preset_config(preset: str) -> dict[str, Any]:
    models = json.loads(MODELS.read_text(encoding="utf-8"))["models"]
    return dict(next(m for m in models if m["id"] == preset)["config"])


def gb(n: float) -> float:
    return round(n / 1e9, 3)


def measure(case_id: str, iters: int, accumulate: int, device: str = "cuda") -> dict[str, Any]:
    """Build, adapt and train one case in this process, reading the allocator after each phase.

    ``device="cpu"`` is a dry run of the same code with tiny shapes (no memory figures): a check
    before GPU time.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

    case = CASES[case_id]
    cfg_dict = preset_config(case["preset"])
    cuda = device == "cuda"
    if not cuda:
        cfg_dict.update(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=512,
        )
    config = AutoConfig.for_model(**cfg_dict)
    config.use_cache = False
    phases: dict[str, dict[str, float]] = {}

    def mark(phase: str) -> None:
        if cuda:
            torch.cuda.synchronize()
            phases[phase] = {
                "allocated_gb": gb(torch.cuda.memory_allocated()),
                "peak_gb": gb(torch.cuda.max_memory_allocated()),
            }

    with torch.device(device):
        model = AutoModelForCausalLM.from_config(
            config, dtype=torch.bfloat16, attn_implementation="sdpa"
        )
    if case["method"] == "qlora":
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        shm = Path("/dev/shm")
        fast = shm.is_dir() and shutil.disk_usage(shm).free > 1.5 * size
        folder = Path(tempfile.mkdtemp(dir=shm if fast else None))
        try:
            model.save_pretrained(folder)
            del model
            torch.cuda.empty_cache()
            quant = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=torch.bfloat16,
                bnb_4bit_use_double_quant=False,
            )
            model = AutoModelForCausalLM.from_pretrained(
                folder,
                quantization_config=quant,
                dtype=torch.bfloat16,
                attn_implementation="sdpa",
                device_map={"": 0 if cuda else "cpu"},
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    model.config.use_cache = False
    lora = LoraConfig(
        r=RANK,
        lora_alpha=ALPHA,
        lora_dropout=DROPOUT,
        target_modules=case["targets"],
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    params = [p for p in model.parameters() if p.requires_grad]
    if case["method"] == "qlora":
        import bitsandbytes as bnb

        optimizer = bnb.optim.PagedAdamW32bit(params, lr=1e-4)
    else:
        optimizer = torch.optim.AdamW(params, lr=1e-4)
    mark("load")
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    ids = torch.randint(
        1, cfg_dict["vocab_size"], (case["micro_batch"], case["seq_len"]), device=device
    )
    model.train()
    for step in range(iters):
        for _ in range(accumulate):
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            (loss / accumulate).backward()
            del loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        mark(f"train{step + 1}")

    import peft
    import transformers

    return {
        "id": case_id,
        **case,
        "lora": {"r": RANK, "alpha": ALPHA, "dropout": DROPOUT},
        "accumulate": accumulate,
        "memory_used_gb": gb(torch.cuda.max_memory_allocated()) if cuda else None,
        "phases": phases,
        "trainable_params": trainable,
        "gpu": torch.cuda.get_device_name() if cuda else "cpu dry run",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            "bitsandbytes": package_version("bitsandbytes"),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--cases", nargs="*", choices=sorted(CASES), help="case ids (default: all)")
    parser.add_argument("--iters", type=int, default=2, help="optimizer steps")
    parser.add_argument(
        "--accumulate", type=int, default=2, help="micro-batches per optimizer step"
    )
    parser.add_argument(
        "--device", default="cuda", help="cpu: a dry run with tiny shapes, no figures"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per case")
    args = parser.parse_args()
    out = Path(args.out or os.environ.get("OUT") or "hf_memory_out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.one:
        result = measure(args.one, args.iters, args.accumulate, args.device)
        record(out / "hf_memory.jsonl", result)
        return 0
    flags = [
        str(out),
        "--iters",
        str(args.iters),
        "--accumulate",
        str(args.accumulate),
        "--device",
        args.device,
    ]
    return run_each(__file__, args.cases or sorted(CASES), flags, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
