"""`tuneplan launch REQUEST.json --format FORMAT [-o DIR]`: write the launch files that reproduce a
plan.

The request is planned exactly as `tuneplan plan` plans it, and the files are written from that
result (``core.launch``), so what runs is what was planned. A setting the format cannot express is a
one-sentence error (exit 1) and nothing is written; an unknown format is a usage error (exit 2,
argparse's). With ``--format all`` the formats that can express the plan are written and each
refusal is printed (exit 1). ``--json`` prints what was written and refused as one JSON object (and
nothing else on stdout), for scripts that hand the files to the next step.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cli.common import EXIT_ERROR, CliError, add_command
from cli.plan_request import load_request
from core.validation import validation_message

# core.launch.FORMATS' names, spelt here so that building the parser imports no planner (every
# `tuneplan` call builds it); tests/cli/test_cli_launch.py checks that the two agree.
FORMAT_NAMES = (
    "deepspeed",
    "accelerate",
    "torchrun",
    "slurm",
    "skypilot",
    "axolotl",
    "torchtune",
    "kubernetes",
)


def register(subparsers: Any) -> None:
    """Add the `launch` subcommand (called by cli.main)."""
    p = add_command(
        subparsers,
        "launch",
        help="write the launch files (DeepSpeed, accelerate, Slurm, ...) of a plan",
        examples=(
            "tuneplan launch request.json --format all -o run/",
            "tuneplan launch request.json --format kubernetes --name llama-qlora -o k8s/",
            "tuneplan launch - --format deepspeed --json < request.json",
        ),
    )
    p.add_argument("request", help="plan request JSON file (- for stdin)")
    p.add_argument(
        "--format", required=True, choices=[*FORMAT_NAMES, "all"], help="which files to write"
    )
    p.add_argument("-o", "--output", default=".", help="folder to write them into (default: here)")
    p.add_argument(
        "--name", help="the plan's name in the files' headers (default: the request file's name)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print {written: {format: [paths]}, refused: {format: sentence}} as JSON",
    )
    p.set_defaults(func=cmd_launch)


def cmd_launch(args: argparse.Namespace) -> int:
    from core.launch import LaunchError, write_launch_files
    from core.planner import PlanError, PlanRequest, make_plan

    try:
        request = PlanRequest.model_validate(load_request(args.request))
    except ValidationError as exc:
        raise CliError(validation_message(exc)) from exc
    try:
        result = make_plan(request)
    except PlanError as exc:
        raise CliError(str(exc)) from exc
    name = args.name or (Path(args.request).stem if args.request != "-" else None)
    try:
        written = write_launch_files(
            request, result, args.format, args.output, name=name, partial=args.format == "all"
        )
    except LaunchError as exc:
        raise CliError(f"{args.format}: {exc}") from exc
    if args.json:
        print(
            json.dumps(
                {
                    "written": {
                        f: [str(p) for p in paths] for f, paths in written.by_format.items()
                    },
                    "refused": written.refused,
                },
                indent=2,
            )
        )
    else:
        for path in written.paths:
            print(path)
    for fmt, why in written.refused.items():
        print(f"tuneplan: {fmt}: {why}", file=sys.stderr)
    return EXIT_ERROR if written.refused else 0
