"""``read_document``: pick the reader for a file by its extension."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.csv_reader import read_csv
from esbubble.ingest.docx import read_docx
from esbubble.ingest.ids import validate_doc_id
from esbubble.ingest.markdown import read_markdown
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.pdf import read_pdf
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
    ".txt": partial(read_markdown, plain=True),
}


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in READERS


def read_document(path: str | Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """The chunks of one file, in document order. Pure of Elasticsearch.

    Unsupported, missing, unreadable, empty, encrypted and corrupt files raise
    ``IngestError`` with one line: the file, then what is wrong with it.
    """
    try:
        return read_chunks(Path(path), options, doc_id=validate_doc_id(doc_id))
    except IngestError as error:
        raise IngestError(f"{path}: {error.message}", hint=error.hint) from None


def read_chunks(file: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """``read_document`` without the file name in the error (the caller reports it)."""
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        raise IngestError("file not found") from None
    except OSError as error:
        raise IngestError(f"cannot read file: {error.strerror}") from None
    reader = READERS.get(file.suffix.lower())
    if reader is None:
        raise IngestError(
            f"unsupported file type {file.suffix or '(none)'!r}",
            hint=f"supported: {', '.join(sorted(READERS))}",
        )
    if not file.is_file():
        raise IngestError("not a regular file")
    if size == 0:
        raise IngestError("file is empty")
    try:
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
    return chunks
