"""Plain-text reader: blank lines separate paragraphs; numbered and capital headings give sections.

Plain text has no markup, so headings are recognised by their shape, as
legal and technical text writes them:

- numbered: ``15. Disclaimer of Warranty.``, ``1.2 Scope`` (level = the
  number's depth); a number followed by a short title sentence and more
  text (``2. Grant of Copyright License. Subject to …``) gives the title as
  the heading and the rest as the paragraph;
- a line in capitals (``TERMS AND CONDITIONS``), or a short line alone and
  centred (``Preamble``): level 0, above the numbered ones.

A block whose next line is numbered too is a list, not a heading; a
numbered line of more than four words whose next line goes on in lower
case is a sentence; a block
of several capital lines is shouting prose, not a heading. Underlines
(``-----``) are dropped. The section is the heading path
(``TERMS AND CONDITIONS > 15. Disclaimer of Warranty.``), the file name
before the first heading. Every paragraph keeps its line range.
"""

from __future__ import annotations

import re
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.drafts import finish
from esbubble.ingest.fragments import block_drafts
from esbubble.ingest.markdown import BUCKET, read_utf8_text
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.outline import NUMBERED, Outline, number_depth
from esbubble.models import Chunk

_TITLE_THEN_TEXT = re.compile(r"^([A-Z\"'“][^.!?]{1,60}[.:])\s+(\S.*)$")
_UNDERLINE = re.compile(r"^\s*([-=*_~])\1{2,}\s*$")
_MAX_TITLE_WORDS = 10
_MAX_TITLE_CHARS = 80
_CENTRED_INDENT = 8
_SHORT_TITLE_WORDS = 5  # a numbered line this short is a title even when lower case follows


def _title_like(text: str) -> bool:
    """Short, not cut off mid-sentence, capitalised, and in title case when longer than four words."""
    words = text.split()
    long_words = [w.strip("\"'“”(") for w in words if len(w.strip("\"'“”(")) > 3]
    title_case = len(words) <= _SHORT_TITLE_WORDS - 1 or 2 * sum(w[:1].isupper() for w in long_words) > len(
        long_words
    )
    return (
        len(text) <= _MAX_TITLE_CHARS
        and len(words) <= _MAX_TITLE_WORDS
        and not text.endswith((",", ";"))
        and (text[0].isupper() or text[0] in "\"'“")
        and title_case
    )


def _capitals(line: str) -> bool:
    letters = [ch for ch in line if ch.isalpha()]
    return len(letters) >= 3 and all(ch.isupper() for ch in letters)


def _numbered(line: str) -> tuple[int, str, str] | None:
    """``(level, heading, rest of the line)`` when ``line`` opens a numbered section."""
    match = NUMBERED.match(line)
    if match is None:
        return None
    number, title = match.group(1), match.group(2)
    label = f"{number}." if "." not in number else number
    split = _TITLE_THEN_TEXT.match(title)
    if split is not None and _title_like(split.group(1)):
        return number_depth(number), f"{label} {split.group(1)}", split.group(2)
    if _title_like(title):
        return number_depth(number), f"{label} {title}", ""
    return None


def _heading(lines: list[str]) -> tuple[int, str, str] | None:
    """``(level, heading, rest of its line)`` when the block opens with a heading, else None."""
    first = lines[0]
    text = first.strip()
    following = lines[1] if len(lines) > 1 else None
    numbered = _numbered(first)
    if numbered is not None:
        continued = following is not None and (
            bool(NUMBERED.match(following))
            or (
                not numbered[2]
                and len(numbered[1].split()) > _SHORT_TITLE_WORDS
                and following.strip()[:1].islower()
            )
        )
        return None if continued else numbered
    if _capitals(text) and _title_like(text) and (following is None or not _capitals(following)):
        return 0, text, ""
    indent = len(first) - len(first.lstrip())
    if following is None and indent >= _CENTRED_INDENT and _title_like(text) and not text.endswith("."):
        return 0, text, ""
    return None


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """``(first line number, lines)`` of each blank-line-separated block, underlines dropped."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or _UNDERLINE.match(line):
            if current:
                blocks.append((start, current))
            current = []
            continue
        if not current:
            start = number
        current.append(line)
    if current:
        blocks.append((start, current))
    return blocks


def read_text(path: Path, options: IngestOptions, *, doc_id: str) -> list[Chunk]:
    """Chunks of a plain-text file (``.txt``, or a text file without an extension)."""
    title = path.stem if path.suffix.lower() == ".txt" else path.name
    outline = Outline(title, path.name, options, bucket=BUCKET)
    for start, block in _blocks(read_utf8_text(path)):
        found = _heading(block)
        body, first = block, start
        if found is not None:
            level, heading, rest = found
            outline.heading(level, heading)
            body = [rest, *block[1:]] if rest else block[1:]
            first = start if rest else start + 1
        if body:
            outline.paragraph("\n".join(body), lines=(first, first + len(body) - 1))
    drafts = block_drafts(outline.blocks, options, default_bucket=BUCKET)
    if not drafts:
        raise IngestError("file has no text", hint="check that it is not empty")
    return finish(doc_id, "text", drafts, options)
