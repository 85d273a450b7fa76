"""Markdown and plain-text reader: heading path as section, paragraphs as chunks.

Markdown: ATX (``## Access``) and setext headings build the heading path
(``Site Memo > Access``); blank lines separate paragraphs; a fenced code
block is one paragraph; a pipe table gives one chunk per row
(``Header: value; …``). Plain text has no headings: its section is the file
name. Long paragraphs are cut into token-bounded segments between sentences.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from esbubble.errors import IngestError
from esbubble.ingest.drafts import Cell, Draft, finish, prose_drafts, row_drafts
from esbubble.ingest.options import IngestOptions
from esbubble.models import Chunk, SourceType

_BUCKET = "Text"
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_FENCE = re.compile(r"^(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _read_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise IngestError("file is not UTF-8 text", hint="re-save it as UTF-8") from None
    if "\x00" in text:
        raise IngestError("file contains NUL bytes; it looks like a binary file", hint="check the file")
    return text


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


class _Builder:
    """Accumulates drafts while walking the document top to bottom."""

    def __init__(self, default_section: str, options: IngestOptions) -> None:
        self.default_section = default_section
        self.options = options
        self.trail: list[tuple[int, str]] = []
        self.paragraphs: Counter[str] = Counter()
        self.tables: Counter[str] = Counter()
        self.drafts: list[Draft] = []

    @property
    def section(self) -> str:
        return " > ".join(text for _, text in self.trail) or self.default_section

    def heading(self, level: int, text: str) -> None:
        self.trail = [(lvl, t) for lvl, t in self.trail if lvl < level] + [(level, text)]

    def block(self, lines: list[str]) -> None:
        if not lines:
            return
        section = self.section
        if (
            len(lines) >= 2
            and all(ln.lstrip().startswith("|") for ln in lines)
            and _TABLE_SEPARATOR.match(lines[1])
        ):
            self._table(section, lines)
            return
        self.paragraphs[section] += 1
        self.drafts.extend(
            prose_drafts(
                f"section={section}/para={self.paragraphs[section]}",
                "\n".join(lines),
                self.options,
                section=section,
                default_bucket=_BUCKET,
            )
        )

    def _table(self, section: str, lines: list[str]) -> None:
        self.tables[section] += 1
        headers = _cells(lines[0])
        for number, line in enumerate(lines[2:], start=1):
            values = _cells(line)
            cells = [Cell(headers[i] if i < len(headers) else "", v) for i, v in enumerate(values) if v]
            self.drafts.extend(
                row_drafts(
                    f"section={section}/table={self.tables[section]}/row={number}",
                    cells,
                    self.options,
                    section=section,
                    default_bucket=_BUCKET,
                    sheet_name=None,
                    row_number=number,
                )
            )


def _walk_markdown(text: str, builder: _Builder) -> None:
    block: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        if fence is not None:
            block.append(line)
            if line.strip().startswith(fence):
                builder.block(block)
                block, fence = [], None
            continue
        fenced = _FENCE.match(line.strip())
        if fenced:
            builder.block(block)
            block, fence = [line], fenced.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            builder.block(block)
            block = []
            builder.heading(len(atx.group(1)), atx.group(2))
            continue
        if _SETEXT.match(line) and len(block) == 1 and not block[0].lstrip().startswith("|"):
            builder.heading(1 if line.strip().startswith("=") else 2, block[0].strip())
            block = []
            continue
        if not line.strip():
            builder.block(block)
            block = []
            continue
        block.append(line)
    builder.block(block)


def read_markdown(path: Path, options: IngestOptions, *, doc_id: str, plain: bool = False) -> list[Chunk]:
    """Chunks of a ``.md`` file (or, with ``plain``, a ``.txt`` file: paragraphs only)."""
    text = _read_text(path)
    builder = _Builder(path.name, options)
    if plain:
        for block in re.split(r"\n\s*\n", text):
            builder.block([ln for ln in block.splitlines() if ln.strip()])
    else:
        _walk_markdown(text, builder)
    if not builder.drafts:
        raise IngestError("file has no text", hint="check that it is not empty")
    source_type: SourceType = "text" if plain else "markdown"
    return finish(doc_id, source_type, builder.drafts, options)
