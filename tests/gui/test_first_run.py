"""The first run, as a new user meets it: an empty library opens on the README's sample plan with a
line per page saying what it shows; a library with plans opens as before; the About box says
version, catalog date and where data is kept; the Probe place has one button that probes this
machine with the quick suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from core.library.store import PlanStore
from core.probes.history.records import HostProfile
from core.probes.history.store import ProbeStore
from core.probes.run.options import SUITES
from core.probes.run.replay import ReplayRunner
from gui.probe.pane import ProbePane
from gui.probe.suite_picker import SuiteChoice
from gui.wizard.first_run import WHAT_YOU_SEE
from gui.workers import InlineExecutor


def open_default(qtbot):
    from gui.main_window import MainWindow

    window = MainWindow.create_default()
    qtbot.addWidget(window)
    window.resize(1280, 900)
    with qtbot.waitExposed(window):
        window.show()
    return window


def close(window) -> None:
    window.close()
    probe = window.places["Probe"]
    if getattr(probe, "pane", None) is not None:
        probe.pane.store.close()
    window.store.close()


def test_an_empty_library_opens_on_the_sample_plan_with_a_line_per_page(qtbot):
    window = open_default(qtbot)
    wizard = window.wizard
    # the README's request: Llama 3.1 8B, LoRA r16, 200M tokens, 8x H100 at AWS on demand
    request = wizard.state.request
    assert request is not None
    assert (request.model.preset, request.training.method.value, request.training.lora_rank) == (
        "llama-3.1-8b",
        "lora",
        16,
    )
    assert (request.hardware.gpu, request.hardware.gpus_per_node, request.pricing.provider) == (
        "H100-SXM",
        8,
        "aws",
    )
    assert window.windowTitle().startswith("Sample plan")
    # nothing to save yet: the library stays empty until the user saves
    assert not window.isWindowModified()
    assert window.store.list() == []
    shown = wizard.currentPage()
    assert shown.intro.isVisible() and shown.intro.text() == WHAT_YOU_SEE["Model"]
    for page in wizard.pages():
        assert page.intro.text() == WHAT_YOU_SEE[page.title()], page.title()
    # starting a new plan drops the sample's lines
    window.actions_by_name["new"].trigger()
    qtbot.waitUntil(lambda: not wizard.currentPage().intro.isVisible(), timeout=3000)
    assert all(page.intro.text() == "" for page in wizard.pages())
    close(window)


def test_a_library_with_plans_opens_without_the_sample(qtbot, user_dirs: Path):
    from core.library.store import default_db_path

    seeded = PlanStore(default_db_path())
    seeded.save("mine", {"model": {"preset": "qwen2.5-7b"}, "data": {"tokens": 1e8}})
    seeded.close()
    window = open_default(qtbot)
    assert not window.windowTitle().startswith("Sample plan")
    assert all(not page.intro.isVisible() for page in window.wizard.pages())
    close(window)


def test_the_about_box_names_version_catalog_date_and_data_folders(qtbot, user_dirs: Path):
    window = open_default(qtbot)
    text = window.help.about_text()
    assert text.startswith("tuneplan 0.1.0")  # pyproject.toml's version
    # resources/catalog/*.json "retrieved"
    assert "Catalog (GPUs, models, prices) retrieved 2026-11-29" in text
    assert str(user_dirs / "data") in text and str(user_dirs / "config") in text
    close(window)


def test_probe_this_machine_connects_here_and_runs_the_quick_suite(qtbot, tmp_path: Path):
    chosen: list[SuiteChoice] = []

    def record(choice: SuiteChoice) -> SuiteChoice:
        chosen.append(choice)
        return choice

    store = ProbeStore(tmp_path / "probes.db")
    pane = ProbePane(
        InlineExecutor(),
        store,
        run_suite=ReplayRunner(),
        make_options=record,
        known_hosts_file=tmp_path / "known_hosts",
    )
    qtbot.addWidget(pane)
    pane.resize(1280, 900)
    with qtbot.waitExposed(pane):
        pane.show()
    qtbot.mouseClick(pane.probe_here_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(chosen) and not pane.running, timeout=20000)
    assert isinstance(pane.connected_profile, HostProfile) and pane.connected_profile.local
    assert chosen[0].probes == SUITES["quick"]
    assert "This machine" in pane.showing.text(), pane.showing.text()
    pane.close()
    store.close()


@pytest.mark.parametrize("page_title", list(WHAT_YOU_SEE))
def test_every_page_has_its_line(page_title: str) -> None:
    """One line each, as short as a line can be read in one go."""
    line = WHAT_YOU_SEE[page_title]
    assert line.startswith("Sample plan: ") and len(line) < 160 and "\n" not in line
