"""Is this the machine that was ordered? GPU count and model, whole cards, persistence, ECC mode,
GPU–NIC topology.

These checks read the inventory probe's static description of the box (nvidia-smi, nvidia-smi topo)
and compare it with what the user says they rented, so the order's parser (``parse_order``) lives
here too: a wrong model, MIG slices or a GPU without a close NIC is a matter for the provider before
any benchmark runs.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from core.catalog import Catalog, CatalogError, load_catalog
from core.probes.evidence import Check
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.common import (
    FAIL,
    INFO,
    NO_GPU,
    PASS,
    WARN,
    Area,
    Box,
    check,
    gpus_text,
    plural,
)

# --------------------------------------------------------------------------- the user's order


_ORDER = re.compile(
    r"^\s*(?:(?P<nodes>\d{1,5})\s*nodes?\s*[x×*]\s*)?(?:(?P<count>\d{1,4})\s*[x×*]?\s*)?(?P<model>.+?)\s*$",
    re.IGNORECASE,
)


class Order(NamedTuple):
    """What the user says they rented, e.g. '8× H100-SXM' (per node) or 'H100' (model only)."""

    gpus: int | None
    model: str
    gpu_id: str | None
    mig: bool


def parse_order(text: str, catalog: Catalog | None = None) -> Order:
    """'8× H100-SXM', '8x h100', '2 nodes × 8 A100', 'H100 MIG' → Order; ValueError names the
    accepted forms."""
    match = _ORDER.match(text or "")
    model = match.group("model").strip() if match else ""
    if not match or not model or model.isdigit():
        raise ValueError(
            f"expected: '{text}' is not a GPU order; write e.g. '8× H100-SXM', '8x A100' or 'H100'"
        )
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


# --------------------------------------------------------------------------- inventory


def no_gpu_checks(box: Box) -> list[Check]:
    """The INFO lines a host without an NVIDIA GPU gets in place of the GPU checks."""
    names: list[tuple[Area, str]] = [
        ("inventory", "GPU count and model"),
        ("inventory", "Whole GPUs (no MIG)"),
        ("inventory", "PCIe link"),
        ("health", "Clock-event reasons"),
        ("health", "ECC errors"),
        ("health", "Xid errors since boot"),
    ]
    if box.e.inventory is not None and box.e.inventory.nvlink is not None:
        names.append(("network", "NVLink"))
    return [check(area, name, INFO, NO_GPU, "—", "nvidia-smi", NO_GPU) for area, name in names]


def check_count_and_model(box: Box, order: Order | None) -> Check:
    measured = box.model_label()
    name = "GPU count and model"
    if order is not None:
        want = f"{order.gpus}× {order.gpu_id}" if order.gpus else str(order.gpu_id)
        expected = f"{want} as ordered"
        problems = []
        if order.gpus is not None and box.count != order.gpus:
            problems.append(f"{plural(box.count, 'GPU')} found, {order.gpus} ordered")
        ids = {_gpu_id_or_name(box.catalog, g.name) for g in box.gpus if g.name}
        if ids and ids != {order.gpu_id}:
            problems.append(
                f"model is {', '.join(sorted(str(i) for i in ids))}, {order.gpu_id} ordered"
            )
        if problems:
            return check(
                "inventory", name, FAIL, measured, expected, T.INVENTORY_SOURCE, "; ".join(problems)
            )
        if not ids:
            return check(
                "inventory",
                name,
                WARN,
                measured,
                expected,
                T.INVENTORY_SOURCE,
                "nvidia-smi did not report the GPU model, so the order could not be compared",
            )
        return check(
            "inventory",
            name,
            PASS,
            measured,
            expected,
            T.INVENTORY_SOURCE,
            f"{measured} as ordered",
        )
    expected = "the same model on every GPU (no order given to compare with)"
    if box.attached is not None and box.gpus and box.attached != len(box.gpus):
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            T.INVENTORY_SOURCE,
            f"nvidia-smi announced {box.attached} GPUs but described {len(box.gpus)}",
        )
    if len({g.name for g in box.gpus if g.name}) > 1:
        return check(
            "inventory",
            name,
            WARN,
            measured,
            expected,
            T.INVENTORY_SOURCE,
            "the GPUs are not all the same model",
        )
    return check(
        "inventory", name, PASS, measured, expected, T.INVENTORY_SOURCE, f"{measured} found"
    )


def _gpu_id_or_name(catalog: Catalog, name: str) -> str:
    try:
        return catalog.gpu_id(name)
    except CatalogError:
        return name


def check_whole_cards(box: Box, order: Order | None) -> Check | None:
    name = "Whole GPUs (no MIG)"
    mig_on = [g.index for g in box.gpus if (g.mig_mode or "").lower() == "enabled"]
    vgpu = [g.index for g in box.gpus if "vgpu" in (g.virtualization_mode or "").lower()]
    small: list[int] = []
    if box.gpu is not None:
        floor = box.gpu.memory_bytes * T.WHOLE_CARD_MEMORY_FRACTION
        small = [
            g.index
            for g in box.gpus
            if g.memory_total_bytes is not None and g.memory_total_bytes < floor
        ]
    reported = [g for g in box.gpus if g.mig_mode is not None or g.memory_total_bytes is not None]
    if not reported:
        return None
    parts = [f"MIG {'enabled on ' + gpus_text(mig_on) if mig_on else 'disabled'}"]
    mems = sorted({g.memory_total_bytes for g in box.gpus if g.memory_total_bytes})
    if mems:
        parts.append(
            f"{mems[0] / 1e9:.1f} GB per GPU"
            if len(mems) == 1
            else f"{mems[0] / 1e9:.1f}–{mems[-1] / 1e9:.1f} GB per GPU"
        )
    modes = sorted({g.virtualization_mode for g in box.gpus if g.virtualization_mode})
    if modes:
        parts.append("virtualization " + ", ".join(modes))
    measured = "; ".join(parts)
    want_mig = order is not None and order.mig
    expected = "MIG slices as ordered" if want_mig else "whole cards: MIG disabled, full memory"
    if box.gpu is not None and not want_mig:
        expected += (
            f" (≥ {box.gpu.memory_bytes * T.WHOLE_CARD_MEMORY_FRACTION / 1e9:.0f} GB for "
            f"{box.gpu.id})"
        )
    if mig_on and not want_mig:
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            T.MIG_SOURCE,
            f"MIG is enabled on {gpus_text(mig_on)}: you get slices, not whole cards",
        )
    if small and not want_mig:
        return check(
            "inventory",
            name,
            FAIL,
            measured,
            expected,
            T.MIG_SOURCE,
            f"{gpus_text(small)} report less memory than a whole "
            f"{box.gpu.id if box.gpu else 'card'}",
        )
    if vgpu:
        return check(
            "inventory",
            name,
            WARN,
            measured,
            expected,
            T.MIG_SOURCE,
            f"{gpus_text(vgpu)} are virtual GPUs (vGPU), which may be time-sliced with other "
            "tenants",
        )
    return check("inventory", name, PASS, measured, expected, T.MIG_SOURCE, "whole cards")


def check_persistence(box: Box) -> Check | None:
    known = [g for g in box.gpus if g.persistence_mode is not None]
    if not known:
        return None
    off = [g.index for g in known if not g.persistence_mode]
    measured = f"enabled on {len(known) - len(off)} of {len(known)}"
    if off:
        return check(
            "inventory",
            "Persistence mode",
            WARN,
            measured,
            "enabled",
            T.PERSISTENCE_SOURCE,
            f"persistence mode is off on {gpus_text(off)} (slow first CUDA call, lost settings)",
        )
    return check(
        "inventory",
        "Persistence mode",
        PASS,
        measured,
        "enabled",
        T.PERSISTENCE_SOURCE,
        "persistence mode on",
    )


def check_ecc_mode(box: Box) -> Check | None:
    known = [g for g in box.gpus if g.ecc_mode]
    if not known:
        return None
    off = [g.index for g in known if (g.ecc_mode or "").lower() != "enabled"]
    measured = f"enabled on {len(known) - len(off)} of {len(known)}"
    if not off:
        return check(
            "inventory", "ECC mode", PASS, measured, "enabled", T.ECC_MODE_SOURCE, "ECC on"
        )
    datacenter = box.gpu is not None and box.gpu.id.upper().startswith(T.DATACENTER_ECC_PREFIXES)
    status = FAIL if datacenter else WARN
    return check(
        "inventory",
        "ECC mode",
        status,
        measured,
        "enabled",
        T.ECC_MODE_SOURCE,
        f"ECC is off on {gpus_text(off)}" + (" of a datacenter GPU" if datacenter else ""),
    )


# --------------------------------------------------------------------------- network layout


def check_topology(box: Box) -> Check | None:
    inv = box.e.inventory
    topo = inv.topology if inv else None
    if topo is None or not topo.nics or not topo.gpu_nic_links or not box.rdma_ports_up():
        return None
    close = {g for (g, _n), link in topo.gpu_nic_links.items() if link in ("PIX", "PXB")}
    gpus = sorted({g for g, _n in topo.gpu_nic_links})
    far = [g for g in gpus if g not in close]
    measured = (
        f"{len(gpus) - len(far)} of {len(gpus)} GPUs have a NIC on their PCIe switch (PIX/PXB)"
    )
    if far:
        return check(
            "network",
            "GPU–NIC topology",
            WARN,
            measured,
            "a PIX/PXB NIC for every GPU",
            T.TOPOLOGY_SOURCE,
            f"{gpus_text(far)} reach the network only across the CPU (NODE/SYS)",
        )
    return check(
        "network",
        "GPU–NIC topology",
        PASS,
        measured,
        "a PIX/PXB NIC for every GPU",
        T.TOPOLOGY_SOURCE,
        "every GPU has a close NIC",
    )
