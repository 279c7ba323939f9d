"""Saved host groups (cluster targets) in the probe history: saved, listed, renamed with their
hosts, removed, refused with one sentence when malformed, and a history file written before groups
existed (schema 2) opening with its hosts and runs intact and an empty group list.

The schema-2 file is made with the migrations as they stood (the first two), then written with plain
SQL, so the test does not depend on the code that migrates it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from pydantic import ValidationError

from core.probes.history.host_groups import (
    HostGroup,
    delete_group,
    group,
    group_error,
    groups,
    groups_with,
    rename_member,
    save_group,
)
from core.probes.history.records import HostProfile
from core.probes.history.store import MIGRATIONS, ProbeStore
from core.sqlite_schema import migrate


def test_groups_are_saved_listed_updated_and_removed(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "p.db")
    save_group(store, HostGroup(name="pair", hosts=["b", "a"]))
    save_group(store, HostGroup(name="Alpha", hosts=["a", "c", "d"]))
    store.close()
    store = ProbeStore(tmp_path / "p.db")  # what the user made outlives the session
    assert groups(store) == [
        HostGroup(name="Alpha", hosts=["a", "c", "d"]),
        HostGroup(name="pair", hosts=["b", "a"]),
    ]
    save_group(store, HostGroup(name="pair", hosts=["a", "c"]))
    assert group(store, "pair").hosts == ["a", "c"]
    assert groups_with(store, "c") == ["Alpha", "pair"] and groups_with(store, "b") == []
    rename_member(store, "a", "a2")
    assert [g.hosts for g in groups(store)] == [["a2", "c", "d"], ["a2", "c"]]
    delete_group(store, "pair")
    assert [g.name for g in groups(store)] == ["Alpha"]
    with pytest.raises(KeyError, match="no saved host group named 'pair'"):
        group(store, "pair")
    store.close()


def test_a_group_of_one_host_is_not_a_group() -> None:
    with pytest.raises(ValidationError):
        HostGroup(name="solo", hosts=["a"])


@pytest.mark.parametrize(
    ("name", "hosts", "sentence"),
    [
        ("", ["a", "b"], "group name is empty; give the cluster a label, e.g. 'lambda-2-nodes'"),
        ("  ", ["a", "b"], "group name is empty; give the cluster a label, e.g. 'lambda-2-nodes'"),
        ("a", ["a", "b"], "group name 'a' is already used by a saved host or another group"),
        ("pair", ["a"], "hosts: a group needs at least 2 saved hosts; only one host picked"),
        ("pair", [], "hosts: a group needs at least 2 saved hosts; no host picked"),
        (
            "pair",
            ["a", "a"],
            "hosts: a host is picked twice; each node of a group is a different saved host",
        ),
        (
            "pair",
            ["a", "zz"],
            "hosts: 'zz' is not a saved host; pick the group's hosts from the saved ones",
        ),
        ("pair", ["a", "b"], None),
    ],
)
def test_group_errors_are_one_sentence_naming_the_field(
    name: str, hosts: list[str], sentence: str | None
) -> None:
    assert (
        group_error(name, hosts, taken={"a", "b", "old-group"}, saved_hosts={"a", "b"}) == sentence
    )


def test_a_schema_2_history_opens_with_its_hosts_and_runs_and_no_groups(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite_utils.Database(sqlite3.connect(path, isolation_level=None))
    migrate(old, MIGRATIONS[:2], 0)
    old.execute(
        "INSERT INTO hosts (name, target, local, created, updated) VALUES ('lambda', 'u@1.2.3.4', "
        "0, 1, 1)"
    )
    old.execute(
        "INSERT INTO runs (host, suite, started, status, verdict) "
        "VALUES ('lambda', 'quick', 100.0, 'completed', 'READY')"
    )
    assert old.execute("PRAGMA user_version").fetchone()[0] == 2
    old.conn.close()

    store = ProbeStore(path)
    assert store.schema_version == 4  # v3 host groups, v4 the host's Python
    assert [(h.name, h.target) for h in store.hosts()] == [("lambda", "u@1.2.3.4")]
    assert [(r.host, r.status, r.verdict) for r in store.runs()] == [
        ("lambda", "completed", "READY")
    ]
    assert groups(store) == []
    store.save_host(HostProfile(name="other", target="u@1.2.3.5"))
    save_group(store, HostGroup(name="pair", hosts=["lambda", "other"]))
    assert groups(store) == [HostGroup(name="pair", hosts=["lambda", "other"])]
    store.close()
