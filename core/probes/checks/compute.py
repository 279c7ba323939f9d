"""Compute: dense matmul TFLOP/s per GPU (bf16, torch) against the catalog's peak for the GPU found.

On a host without a usable GPU it measures fp32 on the CPU for a few seconds and says so (numpy when
torch is absent), so the run still shows what the box can do; the scorecard compares only GPU
figures with GPU peaks. With GPUs it then loads all of them at once for a few seconds and reads
their PCIe link meanwhile: links downshift at idle to save power, so only a reading under load can
show a downtrained link.
"""

from __future__ import annotations

import json
from typing import Any

from core.catalog import load_catalog
from core.probes.checks.base import ProbeContext, ProbeFailed, ProbeSkipped, q, short_error
from core.probes.checks.catalog_match import bf16_reference, match_gpu
from core.probes.evidence import ComputeResult
from core.probes.parsers.nvidia_smi_query import parse_query_gpu
from core.probes.samples import GpuInfo

GPU_SECONDS = 1.5
CPU_SECONDS = 2.0
SPREAD_WARN = 0.10  # > 10 % below the node's best GPU: PROBES.md §4 C (gpu-fryer tolerance)
LINK_LOAD_SECONDS = 3.0  # all GPUs busy at once; the link is read at the first tick of the load
LINK_FIELDS = "index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"  # noqa: E501
LINK_QUERY = f"nvidia-smi --query-gpu={LINK_FIELDS} --format=csv"


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a script's stdout, skipping any other line."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def as_float(value: object) -> float | None:
    """A JSON number as float; None for anything else (strings, booleans, null)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def as_int(value: object, default: int = 0) -> int:
    number = as_float(value)
    return int(number) if number is not None and abs(number) < 2**53 else default


def gpu_product_name(ctx: ProbeContext) -> str | None:
    """The GPU model as the driver names it (inventory first, then torch, then ``nvidia-smi
    -L``)."""
    inventory = ctx.evidence.inventory
    if inventory is not None and inventory.nvidia is not None:
        names = [g.name for g in inventory.nvidia.gpus if g.name]
        if names:
            return names[0]
    python = ctx.facts.python
    if python is not None and python.cuda_names:
        return python.cuda_names[0]
    if ctx.facts.gpu_lines:  # "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
        line = ctx.facts.gpu_lines[0]
        return line.split(":", 1)[-1].split("(UUID")[0].strip() or None
    return None


def read_link(ctx: ProbeContext) -> list[GpuInfo] | None:
    """The PCIe link of every GPU right now (call it while they are busy); None, with a warning, if
    unreadable."""
    result = ctx.run(LINK_QUERY, timeout=ctx.options.timeouts.command_s)
    parsed = parse_query_gpu(result.stdout)
    gpus = parsed.value.gpus if parsed.value is not None else []
    if result.exit_code != 0 or not any(g.pcie_gen_current is not None for g in gpus):
        ctx.warn(f"the PCIe link could not be read under load: {short_error(result)}")
        return None
    return gpus


def link_under_load(ctx: ProbeContext, python: str, script: str) -> None:
    """Load every GPU at once (matmul.py's burn mode) and read the link once they compute; never
    fails the probe."""
    marker = "tuneplan-link-" + ctx.workdir.rsplit("/", 1)[-1]
    command = (
        f"{q(python)} {q(script)} burn --duration {LINK_LOAD_SECONDS:g} --interval 0.5 --device "
        f"cuda --marker {q(marker)}"
    )
    links: list[GpuInfo] | None = None
    read = False
    stream = ctx.stream(command, timeout=LINK_LOAD_SECONDS + ctx.options.timeouts.compute_s)
    for line in stream:
        if not read and any(r.get("event") == "tick" for r in json_lines(line)):
            read = True
            links = read_link(ctx)
    if not read:
        result = stream.result
        ctx.warn(
            "the PCIe link was not read under load: the GPU load did not start "
            f"({short_error(result) if result is not None else 'no output'})"
        )
    if links is not None:
        ctx.evidence.pcie_under_load = links


def run(ctx: ProbeContext) -> None:
    python = ctx.facts.python
    if python is None:
        raise ProbeSkipped("no Python interpreter was found on the host, so no matmul could run")
    if python.torch is None and python.numpy is None:
        raise ProbeSkipped(f"neither torch nor numpy can be imported by {python.path}")
    on_gpu = ctx.facts.cuda
    if ctx.facts.nvidia and not on_gpu:
        why = "torch is not installed" if python.torch is None else "torch cannot use CUDA"
        ctx.warn(
            f"the host has {ctx.facts.gpu_count} NVIDIA GPU(s) but {why} in {python.path}; "
            "measured the CPU "
            "instead"
        )
    elif not ctx.facts.nvidia:
        ctx.warn("no NVIDIA GPU found: measured fp32 matmul on the CPU instead")
    script = ctx.upload("matmul.py")
    seconds = GPU_SECONDS if on_gpu else CPU_SECONDS
    command = (
        f"{q(python.path)} {q(script)} measure --seconds {seconds} --device "
        f"{'cuda' if on_gpu else 'cpu'}"
    )
    result = ctx.run(command, timeout=ctx.options.timeouts.compute_s)
    records = json_lines(result.stdout)
    results = [
        r for r in records if r.get("event") == "result" and as_float(r.get("tflops")) is not None
    ]
    errors = [str(r.get("message")) for r in records if r.get("event") == "error"]
    if not results:
        raise ProbeFailed(
            f"the matmul benchmark gave no result: {errors[0] if errors else short_error(result)}"
        )
    if result.exit_code != 0:
        ctx.warn(f"the matmul benchmark ended with {short_error(result)}")
    results.sort(key=lambda r: as_int(r.get("index")))
    tflops = [as_float(r.get("tflops")) or 0.0 for r in results]
    first = results[0]
    compute = ComputeResult(
        device=str(first.get("device", "cpu")),
        dtype=str(first.get("dtype", "")),
        matrix_size=as_int(first.get("n")),
        tflops_per_device=tflops,
    )
    if compute.device == "cuda":
        name = gpu_product_name(ctx) or str(first.get("name") or "")
        gpu = match_gpu(name, load_catalog())
        if gpu is None:
            ctx.warn(
                f"the GPU '{name}' is not in the catalog, so there is no reference TFLOP/s to "
                "compare with"
            )
        else:
            compute.reference_tflops, compute.reference_source = bf16_reference(gpu)
        best = max(tflops)
        for index, value in enumerate(tflops):
            if best > 0 and value < best * (1 - SPREAD_WARN):
                ctx.log(
                    "warning",
                    f"GPU {index} reached {value:.0f} TFLOP/s, {100 * (1 - value / best):.0f}% "
                    f"below the best GPU of this host ({best:.0f})",
                )
    for index, value in enumerate(tflops):
        ctx.point("compute_tflops", float(index), value, f"{compute.device} {index}")
    ctx.evidence.compute = compute
    if compute.device == "cuda" and ctx.facts.nvidia:
        link_under_load(ctx, python.path, script)
