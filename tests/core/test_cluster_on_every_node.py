"""`on_every_node`: what each node of a cluster does on its own runs on all of them at once, and a
failure on one node neither hides the others' results from their own threads nor another node's
earlier failure."""

from __future__ import annotations

import threading

import pytest

from core.probes.cluster.session import on_every_node


def test_every_node_works_at_the_same_time() -> None:
    """Each node's work waits at a barrier that only opens when all are inside it at once: one after
    another, the first would wait out the barrier's timeout and break it."""
    nodes = ["a", "b", "c", "d"]
    together = threading.Barrier(len(nodes), timeout=20)
    assert on_every_node(nodes, lambda node: (together.wait(), node.upper())[1]) == [
        "A",
        "B",
        "C",
        "D",
    ]


def test_the_first_failing_node_in_order_is_raised_after_every_node_ended() -> None:
    ended: list[str] = []
    release = threading.Event()

    def work(node: str) -> str:
        if node == "c":
            raise ValueError("c failed")
        if node == "b":
            release.wait(5)  # still working when c has failed
            ended.append(node)
            raise RuntimeError("b failed")
        ended.append(node)
        if node == "d":
            release.set()
        return node

    with pytest.raises(RuntimeError, match="b failed"):
        on_every_node(["a", "b", "c", "d"], work)
    assert sorted(ended) == ["a", "b", "d"]


def test_no_nodes_no_work() -> None:
    assert on_every_node([], lambda node: node) == []
