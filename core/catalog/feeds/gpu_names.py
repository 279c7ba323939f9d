"""Accelerator names of the public catalogs -> catalog GPU ids, through the catalog's own lookup.

The catalogs name GPUs loosely (SkyPilot ``A100`` with the memory in GpuInfo, ``A100-80GB``; gpuhunt
``A100`` with a ``gpu_memory`` column). The name alone does not tell A100 40 GB from 80 GB, nor SXM
from PCIe, so the memory the row states and any form factor its text carries (``A100 PCIe`` in
SkyPilot's GpuInfo, ``PCIe`` in a RunPod instance name) pick between the candidates that
:meth:`Catalog.gpu_id` knows. A name that resolves to no catalog GPU, or only to GPUs whose memory
disagrees with the row, is unknown: the caller skips the row and counts it by name. Nothing is
guessed.
"""

from __future__ import annotations

import re

from core.catalog.lookup import Catalog
from core.catalog.records import CatalogError

# Heuristic (no source): how far the memory a row states may be from the catalog GPU's. 10% covers
# GiB read as GB (80 GiB = 85.9 GB; an H100 reports 79.6 GiB) and still tells 40 from 80 GB and 16
# from 32 GB apart.
MEMORY_TOLERANCE = 0.1
_FORM_WORDS = {"pcie": "pcie", "sxm": "sxm", "nvl": "nvl"}
_MEMORY_IN_NAME = re.compile(r"(\d{2,3})\s*g(?:i)?b", re.IGNORECASE)


def memory_in_name(name: str) -> float | None:
    """GB a name states (``A100-80GB`` -> 80), None when it states none."""
    m = _MEMORY_IN_NAME.search(name)
    return float(m.group(1)) if m else None


def form_factor_in(*texts: str) -> str | None:
    """'pcie', 'sxm' or 'nvl' when one of the texts names a form factor, else None."""
    for text in texts:
        low = text.lower()
        for word, form in _FORM_WORDS.items():
            if word in low:
                return form
    return None


def _lookup(catalog: Catalog, name: str) -> str | None:
    try:
        return catalog.gpu_id(name)
    except CatalogError:
        return None


def _memory_fits(catalog: Catalog, gpu_id: str, memory_gb: float | None) -> bool:
    if memory_gb is None:
        return True
    nominal = catalog.gpus[gpu_id].memory_gb
    return abs(nominal - memory_gb) <= MEMORY_TOLERANCE * nominal


def _form_fits(catalog: Catalog, gpu_id: str, form: str | None) -> bool:
    if form is None:
        return True
    text = f"{gpu_id} {catalog.gpus[gpu_id].form_factor or ''}".lower()
    return form in text


def resolve_gpu(
    catalog: Catalog, name: str, memory_gb: float | None = None, hints: tuple[str, ...] = ()
) -> str | None:
    """The catalog GPU id for an accelerator name, or None when the catalog has no GPU that fits.

    `memory_gb` is the per-GPU memory the row states (None when it states none or states it
    wrongly); `hints` are other texts of the row that may carry a form factor (GpuInfo's name, the
    instance name).
    """
    if not name.strip():
        return None
    memory = memory_in_name(name) or memory_gb
    form = form_factor_in(name, *hints)
    mem = f" {memory:.0f}gb" if memory else ""
    attempts = []
    # the accelerator name first: a hint only helps when the name alone fails
    for text in (name, *hints):
        stem = _MEMORY_IN_NAME.sub("", text).strip(" -_")
        if not stem:
            continue
        if form and form not in stem.lower():
            attempts.append(f"{stem} {form}{mem}")
        attempts += [f"{stem}{mem}", stem]
    for attempt in attempts:
        gid = _lookup(catalog, attempt)
        if (
            gid is not None
            and gid in catalog.gpus
            and _memory_fits(catalog, gid, memory)
            and _form_fits(catalog, gid, form)
        ):
            return gid
    return None
