"""The Probe place: hosts, connection, live charts of a probe run, the readiness scorecard and
history.

Only the light `ProbePlace` is imported here; it builds `gui.probe.pane.ProbePane` when first shown.
"""

from __future__ import annotations

from gui.probe.place import ProbePlace

__all__ = ["ProbePlace"]
