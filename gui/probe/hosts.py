"""Saved hosts and host groups: the list on the left of the pane, and the add/edit dialog.

Profiles come from the probe store and hold no secrets (a key file's *path*, never a password).
"This machine" is always first; editing it saves its data and checkpoint paths like any other
profile. Host groups (cluster targets, core.probes.history.host_groups) follow the hosts; a host in
a group is not removed from under it, and renaming a host renames it in its groups. Store calls are
short and run on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.probes import (
    HostGroup,
    HostOverrides,
    HostProfile,
    ProbeStore,
    check_target,
    delete_group,
    groups_with,
    rename_member,
    save_group,
    saved_groups,
)
from gui.forms import form_footer
from gui.probe.groups import GroupDialog, group_text

LOCAL_NAME = "This machine"
MIN_WIDTH = 560  # the placeholders and a two-line error read in full
LOCAL_TARGET = "local"
PROFILE_ROLE = Qt.ItemDataRole.UserRole + 1
# What the list's rows are: one saved host, or a group of them probed as one cluster.
Target = HostProfile | HostGroup


def local_profile() -> HostProfile:
    return HostProfile(name=LOCAL_NAME, target=LOCAL_TARGET, local=True)


def host_label(profile: Target) -> str:
    """The name runs are filed under in the history: the profile's or group's name (stable across
    edits)."""
    return profile.name


def name_error(name: str, taken: set[str]) -> str | None:
    """One sentence on what is wrong with the host's name, or None."""
    if not name.strip():
        return "name is empty; give the host a label, e.g. 'lambda-8xh100'"
    if name.strip() in taken:
        return f"name '{name.strip()}' is already used by another saved host or cluster"
    return None


def target_error(target: str, port: int | None = None) -> str | None:
    """One sentence on what is wrong with the target and the port given beside it, or None (the rule
    the connection itself and the command line follow: core.probes.transport.connect)."""
    try:
        check_target(target, HostOverrides(port=port))
    except ValueError as exc:
        return f"target: {exc}"
    return None


def python_error(text: str) -> str | None:
    """One sentence on what is wrong with the host's Python as typed (the runner's own rule), or
    None; empty means "look for one"."""
    from pydantic import ValidationError

    from core.probes import RunOptions

    if not text.strip():
        return None
    try:
        RunOptions(python=text.strip())
    except ValidationError as exc:
        return f"python: {exc.errors()[0]['msg'].removeprefix('Value error, ')}"
    return None


def connection_text(selected: Target, connected: Target | None) -> str:
    """The status line for the host just selected: connected to it, to another one, or to none."""
    if connected is None:
        return "Not connected"
    if connected.name == selected.name:
        if isinstance(connected, HostGroup):
            return f"Connected to the {len(connected.hosts)} nodes of {connected.name}"
        return (
            "Ready to probe this machine" if connected.local else f"Connected to {connected.name}"
        )
    return f"Not connected to {selected.name} (still connected to {connected.name})"


def profile_error(name: str, target: str, local: bool, taken: set[str]) -> str | None:
    """One sentence on what is wrong with the form (the name first), or None."""
    return name_error(name, taken) or (None if local else target_error(target))


class HostDialog(QDialog):
    """Add or edit one profile. Read :meth:`profile` after it is accepted.

    A field's error shows once the user has typed in it (or pressed Save), never on a form just
    opened: an empty form is not a mistake. Save is disabled only while an error is shown. The
    dialog is wide enough for the placeholders and grows to fit a long error, which wraps instead of
    being cut off.
    """

    def __init__(
        self, profile: HostProfile | None, taken: set[str], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        editing = profile is not None
        self.setWindowTitle("Edit host" if editing else "Add host")
        self.setAccessibleName(self.windowTitle())
        self._taken = taken
        self._local = bool(profile and profile.local)
        self._touched: set[str] = set()
        self.setMinimumWidth(MIN_WIDTH)
        form = QFormLayout(self)
        self.name = QLineEdit(profile.name if profile else "")
        self.name.setAccessibleName("Host name")
        self.name.setPlaceholderText("a label for the history, e.g. lambda-8xh100")
        self.name.setReadOnly(self._local)
        self.target = QLineEdit("" if profile is None or self._local else profile.target)
        self.target.setAccessibleName("Target")
        self.target.setPlaceholderText("user@host:port or an alias from ~/.ssh/config")
        self.target.setEnabled(not self._local)
        self.port = QSpinBox()
        self.port.setAccessibleName("Port")
        self.port.setRange(0, 65535)
        self.port.setSpecialValueText("from target or ssh config")
        self.port.setValue(profile.port or 0 if profile else 0)
        self.port.setEnabled(not self._local)
        key_row = QHBoxLayout()
        self.identity = QLineEdit(profile.identity_file or "" if profile else "")
        self.identity.setAccessibleName("Identity file")
        self.identity.setPlaceholderText("optional, e.g. ~/.ssh/id_ed25519")
        self.identity.setToolTip(
            "A private key to offer first; keys from the SSH agent and ~/.ssh/config are "
            "offered anyway."
        )
        self.identity.setEnabled(not self._local)
        browse = QPushButton("Browse…")
        browse.setEnabled(not self._local)
        browse.clicked.connect(self._browse)
        key_row.addWidget(self.identity, 1)
        key_row.addWidget(browse)
        self.data_path = QLineEdit(profile.data_path or "" if profile else "")
        self.data_path.setAccessibleName("Data path")
        self.checkpoint_path = QLineEdit(profile.checkpoint_path or "" if profile else "")
        self.checkpoint_path.setAccessibleName("Checkpoint path")
        self.python = QLineEdit(profile.python or "" if profile else "")
        self.python.setAccessibleName("Python interpreter")
        self.python.setPlaceholderText("optional, e.g. ~/venv/bin/python (default: looked for)")
        self.python.setToolTip(
            "The host's Python with torch, for the all-reduce and distributed checks. Left empty, "
            "the probe looks in the login shell's active conda env or venv, ~/.venv, /opt/conda, "
            "~/miniconda3 and the PATH, and says which it used."
        )
        form.addRow("Name", self.name)
        form.addRow("Target", self.target)
        form.addRow("Port", self.port)
        form.addRow("Identity file", key_row)
        form.addRow("Data path", self.data_path)
        form.addRow("Checkpoint path", self.checkpoint_path)
        form.addRow("Python", self.python)
        note = QLabel(
            "No password or passphrase is saved: they are asked when the host needs them."
        )
        note.setWordWrap(True)
        form.addRow(note)
        self.error, self.buttons = form_footer(form, "Host form error", self._save, self.reject)
        for key, edit in (("name", self.name), ("target", self.target), ("python", self.python)):
            edit.textEdited.connect(lambda _t, k=key: self._touch(k))
            edit.textChanged.connect(lambda _t: self._validate())
        self.port.valueChanged.connect(lambda _v: self._touch("target"))
        self._validate()

    def _touch(self, key: str) -> None:
        self._touched.add(key)
        self._validate()

    def _browse(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "Private key file", self.identity.text() or "~/.ssh"
        )
        if name:
            self.identity.setText(name)

    def _validate(self) -> bool:
        errors = {
            "name": name_error(self.name.text(), self._taken),
            "target": None
            if self._local
            else target_error(self.target.text(), self.port.value() or None),
            "python": python_error(self.python.text()),
        }
        shown = next((e for key, e in errors.items() if e and key in self._touched), None)
        if shown != (self.error.text() or None):
            self.error.setText(shown or "")
            self._fit()
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(shown is None)
        return not any(errors.values())

    def _fit(self) -> None:
        """Grow the dialog to the height its wrapped text needs at its width."""
        layout = self.layout()
        if layout is None:
            return
        layout.activate()
        need = (
            layout.totalHeightForWidth(self.width())
            if layout.hasHeightForWidth()
            else layout.sizeHint().height()
        )
        if need > self.height():
            self.resize(self.width(), need)

    def _save(self) -> None:
        self._touched |= {"name", "target"}  # Save shows what is still missing
        if self._validate():
            self.accept()

    def profile(self) -> HostProfile:
        if self._local:
            return local_profile().model_copy(
                update={
                    "data_path": self.data_path.text().strip() or None,
                    "checkpoint_path": self.checkpoint_path.text().strip() or None,
                    "python": self.python.text().strip() or None,
                }
            )
        return HostProfile(
            name=self.name.text().strip(),
            target=self.target.text().strip(),
            port=self.port.value() or None,
            identity_file=self.identity.text().strip() or None,
            data_path=self.data_path.text().strip() or None,
            checkpoint_path=self.checkpoint_path.text().strip() or None,
            python=self.python.text().strip() or None,
        )


class HostList(QWidget):
    """Signals: ``selected(object)`` the HostProfile or HostGroup now selected; ``message(str)`` for
    the status line; ``editing(object)`` a HostDialog, GroupDialog or question just opened (tests
    fill it through this)."""

    selected = Signal(object)
    message = Signal(str)
    editing = Signal(object)

    def __init__(self, store: ProbeStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.setAccessibleName("Hosts")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Hosts"))
        self.list = QListWidget()
        self.list.setAccessibleName("Saved hosts")
        self.list.currentItemChanged.connect(lambda _cur, _prev: self._emit_selected())
        self.list.setMinimumHeight(60)
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in (
            ("add", "Add…", self.add),
            ("edit", "Edit…", self.edit),
            ("remove", "Remove", self.remove),
        ):
            button = QPushButton(text)
            button.setAccessibleName(f"{text.rstrip('…')} host")
            button.clicked.connect(lambda _c=False, s=slot: s())
            row.addWidget(button)
            self.buttons[key] = button
        layout.addLayout(row)
        # a host group: two or more saved hosts probed together
        cluster = QPushButton("New cluster…")
        cluster.setAccessibleName("New cluster")
        cluster.setToolTip("Group two or more saved hosts into one cluster target")
        cluster.clicked.connect(lambda _c=False: self.add_group())
        layout.addWidget(cluster)
        self.buttons["cluster"] = cluster
        self.dialog: HostDialog | GroupDialog | None = None
        self.refresh()

    def profiles(self) -> list[HostProfile]:
        saved = self.store.hosts()
        local = next((p for p in saved if p.local), None) or local_profile()
        return [local, *(p for p in saved if not p.local)]

    def groups(self) -> list[HostGroup]:
        return saved_groups(self.store)

    def refresh(self, select: str | None = None) -> None:
        current = select or (self.current().name if self.list.currentItem() is not None else None)
        self.list.blockSignals(True)
        self.list.clear()
        for profile in self.profiles():
            text = profile.name if profile.local else f"{profile.name}  —  {profile.target}"
            item = QListWidgetItem(text)
            item.setData(PROFILE_ROLE, profile)
            item.setToolTip(
                "Probe the machine tuneplan runs on" if profile.local else profile.target
            )
            self.list.addItem(item)
        for group in self.groups():
            item = QListWidgetItem(group_text(group))
            item.setData(PROFILE_ROLE, group)
            item.setToolTip(
                f"A cluster: probes {', '.join(group.hosts)} together and the network between them"
            )
            self.list.addItem(item)
        self.list.blockSignals(False)
        names = [self.list.item(i).data(PROFILE_ROLE).name for i in range(self.list.count())]
        self.list.setCurrentRow(names.index(current) if current in names else 0)
        self._emit_selected()

    def current(self) -> Target:
        item = self.list.currentItem()
        profile = item.data(PROFILE_ROLE) if item is not None else None
        return profile if isinstance(profile, HostProfile | HostGroup) else local_profile()

    def select(self, name: str) -> None:
        for i in range(self.list.count()):
            if self.list.item(i).data(PROFILE_ROLE).name == name:
                self.list.setCurrentRow(i)
                return
        raise KeyError(f"no host named '{name}' in the list")

    def _emit_selected(self) -> None:
        profile = self.current()
        self.buttons["remove"].setEnabled(isinstance(profile, HostGroup) or not profile.local)
        self.selected.emit(profile)

    def _taken(self, keep: str | None) -> set[str]:
        """Names a new host or group may not take: every saved host's and group's, but the one being
        edited."""
        return ({p.name for p in self.profiles()} | {g.name for g in self.groups()}) - (
            {keep} if keep else set()
        )

    # ---- editing

    def _open(self, profile: HostProfile | None) -> None:
        dialog = HostDialog(profile, self._taken(profile.name if profile else None), self)

        def save() -> None:
            new = dialog.profile()
            if profile is not None and profile.name != new.name:
                self.store.delete_host(profile.name)
                rename_member(self.store, profile.name, new.name)
            self.store.save_host(new)
            self.refresh(select=new.name)
            self.message.emit(f"Saved host “{new.name}”")

        self._show_dialog(dialog, save)

    def _open_group(self, group: HostGroup | None) -> None:
        dialog = GroupDialog(
            group, self.profiles(), self._taken(group.name if group else None), self
        )

        def save() -> None:
            new = dialog.group()
            if group is not None and group.name != new.name:
                delete_group(self.store, group.name)
            save_group(self.store, new)
            self.refresh(select=new.name)
            self.message.emit(f"Saved cluster “{new.name}” of {len(new.hosts)} hosts")

        self._show_dialog(dialog, save)

    def _show_dialog(self, dialog: HostDialog | GroupDialog, save: Callable[[], None]) -> None:
        """Open an edit dialog (window-modal, not blocking); ``save`` runs when it is accepted."""
        self.dialog = dialog

        def finished(result: int) -> None:
            self.dialog = None
            if result == int(QDialog.DialogCode.Accepted):
                save()
            dialog.deleteLater()

        dialog.finished.connect(finished)
        dialog.open()
        self.editing.emit(dialog)

    def add(self) -> None:
        self._open(None)

    def add_group(self) -> None:
        self._open_group(None)

    def edit(self) -> None:
        target = self.current()
        if isinstance(target, HostGroup):
            self._open_group(target)
        else:
            self._open(target)

    def remove(self) -> None:
        profile = self.current()
        if isinstance(profile, HostProfile) and profile.local:
            return
        kind = "cluster" if isinstance(profile, HostGroup) else "host"
        if isinstance(profile, HostProfile) and (holders := groups_with(self.store, profile.name)):
            self.message.emit(
                f"Host “{profile.name}” is a node of the cluster “{holders[0]}”; remove it from "
                "that cluster first"
            )
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            f"Remove {kind}",
            f"Remove “{profile.name}” from the host list? Its past runs stay in the history.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )

        def finished(result: int) -> None:
            if result == int(QMessageBox.StandardButton.Yes):
                if isinstance(profile, HostGroup):
                    delete_group(self.store, profile.name)
                else:
                    self.store.delete_host(profile.name)
                self.refresh()
                self.message.emit(f"Removed {kind} “{profile.name}”")
            box.deleteLater()

        box.finished.connect(finished)
        box.open()
        self.editing.emit(box)
