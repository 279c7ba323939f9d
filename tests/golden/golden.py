"""What tuneplan prints and writes, recorded once and kept byte for byte (dates excepted).

The golden files under ``tests/golden/expected/`` were recorded before ``core/`` was regrouped by
domain, so that the regrouping (and any later refactoring) provably changes no figure, sentence or
JSON key. They are regenerated only on purpose: ``pytest tests/golden --regen-golden``, and the diff
then reviewed like code.

Each output is produced the way a user gets it: ``tuneplan plan REQUEST --json`` and its text form
through the CLI's ``main``; ``tuneplan catalog``; the plan report document; a probe run replayed
from real tool outputs, stored in a probe history and printed as ``tuneplan probe --json`` prints
it. "Today" is pinned to
:data:`TODAY` so that price ages and report dates do not drift with the calendar.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"
REQUESTS: dict[str, Any] = {
    k: v
    for k, v in json.loads((HERE / "requests.json").read_text()).items()
    if not k.startswith("_")
}
TODAY = dt.date(2026, 12, 1)
# Requests whose text output (no --json) and report document are recorded too: one of each kind.
TEXT_CASES = [
    "readme_lora_8xh100",
    "qlora_70b_one_a100",
    "full_70b_fsdp_16nodes_efa",
    "search_cost",
    "search_deadline",
    "does_not_fit",
    "bad_method",
]
REPORT_CASES = [
    "readme_lora_8xh100",
    "qlora_70b_one_a100",
    "full_7b_zero3_2nodes",
    "search_cost",
    "mfu_forced_buy",
    "runpod_spot_assumptions",
]


class FrozenDate(dt.date):
    """``datetime.date`` whose ``today()`` is :data:`TODAY`."""

    @classmethod
    def today(cls) -> FrozenDate:
        return cls(TODAY.year, TODAY.month, TODAY.day)


@contextlib.contextmanager
def frozen_today() -> Iterator[None]:
    original = dt.date
    dt.date = FrozenDate  # type: ignore[misc]
    try:
        yield
    finally:
        dt.date = original  # type: ignore[misc]


def run_cli(argv: list[str]) -> str:
    """``tuneplan ARGV`` in-process: the exit code, stdout and stderr as one text."""
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), frozen_today():
        code = main(argv)
    return f"exit: {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


def plan_outputs(workdir: Path) -> Iterator[tuple[str, Callable[[], str]]]:
    def plan_cli(name: str, *flags: str) -> str:
        path = workdir / f"{name}.json"
        path.write_text(json.dumps(REQUESTS[name]))
        return run_cli(["plan", str(path), *flags]).replace(str(path), "REQUEST.json")

    for name in REQUESTS:
        yield f"plan_json/{name}.txt", partial(plan_cli, name, "--json")
        if name in TEXT_CASES:
            yield f"plan_text/{name}.txt", partial(plan_cli, name)
    for table in ("gpus", "models", "prices"):
        yield f"catalog/{table}.txt", partial(run_cli, ["catalog", table])
        yield f"catalog/{table}_json.txt", partial(run_cli, ["catalog", table, "--json"])


def report_document(name: str) -> str:
    """The plan report as the PDF writer receives it (a rendering-neutral document), as JSON."""
    from core.planner.analysis import analyse
    from core.planner.report import build_report
    from core.planner.request import PlanRequest

    with frozen_today():
        request = PlanRequest.model_validate(REQUESTS[name])
        report = build_report(analyse(request, today=TODAY), TODAY)
    return report.model_dump_json(indent=1) + "\n"


def report_outputs() -> Iterator[tuple[str, Callable[[], str]]]:
    for name in REPORT_CASES:
        yield f"report/{name}.json", partial(report_document, name)


def replayed_run(db: Path) -> tuple[Any, int]:
    """A probe run of the recorded H100 box (real nvidia-smi, nccl-tests and fio outputs),
    stored."""
    from core.probes.evidence import ProbeOutcome, ProbeStatus
    from core.probes.history.records import StoredSeriesPoint
    from core.probes.history.store import ProbeStore
    from core.probes.run.replay import burn_metrics, nccl_points, replay_evidence
    from core.probes.scorecard import score

    store = ProbeStore(db)
    probes = ["inventory", "gpu_metrics", "collectives", "storage", "burn"]
    run_id = store.start_run(
        "h100-burn", "replay", probes, {"replay": True}, started=1_700_000_000.0
    )
    evidence = replay_evidence()
    store.add_samples(run_id, burn_metrics())
    store.add_series(
        run_id,
        [
            StoredSeriesPoint(t=2.0, series="busbw", x=x, y=y, label="nccl-tests")
            for x, y in nccl_points()
        ],
    )
    store.add_event(run_id, 3.0, "log", "warning", "GPU 0: replayed burn", "burn")
    for index, name in enumerate(probes):
        store.add_outcome(
            run_id,
            ProbeOutcome(
                name=name,
                status=ProbeStatus.ok,
                started=1_700_000_000.0 + index,
                ended=1_700_000_000.5 + index,
            ),
        )
    store.finish_run(
        run_id,
        "completed",
        evidence=evidence,
        scorecard=score(evidence, samples=burn_metrics()),
        ended=1_700_000_010.0,
    )
    return store, run_id


def probe_outputs(workdir: Path) -> Iterator[tuple[str, Callable[[], str]]]:
    def run_document() -> str:
        from cli.probe import render_scorecard
        from core.probes.output.run_json import run_json

        store, run_id = replayed_run(workdir / "probe_doc.db")
        doc = run_json(store.load_run(run_id))
        store.close()
        return (
            json.dumps(doc, indent=1, sort_keys=True)
            + "\n--- scorecard text\n"
            + re.sub(r"^run \d+ ", "run N ", render_scorecard(doc))
            + "\n"
        )

    def report() -> str:
        from core.probes.output.report import build_probe_report
        from core.probes.output.run_json import run_json

        store, run_id = replayed_run(workdir / "probe_report.db")
        run = store.load_run(run_id)
        store.close()
        with frozen_today():
            doc = build_probe_report(run).model_dump(mode="json")
        return (
            json.dumps(doc, indent=1, sort_keys=True)
            + "\n--- run json\n"
            + json.dumps(run_json(run, samples=True), indent=1, sort_keys=True)
            + "\n"
        )

    yield "probe/run_document.txt", run_document
    yield "probe/report_and_run_json.txt", report


def outputs(workdir: Path) -> Iterator[tuple[str, Callable[[], str]]]:
    """(relative golden path, function producing its text), for every recorded output."""
    yield from plan_outputs(workdir)
    yield from report_outputs()
    yield from probe_outputs(workdir)
