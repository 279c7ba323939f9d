"""Refreshing prices from the field's public catalogs, and importing such a catalog file by hand.

Offline is the default: nothing here runs unless the user asks (``tuneplan catalog refresh``, the
window's "Refresh prices" button). Every file is downloaded and parsed before anything is written,
so a cut-off download or a garbled file raises CatalogError and the previous
``refreshed_prices.json`` stays as it was.

A refresh replaces the rows of the sources and clouds it read and keeps the rest (other clouds, hand
imports); ``core.catalog.refreshed`` merges the rows over the shipped prices, and the user's own
prices.json wins over both. Each row says where it came from (``origin``, ``source``), when it was
fetched (``fetched``) and the date its source states for it (``date``: the Last-Modified of a
SkyPilot file, the date in a gpuhunt version; None, undated, when the source states none).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.catalog.download import DEADLINE_S, MAX_BYTES, Download, NotPublished, fetch
from core.catalog.feeds import gpuhunt, skypilot
from core.catalog.feeds.offer import Offer, ParseResult
from core.catalog.lookup import Catalog
from core.catalog.overrides import load_catalog
from core.catalog.records import CatalogError
from core.catalog.refreshed_file import read_document, refreshed_file, write_document
from core.catalog.shipped import shipped_catalog
from core.json_file import FileReadError, read_bounded

SOURCES = ("skypilot", "gpuhunt")
FORMATS = SOURCES
DEFAULT_BASE_URLS = {
    # SkyPilot's own reader: sky/catalog/constants.py HOSTED_CATALOG_DIR_URL + the v8 schema folder
    "skypilot": "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8",
    "gpuhunt": gpuhunt.DEFAULT_BASE_URL,  # gpuhunt src/gpuhunt/_internal/catalog.py CATALOG_URL
}
ENV_VARS = {"skypilot": "TUNEPLAN_SKYPILOT_CATALOG_URL", "gpuhunt": "TUNEPLAN_GPUHUNT_CATALOG_URL"}
_GPUHUNT_NAMES = {"lambda": "lambdalabs"}  # --cloud lambda means gpuhunt's lambdalabs file


@dataclass
class SourceReport:
    """What one source gave: rows kept and read, rows skipped by reason, unknown GPU names with
    counts."""

    name: str
    urls: list[str] = field(default_factory=list)
    rows_read: int = 0
    rows_kept: int = 0
    unknown_gpus: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    clouds_skipped: dict[str, str] = field(default_factory=dict)  # cloud -> why it was not read


@dataclass
class RefreshReport:
    sources: list[SourceReport]
    path: Path
    rows_written: int

    def summary(self) -> str:
        """A few lines for the terminal and the window: rows per source, skipped GPU names, where
        written."""
        lines = []
        for s in self.sources:
            lines.append(f"{s.name}: {s.rows_kept} prices kept from {s.rows_read} rows")
            if s.unknown_gpus:
                names = ", ".join(
                    f"{n} ({c})"
                    for n, c in sorted(s.unknown_gpus.items(), key=lambda x: (-x[1], x[0]))
                )
                lines.append(f"  skipped, GPU not in the catalog: {names}")
            for reason, count in sorted(s.skipped.items()):
                lines.append(f"  skipped, {reason}: {count} rows")
            for cloud, why in s.clouds_skipped.items():
                lines.append(f"  not read: {cloud}: {why}")
        lines.append(f"{self.rows_written} refreshed prices written to {self.path}")
        return "\n".join(lines)


def refreshed_path(user_dir: Path | None = None) -> Path:
    """Where a refresh or import writes (core.catalog.refreshed_file)."""
    return refreshed_file(user_dir, writing=True)


def base_url(source: str, base_urls: Mapping[str, str] | None = None) -> str:
    """Argument, else the TUNEPLAN_*_CATALOG_URL environment variable, else the source's public
    address."""
    chosen = (
        (base_urls or {}).get(source)
        or os.environ.get(ENV_VARS[source])
        or DEFAULT_BASE_URLS[source]
    )
    return chosen.rstrip("/")


def _lookup_catalog(user_dir: Path | None) -> Catalog:
    """The GPUs names are mapped to: the user's catalog, or the shipped one when an override file is
    damaged (a refresh must still be able to replace a damaged refreshed_prices.json)."""
    try:
        return load_catalog(user_dir)
    except CatalogError:
        return shipped_catalog()


def _report(name: str, result: ParseResult, urls: list[str]) -> SourceReport:
    return SourceReport(
        name=name,
        urls=urls,
        rows_read=result.rows_read,
        rows_kept=len(result.offers),
        unknown_gpus=dict(Counter(result.unknown_gpus)),
        skipped=dict(result.skipped),
    )


def _read_clouds(
    name: str,
    clouds: Iterable[str],
    read_one: Callable[[str], tuple[ParseResult, str] | str],
    absent: Callable[[str], str],
) -> tuple[SourceReport, ParseResult]:
    """Read each cloud of one source with ``read_one`` (its parse result and URL, or why it was not
    read); a cloud the source does not publish (NotPublished) is skipped and said with
    ``absent(cloud)``; a source that publishes none of them is an error."""
    result, urls = ParseResult(), list[str]()
    not_read: dict[str, str] = {}
    missing: list[NotPublished] = []
    for cloud in clouds:
        try:
            got = read_one(cloud)
        except NotPublished as exc:
            missing.append(exc)
            not_read[cloud] = absent(cloud)
            continue
        if isinstance(got, str):
            not_read[cloud] = got
            continue
        result.extend(got[0])
        urls.append(got[1])
    _all_missing(urls, missing)
    report = _report(name, result, urls)
    report.clouds_skipped = not_read
    return report, result


# one download (core.catalog.download.fetch with the refresh's time limits)
Get = Callable[[str], Download]


def _skypilot(
    clouds: Iterable[str], url: str, catalog: Catalog, fetched: str, get: Get
) -> tuple[SourceReport, ParseResult]:
    def read_one(cloud: str) -> tuple[ParseResult, str] | str:
        if cloud in skypilot.UNSUPPORTED_CLOUDS:
            return skypilot.UNSUPPORTED_CLOUDS[cloud]
        got = get(f"{url}/{cloud}/vms.csv")
        text = _text(got.body, got.url)
        return skypilot.parse_vms_csv(
            text,
            cloud=cloud,
            catalog=catalog,
            source=got.url,
            fetched=fetched,
            date=got.last_modified,
        ), got.url

    return _read_clouds(
        "skypilot", clouds, read_one, lambda cloud: f"no catalog at {url}/{cloud}/vms.csv"
    )


def _gpuhunt(
    clouds: Iterable[str], url: str, catalog: Catalog, fetched: str, get: Get
) -> tuple[SourceReport, ParseResult]:
    def read_one(cloud: str) -> tuple[ParseResult, str]:
        provider = _GPUHUNT_NAMES.get(cloud, cloud)
        version_url = f"{url}/{provider}/version"
        version = _text(get(version_url).body, version_url).strip()
        if not version or "/" in version or len(version) > 64:
            raise CatalogError(
                f"{version_url} does not hold a catalog version (got '{version[:40]}')"
            )
        got = get(f"{url}/{provider}/{version}/catalog.zip")
        text = gpuhunt.csv_from_zip(got.body, provider, got.url)
        return gpuhunt.parse_catalog_csv(
            text,
            provider=provider,
            catalog=catalog,
            source=got.url,
            fetched=fetched,
            date=gpuhunt.version_date(version),
        ), got.url

    return _read_clouds(
        "gpuhunt",
        clouds,
        read_one,
        lambda cloud: f"no gpuhunt catalog for {_GPUHUNT_NAMES.get(cloud, cloud)} at {url}",
    )


def _all_missing(urls: list[str], missing: list[NotPublished]) -> None:
    """A cloud a source does not publish is skipped and said; a source where every file is missing
    (a wrong base URL) is an error, so that a refresh never replaces a source's prices with
    nothing."""
    if missing and not urls:
        raise missing[0]


def _text(body: bytes, where: str) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CatalogError(f"{where} is not a text (UTF-8) catalog file") from None


def _write(
    user_dir: Path | None,
    replaced: set[tuple[str, str]],
    new_sources: list[dict[str, Any]],
    offers: list[Offer],
) -> tuple[Path, int]:
    """Write the new rows in place of the old rows of the (origin, provider) pairs just read; the
    rest stay (another source's rows, a cloud not asked for this time, hand imports of other
    providers, also when they were read from the config folder of earlier releases). Returns the
    file written and its row count."""
    path = refreshed_path(user_dir)
    try:
        old = read_document(refreshed_file(user_dir))
    except CatalogError:
        old = None  # a damaged refresh file is replaced: its rows are a copy of public catalogs
    rows = [
        r
        for r in (old or {}).get("rows", [])
        if isinstance(r, dict) and (r.get("origin"), r.get("provider")) not in replaced
    ]
    names = {s["name"] for s in new_sources}
    sources = [
        s
        for s in (old or {}).get("sources", [])
        if isinstance(s, dict) and s.get("name") not in names
    ]
    rows += [o.as_row() for o in offers]
    write_document(path, sources + new_sources, rows)
    return path, len(rows)


FEWER = 0.5  # a cloud's feed that keeps under half the prices of its last refresh is refused


def _refuse_fewer(path: Path, replaced: set[tuple[str, str]], offers: list[Offer]) -> None:
    """CatalogError when a cloud's feed keeps under FEWER of the prices its last refresh kept: a
    feed whose prices all read as nan, or a file cut to its header, would otherwise empty that
    cloud's prices silently."""
    try:
        old = read_document(path)
    except CatalogError:
        return  # a damaged file is replaced whole (_write)
    before = Counter(
        (r.get("origin"), r.get("provider"))
        for r in (old or {}).get("rows", [])
        if isinstance(r, dict)
    )
    after = Counter((o.origin, o.provider) for o in offers)
    for origin, provider in sorted(replaced):
        had, got = before[(origin, provider)], after[(origin, provider)]
        if had and got < had * FEWER:
            raise CatalogError(
                f"the {origin.removeprefix('refresh:')} feed for {provider} gave {got} usable "
                f"prices where the last refresh kept {had}, so it was refused and the previous "
                f"prices kept (give --accept-fewer if {provider} really sells that much less)"
            )


def refresh(
    sources: Iterable[str] = SOURCES,
    *,
    clouds: Iterable[str] | None = None,
    user_dir: Path | None = None,
    base_urls: Mapping[str, str] | None = None,
    today: dt.date | None = None,
    timeout: float = 30.0,
    deadline: float = DEADLINE_S,
    accept_fewer: bool = False,
) -> RefreshReport:
    """Download and parse the chosen sources, then write refreshed_prices.json; CatalogError before
    any write when a source cannot be had whole or does not parse, or (unless `accept_fewer`) when a
    cloud's feed gives far fewer prices than its last refresh kept. `timeout` bounds each wait for a
    server, `deadline` each download as a whole."""
    chosen = list(dict.fromkeys(sources))
    for s in chosen:
        if s not in SOURCES:
            raise CatalogError(f"price source '{s}' is not one of {', '.join(SOURCES)} (or all)")
    if not chosen:
        raise CatalogError(f"choose at least one price source: {', '.join(SOURCES)}")
    fetched = (today or dt.date.today()).isoformat()
    catalog = _lookup_catalog(user_dir)
    asked = [c.strip().lower() for c in clouds] if clouds is not None else None
    get = functools.partial(fetch, timeout=timeout, deadline_s=deadline)
    reports, offers, new_sources = [], [], []
    replaced: set[tuple[str, str]] = set()
    for s in chosen:
        url = base_url(s, base_urls)
        if s == "skypilot":
            report, result = _skypilot(asked or skypilot.CLOUDS, url, catalog, fetched, get)
        else:
            report, result = _gpuhunt(asked or gpuhunt.PROVIDERS, url, catalog, fetched, get)
        reports.append(report)
        offers += result.offers
        replaced |= {(f"refresh:{s}", provider) for provider in result.providers}
        new_sources.append({"name": s, "url": url, "fetched": fetched})
    if not accept_fewer:
        _refuse_fewer(refreshed_file(user_dir), replaced, offers)
    path, written = _write(user_dir, replaced, new_sources, offers)
    return RefreshReport(sources=reports, path=path, rows_written=written)


def _sniff(text: str, path: Path) -> str:
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    cells = [c.strip() for c in first.split(",")]
    if "InstanceType" in cells:
        return "skypilot"
    if "instance_name" in cells:
        return "gpuhunt"
    raise CatalogError(
        f"{path} is neither a SkyPilot vms.csv (InstanceType, AcceleratorName, ... columns) nor a "
        "gpuhunt catalog"
        " (instance_name, location, price, ... columns); give --format skypilot or gpuhunt if it "
        "is one"
    )


def import_file(
    path: str | Path,
    *,
    fmt: str | None = None,
    provider: str | None = None,
    user_dir: Path | None = None,
    today: dt.date | None = None,
) -> RefreshReport:
    """Read a catalog file the user downloaded (a SkyPilot vms.csv, a gpuhunt CSV or catalog.zip)
    into the refreshed prices. The provider comes from `provider`, else the file's place (SkyPilot:
    ``.../<cloud>/vms.csv``; gpuhunt: ``<provider>.csv``). Rows imported before for that provider
    are replaced."""
    p = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise CatalogError(f"import format '{fmt}' is not one of {', '.join(FORMATS)}")
    try:
        body = read_bounded(p, MAX_BYTES)
    except FileReadError as exc:
        raise CatalogError(str(exc)) from None
    is_zip = body[:4] == b"PK\x03\x04"
    if is_zip:
        fmt = fmt or "gpuhunt"
        if fmt != "gpuhunt":
            raise CatalogError(
                f"{p} is a zip archive; only a gpuhunt catalog.zip can be imported as one"
            )
    text = gpuhunt.csv_from_zip(body, provider or "", str(p)) if is_zip else _text(body, str(p))
    fmt = fmt or _sniff(text, p)
    default = p.parent.name if fmt == "skypilot" else p.stem
    if is_zip or (fmt == "skypilot" and p.name != "vms.csv"):
        default = ""
    slug = (provider or default).strip().lower()
    if not slug:
        raise CatalogError(
            f"cannot tell which provider {p} prices: give --provider (e.g. aws, lambda, runpod)"
        )
    catalog = _lookup_catalog(user_dir)
    fetched = (today or dt.date.today()).isoformat()
    parse = skypilot.parse_vms_csv if fmt == "skypilot" else None
    if parse is not None:
        result = parse(
            text, cloud=slug, catalog=catalog, source=str(p.resolve()), fetched=fetched, date=None
        )
    else:
        result = gpuhunt.parse_catalog_csv(
            text,
            provider=slug,
            catalog=catalog,
            source=str(p.resolve()),
            fetched=fetched,
            date=None,
        )
    offers = [dataclasses.replace(o, origin="import") for o in result.offers]
    out, written = _write(
        user_dir, {("import", provider) for provider in result.providers}, [], offers
    )
    return RefreshReport(
        sources=[_report(f"import ({fmt})", result, [str(p.resolve())])],
        path=out,
        rows_written=written,
    )
