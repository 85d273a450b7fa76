"""CSV reader: the file is one sheet named after its stem; one chunk per non-empty record.

The delimiter is sniffed (``,`` ``;`` tab ``|``); the first non-empty record is
the header when it has at least two cells and none of them is a number.
``row_number`` is the record's 1-based number, as a spreadsheet shows it.
Each chunk's ``context`` is the file stem and the column headers.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.drafts import Cell, Draft, chunk_context, finish, key_width, row_drafts
from esbubble.ingest.options import IngestOptions
from esbubble.models import Chunk

_NUMBER = re.compile(r"^[-+($€£]*[\d.,\s]+[)%]*$")


def _dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def _is_header(record: list[str]) -> bool:
    cells = [c.strip() for c in record if c.strip()]
    return len(cells) >= 2 and not any(_NUMBER.match(c) for c in cells)


def read_csv(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Chunks of the CSV's records, ``Header: value; …`` like a sheet."""
    try:
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise IngestError("CSV is not UTF-8 text", hint="re-save it as UTF-8") from None
    if "\x00" in content:
        raise IngestError("CSV contains NUL bytes; it looks like a binary file", hint="check the file")
    name = path.stem
    try:
        records = list(csv.reader(io.StringIO(content, newline=""), _dialect(content[:4096])))
    except csv.Error as error:
        raise IngestError(f"malformed CSV: {error}") from None
    numbered = [
        (number, record) for number, record in enumerate(records, start=1) if any(c.strip() for c in record)
    ]
    headers: list[str] = []
    if numbered and _is_header(numbered[0][1]):
        headers = [h.strip() for h in numbered[0][1]]
        numbered = numbered[1:]
    context = chunk_context(name, (), headers)
    rows = [
        (
            number,
            [
                Cell(header=headers[i] if i < len(headers) else "", value=value)
                for i, value in enumerate(record)
                if value.strip()
            ],
        )
        for number, record in numbered
    ]
    key = key_width([cells for _, cells in rows])
    drafts: list[Draft] = []
    for number, cells in rows:
        drafts.extend(
            row_drafts(
                f"sheet={name}/row={number}",
                cells,
                options,
                section=name,
                default_bucket=name,
                sheet_name=name,
                row_number=number,
                context=context,
                key=key,
            )
        )
    if not drafts:
        found = f"only a header row ({', '.join(headers)[:80]})" if headers else "no non-empty record"
        raise IngestError(f"CSV has no rows: {found}", hint="add data rows below the header")
    return finish(doc_id, "csv", drafts, options)
