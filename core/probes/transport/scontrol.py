"""What ``scontrol show partition`` and ``scontrol show node`` print, read: each partition's node
count and default flag, each node's address (NodeAddr) and its GPUs as a step asks for them.

Pure text in, dicts out, apart from the allocation (core.probes.transport.slurm) that runs scontrol,
so the reading is tested on real output without a Slurm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Partition:
    """What a partition line of ``scontrol show partition -o`` tells: its name, node count, default
    flag."""

    name: str
    total_nodes: int
    default: bool


def parse_partitions(text: str) -> dict[str, Partition]:
    """``scontrol show partition`` (``-o``: one line a partition; without: a block a partition) ->
    partitions by name."""
    partitions: dict[str, Partition] = {}
    for fields in _records(text, "PartitionName"):
        name = fields["PartitionName"]
        total = fields.get("TotalNodes", "0")
        partitions[name] = Partition(
            name, int(total) if total.isdigit() else 0, fields.get("Default") == "YES"
        )
    return partitions


def parse_node_addresses(text: str) -> dict[str, str]:
    """``scontrol show node`` (one line or a block a node) -> NodeName: NodeAddr."""
    return {
        fields["NodeName"]: fields["NodeAddr"]
        for fields in _records(text, "NodeName")
        if fields.get("NodeAddr")
    }


def parse_node_gpus(text: str) -> dict[str, str]:
    """``scontrol show node`` -> NodeName: its GPU GRES as a step asks for it ("gpu:h100:8" from
    ``Gres=gpu:h100:8(S:0-1),nic:2``); nodes without GPUs are left out."""
    gpus: dict[str, str] = {}
    for fields in _records(text, "NodeName"):
        gres = re.sub(r"\([^)]*\)", "", fields.get("Gres", ""))
        wanted = [
            part for part in gres.split(",") if part.split(":")[0] == "gpu" and part[-1:].isdigit()
        ]
        if wanted:
            gpus[fields["NodeName"]] = ",".join(wanted)
    return gpus


def _records(text: str, first_key: str) -> list[dict[str, str]]:
    """``Key=Value`` words grouped into records, each opened by ``first_key=``. Values never hold
    spaces in the keys read here (names, counts, YES/NO, addresses)."""
    records: list[dict[str, str]] = []
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep:
            continue
        if key == first_key:
            records.append({})
        if records:
            records[-1].setdefault(key, value)
    return [r for r in records if r.get(first_key)]


__all__ = ["Partition", "parse_node_addresses", "parse_node_gpus", "parse_partitions"]
