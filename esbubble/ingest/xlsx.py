"""Excel ``.xlsx`` reader: one chunk per non-empty row, ``Header: value; …``.

Per sheet: the header row is the first of the top ten non-empty rows that has
at least two cells, all short text; a header cell merged across columns makes
the next row a second header row (``Group Sub``). Rows above the header
(titles) become header-less chunks. A table under a block of metadata pairs (a
code list's ``Version | 2.0.2``, ``AgencyLongName | …`` rows) has its header
where the rows widen (``_below_a_block``), and the block reads ``Label:
value``. A value repeated across a run of columns is written once
(``drafts.collapse_repeats``). A side table (a run of columns apart from the
main table, past a column empty on the whole sheet, filled on fewer than half
as many rows as the main table: a legend of codes beside the data, a second
small table) is read as a table of its own, so its cells are not read as
values of the data rows they happen to sit beside. A key-value sheet (a
workbook's "Metadata" or "Notes" sheet: at most two cells a row, distinct
short text labels on the left, values mostly text on the right) has no header
row: each row reads ``Label: value``, so its first row is not taken for the
column names of all the others. Nor has a sheet of notes that opens with a
label and its value (``Version: | 1.3.0``); there, as on any sheet without a
header, a row opening with a label reads ``Label: value``. Tables stacked
down a sheet under one repeated header row (several code lists on one sheet)
are each read under their own header (``_stacked_headers``). A row whose only cell, short text in the first
column, titles the rows under it (``_group_titles``: a model's ``Nameplate
Ratings`` over its points) reads as itself and is a step of their context.
Merged cells are read from their top-left
cell: a vertical merge repeats the value on every row it spans, a horizontal
one gives it once, and so does a block of rows and columns holding prose (a
README's note, ``_repeats``). Formulas are read as the cached value Excel saved, an empty
string as an empty cell (``=IF(Q2<>"",0,"")``, as Excel shows it); a
formula without one (written by a library, never recalculated) is kept as its
formula text (``=C5*D5``) rather than dropped. Each chunk's ``context`` is the
workbook title (its core title, else the file stem), the sheet name and the
sheet's column headers, then the labels of the codes it holds that another
table of the workbook names (``links``). A sheet's text boxes and shapes
(``xlsx_shapes``) read as prose after its rows.
"""

from __future__ import annotations

import itertools
import re
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.utils.escape import unescape
from openpyxl.utils.exceptions import InvalidFileException

from esbubble.core.named import CONTEXT_PART, ROW_JOINER
from esbubble.errors import IngestError
from esbubble.ingest.drafts import (
    Cell,
    Draft,
    Paragraph,
    chunk_context,
    finish,
    key_width,
    label_value,
    row_drafts,
)
from esbubble.ingest.fragments import block_drafts
from esbubble.ingest.links import TableRow, code_labels, links
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.package import check_package
from esbubble.ingest.reader_warnings import ReaderNote
from esbubble.ingest.values import render_value
from esbubble.ingest.xlsx_shapes import TextBox, text_boxes
from esbubble.models import Chunk

_HEADER_SCAN_ROWS = 10
_BLOCK_SCAN_ROWS = 40  # how far down a header under a block of metadata rows is looked for
_MAX_HEADER_CHARS = 60
_MIN_STACKED_COLUMNS = 3  # a repeated pair of cells may as well be data
_MIN_KEY_VALUE_ROWS = 3  # two rows could as well be a header and one record
_URL = re.compile(r"https?://")
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"
# A cell's content is <f>?<v>? (OOXML CT_Cell): a formula with no value after it has no cached result,
# nor has one with an empty value (as openpyxl writes formulas), unless the cell's type is ``str``: a
# formula whose cached result is the empty string (``=IF(Q2<>"",0,"")``), which Excel shows as an empty
# cell.
_FORMULA = rb"(?:<(?:\w+:)?f\b[^>]*/>|<(?:\w+:)?f\b[^>]*>[^<]*</(?:\w+:)?f>)\s*"
_EMPTY_VALUE = rb"(?:<(?:\w+:)?v\s*/>|<(?:\w+:)?v>\s*</(?:\w+:)?v>)"
_UNCACHED_FORMULA = re.compile(
    rb"<(?:\w+:)?c\b[^>]*>\s*" + _FORMULA + rb"</(?:\w+:)?c>"
    rb"|<(?:\w+:)?c\b(?![^>]*\bt=[\"']str[\"'])[^>]*>\s*" + _FORMULA + _EMPTY_VALUE
)


@dataclass(frozen=True)
class _Grid:
    """A sheet's non-empty rendered values: row -> {column -> text}, plus header facts."""

    rows: dict[int, dict[int, str]]
    texts: dict[int, set[int]]  # row -> the columns whose cell holds text (not a number or date)
    horizontal_merges: dict[int, list[tuple[int, int]]]  # row -> [(min_col, max_col)]

    def text_only(self, row: int) -> bool:
        return len(self.texts.get(row, ())) == len(self.rows.get(row, ()))

    def restricted(self, keep: Callable[[int], bool]) -> _Grid:
        """The part of the grid in the columns ``keep`` accepts (rows without a cell there left out)."""
        rows = {r: {c: v for c, v in cells.items() if keep(c)} for r, cells in self.rows.items()}
        return _Grid(
            rows={r: cells for r, cells in rows.items() if cells},
            texts={r: {c for c in cols if keep(c)} for r, cols in self.texts.items()},
            horizontal_merges={
                r: [(a, b) for a, b in spans if keep(a) and keep(b)]
                for r, spans in self.horizontal_merges.items()
            },
        )

    def blocks(self) -> list[tuple[int, int]]:
        """Runs of columns with cells, split where a column is empty on every row."""
        used = sorted({col for cells in self.rows.values() for col in cells})
        runs: list[tuple[int, int]] = []
        for col in used:
            if runs and col == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], col)
            else:
                runs.append((col, col))
        return runs


def _load(path: Path, *, data_only: bool) -> Any:
    try:
        return openpyxl.load_workbook(path, data_only=data_only)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, ValueError, TypeError) as error:
        if path.read_bytes()[:4] == _OLE_MAGIC:
            raise IngestError(
                "workbook is encrypted or in the legacy .xls format",
                hint="save it as an unencrypted .xlsx",
            ) from None
        raise IngestError(f"not a readable .xlsx workbook ({type(error).__name__}: {error})") from None


def has_uncached_formulas(path: Path) -> bool:
    """True when a worksheet holds a formula without a cached value, found by a scan of the raw XML."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(
                _UNCACHED_FORMULA.search(archive.read(name))
                for name in archive.namelist()
                if name.startswith("xl/worksheets/") and name.endswith(".xml")
            )
    except (zipfile.BadZipFile, KeyError, OSError):
        return True  # the formula pass itself will read or report the file


class _Formulas:
    """The workbook's formula view, parsed only when some formula has no cached value.

    Excel saves a cached value with every formula, so for most files the
    second, slow parse of the workbook is skipped.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._needed = has_uncached_formulas(path)
        self._book: Any = None

    def at(self, sheet: str, row: int, column: int) -> object:
        if not self._needed:
            return None
        if self._book is None:
            self._book = _load(self._path, data_only=False)
        return self._book[sheet].cell(row=row, column=column).value


def _present_cells(sheet: Any) -> Iterator[Any]:
    """The sheet's cells in row-major order, only those its XML holds.

    ``Worksheet.iter_rows`` creates a cell for every empty coordinate of the used range first: 11.6
    million for the 53 sheets of the FEC e-filing workbook (in the eleventh evaluation set), which
    hold 99,806, and three quarters of its read time. A cell the XML lacks has no value and no
    formula, so leaving it out changes nothing read.
    """
    present = getattr(sheet, "_cells", None)
    if not isinstance(present, dict):  # not openpyxl 3's worksheet: every coordinate, as before
        yield from (cell for row in sheet.iter_rows() for cell in row)
        return
    for key in sorted(present):
        yield present[key]


def _grid(values: Any, formulas: _Formulas) -> _Grid:
    rows: dict[int, dict[int, str]] = {}
    texts: dict[int, set[int]] = {}
    merges: dict[int, list[tuple[int, int]]] = {}
    merged_heads: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for rng in values.merged_cells.ranges:
        merged_heads[(rng.min_row, rng.min_col)] = (rng.min_row, rng.max_row, rng.min_col, rng.max_col)
        if rng.max_col > rng.min_col:
            merges.setdefault(rng.min_row, []).append((rng.min_col, rng.max_col))

    def put(row: int, col: int, raw: object, fmt: str) -> None:
        # a character XML cannot hold is written as its code, ``_x000D_`` (a carriage return)
        text = render_value(unescape(raw) if isinstance(raw, str) else raw, fmt)
        if text:
            rows.setdefault(row, {})[col] = text
            if isinstance(raw, str):
                texts.setdefault(row, set()).add(col)

    for cell in _present_cells(values):
        if cell.__class__.__name__ == "MergedCell":
            continue
        raw = cell.value
        if raw is None and cell.data_type != "str":  # ``str``: a formula's cached empty string
            formula = formulas.at(values.title, cell.row, cell.column)
            raw = formula if isinstance(formula, str) and formula.startswith("=") else None
        if raw is None:
            continue
        head = merged_heads.get((cell.row, cell.column))
        span = range(head[0], head[1] + 1) if head and _repeats(head, raw) else range(cell.row, cell.row + 1)
        for r in span:
            put(r, cell.column, raw, cell.number_format)
    return _Grid(rows={r: rows[r] for r in sorted(rows)}, texts=texts, horizontal_merges=merges)


def _repeats(merge: tuple[int, int, int, int], raw: object) -> bool:
    """Whether a merged cell's value holds for every row it spans: a category merged down a column
    does; a note merged over a block of rows and columns (a README's paragraph) is read once."""
    _, _, min_col, max_col = merge
    return max_col == min_col or not (isinstance(raw, str) and len(raw) > _MAX_HEADER_CHARS)


def _is_header_like(grid: _Grid, row: int) -> bool:
    cells = grid.rows[row]
    return len(cells) >= 2 and _names(grid, row)


def _names(grid: _Grid, row: int) -> bool:
    """Whether a row's cells could name columns: short text, no web address (an API's URL over a
    list is a note, not its name)."""
    values = grid.rows[row].values()
    return grid.text_only(row) and all(len(v) <= _MAX_HEADER_CHARS and not _URL.match(v) for v in values)


def _list_name(grid: _Grid) -> int | None:
    """The row that names a one-column list set beside a sheet's table (``ClassType`` over ``Class``,
    ``Material``, …): the first of the top rows that could name a column, with two values or more
    right under it, row after row to the end (a column of a form's scattered cells is no list)."""
    order = list(grid.rows)
    for index, row in enumerate(order[:_HEADER_SCAN_ROWS]):
        if _names(grid, row):
            values = order[index + 1 :]
            return row if len(values) >= 2 and values[-1] - row == len(values) else None
    return None


def _is_key_value(grid: _Grid) -> bool:
    """Two columns at most, a distinct short text label left of every value, and the values mostly
    text: a sheet of ``label | value`` pairs, not a table whose first row names its columns (a
    two-column table of numbers under a text header is a table). A value alone under a labelled row
    goes on with that row's value (a long description wrapped into the next row)."""
    rows = list(grid.rows.values())
    columns = {col for cells in rows for col in cells}
    if len(rows) < _MIN_KEY_VALUE_ROWS or len(columns) > 2:  # a key and a value
        return False
    label_column = min(columns)
    labels = [cells[label_column] for cells in rows if label_column in cells]
    short_labels = all(0 < len(label) <= _MAX_HEADER_CHARS for label in labels)
    pairs = [row for row, cells in grid.rows.items() if len(cells) == 2]
    mostly_text = 2 * sum(grid.text_only(row) for row in pairs) >= len(pairs)
    distinct = len(set(labels)) == len(labels) and label_column in rows[0]
    return short_labels and distinct and bool(pairs) and mostly_text


def _label_values(grid: _Grid) -> dict[int, Cell]:
    """Each row of a key-value block (``_is_key_value``) as one ``Label: value`` cell; a value alone
    under a labelled row reads with that row's label (``Data elements: Data Type: …``)."""
    label_column = min(col for cells in grid.rows.values() for col in cells)
    read: dict[int, Cell] = {}
    label = ""
    for row, cells in grid.rows.items():
        label = cells.get(label_column, label)
        values = [value for _, value in sorted(cells.items())]
        read[row] = label_value(values if label_column in cells or not label else [label, *values])
    return read


def _below_a_block(grid: _Grid, order: list[int]) -> int | None:
    """The index in ``order`` of a header row under a block of label-value or title rows, if any.

    Code lists and statistical releases often open with their metadata (``ShortName | CountryCode``,
    ``Version | 2.0.2``, ``AgencyLongName | …``) and start the table below it. The header is then the
    first row at least half as wide as the widest row, when it is header-like and every row above it
    has at most two cells and none merged across columns (that is a group header over the row
    below); otherwise there is none (the first header-like row is taken as before).
    """
    widest = max((len(cells) for cells in grid.rows.values()), default=0)
    for index, row in enumerate(order[:_BLOCK_SCAN_ROWS]):
        width = len(grid.rows[row])
        if 2 * width >= widest:
            return index if index > 0 and widest > 2 and _is_header_like(grid, row) else None
        if width > 2 or grid.horizontal_merges.get(row):
            return None
    return None


def _labelled(grid: _Grid, row: int) -> bool:
    """A row that opens with a label (``Version:``, ``Syntax:``): text ending in a colon in its first
    cell, with something after it."""
    cells = grid.rows[row]
    first = min(cells)
    return len(cells) >= 2 and first in grid.texts.get(row, ()) and cells[first].endswith(":")


def _headers(grid: _Grid) -> tuple[list[int], dict[int, str]]:
    """The header row numbers of a sheet and the header text of each column; none on a sheet of notes
    whose first two cells are a label and its value (``Version: | 1.3.0``: ``_labelled``), not the
    names of columns."""
    order = list(grid.rows)
    below = _below_a_block(grid, order)
    scan = order[:_HEADER_SCAN_ROWS] if below is None else order[below : below + 1]
    for first in scan:
        if not _is_header_like(grid, first):
            continue
        if _labelled(grid, first) and len(grid.rows[first]) == 2:
            return [], {}
        row = _column_names(grid, scan, first)
        index = order.index(row)
        header = dict(grid.rows[row])
        spans = grid.horizontal_merges.get(row, [])
        for lo, hi in spans:
            for col in range(lo + 1, hi + 1):
                header[col] = header.get(lo, "")
        following = order[index + 1] if index + 1 < len(order) else None
        if spans and following is not None and _is_header_like(grid, following):
            sub = grid.rows[following]
            columns = sorted(set(header) | set(sub))
            combined = {c: " ".join(p for p in (header.get(c, ""), sub.get(c, "")) if p) for c in columns}
            return [row, following], combined
        return [row], header
    return [], {}


def _column_names(grid: _Grid, scan: list[int], first: int) -> int:
    """The row that names the columns, from the first header-like row of the scan: that row, unless
    most of its values repeat (a template's row of data types over the names, ``DataType | Text |
    Text | Boolean``); then the next header-like row of the scan whose values are all distinct. A
    type row that opens with a label of its own (``DataType``) labels the rows that open in its
    column alike (``Required?``, ``Example``): they are records, not the names."""
    cells = grid.rows[first]
    values = list(cells.values())
    if 2 * len(set(values)) >= len(values):
        return first
    label_column = min(cells) if values.count(cells[min(cells)]) == 1 else None
    for row in scan:
        names = list(grid.rows[row].values())
        if (
            row > first
            and _is_header_like(grid, row)
            and min(grid.rows[row]) != label_column
            and len(set(names)) == len(names)
        ):
            return row
    return first


def _labels_a_record(cells: dict[int, str], headers: dict[int, str]) -> bool:
    """A row above the header that opens with a label left of the header's columns and has values
    under two or more of them (a template's ``Example`` or ``DataType`` row over its column names):
    a record, read under the header."""
    return bool(headers) and min(cells) < min(headers) and sum(col in headers for col in cells) >= 2


def _side_tables(grid: _Grid) -> list[tuple[int, int]]:
    """The column runs (``_Grid.blocks``) filled on fewer than half as many rows as the fullest run."""
    blocks = grid.blocks()
    if len(blocks) < 2:
        return []
    filled = [
        sum(1 for cells in grid.rows.values() if any(lo <= c <= hi for c in cells)) for lo, hi in blocks
    ]
    main = max(filled)
    return [block for block, rows in zip(blocks, filled, strict=True) if 2 * rows < main]


@dataclass(frozen=True)
class _Row:
    """A table row before it becomes drafts: where it is, its cells and its context."""

    scope: str
    sheet: str
    number: int
    cells: list[Cell]
    context: str


def _sheet_rows(title: str, name: str, grid: _Grid) -> list[_Row]:
    """The sheet's main table, then each side table read as a table of its own."""
    sides = _side_tables(grid)
    if not sides:
        return _table_rows(title, name, grid, scope=f"sheet={name}")
    side_columns = {col for lo, hi in sides for col in range(lo, hi + 1)}
    main = grid.restricted(lambda col: col not in side_columns)
    rows = _table_rows(title, name, main, scope=f"sheet={name}")
    for lo, hi in sides:
        side = grid.restricted(range(lo, hi + 1).__contains__)
        scope = f"sheet={name}/cols={lo}-{hi}"
        rows.extend(_table_rows(title, name, side, scope=scope, one_column=lo == hi))
    return rows


def _stacked_headers(grid: _Grid) -> list[int]:
    """The header rows of tables stacked down the sheet under one repeated header, if any.

    Such a row (at least three cells of short text) recurs word for word at the top of each table;
    none of its values is found in its column on another row, and each recurrence opens a table (a
    blank or a narrower row above it), so a data row that happens to recur is not taken for one.
    """
    order = list(grid.rows)
    position = {row: index for index, row in enumerate(order)}
    in_column = Counter((col, value) for cells in grid.rows.values() for col, value in cells.items())
    recurring: dict[tuple[tuple[int, str], ...], list[int]] = {}
    for row in order:
        if len(grid.rows[row]) >= _MIN_STACKED_COLUMNS and _is_header_like(grid, row):
            recurring.setdefault(tuple(sorted(grid.rows[row].items())), []).append(row)
    for cells, rows in recurring.items():
        # each value is in its column on these rows only
        alone = all(in_column[cell] == len(rows) for cell in cells)
        if len(rows) >= 2 and alone and all(_opens_table(grid, order, position[row]) for row in rows):
            return rows
    return []


def _opens_table(grid: _Grid, order: list[int], index: int) -> bool:
    """True when the row at ``index`` of ``order`` has a blank row or a narrower row above it."""
    if index == 0:
        return True
    row, above = order[index], order[index - 1]
    return above < row - 1 or len(grid.rows[above]) < len(grid.rows[row])


def _title_start(grid: _Grid, order: list[int], index: int, floor: int) -> int:
    """The index in ``order`` of the first title row above the header at ``index``: the rows of at
    most two cells right above it, up to a blank row and no higher than ``floor``."""
    start = index
    while start > floor and len(grid.rows[order[start - 1]]) <= 2:
        start -= 1
        if start > floor and order[start - 1] < order[start] - 1:
            break
    return start


def _stacked_rows(title: str, name: str, grid: _Grid, headers: list[int], *, scope: str) -> list[_Row]:
    """Rows of tables stacked under one repeated header. The rows above each header (the table's
    title; above the first, the sheet's notes) are read without headers, as rows above a header
    are; each table's rows read under the header, with the table's title (the row right above its
    header) a step of their context."""
    order = list(grid.rows)
    index = {row: i for i, row in enumerate(order)}
    head = grid.rows[headers[0]]
    columns = [head[col] for col in sorted(head)]
    table_of: dict[int, str] = {}
    for header, following in itertools.zip_longest(headers, headers[1:]):
        start = index[header] + 1
        end = len(order) if following is None else _title_start(grid, order, index[following], start)
        above = order[start - 2] if start > 1 else None  # the table's title row, if it has one
        caption = "" if above is None or above in table_of else " ".join(grid.rows[above].values())
        table_of.update((row, caption) for row in order[start:end])
    rows: list[_Row] = []
    for row, cells in grid.rows.items():
        if row in headers:
            continue
        values = sorted(cells.items())
        table = table_of.get(row)
        if table is None:  # a table's title, or the sheet's notes above the first table
            row_cells, context = [Cell("", value) for _, value in values], chunk_context(title, [name])
        else:
            row_cells = [Cell(head.get(col, ""), value) for col, value in values]
            context = chunk_context(title, [name, table], columns)
        rows.append(_Row(scope, name, row, row_cells, context))
    return rows


def _table_rows(title: str, name: str, grid: _Grid, *, scope: str, one_column: bool = False) -> list[_Row]:
    """A table's rows under its header; a side table of one column is a list under its name."""
    stacked = _stacked_headers(grid)
    if stacked:
        return _stacked_rows(title, name, grid, stacked, scope=scope)
    key_value = _is_key_value(grid)
    header_rows, headers = ([], {}) if key_value else _headers(grid)
    named = _list_name(grid) if one_column and not header_rows else None
    if named is not None:
        header_rows, headers = [named], dict(grid.rows[named])
    columns = [headers[col] for col in sorted(headers)]
    # Rows above the header that are label-value pairs (a metadata block) read ``Label: value``.
    above = _Grid(
        rows={r: cells for r, cells in grid.rows.items() if header_rows and r < header_rows[0]},
        texts=grid.texts,
        horizontal_merges={},
    )
    pairs = grid if key_value else above if header_rows and _is_key_value(above) else None
    if pairs is not None:
        read = _label_values(pairs)
    elif not header_rows:  # a label in a row of a sheet without columns names its value
        labelled = [row for row in grid.rows if _labelled(grid, row)]
        read = {row: label_value([value for _, value in sorted(grid.rows[row].items())]) for row in labelled}
    else:
        read = {}
    groups = _group_titles(grid, header_rows, headers)
    group = ""
    rows: list[_Row] = []
    for row, cells in grid.rows.items():
        if row in header_rows:
            continue
        above_header = bool(header_rows) and row < header_rows[0] and not _labels_a_record(cells, headers)
        if row in groups:
            group = groups[row]
            rows.append(_Row(scope, name, row, [Cell("", group)], chunk_context(title, [name], columns)))
            continue
        row_cells = (
            [read[row]]
            if row in read
            else [
                Cell(header="" if above_header else headers.get(col, ""), value=value)
                for col, value in sorted(cells.items())
            ]
        )
        context = chunk_context(title, [name, group], [] if above_header else columns)
        rows.append(_Row(scope, name, row, row_cells, context))
    return rows


def _group_titles(grid: _Grid, header_rows: list[int], headers: dict[int, str]) -> dict[int, str]:
    """The rows of a table that title the rows below them (``Nameplate Ratings``, ``Growth
    facility``), by row: a row below the header whose only cell is short text in the first column
    of a table at least ``_MIN_STACKED_COLUMNS`` wide, with a row of two or more cells right under
    it, where most rows have two or more. Read as a key of the first column (``Address Offset:
    Nameplate Ratings``), such a title said the wrong thing; it is read as itself, and is a step of
    the context of the rows under it, up to the next."""
    if not header_rows or len(headers) < _MIN_STACKED_COLUMNS:
        return {}
    first = min(headers)
    body = [row for row in grid.rows if row > header_rows[-1]]
    single = {row for row in body if len(grid.rows[row]) == 1}
    if 2 * len(single) >= len(body):
        return {}
    titles: dict[int, str] = {}
    for row, below in itertools.pairwise(body):
        value = grid.rows[row].get(first)
        if (
            row in single
            and value is not None
            and first in grid.texts.get(row, ())
            and len(value) <= _MAX_HEADER_CHARS
            and below == row + 1
            and len(grid.rows[below]) >= 2
        ):
            titles[row] = value
    return titles


def _drafts(rows: list[_Row], options: IngestOptions) -> list[Draft]:
    """Every row's drafts, its context naming the codes other tables label (``links``), its continuation
    parts its table's key cells (``key_width``)."""
    linkable = [TableRow(row.scope, tuple(row.cells)) for row in rows]
    labels = code_labels(linkable)
    tables: dict[str, list[list[Cell]]] = {}
    for row in rows:
        tables.setdefault(row.scope, []).append(row.cells)
    keys = {scope: key_width(cells) for scope, cells in tables.items()}
    drafts: list[Draft] = []
    for row, table_row in zip(rows, linkable, strict=True):
        named = links(table_row, labels) if labels else []
        drafts.extend(
            row_drafts(
                f"{row.scope}/row={row.number}",
                row.cells,
                options,
                section=row.sheet,
                default_bucket=row.sheet,
                sheet_name=row.sheet,
                row_number=row.number,
                context=f"{row.context}{CONTEXT_PART}{ROW_JOINER.join(named)}" if named else row.context,
                key=keys[row.scope],
            )
        )
    return drafts


def read_xlsx(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Chunks of every visible sheet (hidden ones too if ``include_hidden_sheets``; a hidden sheet
    left out is warned as a ``ReaderNote``, so the ingest report says it exists)."""
    check_package(path, "workbook")
    values = _load(path, data_only=True)
    formulas = _Formulas(path)
    title = " ".join(str(values.properties.title or "").split()) or path.stem
    boxes = text_boxes(path)
    rows: list[_Row] = []
    sheets: list[str] = []
    for sheet in values.worksheets:
        if sheet.sheet_state != "visible" and not options.include_hidden_sheets:
            warnings.warn(
                ReaderNote(
                    f"sheet {sheet.title!r} is hidden and was not read "
                    "(include_hidden_sheets = true in the profile's [ingest] reads it)"
                ),
                stacklevel=2,
            )
            continue
        rows.extend(_sheet_rows(title, sheet.title, _grid(sheet, formulas)))
        sheets.append(sheet.title)
    by_sheet: dict[str, list[Draft]] = {name: [] for name in sheets}
    for draft in _drafts(rows, options):
        by_sheet[draft.section].append(draft)
    drafts = [
        draft
        for name in sheets
        for draft in [*by_sheet[name], *_box_drafts(title, name, boxes.get(name, []), options)]
    ]
    return finish(doc_id, "xlsx", drafts, options)


def _box_drafts(title: str, sheet: str, boxes: list[TextBox], options: IngestOptions) -> list[Draft]:
    """The sheet's text boxes as prose after its rows: each paragraph of a box a paragraph, short ones
    joined to the next (a box's ``Introduction``, ``Background`` titles), long ones cut."""
    paragraphs = [
        Paragraph(
            scope=f"sheet={sheet}/box={number}",
            numbers=(index,),
            text=text,
            section=sheet,
            context=chunk_context(title, [sheet]),
        )
        for number, box in enumerate(boxes, start=1)
        for index, text in enumerate(box.paragraphs, start=1)
    ]
    drafts = block_drafts(paragraphs, options, default_bucket=sheet)
    return [replace(draft, sheet_name=sheet) for draft in drafts]
