"""Measure Hugging Face transformers + PEFT training throughput and peak memory on a real GPU.

    python bench/hf_throughput.py [OUT_DIR] [--cases ID ...] [--list] [--warmup N] [--steps N]

One configuration per process (bench/isolated.py), each a catalog preset's config.json with random
weights trained the way transformers' Trainer does with ``bf16=True``: weights in bf16, a bf16
autocast around the forward, the loss from ``model(input_ids, labels=...)``, SDPA attention. The
grid crosses

- method: LoRA (r 16 on all linear layers, torch AdamW; base weights bf16), QLoRA (NF4 through
  ``BitsAndBytesConfig``, bf16 compute, bitsandbytes' paged 32-bit AdamW) on Llama-3.1-8B, and a
  full fine-tune (torch AdamW) on Llama-3.2-1B in fp32 weights under the autocast (Trainer's
  bf16=True), which fits one GPU with room for the activations;
- gradient checkpointing off / on (``gradient_checkpointing_enable(use_reentrant=False)``);
- cross-entropy: transformers' own (logits materialised, upcast to fp32) or Liger's fused linear
  cross-entropy (``apply_liger_kernel_to_llama(fused_linear_cross_entropy=True)``, every other Liger
  kernel off, so only the loss changes); when liger-kernel is not installed those rows record why
  and measure nothing;
- ``torch.compile`` off / on (the whole model, default mode).

Each runs ``--warmup`` optimizer steps untimed (allocator, autotuning, compilation), then
``--steps`` timed steps between two ``torch.cuda.synchronize()``: tokens/s = micro-batch × seq_len ×
accumulation × steps ÷ elapsed. Peak memory is ``torch.cuda.max_memory_allocated()`` and
``max_memory_reserved()`` over the timed steps (reset after the warm-up). Results append to
OUT_DIR/hf_throughput.jsonl with the settings and the software: torch, CUDA, transformers, peft,
bitsandbytes, liger-kernel, the GPU name and the driver.

OUT_DIR defaults to $OUT, else ./hf_throughput_out. Needs CUDA, torch, transformers, peft,
bitsandbytes (QLoRA) and liger-kernel (fused rows). ``--list`` prints the configurations and needs
none of them; ``--device cpu`` runs the same code on tiny shapes as a check before GPU time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.isolated import package_version, record, run_each  # noqa: E402

MODELS = ROOT / "resources/catalog/models.json"
RANK, ALPHA, DROPOUT = 16, 32, 0.0
PRESET = {"lora": "llama-3.1-8b", "qlora": "llama-3.1-8b", "full": "llama-3.2-1b"}
MICRO_BATCH, SEQ_LEN, ACCUMULATE = 2, 2048, 2


def configurations() -> dict[str, dict[str, Any]]:
    """Every configuration of the grid, by id (method × checkpointing × cross-entropy × compile)."""
    out = {}
    for method, ckpt, fused, compiled in itertools.product(
        ("lora", "qlora", "full"), (False, True), (False, True), (False, True)
    ):
        key = (
            f"{method}-{'ckpt' if ckpt else 'nockpt'}-{'fusedce' if fused else 'ce'}-"
            f"{'compile' if compiled else 'eager'}"
        )
        out[key] = {
            "preset": PRESET[method],
            "method": method,
            "gradient_checkpointing": ckpt,
            "fused_cross_entropy": fused,
            "compile": compiled,
            "micro_batch": MICRO_BATCH,
            "seq_len": SEQ_LEN,
            "accumulate": ACCUMULATE,
        }
    return out


CASES = configurations()


def preset_config(preset: str) -> dict[str, Any]:
    models = json.loads(MODELS.read_text(encoding="utf-8"))["models"]
    return dict(next(m for m in models if m["id"] == preset)["config"])


def gb(n: float) -> float:
    return round(n / 1e9, 3)


def driver_version() -> str:
    """The NVIDIA driver, from nvidia-smi (torch does not report it)."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (
        done.stdout.strip().splitlines()[0]
        if done.returncode == 0 and done.stdout.strip()
        else "unknown"
    )


def versions() -> dict[str, str]:
    import torch

    return {
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "transformers": package_version("transformers"),
        "peft": package_version("peft"),
        "bitsandbytes": package_version("bitsandbytes"),
        "liger_kernel": package_version("liger-kernel"),
    }


def liger_missing() -> str | None:
    """Why the fused cross-entropy cannot be measured here, or None when Liger is importable."""
    try:
        from liger_kernel.transformers import apply_liger_kernel_to_llama  # noqa: F401
    except ImportError as exc:
        return f"liger-kernel is not installed ({exc}); the fused cross-entropy was not measured"
    return None


def _build(case: dict[str, Any], cfg_dict: dict[str, Any], device: str) -> Any:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

    config = AutoConfig.for_model(**cfg_dict)
    config.use_cache = False
    # Trainer with bf16=True: a full fine-tune keeps fp32 weights (the master copy) under a bf16
    # autocast; LoRA and QLoRA load the frozen base in bf16, as the PEFT recipes do.
    dtype = torch.float32 if case["method"] == "full" else torch.bfloat16
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    if case["method"] != "qlora":
        return model
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    shm = Path("/dev/shm")
    folder = Path(
        tempfile.mkdtemp(
            dir=shm if shm.is_dir() and shutil.disk_usage(shm).free > 1.5 * size else None
        )
    )
    try:
        model.save_pretrained(folder)
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
        quant = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16,
            bnb_4bit_use_double_quant=False,
        )
        return AutoModelForCausalLM.from_pretrained(
            folder,
            quantization_config=quant,
            dtype=torch.bfloat16,
            attn_implementation="sdpa",
            device_map={"": 0 if device == "cuda" else "cpu"},
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(case_id: str, warmup: int, steps: int, device: str = "cuda") -> dict[str, Any]:
    """Build, adapt, warm up and time one configuration in this process.

    ``device="cpu"`` is a dry run of the same code with tiny shapes (no figures worth reading).
    """
    case = dict(CASES[case_id])
    result: dict[str, Any] = {"id": case_id, **case}
    if case["fused_cross_entropy"]:
        why = liger_missing()
        if why:
            return {**result, "skipped": why}
        from liger_kernel.transformers import apply_liger_kernel_to_llama

        # Patches the Llama classes before the model exists; only the loss kernel, so the row
        # isolates it.
        apply_liger_kernel_to_llama(
            rope=False,
            cross_entropy=False,
            fused_linear_cross_entropy=True,
            rms_norm=False,
            swiglu=False,
        )
    import torch

    cuda = device == "cuda"
    cfg_dict = preset_config(case["preset"])
    if not cuda:
        cfg_dict.update(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=512,
        )
        case.update(seq_len=32, micro_batch=1)
    model = _build(case, cfg_dict, device)
    model.config.use_cache = False
    if case["gradient_checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if case["method"] == "full":
        params = list(model.parameters())
        optimizer: Any = torch.optim.AdamW(params, lr=1e-5)
    else:
        from peft import LoraConfig, get_peft_model

        if case["gradient_checkpointing"]:
            # frozen embeddings: give checkpointed blocks a grad-requiring input
            model.enable_input_require_grads()
        model = get_peft_model(
            model,
            LoraConfig(
                r=RANK,
                lora_alpha=ALPHA,
                lora_dropout=DROPOUT,
                target_modules="all-linear",
                task_type="CAUSAL_LM",
            ),
        )
        params = [p for p in model.parameters() if p.requires_grad]
        if case["method"] == "qlora":
            import bitsandbytes as bnb

            optimizer = bnb.optim.PagedAdamW32bit(params, lr=1e-4)
        else:
            optimizer = torch.optim.AdamW(params, lr=1e-4)
    trainable = sum(p.numel() for p in params)
    step_model = torch.compile(model) if case["compile"] else model
    ids = torch.randint(
        1, cfg_dict["vocab_size"], (case["micro_batch"], case["seq_len"]), device=device
    )
    model.train()

    def one_step() -> None:
        for _ in range(case["accumulate"]):
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = step_model(input_ids=ids, labels=ids).loss
            (loss / case["accumulate"]).backward()
            del loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for _ in range(warmup):
        one_step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync()
    elapsed = time.perf_counter() - start
    tokens = case["micro_batch"] * case["seq_len"] * case["accumulate"] * steps
    return {
        **result,
        "lora": None
        if case["method"] == "full"
        else {"r": RANK, "alpha": ALPHA, "dropout": DROPOUT, "targets": "all-linear"},
        "warmup_steps": warmup,
        "timed_steps": steps,
        "tokens_timed": tokens,
        "elapsed_s": round(elapsed, 4),
        "step_s": round(elapsed / steps, 4),
        "tokens_per_s": round(tokens / elapsed, 1),
        "peak_allocated_gb": gb(torch.cuda.max_memory_allocated()) if cuda else None,
        "peak_reserved_gb": gb(torch.cuda.max_memory_reserved()) if cuda else None,
        "trainable_params": trainable,
        "gpu": torch.cuda.get_device_name() if cuda else "cpu dry run",
        "driver": driver_version() if cuda else None,
        "versions": versions(),
    }


def listing() -> str:
    """The configurations, one a line (no torch needed)."""
    lines = [f"{'id':34} {'model':14} method  ckpt   loss     compile  micro×seq×accum"]
    for key, c in CASES.items():
        lines.append(
            f"{key:34} {c['preset']:14} {c['method']:7} "
            f"{'on' if c['gradient_checkpointing'] else 'off':6} "
            f"{'fused' if c['fused_cross_entropy'] else 'standard':8} "
            f"{'on' if c['compile'] else 'off':8} "
            f"{c['micro_batch']}×{c['seq_len']}×{c['accumulate']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument(
        "--cases",
        nargs="*",
        choices=sorted(CASES),
        metavar="ID",
        help="configuration ids, see --list (default: all)",
    )
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    parser.add_argument("--warmup", type=int, default=3, help="untimed optimizer steps first")
    parser.add_argument("--steps", type=int, default=5, help="timed optimizer steps")
    parser.add_argument(
        "--device", default="cuda", help="cpu: a dry run with tiny shapes, no figures"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per configuration")
    args = parser.parse_args(argv)
    if args.list:
        print(listing())
        return 0
    if args.warmup < 0 or args.steps < 1:
        parser.error("--warmup must be at least 0 and --steps at least 1")
    out = Path(args.out or os.environ.get("OUT") or "hf_throughput_out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.one:
        try:
            result = measure(args.one, args.warmup, args.steps, args.device)
        except Exception as exc:  # the failure is the result: recorded, and the next case runs
            record(
                out / "hf_throughput.jsonl",
                {"id": args.one, **CASES[args.one], "error": repr(exc)[:2000]},
            )
            return 1
        record(out / "hf_throughput.jsonl", result)
        return 0
    flags = [
        str(out),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--device",
        args.device,
    ]
    return run_each(__file__, args.cases or sorted(CASES), flags, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
