"""The Probe place's left column: the widgets a person picks a target and a suite with, and follows
a run by.

It holds widgets only (the "Probe this machine" button, the host list, Connect and Disconnect, the
connection status, the suite picker, Start and Stop, progress and ETA, and the event log, kept
beside the tabs so events stay in view on the scorecard and history too); what each one does is
wired by ``pane``, which connects and runs.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from core.probes import ProbeStore
from gui.probe.event_log import EventLog
from gui.probe.hosts import HostList
from gui.probe.run_feed import PROGRESS_STEPS
from gui.probe.suite_picker import SuitePicker


class ControlColumn(QWidget):
    """The column's widgets, top to bottom; the host list reads and edits `store`'s hosts."""

    def __init__(self, store: ProbeStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMaximumWidth(420)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        # no SSH
        self.probe_here_button = _button("Probe this machine (quick suite)", "Probe this machine")
        layout.addWidget(self.probe_here_button)
        self.hosts = HostList(store)
        layout.addWidget(self.hosts, 1)
        self.connect_button, self.disconnect_button = _button("Connect"), _button("Disconnect")
        layout.addLayout(_row(self.connect_button, self.disconnect_button))
        self.status = QLabel("Not connected")
        self.status.setAccessibleName("Connection status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.suite = SuitePicker()
        layout.addWidget(self.suite)
        self.start_button = _button("Start", "Start probe run")
        self.stop_button = _button("Stop", "Stop probe run")
        layout.addLayout(_row(self.start_button, self.stop_button))
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Run progress")
        self.progress.setRange(0, PROGRESS_STEPS)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        layout.addWidget(self.progress)
        self.eta = QLabel("")
        self.eta.setAccessibleName("Run ETA")
        self.eta.setWordWrap(True)
        layout.addWidget(self.eta)
        self.log = EventLog()
        layout.addWidget(self.log, 2)


def _button(text: str, name: str | None = None) -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name or text)
    return button


def _row(left: QWidget, right: QWidget) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(left)
    row.addWidget(right)
    return row
