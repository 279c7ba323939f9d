"""The `tuneplan` command: the window (gui/) without arguments, the command line (cli/) with them.

It lives in the application package, above both: the window and the command line never import each
other's entry, core imports neither, and a headless install still gets the command line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from cli.common import EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """The command line is imported only when there are arguments: the window should not pay for
    it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        from cli.main import process_main

        return process_main(args)
    broken = missing_resources()
    if broken is not None:
        print(broken, file=sys.stderr)
        return EXIT_ERROR
    missing = no_display()
    if missing is not None:
        print(missing, file=sys.stderr)
        return EXIT_ERROR
    try:
        from gui.app import run
    except ImportError as exc:  # no Qt libraries on this machine
        print(
            f"tuneplan: the window needs PySide6 and its libraries ({exc}); try `tuneplan plan "
            "--help`",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return run()


def missing_resources() -> str | None:
    """One sentence when the shipped catalog cannot be found (a broken install or bundle), else
    None: the window reads the catalog while it builds its pages, and a traceback there says nothing
    to a user."""
    from core.resources import resources_root

    try:
        resources_root()
    except FileNotFoundError as exc:
        return f"tuneplan: this installation is incomplete: {exc}"
    return None


def no_display() -> str | None:
    """The sentence for a session with nothing to show the window on (an SSH login to a server),
    else None.

    Without a display Qt prints five lines about platform plugins and aborts the process (a core
    dump), which says nothing about what to do instead. X11 and Wayland sessions set DISPLAY or
    WAYLAND_DISPLAY; whoever sets QT_QPA_PLATFORM (offscreen, vnc, …) has chosen where the window
    goes. macOS and Windows need none.
    """
    if sys.platform in ("darwin", "win32", "cygwin"):
        return None
    if any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        return None
    return (
        "tuneplan: there is no display to open the window on (DISPLAY and WAYLAND_DISPLAY are not "
        "set); use the command line instead (`tuneplan --help`, e.g. `tuneplan plan --help`), or "
        "set QT_QPA_PLATFORM=offscreen to run the window without a screen"
    )


if __name__ == "__main__":
    raise SystemExit(main())
