"""Is this a cluster to train on? What only several nodes together can answer, from a cluster run's
evidence.

Each node's own figures are graded on that node's own card (its single-host run); this card grades
what needs them all: did every node run its suite to the end and pass it, do they run the same GPUs
and the same software stack, are their clocks together, can every node reach the rendezvous, did a
torchrun across all of them see every rank and sum right, and what DCGM said on each. The network
between the nodes (ports, GPU–NIC affinity, NCCL's transport, busbw, ib_write_bw) is graded in
``cluster_network``. A part of the evidence that is missing (its step did not run) leaves its check
out, as on a single-host card.
"""

from __future__ import annotations

from collections.abc import Callable

from core.catalog import Catalog
from core.probes.cluster.evidence import ClusterEvidence, InterNodeRun
from core.probes.evidence import Check, CheckStatus, Verdict
from core.probes.parsers.dcgm import result_word
from core.probes.scorecard import thresholds as T
from core.probes.scorecard.cluster_network import network_checks
from core.probes.scorecard.common import FAIL, INFO, PASS, WARN, check, plural

# NodeFacts fields that must be equal on every node (FAIL), and those where a difference only warns.
MUST_AGREE = {
    "gpu_model": "GPU model",
    "gpu_count": "GPU count",
    "driver": "driver",
    "cuda": "CUDA",
    "nccl": "NCCL",
    "torch": "torch",
}
SHOULD_AGREE = {"kernel": "kernel"}


def cluster_checks(cluster: ClusterEvidence, catalog: Catalog) -> list[Check]:
    """The cluster row's card lines, in card order; the catalog gives the typical NICs of the nodes'
    GPU class when no node reported its ports."""
    checks: list[Check] = []
    node_checks: list[Callable[[ClusterEvidence], Check | None]] = [
        check_nodes_finished,
        check_node_verdicts,
        check_same_gpus,
        check_same_stack,
        check_same_kernel,
        check_clocks,
    ]
    checks += [c for c in (fn(cluster) for fn in node_checks) if c is not None]
    checks += network_checks(cluster, catalog)
    for fn in (check_rendezvous, check_inter_node_sanity, check_dcgm):
        found = fn(cluster)
        if found is not None:
            checks.append(found)
    return checks


# --------------------------------------------------------------------------- every node, on its own


def check_nodes_finished(cluster: ClusterEvidence) -> Check | None:
    """Every node ran its suite to the end; one that was unreachable, failed or hung is named with
    its error."""
    if not cluster.nodes:
        return None
    failed = cluster.failed_nodes
    n = len(cluster.nodes)
    measured = f"{n - len(failed)} of {plural(n, 'node')} ran their suite to the end"
    expected = "every node completes its own suite"
    source = "each node's own run in the probe history"
    if failed:
        named = "; ".join(f"{node}: {why.rstrip('.')}" for node, why in failed.items())
        return check(
            "distributed",
            "Every node probed",
            FAIL,
            measured,
            expected,
            source,
            f"{plural(len(failed), 'node')} did not finish ({named})",
        )
    return check(
        "distributed",
        "Every node probed",
        PASS,
        measured,
        expected,
        source,
        f"all {plural(n, 'node')} ran their suite",
    )


def check_node_verdicts(cluster: ClusterEvidence) -> Check | None:
    """Each node's own verdict: one NOT READY node makes the cluster NOT READY (the job runs at its
    worst node)."""
    judged = [n for n in cluster.nodes if n.verdict]
    if not judged:
        return None
    measured = "; ".join(f"{n.node} {n.verdict}" for n in judged)
    expected = "READY on every node"
    source = "each node's own scorecard"
    bad = [n.node for n in judged if (n.verdict or "").startswith(Verdict.not_ready.value)]
    if bad:
        one = len(bad) == 1
        return check(
            "distributed",
            "Node verdicts",
            FAIL,
            measured,
            expected,
            source,
            f"{', '.join(bad)} {'is' if one else 'are'} NOT READY on {'its' if one else 'their'} "
            "own card",
        )
    doubtful = [n.node for n in judged if n.verdict != Verdict.ready.value]
    if doubtful:
        return check(
            "distributed",
            "Node verdicts",
            WARN,
            measured,
            expected,
            source,
            f"{', '.join(doubtful)} {'is' if len(doubtful) == 1 else 'are'} not plainly READY "
            "(see the node's own card)",
        )
    return check(
        "distributed", "Node verdicts", PASS, measured, expected, source, "every node is READY"
    )


# --------------------------------------------------------------------------- agreement


def node_values(cluster: ClusterEvidence, field: str) -> dict[str, str | None]:
    """Each node's value of one NodeFacts field as text; the run's own agreement row wins where it
    has one."""
    row = next((r for r in cluster.agreement if r.field == field), None)
    if row is not None:
        return dict(row.values)
    values: dict[str, str | None] = {}
    for node in cluster.nodes:
        value = getattr(node.facts, field)
        values[node.node] = None if value is None else str(value)
    return values


def _difference(
    cluster: ClusterEvidence, fields: dict[str, str]
) -> tuple[list[str], list[str], int]:
    """(sentences naming who has what for each field that differs, 'field: value' for each that
    agrees, the number of fields at least two nodes reported)."""
    differ: list[str] = []
    agree: list[str] = []
    compared = 0
    for field, label in fields.items():
        reported = {node: v for node, v in node_values(cluster, field).items() if v is not None}
        if len(reported) < 2:
            continue
        compared += 1
        distinct = sorted(set(reported.values()))
        if len(distinct) == 1:
            agree.append(f"{label} {distinct[0]}")
            continue
        by_value = {v: [node for node, nv in reported.items() if nv == v] for v in distinct}
        differ.append(
            f"{label} differs: "
            + ", ".join(f"{', '.join(nodes)} {value}" for value, nodes in by_value.items())
        )
    return differ, agree, compared


def _agreement(
    cluster: ClusterEvidence, name: str, fields: dict[str, str], status: CheckStatus, why: str
) -> Check | None:
    differ, agree, compared = _difference(cluster, fields)
    if compared == 0:
        return None
    expected = "the same " + ", ".join(fields.values()) + " on every node"
    measured = "; ".join(differ) if differ else ", ".join(agree)
    if differ:
        return check(
            "inventory",
            name,
            status,
            measured,
            expected,
            T.AGREEMENT_SOURCE,
            "; ".join(differ) + f" ({why})",
        )
    return check(
        "inventory",
        name,
        PASS,
        measured,
        expected,
        T.AGREEMENT_SOURCE,
        "every node reports the same",
    )


def check_same_gpus(cluster: ClusterEvidence) -> Check | None:
    return _agreement(
        cluster,
        "Same GPUs on every node",
        {"gpu_model": "GPU model", "gpu_count": "GPU count"},
        FAIL,
        "a data-parallel job runs at the pace of its slowest node",
    )


def check_same_stack(cluster: ClusterEvidence) -> Check | None:
    fields = {k: v for k, v in MUST_AGREE.items() if k not in ("gpu_model", "gpu_count")}
    return _agreement(
        cluster,
        "Same driver, CUDA, NCCL and torch",
        fields,
        FAIL,
        "collectives between different NCCL/torch builds fail or hang",
    )


def check_same_kernel(cluster: ClusterEvidence) -> Check | None:
    return _agreement(
        cluster,
        "Same kernel",
        SHOULD_AGREE,
        WARN,
        "not fatal, but drivers and RDMA modules are built per kernel",
    )


def check_clocks(cluster: ClusterEvidence) -> Check | None:
    """The nodes' clocks against this machine's: > 1 s warns (logs do not line up), > 300 s fails
    (Kerberos)."""
    offsets = {
        n.node: n.facts.clock_offset_s for n in cluster.nodes if n.facts.clock_offset_s is not None
    }
    if not offsets:
        return None
    node, worst = max(offsets.items(), key=lambda kv: abs(kv[1]))
    measured = ", ".join(f"{name} {value:+.3f} s" for name, value in offsets.items())
    expected = f"every node within {T.CLOCK_WARN_S:g} s of this machine's clock"
    if abs(worst) > T.CLOCK_FAIL_S:
        return check(
            "inventory",
            "Clocks in step",
            FAIL,
            measured,
            expected,
            T.CLOCK_SOURCE,
            f"{node}'s clock is {abs(worst):,.0f} s off; run NTP/chrony on every node",
        )
    if abs(worst) > T.CLOCK_WARN_S:
        return check(
            "inventory",
            "Clocks in step",
            WARN,
            measured,
            expected,
            T.CLOCK_SOURCE,
            f"{node}'s clock is {abs(worst):.1f} s off: the nodes' logs will not line up",
        )
    return check(
        "inventory",
        "Clocks in step",
        PASS,
        measured,
        expected,
        T.CLOCK_SOURCE,
        f"every node within {T.CLOCK_WARN_S:g} s",
    )


# --------------------------------------------------------------------------- between the nodes


def check_rendezvous(cluster: ClusterEvidence) -> Check | None:
    """Every node reached the rendezvous port on the first node before torchrun was started."""
    rdzv = cluster.rendezvous
    if rdzv is None:
        return None
    where = f"{rdzv.host}:{rdzv.port}"
    expected = f"every node connects to {where}"
    if not rdzv.reached_from:
        return check(
            "distributed",
            "Rendezvous port",
            INFO,
            "not tried",
            expected,
            T.RENDEZVOUS_SOURCE,
            "no node tried to reach the rendezvous port",
        )
    reached = [n for n, ok in rdzv.reached_from.items() if ok]
    measured = f"{len(reached)} of {plural(len(rdzv.reached_from), 'node')} reached {where}"
    if not rdzv.ok:
        failed = [n for n, ok in rdzv.reached_from.items() if not ok]
        named = "; ".join(
            f"{n}: {rdzv.errors[n].rstrip('.')}" if n in rdzv.errors else n for n in failed
        )
        return check(
            "distributed",
            "Rendezvous port",
            FAIL,
            measured,
            expected,
            T.RENDEZVOUS_SOURCE,
            f"{', '.join(failed)} could not reach {where} ({named}); open the port between the "
            "nodes",
        )
    return check(
        "distributed",
        "Rendezvous port",
        PASS,
        measured,
        expected,
        T.RENDEZVOUS_SOURCE,
        f"every node reached {where}",
    )


def _ranks_problem(run: InterNodeRun) -> str | None:
    """Why the sanity check's ranks are not one full world, or None when they are."""
    ranks = sorted(int(r["RANK"]) for r in run.ranks if str(r.get("RANK", "")).isdigit())
    if ranks != list(range(run.world_size)):
        return f"{len(ranks)} of {run.world_size} ranks reported"
    sizes = {r.get("WORLD_SIZE") for r in run.ranks}
    if sizes != {str(run.world_size)}:
        return f"ranks disagree on WORLD_SIZE ({', '.join(sorted(str(s) for s in sizes))})"
    return None


def check_inter_node_sanity(cluster: ClusterEvidence) -> Check | None:
    """The torchrun across all nodes: every rank reported once and the all_reduce summed exactly."""
    run = cluster.distributed
    if run is None:
        return None
    name = "Torchrun across nodes"
    expected = f"{run.world_size} ranks ({run.nnodes} × {run.nproc_per_node}), all_reduce sum exact"
    measured = (
        f"{len(run.ranks)} of {run.world_size} ranks on "
        f"{plural(len(run.nodes) or run.nnodes, 'node')} ({run.backend})"
    )
    if run.error:
        who = f" on {run.failed_node}" if run.failed_node else ""
        return check(
            "distributed",
            name,
            FAIL,
            measured,
            expected,
            T.DIST_SOURCE,
            f"the launch failed{who}: {run.error.rstrip('.')}",
        )
    problem = _ranks_problem(run)
    if problem:
        return check("distributed", name, FAIL, measured, expected, T.DIST_SOURCE, problem)
    if run.all_reduce_ok is False:
        return check(
            "distributed",
            name,
            FAIL,
            measured,
            expected,
            T.DIST_SOURCE,
            "the all_reduce across the nodes returned a wrong sum",
        )
    if run.all_reduce_ok is None:
        return check(
            "distributed",
            name,
            WARN,
            measured,
            expected,
            T.DIST_SOURCE,
            "every rank reported, but the all_reduce result was not reported",
        )
    return check(
        "distributed",
        name,
        PASS,
        measured,
        expected,
        T.DIST_SOURCE,
        f"all {run.world_size} ranks up and the all_reduce exact",
    )


def check_dcgm(cluster: ClusterEvidence) -> Check | None:
    """``dcgmi diag`` on each node: a Fail on any node fails, a Warn (or a diag that could not run)
    warns."""
    if not cluster.dcgm:
        return None
    levels = sorted({d.level for d in cluster.dcgm})
    expected = "Pass (or Skip) on every test of every node"
    source = T.DCGM_SOURCE
    failed, warned, broken = [], [], []
    for diag in cluster.dcgm:
        if diag.error:
            broken.append(f"{diag.node}: {diag.error.rstrip('.')}")
        failed += [
            f"{diag.node} {test}: {cell}"
            for test, cell in diag.results.items()
            if result_word(cell) == "fail"
        ]
        warned += [
            f"{diag.node} {test}: {cell}"
            for test, cell in diag.results.items()
            if result_word(cell) == "warn"
        ]
    ran = [d for d in cluster.dcgm if not d.error]
    measured = (
        f"dcgmi diag -r {'/'.join(str(lv) for lv in levels)} on {plural(len(ran), 'node')}"
        + (f", {len(failed)} failed" if failed else "")
        + (f", {len(warned)} warned" if warned else "")
    )
    name = "DCGM diagnostics"
    if failed:
        return check("health", name, FAIL, measured, expected, source, "; ".join(failed[:4]))
    if warned or broken:
        return check(
            "health", name, WARN, measured, expected, source, "; ".join((warned + broken)[:4])
        )
    return check(
        "health",
        name,
        PASS,
        measured,
        expected,
        source,
        f"every test passed on {plural(len(ran), 'node')}",
    )


__all__ = ["MUST_AGREE", "SHOULD_AGREE", "cluster_checks", "node_values"]
