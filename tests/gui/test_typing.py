"""Typing into every text field of the window as a person does, while the plan recomputes behind it.

A real window (Xvfb), the production executor and debounce: click into a field, Ctrl+A, one key at a
time to whatever has the focus, a pause longer than the debounce between keys, then the whole value
must be there. Each page's fields are listed as a person sees them on screen; a field the page shows
and the list lacks fails the test too, so a new field is typed into as soon as it exists.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialogButtonBox,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from core.probes.history.records import HostProfile
from tests.gui.wizard_driver import choose, click, next_page, settle, type_like_a_person

pytestmark = pytest.mark.real_window


def text_fields(root: QWidget) -> dict[str, QWidget]:
    """Every field under ``root`` a person can type into, by accessible name: line edits, text
    boxes, spin boxes and editable combos (whose own line edit counts as the spin box or combo), on
    every tab."""
    found: dict[str, QWidget] = {}
    for widget in root.findChildren(QWidget):
        if isinstance(widget.parentWidget(), QAbstractSpinBox | QComboBox):
            continue
        typable = isinstance(widget, QLineEdit | QPlainTextEdit | QAbstractSpinBox) or (
            isinstance(widget, QComboBox) and widget.isEditable()
        )
        if typable and not getattr(widget, "isReadOnly", lambda: False)():
            found[widget.accessibleName()] = widget
    return found


def type_each(
    qtbot,
    root: QWidget,
    values: list[tuple[str, str]],
    first: dict[str, Callable[[], None]] | None = None,
) -> None:
    """Type each value into the field of that name, in this order; report every field that lost a
    key.

    ``first`` holds what a person does before typing into a field (click its tab), by the field's
    name.
    """
    fields = text_fields(root)
    problems = []
    for name, text in values:
        (first or {}).get(name, lambda: None)()
        try:
            type_like_a_person(qtbot, fields[name], text)
        except AssertionError as exc:
            problems.append(str(exc).splitlines()[0])
    assert not problems, "\n".join(problems)


def go_to(qtbot, wizard, title: str):
    """Next, page after page, until the page with this title is on screen."""
    while wizard.currentPage().title() != title:
        next_page(qtbot, wizard)
    return wizard.currentPage()


def click_tab(qtbot, tabs, text: str) -> None:
    bar = tabs.tabBar()
    index = next(i for i in range(tabs.count()) if tabs.tabText(i) == text)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
    assert tabs.currentIndex() == index


MODEL = [
    ("Filter presets", "qwen"),
    ("Parameter count", "7B"),
    ("config.json text", '{"hidden_size": 896}'),
]
DATA = [
    ("Dataset tokens", "2B"),
    ("Epochs", "2.5"),
    ("Sequence length", "123"),
    ("Padding waste", "0.25"),
    ("Raw bytes per token", "3.5"),
    ("Files", "250000"),
]
METHOD = [
    ("LoRA rank", "32"),
    ("LoRA targets", "attention"),
    ("Micro-batch", "16"),
    ("Global batch", "256"),
]
HARDWARE = [
    ("GPUs per node", "8"),
    ("Nodes", "16"),
    ("Inter-node bandwidth (Gbit/s per node)", "3200"),
    ("Measured intra-node busbw (GB/s)", "232.5"),
    ("Measured matmul TFLOP/s", "610.5"),
    ("Deadline (hours)", "48"),
    ("Most GPUs", "128"),
    ("Tensor parallel", "2"),
    ("Pipeline parallel", "1"),
    ("Context parallel", "1"),
]
COST = [
    ("Price override", "2.49"),
    ("Discount", "0.15"),
    ("GPU MTBF (h)", "2000"),
    ("Spot preemptions per hour", "0.05"),
    ("Restart time (min)", "15"),
    ("Hot checkpoints kept", "3"),
    ("Months of storage billed", "2"),
    ("Idle hours (stopped instances, disks kept)", "24"),
    ("Egress (GB)", "150"),
    ("Price per GPU incl. server share", "25000"),
    ("Utilisation", "0.75"),
    ("Evaluate every (steps)", "500"),
    ("Tokens per evaluation", "2M"),
]
HOST = [
    ("Host name", "lambda-8xh100"),
    ("Target", "ubuntu@10.0.0.5"),
    ("Port", "2222"),
    ("Identity file", "~/.ssh/id_ed25519"),
    ("Data path", "/data"),
    ("Checkpoint path", "/ckpt"),
    ("Python interpreter", "~/.venv/bin/python"),
]


def names(values: list[tuple[str, str]]) -> list[str]:
    return sorted(name for name, _text in values)


def test_typing_a_filter_a_parameter_count_and_a_config_on_the_model_page_keeps_every_key(
    qtbot, live_window
):
    page = live_window.wizard.model_page
    assert sorted(text_fields(page)) == names(MODEL)
    type_each(
        qtbot,
        page,
        MODEL,
        first={
            "Parameter count": lambda: click_tab(qtbot, page.tabs, "Parameter count"),
            "config.json text": lambda: click_tab(qtbot, page.tabs, "config.json"),
        },
    )


@pytest.mark.parametrize(
    ("title", "fields", "kept"),
    [
        ("Data", DATA, {"data.tokens": "2B", "data.seq_len": "123"}),
        ("Method", METHOD, {"training.lora_rank": "32"}),
        ("Time & cost", COST, {"pricing.usd_per_gpu_hour": "2.49"}),
    ],
)
def test_typing_every_field_of_a_page_keeps_every_key_while_the_plan_recomputes(
    qtbot, live_window, title, fields, kept
):
    wizard = live_window.wizard
    page = go_to(qtbot, wizard, title)
    assert sorted(text_fields(page)) == names(fields)
    type_each(qtbot, page, fields)
    settle(qtbot, wizard.state)
    assert {path: wizard.state.get(path) for path in kept} == kept


def test_typing_every_hardware_field_of_a_chosen_gpu_keeps_every_key(qtbot, live_window):
    """The counts and the network belong to a chosen GPU, the deadline to its objective: choose them
    first."""
    wizard = live_window.wizard
    page = go_to(qtbot, wizard, "Hardware")
    assert sorted(text_fields(page)) == names(HARDWARE)
    choose(qtbot, page.gpu.combo, "H100-SXM")
    choose(qtbot, page.objective.combo, "cost_under_deadline")
    settle(qtbot, wizard.state)
    assert not page.parallelism.is_expanded()  # collapsed until a person opens it
    type_each(
        qtbot,
        page,
        HARDWARE,
        first={"Tensor parallel": lambda: click(qtbot, page.parallelism.toggle)},
    )
    settle(qtbot, wizard.state)
    assert wizard.state.get("hardware") == {
        "gpu": "H100-SXM",
        "gpus_per_node": "8",
        "nodes": "16",
        "inter_node_gbps": "3200",
        "intra_node_busbw_gbs": "232.5",
        "matmul_tflops": "610.5",
    }
    assert {
        k: wizard.state.get(f"training.{k}")
        for k in ("tensor_parallel", "pipeline_parallel", "context_parallel")
    } == {"tensor_parallel": "2", "pipeline_parallel": "1", "context_parallel": "1"}


def test_the_memory_and_summary_pages_have_nothing_to_type(qtbot, live_window):
    wizard = live_window.wizard
    for title in ("Memory", "Summary"):
        assert text_fields(go_to(qtbot, wizard, title)) == {}


def test_typing_a_new_host_keeps_every_key_and_saves_it(qtbot):
    """Probe place ▸ Add…: the dialog's every field, typed; Save puts the host in the list."""
    from gui.main_window import MainWindow
    from gui.probe import ProbePlace

    window = MainWindow.create_default()
    qtbot.addWidget(window)
    with qtbot.waitExposed(window):
        window.show()
    with qtbot.waitActive(window):
        window.activateWindow()
    sidebar = window.sidebar
    row = next(i for i in range(sidebar.count()) if sidebar.item(i).text() == "Probe")
    qtbot.mouseClick(
        sidebar.viewport(),
        Qt.MouseButton.LeftButton,
        pos=sidebar.visualItemRect(sidebar.item(row)).center(),
    )
    place = window.places["Probe"]
    assert isinstance(place, ProbePlace)
    qtbot.waitUntil(lambda: place.pane is not None and place.pane.isVisible(), timeout=5000)
    pane = place.pane
    assert pane is not None
    hosts = pane.hosts
    click(qtbot, hosts.buttons["add"])
    qtbot.waitUntil(lambda: QApplication.activeModalWidget() is not None, timeout=2000)
    dialog = hosts.dialog
    assert dialog is not None and QApplication.activeModalWidget() is dialog
    assert dialog.windowTitle() == "Add host"
    qtbot.waitUntil(dialog.isActiveWindow, timeout=2000)
    assert sorted(text_fields(dialog)) == names(HOST)
    type_each(qtbot, dialog, HOST)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    assert save.isEnabled(), dialog.error.text()
    click(qtbot, save)
    saved = hosts.current()
    assert isinstance(saved, HostProfile) and saved.name == "lambda-8xh100"
    assert (saved.target, saved.port) == ("ubuntu@10.0.0.5", 2222)
    assert saved.python == "~/.venv/bin/python"
    assert hosts.list.currentItem().text() == "lambda-8xh100  —  ubuntu@10.0.0.5"
    settle(qtbot, window.wizard.state)
    window.close()
    pane.store.close()
