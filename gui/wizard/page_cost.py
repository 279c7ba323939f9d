"""Time & cost page: providers and pricing modes side by side, spot risk, storage and idle costs,
buy vs rent.

Every price shows the date it was seen. A price override and a discount can be kept for later plans:
they are written to the user's catalog override files (``core.catalog.save_user_overrides``).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QSplitter

from core.catalog import CatalogError, default_user_dir, load_catalog, save_user_overrides
from core.planner import PricingMode
from core.units import fmt_bytes, fmt_gpu_hours, fmt_hours, fmt_usd
from gui.charts import ChartView
from gui.forms import make_error_label, make_hint_label
from gui.table_model import Row, RowsModel, make_table
from gui.wizard import choices
from gui.wizard.cost_text import headline_text, priced_option_text, provider_row
from gui.wizard.fields import CheckField, ComboField, FieldBox, MemberCheckField, TextField
from gui.wizard.page import PlanPage, make_band_label, show_band
from gui.wizard.state import PlanState
from gui.wizard.step_view import StepBreakdownView

# the planner loads with the first plan, on a worker: not at start (docs/performance.md)
if TYPE_CHECKING:
    from core.planner import Analysis

TIER_HINTS = {
    "local_nvme": "fastest writes; lost when the instance is terminated",
    "parallel_fs": "Lustre/WEKA-class: shared by every node, billed per provisioned GB",
    "block": "network disk (EBS, PD): survives the instance",
    "nfs": "shared file system (EFS, Filestore): easy, slow with many small files",
    "object": "S3/GCS-class: cheapest per GB, billed per request, slow per small file",
}
MODE_HINTS = {
    "on_demand": "pay per hour, stop any time",
    "spot": "spare capacity at a discount; can be taken back, so work since the last checkpoint "
    "is redone",
    "reserved": "committed term (1–3 years) for a lower rate",
}


def _read_json(path: Path, empty: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty


class CostPage(PlanPage):
    prefixes = ("pricing", "assumptions")
    needs_analysis = True

    def __init__(self, state: PlanState) -> None:
        super().__init__(
            state,
            "Time & cost",
            "What the run costs by provider and pricing mode, with the risks "
            "and side costs; every price shows the date it was seen.",
        )
        self.headline = QLabel()
        self.headline.setAccessibleName("Time and cost headline")
        self.headline.setWordWrap(True)
        self.pin(self.headline)
        self.band = make_band_label()
        self.pin(self.band)
        self.priced_elsewhere = QLabel()
        self.priced_elsewhere.setAccessibleName("Best options with a spot or reserved price")
        self.priced_elsewhere.setWordWrap(True)
        self.priced_elsewhere.hide()
        self.pin(self.priced_elsewhere)
        self.step = StepBreakdownView()
        self.body.addWidget(self.step)
        catalog = load_catalog()
        providers = [("", "Cheapest in the catalog")]
        providers += [(p, catalog.provider_info[p].name) for p in catalog.providers()]
        self.provider = ComboField(
            state, "pricing.provider", providers, title="Provider", default=""
        )
        self.mode = ComboField(
            state, "pricing.mode", choices.options(PricingMode, choices.PRICING_MODE), MODE_HINTS
        )
        self.override = TextField(
            state,
            "pricing.usd_per_gpu_hour",
            hint="your negotiated price replaces the catalog's for the chosen mode",
            placeholder="catalog price",
        )
        self.discount = TextField(
            state, "pricing.discount", hint="0.15 = 15% off every listed price"
        )
        self.allow_marketplace = MemberCheckField(
            state,
            "pricing.allow",
            "marketplace",
            "Also price community/marketplace hosts",
            hint="Vast.ai, RunPod Community, Akash: cheaper, hosts vary (on-demand plans)",
        )
        self.allow_auction = MemberCheckField(
            state,
            "pricing.allow",
            "auction",
            "Also price auction/bid offers",
            hint="bid floors such as Mithril's spot auction: a bid, not a sure price (spot plans)",
        )
        tiers = choices.storage_tier_options()
        groups: dict[str, list[FieldBox]] = {
            "Price": [
                self.provider,
                self.mode,
                self.override,
                self.discount,
                self.allow_marketplace,
                self.allow_auction,
            ],
            "Failures, preemption and checkpoints": [
                TextField(
                    state,
                    "assumptions.gpu_mtbf_hours",
                    hint="GPU-hours per job-killing failure, per GPU; "
                    "the job fails N times as often on N GPUs",
                ),
                TextField(
                    state,
                    "assumptions.spot_preemptions_per_hour",
                    hint="how often a spot node is taken back; only spot pricing pays for it",
                ),
                TextField(
                    state,
                    "assumptions.restart_minutes",
                    hint="requeue, reload the checkpoint, warm up",
                ),
                TextField(
                    state,
                    "assumptions.eval_every_steps",
                    hint="0: no evaluation passes; else one pass every this many optimizer steps",
                ),
                TextField(
                    state,
                    "assumptions.eval_tokens",
                    hint="tokens one evaluation pass reads, forward only",
                ),
                ComboField(
                    state,
                    "assumptions.checkpoint_tier",
                    tiers,
                    title="Checkpoint storage",
                    hints=TIER_HINTS,
                ),
                TextField(
                    state,
                    "assumptions.checkpoints_kept",
                    hint="hot copies on the checkpoint storage",
                ),
                CheckField(
                    state,
                    "assumptions.archive_final_checkpoint",
                    hint="keep the last one on object storage after the run",
                ),
            ],
            "Data storage and side costs": [
                ComboField(
                    state, "assumptions.data_tier", tiers, title="Dataset storage", hints=TIER_HINTS
                ),
                TextField(
                    state,
                    "assumptions.storage_months",
                    hint="how long the data and checkpoints are billed",
                ),
                TextField(
                    state,
                    "assumptions.idle_hours",
                    hint="stopped instances still pay for disks and IPs",
                ),
                TextField(
                    state,
                    "assumptions.egress_gb",
                    hint="data leaving the cloud, e.g. the final weights",
                ),
            ],
            "Buy instead of rent": [
                TextField(
                    state, "assumptions.buy.capex_usd_per_gpu", placeholder="catalog street price"
                ),
                TextField(
                    state,
                    "assumptions.buy.utilization",
                    hint="share of the year the owned GPUs train",
                ),
            ],
        }
        for title, fields in groups.items():
            box = QGroupBox(title)
            box.setAccessibleName(title)
            grid = QGridLayout(box)
            for i, field in enumerate(fields):
                grid.addWidget(self.add_field(field), i // 4, i % 4)
            for column in range(4):
                grid.setColumnStretch(column, 1)
            self.body.addWidget(box)
        keep = QHBoxLayout()
        self.keep_price = QPushButton("Remember this price")
        self.keep_price.setAccessibleName("Remember this price")
        self.keep_price.clicked.connect(self.remember_price)
        self.keep_discount = QPushButton("Remember discount for this provider")
        self.keep_discount.setAccessibleName("Remember discount for this provider")
        self.keep_discount.clicked.connect(self.remember_discount)
        keep.addWidget(self.keep_price)
        keep.addWidget(self.keep_discount)
        keep.addWidget(
            make_hint_label("Remember", "kept in your catalog overrides for every later plan"), 1
        )
        self.body.addLayout(keep)
        self.keep_message = QLabel()
        self.keep_message.setAccessibleName("Remembered prices message")
        self.keep_message.setWordWrap(True)
        self.body.addWidget(self.keep_message)
        self.keep_error = make_error_label("Remember price")
        self.body.addWidget(self.keep_error)
        self.providers = RowsModel(
            [
                "provider",
                "on-demand $/GPU-h",
                "spot $/GPU-h",
                "reserved $/GPU-h",
                "on-demand compute",
                "spot compute",
                "reserved compute",
            ],
            self,
        )
        self.providers_view = make_table(self.providers, "Prices by provider")
        self.providers_view.setMinimumHeight(200)
        self.body.addWidget(self.providers_view, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.provider_chart = ChartView("Cost by provider chart")
        self.break_even = ChartView("Buy versus rent chart")
        split.addWidget(self.provider_chart)
        split.addWidget(self.break_even)
        split.setMinimumHeight(320)
        self.body.addWidget(split, 2)
        self.spot = QLabel()
        self.spot.setAccessibleName("Spot risk")
        self.spot.setWordWrap(True)
        self.body.addWidget(self.spot)
        self.items = RowsModel(["item", "USD", "price date", "detail", "source"], self)
        self.items_view = make_table(self.items, "Cost items", sortable=False)
        self.items_view.setMinimumHeight(170)
        self.body.addWidget(self.items_view, 1)
        self.buy = QLabel()
        self.buy.setAccessibleName("Buy versus rent")
        self.buy.setWordWrap(True)
        self.body.addWidget(self.buy)

    # ---- remembering prices

    def _user_dir(self) -> Path:
        return load_catalog().user_dir or default_user_dir()

    def _say(self, message: str = "", error: str = "") -> None:
        self.keep_message.setText(message)
        self.keep_error.setText(error)
        self.keep_error.setVisible(bool(error))

    def remember_price(self) -> None:
        """Write the override as a user price row for this GPU and provider, dated today."""
        request, analysis = self.state.request, self.state.analysis
        if request is None or analysis is None or request.pricing.usd_per_gpu_hour is None:
            self._say(error="enter a valid price override (USD per GPU-hour) first")
            return
        gpu = analysis.result.hardware.gpu
        mode = request.pricing.mode.value
        provider = request.pricing.provider or "my-price"
        row = {
            "provider": provider,
            "instance": "user price",
            "gpu": gpu,
            mode: request.pricing.usd_per_gpu_hour,
            "date": dt.date.today().isoformat(),
            "source": "entered in tuneplan",
        }
        folder = self._user_dir()
        rows = _read_json(folder / "prices.json", [])
        rows = [
            r
            for r in rows
            if isinstance(r, dict)
            and not (
                r.get("provider") == provider
                and r.get("gpu") == gpu
                and r.get("instance") == "user price"
            )
        ]
        try:
            save_user_overrides(folder, prices=[*rows, row])
        except CatalogError as exc:
            self._say(error=str(exc))
            return
        self._say(
            f"Kept ${request.pricing.usd_per_gpu_hour:,.2f}/GPU-h {mode.replace('_', '-')} for "
            f"{gpu} at {provider} in {folder / 'prices.json'}."
        )
        self.state.recompute_now()

    def remember_discount(self) -> None:
        """Write the discount for the chosen provider; the request's own discount is then cleared
        (not twice)."""
        request = self.state.request
        if request is None or not request.pricing.provider or not request.pricing.discount:
            self._say(error="choose a provider and enter a discount first")
            return
        folder = self._user_dir()
        discounts = _read_json(folder / "discounts.json", {})
        if not isinstance(discounts, dict):
            discounts = {}
        discounts[request.pricing.provider] = request.pricing.discount
        try:
            save_user_overrides(folder, discounts=discounts)
        except CatalogError as exc:
            self._say(error=str(exc))
            return
        self._say(
            f"Kept a {request.pricing.discount:.0%} discount for {request.pricing.provider} in "
            f"{folder / 'discounts.json'}; it now applies to the catalog prices."
        )
        self.state.set("pricing.discount", None)
        self.discount.refresh()

    # ---- figures

    def show_analysis(self, analysis: Analysis) -> None:
        # with the plan that arrived
        from core.planner import break_even_chart, provider_chart, seconds

        r, f = analysis.result, analysis.figures
        c, ck = r.cost, r.checkpoint
        self.headline.setText(headline_text(r))
        show_band(self.band, r)
        lines = [
            priced_option_text(o, r.hardware.gpu, r.memory.fits) for o in f.priced_alternatives
        ]
        self.priced_elsewhere.setText("\n".join(lines))
        self.priced_elsewhere.setVisible(bool(lines))
        from core.planner import wall_time_parts  # with the plan, as the step view's own imports

        self.step.show_compute(r.compute, wall_time_parts(r))
        self.providers.set_rows(
            [provider_row(p, c.provider, r.hardware.gpus_per_node) for p in f.providers]
        )
        self.providers_view.setVisible(not c.unpriced_reason)  # what cannot run is priced nowhere
        if c.unpriced_reason:
            self.provider_chart.clear_chart("no cost: the plan does not fit")
        elif f.providers:
            self.provider_chart.show_bar(provider_chart(f))
        else:
            self.provider_chart.clear_chart("no provider rents this GPU in the catalog")
        if c.unpriced_reason:
            self.spot.setText(
                f"Checkpoint {fmt_bytes(ck.size_bytes)} every {ck.interval_minutes:.0f} min; job "
                f"MTBF {fmt_hours(ck.job_mtbf_hours)}."
            )
        elif c.compute_usd.spot is not None:
            self.spot.setText(
                f"Spot: {fmt_usd(c.compute_usd.spot)} including about "
                f"{fmt_gpu_hours(c.spot_expected_lost_hours or 0)} GPU-hours of lost work and "
                f"restarts; checkpoint {fmt_bytes(ck.size_bytes)} every {ck.interval_minutes:.0f} "
                f"min ({seconds(ck.write_seconds)} per write); job MTBF "
                f"{fmt_hours(ck.job_mtbf_hours)}."
            )
        else:
            self.spot.setText(
                f"No spot price for {r.hardware.gpu} here. Checkpoint {fmt_bytes(ck.size_bytes)} "
                f"every {ck.interval_minutes:.0f} min; job MTBF {fmt_hours(ck.job_mtbf_hours)}."
            )
        self.items.set_rows(
            [
                Row(
                    [
                        i.item,
                        fmt_usd(i.usd),
                        i.date or ("undated" if i.source else "—"),
                        i.detail,
                        i.source or "—",
                    ],
                    tooltips=[
                        i.item,
                        "",
                        i.date or "the source gives no date",
                        i.detail,
                        i.source or "",
                    ],
                )
                for i in c.items
            ]
        )
        bvr = c.buy_vs_rent
        if f.break_even is not None and bvr is not None:
            self.break_even.show_line(break_even_chart(f.break_even))
            be = (
                f"owning pays off above {bvr.break_even_utilization:.0%} utilisation"
                if bvr.break_even_utilization is not None
                else "renting is cheaper even at full utilisation"
            )
            self.buy.setText(
                f"Buy vs rent: owned ${bvr.usd_per_gpu_hour_owned:,.2f} per used GPU-hour at "
                f"{r.request.assumptions.buy.utilization:.0%} utilisation (capex "
                f"${f.break_even.capex_usd_per_gpu:,.0f}/GPU, {f.break_even.capex_source}); {be}."
            )
        else:
            self.break_even.clear_chart(
                "no cost: the plan does not fit"
                if c.unpriced_reason
                else "no purchase price for this GPU"
            )
            self.buy.setText("")

    def clear_analysis(self) -> None:
        self.headline.setText("")
        show_band(self.band, None)
        self.priced_elsewhere.setText("")
        self.priced_elsewhere.hide()
        self.step.clear()
        self.providers.set_rows([])
        self.items.set_rows([])
        self.spot.setText("")
        self.buy.setText("")
        self.provider_chart.clear_chart("no plan")
        self.break_even.clear_chart("no plan")
