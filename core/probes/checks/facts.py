"""Before any probe: which tools, GPUs and Python interpreters the host has (one round trip,
``facts.sh``).

Every probe chooses its method from these facts (all_reduce_perf or torchrun, fio or the Python
fallback, NVML or nvidia-smi), so they are gathered once, whatever the suite.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from core.probes.checks.base import HostFacts, ProbeContext, PythonInfo, q

# Interpreters tried in order when the user names none: the login PATH first, then where GPU images
# and cloud templates usually put a torch-enabled Python.
DEFAULT_PYTHONS = (
    "python3",
    "python",
    "/opt/conda/bin/python",
    "~/miniconda3/bin/python",
    "~/anaconda3/bin/python",
    "~/miniforge3/bin/python",
    "~/.venv/bin/python",
    "~/venv/bin/python",
    "/usr/local/bin/python3",
)


def parse_facts(text: str) -> tuple[HostFacts, list[str]]:
    """Read ``facts.sh`` output; never raises (odd lines become warnings)."""
    facts = HostFacts()
    warnings: list[str] = []
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("pyfrom\t"):
            _, path, how = [*line.split("\t", 2), "", ""][:3]
            found[path] = how
            continue
        if line.startswith("python\t"):
            parts = line.split("\t", 2)
            if len(parts) != 3:
                continue
            try:
                data = json.loads(parts[2])
                if not isinstance(data, dict):
                    raise ValueError("not an object")
                data.pop("executable", None)
                facts.pythons.append(PythonInfo(path=parts[1], **data))
            except (ValueError, ValidationError, TypeError) as exc:
                warnings.append(
                    f"could not read what {parts[1]} offers: {str(exc).splitlines()[0][:120]}"
                )
                facts.pythons.append(PythonInfo(path=parts[1]))
            continue
        key, _, rest = line.partition(" ")
        if key == "tool":
            name, _, path = rest.partition(" ")
            if name and path:
                facts.tools[name] = path.strip()
        elif key == "uid" and rest.strip().isdigit():
            facts.uid = int(rest.strip())
        elif key == "gpu" and rest.startswith("GPU "):
            facts.gpu_lines.append(rest.strip())
        elif key == "events":
            facts.query_fields_event_reasons = rest.strip() != "0"
    facts.pythons = [
        p.model_copy(update={"found": found.get(p.path) or p.found}) for p in facts.pythons
    ]
    facts.python = choose_python(facts.pythons)
    return facts, warnings


def choose_python(pythons: list[PythonInfo]) -> PythonInfo | None:
    """The interpreter with CUDA torch, else any torch, else the first one that answered."""
    answered = [p for p in pythons if p.version]
    for wanted in (
        lambda p: p.torch is not None and p.cuda,
        lambda p: p.torch is not None,
        lambda p: True,
    ):
        for info in answered:
            if wanted(info):
                return info
    return None


def detect_facts(ctx: ProbeContext) -> HostFacts:
    """Upload and run ``facts.sh``; the host's Python (``--python``, the host's form), if set, is
    tried first and alone; else the environments the login shell activates, then the usual places
    (`python_used` says which one won)."""
    facts_sh = ctx.upload("facts.sh")
    pyfacts = ctx.upload("pyfacts.py")
    pythons = [ctx.options.python] if ctx.options.python else ["--envs", *DEFAULT_PYTHONS]
    command = " ".join(["bash", q(facts_sh), q(pyfacts), *(q(p) for p in pythons)])
    result = ctx.run(command, timeout=max(ctx.options.timeouts.command_s, 120.0))
    facts, warnings = parse_facts(result.stdout)
    for warning in warnings:
        ctx.warn(warning)
    if ctx.options.python and facts.python is None:
        ctx.log(
            "warning",
            f"the host's Python {ctx.options.python} (--python, or the host's form) was not found "
            "or did not start on the host",
        )
    return facts


def python_used(facts: HostFacts) -> str:
    """One sentence: which interpreter the probes use, with torch or not, and how it was found."""
    python = facts.python
    if python is None:
        return "no Python answered on the host: the torch checks are skipped"
    torch = f"torch {python.torch}" if python.torch else "no torch"
    return f"Python: {python.path} ({torch})" + (f", from {python.found}" if python.found else "")
