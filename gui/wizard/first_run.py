"""The first run: with an empty library the window opens on a sample plan, and each page says in one
line what it shows, so a founder who has never planned a training run sees a whole answer before
typing anything.

The sample is the README's request (resources/samples/plan/readme_request.json: Llama 3.1 8B, LoRA,
200M tokens on 8× H100 at AWS on-demand). It is not saved: the library stays empty until the user
saves, and the lines go away as soon as another plan is opened or a new one started.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.resources import resource_path

if TYPE_CHECKING:
    from gui.wizard.wizard import PlanWizard

SAMPLE_NAME = "Sample plan"
SAMPLE_PATH = ("samples", "plan", "readme_request.json")

# One line per page (by page title): what the person is looking at in the sample.
WHAT_YOU_SEE: dict[str, str] = {
    "Model": "Sample plan: the model being fine-tuned, Llama 3.1 8B from the catalog; pick "
    "another or import a config.json.",
    "Data": "Sample plan: how much text it trains on, 200M tokens of 4,096-token sequences, one "
    "epoch.",
    "Method": "Sample plan: LoRA rank 16 on every linear layer, bf16, with gradient "
    "checkpointing; each choice says what it trades.",
    "Memory": "Sample plan: what each GPU must hold for this job, part by part, on every GPU type "
    "in the catalog.",
    "Hardware": "Sample plan: 8× H100 in one node; the table ranks the configurations that fit.",
    "Time & cost": "Sample plan: how long the run takes and what it costs at AWS on-demand, with "
    "spot and reserved beside it, each price with its source and date.",
    "Summary": "Sample plan: the whole plan in one line, what it assumes and what to watch; save "
    "it or export the PDF.",
}


def sample_request() -> dict[str, Any]:
    """The README's request, as shipped."""
    data: dict[str, Any] = json.loads(resource_path(*SAMPLE_PATH).read_text(encoding="utf-8"))
    return data


def open_sample(wizard: PlanWizard) -> None:
    """Show the sample plan (unsaved, not modified) with each page's line."""
    wizard.load_request(sample_request(), name=SAMPLE_NAME, saved=True)
    wizard.plan_id = None  # not in the library: Save asks for a name
    for page in wizard.pages():
        page.show_intro(WHAT_YOU_SEE.get(page.title()))
