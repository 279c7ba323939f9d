"""Is the rendezvous port on the first node reachable from every other node? Run before torchrun is
started.

Usage: rdzv_check.py listen PORT COUNT TIMEOUT   (on the first node, PORT 0 for any free one: prints
                                                  "TUNEPLAN_LISTENING PORT" with the port it holds,
                                                  then "TUNEPLAN_ACCEPTED ADDRESS" per connection,
                                                  COUNT at most)
       rdzv_check.py connect HOST PORT TIMEOUT   (on every other node: prints "TUNEPLAN_CONNECTED"
       or exits 1
                                                  with the reason on stderr)
The listener reads each connection to its end before closing it, so the port is left free (no
TIME_WAIT on the listening side) for torchrun's c10d store to bind right after.
"""

import socket
import sys
import time


def listen(port, count, timeout):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("", port))
    server.listen(max(count, 1))
    print(f"TUNEPLAN_LISTENING {server.getsockname()[1]}", flush=True)
    deadline = time.monotonic() + timeout
    accepted = 0
    while accepted < count and time.monotonic() < deadline:
        server.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            conn, address = server.accept()
        except TimeoutError:
            break
        conn.settimeout(5.0)
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        conn.close()
        accepted += 1
        print(f"TUNEPLAN_ACCEPTED {address[0]}", flush=True)
    server.close()


def connect(host, port, timeout):
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        print(f"cannot connect to {host}:{port}: {exc}", file=sys.stderr)
        sys.exit(1)
    print("TUNEPLAN_CONNECTED", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "listen":
        listen(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        connect(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
