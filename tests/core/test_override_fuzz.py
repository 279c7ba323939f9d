"""Generated override files: every one loads, within the feeds' bounds, or is one sentence naming
the file.

Hypothesis writes one of the user's catalog files (prices.json, gpus.json, discounts.json in the
config folder, refreshed_prices.json in the data folder) into a fresh real folder and loads the
catalog as every plan does (core.catalog.load_catalog). The file is raw text or bytes, deep nesting,
or JSON shaped like the real file with hostile values in its fields (NaN, ±inf, 1e308, 0, a
5,000-digit number, 10**9 GPUs, a string with a newline, a list, an object). What must hold for
every one:

- the load returns a catalog, or raises CatalogError whose message is one line naming the file;
  never any other exception (no RecursionError, OverflowError, ValueError, MemoryError);
- a catalog it returns prices every user or refreshed row from $0.01 to $1,000 per GPU-hour, 1 to 64
  GPUs per instance, and every GPU with a finite memory of at most 10 TB.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.catalog import CatalogError, load_catalog
from core.catalog.feeds.screen import CEILING_USD, FLOOR_USD, MOST_GPUS

FILES = ("prices.json", "gpus.json", "discounts.json", "refreshed_prices.json")
HOSTILE: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    -1.0,
    0,
    0.5,
    10**9,
    2**31,
    10**400,
    "1e9",
    "a\nb",
    "\x1b[31m",
    "x" * 5000,
    [],
    {},
    None,
    True,
]
sane = st.one_of(st.floats(0.5, 8.0), st.sampled_from([1, 8, 80]))  # often a file that loads
numbers = st.one_of(sane, sane, st.sampled_from(HOSTILE), st.floats(), st.integers())
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
PRICE_NAMES = {
    "provider": st.sampled_from(["lambda", "aws", "mycloud", "", 5]),
    "instance": st.sampled_from(["mine", "p5.48xlarge", "a\nb"]),
    "gpu": st.sampled_from(["H100-SXM", "a100", "nope"]),
}
PRICE_KEYS = {
    "pricing_model": st.sampled_from(["on_demand", "spot", "reserved", "hourly"]),
    "usd_per_gpu_hour": numbers,
    "on_demand": numbers,
    "spot": numbers,
    "gpus_per_instance": numbers,
    "gpu_counts": st.lists(numbers, max_size=3),
    "source": st.just("mine"),
    "provider_name": st.just("Mine"),
    "date": st.sampled_from(["2026-11-01", "soon", None]),
}
GPU_NAMES = {"id": st.sampled_from(["MY-GPU", "H100", "a100", ""])}
GPU_KEYS = {
    "memory_gb": numbers,
    "bf16_tflops": numbers,
    "intra_node_gbs": numbers,
    "tdp_w": numbers,
    "pcie_gen": numbers,
    "release_year": numbers,
    "street_price_usd": st.lists(numbers, max_size=3),
}


VALID_PRICE = {
    "provider": "lambda",
    "instance": "mine",
    "gpu": "H100-SXM",
    "pricing_model": "on_demand",
    "usd_per_gpu_hour": 2.5,
    "source": "mine",
    "provider_name": "Lambda",
}
VALID_GPU = {"id": "MY-GPU", "memory_gb": 48, "bf16_tflops": 180}


def _near(
    valid: dict[str, Any], keys: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid entry with up to two of its fields changed: deep enough to reach every bound."""
    return st.fixed_dictionaries({}, optional=keys).map(
        lambda extra: {**valid, **dict(list(extra.items())[:2])}
    )


def _entries(
    names: dict[str, st.SearchStrategy[Any]], keys: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Entries with their names (which row is which) and any of the other fields."""
    valid = VALID_GPU if "id" in names else VALID_PRICE
    entry = st.one_of(st.fixed_dictionaries(names, optional=keys), _near(valid, {**names, **keys}))
    return st.lists(entry, min_size=1, max_size=3)


def _document(name: str) -> st.SearchStrategy[Any]:
    shaped: st.SearchStrategy[Any]
    if name == "prices.json":
        shaped = _entries(PRICE_NAMES, PRICE_KEYS)
    elif name == "gpus.json":
        shaped = _entries(GPU_NAMES, GPU_KEYS)
    elif name == "discounts.json":
        shaped = st.dictionaries(
            st.sampled_from(["aws", "lambda", "awz"]),
            st.one_of(numbers, st.floats(0, 0.5)),
            max_size=2,
        )
    else:
        shaped = st.fixed_dictionaries(
            {
                "format": st.sampled_from([1, 1, 1, 2, "1"]),
                "sources": st.just([]),
                "rows": _entries(PRICE_NAMES, PRICE_KEYS),
            }
        )
    return st.one_of(shaped, json_values)


def _text(document: Any) -> str:
    try:
        return json.dumps(document)  # NaN and Infinity written as Python writes them: not JSON
    except ValueError:  # an integer of more digits than Python writes
        return "[" + "9" * 5000 + "]"


@st.composite
def override_files(draw: st.DrawFn) -> tuple[str, bytes]:
    name = draw(st.sampled_from(FILES))
    kind = draw(st.sampled_from(["shaped", "shaped", "shaped", "deep", "bytes"]))
    if kind == "deep":
        depth = draw(st.sampled_from([65, 1000, 100_000]))
        return name, ("[" * depth + "]" * depth).encode()
    if kind == "bytes":
        return name, draw(st.binary(max_size=64))
    return name, _text(draw(_document(name))).encode("utf-8")


def _within_bounds(folder: Path) -> None:
    catalog = load_catalog(folder)
    for price in catalog.prices:
        if (
            price.origin != "shipped"
            and price.user_discount is None
            and price.reserved_basis is None
        ):
            assert FLOOR_USD <= price.usd_per_gpu_hour <= CEILING_USD, price
            assert all(1 <= n <= MOST_GPUS for n in (price.gpus_per_instance, *price.gpu_counts)), (
                price
            )
    for gpu in catalog.gpus.values():
        assert math.isfinite(gpu.memory_bytes) and 0 < gpu.memory_bytes <= 10_000e9, gpu


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(override_files())
def test_every_override_file_loads_within_bounds_or_is_one_sentence_naming_it(
    case: tuple[str, bytes],
) -> None:
    name, content = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        try:
            _within_bounds(Path(folder))
        except CatalogError as exc:
            message = str(exc)
            assert str(path) in message and "\n" not in message, message
