"""The Help menu's windows: the user guide (docs/guide.md, shipped with the app) and the keyboard
shortcuts.

The guide is the same Markdown file the repository shows, read through
:func:`core.resources.guide_path`, so an installed app and a source checkout show one text. Its
pictures are drawn where they are shipped beside it (a source checkout); an installed app has the
text alone, and a picture it lacks is left out rather than drawn as a broken image. The shortcuts
are read from the window's own actions, so the list cannot drift from what the keys do.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from core.resources import guide_path
from gui.table_model import Row, RowsModel, make_table

_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def heading_slug(heading: str) -> str:
    """'Save, compare and export the PDF' -> 'save-compare-and-export-the-pdf': the anchor GitHub
    gives a heading, which the guide's contents links name (Qt's Markdown reader gives headings no
    anchors of their own)."""
    return _NOT_IN_SLUG.sub("", heading.strip().lower()).replace(" ", "-")


def guide_markdown(path: Path) -> str:
    """The guide's text, without the pictures that are not shipped beside it."""
    text = path.read_text(encoding="utf-8")
    return _IMAGE.sub(lambda m: m.group(0) if (path.parent / m.group(1)).is_file() else "", text)


class GuideWindow(QDialog):
    """The user guide in a window of its own, beside the main one (not modal): read while doing."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("tuneplan user guide")
        self.setAccessibleName("User guide")
        layout = QVBoxLayout(self)
        self.browser = QTextBrowser()
        self.browser.setAccessibleName("User guide text")
        # '#plan-a-run' goes to its heading here; a web link to the browser
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self.follow)
        path = guide_path()
        if path is None:
            self.browser.setPlainText(
                "The user guide is not part of this installation; it is docs/guide.md in "
                "tuneplan's source."
            )
        else:
            self.browser.setSearchPaths([str(path.parent)])
            self.browser.setMarkdown(guide_markdown(path))
        self.headings = self._headings()
        layout.addWidget(self.browser)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout.addWidget(close)
        self.resize(900, 760)

    def _headings(self) -> dict[str, int]:
        """Each heading's anchor (heading_slug) and where its block starts in the document."""
        found: dict[str, int] = {}
        block = self.browser.document().begin()
        while block.isValid():
            if block.blockFormat().headingLevel() > 0:
                found.setdefault(heading_slug(block.text()), block.position())
            block = block.next()
        return found

    def follow(self, url: QUrl) -> None:
        """A contents link scrolls its heading to the top; a link out of the guide opens in the web
        browser."""
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
            return
        position = self.headings.get(url.fragment())
        if position is None:
            return
        cursor = QTextCursor(self.browser.document())
        cursor.setPosition(position)
        block = cursor.block()
        top = self.browser.document().documentLayout().blockBoundingRect(block).top()
        self.browser.setTextCursor(cursor)
        self.browser.verticalScrollBar().setValue(int(top))


def shortcut_rows(actions: list[QAction]) -> list[tuple[str, str]]:
    """(what the action does, its keys) for every action with a shortcut, once each, in menu
    order."""
    rows: list[tuple[str, str]] = []
    for action in actions:
        keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        what = action.text().replace("&", "").rstrip("…").strip()
        if keys and (what, keys) not in rows:
            rows.append((what, keys))
    return rows


class ShortcutsDialog(QDialog):
    """The window's keyboard shortcuts, as a table a person reads once and closes with Escape."""

    def __init__(self, actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        layout = QVBoxLayout(self)
        self.model = RowsModel(["action", "keys"], self)
        self.model.set_rows([Row([what, keys]) for what, keys in shortcut_rows(actions)])
        layout.addWidget(make_table(self.model, "Keyboard shortcuts"))
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout.addWidget(close)
        self.resize(460, 480)
