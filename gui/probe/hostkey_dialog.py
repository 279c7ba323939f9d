"""Ask the user about a host key no known-hosts file has, and refuse a changed one (DESIGN §6).

An unknown key is shown with its type and SHA256 fingerprint so it can be compared with the one the
provider publishes; the choices are Accept once (kept only for this session), Accept and remember
(written to the app's own known-hosts file) and Cancel. A changed key gets a refusal with both
fingerprints and no button that connects anyway: that is what a man-in-the-middle looks like.
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.probes import HostKeyChanged, HostKeyUnknown


class HostKeyChoice(Enum):
    cancel = "cancel"
    once = "once"
    remember = "remember"


class HostKeyDialog(QDialog):
    """Modal question for an unknown host key; read :attr:`choice` after it finishes."""

    def __init__(self, error: HostKeyUnknown, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Unknown host key")
        self.setAccessibleName("Unknown host key")
        self.error = error
        self.choice = HostKeyChoice.cancel
        layout = QVBoxLayout(self)
        intro = QLabel(
            f"The host {error.host} is not in any known-hosts file. Compare its key fingerprint "
            "with the one your provider shows (console, API or `ssh-keygen -lf` on the box) "
            "before accepting it."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.key_type = QLabel(f"Key type: {error.key_type}")
        self.key_type.setAccessibleName("Key type")
        layout.addWidget(self.key_type)
        self.fingerprint = QLabel(error.fingerprint)
        self.fingerprint.setAccessibleName("Fingerprint")
        self.fingerprint.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.fingerprint)
        buttons = QDialogButtonBox()
        self.once_button = QPushButton("Accept once")
        self.once_button.setToolTip("Trust this key for this session only")
        self.remember_button = QPushButton("Accept and remember")
        self.remember_button.setToolTip(
            "Trust this key and store it in tuneplan's known-hosts file"
        )
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setDefault(True)
        for button, role in (
            (self.once_button, QDialogButtonBox.ButtonRole.AcceptRole),
            (self.remember_button, QDialogButtonBox.ButtonRole.AcceptRole),
            (self.cancel_button, QDialogButtonBox.ButtonRole.RejectRole),
        ):
            buttons.addButton(button, role)
        self.once_button.clicked.connect(lambda: self._choose(HostKeyChoice.once))
        self.remember_button.clicked.connect(lambda: self._choose(HostKeyChoice.remember))
        self.cancel_button.clicked.connect(lambda: self._choose(HostKeyChoice.cancel))
        layout.addWidget(buttons)

    def _choose(self, choice: HostKeyChoice) -> None:
        self.choice = choice
        if choice is HostKeyChoice.cancel:
            self.reject()
        else:
            self.accept()


def changed_key_box(error: HostKeyChanged, parent: QWidget | None = None) -> QMessageBox:
    """The refusal for a changed key: both fingerprints, what to do, and only a Close button."""
    box = QMessageBox(
        QMessageBox.Icon.Critical,
        "Host key changed",
        f"The host key of {error.host} has changed. tuneplan refuses to connect.",
        QMessageBox.StandardButton.Close,
        parent,
    )
    box.setAccessibleName("Host key changed")
    box.setInformativeText(
        f"Remembered: {error.expected}\nPresented: {error.got}\n\n"
        "Someone may be intercepting the connection, or the box was reinstalled. Ask the provider "
        "for the new fingerprint; if it matches, remove the old entry from the known-hosts file "
        "and connect again."
    )
    return box
