"""One file out of a downloaded zip archive, inflated in chunks up to a bound (a zip bomb is
refused, not read).

The download is capped (core.catalog.download.MAX_BYTES), but what it inflates to is not: a 6 MB
catalog.zip whose CSV member inflates to 6 GiB took 12.6 GB of memory and ended in a MemoryError. So
the member is read a chunk at a time and refused, in one sentence, as soon as it passes MAX_INFLATED
bytes or MAX_RATIO times the archive's own size: the size the zip header declares is never trusted
(a bomb declares what it likes). A gpuhunt CSV inflates about 10 times and to a few MB; an archive
holds one CSV, so one with more than MAX_MEMBERS entries is refused before its directory is read
whole.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable

from core.catalog.records import CatalogError

MAX_INFLATED = 256 * 2**20  # the largest gpuhunt provider CSV is a few MB
MAX_RATIO = 200  # inflated bytes per archive byte: CSV deflates ~10:1, a run of zeros ~1000:1
MAX_MEMBERS = 1000
CHUNK = 2**20
_END = b"PK\x05\x06"  # end of central directory record (APPNOTE.TXT 4.3.16)


def _entries(data: bytes) -> int | None:
    """The entry count the archive's end record states, None when there is no end record (not a
    zip)."""
    at = data.rfind(_END, max(0, len(data) - 65_557))
    if at < 0 or at + 22 > len(data):
        return None
    return int(struct.unpack_from("<H", data, at + 10)[0])


def read_member(data: bytes, pick: Callable[[list[str]], str], where: str) -> bytes:
    """The bytes of the member `pick` chooses from the archive's names; CatalogError (one sentence
    naming `where`) when the archive is damaged or the member inflates past the bounds."""
    entries = _entries(data)
    if entries is not None and entries > MAX_MEMBERS:
        raise CatalogError(
            f"{where} holds {entries:,} files; a catalog.zip holds one CSV file, so it was refused"
        )
    limit = min(MAX_INFLATED, MAX_RATIO * max(len(data), 1))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            name = pick(archive.namelist())
            chunks, total = [], 0
            with archive.open(name) as member:
                while chunk := member.read(CHUNK):
                    total += len(chunk)
                    if total > limit:
                        raise CatalogError(
                            f"{where}: {name} inflates to more than {limit / 2**20:,.0f} MiB from "
                            f"a {len(data) / 2**20:,.2f} MiB archive, more than a price catalog "
                            "holds, so it was "
                            "refused and the prices there were kept"
                        )
                    chunks.append(chunk)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        NotImplementedError,
        OSError,
        RuntimeError,
    ) as exc:
        raise CatalogError(f"{where} is not a readable catalog.zip: {exc}") from None
    return b"".join(chunks)
