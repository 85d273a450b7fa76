"""``Outline``: the heading path and paragraph numbering of a document read top to bottom.

Shared by the readers of headed prose (Markdown, plain text, Word): a
heading replaces the trail below its level, and paragraphs and tables are
numbered per section, which is what their locators
(``section=Warranty/para=3``) are made of.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from esbubble.ingest.drafts import Cell, Paragraph, chunk_context, key_width, label_value, row_drafts
from esbubble.ingest.fragments import Block
from esbubble.ingest.options import IngestOptions

# A numbered heading (``15. Disclaimer``, ``1.2 Scope``, ``Section 3.1 Terms``): its number, whose depth
# is the heading's level, and its title.
NUMBERED = re.compile(
    r"^\s*(?:section\s+|article\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?\s+(\S.*?)\s*$", re.IGNORECASE
)


def number_depth(number: str) -> int:
    """The level a heading's number gives: ``5`` 1, ``5.10.2`` 3."""
    return number.count(".") + 1


class Outline:
    """Blocks of one document in order, each placed under the current heading path."""

    def __init__(self, title: str, default_section: str, options: IngestOptions, *, bucket: str) -> None:
        self.title = title
        self.default_section = default_section
        self.options = options
        self.bucket = bucket
        self.trail: list[tuple[int, str]] = []
        self.paragraphs: Counter[str] = Counter()
        self.tables: Counter[str] = Counter()
        self.blocks: list[Block] = []

    @property
    def section(self) -> str:
        return " > ".join(text for _, text in self.trail) or self.default_section

    @property
    def path(self) -> list[str]:
        return [text for _, text in self.trail]

    def heading(self, level: int, text: str) -> None:
        self.up(level)
        self.trail.append((level, text))

    def up(self, level: int) -> None:
        """Leave the headings at ``level`` and below: what follows is under the heading above them."""
        self.trail = [(lvl, t) for lvl, t in self.trail if lvl < level]

    def paragraph(self, text: str, *, lines: tuple[int, int] | None = None) -> None:
        section = self.section
        self.paragraphs[section] += 1
        self.blocks.append(
            Paragraph(
                scope=f"section={section}",
                numbers=(self.paragraphs[section],),
                text=text,
                section=section,
                context=chunk_context(self.title, self.path),
                lines=lines,
            )
        )

    def table(
        self, headers: Sequence[str], rows: Sequence[tuple[int, Sequence[str]]], *, caption: str = ""
    ) -> None:
        """One table: ``rows`` are ``(row number, cell values)``; cells are paired with ``headers``. A
        table of its header row alone (a one-row note box, ``Warning | Never weld …``) is that row's
        text: there are no values for it to name. A row that repeats the header is not a row. The
        table's ``caption`` is a step of its rows' context, below the heading path."""
        if not rows and any(headers):
            headers, rows = [], [(1, headers)]
        context = chunk_context(self.title, [*self.path, caption], headers)
        number = self._next_table()
        table = [
            (row, [Cell(headers[i] if i < len(headers) else "", v) for i, v in enumerate(values) if v])
            for row, values in rows
            # not the header row repeated inside the table (Word repeats it after a page break)
            if not (any(values) and list(values) == list(headers))
        ]
        key = key_width([cells for _, cells in table])
        for row, cells in table:
            self._row(number, row, cells, context, key=key)

    def record(self, rows: Sequence[Sequence[str]], *, caption: str = "") -> None:
        """One key-value table (``Description: | …``, ``Type: | String``): a single record, read as
        one row ``Label: value; …`` numbered 1, whose context names the labels as a table's does
        its column headers (and its ``caption``, as a table's)."""
        cells = [label_value(values) for values in rows if any(values)]
        context = chunk_context(self.title, [*self.path, caption], [cell.header for cell in cells])
        self._row(self._next_table(), 1, cells, context)

    def _next_table(self) -> int:
        self.tables[self.section] += 1
        return self.tables[self.section]

    def _row(self, table: int, row: int, cells: Sequence[Cell], context: str, *, key: int = 1) -> None:
        section = self.section
        self.blocks.append(
            tuple(
                row_drafts(
                    f"section={section}/table={table}/row={row}",
                    cells,
                    self.options,
                    section=section,
                    default_bucket=self.bucket,
                    sheet_name=None,
                    row_number=row,
                    context=context,
                    key=key,
                )
            )
        )


# A header cell is a label: a cell of more than this many words ending as a sentence does is a value.
_LABEL_WORDS = 5
# A number alone (``400``, ``1.2``) in a row's first cell keys a record (an error code, a clause): the
# row is data, not the names of the columns.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def is_header_row(values: Sequence[str]) -> bool:
    """A table's first row names its columns: at least two non-empty cells, none of them a sentence
    (more than ``_LABEL_WORDS`` words ending with a full stop), and its first cell no number alone. A
    field table that has no header row starts with its first field (``agreementPeriod | A time
    period. The time period during which …``; SARIF's ``theSarifLog | The root object of the SARIF log
    file.``), an error table with its first code (``400 | Bad Request``), which as a header would name
    every other row's values."""
    cells = [value for value in values if value]
    return (
        len(cells) >= 2
        and not (values and _NUMBER.fullmatch(values[0].strip()))
        and not any(value.endswith(".") and len(value.split()) > _LABEL_WORDS for value in cells)
    )


def is_key_value(rows: Sequence[Sequence[str]]) -> bool:
    """A table of labelled values with no header row: its first cell is a label (ends with a colon,
    as a column header does not) and so are at least half of its rows' first cells
    (``Description: | …``, ``Type: | String``, ``Mandatory``, ``Example: | …``)."""
    firsts = [values[0] for values in rows if values and values[0]]
    return (
        bool(firsts)
        and rows[0][:1] == firsts[:1]
        and firsts[0].endswith(":")
        and (2 * sum(label.endswith(":") for label in firsts) >= len(firsts))
    )
