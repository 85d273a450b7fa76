"""PDF reader (pypdf): chunks per page, split into paragraphs, cited by page number.

Text is collected with its position and font size. Lines further apart than
1.35× the usual line spacing (the most common gap between lines of the
body's size, so a figure's small labels or small print do not set it), or
more than twice the font size, start a new paragraph; lines set clearly
larger than the body text (≥ 1.15×), or bold when the body is not, are
headings and name the section of what follows, across pages; a line's size
and boldness are those of most of its characters, and a list item or a line
that runs on into the next is never one (``_RUNS_ON``), nor a line bold only
by its words that sits inside a paragraph (``_headings``). A heading wrapped
over lines of its own size is one heading; a numbered one starts anew. A
figure's labels drawn as text (``_figure_runs``), even labels set as large
as headings, are one block and name no section. Headings are
not chunks of their own: they live on in the ``section`` of the chunks below
them, and their path (``heading_path``: numbered headings by their number's
depth, others below the last numbered one) in the chunks' ``context``. A
line set in cells apart and bold throughout (``_in_cells``: a table's header
row, ``Field Bits Description Access Reset``, known where the fonts give their
glyphs' widths) is a step of the context of the rows below it, never their
section, its cells wrapped over two lines read into it (``_header_cells``);
one bold only in its first cells (a parameter's name) is a row of text
(``_row_in_cells``). A table drawn cell by cell, each cell's lines before the
next cell's, is read row by row (``_row_start``). A heading with nothing below
it before the next one that is not below it is a chunk, so its text is not lost. Text before the
first heading has the file name as its section. Page numbers, running headers and footers and
table-of-contents lines are dropped (``drop_furniture``); a word hyphenated
at a line's end is joined again (``join_lines``). The title in each chunk's
``context`` is the PDF's own title, else the file stem.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pypdf
from pypdf.errors import PyPdfError

from esbubble.errors import IngestError
from esbubble.ingest.drafts import Paragraph, chunk_context, finish
from esbubble.ingest.fonts import is_monospace, is_symbol_font
from esbubble.ingest.fragments import Block, block_drafts
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.outline import NUMBERED, number_depth
from esbubble.ingest.pdf_rules import PageRules, glyph_widths, resolved
from esbubble.ingest.segment import BULLETS, normalise_space
from esbubble.ingest.symbols import SYMBOL_SIGNS, footnote_mark, power
from esbubble.models import Chunk

_BUCKET = "PDF"
_PARAGRAPH_GAP = 1.35
_HEADING_SCALE = 1.15
_MAX_HEADING_CHARS = 120
_SAME_LINE = 1.0
_SHIFT = 0.5  # a run set beside a line's last run less than this share of its size up or down is on it
_COLUMN_GAP = 1.5  # a gap between two runs of a line wider than this many font sizes is between cells
_WORD_GAP = 0.15  # a gap between two runs wider than this share of the font size separates words
# A heading's number, set apart from its title as a table's cells are (``2.3.1.1    ICCM and DCCM``).
_SECTION_NUMBER = re.compile(
    r"(?:(?i:section|article|chapter|appendix|annex)\s+)?(?:[A-Z]|\d{1,3})(?:\.\d{1,3})*\.?"
)
# What opens a heading or a list item: its number, each part closed by a dot (``1.3.``), or a bullet.
_MARKER = re.compile(rf"(?:\d{{1,3}}\.)+|[{BULLETS}]")
_BODY_SHARE = 0.2  # a line with this share of its characters in the body's style is a sentence's line
_MIN_LEADING = 0.9  # consecutive lines of text are at least about their font size apart
_SIZE_TOLERANCE = 0.5  # font sizes this close (points) are one size
_HEADER_BOLD = 0.9  # the share of a table header row's characters set bold
_MAX_LEADING = 2.0  # body lines are rarely set further apart than twice their font size
# A list item (bullet first) or a line that goes on in the next (a word broken at its end, a lead-in
# ending in a colon) is no heading, however bold.
_RUNS_ON = re.compile(rf"^[{BULLETS}]|[^\W\d_]-$|:$")
_ENDS_SENTENCE = re.compile(r"[.!?:;)\]\"”]$")
# An icon font's glyph alone on a line: an admonition's "i" or warning sign as asciidoctor-pdf sets
# them, in a cell left of the note (U+F05A, U+F071). Private Use Area code points mean nothing to a
# reader of the text, and such a line is neither text nor a heading.
_ICON_LINE = re.compile(r"[\ue000-\uf8ff\s]+")
_ICON_LEAD = re.compile(r"^[\ue000-\uf8ff]+\s+")  # a note's icon (a symbol font's code) opening its line
# How typeset text reads: a ligature as its letters; a zero-width space, word joiner or byte order mark
# as nothing (Google Docs prints one either side of a code-formatted word, ``a \u200b cms \u200b
# attribute``: invisible, yet tokens to the tokenizer and a break in a phrase a question quotes).
_TYPESET = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                          "\ufb05": "st", "\ufb06": "st",
                          "\u200b": None, "\u2060": None, "\ufeff": None})  # fmt: skip
# A run that is typeset ligatures alone: a PDF (cairo's) may set them in a font of their own, whose glyph
# widths are not given, so where the run ends is not known; read as a word break, it made 42 of the
# GEDCOM specification's chunks read ``Specifi cation``, ``fi le``.
_LIGATURE_RUN = re.compile("[\ufb00-\ufb06]+")
# A control character is no text: a glyph whose font gives no character for it reads as its code
# (the bullet glyph of OCPI's and Theora's LaTeX-made PDFs, ``/a136``, as U+0088; TeX's large braces
# as U+001A). One of the C1 codes opening a line is the item's bullet; any other is left out.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")
_CONTROL_BULLET = re.compile(r"^[\x80-\x9f]+\s*(?=\S)")
_EDGE_LINES = 2
_FIGURE_JUMPS = 3  # jumps up the page a run of small lines makes when it labels a figure
_CELL_LINES = 12  # lines a table row drawn cell by cell may go down before its next cell goes back up
_RUNNING_PAGES = 3
_CONTENTS_LINES = 3  # listing lines a page needs, besides being half its lines, to be contents
# What a running head's page number may be: digits anywhere, a roman numeral opening or closing it.
_PAGE_DIGITS = re.compile(r"\d+|^[ivxlc]+\b|\b[ivxlc]+$", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?(?:\d+|[ivxlc]+)(?:\s*(?:of|/)\s*\d+)?$", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"\d{1,4}")  # a line that is only a page number
# A number opening or closing a line, apart from its words (``21 Error logging``, ``2.3. BLOCKS 7``).
_EDGE_NUMBER = re.compile(r"^(\d{1,4})\s+(?=\S)|(?<=\S)\s+(\d{1,4})$")
# ``Page 3 of 25`` inside a header or footer line (``2019-02-22 Version 1.0 Page 3 of 25``).
_PAGE_OF = re.compile(r"\bpage\s+(\d{1,4})\s*(?:of|/)\s*(\d{1,4})\b", re.IGNORECASE)
# A heading's or an edge line's words and numbers, and the labels a running head adds to a heading's
# number (``CHAPTER 1. INTRODUCTION`` for the chapter headed ``Introduction``).
_TITLE_TOKEN = re.compile(r"[^\W_]+")
_TITLE_LABELS = frozenset({"chapter", "section", "appendix", "annex", "part"})
_MIN_TITLE_LETTERS = 3  # a heading of fewer letters (a formula's ``b``) names nothing
# A leader of dots, ellipses (``……``, as Word sets them) or middle dots, then the page number.
_DOT_LEADER = re.compile(r"(?:[.\u2026\u00b7]\s?){5,}\s*(?:\d+|[ivxlc]+)?\s*$", re.IGNORECASE)
# A back-of-book index entry ends in its page numbers: ``Standard-compliance, 9, 26``, ``iCode, 38, 119–122``.
_INDEX_ENTRY = re.compile(r"(?:,\s*\d{1,4}(?:\s*[–-]\s*\d{1,4})?)+\s*$")
# A word and a hyphenated compound ("run-time"), and the end of a line that breaks a word with a hyphen.
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_BROKEN = re.compile(r"[^\W\d_]+[-\u00ad\u2010]$")
_FIRST_WORD = re.compile(r"[^\W\d_]+")
# "pre- and post-processing": a hyphen left hanging on purpose, before one of these words.
_SUSPENDED = frozenset({"and", "or", "nor", "to"})


@dataclass
class _Line:
    y: float
    size: float = 0.0
    bold: bool = False
    text: str = ""
    parts: list[str] = field(default_factory=list)
    styles: Counter[tuple[float, bool]] = field(default_factory=Counter)  # characters per (size, bold)
    end: float | None = None  # where the last run with text ends (x), when its font gives its glyphs' widths
    # where it ends by its glyphs without its leading spaces: pypdf may put one before a run set apart
    bare_end: float | None = None
    left: float | None = None  # where the line's first run starts (x), when it is known
    start: float | None = None  # where the last run with text starts (x), when it is known
    gaps: int = 0  # gaps between runs as wide as a table's columns (``_COLUMN_GAP``)
    lead: str = ""  # the line's text before its first such gap
    # each run with text: (bold, set in a monospaced font, its text), for ``_code`` and ``_labelled``
    runs: list[tuple[bool, bool, str]] = field(default_factory=list)

    def largest(self) -> float:
        """The largest size of the line's characters so far (0 before any)."""
        return max((size for size, _ in self.styles), default=0.0)

    def take(self, piece: str, style: tuple[float, bool], monospace: bool, *, first: bool = False) -> None:
        """Count a run's characters in its (size, bold) style and keep the run (``first``: in front)."""
        self.styles[style] += len(piece.strip())
        self.runs.insert(0 if first else len(self.runs), (style[1], monospace, piece))


def _fonts(page: Any) -> Mapping[str, Any]:
    """The page's font resources by name (none where the page names none, or not as a dictionary)."""
    try:
        fonts = resolved(resolved(page.get("/Resources") or {}).get("/Font"))
    except (AttributeError, TypeError, PyPdfError):
        return {}
    return fonts if isinstance(fonts, Mapping) else {}


def run_width(text: str, font: Mapping[str, Any] | None) -> float | None:
    """The advance of ``text`` in thousandths of the font size, from a simple font's ``/Widths``
    (None for a font without them, a composite font or none given, or with widths that are not
    numbers: the runs are then joined with a space)."""
    width = glyph_widths(font)
    if width is None:
        return None
    try:
        return sum(map(width, map(ord, text)))
    except (TypeError, ValueError):
        return None


def shown_text(text: str, font_name: str) -> str:
    """A run's text as the page shows it: in Adobe's Symbol font (``SymbolMT``, ``ABCDEF+Symbol``),
    the Greek letters and signs set at Latin codes (``W`` is Ω, ``e`` is ε, ``\\xb1`` is ±, U+F0B7 a
    bullet), where the PDF's text map gives the codes rather than the signs."""
    return text.translate(SYMBOL_SIGNS) if is_symbol_font(font_name) else text


def _set_beside(line: _Line, x: float, y: float, size: float) -> bool:
    """Whether a run of ``size`` at ``(x, y)`` goes on the line, set a little above or below its
    baseline (less than ``_SHIFT`` of its size) right of where the line's last run starts: a
    superscript, or an operator LaTeX raises (``match`` ``+`` ``action``: the ``+`` 2 points up was
    read as a line of its own and cut "match+action" in two at every line it opened, 26 times in the
    P4 specification). Where the last run ends is no guide: justified text stretches and shrinks its
    spaces, so a run's glyph widths miss its end by up to a word. The shift is measured against the
    larger of the run's size and the line's: LaTeX raises a 7-point exponent 3.6 points over a
    10-point line (``2`` ``31`` in the ZipCPU specification cut a paragraph in two)."""
    return line.start is not None and x > line.start and abs(line.y - y) < _SHIFT * max(size, line.largest())


def _raised(line: _Line, y: float, size: float) -> bool:
    """Whether a run of ``size`` at height ``y`` on ``line`` is a superscript: set smaller, and higher
    than the line's first run."""
    return bool(line.parts) and y - line.y > _SAME_LINE and size < line.largest()


def _marked_line(lines: Sequence[_Line], x: float, y: float, piece: str) -> _Line | None:
    """The line a heading's number or a list item's bullet drawn after it opens, if any: a run that is
    only such a marker, set at the height of a line already read and left of where it starts.
    WeasyPrint draws a heading's counter and a list's bullets after the page's text; read where they
    came, the GEDCOM specification's numbers were lines of their own, each the section of the
    chunks after it (``1.3.``), and its bullets a chunk of bullets (``• • • •``)."""
    if not _MARKER.fullmatch(piece.strip()):
        return None
    return next(
        (
            line
            for line in reversed(lines)
            if abs(line.y - y) <= _SAME_LINE and line.left is not None and x < line.left
        ),
        None,
    )


def _collect_lines(page: Any) -> list[_Line]:
    """The page's text lines, top to bottom, with position, size and boldness.

    A line's size and boldness are those of most of its characters, so a table row or a term entry
    that opens with a bold word (``**cat** Utility to concatenate files``) is not a bold line. Runs
    of a line are joined as they are set: where pypdf gives no space between two, a space goes in
    only when the next starts clear of the end of the one before (``KDE`` and ``The KDE desktop`` in
    two columns), so a word set in two runs for kerning (``Requ`` ``irements``) stays one word.
    Without the fonts' widths, runs are joined with a space, save the letters after a ligature set
    alone in such a font (``Speci`` ``ﬁ`` ``cation``), which go on with its word. A page drawn with
    its y axis turned down (cairo's) sets its text with a flipped text matrix; pypdf gives text in a
    form XObject the form's transform without the page's, so such a run would read upside down: it
    is placed by the page's flipped transform (the GEDCOM specification's heading numbers, ``1.3.``,
    fell 600 points down the page and named 308 chunks' section alone). A heading number or a bullet
    drawn after the line it opens goes in front of it (``_marked_line``). A run set a little above or
    below the line, right of where its last run starts (``_set_beside``: a superscript, a raised
    sign), is on it; a raised smaller number after a digit is a power (``2^31``), a raised smaller
    letter right after a letter a table's footnote mark, apart from its word (``_raised``); any
    other superscript is joined as any run is (``I2C``, ``1st``). A short rule drawn from one run's
    end to the next run's start at the baseline is an underscore (``PageRules.underscore``: LaTeX's
    ``\\_``, the ZipCPU specification's ``OPT`` ``MULTIPLY``). A line of a note's
    icons alone (a symbol font's codes) is dropped, and so is the icon that opens a line.
    """
    lines: list[_Line] = []
    flipped: list[list[float]] = []  # the last transform under which a flipped text matrix is upright
    rules = PageRules(_fonts(page))  # short rules drawn on the page: an underscore may be one

    def visit(text: str, cm: list[float], tm: list[float], font: dict[str, Any] | None, size: float) -> None:
        if not text:
            return
        if tm[3] < 0 and cm[3] < 0:
            flipped[:] = [cm]
        elif tm[3] * cm[3] < 0 and flipped:
            cm = flipped[0]  # no page sets text upside down: pypdf gave a form's text the form's transform
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        scale = abs(tm[3] * cm[3]) or 1.0
        across = tm[0] * cm[0] or 1.0
        name = str((font or {}).get("/BaseFont", ""))
        bold = "bold" in name.lower()
        text = shown_text(text, name)
        for index, piece in enumerate(text.split("\n")):
            marked = _marked_line(lines, x, y, piece) if index == 0 else None
            if marked is not None:
                marked.parts[:0] = [piece.strip(), " "]
                marked.take(piece, (round(size * scale, 1), bold), is_monospace(name), first=True)
                marked.left = x
                continue
            line = lines[-1] if lines else None
            same_line = line is not None and (
                abs(line.y - y) <= _SAME_LINE or (index == 0 and _set_beside(line, x, y, size * scale))
            )
            if not piece.strip():
                if piece and line is not None and same_line:
                    line.parts.append(piece)  # pypdf's own space between two runs of the line
                continue
            if line is None or not same_line:
                line = _Line(y=y, left=x if index == 0 else None)
                lines.append(line)
            elif index == 0 and line.end is not None and x - line.end > _COLUMN_GAP * size * abs(across):
                line.gaps += 1
                line.lead = line.lead or line_text(line.parts)
            raised = index == 0 and _raised(line, y, size * scale)
            before = line.parts[-1] if line.parts else ""
            exponent = power(before.rstrip(), piece.strip()) if raised else None
            shown = exponent or piece  # a power: ``2`` ``31`` reads ``2^31``, as in Word
            # an underscore drawn as a rule: ``OPT`` ``MULTIPLY`` reads ``OPT_MULTIPLY``
            ruled = (
                None
                if index or line.bare_end is None
                else rules.underscore(line.bare_end, x, y, size * scale)
            )
            if ruled is not None:
                while not line.parts[-1].strip():
                    line.parts.pop()  # pypdf's space where the rule was drawn; the run's own stays
                shown = (ruled.lstrip() if line.parts[-1][-1].isspace() else ruled) + piece.lstrip()
            elif exponent is None and before and not (before[-1:].isspace() or piece[:1].isspace()):
                if raised and footnote_mark(before, piece):
                    clear = True  # a table's footnote letter: ``SLICE_HEADER`` ``a``, not ``SLICE_HEADERa``
                elif line.end is not None:
                    clear = index > 0 or x - line.end > _WORD_GAP * size * abs(across)
                else:  # the letters after a ligature set alone go on with its word (``Speci`` ``ﬁ`` ``ca…``)
                    alone = _LIGATURE_RUN.fullmatch(line.parts[-1]) is not None
                    clear = index > 0 or not (alone and piece[:1].isalpha())
                if clear:
                    line.parts.append(" ")
            line.parts.append(shown)
            line.take(piece, (round(size * scale, 1), bold), is_monospace(name))
            width = run_width(piece, font) if index == 0 else None
            line.end = None if width is None else x + width / 1000.0 * size * across
            # the bare end: the run's end less its leading spaces, the only characters measured again
            lead = run_width(piece[: len(piece) - len(piece.lstrip())], font) if width is not None else None
            line.bare_end = (
                None if width is None or lead is None else x + (width - lead) / 1000.0 * size * across
            )
            line.start = x if index == 0 else None  # pypdf gives a piece after a line break no place

    page.extract_text(visitor_operand_before=rules.visit, visitor_text=visit)
    for line in lines:
        line.text = _ICON_LEAD.sub("", line_text(line.parts))
        line.size, line.bold = line.styles.most_common(1)[0][0]
    return _header_cells([line for line in lines if line.text and not _ICON_LINE.fullmatch(line.text)])


def _bold_throughout(line: _Line) -> bool:
    bold = sum(count for (_, is_bold), count in line.styles.items() if is_bold)
    return bold >= _HEADER_BOLD * sum(line.styles.values())


def _header_cells(lines: list[_Line]) -> list[_Line]:
    """The lines with a table header row's wrapped cells read into it: a header row set in cells
    (``_in_cells``, bold throughout) whose cells wrap over two lines (``Tar-``/``get``,
    ``Meas.``/``Cond.``) is drawn as its one-line cells, then each wrapped cell's lines, half a line
    above and below it. The lines that follow it, bold, of its size and within a line of it, are
    its cells: read apart, ``Max`` and ``Comment`` were headings, and every row below sat in a
    section ``Comment``."""
    merged: list[_Line] = []
    for line in lines:
        header = merged[-1] if merged else None
        if (
            header is not None
            and _in_cells(header)
            and _bold_throughout(header)
            and _bold_throughout(line)
            and abs(line.size - header.size) <= _SIZE_TOLERANCE
            and abs(line.y - header.y) < header.size
        ):
            header.parts.extend([" ", *line.parts])
            header.text = line_text(header.parts)
            header.styles.update(line.styles)
            header.gaps += 1
            continue
        merged.append(line)
    return merged


def line_text(parts: Sequence[str]) -> str:
    """A line's runs as text: typeset ligatures as their letters (``Diﬃe`` must match a question's
    "Diffie"), zero-width characters left out, a control character opening the line as a bullet
    (``•``) and left out elsewhere, spaces normalised."""
    text = normalise_space("".join(parts).translate(_TYPESET))
    return normalise_space(_CONTROLS.sub(" ", _CONTROL_BULLET.sub("\u2022 ", text)))


def _body_style(pages: list[list[_Line]]) -> tuple[float, bool]:
    """The most common (size, bold) of the document's text, weighted by characters."""
    weights: Counter[tuple[float, bool]] = Counter()
    for lines in pages:
        for line in lines:
            weights[(line.size, line.bold)] += len(line.text)
    return weights.most_common(1)[0][0] if weights else (0.0, False)


def _is_heading(line: _Line, body: tuple[float, bool]) -> bool:
    """A line set larger than the body, or bold when the body is not; never a list item or a line
    that runs on (``Takes a payload byte se-``, ``A handshake pattern consists of:``), nor code or a
    label with its value (tested last: most lines are body text, set as no heading is)."""
    if len(line.text) > _MAX_HEADING_CHARS or _RUNS_ON.search(line.text):
        return False
    set_as_heading = line.size >= body[0] * _HEADING_SCALE or (
        line.bold and not body[1] and line.size >= body[0] and not _row_in_cells(line)
    )
    return set_as_heading and not _code(line) and not _labelled(line)


def _code(line: _Line) -> bool:
    """A line set mostly in a monospaced font and not numbered: code (``"energy_mix": {``, a request
    line ``PATCH To URL: https://…`` in a bold monospaced font), never a heading. A numbered heading
    naming a configuration key in it, ``9.1.1. AllowOfflineTxForUnknownId``, is one."""
    monospaced = sum(len(text.strip()) for _, mono, text in line.runs if mono)
    return monospaced * 2 > sum(line.styles.values()) and NUMBERED.match(line.text) is None


def _labelled(line: _Line) -> bool:
    """A label in bold, ending in a colon, then its value in regular type or in a monospaced font:
    ``Module dependency:`` ``Locations module``, ``Module Identifier:`` ``credentials``, a field and
    its value, not a heading (bold by most of its characters)."""
    label: list[str] = []
    for index, (bold, mono, text) in enumerate(line.runs):
        if not bold or mono:
            value = "".join(text for _, _, text in line.runs[index:])
            return "".join(label).rstrip().endswith(":") and bool(value.strip())
        label.append(text)
    return False


def _row_in_cells(line: _Line) -> bool:
    """A line set in cells apart (``_in_cells``) that is not bold throughout: a table's row whose
    first cells are bold (**Sheet Resistance RSRHIGH** ``W 1160 1360 1560 A.i``), not its header
    row, which is bold in every cell (**Parameter Name Unit Min**); as a header it named the rows
    below and was in no chunk's text."""
    return _in_cells(line) and not _bold_throughout(line)


def vocabulary(pages: list[list[_Line]]) -> frozenset[str]:
    """The document's words and hyphenated compounds, lower-cased: what a line-end hyphen is read against."""
    return frozenset(word.lower() for lines in pages for line in lines for word in _WORD.findall(line.text))


def _capitals_broken(head: str, tail: str) -> bool:
    """Both halves of a line-end break in capitals (``WISH-`` / ``BONE``, ``DA-`` / ``TASHEET``)."""
    return len(head) > 1 and len(tail) > 1 and head.isupper() and tail.isupper()


def join_lines(texts: list[str], words: frozenset[str]) -> str:
    """A block's lines as one text, a word hyphenated at a line's end whole again.

    Typesetting breaks words at the margin ("the envi-" / "ronment"), which the engine would index as two
    terms no question uses. When the next line goes on in lower case, the hyphen goes (``environment``),
    unless the document writes the hyphenated compound and never the closed word ("run-time"), the
    part before it is an acronym or code ("RLE-coded") or the next line goes on with the compound
    ("hard-" / "to-find"). A hyphen before "and"/"or" as a word of its own is left hanging ("pre- and
    post-"). A word in capitals broken at the margin ("WISH-" / "BONE") is whole again when the document
    writes it whole elsewhere and never with the hyphen (a figure's ``-WSM-`` / ``VALID`` stays as it
    is). An identifier LaTeX breaks after an underscore, with a hyphen (``header_-`` / ``instance``),
    is whole again (``header_instance``). Lines that break no word join with a space.
    """
    joined = texts[0] if texts else ""
    for text in texts[1:]:
        if joined.endswith("_-") and text[:1].isalnum():
            # an identifier broken after an underscore (``p4_-`` / ``pe_checksum``)
            joined = f"{joined[:-1]}{text}"
            continue
        broken = _BROKEN.search(joined)
        following = _FIRST_WORD.match(text)
        tail = following.group() if following else ""
        # the next line goes on with the compound ("hard-" / "to-find")
        compound_goes_on = following is not None and text[following.end() :].startswith("-")
        head = broken.group()[:-1] if broken is not None else ""
        compound = f"{head}-{tail}".lower()
        closed = f"{head}{tail}".lower()
        whole = closed in words and compound not in words
        if _capitals_broken(head, tail) and whole and not compound_goes_on:
            joined = f"{joined[:-1]}{text}"  # a word in capitals the document writes whole ("WISH-" / "BONE")
            continue
        if (
            broken is None
            or not tail
            or not text[0].islower()
            or (tail in _SUSPENDED and not compound_goes_on)
        ):
            joined = f"{joined} {text}"
            continue
        # an acronym or code before the hyphen ("RLE-coded", "YYMMDDhhmm-hh") is no syllable
        keep = not head[1:].islower() or compound_goes_on or (compound in words and closed not in words)
        joined = f"{joined[:-1]}{'-' if keep else ''}{text}"
    return joined


def _headings(lines: list[_Line], headed: list[bool], body: tuple[float, bool], usual: float) -> list[bool]:
    """Whether each line of a page is a heading (``headed``: ``_is_heading`` of each, computed once
    per page), except that a line heading only by its words — bold at the body's size, or set partly
    in the body's own style (a term set large in a sentence: ``harmonized SMT drop-in`` **Address
    Information.**) — is none when it sits in a paragraph: right under a body line that ends no
    sentence (``… to send encrypted`` / **transport messages.**), or right over one that goes on in
    lower case (**1. Encryption to an ephemeral recipient. This payload has forward** / ``secrecy
    …``). Right under or over means at most the usual line spacing away (``usual``, 0: unknown)."""
    flags = list(headed)
    if usual <= 0:
        return flags
    limit = body[0] * _HEADING_SCALE
    by_words = [
        flag and (line.size < limit or line.styles[body] >= _BODY_SHARE * sum(line.styles.values()))
        for flag, line in zip(flags, lines, strict=True)
    ]

    def near(upper: _Line, lower: _Line) -> bool:
        return 0 < upper.y - lower.y <= usual * _PARAGRAPH_GAP

    for index in range(1, len(lines)):  # downwards, so a paragraph's bold lines go one after another
        above, line = lines[index - 1], lines[index]
        ends = _ENDS_SENTENCE.search(above.text) is not None
        closes = line.text.endswith(".") and NUMBERED.match(line.text) is None  # a sentence's end
        if (by_words[index] or closes) and not flags[index - 1] and near(above, line) and not ends:
            flags[index] = False  # the paragraph above goes on in it
    for index in range(len(lines) - 2, -1, -1):  # upwards, likewise
        line, below = lines[index], lines[index + 1]
        if by_words[index] and not flags[index + 1] and near(line, below) and below.text[:1].islower():
            flags[index] = False  # it goes on in the paragraph below
    return flags


# A caption with its number and a separator: ``Table 3.9:``, ``Figure B-2.``, ``Table 1 –``.
_NUMBERED_CAPTION = re.compile(r"^(?:[Ff]igure|Fig\.|[Tt]able)\s+[A-Z]?\d+(?:[.-][\dA-Z]+)*\s*[.:–—]")
_CAPTION_REACH = 4.0  # a caption under its float is at most this many of its sizes below it
_CAPTION_CLOSER = 0.9  # ... and this much closer to it than to the line after it
_CAPTION = re.compile(r"^(?:figure|fig\.|table|diagram)\s+[\dA-Z]", re.IGNORECASE)


def _body_sized(line: _Line, body: tuple[float, bool]) -> bool:
    """Whether a line is set at the body's size (within ``_SIZE_TOLERANCE``)."""
    return abs(line.size - body[0]) <= _SIZE_TOLERANCE


def _labels(line: _Line, heading: bool, body: tuple[float, bool]) -> bool:
    """Whether a line may label a figure: set smaller or larger than the body, or as a heading
    (larger or bold) other than a caption or a numbered heading."""
    if heading:
        return _CAPTION.match(line.text) is None and NUMBERED.match(line.text) is None
    return not _body_sized(line, body)


def _figure_runs(lines: list[_Line], headings: list[bool], body: tuple[float, bool]) -> list[int | None]:
    """Per line, the figure it labels (the index of the figure's first line), else None.

    A figure drawn with text leaves its labels (``BYTE(3)``, ``DAT_I / DAT_O``, ``0031``) as lines set
    smaller than the body, or as large as headings (a block diagram's ``DCCM``, a pipeline's ``Fetch
    1``, ``EX2``), in the order they were drawn, not read: a run of such lines (``_labels``) that
    jumps up the page at least ``_FIGURE_JUMPS`` times is a figure. Read line by line, each label was
    a chunk of its own that matched a question's words in a dozen tokens, or named a section. A
    table or footnotes in a smaller size go down the page, at most jumping up to a new column; a
    caption or a numbered heading ends a run, so a heading right after a table set small is kept.
    """
    runs: list[int | None] = [None] * len(lines)
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and _labels(lines[end], headings[end], body):
            end += 1
        jumps = sum(1 for a, b in itertools.pairwise(lines[start:end]) if b.y > a.y)
        if jumps >= _FIGURE_JUMPS:
            runs[start:end] = [start] * (end - start)
        start = end + 1 if end == start else end
    return runs


class _Block(NamedTuple):
    heading: bool
    text: str
    size: float  # its first line's
    cells: bool  # a heading set in cells apart: a table's header row (``_in_cells``)


def _in_cells(line: _Line) -> bool:
    """Whether a line is set in cells apart, as a table's header row is (``Field    Bits    Description
    Access    Reset``): gaps of ``_COLUMN_GAP`` font sizes between its runs, other than one after a
    heading's number (``2.3.1.1    ICCM and DCCM``)."""
    return line.gaps > 1 or (line.gaps == 1 and not _SECTION_NUMBER.fullmatch(line.lead))


def _gather_row(blocks: list[tuple[bool, list[str], float, bool]], row: int) -> None:
    """Make the lines from ``row`` on (a table row's cells so far) the last block of the page's
    ``blocks`` so far: the block holding ``row`` is cut before it, and the blocks after it are joined
    to it. Each line so far is one text of its block, in order, so a block's first line is the
    number of texts before it."""
    owner, first = 0, 0
    while first + len(blocks[owner][1]) <= row:
        first += len(blocks[owner][1])
        owner += 1
    if first < row:
        heading, texts, size, cells = blocks[owner]
        cut = row - first
        blocks[owner] = (heading, texts[:cut], size, cells)
        blocks.insert(owner + 1, (heading, texts[cut:], size, False))
        owner += 1
    for block in blocks[owner + 1 :]:
        blocks[owner][1].extend(block[1])
    del blocks[owner + 1 :]


def _blocks(lines: list[_Line], body: tuple[float, bool], words: frozenset[str]) -> list[_Block]:
    """The blocks of one page, in reading order (``words``: see ``join_lines``)."""
    # the body's line spacing: between lines of the body's size, not a figure's small labels or a table's
    # small print, which set a page's most common gap apart as closely as their size allows, nor a
    # bullet set a little above its item's first line (less than a line apart: the same line)
    headed = [_is_heading(line, body) for line in lines]
    plain = [_body_sized(line, body) and not heading for line, heading in zip(lines, headed, strict=True)]
    gaps = Counter(
        round(a.y - b.y)
        for (a, a_plain), (b, b_plain) in itertools.pairwise(zip(lines, plain, strict=True))
        if a_plain and b_plain and a.y - b.y >= body[0] * _MIN_LEADING
    )
    top = max(gaps.values(), default=0)
    usual = float(min((gap for gap, count in gaps.items() if count == top), default=0))
    headings = _headings(lines, headed, body, usual)
    figures = _figure_runs(lines, headings, body)
    headings = [heading and figure is None for heading, figure in zip(headings, figures, strict=True)]
    blocks: list[tuple[bool, list[str], float, bool]] = []
    previous: _Line | None = None
    for index, (line, heading) in enumerate(zip(lines, headings, strict=True)):
        figure, before = figures[index], figures[index - 1] if index else None
        if figure is not None and figure == before:
            blocks[-1][1].append(line.text)  # a figure's labels, wherever they sit, are one block
            previous = line
            continue
        row = None if heading or figure is not None else _row_start(lines, index, headings, figures)
        if row is not None:
            _gather_row(blocks, row)
            blocks[-1][1].append(line.text)
            previous = line
            continue
        gap = previous.y - line.y if previous is not None else 0.0
        # a heading's lines are set further apart than the body's, in proportion to their size; a
        # heading goes on only in its own size
        resized = heading and previous is not None and abs(previous.size - line.size) > _SIZE_TOLERANCE
        scale = max(1.0, line.size / body[0]) if heading and body[0] > 0 else 1.0
        new_block = (
            not blocks
            or heading != blocks[-1][0]
            or (usual > 0 and gap > usual * scale * _PARAGRAPH_GAP)
            or gap > line.size * _MAX_LEADING
            or gap < 0  # a new column or a jump up the page
            or resized
            or (heading and NUMBERED.match(line.text) is not None)  # a numbered heading starts anew
            or figure != before  # a figure is a block of its own
        )
        if new_block and blocks and not heading and not blocks[-1][0] and _under_its_float(lines, index, gap):
            new_block = False
        if new_block:
            blocks.append((heading, [line.text], line.size, heading and _in_cells(line)))
        else:
            blocks[-1][1].append(line.text)
        previous = line
    return [_Block(heading, join_lines(texts, words), size, cells) for heading, texts, size, cells in blocks]


def _under_its_float(lines: Sequence[_Line], index: int, gap: float) -> bool:
    """Whether ``lines[index]``, a numbered caption of one line (``Table 3.9: CIS OpCodes``), goes with
    the table or figure above it: it is set clearly closer to it (``gap`` above, within
    ``_CAPTION_REACH`` line sizes) than to the line after it, as LaTeX sets a float's caption under
    the float. Read as a paragraph of its own, such a caption was a fragment joined to the text
    after it (``Table 3.9: CIS OpCodes zero, this will be cleared …``). A caption over its table is
    set as close to it or closer, and one at a page's foot, with nothing after it, is left alone."""
    line = lines[index]
    if _NUMBERED_CAPTION.match(line.text) is None or not 0 < gap <= _CAPTION_REACH * line.size:
        return False
    return index + 1 < len(lines) and gap < _CAPTION_CLOSER * (line.y - lines[index + 1].y)


def _row_start(
    lines: Sequence[_Line], index: int, headings: Sequence[bool], figures: Sequence[int | None]
) -> int | None:
    """The first line of the table row ``lines[index]`` is the next cell of, if any.

    A table drawn cell by cell (cairo's, as WeasyPrint prints HTML tables) sets each cell's lines
    before the next cell's, so the next cell goes back up the page to the row's first line and right
    of every line since. Read as a jump to a new column, each cell was a block of its own: the GEDCOM
    specification's ``BARM Bar Mitzvah g7:BARM`` was one chunk and ``The ceremonial event held when a
    Jewish boy reaches age 13.`` another. The row's first line is the first at this line's height of
    the lines above it that are body text left of it, at most ``_CELL_LINES`` lines up: a page's
    column goes on for longer."""
    line = lines[index]
    if line.left is None or not index or lines[index - 1].y >= line.y - _SAME_LINE:
        return None
    start = None
    for before in range(index - 1, max(index - 1 - _CELL_LINES, -1), -1):
        left = lines[before].left
        if headings[before] or figures[before] is not None or left is None or left >= line.left:
            break
        if abs(lines[before].y - line.y) <= _SAME_LINE:
            start = before  # the row's earlier cells opened at this height too: its first line is further up
    return start


def _furniture_key(line: _Line) -> str:
    """A line without its page number (digits, or a roman numeral at either end): a running header is
    the same on every page but the number (``ii CONTENTS``, ``CONTENTS iii``)."""
    return _PAGE_DIGITS.sub("", line.text).strip().lower()


def _edges(lines: list[_Line], count: int = _EDGE_LINES) -> list[_Line]:
    """A page's first and last ``count`` lines (all of a page that has no more than twice as many)."""
    return lines[:count] + lines[-count:] if len(lines) > 2 * count else lines


# How a printed page number follows the pages: an offset, or an offset and a page count.
_Key = TypeVar("_Key", int, tuple[int, int])


def _agreed(pages_by_key: Mapping[_Key, set[int]]) -> _Key | None:
    """The key (how a printed number follows the pages) the most pages share, when at least
    ``_RUNNING_PAGES`` do; None otherwise."""
    if not pages_by_key:
        return None
    key = max(sorted(pages_by_key), key=lambda k: len(pages_by_key[k]))
    return key if len(pages_by_key[key]) >= _RUNNING_PAGES else None


def _edge_number(line: _Line) -> int | None:
    """The number a line opens or closes with, apart from its words; None when it has none."""
    match = _EDGE_NUMBER.search(line.text)
    return None if match is None else int(match.group(1) or match.group(2))


def title_tokens(text: str) -> tuple[str, ...]:
    """A heading's or a line's words and numbers, lower-cased, without labels such as ``chapter``."""
    tokens = (token.lower() for token in _TITLE_TOKEN.findall(text))
    return tuple(token for token in tokens if token not in _TITLE_LABELS)


def headings_named(tokens: tuple[str, ...], titles: frozenset[tuple[str, ...]], longest: int) -> int:
    """How many of the document's heading ``titles`` ``tokens`` are, in a row, numbers between them
    aside (0 when they are not made of titles alone): two for a running head that names the section
    and its chapter (``1.2. SDCC SUITE LICENSES CHAPTER 1. INTRODUCTION`` under ``1.2 SDCC Suite
    Licenses`` in the chapter ``Introduction``). ``longest`` is the most tokens a title has."""
    # most[i]: the most titles that tokens[:i] is made of, or -1 when it is not made of titles.
    most = [0] + [-1] * len(tokens)
    for start, token in enumerate(tokens):
        if most[start] < 0:
            continue
        if token.isdigit():
            most[start + 1] = max(most[start + 1], most[start])
        for end in range(start + 1, min(len(tokens), start + longest) + 1):
            if tokens[start:end] in titles:
                most[end] = max(most[end], most[start] + 1)
    return max(most[-1], 0)


def _heading_titles(pages: list[list[_Line]], body: tuple[float, bool]) -> frozenset[tuple[str, ...]]:
    titles = (title_tokens(line.text) for lines in pages for line in lines if _is_heading(line, body))
    return frozenset(
        title for title in titles if sum(len(t) for t in title if not t.isdigit()) >= _MIN_TITLE_LETTERS
    )


def page_offset(edges: list[list[_Line]]) -> int | None:
    """How the document numbers its pages: the printed number minus the page's index that the most
    pages share on a line at their edge (``edges``: each page's ``_edges``), when at least
    ``_RUNNING_PAGES`` pages do (None otherwise).

    A running head that names the current section (``21 Error logging``, ``2.3. BLOCKS AND SUPER
    BLOCKS 7``) changes from section to section, so it does not repeat as a whole; its page number
    still follows the pages one by one. A line that is only a number votes too: where the pages
    carry bare numbers, the table rows that end in a number at some pages' edges (``KK 5 5``) do
    not agree on an offset of their own by chance.
    """
    pages_by_offset: dict[int, set[int]] = {}
    for index, lines in enumerate(edges):
        for line in lines:
            number = int(line.text) if _BARE_NUMBER.fullmatch(line.text) else _edge_number(line)
            if number is not None:
                pages_by_offset.setdefault(number - index, set()).add(index)
    return _agreed(pages_by_offset)


def _pages_of(pages: list[list[_Line]]) -> set[int]:
    """The header and footer lines that say ``Page N of M`` (among a page's first and last three
    lines: a block of header lines is often three deep), N following the pages and M the same, when
    at least ``_RUNNING_PAGES`` pages agree."""
    pages_by_key: dict[tuple[int, int], set[int]] = {}  # (printed N minus the page's index, M) -> pages
    lines_by_key: dict[tuple[int, int], list[int]] = {}  # -> the lines saying so
    for index, lines in enumerate(pages):
        for line in _edges(lines, _EDGE_LINES + 1):
            match = _PAGE_OF.search(line.text)
            if match is not None:
                key = (int(match.group(1)) - index, int(match.group(2)))
                pages_by_key.setdefault(key, set()).add(index)
                lines_by_key.setdefault(key, []).append(id(line))
    agreed = _agreed(pages_by_key)
    return set() if agreed is None else set(lines_by_key[agreed])


def drop_furniture(pages: list[list[_Line]]) -> list[list[_Line]]:
    """Pages without page numbers, running headers and footers, and table-of-contents lines.

    Page numbers (``7``, ``Page 7 of 12``, ``iv``) and running heads count
    only among the first and last two lines of a page. A running head is a
    line that, its page number aside, opens or closes at least three pages
    (every page of a shorter document), or one that opens or closes with the
    page's own number (``page_offset``) and is not set as a heading: a
    chapter that starts on its page number's page keeps its ``1 Introduction``,
    while a bold footer closing the page (``3.4. /memory node 22``) goes, as no
    heading is a page's last line.
    So is a line that says ``Page N of M`` among a page's first or last three
    lines (``2019-02-22 Version 1.0 Page 3 of 25`` under a two-line header),
    N following the pages and M the same on at least three of them, and a
    line not set as a heading that names two or more of the document's
    headings (``headings_named``: the section and its chapter, ``1.2. SDCC
    SUITE LICENSES CHAPTER 1. INTRODUCTION``), when at least three pages
    have one: such a head changes with the section and carries no number;
    in such a document, so is one that names a numbered heading alone (the
    chapter, on its pages before its first section: ``2 HEADERS AND FIELDS``).
    A table-of-contents line is one with a leader of dots, ellipses or middle
    dots (``Introduction ........ 3``, ``2 Introduction……… .. 6``); a page
    that is at least half such lines or index entries, which end in their
    page numbers (``Standard-compliance, 9, 26``), is dropped whole
    (contents, lists of figures, an index), as what is left of it is index
    letters and entries cut off at a line break. A lone line ending in
    numbers elsewhere is text.
    """
    edge_lines = [_edges(lines) for lines in pages]
    repeats: Counter[str] = Counter()
    for lines in edge_lines:
        repeats.update({_furniture_key(line) for line in lines})
    needed = min(_RUNNING_PAGES, len(pages))
    offset = page_offset(edge_lines)
    body = _body_style(pages)
    titles = _heading_titles(pages, body)
    longest = max((len(title) for title in titles), default=0)

    # Per edge line not set as a heading: how many headings it names, and whether it opens with a number.
    named = {
        id(line): (headings_named(tokens, titles, longest), tokens[0].isdigit())
        for lines in edge_lines
        for line in lines
        if not _is_heading(line, body) and (tokens := title_tokens(line.text))
    }
    titled_pages = [
        {id(line) for line in lines if named.get(id(line), (0, False))[0] >= 2} for lines in edge_lines
    ]
    titled: set[int] = set()
    if sum(map(bool, titled_pages)) >= needed:
        # such heads name the section and its chapter, or the chapter alone with its number where
        # no section has begun (``2 HEADERS AND FIELDS`` over the P4 specification's pages)
        titled = {key for key, (count, numbered) in named.items() if count >= 2 or (count == 1 and numbered)}
    paged = _pages_of(pages)
    kept: list[list[_Line]] = []
    for index, (lines, page_edges) in enumerate(zip(pages, edge_lines, strict=True)):
        leaders = {id(line) for line in lines if _DOT_LEADER.search(line.text)}
        listed = len(leaders) + sum(
            1 for line in lines if _INDEX_ENTRY.search(line.text) and id(line) not in leaders
        )
        if listed >= _CONTENTS_LINES and 2 * listed >= len(lines):
            kept.append([])
            continue
        edges = {id(line) for line in page_edges}

        def furniture(
            line: _Line,
            edges: set[int] = edges,
            leaders: set[int] = leaders,
            index: int = index,
            last: _Line | None = lines[-1] if lines else None,
        ) -> bool:
            if id(line) in leaders or id(line) in titled or id(line) in paged:
                return True
            if id(line) not in edges:
                return False
            key = _furniture_key(line)
            running = len(pages) > 1 and bool(key) and repeats[key] >= needed
            # a heading is never a page's last line: one there with the page's number is its footer
            numbered = (
                offset is not None
                and _edge_number(line) == index + offset
                and (not _is_heading(line, body) or line is last)
            )
            return running or numbered or bool(_PAGE_NUMBER.match(line.text))

        kept.append([line for line in lines if not furniture(line)])
    return kept


def _title(reader: pypdf.PdfReader, path: Path) -> str:
    """The PDF's own title (document information), else the file stem."""
    try:
        title = normalise_space(str((reader.metadata.title if reader.metadata else None) or ""))
    except (PyPdfError, ValueError, KeyError, TypeError):
        title = ""
    return title or path.stem


class _Step(NamedTuple):
    level: int
    text: str
    size: float
    numbered: bool
    cells: bool = False  # a table's header row (``_in_cells``)


def heading_path(trail: Sequence[_Step], text: str, size: float, *, cells: bool = False) -> list[_Step]:
    """The heading path after heading ``text`` (set at ``size``).

    A numbered heading (``5.10.2. Specific Options``) sits at its number's depth. Any other heading
    (``Rationale``) sits below the last numbered heading set at least as large, or at the top when
    there is none; it replaces the heading it follows at that level. A table's header row taken for
    a heading (``cells``: ``Field Bits Description Access Reset``) sits below the last heading that
    is not one, so it names the rows below it in their context, never their section.
    """
    match = None if cells else NUMBERED.match(text)
    if match is not None:
        level = number_depth(match.group(1))
    elif cells:
        level = next((step.level + 1 for step in reversed(trail) if not step.cells), 1)
    else:
        parents = [step.level for step in trail if step.numbered and step.size >= size]
        level = parents[-1] + 1 if parents else 1
    step = _Step(level, text, size, match is not None, cells)
    return [step for step in trail if step.level < level] + [step]


def read_pdf(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Paragraph chunks of every page; encrypted or text-less PDFs are refused."""
    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            raise IngestError("PDF is encrypted", hint="remove the password protection and ingest it again")
        pages = drop_furniture([_collect_lines(page) for page in reader.pages])
        title = _title(reader, path)
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, RecursionError) as error:
        raise IngestError(f"not a readable PDF ({type(error).__name__}: {error})") from None
    body = _body_style(pages)
    words = vocabulary(pages)
    section = path.name
    trail: list[_Step] = []
    context = chunk_context(title)
    blocks: list[Block] = []
    counts: Counter[int] = Counter()  # paragraphs so far per page
    bare: tuple[int, str, str, str] | None = None  # the last heading while no text has followed it

    def add(page: int, text: str, section: str, context: str) -> None:
        blocks.append(Paragraph(f"page={page}", (counts[page],), text, section, context, page=page))
        counts[page] += 1

    for number, lines in enumerate(pages, start=1):
        for block in _blocks(lines, body, words):
            text = block.text
            if not block.heading:
                add(number, text, section, context)
                bare = None
                continue
            following = heading_path(trail, text, block.size, cells=block.cells)
            if bare is not None and trail[-1] not in following:
                add(*bare)  # a heading with nothing under it and not over the next: text, not lost
            trail = following
            section = next((step.text for step in reversed(trail) if not step.cells), path.name)
            context = chunk_context(title, [step.text for step in trail])
            bare = (number, text, section, context)
    if bare is not None:
        add(*bare)
    drafts = block_drafts(blocks, options, default_bucket=_BUCKET)
    if not drafts:
        raise IngestError("PDF has no extractable text (scanned images?)", hint="run OCR on it first")
    return finish(doc_id, "pdf", drafts, options)
