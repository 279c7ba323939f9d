"""Map the product name a driver prints (``NVIDIA H100 80GB HBM3``, ``NVIDIA A100-SXM4-40GB``) to a
catalog GPU.

The catalog's own name resolution handles most names; what is left are driver spellings with extra
words (memory type, form factor) that the catalog does not list. Those are retried with the words
removed one by one, and a name that still matches nothing gives None (no reference) rather than a
wrong GPU.
"""

from __future__ import annotations

import re

from core.catalog import GPU, Catalog, CatalogError

# form factors change the peak: kept
_NOISE = re.compile(r"\b(HBM3e?|HBM2e?|GDDR6X?|GDDR7)\b", re.IGNORECASE)


def match_gpu(product_name: str | None, catalog: Catalog) -> GPU | None:
    """The catalog GPU for a driver product name, or None when none matches with confidence."""
    if not product_name or not product_name.strip():
        return None
    name = product_name.strip()
    candidates = [name, name.replace("-", " ")]
    stripped = re.sub(r"\s+", " ", _NOISE.sub(" ", name.replace("-", " "))).strip()
    if stripped and stripped not in candidates:
        candidates.append(stripped)
    for candidate in candidates:
        try:
            return catalog.gpu(candidate)
        except (CatalogError, KeyError):
            continue
    return None


def bf16_reference(gpu: GPU) -> tuple[float | None, str | None]:
    """(dense bf16 peak TFLOP/s, its source) from the catalog, None where the catalog has no bf16
    figure."""
    if not gpu.supports("bf16"):
        return None, None
    source = gpu.sources.get("bf16_tflops") or next(iter(gpu.sources.values()), None)
    label = f"{gpu.name} dense bf16 peak (catalog{': ' + source if source else ''})"
    return gpu.peak_tflops("bf16"), label
