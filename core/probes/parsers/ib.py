"""InfiniBand / RoCE: ``ibstat``, ``ibstatus``, perftest ``ib_*_bw`` sweeps and link flaps in
syslog.

``ibstat`` prints ``CA 'mlx5_0'`` blocks with ``Port 1:`` sub-blocks (``State: Active``, ``Rate:
400``, ``Link layer: InfiniBand|Ethernet``) and may end in ``ibpanic: ... failed`` (exit 255) when a
device vanished. ``ibstatus`` prints ``state: 4: ACTIVE`` and ``rate: 200 Gb/sec (4X HDR)``.
``ibv_devinfo`` (rdma-core) prints ``hca_id:`` blocks with ``port:`` sub-blocks (``state:
PORT_ACTIVE (4)``, ``link_layer: Ethernet``) and, with ``-v``, ``active_width: 4X (2)`` and
``active_speed: 25.0 Gbps (32)`` per lane. perftest prints a banner, then ``#bytes #iterations BW
peak BW average MsgRate`` rows in Gb/sec (``--report_gbits``) or MB/sec.
"""

from __future__ import annotations

import re

from core.probes.parsers._common import clean_text, is_missing, never_raises, to_float, to_int
from core.probes.samples import (
    IbInventory,
    IbPort,
    LinkFlap,
    ParseResult,
    PerftestResult,
    PerftestRow,
)

_CA = re.compile(r"^CA\s+'([^']+)'")
_PORT = re.compile(r"^Port\s+(\d{1,9})\s*:\s*$")
_KV = re.compile(r"^([A-Za-z][A-Za-z _]*?)\s*:\s*(.*)$")
_IBSTATUS = re.compile(
    r"^Infiniband device\s+'([^']+)'\s+port\s+(\d{1,9})\s+status:", re.IGNORECASE
)
_RATE = re.compile(r"([0-9.]+)\s*Gb/sec(?:\s*\((\d+X)\s*([A-Z]+)\))?", re.IGNORECASE)
_FLAP = re.compile(
    r"(?:^|\s)([A-Za-z][\w.-]*):\s+(lost carrier|gained carrier|link down|link up|"
    r"link becomes ready)\b",
    re.IGNORECASE,
)
_SYSLOG_TIME = re.compile(
    r"^\s*(?:\[([^\]]+)\]|(\d{4}-\d{2}-\d{2}T[0-9:.,+-]+)|([A-Z][a-z]{2}\s+\d{1,2}\s+"
    r"\d{2}:\d{2}:\d{2}))"
)


def _state_word(value: str | None) -> str | None:
    """'4: ACTIVE' -> 'Active', 'Down' -> 'Down', '5: LinkUp' -> 'LinkUp'."""
    if is_missing(value):
        return None
    assert value is not None
    word = value.split(":", 1)[-1].strip()
    return word.capitalize() if word.isupper() else word


@never_raises
def parse_ibstat(text: str) -> ParseResult[IbInventory]:
    """Parse ``ibstat``; an ``ibpanic``/``ibwarn`` line goes to ``errors`` with the ports read so
    far."""
    inventory = IbInventory()
    warnings: list[str] = []
    device: str | None = None
    ca: dict[str, str] = {}
    port: IbPort | None = None
    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.lower().startswith(("ibpanic", "ibwarn", "ibstat: ")):
            inventory.errors.append(line[:300])
            continue
        if "command not found" in line.lower():
            warnings.append(line[:200])
            continue
        if ca_match := _CA.match(line):
            device, ca, port = ca_match.group(1), {}, None
            continue
        if port_match := _PORT.match(line):
            if device is None:
                warnings.append(f"port line outside a CA block: {line[:120]!r}")
                continue
            port = IbPort(
                device=device,
                port=int(port_match.group(1)),
                ca_type=ca.get("ca type"),
                firmware=ca.get("firmware version"),
            )
            inventory.ports.append(port)
            continue
        kv = _KV.match(line)
        if kv is None:
            warnings.append(f"unexpected ibstat line: {line[:120]!r}")
            continue
        key, value = kv.group(1).lower(), kv.group(2).strip()
        if port is None:
            ca[key] = value
        elif key == "state":
            port.state = _state_word(value)
        elif key == "physical state":
            port.phys_state = _state_word(value)
        elif key == "rate":
            port.rate_gbps = to_float(value)
        elif key == "link layer":
            port.link_layer = value or None
    if not inventory.ports and not inventory.errors:
        return ParseResult(
            value=None, warnings=[*warnings, "no CA/port block found in ibstat output"]
        )
    return ParseResult(value=inventory, warnings=warnings)


@never_raises
def parse_ibstatus(text: str) -> ParseResult[IbInventory]:
    """Parse ``ibstatus`` (per-port blocks with 'state: 4: ACTIVE' and 'rate: 200 Gb/sec (4X
    HDR)')."""
    inventory = IbInventory()
    warnings: list[str] = []
    port: IbPort | None = None
    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        if header := _IBSTATUS.match(line):
            port = IbPort(device=header.group(1), port=int(header.group(2)))
            inventory.ports.append(port)
            continue
        kv = _KV.match(line)
        if port is None or kv is None:
            if "fatal" in line.lower() or "error" in line.lower() or "no such" in line.lower():
                inventory.errors.append(line[:300])
            else:
                warnings.append(f"unexpected ibstatus line: {line[:120]!r}")
            continue
        key, value = kv.group(1).lower(), kv.group(2).strip()
        if key == "state":
            port.state = _state_word(value)
        elif key == "phys state":
            port.phys_state = _state_word(value)
        elif key == "rate":
            rate = _RATE.search(value)
            port.rate_gbps = float(rate.group(1)) if rate else to_float(value)
            if rate and rate.group(2):
                port.width, port.speed = rate.group(2), rate.group(3)
        elif key == "link_layer":
            port.link_layer = value or None
    if not inventory.ports and not inventory.errors:
        return ParseResult(
            value=None, warnings=[*warnings, "no 'Infiniband device ... port' block found"]
        )
    return ParseResult(value=inventory, warnings=warnings)


_HCA = re.compile(r"^hca_id:\s*(\S+)")
_DEVINFO_PORT = re.compile(r"^port:\s*(\d{1,9})\s*$")
_DEVINFO_KV = re.compile(r"^([a-z_]+):\s*(.*)$")
_PER_LANE = re.compile(r"([0-9.]+)\s*Gbps(?:\s*\((\d+)\))?")
_WIDTH = re.compile(r"(\d+)X?\b")
# enum ibv_port_attr.active_speed (rdma-core verbs.h / devinfo.c speed_str): the code in parentheses
# -> name
_SPEED_NAMES = {
    1: "SDR",
    2: "DDR",
    4: "QDR",
    8: "FDR10",
    16: "FDR",
    32: "EDR",
    64: "HDR",
    128: "NDR",
    256: "XDR",
}


def _devinfo_word(value: str) -> str | None:
    """'PORT_ACTIVE (4)' -> 'Active', 'LINK_UP (5)' -> 'LinkUp', 'PORT_INIT (2)' -> 'Initializing'
    (ibstat's words)."""
    word = value.split("(", 1)[0].strip()
    if not word:
        return None
    word = word.removeprefix("PORT_")
    if word == "INIT":
        return "Initializing"
    return "".join(part.capitalize() for part in re.split(r"[_ ]+", word) if part)


def _devinfo_rate(port: IbPort, width: str | None, speed: str | None) -> None:
    """Port rate = lanes x per-lane rate ('4X' x '25.0 Gbps' = 100), as ibstat's 'Rate' reports
    it."""
    lanes = _WIDTH.search(width) if width else None
    per_lane = _PER_LANE.search(speed) if speed else None
    if lanes:
        port.width = f"{lanes.group(1)}X"
    if per_lane and per_lane.group(2):
        port.speed = _SPEED_NAMES.get(int(per_lane.group(2)))
    if lanes and per_lane:
        port.rate_gbps = int(lanes.group(1)) * float(per_lane.group(1))


@never_raises
def parse_ibv_devinfo(text: str) -> ParseResult[IbInventory]:
    """Parse ``ibv_devinfo`` or ``ibv_devinfo -v``; the rate is known only with ``-v``
    (active_width/speed)."""
    inventory = IbInventory()
    warnings: list[str] = []
    device: str | None = None
    firmware: str | None = None
    port: IbPort | None = None
    lane: dict[str, str] = {}

    def finish_port() -> None:
        if port is not None:
            _devinfo_rate(port, lane.get("active_width"), lane.get("active_speed"))

    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if (
            line.lower().startswith(("failed to", "no ib devices found", "ibv_devinfo:"))
            or "command not found" in line.lower()
        ):
            inventory.errors.append(line[:300])
            continue
        if hca := _HCA.match(line):
            finish_port()
            device, firmware, port, lane = hca.group(1), None, None, {}
            continue
        if port_match := _DEVINFO_PORT.match(line):
            finish_port()
            lane = {}
            if device is None:
                warnings.append(f"port line outside an hca_id block: {line[:120]!r}")
                port = None
                continue
            port = IbPort(device=device, port=int(port_match.group(1)), firmware=firmware)
            inventory.ports.append(port)
            continue
        kv = _DEVINFO_KV.match(line)
        if kv is None:
            continue  # -v capability flag lists and free-text lines
        key, value = kv.group(1), kv.group(2).strip()
        if port is None:
            if key == "fw_ver":
                firmware = value or None
        elif key == "state":
            port.state = _devinfo_word(value)
        elif key == "phys_state":
            port.phys_state = _devinfo_word(value)
        elif key == "link_layer":
            port.link_layer = value or None
        elif key in ("active_width", "active_speed"):
            lane[key] = value
    finish_port()
    if not inventory.ports and not inventory.errors:
        return ParseResult(
            value=None, warnings=[*warnings, "no hca_id/port block found in ibv_devinfo output"]
        )
    return ParseResult(value=inventory, warnings=warnings)


def _banner(line: str, result: PerftestResult) -> None:
    """Banner lines hold two 'Key : value' pairs separated by tabs."""
    for part in re.split(r"\t+|\s{3,}(?=[A-Z])", line):
        key, sep, value = part.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "device":
            result.device = value
        elif key == "number of qps":
            result.qps = to_int(value)
        elif key == "link type":
            result.link_type = value
        elif key == "connection type":
            result.connection_type = value
        elif key == "mtu":
            result.mtu_bytes = to_int(value)
        elif key == "gid index":
            result.gid_index = to_int(value)


@never_raises
def parse_perftest(text: str) -> ParseResult[PerftestResult]:
    """Parse an ``ib_write_bw``/``ib_read_bw``/``ib_send_bw`` run (one size or an ``-a`` sweep)."""
    result = PerftestResult()
    warnings: list[str] = []
    in_table = False
    for raw in clean_text(text).split("\n"):
        line = raw.strip()
        if not line or set(line) <= {"-"}:
            in_table = in_table and not line.startswith("-")
            continue
        if re.search(r"\bBW Test\b", line):
            result.test = line
            continue
        if "cuda" in line.lower() and ("device" in line.lower() or "dma-buf" in line.lower()):
            result.use_cuda = True
        if line.startswith("#bytes"):
            in_table = True
            result.unit = "Gb/sec" if "Gb/sec" in line else "MB/sec" if "MB/sec" in line else None
            if result.unit is None:
                warnings.append(f"unknown bandwidth unit in perftest header: {line[:120]!r}")
            continue
        if in_table:
            cells = line.split()
            if len(cells) >= 4 and cells[0].isdigit() and len(cells[0]) <= 18:
                numbers = [to_float(c) for c in cells[1:5]]
                result.rows.append(
                    PerftestRow(
                        size_bytes=int(cells[0]),
                        iterations=to_int(cells[1]),
                        bw_peak=numbers[1],
                        bw_avg=numbers[2],
                        msg_rate_mpps=numbers[3] if len(numbers) > 3 else None,
                    )
                )
            else:
                warnings.append(f"unexpected line in perftest table: {line[:120]!r}")
            continue
        if ":" in line:
            _banner(line, result)
        if (
            re.search(r"(Couldn't|Unable|Failed|error|command not found)", line)
            and "GID" not in line
        ):
            warnings.append(f"perftest reported: {line[:160]}")
    if not result.rows:
        return ParseResult(
            value=None if result.device is None else result,
            warnings=[*warnings, "no perftest result row found"],
        )
    return ParseResult(value=result, warnings=warnings)


@never_raises
def parse_link_flaps(text: str) -> ParseResult[list[LinkFlap]]:
    """Count carrier losses/gains per interface in syslog or dmesg text (a flapping IB/RoCE
    link)."""
    flaps: dict[str, LinkFlap] = {}
    for raw in clean_text(text).split("\n"):
        match = _FLAP.search(raw)
        if not match:
            continue
        interface, event = match.group(1), match.group(2).lower()
        time_match = _SYSLOG_TIME.match(raw)
        when = next((g for g in time_match.groups() if g), None) if time_match else None
        flap = flaps.setdefault(interface, LinkFlap(interface=interface, first_seen=when))
        if event in {"lost carrier", "link down"}:
            flap.lost += 1
        else:
            flap.gained += 1
        flap.last_seen = when or flap.last_seen
    return ParseResult(value=sorted(flaps.values(), key=lambda f: f.interface), warnings=[])
