"""What a run's outcomes do to its scorecard: lost probes are listed as not measured and the verdict
is at best INCOMPLETE; unmeasured storage is never READY. Expected wording and statuses are written
out by hand from the rule in README "The scorecard"."""

from __future__ import annotations

from core.probes.evidence import (
    BurnResult,
    CheckStatus,
    DistributedResult,
    ProbeEvidence,
    ProbeOutcome,
    ProbeStatus,
    StorageResult,
    Verdict,
)
from core.probes.scorecard import score
from core.probes.scorecard.outcomes import account_for_outcomes, unmeasured

PLANNED = ["storage", "distributed", "burn"]


def outcome(name: str, status: ProbeStatus, error: str | None = None) -> ProbeOutcome:
    return ProbeOutcome(name=name, status=status, started=1.0, ended=2.0, error=error)


def healthy() -> ProbeEvidence:
    # p99 0.5 ms on ext4 passes (< 2 ms, thresholds.P99_PASS_MS); an exact gloo all_reduce passes.
    return ProbeEvidence(
        storage=[
            StorageResult(
                path="/data", role="data", tool="fio", filesystem="ext4", rand_read_p99_ms=0.5
            )
        ],
        distributed=DistributedResult(backend="gloo", world_size=2, all_reduce_ok=True),
    )


def test_a_lost_burn_makes_a_clean_card_incomplete_and_is_listed_with_its_partial_evidence() -> (
    None
):
    evidence = healthy()
    evidence.burn = BurnResult(duration_s=12.0, completed=False, samples=60)
    evidence.partial["burn"] = "12 s of the 600 s burn, 60 samples"
    card = score(evidence)
    assert card.verdict is Verdict.ready_with_warnings  # "Burn completed" warns: it stopped early
    outcomes = [
        outcome("storage", ProbeStatus.ok),
        outcome("distributed", ProbeStatus.ok),
        outcome("burn", ProbeStatus.lost, "the connection was lost: EOF"),
    ]
    held = account_for_outcomes(card, PLANNED, outcomes, "incomplete", evidence)
    assert held.verdict is Verdict.incomplete
    assert held.summary.startswith("INCOMPLETE: burn was not measured; of what was measured: ")
    line = next(c for c in held.checks if c.name == "burn: not measured")
    assert (line.status, line.area, line.measured) == (
        CheckStatus.info,
        "stability",
        "partial: 12 s of the 600 s burn, 60 samples",
    )
    assert line.reason == "the connection was lost: EOF"
    assert len(held.checks) == len(card.checks) + 1  # nothing dropped


def test_a_failure_among_what_was_measured_stays_not_ready_and_still_names_the_lost_probe() -> None:
    evidence = ProbeEvidence(
        storage=[
            StorageResult(
                path="/data", role="data", tool="fio", filesystem="ext4", rand_read_p99_ms=25.0
            )
        ]
    )  # > 10 ms: FAIL
    outcomes = [outcome("storage", ProbeStatus.ok), outcome("burn", ProbeStatus.lost)]
    held = account_for_outcomes(
        score(evidence), ["storage", "burn"], outcomes, "incomplete", evidence
    )
    assert held.verdict is Verdict.not_ready
    assert held.summary.startswith("NOT READY: ")
    assert held.summary.endswith("; and burn was not measured.")


def test_every_probe_accounted_for_leaves_the_card_as_it_was() -> None:
    card = score(healthy())
    assert card.verdict is Verdict.ready
    outcomes = [
        outcome("storage", ProbeStatus.ok),
        outcome("distributed", ProbeStatus.ok),
        outcome("burn", ProbeStatus.skipped, "the burn needs torch"),
    ]
    assert account_for_outcomes(card, PLANNED, outcomes, "completed", healthy()) == card


def test_an_interrupted_run_lists_the_probes_it_never_reached() -> None:
    evidence = healthy()
    outcomes = [outcome("storage", ProbeStatus.ok)]
    held = account_for_outcomes(score(evidence), PLANNED, outcomes, "interrupted", evidence)
    assert held.verdict is Verdict.incomplete
    assert held.summary.startswith(
        "INCOMPLETE: the run was interrupted: distributed, burn were not measured"
    )
    reasons = {c.name: c.reason for c in held.checks if c.name.endswith("not measured")}
    assert reasons == {
        "distributed: not measured": "the run was interrupted before it ran",
        "burn: not measured": "the run was interrupted before it ran",
    }


def test_accounting_twice_changes_nothing() -> None:
    evidence = healthy()
    outcomes = [outcome("storage", ProbeStatus.ok), outcome("distributed", ProbeStatus.lost)]
    once = account_for_outcomes(
        score(evidence), ["storage", "distributed"], outcomes, "incomplete", evidence
    )
    assert (
        account_for_outcomes(once, ["storage", "distributed"], outcomes, "incomplete", evidence)
        == once
    )


def test_runs_recorded_before_lost_existed_read_interrupted_probes_as_lost() -> None:
    outcomes = [outcome("storage", ProbeStatus.interrupted, "EOF")]
    assert unmeasured(["storage"], outcomes, "completed") == {"storage": "EOF"}


def test_cancelled_probes_are_not_measured_but_skipped_and_failed_ones_ran() -> None:
    outcomes = [
        outcome("storage", ProbeStatus.skipped, "no space"),
        outcome("distributed", ProbeStatus.failed),
        outcome("burn", ProbeStatus.cancelled, "cancelled by the user"),
    ]
    assert unmeasured(PLANNED, outcomes, "cancelled") == {"burn": "cancelled by the user"}


def test_a_storage_path_that_was_not_measured_is_a_warning_so_the_card_cannot_read_ready() -> None:
    reason = "only 0.00 GiB free at /data; the storage test needs 0.75 GiB"
    evidence = healthy()
    evidence.storage = [
        StorageResult(
            path="/data", role="data", tool="fio", free_bytes=5 << 20, skipped_reason=reason
        )
    ]
    card = score(evidence)
    line = next(c for c in card.checks if c.area == "storage")
    assert (line.status, line.measured) == (CheckStatus.warn, "not measured")
    assert line.reason == f"storage at /data was not measured: {reason}"
    assert card.verdict is Verdict.ready_with_warnings


def test_the_report_of_an_interrupted_run_says_so_and_shows_what_is_partial() -> None:
    from core.probes.output.report import build_probe_report
    from core.probes.output.run_record import ProbeRunRecord

    evidence = healthy()
    evidence.burn = BurnResult(duration_s=12.0, completed=False, samples=60)
    evidence.partial["burn"] = "12 s of the 600 s burn, 60 samples"
    record = ProbeRunRecord(
        host="box",
        evidence=evidence,
        status="interrupted",
        probes=PLANNED,
        outcomes=[outcome("storage", ProbeStatus.ok), outcome("distributed", ProbeStatus.ok)],
    )
    report = build_probe_report(record)
    assert report.conclusion.startswith(
        "INCOMPLETE: the run was interrupted: burn was not measured"
    )
    figures = {k.label: k.value for k in report.key_figures}
    assert figures["Verdict"] == "INCOMPLETE" and figures["Run"] == "interrupted"
    partial = next(s for s in report.sections if s.title == "Partial evidence")
    assert "burn: 12 s of the 600 s burn, 60 samples" in partial.model_dump_json()


def test_fio_gets_a_colon_in_a_path_escaped_as_its_documentation_asks() -> None:
    from core.probes.checks.storage import fio_filename

    # fio's filename option: "escape that with a \\ character" (fio_doc.html, filename)
    assert fio_filename("/data/run:1/tuneplan_seq.dat") == "/data/run\\:1/tuneplan_seq.dat"
    assert fio_filename("/data/plain/tuneplan_seq.dat") == "/data/plain/tuneplan_seq.dat"


def test_a_probe_that_failed_without_evidence_is_a_fail_line_not_a_ready_card() -> None:
    failed = outcome(
        "compute", ProbeStatus.failed, "the matmul benchmark exited with CUDA error 700."
    )
    outcomes = [outcome("storage", ProbeStatus.ok), failed]
    card = account_for_outcomes(
        score(healthy()), ["storage", "compute"], outcomes, "completed", healthy()
    )
    line = next(c for c in card.checks if c.name == "compute: failed")
    assert (line.status, line.measured) == (CheckStatus.fail, "not measured")
    assert line.reason == "the matmul benchmark exited with CUDA error 700"
    assert card.verdict is Verdict.not_ready
    # once
    assert (
        account_for_outcomes(card, ["storage", "compute"], outcomes, "completed", healthy()) == card
    )
