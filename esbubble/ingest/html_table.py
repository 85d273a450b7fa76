"""An HTML ``<table>`` as a header and rows of cell texts, as a browser shows it.

Markdown documents carry HTML tables where a pipe table cannot hold what a
cell needs (a list, several paragraphs): Mozilla's privacy notice gives its
lawful bases as one. A cell's text is what it renders: tags are nothing, a
link is its text, entity references are their characters; a list item after
another is set off by a comma and a block (paragraph, line break, list, div)
by a space, so ``<ul><li>Location</li><li>Language</li></ul>`` reads
"Location, Language". The header is the first row when all its cells are
``<th>`` (a ``<thead>`` row or not); otherwise the table has none. A table
inside a cell is read into that cell's text.
"""

from __future__ import annotations

from html.parser import HTMLParser

from esbubble.ingest.segment import normalise_space

# Elements that start a new block of text inside a cell (the cell's text goes on after a space).
_BLOCKS = frozenset(
    {"p", "div", "br", "ul", "ol", "dl", "dt", "dd", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6"}
)


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[list[str], bool]] = []  # (cell texts, every cell a <th>)
        self._cells: list[str] | None = None
        self._all_th = True
        self._cell: list[str] | None = None
        self._depth = 0  # how deep in nested tables: only the outermost one's rows and cells count
        self._items = 0  # list items begun in the current cell

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
        if self._depth > 1:
            self._separate(" ")
        elif tag == "tr":
            self._end_row()
            self._cells, self._all_th = [], True
        elif tag in ("td", "th") and self._cells is not None:
            self._end_cell()
            self._cell, self._items = [], 0
            self._all_th = self._all_th and tag == "th"
        elif tag == "li":
            self._separate(", " if self._items else " ")
            self._items += 1
        elif tag in _BLOCKS:
            self._separate(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth -= 1
            if self._depth == 0:
                self._end_row()
        elif self._depth == 1 and tag in ("td", "th"):
            self._end_cell()
        elif self._depth == 1 and tag == "tr":
            self._end_row()
        elif tag in _BLOCKS:
            self._separate(" ")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def close(self) -> None:
        super().close()
        self._end_row()  # a table cut short (no ``</table>``) keeps the row it was in

    def _separate(self, separator: str) -> None:
        if self._cell is not None and "".join(self._cell).strip():
            self._cell.append(separator)

    def _end_cell(self) -> None:
        if self._cell is not None and self._cells is not None:
            self._cells.append(normalise_space("".join(self._cell)).replace(" ,", ","))
        self._cell = None

    def _end_row(self) -> None:
        self._end_cell()
        if self._cells:
            self.rows.append((self._cells, self._all_th))
        self._cells = None


def html_table(text: str) -> tuple[list[str], list[list[str]]]:
    """The table's header (empty when its first row is not all ``<th>``) and its rows' cell texts."""
    parser = _Rows()
    parser.feed(text)
    parser.close()
    rows = parser.rows
    if rows and rows[0][1]:
        return rows[0][0], [cells for cells, _ in rows[1:]]
    return [], [cells for cells, _ in rows]
