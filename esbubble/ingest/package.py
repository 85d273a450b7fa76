"""Checks on an Office Open XML package (``.xlsx``, ``.docx``) before a parser sees it.

OOXML parts never need a document type declaration, and a DTD is how an XML
"billion laughs" (nested entity expansion) or an external entity gets in.
lxml and expat have their own amplification limits, but what they do with a
DTD differs by version, so a package whose parts declare one is refused here,
whatever the parser would have done. The decompressed size is bounded too,
so a zip bomb is refused before it is inflated into memory.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from esbubble.errors import IngestError

MAX_PACKAGE_BYTES = 1 << 30  # 1 GiB decompressed, far above any real workbook or document
_READ_BLOCK = 1 << 20
# "<!DOCTYPE" and "<!ENTITY" as they look in UTF-8 and in both UTF-16 byte orders.
_MARKERS = tuple(
    marker.encode(codec)
    for marker in ("<!DOCTYPE", "<!ENTITY")
    for codec in ("utf-8", "utf-16-le", "utf-16-be")
)
_OVERLAP = max(len(m) for m in _MARKERS) - 1


def _declares_dtd(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    """Does the part contain a DTD marker; read in blocks so a large part is never held whole."""
    tail = b""
    with archive.open(info) as part:
        while block := part.read(_READ_BLOCK):
            window = tail + block
            if any(marker in window for marker in _MARKERS):
                return True
            tail = window[-_OVERLAP:]
    return False


def check_package(path: Path, kind: str) -> None:
    """Refuse a package that is too large once inflated or whose XML parts declare a DTD.

    ``kind`` names the format in the message (``workbook``, ``document``). A
    file that is not a zip archive is left to the reader, which reports it
    with the format's own wording (legacy ``.xls``/``.doc``, encrypted, …).
    """
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            declared = sum(info.file_size for info in infos)
            if declared > MAX_PACKAGE_BYTES:
                raise IngestError(
                    f"{kind} inflates to {declared / (1 << 20):,.0f} MiB, above the "
                    f"{MAX_PACKAGE_BYTES >> 20:,} MiB limit",
                    hint="split it into smaller files",
                )
            for info in infos:
                if info.filename.endswith((".xml", ".rels", ".vml")) and _declares_dtd(archive, info):
                    raise IngestError(
                        f"{kind} part {info.filename} declares a DTD or entities, which Office files never "
                        "need (an entity-expansion attack?); refused",
                        hint="re-save the file from Excel/Word/LibreOffice",
                    )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError):
        return  # not a usable zip: the reader says what it is
