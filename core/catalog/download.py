"""One HTTP GET for a price refresh: the whole body or a CatalogError, never a partial file.

urllib already raises ``http.client.IncompleteRead`` when a server closes the connection before the body it
announced in Content-Length; this turns that, refused connections, timeouts and HTTP errors into one sentence
naming the URL, so the refresh can stop before writing anything.
"""

from __future__ import annotations

import email.utils
import http.client
import urllib.error
import urllib.request
from dataclasses import dataclass

from core.catalog.records import CatalogError

USER_AGENT = "tuneplan-price-refresh"
MAX_BYTES = 64 * 1024 * 1024  # the largest catalog file (SkyPilot aws/vms.csv) is a few MB


class NotPublished(CatalogError):
    """The server has no such file (HTTP 404): a source that publishes no catalog for that cloud."""


@dataclass(frozen=True)
class Download:
    url: str
    body: bytes
    last_modified: str | None  # YYYY-MM-DD from the Last-Modified header, None when the server sent none


def _date_of(header: str | None) -> str | None:
    if not header:
        return None
    try:
        return email.utils.parsedate_to_datetime(header).date().isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def fetch(url: str, timeout: float) -> Download:
    """GET `url`; CatalogError with one sentence when it cannot be had whole within `timeout` seconds."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            expected = response.headers.get("Content-Length")
            body = response.read(MAX_BYTES + 1)
            modified = response.headers.get("Last-Modified")
    except urllib.error.HTTPError as exc:
        kind = NotPublished if exc.code == 404 else CatalogError
        raise kind(f"download of {url} failed: the server answered {exc.code} {exc.reason}") from None
    except http.client.IncompleteRead as exc:
        got = len(exc.partial)
        of = f" of {got + exc.expected}" if exc.expected else ""
        raise CatalogError(f"download of {url} was cut off after {got}{of} bytes") from None
    except TimeoutError:
        raise CatalogError(f"download of {url} timed out after {timeout:g} s") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CatalogError(f"download of {url} failed: {reason}") from None
    if len(body) > MAX_BYTES:
        raise CatalogError(f"download of {url} is larger than {MAX_BYTES // 2**20} MiB; not a price catalog")
    if expected is not None and expected.isdigit() and int(expected) != len(body):
        raise CatalogError(f"download of {url} was cut off after {len(body)} of {expected} bytes")
    return Download(url=url, body=body, last_modified=_date_of(modified))
