"""What every scorecard question shares: how a check is built and graded, how it words things, and
the Box.

``Box`` is the evidence digested once per run (the GPU list and health merged from the inventory and
health probes, and the catalog GPU they name), so every question module reads the same view of the
machine. ``check``, ``grade``, ``cap`` and ``worst`` are the status arithmetic; ``gpus_text``,
``plural``, ``size_label``, ``fmt_num``, ``fmt_flops`` and ``flops_span`` the wording, so every line
of the card (and the plan notes that quote its figures) reads alike.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from core.catalog import GPU, Catalog, CatalogError
from core.probes.evidence import Check, CheckStatus, ProbeEvidence
from core.probes.samples import CollectiveResult, GpuHealth, GpuInfo, GpuMetric, IbPort
from core.probes.scorecard import thresholds as T

# the one counting rule, used by the scorecard's modules through here
from core.units import plural as plural

Area = Literal[
    "inventory", "health", "performance", "network", "storage", "stability", "distributed"
]
PASS, WARN, FAIL, INFO = CheckStatus.passed, CheckStatus.warn, CheckStatus.fail, CheckStatus.info
NO_GPU = "no NVIDIA GPU found"
# the measured column of a check whose figure never came (it grades no evidence)
NOT_MEASURED = "not measured"
RANK = {INFO: 0, PASS: 1, WARN: 2, FAIL: 3}


# --------------------------------------------------------------------------- small helpers


def check(
    area: Area,
    name: str,
    status: CheckStatus,
    measured: str,
    expected: str,
    source: str,
    reason: str,
) -> Check:
    """One line of the card: what was measured against what, who says so, and the verdict in
    words."""
    return Check(
        area=area,
        name=name,
        status=status,
        measured=measured,
        expected=expected,
        source=source,
        reason=reason,
    )


def grade(value: float, band: T.Band) -> CheckStatus:
    """PASS at or above the band's pass mark, WARN down to its warn mark, FAIL below."""
    return PASS if value >= band.pass_at else WARN if value >= band.warn_at else FAIL


def cap(status: CheckStatus, at: CheckStatus) -> CheckStatus:
    """``status``, but never worse than ``at`` (e.g. an estimate may warn, never fail)."""
    return at if RANK[status] > RANK[at] else status


def worst(statuses: Iterable[CheckStatus]) -> CheckStatus:
    """The most severe status (INFO < PASS < WARN < FAIL); PASS when there is none."""
    return max(statuses, key=lambda s: RANK[s], default=PASS)


def gpus_text(indices: Iterable[int]) -> str:
    """[3, 1, 1] → 'GPUs 1, 3'; [0] → 'GPU 0'."""
    ids = sorted(set(indices))
    return ("GPU " if len(ids) == 1 else "GPUs ") + ", ".join(str(i) for i in ids)


def size_label(n: float) -> str:
    """Message sizes the way nccl-tests users say them: 8 B, 256 KiB, 16 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def sweep_cut(coll: CollectiveResult) -> str | None:
    """'5 of 7 message sizes, up to 1 MiB (4 MiB and 16 MiB not reached)' for a collective sweep
    that did not reach every size it was started with; None for a whole sweep. A cut sweep is shown,
    never graded: its largest size is not the one the figure is graded at, and whatever cut it may
    have slowed it first."""
    missing = coll.unreached_sizes
    if not missing:
        return None
    reached = [size for size in coll.planned_sizes if size not in missing]
    upto = f", up to {size_label(max(reached))}" if reached else ""
    names = [size_label(size) for size in missing]
    left = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{len(reached)} of {len(coll.planned_sizes)} message sizes{upto} ({left} not reached)"


def partial_line(area: Area, name: str, measured: str, cut: str) -> Check:
    """The busbw line of a cut sweep (`sweep_cut`): its figures shown, marked partial, and not
    graded."""
    return check(
        area,
        name,
        INFO,
        f"partial: {measured}",
        "every message size of the sweep measured",
        T.NCCL_INTER_SOURCE,
        f"not graded: the sweep was cut after {cut}",
    )


def fmt_num(x: float) -> str:
    """794.5 → '794.5', 460.0 → '460', 2250 → '2,250': figures as their sources print them."""
    text = f"{x:,.1f}"
    return text[:-2] if text.endswith(".0") else text


def fmt_flops(tflops: float, decimals: int = 1) -> str:
    """Matmul throughput in a unit that keeps it readable: 794.5 → '794.5 TFLOP/s', 0.17 → '170
    GFLOP/s'. A CPU's figure in TFLOP/s would print as 0.0 or 0.2, which reads as 'nothing' rather
    than as a number."""
    if tflops >= 1 or tflops <= 0:
        return f"{tflops:,.{decimals}f} TFLOP/s"
    gflops = tflops * 1e3
    return f"{gflops:,.0f} GFLOP/s" if gflops >= 10 else f"{gflops:.2g} GFLOP/s"


def flops_span(values: Sequence[float], mean: bool = True) -> str:
    """Per-device matmul figures: one value as :func:`fmt_flops`, several as 'low–high UNIT per
    device (mean m)', in GFLOP/s when even the fastest is below 1 TFLOP/s."""
    if len(values) == 1:
        return fmt_flops(values[0])
    scale, unit = (1e3, "GFLOP/s") if 0 < max(values) < 1 else (1.0, "TFLOP/s")
    text = f"{min(values) * scale:,.0f}–{max(values) * scale:,.0f} {unit} per device"
    return text + f" (mean {statistics.fmean(values) * scale:,.0f})" if mean else text


def is_finite(value: float | None) -> bool:
    """A figure that is there and is a number (not None, NaN or infinity)."""
    return value is not None and math.isfinite(value)


# --------------------------------------------------------------------------- what the evidence says


class Box:
    """The evidence, pre-digested: GPU list and health merged from inventory and health probes."""

    def __init__(
        self, evidence: ProbeEvidence, catalog: Catalog, samples: Sequence[GpuMetric]
    ) -> None:
        self.e = evidence
        self.catalog = catalog
        self.samples = list(samples)
        inv_nv = evidence.inventory.nvidia if evidence.inventory else None
        reports = [r for r in (inv_nv, evidence.health) if r is not None]
        self.gpus: list[GpuInfo] = next((r.gpus for r in reports if r.gpus), [])
        self.health: list[GpuHealth] = next(
            (r.health for r in (evidence.health, inv_nv) if r and r.health), []
        )
        self.before: list[GpuHealth] = (
            inv_nv.health if inv_nv is not None and evidence.health is not None else []
        )
        self.snapshot: list[GpuMetric] = [m for r in reports for m in r.metrics]
        self.attached = next(
            (r.attached_gpus for r in reports if r.attached_gpus is not None), None
        )
        self.measured_gpus = evidence.inventory is not None or evidence.health is not None
        self.no_gpu = self.measured_gpus and not self.gpus and not self.health and not self.attached
        self.gpu = self._catalog_gpu()

    def _catalog_gpu(self) -> GPU | None:
        names = [g.name for g in self.gpus if g.name]
        return self._first_known(names) or self.collective_gpu()

    def _first_known(self, names: Iterable[str]) -> GPU | None:
        for name in names:
            try:
                return self.catalog.gpu(name)
            except CatalogError:
                continue
        return None

    def collective_gpu(self) -> GPU | None:
        """The GPU the collective benchmark says it ran on (its '# Rank ... device' lines)."""
        coll = self.e.collectives
        return (
            self._first_known(d.name for d in coll.devices if d.name) if coll is not None else None
        )

    @property
    def count(self) -> int:
        return len(self.gpus) or len(self.health) or (self.attached or 0)

    def model_label(self) -> str:
        names = Counter(g.name for g in self.gpus if g.name)
        if not names:
            return f"{plural(self.count, 'GPU')} (model not reported)"
        if len(names) == 1:
            name, n = names.most_common(1)[0]
            return f"{n}× {name}"
        return f"{plural(self.count, 'GPU')}: " + ", ".join(
            f"{n}× {name}" for name, n in names.most_common()
        )

    def ib_ports(self) -> list[IbPort]:
        inv = self.e.inventory
        return list(inv.infiniband.ports) if inv and inv.infiniband else []

    def rdma_ports_up(self) -> list[IbPort]:
        return [p for p in self.ib_ports() if (p.state or "").lower() == "active"]
