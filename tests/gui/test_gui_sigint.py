"""Ctrl-C in the terminal that started the window closes it as Quit does, and the process exits
0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _start(home: Path) -> subprocess.Popen[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SSH_AUTH_SOCK", "PYTHONWARNINGS", "DISPLAY")
    }
    env.update(
        PYTHONPATH=str(ROOT),
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        QT_QPA_PLATFORM="offscreen",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "tuneplan"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, process: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, (
            f"the window did not open its library within {seconds} s"
        )
        time.sleep(0.05)


def test_sigint_closes_the_window_and_exits_0(tmp_path):
    process = _start(tmp_path)
    try:
        # The library file is made while the window is built, after the Ctrl-C handler is in place.
        _wait_for(tmp_path / "data" / "tuneplan" / "tuneplan.db", process, 60)
        time.sleep(0.5)  # let the event loop start: the signal must reach it, not the start-up
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=10)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert took < 5
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    # Quit's path ran: the window saved its geometry on the way out (closeEvent).
    assert list((tmp_path / "config").rglob("*.conf")), (
        "the window did not close through closeEvent"
    )
