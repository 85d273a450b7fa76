"""Word ``.docx`` reader: heading styles give sections; paragraphs and table rows give chunks.

The section is the heading path (``Warranty > Exclusions``), a heading
with the number Word shows before it (``1.5 High Availability Support``:
``numbering``); text before the first heading has the file name as its
section; before the first heading, a short line set all in bold alone over
text heads it (``_bold_title``: front matter's ``Warranty``, ``Abstract``).
The title in each chunk's ``context`` is the document's core
title, else the file stem. A table's first row is
its header when it has at least two non-empty cells, none of them is a
sentence and its first cell is no number alone (``is_header_row``: a field
table starting with its first field, or an error table with its first code,
``400 | Bad Request``, has no header); each further row is a
chunk ``Header: value; …`` with ``row_number`` its row in the table. A
header cell spanning columns over a second header row of their names is a
group: each column reads ``Group Name`` (``_grouped_header``). A table of
one column is a box around text (a code sample, a request and its response):
one row of all its text. A key-value table, whose
first column labels the values beside it (``Description: | …``, ``Type: | String``), has no
header row: it is one record, a single chunk ``Description: …; Type: String; …`` numbered row 1.
A table set in a cell is a table of its own after the one it is in, or in a record one of its
values (``_table``). A caption right above a table (``Caption`` style, or a house style named
for captions) is a step of its rows' context, not text. A symbol (``w:sym``) reads as the sign it
shows (``symbols.symbol``), as does a symbol font's code typed in a run set in that font
(``_run_text``).

A paragraph's text is every run Word shows in it, also those wrapped in smart
tags, tracked insertions, content controls or simple fields (python-docx's
``Paragraph.text`` sees only direct runs and hyperlinks, so a glossary term in
a smart tag or a caption's field-numbered "Table 3" came out empty); text
boxes inside it (their own paragraphs) and deleted text are not. An equation
(Office Math) reads as linear text, ``N^3``, ``λ/(10|m|)`` (``omml``). Word's
generated tables of contents and figures (styles ``toc 1``-``toc 9``,
``TOC Heading``, ``table of figures``) repeat the headings and captions with
page numbers and are skipped. A code listing, one paragraph per line in a code
style or a monospaced font (``_code_line``), is one block, as a Markdown fence is.
A content control (``w:sdt``) around paragraphs, a table, table rows or cells is
read as its content, in place (``_unwrapped``), except a table of contents or a
cover page inserted from Word's galleries.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph

from esbubble.core.named import ROW_JOINER
from esbubble.errors import IngestError
from esbubble.ingest.drafts import Cell, finish
from esbubble.ingest.fonts import is_monospace
from esbubble.ingest.fragments import block_drafts
from esbubble.ingest.numbering import ListNumbers
from esbubble.ingest.omml import math_text
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.outline import Outline, is_header_row, is_key_value
from esbubble.ingest.package import check_package
from esbubble.ingest.segment import normalise_space
from esbubble.ingest.symbols import footnote_mark, power, symbol
from esbubble.models import Chunk

_BUCKET = "Text"
_HEADING = re.compile(r"^Heading (\d)$")
# Word's caption styles (``Caption``, house ``TableCaption``, ``Table caption my``): a caption right
# above a table names it
_CAPTION_STYLE = re.compile(r"\bcaption|caption\b", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"
# A letter: a paragraph in a heading style without one (a cover page's ``1``) heads nothing, it is text.
_LETTER = re.compile(r"[^\W\d_]")
_GENERATED = re.compile(r"^(toc \d|TOC Heading|table of figures)$", re.IGNORECASE)
_P = qn("w:p")
_T = qn("w:t")
_MATH = qn("m:oMath")
_TBL = qn("w:tbl")
_TR = qn("w:tr")
_TC = qn("w:tc")
_SDT = qn("w:sdt")
_SDT_CONTENT = qn("w:sdtContent")
_GALLERY = f"{qn('w:sdtPr')}/{qn('w:docPartObj')}/{qn('w:docPartGallery')}"
# Building blocks Word inserts from its galleries that are not read: a table of contents is generated
# (as are ``toc n`` paragraphs), and a cover page repeats the title, whose heading style there would
# head every section after it (the SAI 802.1BR proposal's cover reads ``Change Proposal``).
_UNREAD_GALLERIES = frozenset({"Table of Contents", "Cover Pages"})
_OUTLINE_LEVEL = qn("w:outlineLvl")
_VAL = qn("w:val")
_BODY_LEVEL = 9
_STYLE_DEPTH = 10  # styles followed up a based-on chain (Word's are short; a loop ends here)
_VERT_ALIGN = qn("w:vertAlign")
_SYM, _SYM_FONT, _SYM_CHAR = qn("w:sym"), qn("w:font"), qn("w:char")
# A symbol font's codes typed as text in a run set in that font (a Wingdings arrow, U+F0E0)
_PRIVATE_USE = re.compile("[\uf020-\uf0ff]")
_ROWS_APART = " / "  # between the rows of a table read into a cell's text
# A bold line heading what follows (``_bold_title``): at most this many words, and letters enough
_TITLE_WORDS = 10
_MIN_TITLE_LETTERS = 3
_NOT_TITLE_ENDS = (".", ":", ";", ",", "!", "?")
_HIDDEN = frozenset({qn("w:del"), qn("w:moveFrom")})
# A code listing's lines: a paragraph style for code (``Code``, ``HTML Preformatted``, ``Source
# Code``, ``Plain Text``…, or one based on such), or text all set in a monospaced font.
_CODE_STYLE = re.compile(r"code|preformatted|listing|verbatim|plain text|macro text", re.IGNORECASE)


def _open(path: Path) -> Any:
    check_package(path, "document")
    try:
        return docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as error:
        if path.read_bytes()[:4] == _OLE_MAGIC:
            raise IngestError(
                "document is encrypted or in the legacy .doc format", hint="save it as an unencrypted .docx"
            ) from None
        raise IngestError(f"not a readable .docx document ({type(error).__name__}: {error})") from None


def _outline_level(style: Any) -> int | None:
    """The outline level a paragraph style sets, if any: 0-8 for a heading's, 9 for body text."""
    properties = style.element.pPr
    found = properties.find(_OUTLINE_LEVEL) if properties is not None else None
    value = found.get(_VAL) if found is not None else None
    return int(value) if value is not None and value.isdigit() else None


def _styles(paragraph: Paragraph) -> list[Any]:
    """The paragraph's style and the styles it is based on, nearest first."""
    styles: list[Any] = []
    style = paragraph.style
    while style is not None and len(styles) < _STYLE_DEPTH:
        styles.append(style)
        style = style.base_style
    return styles


def heading_level(styles: list[Any]) -> int | None:
    """The heading level of a paragraph whose style chain is ``styles`` (``_styles``): 0 for
    ``Title``; 1-9 for a heading: a ``Heading n`` style, or a style based on one or with an outline
    level of its own (a house style such as ``AppendixHeading1``); None for body text.

    An outline level set on a single paragraph by hand is not read: cover pages use it for lines
    such as ``Version 5.1``, which are text, not the section of all that follows.
    """
    if styles and styles[0].name == "Title":
        return 0
    for style in styles:
        match = _HEADING.match(style.name or "")
        outline = int(match.group(1)) - 1 if match else _outline_level(style)
        if outline is not None:
            return outline + 1 if outline < _BODY_LEVEL else None
    return None


def _shown(run: Any, paragraph: Any) -> bool:
    """True when ``run`` is shown as part of ``paragraph`` itself (not a text box's, not deleted)."""
    for ancestor in run.iterancestors():
        if ancestor is paragraph:
            return True
        if ancestor.tag == _P or ancestor.tag in _HIDDEN:
            return False
    return False


def _superscript(run: Any) -> bool:
    """True when the run itself is set as superscript (direct formatting)."""
    properties = run.rPr
    align = properties.find(_VERT_ALIGN) if properties is not None else None
    return align is not None and align.get(_VAL) == "superscript"


def _run_text(run: Any) -> str:
    """A run's text (python-docx's ``text``: its text, tabs, breaks) with its symbols (``w:sym``:
    Insert > Symbol, a Wingdings ✓, a Symbol font ≤) as the signs they show (``symbols.symbol``), as
    are a symbol font's private-use codes typed in a run set in that font (a Wingdings →)."""
    if run.find(_SYM) is None:
        text = str(run.text)
    else:
        text = "".join(
            symbol(element.get(_SYM_FONT) or "", int(element.get(_SYM_CHAR) or "0", 16))
            if element.tag == _SYM
            else str(element)
            for element in run.xpath("w:br | w:cr | w:noBreakHyphen | w:ptab | w:t | w:tab | w:sym")
        )
    if _PRIVATE_USE.search(text):
        font = _run_font(run)
        text = _PRIVATE_USE.sub(lambda code: symbol(font, ord(code.group())), text)
    return text


def _run_font(run: Any) -> str:
    """The font a run sets for its text (``w:rFonts``, read by python-docx), if it sets one."""
    properties = run.rPr
    return (properties.rFonts_ascii or properties.rFonts_hAnsi or "") if properties is not None else ""


def _paragraph_text(paragraph: Paragraph) -> str:
    """The text Word shows in the paragraph, runs in any inline wrapper included, equations as linear
    text (``omml``); an exponent (a superscript number right after a digit) is written ``2^8``, so
    it does not read as ``28``, and a footnote letter raised right after a word stands apart from it
    (``# of vectors b``, not ``vectorsb``)."""
    p = paragraph._p
    pieces: list[str] = []
    for run in p.iter(qn("w:r"), _MATH):
        if not _shown(run, p):
            continue
        text = math_text(run) if run.tag == _MATH else _run_text(run)
        raised = bool(pieces) and run.tag != _MATH and _superscript(run)  # an equation's powers are its own
        if raised and (exponent := power(pieces[-1], text)):
            text = exponent
        elif raised and footnote_mark(pieces[-1], text):
            text = " " + text
        if text:
            pieces.append(text)
    return "".join(pieces)


def _bold_title(paragraph: Paragraph, styles: list[Any], text: str) -> bool:
    """Whether a paragraph in no heading style may head what follows it: a short line (at most
    ``_TITLE_WORDS`` words, opening with a letter or digit, not ending as a sentence, a list or a
    label does) set all in bold. Front matter sets headings so (HiSLIP's ``Warranty``, FMI's
    ``License of this document``, ``Abstract``), and its text had the file name as its section.
    Only before the first heading in a heading style: after it, bold lines are the labels of a
    template (an API guide's ``Description`` over each operation's text, which it would cut from
    the operation's name) or terms, under the headings that place them."""
    if len(text.split()) > _TITLE_WORDS or not text[:1].isalnum() or text.endswith(_NOT_TITLE_ENDS):
        return False
    if sum(character.isalpha() for character in text) < _MIN_TITLE_LETTERS:
        return False
    runs = [run for run in paragraph.runs if run.text.strip()]
    if not runs:
        return False
    style_bold = next((style.font.bold for style in styles if style.font.bold is not None), False)
    return all(run.bold if run.bold is not None else style_bold for run in runs)


def _code_line(paragraph: Paragraph, styles: list[Any]) -> bool:
    """A line of a code listing: a code style (``styles``: its style chain), or every run with text in
    a monospaced font (its own, else its style's)."""
    if any(_CODE_STYLE.search(style.name or "") for style in styles):
        return True
    inherited = next((style.font.name for style in styles if style.font.name), None)
    fonts = [run.font.name or inherited for run in paragraph.runs if run.text.strip()]
    return bool(fonts) and all(font is not None and is_monospace(font) for font in fonts)


def _generated(paragraph: Paragraph) -> bool:
    """A paragraph of a generated table of contents or of figures."""
    name = paragraph.style.name if paragraph.style is not None else ""
    return bool(_GENERATED.match(name or ""))


def _gallery(sdt: Any) -> str | None:
    """The Word gallery the content control's building block came from (``Cover Pages``), if any."""
    gallery = sdt.find(_GALLERY)
    return gallery.get(_VAL) if gallery is not None else None


def _unwrapped(parent: Any, tags: tuple[str, ...]) -> Iterator[Any]:
    """The children of ``parent`` tagged one of ``tags``, in document order, those inside content
    controls (``w:sdt``, nested or not) read in place of the control.

    python-docx sees only direct children (paragraphs and tables of the body or a cell, rows of a
    table, cells of a row): DataCite's Metadata Kernel 4.3, converted from Google Docs, wraps every
    paragraph and every cell's paragraph in a content control, and read as its DOI alone.
    """
    for child in parent:
        if child.tag in tags:
            yield child
        elif child.tag == _SDT and _gallery(child) not in _UNREAD_GALLERIES:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _unwrapped(content, tags)


def _blocks(document: Any) -> Iterator[Paragraph | Table]:
    """The body's paragraphs and tables in document order (as ``iter_inner_content`` gives them),
    those in content controls included."""
    for element in _unwrapped(document.element.body, (_P, _TBL)):
        yield Table(element, document) if element.tag == _TBL else Paragraph(element, document)


def _cell_text(tc: Any, table: Table, *, tables: bool) -> str:
    """The text of the cell's paragraphs, one a line; with ``tables``, a table set in the cell too,
    in its place, as its rows (``_table_text``), else it is not read here."""
    return "\n".join(
        _table_text(Table(child, table)) if child.tag == _TBL else _paragraph_text(Paragraph(child, table))
        for child in _unwrapped(tc, (_P, _TBL) if tables else (_P,))
    )


def _table_text(table: Table) -> str:
    """A table set in a cell as text: its rows ``Header: value; …`` (its first row the header when
    ``is_header_row``), one after another: ``Quantification; Summary: ✓; Complete: ✓ /
    Identification; …``."""
    rows = _rows(table, tables=True)
    headers = rows[0] if rows and is_header_row(rows[0]) else []
    return _ROWS_APART.join(
        ROW_JOINER.join(
            Cell(headers[i] if i < len(headers) else "", value).display
            for i, value in enumerate(values)
            if value
        )
        for values in rows[1 if headers else 0 :]
        if any(values)
    )


def _rows(table: Table, *, tables: bool = False) -> list[list[str]]:
    """Each row's cell texts, a cell spanning columns once (``_grid_rows``)."""
    return [_texts(cells) for cells in _grid_rows(table, tables=tables)]


def _grid_rows(table: Table, *, tables: bool = False) -> list[list[tuple[int, int, str]]]:
    """Each row's cells as ``(first grid column, columns spanned, text)``, a cell spanning columns
    once (as python-docx's ``_Row.cells`` gives them, read from the XML so that rows and cells in
    content controls count). A cell merged with the one above (``w:vMerge`` continued) repeats that
    cell's text. With ``tables``, a table set in a cell is read into its text (``_cell_text``)."""
    rows: list[list[tuple[int, int, str]]] = []
    above: dict[int, str] = {}  # the text of each cell of the row above, by its first grid column
    for tr in _unwrapped(table._tbl, (_TR,)):
        cells: list[tuple[int, int, str]] = []
        column = tr.grid_before
        for tc in _unwrapped(tr, (_TC,)):
            merged = tc.vMerge == "continue"  # the cell above goes on down into this one
            text = above.get(column, "") if merged else normalise_space(_cell_text(tc, table, tables=tables))
            cells.append((column, tc.grid_span, text))
            column += tc.grid_span
        rows.append(cells)
        above = {start: text for start, _, text in cells}
    return rows


def _texts(cells: list[tuple[int, int, str]]) -> list[str]:
    """A grid row's cell texts (``_grid_rows``)."""
    return [text for *_, text in cells]


def _grouped_header(top: list[tuple[int, int, str]], sub: list[tuple[int, int, str]]) -> list[str] | None:
    """The header of each grid column when a table's first two rows are a group header over its
    column names (``top``, ``sub``: ``_grid_rows``), else None.

    That is so when both rows are header rows (``is_header_row``), a cell of the first spans
    columns, and the second has more cells. A column under a group reads ``Group Name``
    (``Behavior RemoteEnable``, ``Matched Count``), as a workbook's two header rows do; a column
    whose name spans both rows (merged down, so the second row repeats it) or is in one of them
    only reads that name.
    """
    if not any(span > 1 for _, span, _ in top) or len(sub) <= len(top):
        return None
    if not (is_header_row(_texts(top)) and is_header_row(_texts(sub))):
        return None
    width = max(start + span for start, span, _ in (*top, *sub))
    groups = [""] * width
    for start, span, text in top:
        groups[start : start + span] = [text] * span
    headers = list(groups)
    for start, _, text in sub:
        group = groups[start]
        headers[start] = f"{group} {text}" if group and text and text != group else text or group
    return headers


def _title_row(grid: list[list[tuple[int, int, str]]]) -> str | None:
    """The title a table's first row gives it, if any: one cell of a few words (``_TITLE_WORDS``)
    spanning the whole table, over rows of two or more cells. OGC-style requirement tables open so
    (``Requirement 1`` over ``Identifier | /req/core/data-model``, ``Statement | The system SHALL
    …``): read as a row, the title was a chunk of two words cut from what it names, 103 times in
    WMO's CDMS requirements."""
    if len(grid) < 2 or len(grid[0]) != 1 or not all(len(cells) >= 2 for cells in grid[1:]):
        return None
    (start, span, text), width = grid[0][0], max(start + span for cells in grid for start, span, _ in cells)
    if start != 0 or span != width or not text or len(text.split()) > _TITLE_WORDS:
        return None
    return text


def _table(outline: Outline, table: Table, *, caption: str = "") -> None:
    """A table's rows; then the tables set in its cells, each read as a table of its own (an XML
    schema's element table holds the table of its attributes, ``Name | Type | Use | Default``, right
    of ``attributes``), except in a key-value table: a record is one chunk, and a table in it one of
    its values (mzTab's ``Mandatory`` field, a table of ticks: ``Mandatory: Quantification; Summary:
    ✓; Complete: ✓ / …``)."""
    grid = _grid_rows(table)
    rows = [_texts(cells) for cells in grid]
    if all(len(values) <= 1 for values in rows):
        # A box around text (a code sample; ``Request`` over its ``GET …`` line, ``Response`` over
        # ``200 {…}``), not a table of values: one row of all its text.
        text = " ".join(value for values in rows for value in values if value)
        if text:
            outline.table([], [(1, [text])], caption=caption)
    elif is_key_value(rows):
        outline.record(_rows(table, tables=True), caption=caption)
        return
    else:
        grouped = _grouped_header(grid[0], grid[1]) if len(grid) > 2 else None
        if grouped is not None:
            outline.table(grouped, _on_grid(grid, rows[:2], len(grouped)), caption=caption)
        else:
            headers: list[str] = []
            start = 0
            if rows and is_header_row(rows[0]):
                headers, start = rows[0], 1
            elif (title := _title_row(grid)) is not None:  # a step of the context, not a row
                caption, start = f"{caption} {title}".strip(), 1
            outline.table(
                headers, [(number + 1, rows[number]) for number in range(start, len(rows))], caption=caption
            )
    for tr in _unwrapped(table._tbl, (_TR,)):
        for tc in _unwrapped(tr, (_TC,)):
            for inner in _unwrapped(tc, (_TBL,)):
                _table(outline, Table(inner, table))


def _on_grid(
    grid: list[list[tuple[int, int, str]]], header: list[list[str]], width: int
) -> list[tuple[int, list[str]]]:
    """The rows under a grouped header (``_grouped_header``), each cell's text at its first grid
    column (so it pairs with that column's header, whatever columns the row merges), numbered as in
    the table; the header rows repeated further down (after a page break) are not rows."""
    rows: list[tuple[int, list[str]]] = []
    for number, cells in enumerate(grid[2:], start=3):
        if _texts(cells) in header:
            continue
        values = [""] * max(width, max((start + 1 for start, _, _ in cells), default=0))
        for start, _, text in cells:
            values[start] = text
        rows.append((number, values))
    return rows


def _shown_texts(document: Any) -> Iterator[str]:
    """The text of each paragraph of the document's body (tables' cells included) and of its pages'
    headers and footers, as Word stores it: its ``w:t`` runs, not ``_paragraph_text``, whose walk run
    by run is slower, and a title the document never shows sends the search to its end. A header or
    footer linked to the previous section's is that one, read once (python-docx would look it up
    again for every section, and add an empty one to a document that has none)."""
    for paragraph in document.element.body.iter(_P):
        yield "".join(text.text or "" for text in paragraph.iter(_T))
    for section in document.sections:
        for part in (section.header, section.footer, section.first_page_header, section.first_page_footer):
            if not part.is_linked_to_previous:
                yield from (paragraph.text for paragraph in part.paragraphs)


def _title(document: Any, path: Path) -> str:
    """The document's own title (File > Properties) when a paragraph of the document shows it, else
    the file stem.

    The property is often left over from the template or an earlier document: NASA's cFE
    requirements carry "Swift Flight Software Requirements", the PEST++ manual "Licence". A title
    the document never shows names something else, and as every chunk's ``context`` it would match
    questions about that.
    """
    title = normalise_space(document.core_properties.title or "")
    wanted = title.lower()
    if title and any(wanted in normalise_space(text).lower() for text in _shown_texts(document)):
        return title
    return path.stem


def read_docx(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Paragraph and table-row chunks in document order."""
    document = _open(path)
    outline = Outline(_title(document, path), path.name, options, bucket=_BUCKET)
    numbers = ListNumbers(document)
    listing: list[str] = []  # the lines of the code listing being read
    captions: list[str] = []  # the caption just read (at most one): the next block's, if it is a table
    titles: list[str] = []  # the bold lines just read (``_bold_title``): a heading if one, over text
    headed = False  # whether a heading in a heading style has been read

    def end_listing() -> None:
        if listing:
            outline.paragraph("\n".join(listing))
            listing.clear()

    def end_caption() -> None:
        """A caption over no table (a figure's) is text."""
        for caption in captions:
            outline.paragraph(caption)
        captions.clear()

    def end_titles(*, over_text: bool) -> None:
        """A bold line alone right over text heads it; bold lines one after another (a title page's
        ``core Flight Executive`` / ``Software`` / ``Requirements`` …) or over anything else are text."""
        if over_text and len(titles) == 1:
            outline.heading(1, titles[0])
        else:
            for title in titles:
                outline.paragraph(title)
        titles.clear()

    for block in _blocks(document):
        if isinstance(block, Table):
            end_listing()
            end_titles(over_text=False)
            _table(outline, block, caption=captions.pop() if captions else "")
            end_caption()
            continue
        text = normalise_space(_paragraph_text(block))
        if not text or _generated(block):
            continue
        styles = _styles(block)  # walked once: the heading level, the listing test and numbering read it
        number = numbers.number(block, styles)
        level = heading_level(styles) if _LETTER.search(text) else None  # a heading names something
        if level is None and _code_line(block, styles):
            end_caption()
            end_titles(over_text=False)
            listing.append(text)  # a listing is one block, as a Markdown fence is
            continue
        end_listing()
        end_caption()
        if level is None and any(_CAPTION_STYLE.search(style.name or "") for style in styles):
            end_titles(over_text=False)
            captions.append(f"{number} {text}" if number else text)
            continue
        if level is not None:
            end_titles(over_text=False)
            if not headed:
                outline.up(1)  # the front matter ends: no bold line of it heads the body
            outline.heading(level, f"{number} {text}" if number else text)
            headed = True
            continue
        if not headed and _bold_title(block, styles, text):
            titles.append(f"{number} {text}" if number else text)
            continue
        end_titles(over_text=True)
        outline.paragraph(text)
    end_listing()
    end_caption()
    end_titles(over_text=False)
    drafts = block_drafts(outline.blocks, options, default_bucket=_BUCKET)
    if not drafts:
        raise IngestError("document has no text", hint="check that it is not empty")
    return finish(doc_id, "docx", drafts, options)
