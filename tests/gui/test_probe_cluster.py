"""A cluster target in the Probe place, driven as a person drives it: making a host group in its
dialog (typing into the field that has the focus, ticking the nodes), the one sentence a one-host
group gets, and a real cluster run of two nodes.

The two nodes are two saved hosts pointing at one real OpenSSH server on 127.0.0.1
(tests/integration/sshd.py), so every node connects through the same host-key rules as a single host
(the first node asks, "Accept and remember" writes the app's file, the second node, the same server,
is then known) and runs its own suite for real. The host's Python is the system one, without torch,
so the distributed steps between nodes skip with their reason; the nodes, the cluster's verdict and
the history entries are read off the screen.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

from core.probes.history.host_groups import HostGroup, group, groups, save_group
from core.probes.history.records import HostProfile, RunSummary
from core.probes.history.store import ProbeStore
from core.probes.run.replay import ReplayRunner
from gui.probe import backend
from gui.probe.groups import GroupDialog
from gui.probe.hostkey_dialog import HostKeyDialog
from gui.probe.pane import ProbePane
from gui.probe.suite_picker import SuiteChoice
from gui.workers import ThreadExecutor
from tests.gui.probe_driver import (
    click,
    click_host,
    click_into,
    click_row,
    click_tab,
    pick_probes,
    show_pane,
    table_cells,
    type_keys,
)

try:
    from tests.integration.sshd import (
        SshdServer,
        SshdUnavailable,
        find_missing_tools,
        free_port,
        unavailable,
    )
except ImportError:  # tests/ is not a package here; load the helper from its folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from sshd import (  # type: ignore[no-redef]
        SshdServer,
        SshdUnavailable,
        find_missing_tools,
        free_port,
        unavailable,
    )

# the host's own interpreter: no torch, so the steps between nodes skip
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    missing = find_missing_tools()
    if missing:
        unavailable(missing)
    server = SshdServer(workdir=tmp_path_factory.mktemp("sshd"))
    try:
        server.start()
    except SshdUnavailable as exc:
        unavailable(str(exc))
    yield server
    server.stop()


def save_nodes(store: ProbeStore, target: str = "ubuntu@10.0.0.5", key: str | None = None) -> None:
    for name in ("node-a", "node-b"):
        store.save_host(HostProfile(name=name, target=target, identity_file=key))


def save_pair(store: ProbeStore, target: str = "ubuntu@10.0.0.5", key: str | None = None) -> None:
    """node-a and node-b saved, and the cluster "pair" of the two."""
    save_nodes(store, target, key)
    save_group(store, HostGroup(name="pair", hosts=["node-a", "node-b"]))


def open_group_dialog(qtbot, pane: ProbePane) -> GroupDialog:
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as opened:
        click(qtbot, pane.hosts.buttons["cluster"])
    dialog = opened.args[0]
    assert isinstance(dialog, GroupDialog)
    qtbot.waitExposed(dialog)
    return dialog


def list_texts(pane: ProbePane) -> list[str]:
    return [pane.hosts.list.item(i).text() for i in range(pane.hosts.list.count())]


def test_a_cluster_is_made_from_saved_hosts_shown_as_a_target_and_removed(
    qtbot, probe_store, tmp_path
):
    save_nodes(probe_store)
    pane = show_pane(qtbot, probe_store, tmp_path, ThreadExecutor(), runner=ReplayRunner())
    dialog = open_group_dialog(qtbot, pane)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    assert dialog.error.text() == "" and save.isEnabled()  # a form just opened is not a mistake
    assert list(dialog.host_boxes) == ["node-a", "node-b"]  # the saved hosts, not this machine
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "node-a")
    assert (
        dialog.error.text()
        == "group name 'node-a' is already used by a saved host or another group"
    )
    assert not save.isEnabled()
    for _ in "node-a":
        type_keys(qtbot, "\b")
    type_keys(qtbot, "pair")
    # no host ticked yet: not an error yet
    assert dialog.name.text() == "pair" and dialog.error.text() == ""
    click(qtbot, dialog.host_boxes["node-a"])
    click(qtbot, dialog.host_boxes["node-b"])
    assert dialog.error.text() == "" and save.isEnabled()
    click(qtbot, save)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2000)
    assert groups(probe_store) == [HostGroup(name="pair", hosts=["node-a", "node-b"])]
    assert list_texts(pane) == [
        "This machine",
        "node-a  —  ubuntu@10.0.0.5",
        "node-b  —  ubuntu@10.0.0.5",
        "pair  —  cluster of 2: node-a, node-b",
    ]
    assert pane.hosts.current() == HostGroup(name="pair", hosts=["node-a", "node-b"])
    assert pane.history.title.text() == "Past runs of pair and its nodes node-a, node-b: 0"

    click_host(qtbot, pane, "node-a")  # a node of a cluster is not removed from under it
    with qtbot.waitSignal(pane.hosts.message, timeout=2000) as said:
        click(qtbot, pane.hosts.buttons["remove"])
    assert (
        said.args[0]
        == "Host “node-a” is a node of the cluster “pair”; remove it from that cluster first"
    )
    assert [h.name for h in probe_store.hosts()] == ["node-a", "node-b"]

    click_host(qtbot, pane, "pair")
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as asked:
        click(qtbot, pane.hosts.buttons["remove"])
    box = asked.args[0]
    assert isinstance(box, QMessageBox) and box.windowTitle() == "Remove cluster"
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    qtbot.waitUntil(lambda: groups(probe_store) == [], timeout=2000)
    assert list_texts(pane)[-1] == "node-b  —  ubuntu@10.0.0.5"
    assert [h.name for h in probe_store.hosts()] == ["node-a", "node-b"]  # the hosts stay


def test_a_one_host_cluster_is_refused_with_one_sentence_and_nothing_typed_is_lost(
    qtbot, probe_store, tmp_path
):
    save_nodes(probe_store)
    pane = show_pane(qtbot, probe_store, tmp_path, ThreadExecutor(), runner=ReplayRunner())
    dialog = open_group_dialog(qtbot, pane)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "solo")
    click(qtbot, dialog.host_boxes["node-b"])
    assert (
        dialog.error.text() == "hosts: a group needs at least 2 saved hosts; only one host picked"
    )
    assert dialog.error.isVisible() and not save.isEnabled()
    assert groups(probe_store) == []
    # the fix: the name typed and the host ticked are still there
    click(qtbot, dialog.host_boxes["node-a"])
    assert dialog.error.text() == "" and dialog.name.text() == "solo"
    click(qtbot, save)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2000)
    assert group(probe_store, "solo").hosts == ["node-a", "node-b"]


def host_python_options(choice: SuiteChoice) -> Any:
    return backend.make_options(choice).model_copy(update={"python": SYSTEM_PYTHON})


def test_renaming_a_host_renames_it_in_its_cluster(qtbot, probe_store, tmp_path):
    save_pair(probe_store)
    pane = show_pane(qtbot, probe_store, tmp_path, ThreadExecutor(), runner=ReplayRunner())
    click_host(qtbot, pane, "node-b")
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as opened:
        click(qtbot, pane.hosts.buttons["edit"])
    dialog = opened.args[0]
    qtbot.waitExposed(dialog)
    click_into(qtbot, dialog.name)
    type_keys(qtbot, "-2")
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Save))
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2000)
    assert group(probe_store, "pair").hosts == ["node-a", "node-b-2"]
    assert list_texts(pane)[-1] == "pair  —  cluster of 2: node-a, node-b-2"


def test_editing_a_cluster_starts_from_its_nodes_and_cancel_changes_nothing(
    qtbot, probe_store, tmp_path
):
    save_pair(probe_store)
    pane = show_pane(qtbot, probe_store, tmp_path, ThreadExecutor(), runner=ReplayRunner())
    click_host(qtbot, pane, "pair")
    with qtbot.waitSignal(pane.hosts.editing, timeout=2000) as opened:
        click(qtbot, pane.hosts.buttons["edit"])
    dialog = opened.args[0]
    assert isinstance(dialog, GroupDialog) and dialog.windowTitle() == "Edit cluster"
    qtbot.waitExposed(dialog)
    assert dialog.name.text() == "pair" and dialog.chosen_hosts() == ["node-a", "node-b"]
    click(qtbot, dialog.host_boxes["node-a"])
    assert (
        dialog.error.text() == "hosts: a group needs at least 2 saved hosts; only one host picked"
    )
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel))
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2000)
    assert groups(probe_store) == [HostGroup(name="pair", hosts=["node-a", "node-b"])]


@contextmanager
def ssh_pane(qtbot, store: ProbeStore, tmp_path: Path) -> Iterator[ProbePane]:
    """A Probe pane on screen that connects over real SSH (this test's known_hosts, no agent, no
    user keys); shut down at the end, its threads stopped."""
    executor = ThreadExecutor()
    options = {
        "user_known_hosts_file": tmp_path / "no_user_known_hosts",
        "allow_agent": False,
        "look_for_keys": False,
    }
    pane = ProbePane(
        executor,
        store,
        known_hosts_file=tmp_path / "app" / "known_hosts",
        transport_options=options,
        make_options=host_python_options,
    )
    qtbot.addWidget(pane)
    pane.resize(1280, 900)
    pane.show()
    qtbot.waitExposed(pane)
    try:
        yield pane
    finally:
        pane.shutdown()
        assert executor.stop_all(10_000)


@pytest.mark.integration
def test_a_node_that_cannot_be_reached_is_named_and_the_others_are_closed(
    qtbot, sshd, probe_store, tmp_path
):
    key_type, key_b64 = sshd.host_public_key.split()[:2]
    app_file = tmp_path / "app" / "known_hosts"
    app_file.parent.mkdir(parents=True)
    # node-a is known: no question
    app_file.write_text(f"[127.0.0.1]:{sshd.port} {key_type} {key_b64}\n")
    key = str(sshd.client_key_path)
    probe_store.save_host(HostProfile(name="node-a", target=sshd.target, identity_file=key))
    closed_port = free_port()  # nothing listens there
    probe_store.save_host(
        HostProfile(name="node-b", target=f"{sshd.user}@127.0.0.1:{closed_port}", identity_file=key)
    )
    save_group(probe_store, HostGroup(name="pair", hosts=["node-a", "node-b"]))
    with ssh_pane(qtbot, probe_store, tmp_path) as pane:
        reached: list[Any] = []
        pane.connector.connected.connect(reached.append)
        click_host(qtbot, pane, "pair")
        click(qtbot, pane.connect_button)
        qtbot.waitUntil(lambda: pane.status.text().startswith("Not connected: "), timeout=20000)
        assert pane.status.text().startswith("Not connected: node 'node-b': "), pane.status.text()
        assert str(closed_port) in pane.status.text()
        # node-a was reached, then closed again
        assert len(reached) == 1 and not reached[0].is_alive()
        assert (
            not pane.connected
            and not pane.start_button.isEnabled()
            and pane.connect_button.isEnabled()
        )


@pytest.mark.integration
def connect_trusting_its_key(qtbot, pane: ProbePane, name: str) -> None:
    """Select the host or cluster ``name``, press Connect and, asked about the server's key,
    remember it."""
    click_host(qtbot, pane, name)
    with qtbot.waitSignal(pane.connector.asking, timeout=15000) as asked:
        click(qtbot, pane.connect_button)
    click(qtbot, asked.args[0].remember_button)
    qtbot.waitUntil(lambda: pane.connected, timeout=20000)


def test_a_real_cluster_run_of_two_nodes_shows_each_node_the_verdict_and_the_history(
    qtbot, sshd, probe_store, tmp_path
):
    save_pair(probe_store, target=sshd.target, key=str(sshd.client_key_path))
    with ssh_pane(qtbot, probe_store, tmp_path) as pane:
        click_host(qtbot, pane, "pair")
        with qtbot.waitSignal(pane.connector.asking, timeout=15000) as asked:
            click(qtbot, pane.connect_button)
        dialog = asked.args[0]
        assert (
            isinstance(dialog, HostKeyDialog)
            and dialog.fingerprint.text() == sshd.host_key_fingerprint
        )
        questions: list[object] = []
        pane.connector.asking.connect(questions.append)
        # the second node is the same server: known now, not asked again
        click(qtbot, dialog.remember_button)
        qtbot.waitUntil(
            lambda: pane.connected or "Not connected" in pane.status.text(), timeout=20000
        )
        assert pane.status.text() == "Connected to the 2 nodes of pair", pane.status.text()
        assert questions == []
        pick_probes(qtbot, pane, "inventory")
        click(qtbot, pane.start_button)
        qtbot.waitUntil(lambda: pane.node_table.isVisible(), timeout=5000)
        qtbot.waitUntil(lambda: not pane.running, timeout=60_000)

        runs = {r.host: r for r in probe_store.runs()}
        # the cluster's row and one row of its own per node
        assert set(runs) == {"pair", "node-a", "node-b"}
        nodes = [
            ["node-a", "—", "completed", runs["node-a"].verdict or "no verdict"],
            ["node-b", "—", "completed", runs["node-b"].verdict or "no verdict"],
        ]
        assert table_cells(pane.node_table.table) == nodes
        logged = [text for _level, text in pane.log.lines()]
        for node in ("node-a", "node-b"):
            assert f"node {node}: run {runs[node].id} started" in logged
        assert any(
            line.startswith("distributed skipped: torch.distributed is not installed")
            for line in logged
        )
        assert pane.showing.text().startswith(f"Live: run {runs['pair'].id} on pair")
        assert pane.eta.text().startswith(f"Run {runs['pair'].status}")
        assert (
            pane.gpu_charts.status.text()
            == "No GPU samples: charted in each node's own run (History)"
        )

        click_tab(qtbot, pane.tabs, "Scorecard")  # the cluster run's own scorecard, not a node's
        banner = pane.scorecard_view.banner
        assert (
            banner.isVisible()
            and banner.verdict is not None
            and banner.verdict == runs["pair"].verdict
        )
        assert banner.text().startswith(banner.verdict)
        # both nodes are this machine: one kernel, the port reached on loopback
        shown = pane.scorecard_view.statuses()
        assert (shown["Same kernel"], shown["Rendezvous port"], shown["Every node probed"]) == (
            "PASS",
        ) * 3, shown
        click_tab(qtbot, pane.tabs, "History")
        history = table_cells(pane.history.table)
        assert sorted((row[0], row[1]) for row in history) == sorted(
            (str(r.id), r.host) for r in runs.values()
        )
        assert pane.history.title.text() == "Past runs of pair and its nodes node-a, node-b: 3"

        pane.disconnect_host()  # a reopened cluster run shows its nodes as they ended
        click_row(qtbot, pane.history.table, [row[1] for row in history].index("pair"))
        click(qtbot, pane.history.buttons["reopen"])
        assert pane.shown_run == runs["pair"].id and pane.node_table.isVisible()
        assert table_cells(pane.node_table.table) == [
            [n, "—", "completed", v if v != "no verdict" else "—"] for n, _p, _s, v in nodes
        ]


@pytest.mark.integration
def test_a_cluster_run_moves_its_progress_through_the_node_phase_and_names_where_storage_is_charted(
    qtbot, sshd, probe_store, tmp_path
):
    """Both nodes run inventory and storage: the bar used to sit at 0 % until the steps between
    nodes began, and the storage charts said storage "is not in this suite" though every node
    measured it."""
    save_pair(probe_store, target=sshd.target, key=str(sshd.client_key_path))
    with ssh_pane(qtbot, probe_store, tmp_path) as pane:
        connect_trusting_its_key(qtbot, pane, "pair")
        pick_probes(qtbot, pane, "inventory", "storage")
        seen: list[tuple[int, bool]] = []  # (bar value, a node still on its own suite)
        pane.progress.valueChanged.connect(
            lambda v: seen.append(
                (v, any(r.state == "running" for r in pane.node_table.progress.rows.values()))
            )
        )
        click(qtbot, pane.start_button)
        qtbot.waitUntil(lambda: not pane.running, timeout=90_000)
        assert any(value > 0 and nodes_running for value, nodes_running in seen), seen
        click_tab(qtbot, pane.tabs, "Live")
        for chart in ("throughput", "iops"):
            note = pane.point_charts[chart].note
            assert (note.text(), note.isVisible()) == (
                "storage: charted in each node's own run (History)",
                True,
            )


def scorecard_banner(qtbot, pane: ProbePane) -> str:
    """The Scorecard tab's verdict line as a person reads it: the tab clicked, the banner on
    screen."""
    click_tab(qtbot, pane.tabs, "Scorecard")
    assert pane.scorecard_view.banner.isVisible()
    return pane.scorecard_view.banner.text()


def no_verdict_yet(name: str) -> str:
    return f"No verdict yet for {name}: run a suite or reopen a past run."


@pytest.mark.integration
def test_the_scorecard_names_the_host_or_cluster_selected_never_the_one_before(
    qtbot, sshd, probe_store, tmp_path
):
    """A host probed, then a cluster, its nodes looked at, a node's own run reopened and the cluster
    run again: the scorecard used to keep naming the host selected before ("No verdict yet for pair"
    with node-a selected) once its view was cleared, and the first cluster run's stream, ending a
    moment after its verdict, could end the second one on screen ("Run interrupted") while it went
    on."""
    key = str(sshd.client_key_path)
    probe_store.save_host(HostProfile(name="solo", target=sshd.target, identity_file=key))
    save_pair(probe_store, target=sshd.target, key=key)
    with ssh_pane(qtbot, probe_store, tmp_path) as pane:

        def latest(host: str) -> RunSummary:
            return max(probe_store.runs_for_host(host), key=lambda r: r.id)

        def run_cluster_and_read() -> None:
            click(qtbot, pane.start_button)
            qtbot.waitUntil(
                lambda: any(row[2] == "running" for row in pane.node_table.cells()), timeout=20000
            )
            assert scorecard_banner(qtbot, pane) == "Running…"  # the nodes on their own suites
            qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
            assert pane.eta.text().startswith("Run completed"), pane.log.lines()[-5:]
            run = latest("pair")
            assert pane.showing.text() == f"Live: run {run.id} on pair"
            assert run.verdict is not None and scorecard_banner(qtbot, pane).startswith(run.verdict)

        connect_trusting_its_key(qtbot, pane, "solo")
        pick_probes(qtbot, pane, "inventory")
        click(qtbot, pane.start_button)
        qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
        solo = latest("solo")
        assert solo.verdict is not None and scorecard_banner(qtbot, pane).startswith(solo.verdict)

        for name in ("pair", "node-a", "pair"):  # glance at a node before connecting the cluster
            click_host(qtbot, pane, name)
            assert scorecard_banner(qtbot, pane) == no_verdict_yet(name)
        click(qtbot, pane.connect_button)
        qtbot.waitUntil(lambda: pane.connected, timeout=20000)
        assert scorecard_banner(qtbot, pane) == no_verdict_yet("pair")
        run_cluster_and_read()

        click_tab(qtbot, pane.tabs, "History")  # a node's own run, from the cluster's history
        rows = table_cells(pane.history.table)
        click_row(qtbot, pane.history.table, [row[1] for row in rows].index("node-a"))
        click(qtbot, pane.history.buttons["reopen"])
        node = latest("node-a")
        assert pane.showing.text().startswith(f"Run {node.id} on node-a, ")
        assert node.verdict is not None and scorecard_banner(qtbot, pane).startswith(node.verdict)
        for name in ("solo", "node-b", "pair"):
            click_host(qtbot, pane, name)
            assert scorecard_banner(qtbot, pane) == no_verdict_yet(name)
        run_cluster_and_read()  # still connected: the cluster again
