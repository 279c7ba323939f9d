"""Health: ECC, retired pages, remapped rows, clock-event reasons, PCIe link and reset state
(``nvidia-smi -q``), Xid/SXid and other kernel events since boot (``dmesg`` or ``journalctl -k``),
NVLink state.

The kernel log is often closed to non-root users (``kernel.dmesg_restrict``); then the probe says it
could not read it instead of reporting a clean log. ``sudo -n`` is tried only when the user allowed
root.
"""

from __future__ import annotations

from core.probes.checks.base import LogLevel, ProbeContext, short_error
from core.probes.evidence import HostInventory
from core.probes.parsers import parse_dmesg, parse_nvidia_smi_q, parse_nvlink_status
from core.probes.samples import KernelLogScan

_LOG_LIMIT = 200  # at most this many kernel lines become live log events


def kernel_log_commands(ctx: ProbeContext) -> list[tuple[str, str]]:
    """(label, command) pairs to read the kernel log since boot, most informative first."""
    commands: list[tuple[str, str]] = []
    if ctx.facts.has("dmesg"):
        commands += [("dmesg -T", "dmesg -T"), ("dmesg", "dmesg")]
    if ctx.facts.has("journalctl"):
        commands.append(("journalctl -k", "journalctl -k -b --no-pager -o short-iso"))
    if ctx.options.allow_root and not ctx.facts.is_root and ctx.facts.has("sudo"):
        if ctx.facts.has("dmesg"):
            commands.append(("sudo dmesg", "sudo -n dmesg -T"))
        if ctx.facts.has("journalctl"):
            commands.append(
                ("sudo journalctl -k", "sudo -n journalctl -k -b --no-pager -o short-iso")
            )
    return commands


def read_kernel_log(ctx: ProbeContext) -> tuple[KernelLogScan | None, str | None]:
    """(scan, None) when some command could read the log, else (None, why not in one sentence)."""
    tried: list[str] = []
    for label, command in kernel_log_commands(ctx):
        result = ctx.run(command, timeout=ctx.options.timeouts.command_s)
        if (
            result.exit_code == 0
            and result.stdout.strip()
            and "no entries" not in result.stdout[:200].lower()
        ):
            parsed = parse_dmesg(result.stdout)
            ctx.warnings.extend(f"kernel log: {w}" for w in parsed.warnings)
            return parsed.value or KernelLogScan(), None
        tried.append(f"{label}: {short_error(result, 120)}")
    if not tried:
        return None, "the kernel log could not be read: neither dmesg nor journalctl is on the host"
    hint = (
        ""
        if ctx.options.allow_root or ctx.facts.is_root
        else " (run as root or allow sudo to read it)"
    )
    return (
        None,
        f"the kernel log could not be read without root, so Xid errors are unknown{hint}; "
        f"tried {'; '.join(tried)}",
    )


def report_kernel_events(ctx: ProbeContext, scan: KernelLogScan, *, since_line: int = 0) -> None:
    """Live log events for Xid, SXid and kernel events found after ``since_line``."""
    shown = 0
    for xid in scan.xids:
        if xid.line_no <= since_line or shown >= _LOG_LIMIT:
            continue
        level: LogLevel = "error" if xid.severity == "FAIL" else "warning"
        where = f" on GPU {xid.pci}" if xid.pci else ""
        ctx.log(
            level,
            f"Xid {xid.code}{where}: {xid.meaning or xid.message[:120]}"
            f"{' (' + xid.timestamp + ')' if xid.timestamp else ''}",
        )
        shown += 1
    for sxid in scan.sxids:
        if sxid.line_no <= since_line or shown >= _LOG_LIMIT:
            continue
        ctx.log(
            "error" if sxid.fatal else "warning",
            f"SXid {sxid.code} on NVSwitch {sxid.switch}: {sxid.message[:120]}",
        )
        shown += 1
    for event in scan.events:
        if event.line_no <= since_line or shown >= _LOG_LIMIT or event.kind in ("segfault", "oom"):
            continue
        ctx.log("warning", f"kernel: {event.kind.replace('_', ' ')}: {event.message[:160]}")
        shown += 1


def _nvlink(ctx: ProbeContext) -> None:
    inventory = ctx.evidence.inventory
    if inventory is not None and inventory.nvlink is not None:
        return
    result = ctx.run("nvidia-smi nvlink --status", timeout=ctx.options.timeouts.command_s)
    text = result.stdout + ("\n" + result.stderr if result.stderr.strip() else "")
    if not text.strip():
        return
    parsed = parse_nvlink_status(text)
    links = parsed.value
    if links and any(s.link_speeds_gbps or s.all_inactive for s in links):
        if ctx.evidence.inventory is None:
            ctx.evidence.inventory = HostInventory()
        ctx.evidence.inventory.nvlink = links
        for status in links:
            if status.all_inactive:
                ctx.log("error", f"GPU {status.gpu}: all NVLink links are inactive")
            elif status.inactive_links:
                ctx.log(
                    "error", f"GPU {status.gpu}: NVLink links {status.inactive_links} are inactive"
                )


def _gpu_health(ctx: ProbeContext) -> None:
    result = ctx.run("nvidia-smi -q", timeout=ctx.options.timeouts.command_s)
    if result.exit_code != 0 and not result.stdout.strip():
        ctx.warn(f"nvidia-smi -q failed: {short_error(result)}")
        return
    parsed = parse_nvidia_smi_q(result.stdout)
    ctx.warnings.extend(f"nvidia-smi -q: {w}" for w in parsed.warnings)
    ctx.evidence.health = parsed.value
    if parsed.value is None:
        return
    for gpu in parsed.value.health:
        bad = [
            r
            for r in gpu.clocks_event_reasons
            if r
            in (
                "hw_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown",
                "sw_thermal_slowdown",
            )
        ]
        if bad:
            ctx.log("warning", f"GPU {gpu.index}: clocks held back by {', '.join(bad)}")
        if gpu.remapped_rows_pending or gpu.retired_pages_pending:
            ctx.log(
                "warning",
                f"GPU {gpu.index}: memory row remap or page retirement pending (needs a reset)",
            )
        if gpu.remapped_rows_failure:
            ctx.log("error", f"GPU {gpu.index}: row remapping failed")
        if gpu.reset_required:
            ctx.log("error", f"GPU {gpu.index}: the driver says a GPU reset is required")
        if gpu.ecc_volatile_uncorrectable:
            ctx.log(
                "error",
                f"GPU {gpu.index}: {gpu.ecc_volatile_uncorrectable} uncorrectable ECC errors "
                "since the driver loaded",
            )


def run(ctx: ProbeContext) -> None:
    if ctx.facts.nvidia:
        _gpu_health(ctx)
        _nvlink(ctx)
    else:
        ctx.warn(
            "no NVIDIA GPU found: GPU health (ECC, remapped rows, clocks, NVLink) was not checked"
        )
    scan, why_not = read_kernel_log(ctx)
    ctx.evidence.kernel_log = scan
    if scan is None:
        ctx.warn(why_not or "the kernel log could not be read")
        ctx.log("warning", why_not or "the kernel log could not be read")
        return
    report_kernel_events(ctx, scan)
