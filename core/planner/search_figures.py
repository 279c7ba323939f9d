"""What the hardware search says beside the plan: its candidate list, why it changed a setting the
user chose, and the cheapest configuration for each pricing mode the plan has no price in.

These three answers ask the search (core/planner/choose/search.py) again with the request varied;
they are apart from the analysis's own figures (core/planner/analysis.py), which describe the
planned configuration itself.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict

from pydantic import BaseModel

from core.catalog import PRICING_MODES, Catalog, CatalogError
from core.planner.choices import OVERRIDABLE
from core.planner.choose import search
from core.planner.money import pricing
from core.planner.plan import PlanError, on_candidate, plan, resolve_model
from core.planner.request import HardwareSpec, PlanRequest, PricingMode
from core.planner.result import Candidate, PlanResult
from core.units import fmt_hours, fmt_usd


class PricedOption(BaseModel):
    """The configuration the search picks when ranking by a pricing mode's price, planned in that
    mode."""

    mode: str
    hardware: HardwareSpec
    provider: str | None
    hours: float
    compute_usd: float
    price_date: str | None


def search_candidates(
    request: PlanRequest, result: PlanResult, catalog: Catalog
) -> tuple[list[Candidate], str | None]:
    """The search's list: of the whole catalog when it chose the hardware, else of the GPU the user
    chose (other counts, nodes and sharding of it), ranked by time when that GPU has no price in the
    chosen mode."""
    if result.candidates:
        return result.candidates, None
    gpu = result.hardware.gpu
    one = request.model_copy(
        update={"hardware": None, "search": request.search.model_copy(update={"gpus": [gpu]})}
    )
    mode, provider = request.pricing.mode.value, request.pricing.provider
    note = None
    try:
        allow = [a.value for a in request.pricing.allow]
        if (
            request.pricing.usd_per_gpu_hour is None
            and pricing.any_offer(catalog, gpu, mode, provider=provider, allow=allow) is None
        ):
            one = one.model_copy(
                update={"search": one.search.model_copy(update={"objective": "time"})}
            )
            note = (
                f"no {mode.replace('_', '-')} price for {gpu}"
                + (f" at {provider}" if provider else "")
                + ": its configurations are ranked by time"
            )
        arch, _ = resolve_model(one.model, catalog)
        found = search.search(arch, one, catalog)
    except (PlanError, CatalogError) as exc:
        return [], str(exc)
    return found.candidates, found.reason or note


def _override_sentence(
    name: str,
    wanted: object,
    got: object,
    found: search.SearchOutcome,
    best: Candidate | None,
    objective: str,
) -> str:
    """'the search turned gradient checkpointing on: without it this does not fit', or what keeping
    it costs."""
    if name == "gradient_checkpointing":
        change = f"the search turned gradient checkpointing {'on' if got else 'off'}"
        instead = "with it on" if wanted else "without it"
    elif name == "micro_batch_size":
        change, instead = f"the search chose micro-batch {got}", f"at micro-batch {wanted}"
    else:
        change, instead = f"the search chose sharding {got}", f"with sharding {wanted}"
    kept = found.best
    if kept is None:
        if found.candidates:
            why = "no configuration that fits has a price"
        elif found.reason and "deadline" in found.reason:
            why = "nothing finishes within the deadline"
        else:
            why = "this does not fit"
        return f"{change}: {instead} {why}"
    if (
        best is not None
        and objective != "time"
        and fmt_usd(kept.cost_usd) != fmt_usd(best.cost_usd)
    ):
        return (
            f"{change}: {instead} the best configuration costs {fmt_usd(kept.cost_usd)} instead of "
            f"{fmt_usd(best.cost_usd)}"
        )
    if best is not None and fmt_hours(kept.hours) != fmt_hours(best.hours):
        return (
            f"{change}: {instead} the best configuration takes {fmt_hours(kept.hours)} instead of "
            f"{fmt_hours(best.hours)}"
        )
    return f"{change}: {instead} the best configuration needs more GPUs"


def search_overrides(request: PlanRequest, result: PlanResult, catalog: Catalog) -> dict[str, str]:
    """The training settings the request sets and the search changed, by path, each with the reason.

    Only settings present in the request count (pydantic's ``model_fields_set``): a default the user
    never touched is the search's to choose.
    """
    if request.hardware is not None:
        return {}
    chosen, planned = request.training, result.request.training
    changed = [
        n
        for n in OVERRIDABLE
        if n in chosen.model_fields_set and getattr(chosen, n) != getattr(planned, n)
    ]
    if not changed:
        return {}
    arch, _ = resolve_model(request.model, catalog)
    best = result.candidates[0] if result.candidates else None
    out = {}
    for name in changed:
        found = search.search(arch, request, catalog, keep=frozenset({name}))
        wanted, got = getattr(chosen, name), getattr(planned, name)
        out[f"training.{name}"] = _override_sentence(
            name,
            getattr(wanted, "value", wanted),
            getattr(got, "value", got),
            found,
            best,
            request.search.objective,
        )
    return out


_CHEAPEST_LOCK = threading.Lock()
_CHEAPEST: OrderedDict[str, tuple[Catalog, Candidate | None]] = OrderedDict()
_CHEAPEST_KEPT = 64


def _cheapest_in(mode: str, request: PlanRequest, catalog: Catalog) -> Candidate | None:
    """The search's pick when ranked by `mode`'s price. It does not depend on the dataset size
    (every configuration trains the same tokens at its own price per GPU-hour) unless a deadline
    ranks, so typing a token count reuses it."""
    key = json.dumps(
        [
            mode,
            request.model_dump(
                mode="json",
                exclude={"data": {"tokens", "epochs"}}
                if request.search.objective != "cost_under_deadline"
                else None,
            ),
        ],
        sort_keys=True,
    )
    with _CHEAPEST_LOCK:
        kept = _CHEAPEST.get(key)
    if kept is not None and kept[0] is catalog:
        return kept[1]
    arch, _ = resolve_model(request.model, catalog)
    best = search.search(arch, request, catalog).best
    with _CHEAPEST_LOCK:
        _CHEAPEST[key] = (catalog, best)
        while len(_CHEAPEST) > _CHEAPEST_KEPT:
            _CHEAPEST.popitem(last=False)
    return best


def priced_alternatives(
    request: PlanRequest, result: PlanResult, catalog: Catalog, today: dt.date | None = None
) -> list[PricedOption]:
    """For each pricing mode the plan has no price in (no spot price for its GPU, say), the cheapest
    configuration of the catalog that has one, planned in that mode: the plan's own cost page would
    otherwise say only "—". A plan that does not fit has no cost in any mode for want of memory, not
    of a price: it gets the cheapest configuration that fits in its own mode, what would run."""
    out = []
    objective = (
        "cost_under_deadline" if request.search.objective == "cost_under_deadline" else "cost"
    )
    for mode in PRICING_MODES if result.memory.fits else (request.pricing.mode.value,):
        if getattr(result.cost.compute_usd, mode) is not None:
            continue
        priced = request.model_copy(
            update={
                "hardware": None,
                "pricing": request.pricing.model_copy(
                    update={"mode": PricingMode(mode), "usd_per_gpu_hour": None}
                ),
                "search": request.search.model_copy(update={"objective": objective, "gpus": None}),
            }
        )
        try:
            best = _cheapest_in(mode, priced, catalog)
            if best is None:
                continue
            r = plan(on_candidate(priced, best), catalog, today)
        except (PlanError, CatalogError, ValueError):
            continue
        usd = getattr(r.cost.compute_usd, mode)
        if usd is not None:
            out.append(
                PricedOption(
                    mode=mode,
                    hardware=r.hardware,
                    provider=r.cost.provider,
                    hours=r.time.hours,
                    compute_usd=usd,
                    price_date=r.cost.price_date,
                )
            )
    return out
