"""Markdown reader: heading path as section, paragraphs as chunks.

ATX (``## Access``) and setext headings build the heading path
(``Site Memo > Access``); blank lines separate paragraphs; a fenced code
block, or an HTML ``<pre>`` block up to its ``</pre>``, is one paragraph; a
pipe table, or an HTML ``<table>`` up to its ``</table>`` (``html_table``),
gives one chunk per row (``Header: value; …``). Text reads as it
renders (``_without_markup``), outside code: a link or an image is its text
(``[RFC 2119](https://…)`` is "RFC 2119", ``[email us]({{ site.email }})``
"email us"), so is a shortcut reference link whose label the text defines
(``the [Steering Group]``, ``_shortcuts``), a link reference definition
(``[RFC 4007]: https://…``) and an empty HTML anchor (``<a name="x"></a>``)
are nothing, and a line break tag (``<br>``, as tables use in a cell) is a
space; a kramdown attribute list is nothing too (``{: datetime="…" }`` on a
line of its own, ``## Scope {#scope}``). A list item that titles the items
indented under it (an agreement's ``3. Restricted Transfers``) is a heading
(``_list_titles``); ordered items read with the numbers they render with
(``1.``, ``1.``, ``1.`` as ``1.``, ``2.``, ``3.``; ``_ListNumbers``). Once a block's structure is known,
its inline formatting is read (``_inline``): emphasis, escapes, entity
references, autolinks and phrasing HTML tags (a link's ``<a href>`` too),
over the lines of a paragraph, as hard-wrapped text wraps them; an
HTML ``<pre>`` block loses its tags (``_html_text``). A front
matter block (YAML between ``---`` lines at the top, or TOML between ``+++``
lines, as Hugo sites write it) is one paragraph without its fences. A block
quote reads as its text (``_unquoted``), a thematic break (``----``) ends a
paragraph and is nothing. The document's title (for ``context``) is its front
matter's ``title``, else its first H1 unless a section with text comes before
it, else the file stem. Short paragraphs
join a neighbour (see ``fragments``); long ones are cut into token-bounded
segments between sentences. Every paragraph keeps the lines it was read
from.
"""

from __future__ import annotations

import html
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.drafts import finish
from esbubble.ingest.fragments import block_drafts
from esbubble.ingest.html_table import html_table
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.outline import Outline
from esbubble.ingest.segment import normalise_space
from esbubble.models import Chunk

BUCKET = "Text"
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_FENCE = re.compile(r"^(```|~~~)")
# An HTML <pre> block is preformatted text like a fence, closed by the line holding </pre> (CommonMark's
# HTML block of type 1: blank lines inside it do not end it). An HTML <table> is read the same way, up to
# the line holding </table>, and read as a table (``html_table``): a cell's blank line does not end it.
_PRE = re.compile(r"^<pre(\s|>|$)", re.IGNORECASE)
_PRE_END = "</pre>"
_TABLE = re.compile(r"^<table(\s|>|$)", re.IGNORECASE)
_TABLE_END = "</table>"
_HTML_ENDS = (_PRE_END, _TABLE_END)
# A kramdown block attribute list (``{: datetime="2026-05-04" }``, ``{:.note}``) on a line of its own
# sets attributes of the block next to it and renders as nothing; so does a heading's attribute list
# (``## Scope {#scope}``, ``{: #scope .x}``), in kramdown, Pandoc and PHP Markdown Extra alike.
_ATTRIBUTE_LIST = re.compile(r"^\s*\{:[^{}]*\}\s*$")
_HEADING_ATTRIBUTES = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")
# A GFM delimiter row: cells of one or more hyphens, each with an optional colon either side.
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
# The code marks around a header cell: ``[`format`](#dataTypeFormat)`` is "format".
_HEADER_MARKS = re.compile(r"^(`+)(.+)\1$")
# A table row's cell boundaries: a pipe, unless escaped (``a \| b`` is one cell holding "a | b").
_CELL_BOUNDARY = re.compile(r"(?<!\\)\|")
# What renders otherwise than it is written, outside code spans (matched first, so that markup quoted
# in code stays): a line break tag (``C=US,<br>O=ISRG`` in a table cell) renders as a break, a space
# here; an inline link or image (``[RFC 2119](https://… "title")``, ``![Configurable](badge.svg)``) or
# a full or collapsed reference link (``[text][label]``, ``[`close`][]``) as its text, which may itself
# hold an image (a badge that links); an empty HTML anchor (``<a name="oasInfo"></a>``, ``<a id='x'></a>``)
# as nothing: it is a link target for the page, not text.
_LINK_TEXT = r"\[((?:[^\[\]]|\[[^\]]*\](?:\([^)\s]*\))?)*)\]"
# A code span (``[not a link](x)`` in backticks): group 1 of the patterns that open with it, which
# leave it as written.
_CODE_SPAN = r"(`+).+?\1"
# A Liquid output tag in a link's destination (``[email us]({{ site.email_support }})``): a site built
# with Jekyll fills it in before the Markdown is rendered, so the link renders as its text.
_LIQUID = r"\{\{[^{}]*\}\}"
_MARKUP = re.compile(
    _CODE_SPAN + r"|(<br\s*/?>)"
    rf"|!?{_LINK_TEXT}(?:\((?:[^()\s]|\([^()\s]*\)|{_LIQUID})*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)|\[[^\]]*\])"
    r"|<a\s+(?:name|id)\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+)\s*>\s*</a>\s?|<hr\s*/?>",
    re.IGNORECASE,
)
# Inline formatting, read in a block's text once its structure is known (outside code spans, matched
# first): emphasis (``**Forbidden**``, ``*Note*``, ``_Rationale:_``) is its text; a backslash escape
# (``\_``, ``\|``) its character; an entity reference (``&nbsp;``, ``&amp;``, ``&#8212;``) its
# character, a no-break space a space; an autolink (``<https://www.cabforum.org>``) its address; a
# phrasing HTML tag (``<b>``, ``</span>``, a link's ``<a href="…">`` and ``</a>``) nothing. Emphasis
# follows CommonMark's flanking rules in short: the opening run is not followed by a space and the
# closing one not preceded by one, and an underscore run does not open or close inside a word
# (``snake_case_name`` stays).
_ENTITY = r"(&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)"
_INLINE = re.compile(
    _CODE_SPAN + r"|\\([!-/:-@\[-`{-~])"
    rf"|{_ENTITY}"
    r"|<((?:https?|ftp|mailto):[^\s<>]*)>"
    r"|</?(?:a|b|i|em|strong|u|s|del|ins|span|sup|sub|small|mark|abbr|font|var|kbd|samp|cite|dfn|q|time|code"
    r"|div|p|section|header|footer|article|aside|nav|main|center|details|summary)\b[^<>]*>"
    r"|(\*{1,3})(?=[^\s*])(.+?)(?:(?<=[^\s*\\])|(?<=\\\*))\5(?!\*)"
    r"|(?<![\w\\])(_{1,3})(?=[^\s_])(.+?)(?:(?<=[^\s_\\])|(?<=\\_))\7(?!\w)",
    re.IGNORECASE | re.DOTALL,  # emphasis may run over the lines of its paragraph
)
# In an HTML ``<pre>`` block, which holds HTML, not Markdown: a tag (``<b>All users</b>``, the
# ``<pre>`` itself) is nothing, an entity reference its character.
_HTML = re.compile(rf"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|{_ENTITY}")
# A link reference definition (``[RFC 4007]: https://tools.ietf.org/html/rfc4007``) renders as nothing;
# a footnote (``[^1]: Deprecated.``) is text.
_DEFINITION = re.compile(r"^ {0,3}\[([^\]^][^\]]*)\]:\s*\S+(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*$")
# A list item's marker and indent: ``1.``, ``2)``, ``a.``, ``iv.``, ``-``, ``*``, ``+``.
_LIST_ITEM = re.compile(r"^( *)(?:\d{1,3}[.)]|[A-Za-z][.)]|[ivxlc]{1,6}[.)]|[-*+])\s+(\S.*)$")
# A list item that is a clause's title has at most this many words and is no lead-in (``…, the
# following applies:``).
_TITLE_WORDS = 10
_LEAD_IN_ENDS = (":", ";", ",")
# A block quote's marker (``> ``), nested or not: the quote reads as its text.
_QUOTE = re.compile(r"^ {0,3}> ?")
# A thematic break (``----``, ``* * *``, ``___``) renders as a rule: it ends a paragraph and is nothing.
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
# A front matter: YAML between a ``---`` line opening the file and a ``---`` or ``...`` line, or TOML
# between ``+++`` lines (Hugo's); what closes each, and its title (``title: …``, ``title = "…"``).
_FRONT_MATTER_ENDS = {"---": re.compile(r"^(---|\.\.\.)\s*$"), "+++": re.compile(r"^\+\+\+\s*$")}
_FRONT_TITLE = re.compile(r"^title\s*[:=]\s*(['\"]?)(.+?)\1\s*$")


# An ordered list item's indent, number, delimiter and the rest of its line; a bullet item.
_ORDERED_ITEM = re.compile(r"^( *)(\d{1,9})([.)])([ \t]+\S.*)$")
_BULLET_ITEM = re.compile(r"^( *)[-*+][ \t]+\S")


class _ListNumbers:
    """Ordered list items numbered as they render: a list counts up from its first item's number,
    whatever the next items' markers say. Lists written with ``1.`` for every item (the WHATWG's
    policy) read ``1. … 2. … 3.``; a list nested in an item counts on its own, and ends where the
    text goes back to its item's indent or less (after a blank line), as a bullet list at its indent
    or a heading does."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str, int]] = []  # per open list: its indent, delimiter, next number
        self._after_blank = False

    def blank(self) -> None:
        self._after_blank = True

    def end(self) -> None:
        self._open, self._after_blank = [], False

    def read(self, line: str) -> str:
        """The line with an ordered item's number as it renders."""
        after_blank, self._after_blank = self._after_blank, False
        ordered = _ORDERED_ITEM.match(line)
        indent = _indent(line)
        while self._open and self._open[-1][0] > indent:
            self._open.pop()  # a list nested deeper than this line ends
        same = self._open[-1] if self._open and self._open[-1][0] == indent else None
        if ordered is None:
            if same and (_BULLET_ITEM.match(line) or after_blank):
                self._open.pop()  # a bullet item, or a paragraph after a blank line, at the list's indent
            return line
        _, written, delimiter, rest = ordered.groups()
        if same and same[1] == delimiter:
            number = same[2]
            self._open[-1] = (indent, delimiter, number + 1)
        else:
            if same:
                self._open.pop()  # another delimiter starts another list
            number = int(written)
            self._open.append((indent, delimiter, number + 1))
        return f"{line[:indent]}{number}{delimiter}{rest}"


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


def _formatted(match: re.Match[str]) -> str:
    if match.group(1):  # a code span
        return match.group(0)
    if match.group(2):  # a backslash escape
        return match.group(2)
    if match.group(3):
        return _entity(match.group(3))
    if match.group(4):  # an autolink
        return match.group(4)
    emphasis = match.group(6) if match.group(5) else match.group(8)
    return "" if emphasis is None else _inline(emphasis)  # a phrasing tag is nothing


def _entity(reference: str) -> str:
    """An entity reference's character (a no-break space as a space); an unknown one stays."""
    return html.unescape(reference).replace("\N{NO-BREAK SPACE}", " ")


def _html_text(text: str) -> str:
    """A ``<pre>`` block's text as it renders: without its tags, its entity references read."""
    return _HTML.sub(lambda match: _entity(match.group(1)) if match.group(1) else "", text)


def _inline(text: str) -> str:
    """Text as it renders, outside code spans: without emphasis marks, escapes, entity references and
    phrasing HTML tags (``_INLINE``)."""
    if not any(mark in text for mark in "*_\\&<"):
        return text
    return _INLINE.sub(_formatted, text)


def _without_markup(line: str) -> str:
    """The line as it renders, outside code: links and images as their text, empty HTML anchors as
    nothing, line break tags as spaces."""
    if "<" not in line and "[" not in line:
        return line
    return _MARKUP.sub(_rendered, line)


def _shortcuts(lines: list[str]) -> re.Pattern[str] | None:
    """What matches a shortcut reference link (``the [Steering Group] decides``) to a label the text
    defines (``[Steering Group]: https://…``, matched without regard to case or spacing): it renders
    as its text. Brackets around anything else are text, as written. Code spans are matched first,
    so that brackets quoted in code stay."""
    labels = {normalise_space(found.group(1)) for line in lines if (found := _DEFINITION.match(line))}
    if not labels:
        return None
    choices = "|".join(
        re.escape(label).replace(r"\ ", r"\s+") for label in sorted(labels, key=len, reverse=True)
    )
    return re.compile(rf"{_CODE_SPAN}|\[({choices})\](?![\[(])", re.IGNORECASE)


def _linked(text: str, shortcuts: re.Pattern[str] | None) -> str:
    """The text with its shortcut reference links (``_shortcuts``) as their text."""
    if shortcuts is None or "[" not in text:
        return text
    return shortcuts.sub(lambda found: found.group(2) or found.group(0), text)


def _cells(line: str) -> list[str]:
    """A table row's cells, as written (an escaped pipe stays in its cell)."""
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in _CELL_BOUNDARY.split(row)]


def _header(cell: str) -> str:
    """A header cell as a label: as it renders, without the code marks around it (``**Ver.**`` is
    "Ver.", ``[`format`](#dataTypeFormat)`` is "format")."""
    label = _inline(cell)
    match = _HEADER_MARKS.match(label)
    return match.group(2) if match else label


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


def _block(outline: Outline, block: _Lines, shortcuts: re.Pattern[str] | None) -> None:
    """A paragraph, code block, pipe table or HTML table, its inline formatting read (not in code)."""
    lines = block.lines
    if block.table:
        headers, cells = html_table("\n".join(lines))
        outline.table(headers, list(enumerate(cells, start=1)))
        return
    if not block.code and _is_table(lines):
        rows = [(n, [_inline(cell) for cell in _cells(line)]) for n, line in enumerate(lines[2:], start=1)]
        outline.table([_header(cell) for cell in _cells(lines[0])], rows)
        return
    # a link or emphasis may run over a paragraph's lines (``**This MSC is now`` / ``formalised …**``)
    text = "\n".join(lines) if block.code else _inline(_linked(_without_markup("\n".join(lines)), shortcuts))
    text = _html_text(text) if block.pre else text
    outline.paragraph(text, lines=(block.first_line, block.first_line + len(lines) - 1))


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str


@dataclass(frozen=True)
class _Lines:
    lines: list[str]
    first_line: int
    code: bool = False  # a fenced or ``<pre>`` block, or a front matter: no Markdown inside
    html: str | None = None  # an HTML block's end tag (``_HTML_ENDS``): HTML inside
    front_matter: bool = False

    @property
    def pre(self) -> bool:
        """An HTML ``<pre>`` block: preformatted, its tags left out."""
        return self.html == _PRE_END

    @property
    def table(self) -> bool:
        """An HTML ``<table>``: read as a table."""
        return self.html == _TABLE_END

    def title(self) -> str | None:
        """A front matter's ``title`` (a plain or quoted scalar)."""
        found = (_FRONT_TITLE.match(line) for line in self.lines) if self.front_matter else ()
        return next((match.group(2) for match in found if match), None)


def _unquoted(line: str, most: int | None) -> tuple[str, int]:
    """A line without its block quote markers (at most ``most``: a fenced block's lines lose only the
    markers of the quotes it is in), and how many it had."""
    depth = 0
    while (most is None or depth < most) and (marker := _QUOTE.match(line)):
        line, depth = line[marker.end() :], depth + 1
    return line, depth


def _events(text: str, shortcuts: re.Pattern[str] | None = None) -> list[_Heading | _Lines]:
    """Headings and blocks (paragraph, fenced block, table) of a Markdown text, in order (its
    shortcut reference links, ``_shortcuts``, read as their text)."""
    events: list[_Heading | _Lines] = []
    block: list[str] = []
    start = 1

    def flush(next_start: int, *, closing: str | None = None) -> None:
        """End the open block; ``closing`` is what closed it when it is a fenced or HTML block (a fence,
        or an HTML end tag)."""
        nonlocal block, start
        if block:
            html = closing if closing in _HTML_ENDS else None
            events.append(_Lines(block, start, code=closing is not None, html=html))
        block, start = [], next_start

    fence: str | None = None  # what closes the open fenced block: its fence, or an HTML end tag
    lines = text.splitlines()
    closing = _FRONT_MATTER_ENDS.get(lines[0].rstrip()) if lines else None
    if closing is not None:
        end = next((n for n, line in enumerate(lines[1:], start=1) if closing.match(line)), None)
        if end is not None:
            if any(line.strip() for line in lines[1:end]):
                events.append(_Lines(lines[1:end], 2, code=True, front_matter=True))
            lines[: end + 1] = [""] * (end + 1)  # so line numbers stay those of the file
    quoted = 0  # how many block quotes the open fenced block is in
    numbers = _ListNumbers()
    for number, written in enumerate(lines, start=1):
        raw, depth = _unquoted(written, None if fence is None else quoted)
        if fence is not None:
            block.append(raw)
            if fence in raw.lower() if fence in _HTML_ENDS else raw.strip().startswith(fence):
                flush(number + 1, closing=fence)
                fence = None
            continue
        nothing = (not block and _DEFINITION.match(raw)) or _ATTRIBUTE_LIST.match(raw)
        line = "" if nothing else _linked(_without_markup(raw), shortcuts)
        if raw.strip() and not line.strip():
            # a line of anchors or link reference definitions only: nothing to read, and no paragraph
            # break either
            if block:
                block.append(line)  # so the block's last line number stays right
            continue
        fenced = _FENCE.match(line.strip())
        if fenced:
            numbers.blank()  # a fenced block in an item goes on the list; one after it ends it
            flush(number)
            block, fence, quoted = [line], fenced.group(1), depth
            continue
        html = _PRE_END if _PRE.match(line.strip()) else _TABLE_END if _TABLE.match(line.strip()) else None
        if html is not None:
            flush(number)
            block = [line]
            if html in line.lower():  # closed on its own line
                flush(number + 1, closing=html)
            else:
                fence, quoted = html, depth
            continue
        atx = _ATX.match(line)
        if atx:
            numbers.end()
            flush(number + 1)
            events.append(_Heading(len(atx.group(1)), _heading_text(atx.group(2))))
            continue
        if _SETEXT.match(line) and len(block) == 1 and not block[0].lstrip().startswith("|"):
            events.append(_Heading(1 if line.strip().startswith("=") else 2, _heading_text(block[0])))
            block, start = [], number + 1
            continue
        if not line.strip() or _THEMATIC_BREAK.match(line):
            numbers.end() if line.strip() else numbers.blank()
            flush(number + 1)
            continue
        if not block:
            start = number
        block.append(numbers.read(line))
    flush(0, closing=fence)
    return events


@dataclass(frozen=True)
class _End:
    """The end of the list items a title item heads: the heading path goes back above ``level``."""

    level: int


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _list_titles(events: list[_Heading | _Lines]) -> list[_Heading | _Lines | _End]:
    """Events with every list item that titles the items under it read as a heading.

    Agreements written in Markdown number their clauses as a list: ``1. Restricted Transfers`` (or
    ``6. **Subprocessors.**``) alone on its lines, then the clauses as items indented under it. Such
    an item (a paragraph of one line, at most ``_TITLE_WORDS`` words, no lead-in ending in a colon,
    the next block a list item indented deeper) heads the items under it as a heading does, one level
    below the heading above it or the title item it is nested in, up to the next block indented no
    deeper than it (``_End``); it reads with its marker (``3. Restricted Transfers``), as a numbered
    heading does, so a citation can name the clause.
    """
    read: list[_Heading | _Lines | _End] = []
    level = 0  # the level of the last Markdown heading
    titles: list[int] = []  # the indents of the title items open under it
    for event, following in itertools.zip_longest(events, events[1:]):
        if isinstance(event, _Heading):
            level, titles = event.level, []
            read.append(event)
            continue
        indent = _indent(event.lines[0])
        open_titles = [title for title in titles if title < indent]
        if len(open_titles) < len(titles):
            read.append(_End(level + len(open_titles) + 1))
        titles = open_titles
        item = _LIST_ITEM.match(event.lines[0]) if len(event.lines) == 1 and not event.code else None
        title = _inline(item.group(2)).strip() if item else ""
        nested = (
            isinstance(following, _Lines)
            and _LIST_ITEM.match(following.lines[0]) is not None
            and _indent(following.lines[0]) > indent
        )
        if not (item and nested) or len(title.split()) > _TITLE_WORDS or title.endswith(_LEAD_IN_ENDS):
            read.append(event)
            continue
        titles.append(indent)
        read.append(_Heading(level + len(titles), normalise_space(_inline(event.lines[0]))))
    return read


def _heading_text(text: str) -> str:
    """A heading as it renders: without its attribute list (``{#scope}``), its inline formatting read."""
    return _inline(_HEADING_ATTRIBUTES.sub("", text.strip()))


def _first_title(events: list[_Heading | _Lines]) -> str | None:
    """The first H1, unless a section with text comes before it: an H1 after sections of their own
    (``## 1. Name`` …, then ``# 6. Chairman and Secretary``, a level slip) titles no document, while
    one under a logo line (``## creative commons``) or after a preamble does."""
    headed = False
    for event in events:
        if isinstance(event, _Heading):
            if event.level == 1:
                return event.text
            headed = True
        elif headed:
            return None
    return None


def read_markdown(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Chunks of a ``.md`` file."""
    text = read_utf8_text(path)
    shortcuts = _shortcuts(text.splitlines())
    events = _events(text, shortcuts)
    front = next((e.title() for e in events if isinstance(e, _Lines) and e.front_matter), None)
    title = front or _first_title(events) or path.stem
    outline = Outline(title, path.name, options, bucket=BUCKET)
    for event in _list_titles(events):
        if isinstance(event, _Heading):
            outline.heading(event.level, event.text)
        elif isinstance(event, _End):
            outline.up(event.level)
        else:
            _block(outline, event, shortcuts)
    drafts = block_drafts(outline.blocks, options, default_bucket=BUCKET)
    if not drafts:
        raise IngestError("file has no text", hint="check that it is not empty")
    return finish(doc_id, "markdown", drafts, options)
