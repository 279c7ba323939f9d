"""A catalog server on 127.0.0.1 for the price-refresh tests: the recorded catalog files, a cut-off
download, a garbled file. Shared by the core tests and the window's refresh-button test.

Routes (base URLs the tests hand to the refresh):

- ``/skypilot/<cloud>/vms.csv``: tests/fixtures/catalog/skypilot/<cloud>/vms.csv; aws is served with
  a Last-Modified header (the date SkyPilot's file states), the others without one;
- ``/gpuhunt/<provider>/version`` and ``/gpuhunt/<provider>/<version>/catalog.zip``: gpuhunt's
  published layout, the zip built from tests/fixtures/catalog/gpuhunt/<provider>.csv;
- ``/cut/<cloud>/vms.csv``: Content-Length says more than is sent, then the connection closes;
- ``/garbled/<cloud>/vms.csv``: an HTML page, as a captive portal or proxy sends;
- ``/drip/<cloud>/vms.csv``: the headers and then one byte every 0.2 s, never the whole body (a
  slow-drip server: each read gets a byte well within any per-read timeout);
- ``/flaky<n>/<cloud>/vms.csv``: HTTP 503 to the first n requests of that path, then the recorded
  file;
- ``/served/<cloud>/vms.csv``: whatever the test put in ``server.served[cloud]`` (a poisoned feed);
  the same for gpuhunt's layout, ``/served/<provider>/version`` and
  ``/served/<provider>/<version>/catalog.zip``.
"""

from __future__ import annotations

import io
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "catalog"
AWS_LAST_MODIFIED = "Tue, 24 Nov 2026 07:12:00 GMT"
GPUHUNT_VERSION = "20261128-57"


def _zip(provider: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.write(FIXTURES / "gpuhunt" / f"{provider}.csv", f"{provider}.csv")
    return buf.getvalue()


class CatalogServer:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.served: dict[str, bytes] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                parts = self.path.strip("/").split("/")
                if parts[0] == "skypilot" and len(parts) == 3:
                    file = FIXTURES / "skypilot" / parts[1] / "vms.csv"
                    if file.is_file():
                        headers = {"Last-Modified": AWS_LAST_MODIFIED} if parts[1] == "aws" else {}
                        return self._send(file.read_bytes(), headers)
                if parts[0] == "gpuhunt" and len(parts) == 3 and parts[2] == "version":
                    return self._send(f"{GPUHUNT_VERSION}\n".encode())
                if (
                    parts[0] == "gpuhunt"
                    and len(parts) == 4
                    and parts[2] == GPUHUNT_VERSION
                    and (FIXTURES / "gpuhunt" / f"{parts[1]}.csv").is_file()
                ):
                    return self._send(_zip(parts[1]))
                if parts[0] == "cut":
                    body = (FIXTURES / "skypilot" / "aws" / "vms.csv").read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 3])
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                if parts[0] == "drip":
                    return self._drip((FIXTURES / "skypilot" / "aws" / "vms.csv").read_bytes())
                if (
                    parts[0].startswith("flaky")
                    and len(parts) == 3
                    and outer.requests.count(self.path) <= int(parts[0].removeprefix("flaky"))
                ):
                    self.send_error(503, "try again later")
                    return None
                if parts[0].startswith("flaky") and len(parts) == 3:
                    return self._send((FIXTURES / "skypilot" / parts[1] / "vms.csv").read_bytes())
                if parts[0] == "served" and len(parts) == 3 and parts[2] == "version":
                    return self._send(f"{GPUHUNT_VERSION}\n".encode())
                if parts[0] == "served" and len(parts) in (3, 4) and parts[1] in outer.served:
                    return self._send(outer.served[parts[1]])
                if parts[0] == "garbled":
                    return self._send(
                        b"<!DOCTYPE html>\n<html><body><h1>Sign in to the "
                        b"Wi-Fi</h1></body></html>\n"
                    )
                self.send_error(404, "no such catalog file")
                return None

            def _drip(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i in range(len(body)):
                    try:
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what a deadline does
                        return
                    time.sleep(0.2)

            def _send(self, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> CatalogServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def serve() -> Iterator[CatalogServer]:
    """For a pytest fixture: ``yield from serve()``."""
    with CatalogServer() as server:
        yield server
