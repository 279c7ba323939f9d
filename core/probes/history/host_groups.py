"""Saved host groups: two or more saved hosts probed together as one cluster, kept in the probe
history.

Why a table of its own: a group is what the user made, like a host profile, and must outlive a
restart; it names its member hosts by their profile names (the labels their runs are filed under),
so a member's connection details stay in one place, the host profile. The store's schema gets the
table in its third version (``_v3`` in ``core.probes.history.store_schema``); older files gain an
empty table and keep everything else.

The rules a group follows (``group_error``) are one sentence each, naming the field: a name, not
already used by a saved host or another group (runs are filed under names, so one name must mean one
target), and at least two distinct saved hosts. Writes go through the store's ``execute_write`` (one
transaction each, carried over to memory when the file fails) and reads through ``query``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from core.probes.history.store import ProbeStore

MIN_GROUP_HOSTS = 2


class HostGroup(BaseModel):
    """A saved cluster target: a name and the saved hosts (by profile name) that are its nodes, in
    order."""

    name: str = Field(
        min_length=1, description="label shown in the host list; the cluster run is filed under it"
    )
    hosts: list[str] = Field(
        min_length=MIN_GROUP_HOSTS, description="member host profile names, in node order"
    )


def group_error(
    name: str, hosts: Sequence[str], taken: Collection[str], saved_hosts: Collection[str]
) -> str | None:
    """One sentence on what is wrong with a group as entered (the name first), or None.

    ``taken`` are the names already used by saved hosts and other groups; ``saved_hosts`` the hosts
    it may hold.
    """
    name = name.strip()
    if not name:
        return "group name is empty; give the cluster a label, e.g. 'lambda-2-nodes'"
    if name in taken:
        return f"group name '{name}' is already used by a saved host or another group"
    missing = [h for h in hosts if h not in saved_hosts]
    if missing:
        return (
            f"hosts: '{missing[0]}' is not a saved host; pick the group's hosts from the saved ones"
        )
    if len(set(hosts)) != len(list(hosts)):
        return "hosts: a host is picked twice; each node of a group is a different saved host"
    if len(hosts) < MIN_GROUP_HOSTS:
        picked = "no host" if not hosts else "only one host"
        return f"hosts: a group needs at least {MIN_GROUP_HOSTS} saved hosts; {picked} picked"
    return None


def save_group(store: ProbeStore, group: HostGroup) -> None:
    """Insert or update (by name) a host group."""
    now = time.time()
    store.execute_write(
        "INSERT INTO host_groups (name, hosts, created, updated) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET hosts = excluded.hosts, updated = excluded.updated",
        [group.name, json.dumps(list(group.hosts)), now, now],
    )


def groups(store: ProbeStore) -> list[HostGroup]:
    """Saved host groups, by name; a row whose member list cannot be read is left out rather than
    shown wrong."""
    result = []
    for row in store.query("SELECT name, hosts FROM host_groups ORDER BY name COLLATE NOCASE"):
        try:
            hosts = json.loads(row["hosts"])
            result.append(HostGroup(name=row["name"], hosts=[str(h) for h in hosts]))
        except (ValueError, TypeError):
            continue
    return result


def group(store: ProbeStore, name: str) -> HostGroup:
    """The saved group called ``name``; KeyError when there is none."""
    for saved in groups(store):
        if saved.name == name:
            return saved
    raise KeyError(f"no saved host group named '{name}'")


def delete_group(store: ProbeStore, name: str) -> None:
    """Forget a group (its runs, and its nodes' runs, stay in the history)."""
    store.execute_write("DELETE FROM host_groups WHERE name = ?", [name])


def groups_with(store: ProbeStore, host: str) -> list[str]:
    """The names of the groups that hold ``host``: a host in a group is not removed from under
    it."""
    return [g.name for g in groups(store) if host in g.hosts]


def rename_member(store: ProbeStore, old: str, new: str) -> None:
    """A host profile renamed: every group that held it holds it under its new name."""
    for saved in groups(store):
        if old in saved.hosts:
            save_group(
                store,
                saved.model_copy(update={"hosts": [new if h == old else h for h in saved.hosts]}),
            )


__all__ = [
    "MIN_GROUP_HOSTS",
    "HostGroup",
    "delete_group",
    "group",
    "group_error",
    "groups",
    "groups_with",
    "rename_member",
    "save_group",
]
