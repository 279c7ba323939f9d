"""The dialog that makes or edits a host group: a cluster target of two or more saved hosts under
one name.

A group names its hosts by their profile names (core.probes.history.host_groups), so the dialog
offers the saved hosts as tick boxes, never free text: a group cannot point at a host that does not
exist. Like the host dialog, an error shows once the user has touched the form (or pressed Save), in
one sentence naming the field, and the dialog keeps what was typed until the user fixes it or
cancels.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from core.probes import HostGroup, HostProfile, group_error
from gui.forms import form_footer

MIN_WIDTH = 520


def group_text(group: HostGroup) -> str:
    """The group's line in the host list: its name, that it is a cluster, and its nodes."""
    return f"{group.name}  —  cluster of {len(group.hosts)}: {', '.join(group.hosts)}"


class GroupDialog(QDialog):
    """Make (``group`` None) or edit one group from the saved ``hosts``; read :meth:`group` once
    accepted.

    ``taken`` holds the names already used by saved hosts and other groups.
    """

    def __init__(
        self,
        group: HostGroup | None,
        hosts: Sequence[HostProfile],
        taken: Collection[str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit cluster" if group is not None else "New cluster")
        self.setAccessibleName(self.windowTitle())
        self.setMinimumWidth(MIN_WIDTH)
        self._taken = set(taken)
        self._saved = [h.name for h in hosts if not h.local]
        self._touched: set[str] = set()  # "name", "hosts": the fields whose errors may show
        form = QFormLayout(self)
        self.name = QLineEdit(group.name if group is not None else "")
        self.name.setAccessibleName("Cluster name")
        self.name.setPlaceholderText("a label for the history, e.g. lambda-2-nodes")
        form.addRow("Name", self.name)
        boxes = QWidget()
        boxes.setAccessibleName("Cluster hosts")
        column = QVBoxLayout(boxes)
        column.setContentsMargins(0, 0, 0, 0)
        chosen = set(group.hosts) if group is not None else set()
        self.host_boxes: dict[str, QCheckBox] = {}
        for name in self._saved:
            box = QCheckBox(name)
            box.setAccessibleName(f"Node {name}")
            box.setChecked(name in chosen)
            box.toggled.connect(lambda _on: self._touch("hosts"))
            column.addWidget(box, 0, Qt.AlignmentFlag.AlignLeft)  # a click on its text ticks it
            self.host_boxes[name] = box
        if not self._saved:
            column.addWidget(QLabel("No saved host yet: add the nodes as hosts first."))
        form.addRow("Nodes", boxes)
        note = QLabel(
            "Each node is probed with its own saved connection; the group only names them."
        )
        note.setWordWrap(True)
        form.addRow(note)
        self.error, self.buttons = form_footer(form, "Cluster form error", self._save, self.reject)
        self.name.textEdited.connect(lambda _t: self._touch("name"))
        self._validate()

    def chosen_hosts(self) -> list[str]:
        """The ticked hosts, in the host list's order (the order the nodes are started in)."""
        return [name for name, box in self.host_boxes.items() if box.isChecked()]

    def _touch(self, field: str) -> None:
        self._touched.add(field)
        self._validate()

    def _validate(self) -> bool:
        """Show the form's first error once its field was touched: a name typed before any host is
        ticked is not yet a group of too few hosts."""
        error = group_error(self.name.text(), self.chosen_hosts(), self._taken, self._saved)
        field = "hosts" if error is not None and error.startswith("hosts:") else "name"
        shown = error if field in self._touched else None
        self.error.setText(shown or "")
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(shown is None)
        return error is None

    def _save(self) -> None:
        self._touched |= {"name", "hosts"}  # Save shows what is still missing
        if self._validate():
            self.accept()

    def group(self) -> HostGroup:
        return HostGroup(name=self.name.text().strip(), hosts=self.chosen_hosts())
