"""Which network NCCL chose, read from its ``NCCL_DEBUG=INFO`` lines wherever they sit in a run's
output.

The inter-node scorecard's central question — RDMA or plain TCP sockets? — is answered by NCCL
itself, in lines interleaved with any program's output (nccl-tests, torchrun, a training script) and
prefixed by whatever launched it (``host:pid:tid [0] NCCL INFO ...``, srun's ``0: ``, mpirun's
``[1,0]<stdout>:``). Only the text after ``NCCL INFO`` is read, so every prefix works the same. NCCL
says the same thing several ways across versions:

* ``NET/IB : Using [0]mlx5_5:1/RoCE [RO]; OOB eno7np0:169.254.103.56<0>`` and
  ``NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:...`` (the devices each transport found),
* ``Using network IB`` / ``Socket`` / ``AWS Libfabric`` (the one it chose; ``Using internal Network
  IB`` before 2.4), and from 2.27 ``Assigned NET plugin Socket to comm``,
* ``Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA`` (what each connection runs over),
* ``Connected all rings ... GDR 0``, ``GPU Direct RDMA Enabled|Disabled for HCA`` and aws-ofi-nccl's
  ``NET/OFI ... disabling GDR`` (GPUDirect RDMA).

The chosen network is taken from the first of: ``Using network``, the plugin assignment, the ``via
NET/...`` paths, the one ``NET/... : Using`` transport that found devices.
"""

from __future__ import annotations

import re

from core.probes.cluster.evidence import NcclTransport
from core.probes.parsers._common import clean_text, never_raises
from core.probes.samples import ParseResult

_INFO = re.compile(r"\bNCCL INFO\s+(.*)$")
_WARN = re.compile(r"\bNCCL WARN\s+(.*)$")
_VERSION = re.compile(r"\bNCCL version\s+(\S+)")
_USING_NET = re.compile(r"^Using (?:internal )?[Nn]etwork\s+(.+?)\s*$")
_ASSIGNED = re.compile(r"^Assigned NET plugin\s+(.+?)\s+to comm\b")
_TRANSPORT_USING = re.compile(r"^NET/(\w+)\s*:\s*Using\s+(.*)$")
_DEVICE = re.compile(r"\[\d+\]\s*([^\s\[;]+)")
_OOB = re.compile(r"\bOOB\s+([^\s:<]+)")
_BOOTSTRAP = re.compile(r"^Bootstrap\s*:\s*Using\s+(?:\[\d+\])?([^\s:<]+)")
# NET/<name>/<dev>[/GDRDMA]; names have spaces
_VIA = re.compile(r"\bvia\s+(NET/.+?/\d+(?:/[A-Za-z]+)?)(?=\s|$)")
_GDR_FLAG = re.compile(r"\bGDR\s+([01])\b")
_GDR_HCA = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for HCA")
_GDR_OFI_OFF = re.compile(r"^NET/OFI\b.*\bdisabling GDR\b")  # aws-ofi-nccl turned GPUDirect off
_PLUGIN = (
    re.compile(r"^NET/OFI Initializing\s+(aws-ofi-nccl.*?)\s*$"),
    re.compile(r"^NET/Plugin\s*:\s*Loaded net plugin\s+(.+?)\s*$"),
    re.compile(r"^P2P plugin\s+(\S+)"),
    re.compile(r"^Successfully loaded external plugin\s+(\S+)"),
    re.compile(r"^NET/Plugin\s*:.*Using internal (?:net plugin|implementation)"),
    re.compile(r"^NET/Plugin\s*:\s*No plugin found"),
)
_VIA_NETWORK = {"IB": "IB", "Socket": "Socket"}


def _plugin(message: str) -> str | None:
    """The external net plugin a line names, or 'internal' when NCCL says it fell back to its
    own."""
    for pattern in _PLUGIN:
        if match := pattern.search(message):
            return match.group(1) if match.groups() else "internal"
    return None


def _devices(kind: str, listed: str) -> list[str]:
    """'[0]mlx5_5:1/RoCE [RO]; OOB ...' -> ['mlx5_5:1/RoCE']; '[0]eth0:10.0.0.1<0>' -> ['eth0']."""
    before_oob = listed.split(";", 1)[0]
    names = [m.group(1) for m in _DEVICE.finditer(before_oob)]
    if kind == "Socket":
        names = [name.split(":", 1)[0] for name in names]
    return [name for name in names if name and name != "RO"]


@never_raises
def parse_nccl_debug(text: str) -> ParseResult[NcclTransport]:
    """Parse every ``NCCL INFO`` line in ``text``; None (with a warning) when there is none."""
    found = NcclTransport()
    warnings: list[str] = []
    using_network: list[str] = []
    assigned: str | None = None
    transports: dict[str, list[str]] = {}
    gdr_seen: list[bool] = []
    gdr_off_by_plugin = False
    bootstrap: str | None = None
    info_lines = 0
    for raw in clean_text(text).split("\n"):
        if version := _VERSION.search(raw):
            found.nccl_version = found.nccl_version or version.group(1).rstrip(".")
        if warn := _WARN.search(raw):
            if len(warnings) < 5:
                warnings.append(f"NCCL warned: {warn.group(1).strip()[:160]}")
            continue
        info = _INFO.search(raw)
        if info is None:
            continue
        info_lines += 1
        message = info.group(1).strip()
        if match := _USING_NET.match(message):
            using_network.append(match.group(1))
        elif match := _ASSIGNED.match(message):
            assigned = assigned or match.group(1)
        elif match := _TRANSPORT_USING.match(message):
            kind = match.group(1)
            devices = _devices(kind, match.group(2))
            if devices:
                transports.setdefault(kind, [])
                transports[kind] += [d for d in devices if d not in transports[kind]]
            if (oob := _OOB.search(match.group(2))) and found.oob_interface is None:
                found.oob_interface = oob.group(1)
        elif match := _BOOTSTRAP.match(message):
            bootstrap = bootstrap or match.group(1)
        for via in _VIA.findall(message):
            if via not in found.channels_via:
                found.channels_via.append(via)
            if via.endswith("/GDRDMA"):
                gdr_seen.append(True)
        if flag := _GDR_FLAG.search(message):
            gdr_seen.append(flag.group(1) == "1")
        if hca := _GDR_HCA.search(message):
            gdr_seen.append(hca.group(1) == "Enabled")
        if _GDR_OFI_OFF.search(message):
            gdr_off_by_plugin = True
        if found.plugin is None or found.plugin == "internal":
            plugin = _plugin(message)
            if plugin is not None and (found.plugin is None or plugin != "internal"):
                found.plugin = plugin
    if info_lines == 0:
        return ParseResult(
            value=None, warnings=[*warnings, "no 'NCCL INFO' line found (NCCL_DEBUG=INFO not set?)"]
        )
    if len(set(using_network)) > 1:
        warnings.append(
            f"NCCL named more than one network: {', '.join(dict.fromkeys(using_network))}"
        )
    found.network = _chosen_network(using_network, assigned, found.channels_via, transports)
    chosen_devices = transports.get("Socket" if found.network == "Socket" else "IB", [])
    found.devices = chosen_devices if found.network in ("IB", "Socket") else []
    found.oob_interface = found.oob_interface or bootstrap
    found.gdr = True if any(gdr_seen) else False if gdr_seen or gdr_off_by_plugin else None
    return ParseResult(value=found, warnings=warnings)


def _chosen_network(
    using: list[str], assigned: str | None, via: list[str], transports: dict[str, list[str]]
) -> str | None:
    """The network NCCL chose: what it said it uses, else what the channels run over, else the one
    transport that found devices."""
    if using:
        return using[0]
    if assigned:
        return assigned
    for path in via:
        kind = path.split("/")[1] if path.count("/") >= 1 else ""
        if kind in _VIA_NETWORK:
            return _VIA_NETWORK[kind]
    with_devices = [kind for kind, devices in transports.items() if devices]
    if len(with_devices) == 1:
        return with_devices[0]
    return None


__all__ = ["parse_nccl_debug"]
