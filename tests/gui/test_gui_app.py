"""Application start: run() opens the window and returns when it closes; palettes for light and
dark."""

from __future__ import annotations

import time
from collections import Counter

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from gui.app import dark_palette, make_app, run
from gui.workers import InlineExecutor


def test_run_opens_the_main_window_and_returns(qapp, user_dirs, monkeypatch):
    from PySide6.QtCore import QEvent

    from gui.library.widget import LibraryWidget
    from gui.main_window import MainWindow

    titles: list[str] = []

    library_at_show: list[bool] = []

    def one_turn() -> int:
        """Stand-in for exec(): a real exec() ends the shared test application's event loop for
        good. It runs the loop until the plan library, which opens once the window is on screen, is
        open."""
        windows = [
            w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()
        ]
        library_at_show.extend(isinstance(w.places["Library"], LibraryWidget) for w in windows)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(
            isinstance(w.places["Library"], LibraryWidget) for w in windows
        ):
            qapp.processEvents()
            time.sleep(0.01)
        qapp.processEvents()
        # the title as the window system shows it
        titles.extend(w.windowHandle().title() for w in windows)
        for w in windows:
            w.close()
            w.deleteLater()
        # The process would end here. The test's goes on, so the window goes now, before its pending
        # plan or chart timers can fire in a later test.
        qapp.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        return 0

    monkeypatch.setattr(qapp, "exec", one_turn)
    assert run() == 0
    # an empty library: the first run opens on the sample plan
    assert titles == ["Sample plan — tuneplan"]
    assert library_at_show == [False]  # shown before the library (and its SQLite layer) is open
    # The library went to the user data folder (XDG_DATA_HOME), not the working directory.
    assert (user_dirs / "data" / "tuneplan" / "tuneplan.db").is_file()


def test_make_app_reuses_the_running_application(qapp):
    assert make_app() is qapp


def test_dark_palette_is_dark_with_readable_text():
    pal = dark_palette()
    window = pal.color(QPalette.ColorRole.Window)
    text = pal.color(QPalette.ColorRole.WindowText)
    assert window.lightness() < 80 < 200 < text.lightness()


def _image_colors(widget) -> Counter[int]:
    image = widget.grab().toImage()
    return Counter(
        QColor(image.pixel(x, y)).lightness() // 32
        for x in range(0, image.width(), 3)
        for y in range(0, image.height(), 3)
    )


def test_switching_to_the_dark_palette_recolours_charts_hints_and_errors(qtbot, qapp, window):
    """The system switching to dark while the window is open: charts, hint and error text follow
    (WCAG 4.5:1)."""
    from gui.colors import contrast_ratio, error_color
    from tests.gui.wizard_driver import next_page, settle, type_like_a_person

    wizard, state = window.wizard, window.wizard.state
    for _ in range(3):
        next_page(qtbot, wizard)
    chart = wizard.memory_page.chart
    light = qapp.palette()
    assert _image_colors(chart).most_common(1)[0][0] >= 6  # mostly light before
    qapp.setPalette(dark_palette())
    try:
        qapp.processEvents()
        shades = _image_colors(chart)
        assert shades.most_common(1)[0][0] <= 1, shades  # the plot's background is now dark …
        # … with light text and bars on it
        assert sum(n for shade, n in shades.items() if shade >= 6) > 50
        window_color = qapp.palette().color(QPalette.ColorRole.Window).name()
        assert chart.caption.palette().color(QPalette.ColorRole.WindowText) == qapp.palette().color(
            QPalette.ColorRole.PlaceholderText
        )
        wizard.back()
        wizard.back()
        tokens = next(f for f in wizard.data_page.fields if f.path == "data.tokens")
        type_like_a_person(qtbot, tokens.edit, "lots")
        settle(qtbot, state)
        red = tokens.error.palette().color(QPalette.ColorRole.WindowText).name()
        assert red == error_color(dark=True)
        assert contrast_ratio(red, window_color) >= 4.5
        hint = tokens.hint.palette().color(QPalette.ColorRole.WindowText)
        assert hint == qapp.palette().color(QPalette.ColorRole.PlaceholderText)
    finally:
        qapp.setPalette(light)
        qapp.processEvents()
    assert tokens.error.palette().color(QPalette.ColorRole.WindowText).name() == error_color(
        dark=False
    )
    assert (
        contrast_ratio(error_color(dark=False), light.color(QPalette.ColorRole.Window).name())
        >= 4.5
    )


def test_the_window_modules_leave_the_chart_library_for_later():
    """Cold start (DESIGN §7, < 1.5 s): pyqtgraph's import alone takes about a third of a second, so
    the window's modules must not import it; the wizard loads it on a worker when the user
    pauses."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; import gui.app, gui.main_window, gui.wizard.wizard, gui.charts; "
        "print('pyqtgraph' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_chart_asked_to_draw_during_the_import_waits_for_it(qtbot, monkeypatch):
    from core.document import BarChart, Series
    from gui import charts

    charts.preload(InlineExecutor())  # imported, as after the worker finished
    view = charts.ChartView("test chart")
    qtbot.addWidget(view)
    view.show()
    monkeypatch.setattr(charts, "_preloading", True)
    charts._imported.clear()  # as while the worker still imports
    try:
        chart = BarChart(
            title="t", unit="GB", categories=["a"], series=[Series(name="s", values=[1.0])]
        )
        view.show_bar(chart)
        assert view.message.isVisible() and view.message.text() == "drawing the chart…"
        assert view.title.isHidden()
    finally:
        charts._imported.set()
    qtbot.waitUntil(lambda: not view.message.isVisible(), timeout=2000)
    assert view.title.text() == "t" and view.chart == chart


def test_probe_measurements_open_in_the_wizard(qtbot, window):
    """'Apply to plan' in the Probe place hands a PlanRequest with measured figures to the
    wizard."""
    from core.planner.request import PlanRequest
    from tests.gui.wizard_driver import settle

    request = PlanRequest.model_validate(
        {
            "model": {"preset": "llama-3.1-8b"},
            "data": {"tokens": 2e8},
            "hardware": {
                "gpu": "H100-SXM",
                "gpus_per_node": 8,
                "intra_node_busbw_gbs": 232.2,
                "matmul_tflops": 612.0,
            },
        }
    )
    window.apply_probe_request(request)
    settle(qtbot, window.wizard.state)
    assert window.stack.currentWidget() is window.wizard
    assert window.wizard.state.get("hardware.intra_node_busbw_gbs") == 232.2
    assert window.wizard.state.get("hardware.matmul_tflops") == 612.0


def test_tuneplan_started_without_a_display_says_what_to_do_instead_of_aborting(tmp_path):
    """An SSH login to a server: no DISPLAY, no WAYLAND_DISPLAY, no QT_QPA_PLATFORM. Qt alone would
    print its plugin lines and abort; `tuneplan` says where to go instead, in one sentence, and
    exits 1."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env.update(
        HOME=str(tmp_path),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tuneplan"],
        cwd=Path(__file__).parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "tuneplan: there is no display to open the window on (DISPLAY and WAYLAND_DISPLAY are "
        "not set); use the command line instead (`tuneplan --help`, e.g. `tuneplan plan --help`), "
        "or set QT_QPA_PLATFORM=offscreen to run the window without a screen\n"
    )


def test_a_traceback_the_probe_runner_logs_from_its_thread_stays_off_the_window_users_terminal():
    """The runner logs a bug with its traceback from a worker thread (its event log tells the user);
    in a window session Python's last-resort handler would print it on stderr. `run()` keeps it
    there no longer."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import logging, threading, sys\n"
        "if sys.argv[1] == 'window':\n"
        "    from gui.app import quiet_library_logs; quiet_library_logs()\n"
        "def bug():\n"
        "    try:\n"
        "        1 / 0\n"
        "    except ZeroDivisionError:\n"
        "        logging.getLogger('core.probes.run.runner').exception('probe run failed')\n"
        "t = threading.Thread(target=bug); t.start(); t.join()\n"
    )
    root = Path(__file__).parents[2]
    bare = subprocess.run(
        [sys.executable, "-c", code, "bare"], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" in bare.stderr  # what a window session printed before
    window = subprocess.run(
        [sys.executable, "-c", code, "window"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert window.returncode == 0 and window.stderr == ""


def test_hint_text_reads_at_least_4_5_to_1_in_the_light_and_the_dark_palette(qtbot, qapp):
    """WCAG 2 body-text contrast for the grey hint under a field (on the window) and the placeholder
    in it (on the field), with each palette the window uses, as a hint label actually paints it."""
    from gui.app import light_palette
    from gui.colors import contrast_ratio, seen_on
    from gui.forms import make_hint_label

    before = qapp.palette()
    try:
        for name, palette in (("light", light_palette(qapp)), ("dark", dark_palette())):
            qapp.setPalette(palette)
            label = make_hint_label("Tokens", "how many tokens the run trains on")
            qtbot.addWidget(label)
            hint = label.palette().color(QPalette.ColorRole.WindowText)
            assert hint == palette.color(QPalette.ColorRole.PlaceholderText)
            for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base):
                background = palette.color(role)
                ratio = contrast_ratio(seen_on(hint, background), background.name())
                assert ratio >= 4.5, (
                    f"{name} palette: hint {hint.name()} on {background.name()} is {ratio:.2f}:1"
                )
    finally:
        qapp.setPalette(before)
