"""Stream GPU metrics through NVML in the CSV that `nvidia-smi --query-gpu=... --format=csv,nounits
-lms N` prints.

Same header names and units, so the app reads NVML and nvidia-smi with one parser. NVML is preferred
because nvidia-smi's text output is not guaranteed to stay compatible (nvidia-smi man page), while
NVML is. Runs on the probed host with its own Python (3.6 or newer) and nvidia-ml-py; exits 3 when
NVML is missing. Usage: nvml_stream.py [--interval-ms 500] [--count N]
"""

import argparse
import datetime
import sys
import time

HEADER = (
    "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
    "memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], clocks.sm [MHz], "
    "clocks.mem [MHz], clocks_event_reasons.active"
)


def value(read, scale=1.0, fmt="{:.0f}"):
    """One NVML reading formatted like nvidia-smi, or [N/A] when the GPU cannot report it."""
    try:
        return fmt.format(read() * scale)
    except Exception:
        return "[N/A]"


def row(nvml, index, handle):
    util = None
    try:
        util = nvml.nvmlDeviceGetUtilizationRates(handle)
    except Exception:
        util = None
    try:
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
    except Exception:
        mem = None
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    now = datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    cells = [
        now,
        str(index),
        str(util.gpu) if util is not None else "[N/A]",
        str(util.memory) if util is not None else "[N/A]",
        str(mem.used // (1 << 20)) if mem is not None else "[N/A]",
        str(mem.total // (1 << 20)) if mem is not None else "[N/A]",
        value(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
        value(lambda: nvml.nvmlDeviceGetPowerUsage(handle), 0.001, "{:.2f}"),
        value(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle), 0.001, "{:.2f}"),
        value(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        value(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        value(lambda: reasons_fn(handle), 1, "0x{:016X}") if reasons_fn else "[N/A]",
    ]
    return ", ".join(cells)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--interval-ms", type=int, default=500)
    parser.add_argument("--count", type=int, default=0, help="ticks to print (0: until killed)")
    args = parser.parse_args()
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception as exc:
        print(f"NVML is not available: {exc}", file=sys.stderr)
        return 3
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    print(HEADER, flush=True)
    ticks = 0
    next_tick = time.monotonic()
    while args.count <= 0 or ticks < args.count:
        lines = [row(nvml, i, h) for i, h in enumerate(handles)]
        print("\n".join(lines), flush=True)
        ticks += 1
        next_tick += args.interval_ms / 1000.0
        time.sleep(max(0.0, next_tick - time.monotonic()))
    nvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
