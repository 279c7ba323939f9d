"""Dense matmul throughput on the probed host: bf16 on each CUDA GPU, fp32 on the CPU when there is
no GPU.

Runs with the host's own Python (3.6 or newer); torch when importable, else numpy (CPU only).
  matmul.py measure [--seconds 1.5] [--size N] [--device auto|cuda|cpu]
  matmul.py burn --duration S [--interval 1.0] [--size N] [--device auto|cuda|cpu]
Prints one JSON object per line, each with an "event" key: "backend", "result" (measure: TFLOP/s per
device), "tick" (burn: TFLOP/s per device per interval), "cpu" (burn on CPU: utilisation and
temperature from /proc and /sys), "check" (burn: checksum of one product on fixed inputs, equal on
healthy identical GPUs), "done". TFLOP/s = 2 n^3 multiply-adds per product / seconds / 1e12.
"""

import argparse
import glob
import json
import os
import platform
import sys
import threading
import time

_print_lock = threading.Lock()


def emit(**fields):
    with _print_lock:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


def load_torch():
    try:
        import torch

        return torch
    except Exception:
        return None


class TorchDevice:
    def __init__(self, torch, kind, index, size):
        self.torch = torch
        self.kind = kind
        self.index = index
        if kind == "cuda":
            self.device = torch.device("cuda", index)
            self.dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            self.name = torch.cuda.get_device_name(index)
        else:
            self.device = torch.device("cpu")
            self.dtype = torch.float32
            self.name = platform.processor() or platform.machine() or "cpu"
        self.size = size
        generator = torch.Generator(device="cpu").manual_seed(1234)
        a = torch.randn(size, size, generator=generator, dtype=torch.float32)
        b = torch.randn(size, size, generator=generator, dtype=torch.float32)
        self.a = a.to(device=self.device, dtype=self.dtype)
        self.b = b.to(device=self.device, dtype=self.dtype)
        self.c = None

    def step(self, count):
        for _ in range(count):
            self.c = self.torch.matmul(self.a, self.b)

    def sync(self):
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.device)

    def checksum(self):
        self.c = self.torch.matmul(self.a, self.b)
        self.sync()
        return float(self.c.float().sum().item())

    @property
    def dtype_name(self):
        return str(self.dtype).replace("torch.", "")


class NumpyDevice:
    kind = "cpu"
    index = 0
    dtype_name = "float32"

    def __init__(self, size):
        import numpy

        self.np = numpy
        self.size = size
        rng = numpy.random.RandomState(1234)
        self.a = rng.standard_normal((size, size)).astype(numpy.float32)
        self.b = rng.standard_normal((size, size)).astype(numpy.float32)
        self.name = platform.processor() or platform.machine() or "cpu"
        self.c = None

    def step(self, count):
        for _ in range(count):
            self.c = self.a @ self.b

    def sync(self):
        return None

    def checksum(self):
        return float((self.a @ self.b).sum())


def make_devices(args):
    torch = load_torch()
    want = args.device
    if torch is not None and want in ("auto", "cuda") and torch.cuda.is_available():
        size = args.size or 8192
        emit(
            event="backend",
            backend="torch",
            device="cuda",
            torch=torch.__version__,
            count=torch.cuda.device_count(),
        )
        return [TorchDevice(torch, "cuda", i, size) for i in range(torch.cuda.device_count())]
    if want == "cuda":
        emit(event="error", message="CUDA is not available to this Python")
        sys.exit(2)
    size = args.size or 1024
    if torch is not None:
        emit(
            event="backend",
            backend="torch",
            device="cpu",
            torch=torch.__version__,
            threads=torch.get_num_threads(),
        )
        return [TorchDevice(torch, "cpu", 0, size)]
    try:
        device = NumpyDevice(size)
    except Exception as exc:
        emit(event="error", message=f"neither torch nor numpy can be used: {exc!r}"[:300])
        sys.exit(2)
    emit(event="backend", backend="numpy", device="cpu")
    return [device]


def measure(device, seconds):
    flops = 2.0 * device.size**3
    device.step(2)
    device.sync()
    iters, batch = 0, 1
    start = time.perf_counter()
    while True:
        device.step(batch)
        device.sync()
        iters += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
        if elapsed < seconds / 8:
            batch = min(batch * 2, 256)
    return iters, elapsed, flops * iters / elapsed / 1e12


def cmd_measure(args):
    for device in make_devices(args):
        iters, elapsed, tflops = measure(device, args.seconds)
        emit(
            event="result",
            device=device.kind,
            index=device.index,
            name=device.name,
            dtype=device.dtype_name,
            n=device.size,
            iters=iters,
            seconds=round(elapsed, 4),
            tflops=round(tflops, 4),
        )
    emit(event="done")


class CpuStats:
    """Utilisation from /proc/stat deltas and the hottest thermal zone, for CPU-only burns."""

    def __init__(self):
        self.last = self.read()

    @staticmethod
    def read():
        try:
            with open("/proc/stat") as handle:
                fields = [int(v) for v in handle.readline().split()[1:]]
            idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
            return sum(fields), idle
        except Exception:
            return None

    def util(self):
        now = self.read()
        if now is None or self.last is None:
            return None
        total, idle = now[0] - self.last[0], now[1] - self.last[1]
        self.last = now
        return round(100.0 * (total - idle) / total, 1) if total > 0 else None

    @staticmethod
    def temp():
        best = None
        paths = glob.glob("/sys/class/thermal/thermal_zone*/temp") + glob.glob(
            "/sys/class/hwmon/hwmon*/temp*_input"
        )
        for path in paths:
            try:
                with open(path) as handle:
                    value = int(handle.read().strip()) / 1000.0
            except Exception:
                continue
            if 0 < value < 150 and (best is None or value > best):
                best = value
        return best


def burn_one(device, deadline, interval, started, stop):
    flops = 2.0 * device.size**3
    iters, mark = 0, time.perf_counter()
    while not stop.is_set() and time.time() < deadline:
        device.step(4)
        iters += 4
        now = time.perf_counter()
        if now - mark >= interval:
            device.sync()
            now = time.perf_counter()
            emit(
                event="tick",
                t=round(time.time() - started, 3),
                device=device.kind,
                index=device.index,
                tflops=round(flops * iters / (now - mark) / 1e12, 4),
            )
            iters, mark = 0, now
    device.sync()


def cmd_burn(args):
    devices = make_devices(args)
    started = time.time()
    deadline = started + args.duration
    stop = threading.Event()
    threads = [
        threading.Thread(target=burn_one, args=(d, deadline, args.interval, started, stop))
        for d in devices
    ]
    for thread in threads:
        thread.daemon = True
        thread.start()
    stats = CpuStats() if devices[0].kind == "cpu" else None
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(max(0.05, min(args.interval, deadline - time.time() + 0.05)))
            if stats is not None:
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
                emit(
                    event="cpu",
                    t=round(time.time() - started, 3),
                    util_pct=stats.util(),
                    temp_c=stats.temp(),
                    load1=load,
                )
    except KeyboardInterrupt:
        stop.set()
    for thread in threads:
        thread.join()
    for device in devices:
        emit(event="check", device=device.kind, index=device.index, checksum=device.checksum())
    emit(event="done", seconds=round(time.time() - started, 3))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="mode")
    m = sub.add_parser("measure")
    m.add_argument("--seconds", type=float, default=1.5)
    b = sub.add_parser("burn")
    b.add_argument("--duration", type=float, required=True)
    b.add_argument("--interval", type=float, default=1.0)
    for p in (m, b):
        p.add_argument("--size", type=int, default=0)
        p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
        p.add_argument("--marker", default="", help="ignored; lets the caller find these processes")
    args = parser.parse_args()
    if args.mode == "measure":
        cmd_measure(args)
    elif args.mode == "burn":
        cmd_burn(args)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
