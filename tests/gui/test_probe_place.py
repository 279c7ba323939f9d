"""Opening the Probe place: it is on screen at once, saying what it loads, and the pane follows; a
pane that cannot load says why in the place."""

from __future__ import annotations

import itertools

from PySide6.QtCore import Qt

from gui.probe import place as place_module
from gui.probe.hosts import LOCAL_NAME


def click_place(qtbot, window, name: str) -> None:
    sidebar = window.sidebar
    item = next(sidebar.item(i) for i in range(sidebar.count()) if sidebar.item(i).text() == name)
    qtbot.mouseClick(
        sidebar.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.visualItemRect(item).center()
    )


def open_window(qtbot):
    from gui.main_window import MainWindow

    window = MainWindow.create_default()
    qtbot.addWidget(window)
    with qtbot.waitExposed(window):
        window.show()
    return window


def test_the_probe_place_shows_at_once_and_the_pane_with_its_charts_follows(qtbot):
    window = open_window(qtbot)
    click_place(qtbot, window, "Probe")
    place = window.places["Probe"]
    assert window.stack.currentWidget() is place
    assert place.status.isVisible()
    assert place.status.text() == "Loading the probe tools (SSH, charts, run history)…"
    qtbot.waitUntil(lambda: place.pane is not None and place.pane.isVisible(), timeout=10000)
    pane = place.pane
    assert not place.status.isVisible()
    assert pane.gpu_charts.isVisible() and pane.hosts.list.item(0).text() == LOCAL_NAME
    click_place(qtbot, window, "Plan")
    click_place(qtbot, window, "Probe")
    assert place.pane is pane  # built once
    window.close()
    pane.store.close()


def test_a_probe_place_that_cannot_load_says_why_in_the_place(qtbot, monkeypatch):
    """As when paramiko is missing from the installation: the place says so instead of staying
    empty."""

    def missing() -> None:
        raise ImportError("No module named 'paramiko'")

    monkeypatch.setattr(place_module, "_import_pane", missing)
    window = open_window(qtbot)
    click_place(qtbot, window, "Probe")
    place = window.places["Probe"]
    expected = "The Probe place could not load: ImportError: No module named 'paramiko'"
    qtbot.waitUntil(lambda: place.status.text() == expected, timeout=10000)
    assert place.status.isVisible() and place.pane is None
    window.close()


def test_the_pane_s_plots_are_made_one_per_event_loop_turn(qtbot):
    """The first open made all ten pyqtgraph plots in one go on the UI thread (216–381 ms without an
    event handled); now the pane appears with none and they follow one per turn of the event loop,
    which a zero-time heartbeat timer (it fires on every turn) sees as at most one more plot between
    two of its ticks."""
    import pyqtgraph as pg
    from PySide6.QtCore import QTimer

    window = open_window(qtbot)
    place = window.places["Probe"]
    counts: list[int] = []
    heartbeat = QTimer()
    heartbeat.setInterval(0)
    heartbeat.timeout.connect(
        lambda: counts.append(
            len(place.pane.findChildren(pg.PlotWidget)) if place.pane is not None else -1
        )
    )
    heartbeat.start()
    click_place(qtbot, window, "Probe")
    qtbot.waitUntil(
        lambda: place.pane is not None and len(place.pane.findChildren(pg.PlotWidget)) == 10,
        timeout=15000,
    )
    heartbeat.stop()
    made = [n for n in counts if n >= 0]
    assert made[0] <= 1, made[:5]  # the pane was on screen before its plots
    steps = [b - a for a, b in itertools.pairwise(made)]
    assert max(steps) == 1, made
    window.close()
    place.pane.store.close()
