"""Ranking the configurations a search found: the objective, the groups shown, the Pareto front, the
reasons.

search.py evaluates the grid and hands over every row that fits and runs (`Rows`); this module
orders them on what the plan will report (expected wall hours with checkpoint writes, lost work and
restarts, Daly 2006), keeps the best row of each GPU × count × nodes × sharding × layout, marks the
time/cost Pareto front, and writes each row's reason. Kept apart from the grid so that each reads in
one sitting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from core.planner.model import states
from core.planner.model.params import Architecture
from core.planner.money import reliability, storage
from core.planner.money.sanity import HEADROOM_FRACTION
from core.planner.request import PlanRequest, Sharding
from core.planner.result import Candidate
from core.units import fmt_hours, fmt_usd

SHOWN = 25


@dataclass
class SearchOutcome:
    candidates: list[Candidate] = field(default_factory=list)
    best: Candidate | None = None
    reason: str | None = None
    evaluated: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Rows:
    """Every configuration that fits, one entry per row: indices into the search's axes and its
    figures."""

    gi: np.ndarray  # GPU index into Table.ids
    gp: np.ndarray  # GPUs per node
    nd: np.ndarray  # nodes
    m: np.ndarray  # micro-batch
    sh: np.ndarray  # index into the shardings
    ck: np.ndarray  # index into the checkpointing choices
    tps: np.ndarray
    pps: np.ndarray
    hours: np.ndarray
    cost: np.ndarray
    mem: np.ndarray
    eff: np.ndarray

    @staticmethod
    def concatenate(parts: list[Rows]) -> Rows:
        return Rows(
            **{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Rows)}
        )


@dataclass(frozen=True)
class Table:
    """What the reasons and candidates need of each GPU: its id, memory and the instance a node is
    priced as ([GPU][column], one column per entry of `gpus_per_node`, the search's axis)."""

    ids: list[str]
    memory: np.ndarray
    billed: list[list[int | None]]
    instance: list[list[str | None]]
    provider: list[list[str | None]]
    gpus_per_node: tuple[int, ...]
    # [GPU][column]: the offer's price is flagged as an outlier by the plan
    outlier: np.ndarray | None = None

    def column(self, gpus_per_node: np.integer | int) -> int:
        return self.gpus_per_node.index(int(gpus_per_node))


def pareto_mask(hours: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """True where no other point is at least as fast and as cheap and strictly better in one."""
    order = np.lexsort((cost, hours))
    mask = np.zeros(len(hours), dtype=bool)
    best_cost = np.inf
    for i in order:
        if cost[i] < best_cost:
            mask[i] = True
            best_cost = cost[i]
    return mask


def tight_rows(table: Table, rows: Rows) -> np.ndarray:
    """Rows whose memory per GPU leaves less than the sanity layer's headroom free
    (sanity.HEADROOM_FRACTION)."""
    return rows.mem > (1 - HEADROOM_FRACTION) * table.memory[rows.gi]


def _with_checkpoints(
    arch: Architecture,
    request: PlanRequest,
    solve_hours: np.ndarray,
    gpus: np.ndarray,
    writers: np.ndarray,
) -> np.ndarray:
    """Expected wall hours of each row (Daly 2006), as plan() computes them for the chosen
    configuration."""
    a, t = request.assumptions, request.training
    write_s = storage.checkpoint_write_seconds(
        states.checkpoint_bytes(arch, t), a.checkpoint_tier, writers
    )
    m_s = reliability.job_mtbf_hours(a.gpu_mtbf_hours, gpus) * reliability.SECONDS_PER_HOUR
    tau = reliability.optimal_interval_s(write_s, m_s, solve_hours)
    return reliability.expected_wall_hours(solve_hours, tau, write_s, a.restart_minutes * 60, m_s)


def _objective_key(
    request: PlanRequest, hours: np.ndarray, ranking_cost: np.ndarray, priced: np.ndarray
) -> tuple[np.ndarray | None, list[str], str | None]:
    """(the sort key, warnings, or the reason nothing qualifies) for the request's objective and
    limits."""
    objective, deadline = request.search.objective, request.search.deadline_hours
    if objective == "time":
        key = hours
    elif objective == "cost_under_deadline" and deadline:
        late = hours > deadline
        if late.all():
            return (
                None,
                [],
                (
                    f"search.deadline_hours {deadline:g} h cannot be met: the fastest "
                    f"configuration that fits takes {hours.min():.1f} h"
                ),
            )
        key = np.where(late, np.inf, ranking_cost)
    else:
        key = np.where(priced, ranking_cost, np.inf)
    warnings: list[str] = []
    longest = request.search.longest_hours
    if longest and not (objective == "cost_under_deadline" and deadline):
        # Rank honestly: a plan longer than the longest run asked for is no answer while a shorter
        # one fits.
        too_long = hours > longest
        if too_long.all():
            warnings.append(
                f"no configuration finishes within {longest / 24:g} days (search.longest_hours "
                f"{longest:g}); showing the {'fastest' if objective == 'time' else 'cheapest'} "
                "that fits"
            )
        else:
            key = np.where(too_long, np.inf, key)
    return key, warnings, None


def outlier_rows(table: Table, rows: Rows) -> np.ndarray:
    """Rows priced by an offer the plan's sanity checks would flag as a price outlier
    (sanity.is_outlier)."""
    if table.outlier is None:
        return np.zeros(len(rows.gi), dtype=bool)
    column_of = np.zeros(max(table.gpus_per_node) + 1, dtype=int)  # GPUs per node -> its column
    column_of[list(table.gpus_per_node)] = np.arange(len(table.gpus_per_node))
    return np.asarray(table.outlier[rows.gi, column_of[rows.gp]], dtype=bool)


def _rank_last(key: np.ndarray, flagged: np.ndarray) -> np.ndarray:
    """The key with `flagged` rows ranked after every usable unflagged one (kept as they are when
    none is)."""
    usable = np.isfinite(key)
    return (
        np.where(flagged, np.inf, key)
        if (usable & flagged).any() and (usable & ~flagged).any()
        else key
    )


def _avoid_tight(key: np.ndarray, tight: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The key with the rows the sanity layer would warn about for memory headroom ranked last,
    while any row without that warning qualifies: a recommendation must pass its own checks. When
    every qualifying row is tight, the key is kept and a warning says so."""
    usable = np.isfinite(key)
    if not (usable & tight).any():
        return key, []
    if (usable & ~tight).any():
        return np.where(tight, np.inf, key), []
    return key, [
        f"every configuration that fits leaves under {HEADROOM_FRACTION:.0%} of GPU memory free, "
        "so the "
        "pick can run out of memory (fragmentation, a longer sample): raise search.max_gpus, or "
        "shorten data.seq_len"
    ]


def first_of_each(groups: np.ndarray) -> np.ndarray:
    """The ascending indices of the first row of each distinct row of ``groups``, a table of small
    non-negative integers. One integer code per row and a stable sort do what ``np.unique(axis=0,
    return_index=True)`` does in a tenth of its time (it sorts rows as structured records: 16 ms of
    every plan's 40)."""
    if len(groups) == 0:
        return np.zeros(0, dtype=int)
    codes = np.ravel_multi_index(tuple(groups.T), tuple(int(m) + 1 for m in groups.max(axis=0)))
    by_code = np.argsort(codes, kind="stable")
    ordered = codes[by_code]
    starts = np.ones(len(codes), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    return np.sort(by_code[starts])


def _distinct(
    kept: np.ndarray,
    rows: Rows,
    hours: np.ndarray,
    cost: np.ndarray,
    shardings: tuple[Sharding, ...],
) -> tuple[np.ndarray, dict[int, list[Sharding]]]:
    """One row per distinct outcome: rows of the same GPUs, layout, micro-batch and recomputation
    whose memory (whole GB), time and cost read the same (ZeRO-3 and FSDP shard alike) become the
    first of them, the other shardings named as its variants. A table of identical rows hides the
    choices that differ."""
    seen: dict[tuple[object, ...], int] = {}
    variants: dict[int, list[Sharding]] = {}
    out = []
    for i in kept.tolist():
        outcome = (
            rows.gi[i],
            rows.gp[i],
            rows.nd[i],
            rows.tps[i],
            rows.pps[i],
            rows.m[i],
            rows.ck[i],
            round(float(rows.mem[i]) / 1e9),
            fmt_hours(float(hours[i])),
            fmt_usd(float(cost[i])),
        )
        if outcome in seen:
            variants.setdefault(seen[outcome], []).append(shardings[rows.sh[i]])
            continue
        seen[outcome] = i
        out.append(i)
    return np.array(out, dtype=int), variants


def rank(
    arch: Architecture,
    request: PlanRequest,
    table: Table,
    rows: Rows,
    shardings: tuple[Sharding, ...],
    checkpointing: tuple[bool | str, ...],
    evaluated: int,
) -> SearchOutcome:
    """Order the rows on the request's objective and build the candidates shown."""
    t = request.training
    # Rank on what the plan will report: checkpoint writes, lost work and restarts included, so the
    # chosen row and the plan agree and no row is compared on a different basis.
    sharded = np.array([s is not Sharding.none for s in shardings])[rows.sh]
    wall = _with_checkpoints(
        arch, request, rows.hours, rows.gp * rows.nd, np.where(sharded, rows.nd, 1)
    )
    cost, hours = rows.cost * wall / rows.hours, wall
    priced = ~np.isnan(cost)
    ranking_cost = np.where(priced, cost, np.inf)
    key, warnings, reason = _objective_key(request, hours, ranking_cost, priced)
    if key is None:
        return SearchOutcome(evaluated=evaluated, reason=reason)
    # A recommendation must pass its own checks: a price the plan would flag as an outlier (a tenth
    # of list inside the feeds' sane band) and then a tight memory headroom rank after every row
    # without that warning.
    key = _rank_last(key, outlier_rows(table, rows))
    key, tight_warnings = _avoid_tight(key, tight_rows(table, rows))
    warnings += tight_warnings
    # Tie-break on fewer GPUs, then fewer nodes: same cost and time, simpler job; then on the
    # request's settings.
    unlike_request = (rows.m != t.micro_batch_size).astype(int)
    unlike_request += np.array([c != t.gradient_checkpointing for c in checkpointing])[rows.ck]
    unlike_request += np.array([s is not t.sharding for s in shardings])[rows.sh]
    unlike_request += (rows.tps != t.tensor_parallel).astype(int) + (
        rows.pps != t.pipeline_parallel
    )
    # Between equal layouts, fewer pipeline stages first: Narayanan et al. 2021 (arXiv:2104.04473
    # §3.3, takeaway #1) use tensor parallelism up to the GPUs of a node and pipeline parallelism
    # only beyond it.
    order = np.lexsort(
        (unlike_request, rows.tps * rows.pps, rows.pps, rows.gp * rows.nd, hours, key)
    )
    groups = np.stack([rows.gi, rows.gp, rows.nd, rows.sh, rows.tps, rows.pps], axis=1)[order]
    # the best row of each GPU × count × nodes × sharding, in rank order
    kept = order[first_of_each(groups)]
    kept, variants = _distinct(kept, rows, hours, cost, shardings)
    front = np.zeros(len(hours), dtype=bool)
    front[kept] = pareto_mask(hours[kept], ranking_cost[kept]) & priced[kept]
    chosen = list(dict.fromkeys([*kept[:SHOWN].tolist(), *np.nonzero(front)[0].tolist()]))
    chosen.sort(key=lambda i: (key[i], hours[i]))
    best_i = int(order[0])
    context = _Reasons(request, table, rows, checkpointing, hours, ranking_cost, front, best_i)
    candidates = []
    for i in chosen:
        col = table.column(rows.gp[i])
        candidates.append(
            Candidate(
                gpu=table.ids[rows.gi[i]],
                gpus_per_node=int(rows.gp[i]),
                nodes=int(rows.nd[i]),
                sharding=shardings[rows.sh[i]],
                method=t.method,
                gradient_checkpointing=checkpointing[rows.ck[i]],
                micro_batch_size=int(rows.m[i]),
                tensor_parallel=int(rows.tps[i]),
                pipeline_parallel=int(rows.pps[i]),
                fits=True,
                memory_per_gpu=int(rows.mem[i]),
                hours=float(hours[i]),
                cost_usd=float(cost[i]) if priced[i] else None,
                provider=table.provider[rows.gi[i]][col],
                pareto=bool(front[i]),
                why=context.why(i),
                instance=table.instance[rows.gi[i]][col],
                billed_gpus=table.billed[rows.gi[i]][col],
                variants=variants.get(i, []),
            )
        )
    ok = bool(np.isfinite(key[best_i]))
    return SearchOutcome(
        candidates=candidates,
        best=candidates[0] if ok else None,
        evaluated=evaluated,
        warnings=warnings,
        reason=None
        if ok
        else "no configuration that fits has a price; set pricing.usd_per_gpu_hour",
    )


@dataclass(frozen=True)
class _Reasons:
    """What one row's 'why' needs to say: the objective met, the front, the layout, memory, billing,
    recompute."""

    request: PlanRequest
    table: Table
    rows: Rows
    checkpointing: tuple[bool | str, ...]
    hours: np.ndarray
    ranking_cost: np.ndarray
    front: np.ndarray
    best_i: int

    def why(self, i: int) -> str:
        r, front = self.rows, self.front
        objective, deadline = self.request.search.objective, self.request.search.deadline_hours
        parts = []
        if i == self.best_i:
            parts.append(
                {
                    "time": "fastest that fits",
                    "cost_under_deadline": f"cheapest within {deadline} h",
                }.get(objective, "cheapest that fits")
            )
        elif front[i]:
            fastest = self.hours[front].min()
            cheapest = self.ranking_cost[front].min()
            parts.append(
                f"Pareto: {self.hours[i] / fastest:.1f}× the fastest time for "
                f"{self.ranking_cost[i] / cheapest:.2f}× the lowest cost"
            )
        else:
            parts.append("fits")
        if r.tps[i] * r.pps[i] > 1:
            parts.append(f"tensor {r.tps[i]} × pipeline {r.pps[i]}")
        capacity = self.table.memory[r.gi[i]]
        tight = r.mem[i] > (1 - HEADROOM_FRACTION) * capacity
        parts.append(
            f"{r.mem[i] / 1e9:.0f} of {capacity / 1e9:.0f} GB"
            + (
                f" (under {HEADROOM_FRACTION:.0%} free: ranked after those with room)"
                if tight
                else ""
            )
        )
        col = self.table.column(r.gp[i])
        pays, instance = self.table.billed[r.gi[i]][col], self.table.instance[r.gi[i]][col]
        if pays is not None and instance is not None and pays > r.gp[i]:
            parts.append(f"pays for {pays} GPUs per node ({instance})")
        if r.gp[i] * r.nd[i] > 1:
            parts.append(f"{r.eff[i]:.0%} scaling")
        if self.checkpointing[r.ck[i]] == "selective":
            parts.append("recomputes the attention core")
        elif self.checkpointing[r.ck[i]]:
            parts.append("recomputes activations")
        return "; ".join(parts)
