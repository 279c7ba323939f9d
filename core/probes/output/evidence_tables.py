"""The probe report's tables of what a run found: the scorecard (sources as numbered citations), the
findings, the host's inventory, and the raw-evidence appendix (the collective sweep, fio jobs, Xid
lines, the burn).

They are the report's tabular half, each built from the evidence alone; kept apart from the report's
order of sections and its key figures (core.probes.output.report), which only place them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.document import Block, Bullets, Paragraph, Table
from core.probes.evidence import CheckStatus, ProbeEvidence, Scorecard
from core.probes.samples import CollectiveResult
from core.probes.scorecard import size_label
from core.units import fmt_bytes, plural

STATUS_ORDER = {
    CheckStatus.fail: 0,
    CheckStatus.warn: 1,
    CheckStatus.passed: 2,
    CheckStatus.info: 3,
}
_URL_IN_PARENS = re.compile(r"\s*\((https?://[^\s)]+)\)")
_URL = re.compile(r"https?://[^\s);,]+")


class References:
    """Numbered citations: long URLs leave the tables for a 'Sources' list, so a row stays a few
    lines tall."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def number(self, url: str) -> int:
        if url not in self.urls:
            self.urls.append(url)
        return self.urls.index(url) + 1

    def cite(self, text: str) -> str:
        """'Azure NHC (https://…)' → 'Azure NHC [3]'."""
        text = _URL_IN_PARENS.sub(lambda m: f" [{self.number(m.group(1))}]", text)
        return _URL.sub(lambda m: f"[{self.number(m.group(0))}]", text)

    def block(self) -> Bullets:
        return Bullets(items=[f"[{i}] {url}" for i, url in enumerate(self.urls, start=1)])


def scorecard_table(card: Scorecard, refs: References | None = None) -> Table:
    """One row per check, failures first; sources as [n] citations when ``refs`` collects the
    URLs."""
    checks = sorted(card.checks, key=lambda c: STATUS_ORDER[c.status])
    cite = refs.cite if refs is not None else str
    return Table(
        header=["check", "status", "measured", "expected", "source"],
        widths=[1.5, 0.75, 2.4, 2.4, 1.7],
        rows=[[c.name, c.status.value, c.measured, c.expected, cite(c.source)] for c in checks],
    )


def findings(card: Scorecard) -> Bullets | None:
    items = [
        f"{c.status.value} — {c.name}: {c.reason}."
        for c in sorted(card.checks, key=lambda c: STATUS_ORDER[c.status])
        if c.status in (CheckStatus.fail, CheckStatus.warn)
    ]
    return Bullets(items=items) if items else None


def inventory_tables(evidence: ProbeEvidence) -> list[Block]:
    inv = evidence.inventory
    if inv is None:
        return [Paragraph(text="The inventory probe did not run.")]
    nv = inv.nvidia
    rows: list[tuple[str, str | None]] = [
        ("hostname", inv.hostname),
        ("OS", inv.os),
        ("kernel", inv.kernel),
        (
            "CPU",
            f"{inv.cpu_model or '?'} ({inv.cpu_cores} cores)" if inv.cpu_cores else inv.cpu_model,
        ),
        ("memory", fmt_bytes(inv.ram_bytes) if inv.ram_bytes else None),
        ("virtualisation", inv.virtualization),
        ("Python / torch", " / ".join(v for v in (inv.python, inv.torch) if v) or None),
        (
            "NVIDIA driver / CUDA",
            f"{nv.driver_version or '?'} / {nv.cuda_version or '?'}"
            if nv
            else "no NVIDIA GPU found",
        ),
    ]
    blocks: list[Block] = [
        Table(header=["property", "value"], widths=[1, 3], rows=[[k, v] for k, v in rows if v])
    ]
    if nv is not None and nv.gpus:
        blocks.append(
            Table(
                header=[
                    "GPU",
                    "model",
                    "memory",
                    "PCIe now / max",
                    "MIG",
                    "ECC",
                    "persist.",
                    "UUID",
                ],
                widths=[0.4, 2, 0.9, 1.1, 0.7, 0.7, 0.6, 2.4],
                rows=[
                    [
                        str(g.index),
                        g.name or "?",
                        fmt_bytes(g.memory_total_bytes) if g.memory_total_bytes else "?",
                        f"Gen{g.pcie_gen_current} x{g.pcie_width_current} / Gen{g.pcie_gen_max} "
                        f"x{g.pcie_width_max}"
                        if g.pcie_gen_current
                        else "?",
                        g.mig_mode or "—",
                        g.ecc_mode or "—",
                        {True: "on", False: "off", None: "—"}[g.persistence_mode],
                        g.uuid or "—",
                    ]
                    for g in nv.gpus
                ],
            )
        )
    if inv.filesystems:
        first = ["mount", "type", "size", "free"]
        seen = {k for fs in inv.filesystems for k in fs}
        keys = [k for k in first if k in seen] + sorted(seen - set(first))
        blocks.append(
            Table(
                header=keys,
                rows=[[fs_cell(k, fs.get(k, "")) for k in keys] for fs in inv.filesystems],
            )
        )
    if inv.infiniband is not None and inv.infiniband.ports:
        blocks.append(
            Table(
                header=["device", "port", "state", "physical", "rate Gb/s", "link layer", "CA"],
                rows=[
                    [
                        p.device,
                        str(p.port),
                        p.state or "?",
                        p.phys_state or "?",
                        f"{p.rate_gbps:g}" if p.rate_gbps else "?",
                        p.link_layer or "?",
                        p.ca_type or "?",
                    ]
                    for p in inv.infiniband.ports
                ],
            )
        )
    return blocks


def fs_cell(key: str, value: str) -> str:
    """A filesystem's cell as read: df's size and free are byte counts (df -B1), written as sizes
    (1.97 TB)."""
    return fmt_bytes(int(value)) if key in ("size", "free") and value.isdigit() else value


def _collective_table(coll: CollectiveResult) -> Table:
    def cell(v: float | int | None, fmt: str = "{:,.2f}") -> str:
        return "—" if v is None else fmt.format(v)

    rows = []
    for r in sorted(coll.rows, key=lambda r: r.size_bytes):
        t = r.in_place or r.out_of_place
        rows.append(
            [
                size_label(r.size_bytes),
                r.dtype or "?",
                cell(t.time_us if t else None, "{:,.1f}"),
                cell(t.algbw_gbps if t else None),
                cell(t.busbw_gbps if t else None),
                cell(t.wrong if t else None, "{}"),
            ]
        )
    return Table(
        header=["size", "type", "time µs", "algbw GB/s", "busbw GB/s", "#wrong"], rows=rows
    )


def appendix(evidence: ProbeEvidence, warnings: Sequence[str]) -> list[Block]:
    blocks: list[Block] = []
    coll = evidence.collectives
    if coll is not None:
        ranks = plural(coll.nranks, "rank") if coll.nranks else "ranks not printed"
        facts = [
            f"tool {coll.tool}, op {coll.op or 'not printed'}, {ranks}"
            + (" (inferred)" if coll.nranks_inferred else ""),
            "hosts: "
            f"{', '.join(sorted({d.host for d in coll.devices if d.host})) or 'not printed'}",
            f"average busbw line: {coll.avg_busbw if coll.avg_busbw is not None else '—'} GB/s; "
            f"peak {coll.peak_busbw if coll.peak_busbw is not None else '—'} GB/s",
            f"NCCL {coll.nccl_version or 'version not printed'}; "
            f"{coll.net or 'NET line not printed'}; GDR "
            f"{ {True: 'on', False: 'off', None: 'unknown'}[coll.gdr] }; algorithm "
            f"{coll.algo or 'default'}",
        ]
        blocks += [
            Paragraph(text="All-reduce run (rows are in-place where printed):"),
            Bullets(items=facts),
        ]
        if coll.rows:
            blocks.append(_collective_table(coll))
        if coll.failures:
            blocks.append(Bullets(items=coll.failures[:10]))
    jobs = [(s, f, j) for s in evidence.storage for f in s.fio for j in f.jobs]
    if jobs:
        rows = []
        for s, _f, j in jobs:
            for side, d in (("read", j.read), ("write", j.write)):
                if d is None or not (d.iops or d.bw_bytes_per_s):
                    continue
                rows.append(
                    [
                        s.path,
                        j.name,
                        j.rw or "?",
                        j.bs or "?",
                        side,
                        f"{(d.bw_bytes_per_s or 0) / 1e6:,.1f}",
                        f"{d.iops or 0:,.0f}",
                        f"{d.clat_p99_ns / 1e6:.2f}" if d.clat_p99_ns else "—",
                    ]
                )
        blocks += [
            Paragraph(text="fio jobs:"),
            Table(
                header=["path", "job", "rw", "bs", "side", "MB/s", "IOPS", "p99 ms"],
                rows=rows,
                widths=[1.5, 1.2, 0.8, 0.5, 0.6, 0.8, 0.8, 0.7],
            ),
        ]
    log = evidence.kernel_log
    if log is not None and (log.xids or log.sxids):
        blocks += [
            Paragraph(text="Xid lines from the kernel log:"),
            Table(
                header=["line", "time", "Xid", "PCI", "process", "message"],
                widths=[0.5, 2.1, 0.45, 1.1, 1, 3.6],
                rows=[
                    [
                        str(x.line_no),
                        x.timestamp or "—",
                        str(x.code),
                        x.pci or "—",
                        x.process or "—",
                        x.message[:200],
                    ]
                    for x in log.xids[:40]
                ],
            ),
        ]
    burn = evidence.burn
    if burn is not None:
        blocks += [
            Paragraph(text="Stability burn:"),
            Bullets(
                items=[
                    f"{burn.duration_s / 60:.1f} min, {burn.samples} samples, "
                    f"{'completed' if burn.completed else 'stopped'}",
                    f"max temperature {burn.max_temp_c if burn.max_temp_c is not None else '—'} "
                    "°C; lowest SM clock "
                    f"{burn.min_sm_clock_mhz if burn.min_sm_clock_mhz is not None else '—'} MHz",
                    "clock-event reasons seen: "
                    f"{', '.join(burn.throttle_reasons_seen) or 'none'}; Xid: "
                    f"{', '.join(str(c) for c in burn.xid_codes) or 'none'}",
                    f"TFLOP/s first vs last minute: {burn.tflops_first_minute or '—'} → "
                    f"{burn.tflops_last_minute or '—'}",
                ]
            ),
        ]
    dist = evidence.distributed
    if dist is not None:
        blocks += [
            Paragraph(
                text=f"Distributed sanity: backend {dist.backend}, world size {dist.world_size}, "
                f"all_reduce {'exact' if dist.all_reduce_ok else 'WRONG'}"
                + (
                    f", NCCL_SOCKET_IFNAME {dist.nccl_socket_ifname}"
                    if dist.nccl_socket_ifname
                    else ""
                )
                + (f"; error: {dist.error}" if dist.error else "")
            )
        ]
    if warnings:
        blocks += [
            Paragraph(text="Warnings raised while probing and parsing:"),
            Bullets(items=list(warnings)),
        ]
    return blocks or [Paragraph(text="No raw evidence was recorded.")]


__all__ = [
    "STATUS_ORDER",
    "References",
    "appendix",
    "findings",
    "fs_cell",
    "inventory_tables",
    "scorecard_table",
]
