"""A real X server for the GUI tests: the window is tested as a person sees it, not on Qt's
offscreen platform.

Offscreen Qt hides what a person meets at once: a field that loses the keyboard focus while the plan
recomputes passed every test that sent its keys straight to the widget. With a display the tests
click into fields and type into whatever has the focus, on the ``xcb`` platform the app uses on
Linux.

:func:`choose_display` runs when ``tests/gui/conftest.py`` is imported, before pytest-qt makes the
QApplication: Qt reads ``DISPLAY`` and ``QT_QPA_PLATFORM`` once, when the application starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

SCREEN = "1920x1200x24"
START_TIMEOUT_S = 10.0
SOCKETS = Path("/tmp/.X11-unix")


@dataclass
class Display:
    """Where the GUI tests draw. ``real`` is False on the offscreen fallback, with ``reason`` saying
    why."""

    real: bool
    reason: str = ""
    server: subprocess.Popen[bytes] | None = None
    number: int | None = None

    def stop(self) -> None:
        """Stop the Xvfb this session started (a display that was already there is left alone)."""
        if self.server is None or self.server.poll() is not None:
            return
        self.server.terminate()
        try:
            self.server.wait(5)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait(5)


def _taken(number: int) -> bool:
    return Path(f"/tmp/.X{number}-lock").exists() or (SOCKETS / f"X{number}").exists()


# the display a test process started for itself (see choose_display)
PRIVATE_MARK = "TUNEPLAN_TEST_XVFB"


def _start_xvfb(xvfb: str) -> tuple[subprocess.Popen[bytes] | None, int | None, str]:
    """Start Xvfb on the first free display from a per-process offset (other test runs may share the
    machine); a display another server took in the meantime makes Xvfb exit at once, and the next
    one is tried."""
    first = 100 + os.getpid() % 400
    errors = ""
    for number in range(first, first + 50):
        if _taken(number):
            continue
        with tempfile.TemporaryFile() as log:
            server = subprocess.Popen(
                [xvfb, f":{number}", "-screen", "0", SCREEN, "-nolisten", "tcp"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and server.poll() is None:
                if (SOCKETS / f"X{number}").exists():
                    return server, number, ""
                time.sleep(0.02)
            if server.poll() is None:
                server.kill()
                server.wait(5)
            log.seek(0)
            errors = log.read().decode(errors="replace").strip()
    return None, None, (errors.splitlines() or ["no free display number"])[-1]


def choose_display(environ: MutableMapping[str, str] = os.environ) -> Display:
    """Use the X display the session has, else start a private Xvfb, else fall back to offscreen Qt.

    Sets ``DISPLAY`` and ``QT_QPA_PLATFORM`` in ``environ`` accordingly; call it before any
    QApplication exists.
    """
    display = environ.get("DISPLAY")
    # Under pytest-xdist the controller loads this conftest too and starts an Xvfb; its workers
    # inherit that DISPLAY. Two workers on one X server take the keyboard from each other's windows
    # (a key "went to no widget"), so each worker starts a server of its own instead.
    inherited = (
        display is not None
        and display == environ.get(PRIVATE_MARK)
        and "PYTEST_XDIST_WORKER" in environ
    )
    if display and not inherited:
        environ["QT_QPA_PLATFORM"] = "xcb"
        return Display(real=True)
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        environ["QT_QPA_PLATFORM"] = "offscreen"
        return Display(
            real=False,
            reason="no X display and Xvfb is not installed (apt-get install xvfb): "
            "the GUI tests run on Qt's offscreen platform",
        )
    server, number, error = _start_xvfb(xvfb)
    if server is None:
        environ["QT_QPA_PLATFORM"] = "offscreen"
        return Display(
            real=False,
            reason=f"Xvfb did not start ({error}): the GUI tests run on Qt's offscreen platform",
        )
    environ["DISPLAY"] = environ[PRIVATE_MARK] = f":{number}"
    environ["QT_QPA_PLATFORM"] = "xcb"
    environ.pop("WAYLAND_DISPLAY", None)
    return Display(real=True, server=server, number=number)
