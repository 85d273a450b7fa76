"""Codes a workbook's rows share across its tables, and the labels that name them.

A reference workbook names each thing once and refers to it by code everywhere
else: the NUTS workbook names ``BE100`` "Arr. de Bruxelles-Capitale" on one
sheet, and its *Metropolitan* sheet reads ``NUTS_ID: BE100; METRO: Y`` — a row no
question naming Brussels can find. A table's **key column** holds a distinct
code on (nearly) every row; the row's first cell of words is the code's
**label**. A row of another table holding a known code gets ``BE100 = Arr. de
Bruxelles-Capitale`` in its ``context`` (searched with the text, weighted
lower), unless the row already says it. The text stays what the sheet holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from esbubble.core.named import LINK_MARK, is_code
from esbubble.ingest.drafts import Cell

_WORDS = re.compile(r"[^\W\d_]{2,}")
_MIN_KEY_ROWS = 5
_KEY_COVERAGE = 0.9  # share of a table's rows a key column must fill
_MAX_LABEL_CHARS = 80
_MAX_LINKS = 3  # codes named per row, so a row of many codes does not drown its context


@dataclass(frozen=True)
class TableRow:
    """One row of one table of the workbook (``table``: the table's locator scope)."""

    table: str
    cells: tuple[Cell, ...]


def _label(cells: Sequence[Cell], key: str) -> str | None:
    """The row's first value of words that is not itself a code, cut to a short label."""
    for cell in cells:
        if cell.header != key and _WORDS.search(cell.value) and not is_code(cell.value):
            value = " ".join(cell.value.split())
            return value if len(value) <= _MAX_LABEL_CHARS else value[: _MAX_LABEL_CHARS - 1] + "…"
    return None


def _key_columns(rows: Sequence[TableRow]) -> list[str]:
    """The table's key columns: headers whose values are codes, distinct, on nearly every row."""
    values: dict[str, list[str]] = {}
    for row in rows:
        for cell in row.cells:
            if cell.header:
                values.setdefault(cell.header, []).append(cell.value)
    return [
        header
        for header, found in values.items()
        if len(found) >= max(_MIN_KEY_ROWS, _KEY_COVERAGE * len(rows))
        and len(set(found)) == len(found)
        and sum(map(is_code, found)) >= _KEY_COVERAGE * len(found)
    ]


def code_labels(rows: Sequence[TableRow]) -> dict[str, tuple[str, str]]:
    """Every code of a key column that has a label: ``code -> (table, label)``; the first table that
    labels a code names it."""
    tables: dict[str, list[TableRow]] = {}
    for row in rows:
        tables.setdefault(row.table, []).append(row)
    labels: dict[str, tuple[str, str]] = {}
    for table, members in tables.items():
        for key in _key_columns(members):
            for row in members:
                code = next((cell.value for cell in row.cells if cell.header == key), None)
                label = _label(row.cells, key)
                if code is not None and is_code(code) and label is not None:
                    labels.setdefault(code, (table, label))
    return labels


def links(row: TableRow, labels: Mapping[str, tuple[str, str]]) -> list[str]:
    """``code = label`` for each code of the row another table labels, and the row does not name."""
    found: list[str] = []
    text = " ".join(cell.value for cell in row.cells)
    for cell in row.cells:
        named = labels.get(cell.value)
        if named is None or named[0] == row.table or named[1] in text:
            continue
        note = f"{cell.value}{LINK_MARK}{named[1]}"
        if note not in found:
            found.append(note)
        if len(found) == _MAX_LINKS:
            break
    return found
