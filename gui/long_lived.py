"""What the app keeps for its whole life, kept out of Python's full garbage collections.

A full collection scans every object the collector tracks, on whichever thread allocates at that
moment, most often the UI thread. Modules, classes, the catalog, Qt's wrappers and pyqtgraph's items
live as long as the app, and scanning them made a full collection a 50–60 ms pause while the user
typed (bench_gui: one gap over the 50 ms frame in a typing session, which the collector's own
callbacks timed at 51 ms). ``gc.freeze`` moves every object alive now into a permanent generation
the collector skips. It is called once as each heavy set of modules is in (the window at start, the
planner with its first plan, pyqtgraph after its import), never after every plan, so that what a
plan leaves behind is still collected.
"""

from __future__ import annotations

import gc

_reached: set[str] = set()


def freeze_once(milestone: str) -> None:
    """``gc.freeze`` the first time this process reaches ``milestone`` ("window", "planner",
    "pyqtgraph")."""
    if milestone not in _reached:
        _reached.add(milestone)
        gc.freeze()
