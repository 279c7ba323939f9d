"""A feed cannot exhaust memory: a catalog.zip whose CSV inflates far past any price catalog is
refused in one sentence after a bounded read, and the prices there were stay as they were.

The bomb is built here as gpuhunt publishes its catalogs (a zip holding ``<provider>.csv``): 100 MiB
of zeros, deflated to about 100 KB, so the test stays small and fast. It is served by the local
catalog server on 127.0.0.1 (tests/core/catalog_server.py) and imported from a real file.
"""

from __future__ import annotations

import datetime as dt
import io
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.catalog import CatalogError
from core.catalog.refresh import import_file, refresh
from tests.core.catalog_server import CatalogServer, serve

TODAY = dt.date(2026, 12, 1)
INFLATED = 100 * 2**20
# the refusal never holds the member whole (reading it whole held twice this: bytes and text)
MOST_MEMORY = INFLATED


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    yield from serve()


def _bomb(name: str = "lambdalabs.csv") -> bytes:
    """A zip of one member: INFLATED bytes of zeros, written a MiB at a time (the test itself stays
    small)."""
    buf = io.BytesIO()
    zeros = bytes(2**20)
    with (
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open(name, "w") as member,
    ):
        for _ in range(INFLATED // len(zeros)):
            member.write(zeros)
    return buf.getvalue()


def _peak(call: Callable[[], object]) -> tuple[Exception, int]:
    """The exception `call` raised and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        call()
    except Exception as exc:  # handed back to the test to check
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    raise AssertionError("the bomb was read without an error")


def test_a_zip_bomb_from_the_gpuhunt_feed_is_refused_and_the_prices_kept(
    server: CatalogServer, tmp_path: Path
) -> None:
    refresh(
        ["gpuhunt"],
        clouds=["lambda"],
        user_dir=tmp_path,
        base_urls={"gpuhunt": f"{server.url}/gpuhunt"},
        today=TODAY,
    )
    before = (tmp_path / "refreshed_prices.json").read_bytes()
    bomb = _bomb()
    assert len(bomb) < 1_000_000
    server.served["lambdalabs"] = bomb
    exc, peak = _peak(
        lambda: refresh(
            ["gpuhunt"],
            clouds=["lambda"],
            user_dir=tmp_path,
            base_urls={"gpuhunt": f"{server.url}/served"},
            today=TODAY,
        )
    )
    assert isinstance(exc, CatalogError)
    message = str(exc)
    assert "catalog.zip: lambdalabs.csv inflates to more than" in message and "\n" not in message
    assert "prices there were kept" in message
    assert peak < MOST_MEMORY, f"{peak / 2**20:.0f} MiB held while refusing the bomb"
    assert (tmp_path / "refreshed_prices.json").read_bytes() == before


def test_a_zip_bomb_imported_by_hand_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "catalog.zip"
    path.write_bytes(_bomb())
    exc, peak = _peak(lambda: import_file(path, provider="lambda", user_dir=tmp_path, today=TODAY))
    assert (
        isinstance(exc, CatalogError)
        and "inflates to more than" in str(exc)
        and str(path) in str(exc)
    )
    assert peak < MOST_MEMORY
    assert not (tmp_path / "refreshed_prices.json").exists()


def test_an_archive_of_many_files_is_refused_before_its_directory_is_read(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for i in range(1001):
            archive.writestr(f"{i}.csv", b"")
    path = tmp_path / "catalog.zip"
    path.write_bytes(buf.getvalue())
    with pytest.raises(CatalogError, match=r"holds 1,001 files; a catalog.zip holds one CSV file"):
        import_file(path, provider="lambda", user_dir=tmp_path, today=TODAY)
