"""The step probe over a real OpenSSH server on 127.0.0.1, through `tuneplan probe TARGET --suite
step --plan`: it measures as it does locally, and a connection killed while the layer is being timed
ends the run exit 6, INCOMPLETE, with what was timed said and nothing left on the host (server and
client are one machine, so the work directory and the ledger are checked on the local file
system)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.main import main as cli_main
from core.probes.evidence import ProbeStatus, Verdict

try:
    from tests.integration.sshd import SshdServer
    from tests.integration.test_probe_faults import cli_with_a_drop, leftovers, only_run, probe_args
# tests/ is not importable as a package; pytest put this folder on sys.path instead
except ImportError:
    from sshd import SshdServer  # type: ignore[no-redef]
    from test_probe_faults import cli_with_a_drop, leftovers, only_run, probe_args  # type: ignore[no-redef]

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def write_plan(tmp_path: Path) -> Path:
    path = tmp_path / "request.json"
    path.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "data": {"tokens": "200M", "seq_len": 2048},
                "training": {"method": "full"},
                "hardware": {"gpu": "H100-SXM"},
            }
        )
    )
    return path


def test_the_step_probe_over_ssh_times_the_layer_as_it_does_here(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_torch: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "probes.db"
    code = cli_main(
        probe_args(
            sshd,
            ssh_trusted_known_hosts,
            db,
            "--suite",
            "step",
            "--plan",
            str(write_plan(tmp_path)),
        )
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    run = only_run(db)
    assert {o.name: o.status for o in run.outcomes} == {"step": ProbeStatus.ok}
    assert run.evidence is not None and run.evidence.step is not None
    step = run.evidence.step
    assert (
        step.device == "cpu"
        and step.scale == 32
        and step.layer.reps >= 2
        and step.layer.median_s > 0
    )
    assert step.trainable_layer == step.params_layer  # a full fine-tune trains the whole layer
    assert [p.x for p in run.series if p.series == "step_ms" and p.label == "layer"][:2] == [
        0.0,
        1.0,
    ]
    assert "  memory   CPU: memory not measured" in out
    assert run.summary.workdir and not Path(run.summary.workdir).exists()
    assert leftovers(db, sshd.target) == []


def test_the_step_probe_leaves_nothing_in_the_hosts_tmpdir(
    sshd_factory: Callable[..., SshdServer],
    tmp_path: Path,
    need_torch: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """torch's compile caches (torchinductor_<user>, triton) default to $TMPDIR: they belong in the
    run's work directory, which goes at the end, and nothing of the run stays in the TMPDIR the
    host's sessions have."""
    tmpdir = tmp_path / "host-tmp"
    tmpdir.mkdir()
    server = sshd_factory(session_env={"TMPDIR": str(tmpdir)})
    known = server.trusted_known_hosts(tmp_path / "known_hosts")
    db = tmp_path / "probes.db"
    code = cli_main(
        probe_args(server, known, db, "--suite", "step", "--plan", str(write_plan(tmp_path)))
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    run = only_run(db)
    # the run used that TMPDIR
    assert run.summary.workdir and Path(run.summary.workdir).parent == tmpdir
    assert sorted(p.name for p in tmpdir.iterdir()) == []


def test_a_drop_while_the_layer_is_timed_exits_6_incomplete_and_leaves_nothing(
    sshd: SshdServer,
    ssh_trusted_known_hosts: Path,
    tmp_path: Path,
    need_torch: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "probes.db"
    # shapes divided by 8, not 32: each repetition takes long enough for the drop to land while the
    # script runs
    args = probe_args(
        sshd,
        ssh_trusted_known_hosts,
        db,
        "--suite",
        "step",
        "--plan",
        str(write_plan(tmp_path)),
        "--step-scale",
        "8",
    )
    code = cli_with_a_drop(sshd, args, db, "step_ms")
    out, err = capsys.readouterr()
    assert code == 6, err
    run = only_run(db)
    assert run.summary.status == "incomplete"
    assert {o.name: o.status for o in run.outcomes}["step"] is ProbeStatus.lost
    card = run.scorecard
    assert card is not None and card.verdict is Verdict.incomplete
    assert card.summary.startswith("INCOMPLETE: step was not measured")
    assert run.evidence is not None and run.evidence.step is None
    assert run.evidence.partial["step"].endswith("of the layer before the drop")
    assert "step not measured" in err and "incomplete" in err
    assert "verdict: INCOMPLETE: step was not measured" in out
    assert run.summary.workdir and not Path(run.summary.workdir).exists()
    assert leftovers(db, sshd.target) == []
    # the script ran with the run's marker on its command line: no process of it is left
    marker = "tuneplan-step-" + Path(run.summary.workdir).name
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
