"""The planning domain: a PlanRequest (request.py) in, a PlanResult (result.py) out, from pure
functions over the catalog.

Grouped by question: `model/` (the model and what each GPU holds), `speed/` (how long a step takes),
`money/` (what it costs and what can go wrong), `choose/` (which hardware to pick); `plan.py`
composes them; `analysis.py` (with `gpu_memory.py` and `search_figures.py`), `headline.py`,
`likely_ranges.py`, `report_time.py`, `report_charts.py` and `report.py` build what the window and
the PDF show. The plan library is persistence, in core/library/.

This is the domain's front door: the window and the command line import the planner from here only
(an import contract in pyproject.toml). It is lazy (core/__init__.py): `tuneplan plan` and the
window's start-up load the report builder and the analysis only when they are used. ``make_plan`` is
``core.planner.plan.plan`` under a name of its own, because ``plan`` is the module's name in this
package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import lazy_names

if TYPE_CHECKING:
    from core.catalog.records import StorageTier
    from core.planner.analysis import Analysis, ProviderCost, analyse
    from core.planner.choices import OVERRIDABLE
    from core.planner.choose.search import shown_candidates
    from core.planner.gpu_memory import GpuMemory
    from core.planner.headline import MODE_COSTS, conclusion, cost_range_text, hardware_label
    from core.planner.likely_ranges import (
        band_notes,
        band_source,
        likely_cost,
        likely_hours,
        likely_tokens_per_second,
        shown_key_figures,
    )
    from core.planner.model.params import Architecture
    from core.planner.money.plan_cost import offer_place
    from core.planner.money.sanity import not_fit_text, seen_phrase
    from core.planner.money.storage_tiers import tier_figures
    from core.planner.plan import PlanError
    from core.planner.plan import plan as make_plan
    from core.planner.plan_assumptions import grown_batch_warning
    from core.planner.report import build_report, seconds
    from core.planner.report_charts import (
        break_even_chart,
        candidate_label,
        memory_chart,
        pareto_chart,
        provider_chart,
        scaling_chart,
        sharding_text,
    )
    from core.planner.report_time import (
        STEP_HEADER,
        STEP_PARTS,
        measured_step_text,
        share_text,
        step_rows,
        step_seconds,
        wall_time_parts,
    )
    from core.planner.request import (
        Attention,
        CrossEntropy,
        Framework,
        Interconnect,
        LaunchSpec,
        Method,
        Offload,
        Optimizer,
        PlanRequest,
        Precision,
        PricingMode,
        Sharding,
        TrainingSpec,
    )
    from core.planner.request_file import RequestFileError, read_request_file, request_of
    from core.planner.result import Candidate, ComputeResult, CostResult, PlanResult
    from core.planner.search_figures import PricedOption
    from core.planner.speed.frameworks import PROFILES
    from core.planner.timed_layer import LayerSpec, layer_spec

# Each public name's module, the light ones first; the face imports one the first time one of its
# names is read.
_MODULES: dict[str, tuple[str, ...]] = {
    "core.catalog.records": ("StorageTier",),
    "core.planner.request": (
        "Attention",
        "CrossEntropy",
        "Framework",
        "Interconnect",
        "LaunchSpec",
        "Method",
        "Offload",
        "Optimizer",
        "PlanRequest",
        "Precision",
        "PricingMode",
        "Sharding",
        "TrainingSpec",
    ),
    "core.planner.result": ("Candidate", "ComputeResult", "CostResult", "PlanResult"),
    "core.planner.choices": ("OVERRIDABLE",),
    "core.planner.model.params": ("Architecture",),
    "core.planner.speed.frameworks": ("PROFILES",),
    "core.planner.money.plan_cost": ("offer_place",),
    "core.planner.money.sanity": ("not_fit_text", "seen_phrase"),
    "core.planner.money.storage_tiers": ("tier_figures",),
    "core.planner.choose.search": ("shown_candidates",),
    "core.planner.plan": ("PlanError",),
    "core.planner.plan_assumptions": ("grown_batch_warning",),
    "core.planner.request_file": ("RequestFileError", "read_request_file", "request_of"),
    "core.planner.timed_layer": ("LayerSpec", "layer_spec"),
    "core.planner.headline": ("MODE_COSTS", "conclusion", "cost_range_text", "hardware_label"),
    "core.planner.gpu_memory": ("GpuMemory",),
    "core.planner.search_figures": ("PricedOption",),
    "core.planner.analysis": ("Analysis", "ProviderCost", "analyse"),
    "core.planner.likely_ranges": (
        "band_notes",
        "band_source",
        "likely_cost",
        "likely_hours",
        "likely_tokens_per_second",
        "shown_key_figures",
    ),
    "core.planner.report_time": (
        "STEP_HEADER",
        "STEP_PARTS",
        "measured_step_text",
        "share_text",
        "step_rows",
        "step_seconds",
        "wall_time_parts",
    ),
    "core.planner.report_charts": (
        "break_even_chart",
        "candidate_label",
        "memory_chart",
        "pareto_chart",
        "provider_chart",
        "scaling_chart",
        "sharding_text",
    ),
    "core.planner.report": ("build_report", "seconds"),
}
_TABLE: dict[str, str | tuple[str, str]] = {
    name: module for module, names in _MODULES.items() for name in names
}
_TABLE["make_plan"] = ("core.planner.plan", "plan")

__all__ = [
    "MODE_COSTS",
    "OVERRIDABLE",
    "PROFILES",
    "STEP_HEADER",
    "STEP_PARTS",
    "Analysis",
    "Architecture",
    "Attention",
    "Candidate",
    "ComputeResult",
    "CostResult",
    "CrossEntropy",
    "Framework",
    "GpuMemory",
    "Interconnect",
    "LaunchSpec",
    "LayerSpec",
    "Method",
    "Offload",
    "Optimizer",
    "PlanError",
    "PlanRequest",
    "PlanResult",
    "Precision",
    "PricedOption",
    "PricingMode",
    "ProviderCost",
    "RequestFileError",
    "Sharding",
    "StorageTier",
    "TrainingSpec",
    "analyse",
    "band_notes",
    "band_source",
    "break_even_chart",
    "build_report",
    "candidate_label",
    "conclusion",
    "cost_range_text",
    "grown_batch_warning",
    "hardware_label",
    "layer_spec",
    "likely_cost",
    "likely_hours",
    "likely_tokens_per_second",
    "make_plan",
    "measured_step_text",
    "memory_chart",
    "not_fit_text",
    "offer_place",
    "pareto_chart",
    "provider_chart",
    "read_request_file",
    "request_of",
    "scaling_chart",
    "seconds",
    "seen_phrase",
    "sharding_text",
    "share_text",
    "shown_candidates",
    "shown_key_figures",
    "step_rows",
    "step_seconds",
    "tier_figures",
    "wall_time_parts",
]
__getattr__ = lazy_names(__name__, _TABLE)
