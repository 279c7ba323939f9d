"""The GUI tests' display: their own Xvfb when the session has no X display, offscreen Qt (said why)
without Xvfb, and a real-window test that cannot run skips on a developer's machine but fails in
CI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.gui import xvfb

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)"
)
def test_without_a_display_the_tests_start_their_own_xvfb_and_stop_it():
    env: dict[str, str] = {"QT_QPA_PLATFORM": "offscreen"}
    display = xvfb.choose_display(env)
    try:
        assert display.real and display.server is not None
        assert env["DISPLAY"] == f":{display.number}" and env["QT_QPA_PLATFORM"] == "xcb"
        assert (xvfb.SOCKETS / f"X{display.number}").exists()
        assert display.server.args == [
            shutil.which("Xvfb"),
            f":{display.number}",
            "-screen",
            "0",
            "1920x1200x24",
            "-nolisten",
            "tcp",
        ]
    finally:
        display.stop()
    assert display.server.poll() is not None  # ended with the session
    assert not (xvfb.SOCKETS / f"X{display.number}").exists()


def test_a_display_the_session_has_is_used_as_it_is():
    env = {"DISPLAY": ":42", "QT_QPA_PLATFORM": "offscreen"}
    display = xvfb.choose_display(env)
    assert display.real and display.server is None
    assert env == {"DISPLAY": ":42", "QT_QPA_PLATFORM": "xcb"}


@pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)"
)
def test_a_test_process_of_pytest_xdist_starts_its_own_xvfb_instead_of_sharing_the_controllers():
    """The controller of a two-process run loads this conftest too and starts an Xvfb its workers
    inherit; on one X server the two workers' windows take the keyboard from each other, so each
    starts its own."""
    env = {"DISPLAY": ":42", xvfb.PRIVATE_MARK: ":42", "PYTEST_XDIST_WORKER": "gw1"}
    display = xvfb.choose_display(env)
    try:
        assert display.real and display.server is not None and display.number != 42
        assert env["DISPLAY"] == env[xvfb.PRIVATE_MARK] == f":{display.number}"
    finally:
        display.stop()
    # A display the session had (not one a test process started) is still used as it is, in a worker
    # too.
    session = {"DISPLAY": ":42", "PYTEST_XDIST_WORKER": "gw1"}
    assert xvfb.choose_display(session).server is None and session["DISPLAY"] == ":42"


def test_without_xvfb_the_tests_fall_back_to_offscreen_and_say_why(monkeypatch):
    monkeypatch.setattr(xvfb.shutil, "which", lambda _name: None)
    env: dict[str, str] = {}
    display = xvfb.choose_display(env)
    assert not display.real and env == {"QT_QPA_PLATFORM": "offscreen"}
    assert display.reason == (
        "no X display and Xvfb is not installed (apt-get install xvfb): the GUI tests run "
        "on Qt's offscreen platform"
    )


REAL_WINDOW_TEST = """
import pytest

@pytest.mark.real_window
def test_needs_a_window():
    pass

def test_runs_anywhere():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "outcome"), [("", {"passed": 1, "skipped": 1}), ("true", {"passed": 1, "errors": 1})]
)
def test_a_real_window_test_skips_without_xvfb_but_fails_in_ci(pytester, monkeypatch, ci, outcome):
    """A machine whose PATH has no Xvfb, and no DISPLAY: the suite still runs, offscreen."""
    pytester.makeconftest(
        "from tests.gui.conftest import pytest_configure, pytest_report_header, "
        "real_window_or_skip  # noqa: F401\n"
    )
    pytester.makepyfile(REAL_WINDOW_TEST)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("PATH", str(Path(os.__file__).parent))  # a folder with no Xvfb in it
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("CI", ci)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines(
        ["GUI tests: offscreen Qt; no X display and Xvfb is not installed*"]
    )
    if ci:
        result.stdout.fnmatch_lines(
            ["*CI needs a real X display for this test: no X display and Xvfb*"]
        )
    else:
        result.stdout.fnmatch_lines(["SKIPPED*no X display and Xvfb is not installed*"])
