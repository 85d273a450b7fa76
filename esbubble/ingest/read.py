"""``read_document``: pick the reader for a file by its extension (text files may have none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.csv_reader import read_csv
from esbubble.ingest.docx import read_docx
from esbubble.ingest.ids import validate_doc_id
from esbubble.ingest.markdown import read_markdown
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.pdf import read_pdf
from esbubble.ingest.plaintext import read_text
from esbubble.ingest.reader_warnings import captured_reader_warnings
from esbubble.ingest.xlsx import read_xlsx
from esbubble.models import Chunk

Reader = Callable[..., list[Chunk]]

READERS: dict[str, Reader] = {
    ".xlsx": read_xlsx,
    ".xlsm": read_xlsx,
    ".csv": read_csv,
    ".pdf": read_pdf,
    ".docx": read_docx,
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".txt": read_text,
}
_SNIFF_BYTES = 8192


def has_no_extension(path: Path) -> bool:
    """No extension, or only a version number after the last dot (``GPL-3``, ``Apache-2.0``)."""
    return path.suffix == "" or path.suffix[1:].isdigit()


def looks_like_text(path: Path) -> bool:
    """The file's first 8 KiB decode as UTF-8 (a character cut at the end aside) and hold no NUL byte."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return False
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start >= len(head) - 3  # only a multi-byte character cut by the sniff
    return True


def reader_for(path: Path) -> Reader | None:
    """The reader by extension; a text file without an extension is read as plain text."""
    reader = READERS.get(path.suffix.lower())
    if reader is None and has_no_extension(path) and looks_like_text(path):
        return read_text
    return reader


def is_supported(path: Path) -> bool:
    return reader_for(path) is not None


@dataclass(frozen=True, slots=True)
class FileRead:
    """The chunks of one file, and what its reader library warned about while reading it."""

    chunks: list[Chunk]
    warnings: tuple[str, ...] = ()


def read_document(path: str | Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """The chunks of one file, in document order. Pure of Elasticsearch.

    Unsupported, missing, unreadable, empty, encrypted and corrupt files raise
    ``IngestError`` with one line: the file, then what is wrong with it.
    """
    return read_file(path, options, doc_id=doc_id).chunks


def read_file(path: str | Path, options: IngestOptions, *, doc_id: str) -> FileRead:
    """``read_document`` with the library warnings (pypdf, openpyxl) it captured instead of printing."""
    try:
        return read_chunks(Path(path), options, doc_id=validate_doc_id(doc_id))
    except IngestError as error:
        raise IngestError(f"{path}: {error.message}", hint=error.hint) from None


def read_chunks(file: Path, options: IngestOptions, *, doc_id: str) -> FileRead:
    """``read_file`` without the file name in the error (the caller reports it)."""
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        raise IngestError("file not found") from None
    except OSError as error:
        raise IngestError(f"cannot read file: {error.strerror}") from None
    reader = reader_for(file)
    if reader is None:
        raise IngestError(
            f"unsupported file type {file.suffix or '(none)'!r}",
            hint=f"supported: {', '.join(sorted(READERS))}, and text files without an extension",
        )
    if not file.is_file():
        raise IngestError("not a regular file")
    if size == 0:
        raise IngestError("file is empty")
    try:
        with captured_reader_warnings() as warned:
            chunks = reader(file, options, doc_id=doc_id)
    except IngestError:
        raise
    except PermissionError:
        raise IngestError("cannot read file: permission denied") from None
    except OSError as error:
        raise IngestError(f"cannot read file: {error.strerror or error}") from None
    except Exception as error:
        # A corrupt or hostile file makes the third-party parsers (lxml, expat, openpyxl,
        # python-docx, pypdf) raise almost anything: XMLSyntaxError, ParseError, KeyError,
        # AttributeError on a part with the wrong schema, RecursionError, MemoryError …
        # Whatever it is, it is this file's failure: the file is reported, nothing of it
        # is written, and the other files are still ingested.
        detail = str(error).splitlines()[0][:200] if str(error) else ""
        raise IngestError(
            f"cannot parse the file ({type(error).__name__}{': ' + detail if detail else ''})",
            hint="check that it opens in its own application, or re-save it",
        ) from None
    if not chunks:
        raise IngestError("nothing to index: the file has no rows or text", hint="check that it is not empty")
    return FileRead(chunks=chunks, warnings=tuple(warned))
