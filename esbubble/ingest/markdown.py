"""Markdown reader: heading path as section, paragraphs as chunks.

ATX (``## Access``) and setext headings build the heading path
(``Site Memo > Access``); blank lines separate paragraphs; a fenced code
block, or an HTML ``<pre>`` block up to its ``</pre>``, is one paragraph; a
pipe table gives one chunk per row (``Header: value; …``). Text reads as it
renders (``_without_markup``), outside code: a link or an image is its text
(``[RFC 2119](https://…)`` is "RFC 2119"), a link reference definition
(``[RFC 4007]: https://…``) and an empty HTML anchor (``<a name="x"></a>``)
are nothing, and a line break tag (``<br>``, as tables use in a cell) is a
space. A YAML front matter block (between ``---`` lines at the top) is one
paragraph without its fences. The document's title (for ``context``) is its
front matter's ``title``, else its first H1, else the file stem. Short paragraphs
join a neighbour (see ``fragments``); long ones are cut into token-bounded
segments between sentences. Every paragraph keeps the lines it was read
from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.drafts import finish
from esbubble.ingest.fragments import block_drafts
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.outline import Outline
from esbubble.models import Chunk

BUCKET = "Text"
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_FENCE = re.compile(r"^(```|~~~)")
# An HTML <pre> block is preformatted text like a fence, closed by the line holding </pre> (CommonMark's
# HTML block of type 1: blank lines inside it do not end it).
_PRE = re.compile(r"^<pre(\s|>|$)", re.IGNORECASE)
_PRE_END = "</pre>"
# A GFM delimiter row: cells of one or more hyphens, each with an optional colon either side.
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
# The marks around a header cell and its backslash escapes: ``**Ver.**`` is "Ver.".
_HEADER_MARKS = re.compile(r"^(\*\*|__|\*|_|`)(.+)\1$")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# What renders otherwise than it is written, outside code spans (matched first, so that markup quoted
# in code stays): a line break tag (``C=US,<br>O=ISRG`` in a table cell) renders as a break, a space
# here; an inline link or image (``[RFC 2119](https://… "title")``, ``![Configurable](badge.svg)``) or
# a full or collapsed reference link (``[text][label]``, ``[`close`][]``) as its text, which may itself
# hold an image (a badge that links); an empty HTML anchor (``<a name="oasInfo"></a>``, ``<a id='x'></a>``)
# as nothing: it is a link target for the page, not text.
_LINK_TEXT = r"\[((?:[^\[\]]|\[[^\]]*\](?:\([^)\s]*\))?)*)\]"
_MARKUP = re.compile(
    r"(`+).+?\1|(<br\s*/?>)"
    rf"|!?{_LINK_TEXT}(?:\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)|\[[^\]]*\])"
    r"|<a\s+(?:name|id)\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+)\s*>\s*</a>\s?",
    re.IGNORECASE,
)
# A link reference definition (``[RFC 4007]: https://tools.ietf.org/html/rfc4007``) renders as nothing;
# a footnote (``[^1]: Deprecated.``) is text.
_DEFINITION = re.compile(r"^ {0,3}\[[^\]^][^\]]*\]:\s*\S+(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*$")
# YAML front matter: a ``---`` line opening the file, closed by a ``---`` or ``...`` line; its title.
_FRONT_MATTER_END = re.compile(r"^(---|\.\.\.)\s*$")
_FRONT_TITLE = re.compile(r"^title:\s*(['\"]?)(.+?)\1\s*$")


def read_utf8_text(path: Path) -> str:
    """The file's text; not UTF-8 or holding NUL bytes is an ``IngestError``."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise IngestError("file is not UTF-8 text", hint="re-save it as UTF-8") from None
    if "\x00" in text:
        raise IngestError("file contains NUL bytes; it looks like a binary file", hint="check the file")
    return text


def _rendered(match: re.Match[str]) -> str:
    if match.group(1):  # a code span
        return match.group(0)
    if match.group(2):  # a line break tag
        return " "
    text = match.group(3)
    return "" if text is None else _without_markup(text)


def _without_markup(line: str) -> str:
    """The line as it renders, outside code: links and images as their text, empty HTML anchors as
    nothing, line break tags as spaces."""
    if "<" not in line and "[" not in line:
        return line
    return _MARKUP.sub(_rendered, line)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _header(cell: str) -> str:
    """A header cell (read as it renders) as a label: without the emphasis or code marks around it,
    its escapes undone (``[`format`](#dataTypeFormat)`` is "format")."""
    match = _HEADER_MARKS.match(cell)
    return _ESCAPE.sub(r"\1", match.group(2) if match else cell)


def _is_table(lines: list[str]) -> bool:
    """A GFM pipe table: a header row, then a delimiter row (``---``, ``:-:``, ``-``), then its rows.

    Leading pipes are optional, as in GFM ("Field Name | Type" over "---|:---:"); without them the
    delimiter row must hold a pipe and as many cells as the header, or a paragraph line with a "|"
    above a line of hyphens would pass for a table.
    """
    if len(lines) < 2 or not _TABLE_SEPARATOR.match(lines[1]):
        return False
    if all(line.lstrip().startswith("|") for line in lines):
        return True
    return "|" in lines[1] and len(_cells(lines[0])) == len(_cells(lines[1]))


def _block(outline: Outline, lines: list[str], first_line: int) -> None:
    """A paragraph, fenced block or pipe table whose first line is ``first_line`` (1-based)."""
    if not lines:
        return
    if _is_table(lines):
        rows = [(number, _cells(line)) for number, line in enumerate(lines[2:], start=1)]
        outline.table([_header(cell) for cell in _cells(lines[0])], rows)
        return
    outline.paragraph("\n".join(lines), lines=(first_line, first_line + len(lines) - 1))


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str


@dataclass(frozen=True)
class _Lines:
    lines: list[str]
    first_line: int
    front_matter: bool = False

    def title(self) -> str | None:
        """A front matter's ``title`` (a plain or quoted scalar)."""
        found = (_FRONT_TITLE.match(line) for line in self.lines) if self.front_matter else ()
        return next((match.group(2) for match in found if match), None)


def _events(text: str) -> list[_Heading | _Lines]:
    """Headings and blocks (paragraph, fenced block, table) of a Markdown text, in order."""
    events: list[_Heading | _Lines] = []
    block: list[str] = []
    start = 1

    def flush(next_start: int) -> None:
        nonlocal block, start
        if block:
            events.append(_Lines(block, start))
        block, start = [], next_start

    fence: str | None = None
    lines = text.splitlines()
    if lines and lines[0].rstrip() == "---":
        end = next((n for n, line in enumerate(lines[1:], start=1) if _FRONT_MATTER_END.match(line)), None)
        if end is not None:
            if any(line.strip() for line in lines[1:end]):
                events.append(_Lines(lines[1:end], 2, front_matter=True))
            lines[: end + 1] = [""] * (end + 1)  # so line numbers stay those of the file
    for number, raw in enumerate(lines, start=1):
        if fence is not None:
            block.append(raw)
            if _PRE_END in raw.lower() if fence == _PRE_END else raw.strip().startswith(fence):
                flush(number + 1)
                fence = None
            continue
        line = "" if not block and _DEFINITION.match(raw) else _without_markup(raw)
        if raw.strip() and not line.strip():
            # a line of anchors or link reference definitions only: nothing to read, and no paragraph
            # break either
            if block:
                block.append(line)  # so the block's last line number stays right
            continue
        fenced = _FENCE.match(line.strip())
        if fenced:
            flush(number)
            block, fence = [line], fenced.group(1)
            continue
        if _PRE.match(line.strip()) and _PRE_END not in line.lower():
            flush(number)
            block, fence = [line], _PRE_END
            continue
        atx = _ATX.match(line)
        if atx:
            flush(number + 1)
            events.append(_Heading(len(atx.group(1)), atx.group(2)))
            continue
        if _SETEXT.match(line) and len(block) == 1 and not block[0].lstrip().startswith("|"):
            events.append(_Heading(1 if line.strip().startswith("=") else 2, block[0].strip()))
            block, start = [], number + 1
            continue
        if not line.strip():
            flush(number + 1)
            continue
        if not block:
            start = number
        block.append(line)
    flush(0)
    return events


def read_markdown(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Chunks of a ``.md`` file."""
    events = _events(read_utf8_text(path))
    front = next((e.title() for e in events if isinstance(e, _Lines) and e.front_matter), None)
    first = next((e.text for e in events if isinstance(e, _Heading) and e.level == 1), None)
    title = front or first or path.stem
    outline = Outline(title, path.name, options, bucket=BUCKET)
    for event in events:
        if isinstance(event, _Heading):
            outline.heading(event.level, event.text)
        else:
            _block(outline, event.lines, event.first_line)
    drafts = block_drafts(outline.blocks, options, default_bucket=BUCKET)
    if not drafts:
        raise IngestError("file has no text", hint="check that it is not empty")
    return finish(doc_id, "markdown", drafts, options)
