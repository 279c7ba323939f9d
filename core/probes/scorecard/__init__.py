"""The readiness scorecard: grade a probe run's evidence PASS/WARN/FAIL against sourced thresholds.

Every check says what was measured, what was expected and who says so (``core.probes.scorecard.thresholds``), so a user
can forward the card to the provider. Missing evidence never fails a run: a probe that did not run leaves its
checks out, and a host without an NVIDIA GPU gets INFO lines instead of GPU failures. Verdict: NOT READY on any
FAIL, READY WITH WARNINGS on any WARN, READY otherwise.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, NamedTuple

from core.catalog import GPU, Catalog, CatalogError, load_catalog, network
from core.catalog.network import PCIE_ACHIEVED_GBS
from core.probes.evidence import (
    BurnResult,
    Check,
    CheckStatus,
    ComputeResult,
    DistributedResult,
    ProbeEvidence,
    Scorecard,
    StorageResult,
    Verdict,
)
from core.probes.parsers.xid_catalog import classify_xid
from core.probes.samples import CollectiveResult, CollectiveRow, GpuHealth, GpuInfo, GpuMetric, IbPort
from core.probes.scorecard import thresholds as T
from core.units import parse_bytes

Area = Literal["inventory", "health", "performance", "network", "storage", "stability", "distributed"]
PASS, WARN, FAIL, INFO = CheckStatus.passed, CheckStatus.warn, CheckStatus.fail, CheckStatus.info
NO_GPU = "no NVIDIA GPU found"
_RANK = {INFO: 0, PASS: 1, WARN: 2, FAIL: 3}
_ORDER = re.compile(
    r"^\s*(?:(?P<nodes>\d{1,5})\s*nodes?\s*[x×*]\s*)?(?:(?P<count>\d{1,4})\s*[x×*]?\s*)?(?P<model>.+?)\s*$",
    re.IGNORECASE,
)
_NET_DEVICE = re.compile(r"\[\d+\]\s*([A-Za-z0-9_]+)")


# --------------------------------------------------------------------------- the user's order


class Order(NamedTuple):
    """What the user says they rented, e.g. '8× H100-SXM' (per node) or 'H100' (model only)."""

    gpus: int | None
    model: str
    gpu_id: str | None
    mig: bool


def parse_order(text: str, catalog: Catalog | None = None) -> Order:
    """'8× H100-SXM', '8x h100', '2 nodes × 8 A100', 'H100 MIG' → Order; ValueError names the accepted forms."""
    match = _ORDER.match(text or "")
    model = match.group("model").strip() if match else ""
    if not match or not model or model.isdigit():
        raise ValueError(f"expected: '{text}' is not a GPU order; write e.g. '8× H100-SXM', '8x A100' or 'H100'")
    mig = bool(re.search(r"\bmig\b", model, re.IGNORECASE))
    model = re.sub(r"\bmig\b", "", model, flags=re.IGNORECASE).strip(" -")
    catalog = catalog or load_catalog()
    try:
        gpu_id: str | None = catalog.gpu_id(model)
    except CatalogError as exc:
        raise ValueError(f"expected: {exc}") from exc
    count = int(match.group("count")) if match.group("count") else None
    if count is not None and count < 1:
        raise ValueError(f"expected: '{text}' orders no GPU; give a count of at least 1")
    return Order(count, model, gpu_id, mig)


# --------------------------------------------------------------------------- small helpers


def _check(area: Area, name: str, status: CheckStatus, measured: str, expected: str, source: str,
           reason: str) -> Check:
    return Check(area=area, name=name, status=status, measured=measured, expected=expected, source=source,
                 reason=reason)


def _band(value: float, band: T.Band) -> CheckStatus:
    return PASS if value >= band.pass_at else WARN if value >= band.warn_at else FAIL


def _cap(status: CheckStatus, at: CheckStatus) -> CheckStatus:
    return at if _RANK[status] > _RANK[at] else status


def _worst(statuses: Iterable[CheckStatus]) -> CheckStatus:
    return max(statuses, key=lambda s: _RANK[s], default=PASS)


def _gpus_text(indices: Iterable[int]) -> str:
    ids = sorted(set(indices))
    return ("GPU " if len(ids) == 1 else "GPUs ") + ", ".join(str(i) for i in ids)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def size_label(n: float) -> str:
    """Message sizes the way nccl-tests users say them: 8 B, 256 KiB, 16 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def fmt_num(x: float) -> str:
    """794.5 → '794.5', 460.0 → '460', 2250 → '2,250': figures as their sources print them."""
    text = f"{x:,.1f}"
    return text[:-2] if text.endswith(".0") else text


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB/s"


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


# --------------------------------------------------------------------------- what the evidence says


class _Box:
    """The evidence, pre-digested: GPU list and health merged from inventory and health probes."""

    def __init__(self, evidence: ProbeEvidence, catalog: Catalog, samples: Sequence[GpuMetric]) -> None:
        self.e = evidence
        self.catalog = catalog
        self.samples = list(samples)
        inv_nv = evidence.inventory.nvidia if evidence.inventory else None
        reports = [r for r in (inv_nv, evidence.health) if r is not None]
        self.gpus: list[GpuInfo] = next((r.gpus for r in reports if r.gpus), [])
        self.health: list[GpuHealth] = next((r.health for r in (evidence.health, inv_nv) if r and r.health), [])
        self.before: list[GpuHealth] = inv_nv.health if inv_nv is not None and evidence.health is not None else []
        self.snapshot: list[GpuMetric] = [m for r in reports for m in r.metrics]
        self.attached = next((r.attached_gpus for r in reports if r.attached_gpus is not None), None)
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
        return self._first_known(d.name for d in coll.devices if d.name) if coll is not None else None

    @property
    def count(self) -> int:
        return len(self.gpus) or len(self.health) or (self.attached or 0)

    def model_label(self) -> str:
        names = Counter(g.name for g in self.gpus if g.name)
        if not names:
            return f"{_count(self.count, 'GPU')} (model not reported)"
        if len(names) == 1:
            name, n = names.most_common(1)[0]
            return f"{n}× {name}"
        return f"{_count(self.count, 'GPU')}: " + ", ".join(f"{n}× {name}" for name, n in names.most_common())

    def ib_ports(self) -> list[IbPort]:
        inv = self.e.inventory
        return list(inv.infiniband.ports) if inv and inv.infiniband else []

    def rdma_ports_up(self) -> list[IbPort]:
        return [p for p in self.ib_ports() if (p.state or "").lower() == "active"]


# --------------------------------------------------------------------------- inventory


def _no_gpu_checks(box: _Box) -> list[Check]:
    names: list[tuple[Area, str]] = [
        ("inventory", "GPU count and model"), ("inventory", "Whole GPUs (no MIG)"), ("inventory", "PCIe link"),
        ("health", "Clock-event reasons"), ("health", "ECC errors"), ("health", "Xid errors since boot"),
    ]
    if box.e.inventory is not None and box.e.inventory.nvlink is not None:
        names.append(("network", "NVLink"))
    return [_check(area, name, INFO, NO_GPU, "—", "nvidia-smi", NO_GPU) for area, name in names]


def check_count_and_model(box: _Box, order: Order | None) -> Check:
    measured = box.model_label()
    name = "GPU count and model"
    if order is not None:
        want = f"{order.gpus}× {order.gpu_id}" if order.gpus else str(order.gpu_id)
        expected = f"{want} as ordered"
        problems = []
        if order.gpus is not None and box.count != order.gpus:
            problems.append(f"{box.count} GPUs found, {order.gpus} ordered")
        ids = {_gpu_id_or_name(box.catalog, g.name) for g in box.gpus if g.name}
        if ids and ids != {order.gpu_id}:
            problems.append(f"model is {', '.join(sorted(str(i) for i in ids))}, {order.gpu_id} ordered")
        if problems:
            return _check("inventory", name, FAIL, measured, expected, T.INVENTORY_SOURCE, "; ".join(problems))
        if not ids:
            return _check("inventory", name, WARN, measured, expected, T.INVENTORY_SOURCE,
                          "nvidia-smi did not report the GPU model, so the order could not be compared")
        return _check("inventory", name, PASS, measured, expected, T.INVENTORY_SOURCE, f"{measured} as ordered")
    expected = "the same model on every GPU (no order given to compare with)"
    if box.attached is not None and box.gpus and box.attached != len(box.gpus):
        return _check("inventory", name, FAIL, measured, expected, T.INVENTORY_SOURCE,
                      f"nvidia-smi announced {box.attached} GPUs but described {len(box.gpus)}")
    if len({g.name for g in box.gpus if g.name}) > 1:
        return _check("inventory", name, WARN, measured, expected, T.INVENTORY_SOURCE,
                      "the GPUs are not all the same model")
    return _check("inventory", name, PASS, measured, expected, T.INVENTORY_SOURCE, f"{measured} found")


def _gpu_id_or_name(catalog: Catalog, name: str) -> str:
    try:
        return catalog.gpu_id(name)
    except CatalogError:
        return name


def check_whole_cards(box: _Box, order: Order | None) -> Check | None:
    name = "Whole GPUs (no MIG)"
    mig_on = [g.index for g in box.gpus if (g.mig_mode or "").lower() == "enabled"]
    vgpu = [g.index for g in box.gpus if "vgpu" in (g.virtualization_mode or "").lower()]
    small: list[int] = []
    if box.gpu is not None:
        floor = box.gpu.memory_bytes * T.WHOLE_CARD_MEMORY_FRACTION
        small = [g.index for g in box.gpus if g.memory_total_bytes is not None and g.memory_total_bytes < floor]
    reported = [g for g in box.gpus if g.mig_mode is not None or g.memory_total_bytes is not None]
    if not reported:
        return None
    parts = [f"MIG {'enabled on ' + _gpus_text(mig_on) if mig_on else 'disabled'}"]
    mems = sorted({g.memory_total_bytes for g in box.gpus if g.memory_total_bytes})
    if mems:
        parts.append(f"{mems[0] / 1e9:.1f} GB per GPU" if len(mems) == 1 else
                     f"{mems[0] / 1e9:.1f}–{mems[-1] / 1e9:.1f} GB per GPU")
    modes = sorted({g.virtualization_mode for g in box.gpus if g.virtualization_mode})
    if modes:
        parts.append("virtualization " + ", ".join(modes))
    measured = "; ".join(parts)
    want_mig = order is not None and order.mig
    expected = "MIG slices as ordered" if want_mig else "whole cards: MIG disabled, full memory"
    if box.gpu is not None and not want_mig:
        expected += f" (≥ {box.gpu.memory_bytes * T.WHOLE_CARD_MEMORY_FRACTION / 1e9:.0f} GB for {box.gpu.id})"
    if mig_on and not want_mig:
        return _check("inventory", name, FAIL, measured, expected, T.MIG_SOURCE,
                      f"MIG is enabled on {_gpus_text(mig_on)}: you get slices, not whole cards")
    if small and not want_mig:
        return _check("inventory", name, FAIL, measured, expected, T.MIG_SOURCE,
                      f"{_gpus_text(small)} report less memory than a whole {box.gpu.id if box.gpu else 'card'}")
    if vgpu:
        return _check("inventory", name, WARN, measured, expected, T.MIG_SOURCE,
                      f"{_gpus_text(vgpu)} are virtual GPUs (vGPU), which may be time-sliced with other tenants")
    return _check("inventory", name, PASS, measured, expected, T.MIG_SOURCE, "whole cards")


def check_persistence(box: _Box) -> Check | None:
    known = [g for g in box.gpus if g.persistence_mode is not None]
    if not known:
        return None
    off = [g.index for g in known if not g.persistence_mode]
    measured = f"enabled on {len(known) - len(off)} of {len(known)}"
    if off:
        return _check("inventory", "Persistence mode", WARN, measured, "enabled", T.PERSISTENCE_SOURCE,
                      f"persistence mode is off on {_gpus_text(off)} (slow first CUDA call, lost settings)")
    return _check("inventory", "Persistence mode", PASS, measured, "enabled", T.PERSISTENCE_SOURCE,
                  "persistence mode on")


def check_ecc_mode(box: _Box) -> Check | None:
    known = [g for g in box.gpus if g.ecc_mode]
    if not known:
        return None
    off = [g.index for g in known if (g.ecc_mode or "").lower() != "enabled"]
    measured = f"enabled on {len(known) - len(off)} of {len(known)}"
    if not off:
        return _check("inventory", "ECC mode", PASS, measured, "enabled", T.ECC_MODE_SOURCE, "ECC on")
    datacenter = box.gpu is not None and box.gpu.id.upper().startswith(T.DATACENTER_ECC_PREFIXES)
    status = FAIL if datacenter else WARN
    return _check("inventory", "ECC mode", status, measured, "enabled", T.ECC_MODE_SOURCE,
                  f"ECC is off on {_gpus_text(off)}" + (" of a datacenter GPU" if datacenter else ""))


def _under_load(box: _Box, index: int) -> bool | None:
    utils = [m.util_pct for m in box.snapshot if m.gpu == index and m.util_pct is not None]
    return None if not utils else max(utils) >= 50.0


class _Link(NamedTuple):
    """One GPU's PCIe link reading and whether the GPU was busy when it was taken."""

    gpu: int
    gen: int
    gen_max: int
    width: int | None
    width_max: int | None
    loaded: bool


def _pcie_links(box: _Box) -> list[_Link]:
    """Per GPU the reading taken under load (compute/burn probe) when there is one, else the snapshot's."""
    loaded = list(box.e.pcie_under_load or [])
    by_bus = {g.pci_bus_id.lower(): g for g in loaded if g.pci_bus_id}
    by_index = {g.index: g for g in loaded}
    links: list[_Link] = []
    used: set[int] = set()
    for g in box.gpus:
        busy = (by_bus.get(g.pci_bus_id.lower()) if g.pci_bus_id else None) or by_index.get(g.index)
        gen_max = (busy.pcie_gen_max if busy is not None else None) or g.pcie_gen_max
        width_max = (busy.pcie_width_max if busy is not None else None) or g.pcie_width_max
        if busy is not None and busy.pcie_gen_current is not None and gen_max is not None:
            used.add(id(busy))
            links.append(_Link(g.index, busy.pcie_gen_current, gen_max, busy.pcie_width_current, width_max, True))
        elif g.pcie_gen_current is not None and g.pcie_gen_max is not None:
            links.append(_Link(g.index, g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max,
                               bool(_under_load(box, g.index))))
    for busy in loaded:  # no inventory to match (the inventory probe did not run)
        if id(busy) not in used and not box.gpus and busy.pcie_gen_current is not None and busy.pcie_gen_max:
            links.append(_Link(busy.index, busy.pcie_gen_current, busy.pcie_gen_max, busy.pcie_width_current,
                               busy.pcie_width_max, True))
    return links


def check_pcie(box: _Box) -> Check | None:
    """Grade the link read under load; an idle reading never fails, since idle links downshift to save power."""
    known = _pcie_links(box)
    downtrained = [ev for ev in (box.e.kernel_log.events if box.e.kernel_log else []) if ev.kind == "pcie_downtrained"]
    if not known and not downtrained:
        return None
    narrow = [g for g in known if g.width and g.width_max and g.width < g.width_max]
    slow = [g for g in known if g.gen < g.gen_max]
    links = Counter(f"Gen{g.gen} x{g.width} {'under load' if g.loaded else 'at idle'}" for g in known)
    measured = "; ".join(f"{link} on {_count(n, 'GPU')}" for link, n in links.most_common()) or "not reported"
    maxes = Counter(f"Gen{g.gen_max} x{g.width_max}" for g in known)
    expected = "current = max under load (" + ", ".join(maxes) + ")" if maxes else "current = max under load"
    name, source = "PCIe link", T.PCIE_SOURCE_LINK
    if downtrained:
        return _check("inventory", name, FAIL, measured, expected, source,
                      f"the kernel log says a PCIe link is limited: {downtrained[0].message[:120]}")
    loaded_narrow = [g.gpu for g in narrow if g.loaded]
    if loaded_narrow:
        return _check("inventory", name, FAIL, measured, expected, source,
                      f"{_gpus_text(loaded_narrow)} run on a narrower PCIe link than they support under load")
    loaded_slow = [g.gpu for g in slow if g.loaded]
    if loaded_slow:
        return _check("inventory", name, FAIL, measured, expected, source,
                      f"{_gpus_text(loaded_slow)} run a slower PCIe generation than they support under load")
    idle = "read at idle; links downshift to save power, re-check under load"
    if narrow:
        return _check("inventory", name, WARN, measured, expected, source,
                      f"{_gpus_text(g.gpu for g in narrow)} show a narrower PCIe link than they support ({idle})")
    if slow:
        return _check("inventory", name, INFO, measured, expected, source,
                      f"{_gpus_text(g.gpu for g in slow)} show a lower PCIe generation than they support ({idle})")
    when = "under load" if all(g.loaded for g in known) else "(some read at idle)"
    return _check("inventory", name, PASS, measured, expected, source, f"full PCIe links {when}")


def check_fabric(box: _Box) -> Check | None:
    known = [g for g in box.gpus if g.fabric_state and g.fabric_state.upper() not in ("N/A", "NOT SUPPORTED")]
    if not known:
        return None
    bad = [g.index for g in known
           if g.fabric_state != "Completed" or (g.fabric_status not in (None, "Success", "N/A"))]
    measured = ", ".join(sorted({f"{g.fabric_state}/{g.fabric_status}" for g in known}))
    if bad:
        return _check("network", "NVSwitch fabric", FAIL, measured, "Completed/Success", T.FABRIC_SOURCE,
                      f"the NVSwitch fabric is not ready on {_gpus_text(bad)} (fabric manager down?)")
    return _check("network", "NVSwitch fabric", PASS, measured, "Completed/Success", T.FABRIC_SOURCE,
                  "NVSwitch fabric ready")


# --------------------------------------------------------------------------- health


def check_clock_reasons(box: _Box) -> Check | None:
    reasons: dict[int, set[str]] = defaultdict(set)
    for h in box.health:
        reasons[h.index].update(h.clocks_event_reasons)
    for m in box.snapshot:
        reasons[m.gpu].update(m.clocks_event_reasons)
    reported = any(reasons.values()) or any(m.sm_clock_mhz is not None or m.clocks_event_mask is not None
                                              for m in box.snapshot)
    if not reported:
        return None  # e.g. `nvidia-smi -q -d PAGE_RETIREMENT` says nothing about clocks
    odd = {i: sorted(r - T.BENIGN_CLOCK_REASONS) for i, r in reasons.items() if r - T.BENIGN_CLOCK_REASONS}
    expected = "only idle or SW power cap"
    if not odd:
        return _check("health", "Clock-event reasons", PASS, "none besides idle / SW power cap", expected,
                      T.THROTTLE_SOURCE, "no throttling")
    measured = "; ".join(f"GPU {i}: {', '.join(r)}" for i, r in sorted(odd.items()))
    hw = sorted(i for i, r in odd.items() if set(r) & T.HW_CLOCK_REASONS)
    what = "hardware slowdown (power brake / thermal)" if hw else "clock-event reasons beyond idle and power cap"
    who = hw or sorted(odd)
    return _check("health", "Clock-event reasons", WARN, measured, expected, T.THROTTLE_SOURCE,
                  f"{_gpus_text(who)} {'reports' if len(who) == 1 else 'report'} {what} in the snapshot; "
                  "watch under load")


def check_ecc(box: _Box) -> Check | None:
    if not box.health:
        return None
    counted = [h for h in box.health if any(v is not None for v in (
        h.ecc_volatile_uncorrectable, h.ecc_aggregate_uncorrectable, h.ecc_volatile_correctable,
        h.ecc_aggregate_correctable, h.ecc_aggregate_sram_correctable))]
    expected = (f"0 uncorrectable; SRAM correctable < {T.SRAM_CORRECTABLE_WARN:,} "
                f"(fail > {T.SRAM_CORRECTABLE_FAIL:,})")
    if not counted:
        return _check("health", "ECC errors", INFO, "counters not reported", expected, T.ECC_SOURCE,
                      "nvidia-smi did not report ECC counters")
    findings: list[tuple[CheckStatus, str]] = []
    dbe = [h.index for h in counted if (h.ecc_volatile_uncorrectable or 0) > 0]
    agg = [h.index for h in counted if (h.ecc_aggregate_uncorrectable or 0) > 0]
    if dbe:
        findings.append((FAIL, f"volatile uncorrectable ECC errors on {_gpus_text(dbe)}"))
    if agg:
        findings.append((FAIL, f"uncorrectable ECC errors in the lifetime counters of {_gpus_text(agg)}"))
    for h in counted:
        sram = h.ecc_aggregate_sram_correctable
        if sram is None:
            continue
        if sram > T.SRAM_CORRECTABLE_FAIL:
            findings.append((FAIL, f"GPU {h.index} has {sram:,} correctable SRAM errors"))
        elif sram >= T.SRAM_CORRECTABLE_WARN:
            findings.append((WARN, f"GPU {h.index} has {sram:,} correctable SRAM errors"))
    flagged = [h.index for h in counted if h.sram_threshold_exceeded]
    if flagged:
        findings.append((WARN, f"the SRAM error threshold is exceeded on {_gpus_text(flagged)}"))
    before = {h.index: h.ecc_volatile_correctable for h in box.before}
    grew = [h.index for h in counted if (h.ecc_volatile_correctable or 0) > (before.get(h.index) or 0)
            and before.get(h.index) is not None]
    if grew:
        findings.append((WARN, f"correctable ECC errors grew during the run on {_gpus_text(grew)}"))
    total_vol = sum(h.ecc_volatile_uncorrectable or 0 for h in counted)
    total_agg = sum(h.ecc_aggregate_uncorrectable or 0 for h in counted)
    measured = f"uncorrectable: {total_vol} volatile, {total_agg} aggregate over {_count(len(counted), 'GPU')}"
    if not findings:
        return _check("health", "ECC errors", PASS, measured, expected, T.ECC_SOURCE, "no uncorrectable ECC errors")
    status = _worst(s for s, _ in findings)
    reason = "; ".join(r for s, r in findings if s is status)
    return _check("health", "ECC errors", status, measured, expected, T.ECC_SOURCE, reason)


def check_retired_pages(box: _Box) -> Check | None:
    known = [h for h in box.health if h.retired_pages_pending is not None or h.retired_pages_sbe is not None
             or h.retired_pages_dbe is not None]
    if not known:
        return None
    pending = [h.index for h in known if h.retired_pages_pending]
    retired = [h.index for h in known if (h.retired_pages_sbe or 0) + (h.retired_pages_dbe or 0) > 0]
    sbe = sum(h.retired_pages_sbe or 0 for h in known)
    dbe = sum(h.retired_pages_dbe or 0 for h in known)
    measured = f"retired pages SBE {sbe}, DBE {dbe}; pending on {len(pending)} of {_count(len(known), 'GPU')}"
    expected = "no page pending retirement (retired pages warn)"
    if pending:
        return _check("health", "Retired pages", FAIL, measured, expected, T.RETIRED_SOURCE,
                      f"{len(pending)} GPUs have pages pending retirement ({_gpus_text(pending)}): reset needed")
    if retired:
        return _check("health", "Retired pages", WARN, measured, expected, T.RETIRED_SOURCE,
                      f"{_gpus_text(retired)} have retired memory pages")
    return _check("health", "Retired pages", PASS, measured, expected, T.RETIRED_SOURCE, "no retired pages")


def check_remapped_rows(box: _Box) -> Check | None:
    known = [h for h in box.health if h.remapped_rows_pending is not None or h.remapped_rows_failure is not None
             or h.remapped_rows_uncorrectable is not None]
    if not known:
        return None
    pending = [h.index for h in known if h.remapped_rows_pending]
    failed = [h.index for h in known if h.remapped_rows_failure]
    many = [h.index for h in known if (h.remapped_rows_uncorrectable or 0) > T.REMAP_UNCORRECTABLE_FAIL]
    some = [h.index for h in known if (h.remapped_rows_uncorrectable or 0) > 0]
    low = [h.index for h in known if (h.remap_histogram.get("low", 0) + h.remap_histogram.get("none", 0)) > 0]
    unc = sum(h.remapped_rows_uncorrectable or 0 for h in known)
    measured = f"{unc} uncorrectable rows remapped; pending on {len(pending)}, failure on {len(failed)} of " \
               f"{_count(len(known), 'GPU')}"
    expected = f"pending No, failure No, uncorrectable rows ≤ {T.REMAP_UNCORRECTABLE_FAIL}"
    if pending or failed or many:
        parts = []
        if pending:
            parts.append(f"row remapping pending on {_gpus_text(pending)} (reset needed)")
        if failed:
            parts.append(f"row remapping failed on {_gpus_text(failed)}")
        if many:
            parts.append(f"more than {T.REMAP_UNCORRECTABLE_FAIL} uncorrectable rows on {_gpus_text(many)}")
        return _check("health", "Remapped rows", FAIL, measured, expected, T.REMAP_SOURCE, "; ".join(parts))
    if some or low:
        which = sorted(set(some) | set(low))
        return _check("health", "Remapped rows", WARN, measured, expected, T.REMAP_SOURCE,
                      f"{_gpus_text(which)} have remapped rows or few spare rows left")
    return _check("health", "Remapped rows", PASS, measured, expected, T.REMAP_SOURCE, "no remapped rows pending")


def check_reset(box: _Box) -> Check | None:
    known = [h for h in box.health if h.reset_required is not None or h.drain_and_reset_recommended is not None
             or h.recovery_action is not None]
    if not known:
        return None
    required = [h.index for h in known if h.reset_required or
                (h.recovery_action or "none").strip().lower() not in ("none", "n/a", "")]
    drain = [h.index for h in known if h.drain_and_reset_recommended]
    measured = f"reset required on {len(required)}, drain recommended on {len(drain)} of {_count(len(known), 'GPU')}"
    if required:
        return _check("health", "GPU reset status", FAIL, measured, "No / No", T.RESET_SOURCE,
                      f"{_gpus_text(required)} need a reset")
    if drain:
        return _check("health", "GPU reset status", WARN, measured, "No / No", T.RESET_SOURCE,
                      f"drain and reset recommended on {_gpus_text(drain)}")
    return _check("health", "GPU reset status", PASS, measured, "No / No", T.RESET_SOURCE, "no reset pending")


def _xid_grade(codes: Sequence[tuple[int, str]]) -> tuple[CheckStatus, list[str]]:
    """Worst status over Xid (code, message) pairs and a phrase per distinct code, worst first."""
    by_code: dict[int, list[str]] = defaultdict(list)
    for code, message in codes:
        by_code[code].append(message)
    graded: list[tuple[CheckStatus, str]] = []
    for code, messages in sorted(by_code.items()):
        infos = [classify_xid(code, m) for m in messages]
        severities = {i.severity for i in infos}
        status = FAIL if "FAIL" in severities else WARN if severities & {"WARN", "UNKNOWN"} else PASS
        if code == 94 and len(messages) > 1:
            status = FAIL  # repeated contained ECC errors
        times = f" ×{len(messages)}" if len(messages) > 1 else ""
        meaning = (infos[0].meaning or "").split(" (")[0]
        graded.append((status, f"Xid {code}{times} ({meaning})"))
    graded.sort(key=lambda g: -_RANK[g[0]])
    return _worst(s for s, _ in graded), [text for _, text in graded]


def check_xid(box: _Box) -> Check | None:
    log = box.e.kernel_log
    if log is None:
        return None
    expected = "no Xid since boot (13/31/43/45/92/94/121 warn; 48/62/64/74/79/95/119/120… fail)"
    if not log.xids and not log.sxids:
        measured = "none"
        if box.no_gpu:
            return _check("health", "Xid errors since boot", INFO, NO_GPU, "—", T.XID_SOURCE, NO_GPU)
        return _check("health", "Xid errors since boot", PASS, measured, expected, T.XID_SOURCE, "no Xid errors")
    status, phrases = _xid_grade([(x.code, x.message) for x in log.xids])
    pcis = sorted({x.pci for x in log.xids if x.pci})
    for s in log.sxids:
        sx = FAIL if s.fatal or any(x.code == 74 for x in log.xids) else WARN
        status = _worst([status, sx])
        phrases.append(f"SXid {s.code} ({'fatal' if s.fatal else 'non-fatal'}) on NVSwitch {s.switch}")
    measured = "; ".join(phrases)
    where = f" on {', '.join(pcis)}" if pcis else ""
    if status is PASS:
        return _check("health", "Xid errors since boot", PASS, measured, expected, T.XID_SOURCE,
                      f"only informational Xid codes{where}")
    return _check("health", "Xid errors since boot", status, measured, expected, T.XID_SOURCE,
                  f"{phrases[0]}{where}")


def check_kernel_events(box: _Box) -> Check | None:
    log = box.e.kernel_log
    if log is None or not log.events:
        return None
    kinds = Counter(ev.kind for ev in log.events if ev.kind != "pcie_downtrained")
    if not kinds:
        return None
    measured = ", ".join(f"{kind.replace('_', ' ')} ×{n}" for kind, n in kinds.most_common())
    fail = [k for k in kinds if k in ("gpu_fell_off_bus", "gpu_reset_needed")]
    warn = [k for k in kinds if k in ("machine_check", "nvlink_error", "hung_task")]
    expected = "no GPU reset / fell-off-bus / machine-check lines"
    if fail:
        return _check("health", "Kernel log", FAIL, measured, expected, T.XID_SOURCE,
                      "the kernel log says a GPU " + ("fell off the bus" if "gpu_fell_off_bus" in fail
                                                      else "needs a reset"))
    if warn:
        return _check("health", "Kernel log", WARN, measured, expected, T.XID_SOURCE,
                      f"the kernel log has {', '.join(k.replace('_', ' ') for k in warn)} lines")
    return _check("health", "Kernel log", PASS, measured, expected, T.XID_SOURCE,
                  "only application-level events (OOM kills, segfaults) in the kernel log")


# --------------------------------------------------------------------------- network inventory


def check_nvlink(box: _Box) -> Check | None:
    inv = box.e.inventory
    if inv is None or inv.nvlink is None:
        return None
    statuses = inv.nvlink
    has_nvlink = box.gpu is None or box.gpu.intra_node_link == "nvlink"
    dead = [s.gpu for s in statuses if s.all_inactive]
    partial = [s.gpu for s in statuses if not s.all_inactive and s.inactive_links]
    speeds = [v for s in statuses for v in s.link_speeds_gbps if v is not None]
    per_gpu = Counter(len([v for v in s.link_speeds_gbps if v is not None]) for s in statuses)
    measured = (", ".join(f"{n} links up on {k} GPUs" for n, k in per_gpu.most_common()) if speeds
                else "all links inactive" if dead else "no NVLink reported")
    if speeds:
        measured += f" at {min(speeds):g}–{max(speeds):g} GB/s" if min(speeds) != max(speeds) else \
            f" at {speeds[0]:g} GB/s"
    expected = "every link up at nominal speed (H100 18 × 26.562 GB/s, A100 12 × 25 GB/s)"
    if not statuses or (dead and not has_nvlink):
        return _check("network", "NVLink", INFO, measured, "—", T.NVLINK_SOURCE,
                      "this GPU model has no NVLink between cards")
    if dead or partial:
        which = sorted(set(dead) | set(partial))
        return _check("network", "NVLink", FAIL, measured, expected, T.NVLINK_SOURCE,
                      f"inactive NVLink links on {_gpus_text(which)}")
    slow = [s.gpu for s in statuses if any(v is not None and v < 0.95 * max(speeds) for v in s.link_speeds_gbps)]
    if slow:
        return _check("network", "NVLink", WARN, measured, expected, T.NVLINK_SOURCE,
                      f"some NVLink links of {_gpus_text(slow)} run below the others' speed")
    return _check("network", "NVLink", PASS, measured, expected, T.NVLINK_SOURCE, "all NVLink links up")


def check_ib_ports(box: _Box) -> Check | None:
    inv = box.e.inventory
    if inv is None or inv.infiniband is None:
        return None
    ports = inv.infiniband.ports
    if not ports and not inv.infiniband.errors:
        return None
    down = [p for p in ports if (p.state or "").lower() != "active" or
            (p.phys_state is not None and p.phys_state.lower() != "linkup")]
    groups: dict[tuple[str | None, str | None], float] = {}
    for p in ports:
        if p not in down and p.rate_gbps is not None:
            key = (p.ca_type, p.link_layer)
            groups[key] = max(groups.get(key, 0.0), p.rate_gbps)
    slow = [p for p in ports if p not in down and p.rate_gbps is not None
            and p.rate_gbps < groups[(p.ca_type, p.link_layer)]]
    rates = Counter(f"{p.rate_gbps:g} Gb/s {p.link_layer or ''}".strip() for p in ports if p not in down
                    and p.rate_gbps is not None)
    measured = f"{len(ports) - len(down)} of {len(ports)} ports Active/LinkUp"
    if rates:
        measured += " (" + ", ".join(f"{n}× {r}" for r, n in rates.most_common()) + ")"
    expected = "every port Active/LinkUp at the rate of its peers"
    if down:
        names = ", ".join(f"{p.device}/{p.port} {p.state or '?'}/{p.phys_state or '?'}" for p in down)
        return _check("network", "InfiniBand/RoCE ports", FAIL, measured, expected, T.IB_SOURCE,
                      f"{len(down)} RDMA ports are not up ({names})")
    if slow:
        names = ", ".join(f"{p.device} at {p.rate_gbps:g} Gb/s" for p in slow)
        return _check("network", "InfiniBand/RoCE ports", FAIL, measured, expected, T.IB_SOURCE,
                      f"ports run below their peers' rate ({names})")
    if inv.infiniband.errors:
        return _check("network", "InfiniBand/RoCE ports", WARN, measured, expected, T.IB_SOURCE,
                      f"ibstat reported an error: {inv.infiniband.errors[0][:120]}")
    return _check("network", "InfiniBand/RoCE ports", PASS, measured, expected, T.IB_SOURCE, "all RDMA ports up")


def check_topology(box: _Box) -> Check | None:
    inv = box.e.inventory
    topo = inv.topology if inv else None
    if topo is None or not topo.nics or not topo.gpu_nic_links or not box.rdma_ports_up():
        return None
    close = {g for (g, _n), link in topo.gpu_nic_links.items() if link in ("PIX", "PXB")}
    gpus = sorted({g for g, _n in topo.gpu_nic_links})
    far = [g for g in gpus if g not in close]
    measured = f"{len(gpus) - len(far)} of {len(gpus)} GPUs have a NIC on their PCIe switch (PIX/PXB)"
    if far:
        return _check("network", "GPU–NIC topology", WARN, measured, "a PIX/PXB NIC for every GPU",
                      T.TOPOLOGY_SOURCE, f"{_gpus_text(far)} reach the network only across the CPU (NODE/SYS)")
    return _check("network", "GPU–NIC topology", PASS, measured, "a PIX/PXB NIC for every GPU", T.TOPOLOGY_SOURCE,
                  "every GPU has a close NIC")


# --------------------------------------------------------------------------- compute


_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


def matmul_reference(compute: ComputeResult, gpu: GPU | None) -> tuple[float, str] | None:
    """Achievable matmul TFLOP/s for the GPU found and where the figure comes from."""
    dtype = _DTYPES.get(compute.dtype.lower().removeprefix("torch."), compute.dtype.lower())
    if gpu is not None and gpu.id in T.MAMF_TFLOPS and dtype in ("bf16", "fp16"):
        return T.MAMF_TFLOPS[gpu.id], T.MAMF_SOURCE
    peak: float | None = None
    label = ""
    if gpu is not None:
        try:
            peak = gpu.peak_tflops(dtype)
            label = f"catalog peak {peak:g} of {gpu.id}"
        except CatalogError:
            peak = None
    if peak is None and compute.reference_tflops:
        peak = compute.reference_tflops
        label = f"peak {peak:g} ({compute.reference_source or 'runner'})"
    if peak is None:
        return None
    return peak * T.MAMF_FRACTION_OF_PEAK, f"{T.MAMF_FRACTION_OF_PEAK:.0%} of {label}; {T.MAMF_SOURCE}"


def check_matmul(box: _Box) -> list[Check]:
    c = box.e.compute
    if c is None:
        return []
    values = [v for v in c.tflops_per_device if _finite(v) and v > 0]
    if not values:
        return [_check("performance", "Matmul TFLOP/s", INFO, "no result", "—", T.MATMUL_SOURCE,
                       "the matmul probe returned no figure")]
    span = (f"{min(values):,.0f}–{max(values):,.0f} TFLOP/s per device (mean {statistics.fmean(values):,.0f})"
            if len(values) > 1 else f"{values[0]:,.1f} TFLOP/s")
    measured = f"{c.dtype} {span}"
    if c.device != "cuda" or box.no_gpu:
        return [_check("performance", "Matmul TFLOP/s", INFO, measured, "—", T.MATMUL_SOURCE,
                       f"{NO_GPU}; CPU throughput is shown for the record")]
    ref = matmul_reference(c, box.gpu)
    out: list[Check] = []
    if ref is None:
        out.append(_check("performance", "Matmul TFLOP/s", INFO, measured, "no reference for this GPU",
                          T.MATMUL_SOURCE, "the catalog has no figure for this GPU and dtype"))
    else:
        reference, source = ref
        worst = min(values)
        ratio = worst / reference
        status = _band(ratio, T.MATMUL_BAND)
        expected = (f"≥ {T.MATMUL_BAND.pass_at:.0%} of {fmt_num(reference)} TFLOP/s (warn below "
                    f"{T.MATMUL_BAND.pass_at * reference:,.0f}, fail below {T.MATMUL_BAND.warn_at * reference:,.0f})")
        slowest = values.index(worst)
        reason = (f"the slowest GPU reaches {ratio:.0%} of the {fmt_num(reference)} TFLOP/s reference"
                  if len(values) > 1 else f"{ratio:.0%} of the {fmt_num(reference)} TFLOP/s reference")
        if status is not PASS and len(values) > 1:
            reason += f" (GPU {slowest}: {worst:,.0f})"
        out.append(_check("performance", "Matmul TFLOP/s", status, measured, expected, source, reason))
    if len(values) > 1:
        best = max(values)
        lows = [(i, v / best) for i, v in enumerate(values)]
        worst_i, worst_r = min(lows, key=lambda t: t[1])
        status = _band(worst_r, T.SPREAD_BAND)
        measured = f"slowest GPU {worst_i} at {worst_r:.1%} of the best ({best:,.0f} TFLOP/s)"
        expected = f"every GPU within {1 - T.SPREAD_BAND.pass_at:.0%} of the best (fail beyond " \
                   f"{1 - T.SPREAD_BAND.warn_at:.0%})"
        reason = ("GPUs agree" if status is PASS else
                  f"GPU {worst_i} is {1 - worst_r:.0%} slower than the node's best GPU")
        out.append(_check("performance", "Matmul spread between GPUs", status, measured, expected, T.SPREAD_SOURCE,
                          reason))
    return out


# --------------------------------------------------------------------------- collectives


class BusbwExpectation(NamedTuple):
    """What busbw the interconnect found should reach, and how to grade against it."""

    kind: Literal["intra", "inter", "tcp", "pcie"]
    reference: float  # GB/s the bands apply to
    high: float  # GB/s, top of the typical range
    band: T.Band
    label: str  # e.g. '8× H100-SXM over NVLink/NVSwitch'
    source: str
    assumed: bool  # the NIC rate or count was not measured: never FAIL on it


def busbw_at_largest(coll: CollectiveResult) -> tuple[float, int] | None:
    """In-place busbw at the largest message (nccl-tests' verdict point), else out-of-place, else the average."""
    rows = sorted((r for r in coll.rows if _row_busbw(r) is not None), key=lambda r: r.size_bytes)
    if rows:
        value = _row_busbw(rows[-1])
        assert value is not None
        return value, rows[-1].size_bytes
    if coll.avg_busbw is not None and math.isfinite(coll.avg_busbw):
        return coll.avg_busbw, 0
    return None


def _row_busbw(row: CollectiveRow) -> float | None:
    for timing in (row.in_place, row.out_of_place):
        if timing is not None and _finite(timing.busbw_gbps):
            return timing.busbw_gbps
    return None


def _nodes_and_ranks(box: _Box, coll: CollectiveResult) -> tuple[int, int]:
    hosts = {d.host for d in coll.devices if d.host}
    nranks = coll.nranks or len(coll.devices) or box.count or 1
    if hosts:
        return len(hosts), nranks
    ic = box.e.collective_interconnect
    if ic in ("infiniband", "roce", "efa", "ethernet"):
        local = box.count or 8
        return max(2, math.ceil(nranks / local)), nranks
    return 1, nranks


def _interconnect(box: _Box, gpu: GPU | None, coll: CollectiveResult, nodes: int) -> str:
    ic = (box.e.collective_interconnect or "").lower()
    net = coll.net or ""
    if nodes > 1:
        if "Socket" in net:
            return "ethernet"
        if "NET/IB" in net:
            return "roce" if "roce" in net.lower() else "infiniband"
        if "OFI" in net or "Libfabric" in net:
            return "efa"
        if ic:
            return ic
        ports = box.rdma_ports_up()
        if ports:
            return "roce" if all((p.link_layer or "").lower() == "ethernet" for p in ports) else "infiniband"
        return "unknown"
    if gpu is not None and gpu.intra_node_link in ("nvlink", "infinity_fabric"):
        return "nvlink"  # the hardware has NVLink: a run that did not use it is a finding, not a new baseline
    return ic or (gpu.intra_node_link if gpu is not None else "unknown")


def _rails(box: _Box, coll: CollectiveResult, per_node: int) -> tuple[int, float | None]:
    """NICs NCCL used per node and their rate in Gb/s (None when no inventory says)."""
    used = _NET_DEVICE.findall(coll.net or "")
    ports = box.rdma_ports_up()
    rate_of = {p.device: p.rate_gbps for p in ports if p.rate_gbps}
    if used:
        rates = [rate_of[d] for d in used if d in rate_of]
        return len(used), (min(rates) if rates else None)
    if ports:
        fastest = max(p.rate_gbps or 0.0 for p in ports)
        rails = [p for p in ports if p.rate_gbps == fastest]
        return max(1, min(len(rails), per_node)), fastest or None
    return max(1, per_node), None


def probed_gpu(evidence: ProbeEvidence, catalog: Catalog | None = None) -> GPU | None:
    """The catalog GPU the box reports (by nvidia-smi name, else the collective benchmark's device names)."""
    return _Box(evidence, catalog or load_catalog(), []).gpu


def expected_busbw(evidence: ProbeEvidence, catalog: Catalog | None = None) -> BusbwExpectation | None:
    """The busbw the interconnect found should reach (None: no reference, e.g. gloo on a CPU-only host)."""
    box = _Box(evidence, catalog or load_catalog(), [])
    return _expected(box, evidence.collectives) if evidence.collectives is not None else None


def _expected(box: _Box, coll: CollectiveResult) -> BusbwExpectation | None:
    nodes, nranks = _nodes_and_ranks(box, coll)
    per_node = max(1, nranks // nodes)
    gpu = box.collective_gpu() or box.gpu  # grade the run against the GPUs it ran on
    ic = _interconnect(box, gpu, coll, nodes)
    torch = coll.tool == "torch_all_reduce_bench"
    scale = T.TORCH_BENCH_FACTOR if torch else 1.0
    extra = f"; blocking torch benchmark −5 % ({T.TORCH_BENCH_SOURCE})" if torch else ""
    if nodes == 1:
        if ic == "nvlink" and gpu is not None:
            ring = (coll.algo or "").lower() == "ring"
            table = T.NVLINK_8GPU_BUSBW.get(gpu.id) if nranks == 8 and not ring else None
            if table is not None:
                return BusbwExpectation("intra", table.low * scale, table.high * scale, T.NCCL_INTRA_BAND,
                                        f"{nranks}× {gpu.id} over NVLink/NVSwitch", table.source + extra, False)
            line = gpu.intra_node_bandwidth_gbs(nranks)
            return BusbwExpectation("intra", line * T.LINK_EFFICIENCY * scale, line * scale, T.NCCL_INTRA_BAND,
                                    f"{nranks}× {gpu.id} over {gpu.intra_node_link} ({line:g} GB/s per direction)",
                                    T.LINK_EFFICIENCY_SOURCE + extra, False)
        if ic == "pcie":
            gens = [g.pcie_gen_max for g in box.gpus if g.pcie_gen_max]
            top = gpu.intra_node_bandwidth_gbs(nranks) if gpu is not None else PCIE_ACHIEVED_GBS.get(
                min(gens) if gens else 4, 25.0)
            return BusbwExpectation("pcie", top * T.PCIE_LOW_FRACTION * scale, top * scale, T.Band(1.0, 0.0),
                                    f"{nranks} GPUs over PCIe", T.PCIE_SOURCE + extra, True)
        return None
    if ic in ("infiniband", "roce", "efa"):
        rails, rate = _rails(box, coll, per_node)
        assumed = rate is None
        if rate is None:
            rate = _typical_rail_gbps(gpu, ic, per_node)
        per_nic = rate / 8 * T.NCCL_PER_NIC_EFFICIENCY
        ref = rails * per_nic * scale
        how = "" if not assumed else " (NIC rate assumed for this GPU class: no NIC inventory)" if gpu else \
            " (NIC rate assumed: no NIC inventory)"
        return BusbwExpectation("inter", ref, rails * rate / 8 * scale, T.NCCL_INTER_BAND,
                                f"{nodes} nodes, {rails} × {rate:g} Gb/s {ic} per node{how}",
                                T.NCCL_INTER_SOURCE + extra, assumed)
    if ic == "ethernet":
        speeds = [_speed_gbps(n.get("speed")) for n in (box.e.inventory.nics if box.e.inventory else [])]
        known = [s for s in speeds if s]
        rate = max(known) if known else 100.0
        ref = rate / 8 * T.TCP_EFFICIENCY * scale
        return BusbwExpectation("tcp", ref, rate / 8 * 0.6 * scale, T.NCCL_INTER_BAND,
                                f"{nodes} nodes over {rate:g} Gb/s TCP" + ("" if known else " (NIC speed assumed)"),
                                T.TCP_SOURCE + extra, not known)
    return None


def _typical_rail_gbps(gpu: GPU | None, ic: str, per_node: int) -> float:
    """The planner's typical network per GPU for this GPU class (or for the network type when the GPU is unknown)."""
    if gpu is not None:
        return float(network.typical_gpu_net_gbps(gpu.intra_node_link, gpu.architecture, per_node))
    return network.DEFAULT_GPU_GBPS[ic]


def _speed_gbps(text: str | None) -> float | None:
    """NIC speed as sysfs (Mb/s, '100000') or ethtool ('100000Mb/s', '100G') print it, in Gb/s."""
    if not text:
        return None
    match = re.match(r"^\s*([0-9.]+)\s*([MG]?)", text)
    if not match:
        return None
    value = float(match.group(1))
    unit = match.group(2).upper() or ("M" if value >= 1000 else "G")
    return value / 1000 if unit == "M" else value


def check_collectives(box: _Box) -> list[Check]:
    coll = box.e.collectives
    if coll is None:
        return []
    out = [c for c in (_check_busbw(box, coll), _check_nccl_run(coll), _check_transport(box, coll)) if c]
    return out


def _check_busbw(box: _Box, coll: CollectiveResult) -> Check:
    name = "All-reduce busbw"
    found = busbw_at_largest(coll)
    if found is None:
        return _check("network", name, FAIL if coll.failures else INFO, "no bandwidth figure", "—",
                      T.NCCL_INTER_SOURCE, "the collective benchmark printed no result")
    value, size = found
    where = f" at {size_label(size)}" if size else " (average)"
    measured = f"{value:,.1f} GB/s{where}" + (f"; peak {coll.peak_busbw:,.1f}" if coll.peak_busbw and
                                             coll.peak_busbw > value * 1.01 else "")
    if (coll.nranks or 0) == 1:
        return _check("network", name, INFO, measured, "—", f"nccl-tests#71 ({T.NCCL_TESTS_71})",
                      "a single rank moves no data: busbw is 0 by definition")
    exp = _expected(box, coll)
    ic = (box.e.collective_interconnect or "").lower()
    if exp is None:
        why = NO_GPU if box.no_gpu or ic in ("loopback", "") else f"no reference for the '{ic}' interconnect"
        return _check("network", name, INFO, measured, "—", T.NCCL_INTER_SOURCE, why)
    ratio = value / exp.reference
    status = _band(ratio, exp.band)
    typical = f"{exp.reference:,.0f}–{exp.high:,.0f} GB/s" if exp.high > exp.reference * 1.01 else \
        f"{exp.reference:,.0f} GB/s"
    expected = f"{typical} for {exp.label}"
    if exp.kind == "pcie":
        reason = (f"{value:,.1f} GB/s is within the typical PCIe range" if status is PASS else
                  f"{value:,.1f} GB/s is below the typical PCIe range ({typical}; an estimate)")
        return _check("network", name, _cap(status, WARN), measured, expected + " (estimate)", exp.source, reason)
    reason = f"{ratio:.0%} of the {exp.reference:,.0f} GB/s expected for {exp.label}"
    if status is not PASS and size and size < T.NCCL_PLATEAU_BYTES:
        status = _cap(status, WARN)
        reason += f"; the largest message ({size_label(size)}) is below 1 GiB, so the curve has not reached its peak"
    if exp.assumed and status is FAIL:
        status = WARN
        reason += "; the NIC rate was assumed, so this is not graded as a failure"
    return _check("network", name, status, measured, expected, exp.source, reason)


def _check_nccl_run(coll: CollectiveResult) -> Check | None:
    problems = []
    if coll.wrong_total > 0:
        problems.append(f"{coll.wrong_total} wrong results (#wrong)")
    if coll.out_of_bounds_ok is False:
        problems.append(f"out-of-bounds values: {coll.out_of_bounds}")
    if coll.avg_busbw_ok is False:
        problems.append("the average busbw line says FAILED")
    if coll.failures:
        problems.append(f"error: {coll.failures[0][:100]}")
    nccl_tool = coll.tool in ("nccl-tests", "rccl-tests")
    if nccl_tool and not coll.completed:
        problems.append("no footer: the run did not finish or the output was cut")
    expected = "#wrong 0, out of bounds OK, footer present, no failure lines"
    source = f"nccl-tests ({T.NCCL_TESTS_README}); DCGM nccl_tests plugin logic"
    measured = f"{len(coll.rows)} size{'' if len(coll.rows) == 1 else 's'}, #wrong {coll.wrong_total}" + (
        f", out of bounds {coll.out_of_bounds}" if coll.out_of_bounds is not None else "")
    if problems:
        return _check("network", "Collective run integrity", FAIL, measured, expected, source, "; ".join(problems))
    if not nccl_tool and coll.tool != "torch_all_reduce_bench":
        return None
    return _check("network", "Collective run integrity", PASS, measured, expected, source,
                  "results validated and the run completed" if nccl_tool else "the benchmark reported no error")


def _check_transport(box: _Box, coll: CollectiveResult) -> Check | None:
    nodes, _ = _nodes_and_ranks(box, coll)
    if nodes < 2 or (coll.net is None and coll.gdr is None):
        return None
    rdma = bool(box.rdma_ports_up())
    net = coll.net or "not reported"
    measured = f"{net}; GPUDirect RDMA {'on' if coll.gdr else 'off' if coll.gdr is False else 'unknown'}"
    expected = "NET/IB or OFI with GDR 1"
    if "Socket" in net and rdma:
        return _check("network", "NCCL transport", FAIL, measured, expected, T.IFACE_SOURCE,
                      "NCCL fell back to TCP sockets although RDMA NICs are up")
    if coll.gdr is False and "Socket" not in net:
        return _check("network", "NCCL transport", FAIL, measured, expected, T.IFACE_SOURCE,
                      "GPUDirect RDMA is off (GDR 0): traffic is staged through host memory")
    return _check("network", "NCCL transport", PASS, measured, expected, T.IFACE_SOURCE, "NCCL uses the RDMA path")


# --------------------------------------------------------------------------- storage


def _fs_kind(fs: str | None) -> Literal["local", "network", "object", "unknown"]:
    if not fs:
        return "unknown"
    low = fs.lower()
    if low.startswith("fuse") and any(k in low for k in T.OBJECT_FILESYSTEMS):
        return "object"
    if any(k in low for k in T.NETWORK_FILESYSTEMS):
        return "network"
    return "local"


def _fs_size(box: _Box, path: str) -> int | None:
    inv = box.e.inventory
    best: tuple[int, int] | None = None
    for fs in inv.filesystems if inv else []:
        mount = fs.get("mount") or ""
        if mount and (path == mount or path.startswith(mount.rstrip("/") + "/")):
            try:
                size = parse_bytes(fs.get("size") or "")
            except ValueError:
                continue
            if best is None or len(mount) > best[0]:
                best = (len(mount), size)
    return best[1] if best else None


def check_storage(box: _Box, need: float | None) -> list[Check]:
    out: list[Check] = []
    for s in box.e.storage:
        label = f"{s.role} ({s.path})"
        if s.skipped_reason:
            out.append(_check("storage", f"Storage {label}", INFO, "not measured", "—", T.STORAGE_SOURCE,
                              s.skipped_reason))
            continue
        kind = _fs_kind(s.filesystem)
        out += [c for c in (_seq_read(s, label, kind, need), _p99(s, label, kind), _small_files(s, label, kind),
                            _capacity(box, s, label)) if c]
    return out


def _seq_read(s: StorageResult, label: str, kind: str, need: float | None) -> Check | None:
    value = s.seq_read_bytes_per_s
    if value is None:
        return None
    name = f"Sequential read, {label}"
    measured = f"{_gb(value)} ({s.tool}, {s.filesystem or 'filesystem unknown'})"
    if need is not None and need > 0:
        status = _band(value / need, T.SEQ_READ_BAND)
        return _check("storage", name, status, measured, f"≥ {_gb(need)} (the plan's read need per node)",
                      T.STORAGE_SOURCE, f"{value / need:.1f}× the job's read need")
    if kind in ("local", "unknown"):
        ref = T.LOCAL_SEQ_READ_BYTES_PER_S
        status = _cap(_band(value / ref, T.SEQ_READ_BAND), WARN)
        reason = ("as fast as a local NVMe drive" if status is PASS else
                  f"{value / ref:.0%} of a local Gen4 NVMe drive; give the job's read need to grade it")
        return _check("storage", name, status, measured, f"≥ {_gb(ref)} (local NVMe, per Gen4 drive)",
                      T.STORAGE_SOURCE, reason)
    return _check("storage", name, INFO, measured, "≥ 90 % of the provisioned tier figure", T.STORAGE_SOURCE,
                  f"{kind} storage: compare with the provisioned throughput, or give the job's read need")


def _p99(s: StorageResult, label: str, kind: str) -> Check | None:
    value = s.rand_read_p99_ms
    if value is None:
        return None
    measured = f"p99 {value:.2f} ms" + (f", {s.rand_read_iops:,.0f} IOPS" if s.rand_read_iops else "")
    expected = (f"< {T.P99_PASS_MS:g} ms (local NVMe < 0.2 ms); warn to {T.P99_FAIL_MS:g} ms, fail above")
    status = PASS if value < T.P99_PASS_MS else WARN if value <= T.P99_FAIL_MS else FAIL
    reason = "random reads are fast" if status is PASS else f"4 KiB random-read p99 latency is {value:.1f} ms"
    return _check("storage", f"Random-read latency, {label}", status, measured, expected, T.STORAGE_SOURCE, reason)


def _small_files(s: StorageResult, label: str, kind: str) -> Check | None:
    ops = s.small_file_ops_per_s
    name = f"Small files, {label}"
    if kind == "object" and s.role == "data":
        measured = f"{ops:,.0f} files/s" if ops else "object storage mount"
        return _check("storage", name, WARN, measured, "packed shards on object storage", T.STORAGE_SOURCE,
                      "many small files on object storage are slow and billed per request: pack them into shards")
    if not ops:
        return None
    ms = 1000.0 / ops
    measured = f"{ops:,.0f} small-file operations/s ({ms:.2f} ms each)"
    expected = f"≤ {T.SMALL_FILE_PASS_MS:g} ms per operation (fail above {T.SMALL_FILE_FAIL_MS:g} ms)"
    status = PASS if ms <= T.SMALL_FILE_PASS_MS else WARN if ms <= T.SMALL_FILE_FAIL_MS else FAIL
    if status is PASS:
        reason = "small-file metadata is fast"
    elif kind == "network":
        reason = f"{ms:.1f} ms per small-file operation on network storage: pack the dataset into shards"
    else:
        reason = f"{ms:.1f} ms per small-file operation"
    return _check("storage", name, status, measured, expected, T.STORAGE_SOURCE, reason)


def _capacity(box: _Box, s: StorageResult, label: str) -> Check | None:
    size = _fs_size(box, s.path)
    if s.free_bytes is None or not size:
        return None
    used = max(0.0, 1.0 - s.free_bytes / size)
    status = PASS if used < T.CAPACITY_WARN_USED else WARN if used < T.CAPACITY_FAIL_USED else FAIL
    measured = f"{used:.0%} used ({s.free_bytes / 1e9:,.0f} GB free of {size / 1e9:,.0f} GB)"
    expected = f"< {T.CAPACITY_WARN_USED:.0%} used (fail from {T.CAPACITY_FAIL_USED:.0%})"
    reason = "room to write checkpoints" if status is PASS else f"the filesystem is {used:.0%} full"
    return _check("storage", f"Free capacity, {label}", status, measured, expected, T.CAPACITY_SOURCE, reason)


# --------------------------------------------------------------------------- distributed


def check_distributed(d: DistributedResult | None, box: _Box) -> list[Check]:
    if d is None:
        return []
    src = T.DIST_SOURCE
    out = []
    expected = f"all_reduce(ones) == {d.world_size} on every rank"
    if d.error or not d.all_reduce_ok:
        out.append(_check("distributed", "All-reduce sanity", FAIL, d.error or "wrong sum", expected, src,
                          f"the {d.backend} all_reduce sanity check failed" + (f": {d.error[:100]}" if d.error
                                                                              else "")))
    else:
        out.append(_check("distributed", "All-reduce sanity", PASS, f"exact on {d.world_size} ranks ({d.backend})",
                          expected, src, "all ranks agree"))
    if d.ranks:
        ranks = [r.get("RANK") for r in d.ranks]
        sizes = {r.get("WORLD_SIZE") for r in d.ranks}
        want = {str(i) for i in range(d.world_size)}
        ok = sorted(ranks, key=str) == sorted(want, key=str) and sizes == {str(d.world_size)}
        measured = f"{len(d.ranks)} ranks reported, WORLD_SIZE {', '.join(sorted(str(s) for s in sizes))}"
        exp = f"ranks 0..{d.world_size - 1} once each, WORLD_SIZE {d.world_size} everywhere"
        out.append(_check("distributed", "Rank environment", PASS if ok else FAIL, measured, exp, src,
                          "rank environment consistent" if ok else "missing, duplicate or inconsistent ranks"))
    iface = d.nccl_socket_ifname
    if iface:
        bad = iface.startswith(T.BAD_SOCKET_IFACES)
        out.append(_check("distributed", "NCCL interface", FAIL if bad else PASS, iface,
                          "a real network interface (not lo/docker0/virbr/bond)", T.IFACE_SOURCE,
                          f"NCCL is bound to {iface}, which does not reach other nodes" if bad
                          else "NCCL interface looks right"))
    return out


# --------------------------------------------------------------------------- stability burn


def _load_medians(samples: Sequence[GpuMetric]) -> dict[int, float]:
    by_gpu: dict[int, list[float]] = defaultdict(list)
    for m in samples:
        if m.sm_clock_mhz is not None and (m.util_pct or 0) >= T.LOAD_UTIL_PCT:
            by_gpu[m.gpu].append(m.sm_clock_mhz)
    return {g: statistics.median(v) for g, v in by_gpu.items() if v}


def check_burn(b: BurnResult | None, box: _Box) -> list[Check]:
    if b is None:
        return []
    out: list[Check] = []
    minutes = f"{b.duration_s / 60:.0f} min" if b.duration_s >= 120 else f"{b.duration_s:.0f} s"
    if not b.completed:
        out.append(_check("stability", "Burn completed", WARN, f"stopped after {minutes}, {b.samples} samples",
                          "the full burn", T.DRIFT_SOURCE, "the burn did not run to its end"))
    if b.max_temp_c is not None:
        t = b.max_temp_c
        status = PASS if t <= T.TEMP_PASS_C else WARN if t < T.TEMP_FAIL_C else FAIL
        out.append(_check("stability", "Temperature under load", status, f"max {t:.0f} °C over {minutes}",
                          f"≤ {T.TEMP_PASS_C:.0f} °C (fail from {T.TEMP_FAIL_C:.0f} °C)", T.TEMP_SOURCE,
                          "cool under load" if status is PASS else f"GPUs reached {t:.0f} °C"))
    reasons = set(b.throttle_reasons_seen)
    hw = sorted(reasons & T.HW_CLOCK_REASONS)
    odd = sorted(reasons - T.BENIGN_CLOCK_REASONS - T.HW_CLOCK_REASONS)
    status = FAIL if hw else WARN if odd else PASS
    out.append(_check("stability", "Throttling during burn", status, ", ".join(sorted(reasons)) or "none",
                      "only idle / SW power cap; HW slowdown, thermal or power brake fail", T.THROTTLE_SOURCE,
                      f"hardware throttling during the burn: {', '.join(hw)}" if hw else
                      f"clock-event reasons during the burn: {', '.join(odd)}" if odd else "no throttling"))
    out += _burn_clock(b, box)
    if b.xid_codes is not None:
        if b.xid_codes:
            status, phrases = _xid_grade([(c, "") for c in b.xid_codes])
            out.append(_check("stability", "Xid during burn", status if status is not PASS else WARN,
                              "; ".join(phrases), "none", T.XID_SOURCE, f"{phrases[0]} during the burn"))
        else:
            out.append(_check("stability", "Xid during burn", PASS, "none", "none", T.XID_SOURCE,
                              "no Xid during the burn"))
    first, last = b.tflops_first_minute, b.tflops_last_minute
    if _finite(first) and _finite(last) and first:
        assert first is not None and last is not None
        drop = (first - last) / first
        status = PASS if drop <= T.DRIFT_PASS else WARN if drop <= T.DRIFT_FAIL else FAIL
        out.append(_check("stability", "Throughput drift", status,
                          f"{first:,.0f} → {last:,.0f} TFLOP/s first vs last minute ({-drop:+.1%})",
                          f"drop ≤ {T.DRIFT_PASS:.0%} (fail beyond {T.DRIFT_FAIL:.0%})", T.DRIFT_SOURCE,
                          "throughput held" if status is PASS else f"throughput fell {drop:.0%} during the burn"))
    return out


def _burn_clock(b: BurnResult, box: _Box) -> list[Check]:
    maxes = [g.max_sm_clock_mhz for g in box.gpus if g.max_sm_clock_mhz]
    if not maxes:
        return []
    top = max(maxes)
    medians = _load_medians(box.samples)
    expected = f"median ≥ {T.SM_CLOCK_BAND.pass_at:.0%} of {top:,.0f} MHz under load (fail below " \
               f"{T.SM_CLOCK_BAND.warn_at:.0%})"
    if medians:
        gpu, low = min(medians.items(), key=lambda kv: kv[1])
        status = _band(low / top, T.SM_CLOCK_BAND)
        measured = f"lowest GPU median {low:,.0f} MHz (GPU {gpu})"
    elif b.min_sm_clock_mhz is not None:
        low = b.min_sm_clock_mhz
        status = _cap(_band(low / top, T.SM_CLOCK_BAND), WARN)  # a minimum, not the median the band is for
        measured = f"lowest sample {low:,.0f} MHz"
    else:
        return []
    reason = "clocks held under load" if status is PASS else f"SM clock fell to {low / top:.0%} of its maximum"
    return [_check("stability", "SM clock under load", status, measured, expected, T.SM_CLOCK_SOURCE, reason)]


# --------------------------------------------------------------------------- the card


def score(evidence: ProbeEvidence, catalog: Catalog | None = None, *, expected: str | None = None,
          read_need_bytes_per_s: float | None = None, samples: Sequence[GpuMetric] | None = None) -> Scorecard:
    """Grade a run. ``expected`` is the user's order ('8× H100-SXM'); ``read_need_bytes_per_s`` the plan's data
    read need per node; ``samples`` the live GPU metrics (for clocks under load). Raises ValueError only for a
    malformed ``expected``."""
    catalog = catalog or load_catalog()
    order = parse_order(expected, catalog) if expected else None
    box = _Box(evidence, catalog, samples or [])
    checks: list[Check] = []
    if box.no_gpu:
        if order is not None:
            checks.append(_check("inventory", "GPU count and model", FAIL, NO_GPU, f"{order.gpus or ''}× "
                                 f"{order.gpu_id} as ordered".lstrip("× "), T.INVENTORY_SOURCE,
                                 f"{NO_GPU}, but {order.gpu_id} GPUs were ordered"))
            checks += [c for c in _no_gpu_checks(box) if c.name != "GPU count and model"]
        else:
            checks += _no_gpu_checks(box)
    elif box.measured_gpus:
        checks.append(check_count_and_model(box, order))
        gpu_checks: list[Callable[[_Box], Check | None]] = [
            check_persistence, check_ecc_mode, check_pcie, check_fabric, check_clock_reasons, check_ecc,
            check_retired_pages, check_remapped_rows, check_reset,
        ]
        whole = check_whole_cards(box, order)
        checks += [c for c in [whole, *(fn(box) for fn in gpu_checks)] if c is not None]
    for fn in (check_xid, check_kernel_events, check_nvlink, check_ib_ports, check_topology):
        if box.no_gpu and fn in (check_xid, check_nvlink):
            continue  # already INFO above
        found = fn(box)
        if found is not None:
            checks.append(found)
    checks += check_matmul(box)
    checks += check_collectives(box)
    checks += check_storage(box, read_need_bytes_per_s)
    checks += check_distributed(evidence.distributed, box)
    checks += check_burn(evidence.burn, box)
    if not checks:
        checks.append(_check("inventory", "Probes run", WARN, "no evidence", "at least one probe result", "—",
                             "no probe produced any evidence"))
    return Scorecard(verdict=verdict_of(checks), checks=checks, summary=summarise(checks))


def verdict_of(checks: Sequence[Check]) -> Verdict:
    statuses = {c.status for c in checks}
    if FAIL in statuses:
        return Verdict.not_ready
    if WARN in statuses:
        return Verdict.ready_with_warnings
    return Verdict.ready


def summarise(checks: Sequence[Check], most: int = 3) -> str:
    """One sentence: the verdict and the main reasons (failures first, else warnings)."""
    verdict = verdict_of(checks)
    if verdict is Verdict.ready:
        graded = [c for c in checks if c.status is PASS]
        info = len(checks) - len(graded)
        tail = f" ({info} not applicable or not measured)" if info else ""
        if not graded:
            return f"READY: nothing failed or warned ({info} checks not applicable or not measured)."
        return f"READY: all {len(graded)} graded checks passed{tail}."
    status = FAIL if verdict is Verdict.not_ready else WARN
    reasons = [c.reason.rstrip(".") for c in checks if c.status is status]
    more = len(reasons) - most
    text = "; ".join(reasons[:most])
    if more > 0:
        text += f"; and {more} more {'failure' if status is FAIL else 'warning'}{'s' if more > 1 else ''}"
    return f"{verdict.value}: {text}."


__all__ = [
    "NO_GPU", "BusbwExpectation", "Order", "busbw_at_largest", "expected_busbw", "fmt_num", "matmul_reference",
    "parse_order", "probed_gpu", "score", "size_label", "summarise", "verdict_of",
]
