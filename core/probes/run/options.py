"""What a probe run is asked to do: the suites and probe names, the run's options and its remote
timeouts.

This is the one place that knows which probes exist and which suites group them, so the CLI, the
GUI's suite picker, the runner and the probes themselves validate against the same names. It imports
nothing of the runner or the probes, so every probe can read its options without an import cycle.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.probes.step_spec import CPU_SCALE, StepSpec
from core.probes.transport.base import line_break_in

PROBE_NAMES = (
    "inventory",
    "gpu_metrics",
    "health",
    "compute",
    "collectives",
    "storage",
    "distributed",
    "burn",
    "step",
)
SUITES: dict[str, tuple[str, ...]] = {
    "quick": ("inventory", "health", "compute", "collectives", "storage", "distributed"),
    "full": ("inventory", "health", "compute", "collectives", "storage", "distributed", "burn"),
}


class ProbeTimeouts(BaseModel):
    """Seconds each kind of remote work may take before its process group is killed."""

    model_config = ConfigDict(extra="forbid")

    command_s: float = Field(60.0, gt=0, description="short commands: nvidia-smi -q, df, dmesg")
    inventory_s: float = Field(120.0, gt=0)
    compute_s: float = Field(300.0, gt=0)
    collectives_s: float = Field(600.0, gt=0)
    storage_s: float = Field(900.0, gt=0)
    distributed_s: float = Field(180.0, gt=0)
    burn_margin_s: float = Field(120.0, gt=0, description="on top of the burn duration")
    cleanup_s: float = Field(120.0, gt=0)


class RunOptions(BaseModel):
    """What to run and how. ``suite``: 'quick', 'full', 'name,name' or a list of probe names."""

    model_config = ConfigDict(extra="forbid")

    suite: str | list[str] = "quick"
    data_path: str | None = Field(
        None, description="absolute path on the host where training data lives"
    )
    checkpoint_path: str | None = Field(
        None, description="absolute path on the host for checkpoints"
    )
    burn_seconds: float = Field(600.0, gt=0, le=7 * 24 * 3600)
    fio_size: int = Field(256 << 20, ge=1 << 20, description="bytes of the storage test file")
    fio_runtime_s: float = Field(3.0, gt=0, le=3600, description="seconds per timed storage job")
    small_files: int = Field(2000, ge=10, le=1_000_000)
    allow_root: bool = Field(
        False, description="may use sudo -n (kernel log) where the user is not root"
    )
    python: str | None = Field(None, description="interpreter on the host to use (default: search)")
    metrics_interval_ms: int = Field(500, ge=100, le=60_000)
    metrics_seconds: float = Field(10.0, gt=0, description="how long 'gpu_metrics' alone samples")
    collective_max_bytes: int | None = Field(None, ge=1024)
    step: StepSpec | None = Field(None, description="the layer the step probe times, from a plan")
    step_cpu_scale: int = Field(
        CPU_SCALE, ge=1, le=1024, description="on a CPU: the plan's shapes divided by this"
    )
    timeouts: ProbeTimeouts = Field(default_factory=ProbeTimeouts)

    @field_validator("suite")
    @classmethod
    def _known_suite(cls, value: str | list[str]) -> str | list[str]:
        resolve_probes(value)
        return value

    @field_validator("data_path", "checkpoint_path", "python")
    @classmethod
    def _plain_path(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must be a non-empty path on one line")
        found = line_break_in(value)
        if found:  # the host's printed path would read as two lines, the last another path
            raise ValueError(
                f"must be a path on one line, without line breaks or NUL (it holds {found})"
            )
        return value

    @field_validator("data_path", "checkpoint_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"'{value}' must be an absolute path on the host (starting with /)")
        return value

    def probe_names(self) -> list[str]:
        return resolve_probes(self.suite)

    @property
    def suite_label(self) -> str:
        if isinstance(self.suite, str) and self.suite in SUITES:
            return self.suite
        return ",".join(self.probe_names())


def resolve_probes(suite: str | list[str]) -> list[str]:
    """Suite name or probe names -> probe names in order; ValueError naming the allowed values."""
    if isinstance(suite, str):
        if suite in SUITES:
            return list(SUITES[suite])
        names = [n.strip() for n in suite.split(",") if n.strip()]
    else:
        names = [str(n).strip() for n in suite]
    if not names:
        raise ValueError(
            f"no probe named; use {', '.join(SUITES)} or probe names from {', '.join(PROBE_NAMES)}"
        )
    unknown = [n for n in names if n not in PROBE_NAMES]
    if unknown:
        raise ValueError(
            f"unknown probe or suite '{unknown[0]}'; use {', '.join(SUITES)} or a comma "
            f"list of {', '.join(PROBE_NAMES)}"
        )
    return list(dict.fromkeys(names))


__all__ = ["PROBE_NAMES", "SUITES", "ProbeTimeouts", "RunOptions", "resolve_probes"]
