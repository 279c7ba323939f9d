"""The PDF reports go through the one writer too: `tuneplan report -o` and `tuneplan probe-report
-o` given a name where a symlink was planted replace the link with the PDF (read back with pypdf)
and leave its target as it was; the probe report is its owner's alone (0600). Run as the `tuneplan`
entry point runs them (tuneplan.launch.main; the command line draws with gui.pdf)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from core.probes.run.replay import replay_evidence, replay_scorecard
from tuneplan.launch import main

VICTIM = "the user's own file\n"
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
}


def _source(tmp_path: Path, command: str) -> str:
    path = tmp_path / "source.json"
    if command == "report":
        path.write_text(json.dumps(REQUEST), encoding="utf-8")
    else:
        evidence = replay_evidence()
        path.write_text(
            json.dumps(
                {
                    "host": "gpu-node-17",
                    "started": "2026-03-02T14:05:00Z",
                    "evidence": evidence.model_dump(mode="json"),
                    "scorecard": replay_scorecard(evidence).model_dump(mode="json"),
                }
            ),
            encoding="utf-8",
        )
    return str(path)


@pytest.mark.parametrize(
    ("command", "title"), [("report", "llama"), ("probe-report", "gpu-node-17")]
)
def test_a_pdf_report_replaces_a_planted_link_and_leaves_its_target(
    qapp: Any, tmp_path: Path, command: str, title: str
) -> None:
    victim = tmp_path / "victim.pdf"
    victim.write_text(VICTIM, encoding="utf-8")
    link = tmp_path / "out.pdf"
    link.symlink_to(victim)
    assert main([command, _source(tmp_path, command), "-o", str(link)]) == 0
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert not link.is_symlink() and stat.S_ISREG(link.lstat().st_mode)
    reader = PdfReader(str(link))
    assert title.lower() in " ".join(p.extract_text() for p in reader.pages).lower()
    if command == "probe-report":
        assert stat.S_IMODE(link.stat().st_mode) == 0o600
