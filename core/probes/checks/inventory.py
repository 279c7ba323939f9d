"""Inventory: OS, kernel, CPU, RAM, container/VM, filesystems, NICs, Python/torch, and the GPUs as
the driver describes them (``nvidia-smi -q``, ``topo -m``, ``nvlink --status``) plus InfiniBand
ports (``ibstat``).

No NVIDIA GPU is a fact, not an error: ``inventory.nvidia`` stays None and the probe says so.
"""

from __future__ import annotations

import re

from core.probes.checks.base import ProbeContext, q, short_error
from core.probes.evidence import HostInventory
from core.probes.parsers import (
    parse_ibstat,
    parse_nvidia_smi_q,
    parse_nvlink_status,
    parse_topo_matrix,
)

# Pseudo and special filesystems that say nothing about where data or checkpoints could live.
_PSEUDO_FS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "securityfs",
        "pstore",
        "bpf",
        "tracefs",
        "debugfs",
        "mqueue",
        "hugetlbfs",
        "autofs",
        "configfs",
        "fusectl",
        "binfmt_misc",
        "efivarfs",
        "squashfs",
        "nsfs",
        "ramfs",
        "rpc_pipefs",
        "selinuxfs",
    }
)


def split_sections(text: str) -> dict[str, str]:
    """``### name`` sections of a script's output -> {name: body}."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = re.match(r"^### ([\w.-]+)\s*$", line)
        if match:
            current = sections.setdefault(match.group(1), [])
            continue
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def _os_release(body: str) -> str | None:
    values = {}
    for line in body.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    return (
        values.get("PRETTY_NAME")
        or " ".join(v for v in (values.get("NAME"), values.get("VERSION")) if v)
        or None
    )


def _lscpu(body: str) -> tuple[str | None, int | None]:
    model = cpus = None
    for line in body.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "Model name" and model is None:
            model = value
        elif key == "CPU(s)" and value.isdigit():
            cpus = int(value)
    return model, cpus


def _mem_total(body: str) -> int | None:
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", body, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _virtualization(vm: str, container: str, cgroup: str) -> str | None:
    """'docker', 'kvm', 'docker in kvm'...; None when nothing could be told."""
    words = container.split()
    kind = next((w for w in words if w not in ("none", "docker-env", "podman-env")), None)
    if kind is None and "docker-env" in words:
        kind = "docker"
    if kind is None and "podman-env" in words:
        kind = "podman"
    if kind is None and re.search(r"kubepods|docker|containerd|libpod", cgroup):
        kind = "kubernetes" if "kubepods" in cgroup else "container"
    machine = vm.split()[0] if vm.split() else None
    if machine == "none":
        machine = None
    if kind and machine:
        return f"{kind} in {machine}"
    if kind or machine:
        return kind or machine
    return "none" if vm.strip() == "none" else None


def parse_df(body: str) -> list[dict[str, str]]:
    """``df -PT -B1`` -> [{mount, type, size, free, used_pct, device}] without pseudo
    filesystems."""
    out: list[dict[str, str]] = []
    for line in body.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 7 or not parts[2].isdigit() or not parts[4].isdigit():
            continue
        device, fstype, size, _used, free, pct = parts[:6]
        mount = " ".join(parts[6:])
        if (
            fstype in _PSEUDO_FS
            or int(size) == 0
            or mount.startswith(("/proc", "/sys", "/dev/pts"))
        ):
            continue
        out.append(
            {
                "mount": mount,
                "type": fstype,
                "size": size,
                "free": free,
                "used_pct": pct.rstrip("%"),
                "device": device,
            }
        )
    return out


def _nics(speeds: str) -> list[dict[str, str]]:
    out = []
    for line in speeds.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] == "lo":
            continue
        name, speed, state = parts
        speed_mbps = speed if speed.isdigit() and int(speed) > 0 else ""
        out.append({"name": name, "speed_mbps": speed_mbps, "state": state})
    return out


def parse_inventory_sections(text: str) -> HostInventory:
    """What ``inventory.sh`` printed -> the host part of the inventory (GPU parts are added
    separately)."""
    sections = split_sections(text)
    model, cpus = _lscpu(sections.get("lscpu", ""))
    nproc = sections.get("nproc", "").strip()
    return HostInventory(
        hostname=sections.get("hostname", "").strip() or None,
        os=_os_release(sections.get("os-release", "")),
        kernel=sections.get("uname", "").strip() or None,
        cpu_model=model,
        cpu_cores=cpus if cpus is not None else (int(nproc) if nproc.isdigit() else None),
        ram_bytes=_mem_total(sections.get("meminfo", "")),
        virtualization=_virtualization(
            sections.get("virt", ""), sections.get("container", ""), sections.get("cgroup", "")
        ),
        filesystems=parse_df(sections.get("df", "")),
        nics=_nics(sections.get("speeds", "")),
    )


def run(ctx: ProbeContext) -> None:
    script = ctx.upload("inventory.sh")
    result = ctx.run(f"bash {q(script)}", timeout=ctx.options.timeouts.inventory_s)
    if not result.stdout.strip():
        ctx.warn(f"the inventory script printed nothing: {short_error(result)}")
    inventory = parse_inventory_sections(result.stdout)
    python = ctx.facts.python
    if python is not None:
        inventory.python = python.version
        inventory.torch = python.torch
        inventory.cuda_available = python.cuda if python.torch else None
    ctx.evidence.inventory = inventory
    add_gpu_inventory(ctx, inventory)
    if ctx.facts.has("ibstat"):
        ib = ctx.run("ibstat", timeout=ctx.options.timeouts.command_s)
        parsed = parse_ibstat(ib.stdout + ("\n" + ib.stderr if ib.exit_code else ""))
        inventory.infiniband = parsed.value
        ctx.warnings.extend(f"ibstat: {w}" for w in parsed.warnings)


def add_gpu_inventory(ctx: ProbeContext, inventory: HostInventory) -> None:
    """nvidia-smi -q, topo -m and nvlink --status into the inventory; says why when there is no
    NVIDIA GPU."""
    if not ctx.facts.has("nvidia-smi"):
        ctx.warn("no NVIDIA GPU found: nvidia-smi is not installed on the host")
        return
    if not ctx.facts.gpu_lines:
        ctx.warn("no NVIDIA GPU found: nvidia-smi lists no GPU")
        return
    timeout = ctx.options.timeouts.command_s
    smi = ctx.run("nvidia-smi -q", timeout=timeout)
    report = parse_nvidia_smi_q(smi.stdout)
    ctx.warnings.extend(f"nvidia-smi -q: {w}" for w in report.warnings)
    if smi.exit_code != 0:
        ctx.warn(f"nvidia-smi -q failed: {short_error(smi)}")
    inventory.nvidia = report.value
    topo = ctx.run("nvidia-smi topo -m", timeout=timeout)
    if topo.exit_code == 0:
        parsed_topo = parse_topo_matrix(topo.stdout)
        inventory.topology = parsed_topo.value
        ctx.warnings.extend(f"nvidia-smi topo -m: {w}" for w in parsed_topo.warnings)
    else:
        ctx.warn(f"nvidia-smi topo -m failed: {short_error(topo)}")
    nvlink = ctx.run("nvidia-smi nvlink --status", timeout=timeout)
    text = nvlink.stdout + ("\n" + nvlink.stderr if nvlink.stderr.strip() else "")
    if text.strip():
        parsed_links = parse_nvlink_status(text)
        links = parsed_links.value
        # PCIe cards print GPU headers without links: no NVLink is not an inactive NVLink.
        if links and any(s.link_speeds_gbps or s.all_inactive for s in links):
            inventory.nvlink = links
        ctx.warnings.extend(f"nvidia-smi nvlink: {w}" for w in parsed_links.warnings if links)
