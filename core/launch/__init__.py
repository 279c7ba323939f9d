"""Launch files from a plan: the configs and scripts the user's training stack reads, written from
the plan.

A plan and the run it describes drift apart where a person retypes the plan into a config (a ZeRO
stage, a micro-batch, an offload). Each format module turns one planned configuration
(``core.launch.plan_view``) into its files, and refuses in one sentence (:class:`LaunchError`) any
planned setting it cannot express rather than dropping it. ``write_launch_files`` is the one entry
point for the CLI and the window.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from core.launch import (
    accelerate,
    axolotl,
    deepspeed,
    kubernetes,
    skypilot,
    slurm,
    torchrun,
    torchtune,
)
from core.launch.model_ref import hf_model
from core.launch.plan_view import LaunchError, LaunchPlan
from core.output_file import OutputError, write_file
from core.planner.request import PlanRequest
from core.planner.result import PlanResult

__all__ = ["FORMATS", "LaunchError", "LaunchPlan", "Written", "render", "write_launch_files"]

Renderer = Callable[[LaunchPlan], dict[str, str]]

FORMATS: dict[str, str] = {
    "deepspeed": "DeepSpeed config JSON (ZeRO stage, offload, batch arithmetic)",
    "accelerate": "accelerate launch config YAML (FSDP, DeepSpeed or DDP)",
    "torchrun": "torchrun command line for each node",
    "slurm": "sbatch script running torchrun on every node",
    "skypilot": "SkyPilot task YAML (accelerators, nodes, spot recovery, checkpoint bucket)",
    "axolotl": "axolotl config YAML",
    "torchtune": "torchtune recipe config YAML",
    "kubernetes": "Kubernetes manifests (TrainJob and JobSet, or PyTorchJob; checkpoint claim, "
    "settings, queue)",
}

_RENDERERS: dict[str, Renderer] = {
    "deepspeed": deepspeed.files,
    "accelerate": accelerate.files,
    "torchrun": torchrun.files,
    "slurm": slurm.files,
    "skypilot": skypilot.files,
    "axolotl": lambda p: axolotl.files(p, hf_model(p, "axolotl")),
    "torchtune": lambda p: torchtune.files(p, hf_model(p, "torchtune")),
    "kubernetes": kubernetes.files,
}


def _plan(
    request: PlanRequest, result: PlanResult, name: str | None, today: dt.date | None
) -> LaunchPlan:
    # the result carries the effective request (framework defaults and searched hardware applied)
    del request
    return LaunchPlan(result=result, name=name or result.model_name, date=today or dt.date.today())


def render(
    result: PlanResult, fmt: str, name: str | None = None, today: dt.date | None = None
) -> dict[str, str]:
    """The files of one format, name -> text, without writing anything."""
    if fmt not in _RENDERERS:
        raise LaunchError(f"{fmt} is not a launch format; use {', '.join(FORMATS)} or all")
    return _RENDERERS[fmt](_plan(result.request, result, name, today))


@dataclass(frozen=True)
class Written:
    """What `write_launch_files` wrote, and the formats that refused the plan (format -> the
    sentence).

    ``by_format`` names each format's files (a ``ds_config.json`` that axolotl and accelerate both
    refer to is listed under each of them, and written once).
    """

    paths: list[Path]
    refused: dict[str, str] = field(default_factory=dict)
    by_format: dict[str, list[Path]] = field(default_factory=dict)


def write_launch_files(
    request: PlanRequest,
    result: PlanResult,
    fmt: str | Iterable[str],
    out_dir: str | Path,
    name: str | None = None,
    today: dt.date | None = None,
    partial: bool = False,
) -> Written:
    """Write the files of one format, several, or "all" into `out_dir`.

    Every format is rendered before anything is written. Without `partial`, a format that refuses
    the plan raises its LaunchError and the folder is left as it was; with it (the window's "all",
    the CLI's ``--format all``) the formats that can express the plan are written and the refusals
    returned, because one format's limit (pipeline stages in torchtune) says nothing about the
    others. An existing file of the same name is replaced (`_write_replacing`): these files are
    generated, and the folder is the user's choice.
    """
    fmts = list(FORMATS) if fmt == "all" else [fmt] if isinstance(fmt, str) else list(fmt)
    if not fmts:
        raise LaunchError("no launch format chosen; use one of " + ", ".join(FORMATS))
    unknown = [f for f in fmts if f not in _RENDERERS]
    if unknown:
        raise LaunchError(f"{unknown[0]} is not a launch format; use {', '.join(FORMATS)} or all")
    plan = _plan(request, result, name, today)
    texts: dict[str, str] = {}
    refused: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for f in fmts:
        try:
            files = _RENDERERS[f](plan)
        except LaunchError as exc:
            if not partial:
                raise
            refused[f] = str(exc)
            continue
        texts |= files
        names[f] = list(files)
    out = Path(out_dir).expanduser()
    if texts:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LaunchError(f"output folder {out}: {exc.strerror or exc}") from exc
    written = []
    for filename, text in texts.items():
        path = out / filename
        _write_replacing(path, text, 0o755 if filename.endswith((".sh", ".sbatch")) else 0o644)
        written.append(path)
    return Written(written, refused, {f: [out / n for n in files] for f, files in names.items()})


def _write_replacing(path: Path, text: str, mode: int) -> None:
    """Write `text` to `path` through core.output_file: a new file beside it renamed over it, so a
    symlink planted at ``train.sbatch`` is replaced rather than followed (its target is never
    written or made executable), a pipe or folder there is refused, and a reader never sees half a
    file."""
    try:
        write_file(path, text, mode=mode)
    except OutputError as exc:
        raise LaunchError(str(exc)) from None
