"""The line above the Probe place that says when the probe history cannot be kept (or was moved
aside).

Why: when the history file is full, read-only, locked or damaged, runs go on in memory
(core.probes.history.store_rescue); a user who is not told would expect to find them in the history
tomorrow.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from core.probes import ProbeStore


def history_text(store: ProbeStore) -> str:
    """The store's notice and fault as sentences, or "" when the history is kept as usual."""
    notes = [note for note in (store.notice, store.fault) if note]
    return " ".join(
        note[0].upper() + note[1:] + ("" if note.endswith(".") else ".") for note in notes
    )


class HistoryBanner(QLabel):
    """Hidden while the history is kept; otherwise the sentence saying why it is not, or where it
    went."""

    def __init__(self) -> None:
        super().__init__("")
        self.setAccessibleName("History banner")
        self.setWordWrap(True)
        self.setVisible(False)

    def show_store(self, store: ProbeStore) -> str:
        """Show what `history_text` says; return it when it is new (for the status bar), else ""."""
        text = history_text(store)
        if not text or text == self.text():
            return ""
        self.setText(text)
        self.setVisible(True)
        return text
