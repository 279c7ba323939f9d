"""Storage measurements with the Python standard library, for hosts without fio, and the small-file
test.

Runs on the probed host with its own Python (3.7 or newer), only inside the directory it is given.
  iobench.py seq DIR --size BYTES       sequential write (1 MiB blocks, then fsync) and read of
  DIR/iobench.dat iobench.py rand DIR --seconds T       random 4 KiB reads of that file at queue
  depth 1 (O_DIRECT when allowed) iobench.py smallfiles DIR --count N   create, stat, read and
  delete N files of 4 KiB
Each prints one JSON line. Reads avoid the page cache: O_DIRECT where the filesystem allows it, else
the file's cached pages are dropped with posix_fadvise(DONTNEED) first (and the output says which).
"""

import argparse
import json
import mmap
import os
import random
import sys
import time

BLOCK = 1 << 20
SMALL = 4096


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def drop_cache(path):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return True
    except (AttributeError, OSError):
        return False


def open_direct(path):
    """(fd, True) with O_DIRECT when the filesystem allows it, else (fd, False)."""
    flag = getattr(os, "O_DIRECT", 0)
    if flag:
        try:
            return os.open(path, os.O_RDONLY | flag), True
        except OSError:
            pass
    return os.open(path, os.O_RDONLY), False


def cmd_seq(args):
    path = os.path.join(args.dir, "iobench.dat")
    chunk = os.urandom(BLOCK)
    blocks = max(1, args.size // BLOCK)
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(blocks):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    write_s = time.perf_counter() - start
    dropped = drop_cache(path)
    fd, direct = open_direct(path)
    buf = mmap.mmap(-1, BLOCK)
    total = 0
    start = time.perf_counter()
    try:
        while True:
            n = os.readv(fd, [buf])
            if n <= 0:
                break
            total += n
    finally:
        os.close(fd)
    read_s = time.perf_counter() - start
    print(
        json.dumps(
            {
                "bytes": blocks * BLOCK,
                "write_bytes_per_s": blocks * BLOCK / write_s,
                "read_bytes_per_s": total / read_s if read_s > 0 else None,
                "direct": direct,
                "cache_dropped": dropped,
            }
        )
    )


def cmd_rand(args):
    path = os.path.join(args.dir, "iobench.dat")
    size = os.path.getsize(path)
    blocks = size // SMALL
    if blocks < 1:
        print(json.dumps({"error": "the test file is empty"}))
        return 1
    dropped = drop_cache(path)
    fd, direct = open_direct(path)
    buf = mmap.mmap(-1, SMALL)
    latencies = []
    rng = random.Random(1234)
    end = time.perf_counter() + args.seconds
    try:
        while time.perf_counter() < end:
            offset = rng.randrange(blocks) * SMALL
            t0 = time.perf_counter()
            os.preadv(fd, [buf], offset)
            latencies.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    busy = sum(latencies)
    print(
        json.dumps(
            {
                "reads": len(latencies),
                "iops": len(latencies) / busy if busy > 0 else None,
                "p99_ms": percentile(latencies, 0.99) * 1e3,
                "mean_ms": busy / len(latencies) * 1e3,
                "direct": direct,
                "cache_dropped": dropped,
            }
        )
    )
    return 0


def cmd_smallfiles(args):
    root = os.path.join(args.dir, "small")
    os.mkdir(root, 0o700)
    names = [os.path.join(root, f"f{i:06d}") for i in range(args.count)]
    data = os.urandom(args.size)
    t0 = time.perf_counter()
    for name in names:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)
    t1 = time.perf_counter()
    for name in names:
        os.stat(name)
    t2 = time.perf_counter()
    opens = []
    for name in names:
        a = time.perf_counter()
        fd = os.open(name, os.O_RDONLY)
        opens.append(time.perf_counter() - a)
        os.read(fd, args.size)
        os.close(fd)
    t3 = time.perf_counter()
    for name in names:
        os.unlink(name)
    os.rmdir(root)
    t4 = time.perf_counter()
    n = float(args.count)
    print(
        json.dumps(
            {
                "files": args.count,
                "file_bytes": args.size,
                "create_per_s": n / (t1 - t0),
                "stat_per_s": n / (t2 - t1),
                "read_per_s": n / (t3 - t2),
                "delete_per_s": n / (t4 - t3),
                "ops_per_s": 3 * n / (t3 - t0),
                "open_p99_ms": percentile(opens, 0.99) * 1e3,
            }
        )
    )
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="mode")
    seq = sub.add_parser("seq")
    seq.add_argument("dir")
    seq.add_argument("--size", type=int, default=256 << 20)
    rand = sub.add_parser("rand")
    rand.add_argument("dir")
    rand.add_argument("--seconds", type=float, default=3.0)
    small = sub.add_parser("smallfiles")
    small.add_argument("dir")
    small.add_argument("--count", type=int, default=2000)
    small.add_argument("--size", type=int, default=SMALL)
    args = parser.parse_args()
    if args.mode == "seq":
        return cmd_seq(args) or 0
    if args.mode == "rand":
        return cmd_rand(args)
    if args.mode == "smallfiles":
        return cmd_smallfiles(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
