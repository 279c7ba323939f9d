"""One HTTP GET for a price refresh: the whole body or a CatalogError, never a partial file.

urllib already raises ``http.client.IncompleteRead`` when a server closes the connection before the
body it announced in Content-Length; this turns that, refused connections, timeouts and HTTP errors
into one sentence naming the URL, so the refresh can stop before writing anything. A per-read
timeout never ends a server that drips a byte at a time, so each download also has one deadline for
the whole of it, retries included; a transient failure (429, 5xx, a reset) is asked again once or
twice with a growing wait.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from core.catalog.records import CatalogError

USER_AGENT = "tuneplan-price-refresh"
MAX_BYTES = 64 * 1024 * 1024  # the largest catalog file (SkyPilot aws/vms.csv) is a few MB


class NotPublished(CatalogError):
    """The server has no such file (HTTP 404): a source that publishes no catalog for that cloud."""


class Transient(CatalogError):
    """A failure asking again may cure: HTTP 408, 425, 429 or 5xx, a refused or reset connection, a
    timeout."""


@dataclass(frozen=True)
class Download:
    url: str
    body: bytes
    # YYYY-MM-DD from the Last-Modified header, None when the server sent none
    last_modified: str | None


def _date_of(header: str | None) -> str | None:
    if not header:
        return None
    try:
        return email.utils.parsedate_to_datetime(header).date().isoformat()
    except (TypeError, ValueError, IndexError):
        return None


DEADLINE_S = 300.0  # one whole download, retries included: SkyPilot's largest vms.csv takes seconds
# a transient answer (429, 5xx, a reset or refused connection) is asked again this many times
RETRIES = 2
BACKOFF_S = 1.0  # the first wait; each retry waits twice the one before
_TRANSIENT = frozenset({408, 425, 429, 500, 502, 503, 504})


class _Deadline:
    """The end of one download: when it passes, every socket the download opened is shut down, so a
    read blocked on a server that drips a byte at a time returns at once (a per-read timeout never
    ends a drip)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def left(self) -> float:
        return self.at - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


class _Watched:
    """A urllib handler whose connections hand their socket to the download's deadline once
    connected."""

    deadline: _Deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        deadline = self.deadline

        class Connection(http_class):
            def connect(self) -> None:
                super().connect()
                deadline.watch(self.sock)

        return super().do_open(Connection, req, **kwargs)  # type: ignore[misc]


class _HTTP(_Watched, urllib.request.HTTPHandler):
    pass


class _HTTPS(_Watched, urllib.request.HTTPSHandler):
    pass


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    handlers = (_HTTP(), _HTTPS())
    for handler in handlers:
        handler.deadline = deadline
    return urllib.request.build_opener(*handlers)


def _get(url: str, timeout: float, deadline: _Deadline) -> Download:
    """One attempt; CatalogError when it fails (Transient when asking again may help)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with _opener(deadline).open(
            request, timeout=max(0.1, min(timeout, deadline.left()))
        ) as response:
            expected = response.headers.get("Content-Length")
            body = response.read(MAX_BYTES + 1)
            modified = response.headers.get("Last-Modified")
    except urllib.error.HTTPError as exc:
        kind = (
            NotPublished
            if exc.code == 404
            else Transient
            if exc.code in _TRANSIENT
            else CatalogError
        )
        raise kind(
            f"download of {url} failed: the server answered {exc.code} {exc.reason}"
        ) from None
    except http.client.IncompleteRead as exc:
        got = len(exc.partial)
        of = f" of {got + exc.expected}" if exc.expected else ""
        raise _late(url, deadline) or CatalogError(
            f"download of {url} was cut off after {got}{of} bytes"
        ) from None
    except TimeoutError:
        raise _late(url, deadline) or Transient(
            f"download of {url} timed out after {timeout:g} s"
        ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        kind = (
            Transient
            if isinstance(reason, ConnectionError | http.client.RemoteDisconnected)
            else CatalogError
        )
        raise _late(url, deadline) or kind(f"download of {url} failed: {reason}") from None
    if late := _late(url, deadline):
        raise late
    if len(body) > MAX_BYTES:
        raise CatalogError(
            f"download of {url} is larger than {MAX_BYTES // 2**20} MiB; not a price catalog"
        )
    if expected is not None and expected.isdigit() and int(expected) != len(body):
        raise CatalogError(f"download of {url} was cut off after {len(body)} of {expected} bytes")
    return Download(url=url, body=body, last_modified=_date_of(modified))


def _late(url: str, deadline: _Deadline) -> CatalogError | None:
    """The error of a download its deadline ended, None while it is in time."""
    if deadline.expired:
        return CatalogError(
            f"download of {url} did not finish within {deadline.seconds:g} s (the server sends "
            "too slowly or stopped sending)"
        )
    return None


def fetch(
    url: str,
    timeout: float,
    deadline_s: float = DEADLINE_S,
    retries: int = RETRIES,
    backoff_s: float = BACKOFF_S,
) -> Download:
    """GET `url` whole; CatalogError with one sentence when it cannot be had.

    `timeout` bounds each wait for the server (connecting, each read); `deadline_s` the whole
    download, retries included. A transient failure (HTTP 408, 425, 429 or 5xx, a refused or reset
    connection, a read timeout) is tried again up to `retries` times, waiting `backoff_s`, then
    twice that, while the deadline allows."""
    with _Deadline(deadline_s) as deadline:
        for attempt in range(retries + 1):
            try:
                return _get(url, timeout, deadline)
            except Transient:
                wait = backoff_s * 2**attempt
                if attempt == retries or wait >= deadline.left():
                    raise
                time.sleep(wait)
    raise AssertionError("unreachable")
