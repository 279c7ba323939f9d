"""A probe run as a run-JSON file (what `tuneplan probe --json` prints), from the replayed real tool
outputs.

The report commands' tests read one (tests/core/test_output_file.py,
tests/cli/test_cli_headless.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.probes import replay_evidence, replay_scorecard


def replayed_run_file(folder: Path) -> Path:
    """run.json in `folder`: the replayed run of gpu-node-17, its evidence and scorecard."""
    evidence = replay_evidence()
    path = folder / "run.json"
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
    return path
