"""A plan request from `tuneplan plan`'s quick flags or from a request file, each fault in one
sentence.

`tuneplan plan`, `tuneplan report`, `tuneplan launch` and the step probe (``cli.probe_step``) all
read a request the same way. It lives apart from the plan command so that the commands share it
without importing each other (the plan command applies a probe run through ``cli.probe_step``, which
reads a request itself).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cli.common import CliError, read_json
from core.units import parse_count
from core.validation import validation_message

_NUMBER_LIKE = re.compile(r"[0-9][0-9.,_eE+-]*\s*[A-Za-z]?")


# The quick flags, each with the request field it sets (`--gpus` and `--nodes` go with `--gpu`, in
# hardware).
QUICK_FIELDS = {
    "model": "model",
    "tokens": "data.tokens",
    "epochs": "data.epochs",
    "seq_len": "data.seq_len",
    "method": "training.method",
    "lora_rank": "training.lora_rank",
    "gpu": "hardware.gpu",
    "gpus": "hardware.gpus_per_node",
    "nodes": "hardware.nodes",
    "provider": "pricing.provider",
    "mode": "pricing.mode",
}


def flag(dest: str) -> str:
    """'seq_len' -> '--seq-len', as the user typed it."""
    return "--" + dest.replace("_", "-")


def _refuse_ignored(args: argparse.Namespace) -> None:
    """A flag the request would not use is refused in one sentence, never dropped: quick flags
    beside REQUEST.json, --gpus or --nodes without --gpu (the search tries its own counts), --db
    without --probe-run, and a flag given with nothing after '='."""
    given = [dest for dest in QUICK_FIELDS if getattr(args, dest, None) is not None]
    if getattr(args, "request", None) and given:
        raise CliError(
            f"{flag(given[0])} applies only without REQUEST.json: set {QUICK_FIELDS[given[0]]} in "
            "the "
            "file instead, or leave the file out"
        )
    for dest in given:
        if not str(getattr(args, dest)).strip():
            raise CliError(
                f"{flag(dest)} is empty: give a value or leave the flag out for its default"
            )
    for dest in ("gpus", "nodes"):
        if dest in given and not args.gpu:
            raise CliError(
                f"{flag(dest)} needs --gpu: name the GPU (e.g. --gpu H100-SXM {flag(dest)} "
                f"{getattr(args, dest)}), or leave {flag(dest)} out and the search tries 1 to 8 "
                "GPUs per "
                "node on 1 to 64 nodes"
            )
    if getattr(args, "db", None) and not getattr(args, "probe_run", None):
        raise CliError(
            "--db names the probe history for --probe-run: give --probe-run RUN too, or leave "
            "--db out"
        )


def _quick_request(args: argparse.Namespace) -> dict[str, Any]:
    if not args.model:
        raise CliError("plan needs REQUEST.json or --model PRESET (with --tokens)")
    if args.tokens is None:
        raise CliError("--tokens is required with --model (e.g. --tokens 2e8 or 200M)")
    model: dict[str, Any]
    if Path(args.model).suffix == ".json":
        model = {"hf_config": args.model}
    else:
        try:
            model = (
                {"params": parse_count(args.model)}
                if args.model[:1].isdigit()
                else {"preset": args.model}
            )
        # '1,5B' is a count mistyped (its sentence says so), '01-ai/Yi-34B' a preset
        except ValueError:
            model = (
                {"params": args.model}
                if _NUMBER_LIKE.fullmatch(args.model)
                else {"preset": args.model}
            )
    req: dict[str, Any] = {"model": model}
    for dest, path in QUICK_FIELDS.items():
        value = getattr(args, dest)
        if dest != "model" and value is not None:
            section, _, field = path.partition(".")
            req.setdefault(section, {})[field] = value
    req.setdefault("training", {}).setdefault("method", "lora")
    return req


def load_request(path: str) -> dict[str, Any]:
    from core.planner import request_of  # a saved plan's JSON plans its request

    data = request_of(read_json(path))
    if not isinstance(data, dict):
        raise CliError(f"{path} must hold a JSON object with model and data")
    return data


def build_request(args: argparse.Namespace) -> Any:
    from core.planner import PlanRequest

    _refuse_ignored(args)
    raw = load_request(args.request) if args.request else _quick_request(args)
    try:
        return PlanRequest.model_validate(raw)
    except ValidationError as exc:
        message = validation_message(exc)
        if not args.request:  # name the flag the user typed, beside the field it sets
            for dest, path in QUICK_FIELDS.items():
                if message.startswith(path + ":") and getattr(args, dest, None) is not None:
                    message = f"{flag(dest)} ({path}):{message[len(path) + 1 :]}"
                    break
        raise CliError(message) from exc
