"""``nvidia-smi topo -m``: the GPU x GPU (+ NIC) connection matrix.

Columns are tab-separated on a real terminal but often space-aligned after copy/paste; the header
row may be wrapped in ANSI underline codes. Rows are ``GPUk`` / ``NICk`` (older drivers name NICs
``mlx5_k``), followed by ``CPU Affinity``, ``NUMA Affinity`` and (newer) ``GPU NUMA ID``; then a
``Legend:`` block and a ``NIC Legend:`` that maps ``NIC0`` to ``mlx5_0``.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import clean_text, is_missing, never_raises
from core.probes.samples import ParseResult, TopoGpu, TopologyMatrix, TopoNic

_TAIL_COLUMNS = ("cpu affinity", "numa affinity", "gpu numa id")
_LINK = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
_GPU_LABEL = re.compile(r"^GPU(\d{1,6})$")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def _header(line: str) -> tuple[list[str], list[str]] | None:
    """(device column labels, trailing column names) when ``line`` is the matrix header."""
    lowered = line.lower()
    if not re.search(r"\bGPU\d+\b", line) or ("affinity" not in lowered and "\t" not in line):
        return None
    tail = [name for name in _TAIL_COLUMNS if name in lowered]
    head = line
    for name in _TAIL_COLUMNS:
        head = re.sub(re.escape(name), " ", head, flags=re.IGNORECASE)
    labels = head.split()
    if not labels or not _GPU_LABEL.match(labels[0]) or any(_LINK.match(label) for label in labels):
        return None  # a matrix row, not the header
    return labels, tail


@never_raises
def parse_topo_matrix(text: str) -> ParseResult[TopologyMatrix]:
    """Parse ``nvidia-smi topo -m``; unknown cells are kept as printed and reported in warnings."""
    warnings: list[str] = []
    lines = clean_text(text).split("\n")
    labels: list[str] | None = None
    tail: list[str] = []
    rows: dict[str, list[str]] = {}
    legend: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("```"):
            continue
        legend_match = _LEGEND_NIC.match(line)
        if legend_match and labels is not None:
            legend[legend_match.group(1)] = legend_match.group(2)
            continue
        if labels is None:
            parsed = _header(line)
            if parsed:
                labels, tail = parsed
            continue
        cells = stripped.split()
        if cells[0] in labels and cells[0] not in rows:
            rows[cells[0]] = cells[1:]
    if labels is None:
        return ParseResult(
            value=None, warnings=["no 'GPU0 GPU1 ... CPU Affinity' header found in topo -m"]
        )

    gpu_columns = [
        (pos, int(m.group(1))) for pos, label in enumerate(labels) if (m := _GPU_LABEL.match(label))
    ]
    nic_columns = [(pos, label) for pos, label in enumerate(labels) if not _GPU_LABEL.match(label)]
    matrix = TopologyMatrix(
        nics=[
            TopoNic(
                index=k,
                label=label,
                device=legend.get(label, None if label.startswith("NIC") else label),
            )
            for k, (_, label) in enumerate(nic_columns)
        ]
    )
    for _, gpu in gpu_columns:
        row_cells = rows.get(f"GPU{gpu}")
        if row_cells is None:
            warnings.append(f"row GPU{gpu} missing from topo -m (output cut?)")
            continue
        links, extra = row_cells[: len(labels)], row_cells[len(labels) :]
        if len(links) < len(labels):
            warnings.append(f"row GPU{gpu} has {len(links)} link cells, expected {len(labels)}")
        for pos, other in gpu_columns:
            if pos < len(links):
                matrix.links[(gpu, other)] = links[pos]
        for k, (pos, _label) in enumerate(nic_columns):
            if pos < len(links):
                matrix.gpu_nic_links[(gpu, k)] = links[pos]
        info = dict(zip(tail, extra, strict=False))
        matrix.gpus.append(
            TopoGpu(
                index=gpu,
                cpu_affinity=None
                if is_missing(info.get("cpu affinity"))
                else info.get("cpu affinity"),
                numa_affinity=None
                if is_missing(info.get("numa affinity"))
                else info.get("numa affinity"),
                gpu_numa_id=None
                if is_missing(info.get("gpu numa id"))
                else info.get("gpu numa id"),
            )
        )
    cells = [*matrix.links.values(), *matrix.gpu_nic_links.values()]
    unknown = sorted({c for c in cells if not _LINK.match(c)})
    if unknown:
        warnings.append(f"unrecognised link types in topo -m: {', '.join(unknown)}")
    if not matrix.gpus:
        return ParseResult(value=None, warnings=[*warnings, "no GPU row found in topo -m"])
    return ParseResult(value=matrix, warnings=warnings)
