"""Render the step probe in the window to docs/screenshots/step-*.png: the Probe place after the
step suite ran on the plan that is open (``step-probe-live.png``: each timed repetition;
``step-probe-scorecard.png``), and the Time & cost page once **Apply to plan** put the measured step
in (``step-wizard-6-cost.png``).

Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python
packaging/screenshots_step.py [OUT_DIR]``. The machines that build the docs have no GPU, so the
layer is timed on their CPU, for a small Llama-shaped model (hidden 256, 4 layers) at its own shapes
(``--step-scale 1``): a real measurement of this machine, applied as a GPU box's would be; the
pictures say it was a CPU. Everything is written to a throwaway user folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import (  # sets the Qt platform first
    ROOT,
    close_window,
    planning_window,
    save,
    scratch_folder,
    settle,
    turn_to,
    wait,
)

TINY_REQUEST: dict[str, Any] = {
    "model": {
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 688,
        "vocab_size": 2048,
        "model_type": "llama",
        "_name_or_path": "tiny-llama",
    },
    "data": {"tokens": "2M", "seq_len": 128},
    "training": {"method": "full", "micro_batch_size": 2, "gradient_checkpointing": False},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 1},
}


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder("tuneplan-step-shots-")
    app, window = planning_window(scratch)
    from gui.probe import backend

    wizard, state = window.wizard, window.wizard.state
    wizard.load_request(TINY_REQUEST, name="tiny-llama full fine-tune")
    settle(state)
    window.add_probe_place()
    window.show_place("Probe")
    pane = window.places["Probe"].ensure_pane()
    pane.make_options = lambda choice: backend.make_options(choice).model_copy(
        update={"python": sys.executable, "step_cpu_scale": 1}
    )
    pane.hosts.select("This machine")
    pane.connect_button.click()
    wait(pane.start_button.isEnabled, 300, "the connection to this machine")
    pane.suite.set_choice(("step",))
    pane.start()
    wait(lambda: not pane.running, 300, "the step run's end")
    pane.tabs.setCurrentIndex(0)
    save(window, out / "step-probe-live.png")
    pane.tabs.setCurrentIndex(1)
    save(window, out / "step-probe-scorecard.png")
    pane.scorecard_view.apply_button.click()
    settle(state)
    turn_to(wizard, wizard.cost_page)
    save(window, out / "step-wizard-6-cost.png")
    return close_window(app, window, scratch)


if __name__ == "__main__":
    raise SystemExit(
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
    )
