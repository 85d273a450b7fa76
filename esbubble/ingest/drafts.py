"""From reader output to ``Chunk`` records: parts, ids, hashes, token counts.

Readers describe *where* each piece of text sits (a ``Draft`` with its
structural locator); this module turns drafts into chunks the same way for
every format, so ids, positions, buckets and hashes follow one rule.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from esbubble.core.analysis import analyzed_counts, distinct_words
from esbubble.core.named import CONTEXT_PART, HEADER_MARK, ROW_JOINER, cell_terms
from esbubble.core.tokens import count_many, count_tokens
from esbubble.ingest.ids import chunk_id, content_hash, parent_id
from esbubble.ingest.options import IngestOptions
from esbubble.ingest.segment import normalise_space, segment_text
from esbubble.models import Chunk, ChunkTerms, SourceType
from esbubble.text import TERMS_VERSION, distinct_terms, term_counts


@dataclass(frozen=True)
class Cell:
    """One non-empty cell of a row: its header (may be empty) and its rendered value."""

    header: str
    value: str

    @property
    def display(self) -> str:
        return f"{self.header}{HEADER_MARK}{self.value}" if self.header else self.value


@dataclass(frozen=True)
class Draft:
    """A piece of a document before it becomes a chunk.

    ``locator`` names the place (``sheet=Pricing/row=12/part=0``); it must be
    unique within the document, since the chunk id is derived from it.
    """

    locator: str
    section: str
    default_bucket: str
    text: str
    compare_text: str
    sheet_name: str | None = None
    row_number: int | None = None
    page: int | None = None
    context: str = ""
    lines: tuple[int, int] | None = None


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of prose before fragments are joined and long ones are cut.

    ``scope`` is the locator prefix its number counts in (``section=Access``,
    ``page=3``); ``numbers`` is one paragraph number, or several when short
    fragments were joined (``para=3+4``), so the locator stays derived from
    the document's structure.
    """

    scope: str
    numbers: tuple[int, ...]
    text: str
    section: str
    context: str
    page: int | None = None
    lines: tuple[int, int] | None = None

    @property
    def locator(self) -> str:
        return f"{self.scope}/para={'+'.join(str(n) for n in self.numbers)}"


def label_value(values: Sequence[str]) -> Cell:
    """A row of a key-value table (``Notes: | …``) as one ``Label: value`` cell: the label without
    its colon as the header, the rest of the row as the value; a lone label is its own text."""
    label, *rest = values
    value = " ".join(v for v in rest if v)
    return Cell(header=label.rstrip(": "), value=value) if value else Cell(header="", value=label)


CONTEXT_SEPARATOR = " > "


def chunk_context(title: str, path: Sequence[str] = (), headers: Sequence[str] = ()) -> str:
    """A chunk's ``context``: title and heading path (or sheet), then a table's column headers.

    A path step equal to the step before it (a Markdown H1 that is also the
    title) is given once: ``Site Memo > Access | Item, Area, Qty``.
    """
    steps: list[str] = []
    for step in (title, *path):
        clean = normalise_space(step)
        if clean and (not steps or steps[-1] != clean):
            steps.append(clean)
    names = list(dict.fromkeys(h for h in (normalise_space(h) for h in headers) if h))
    place = CONTEXT_SEPARATOR.join(steps)
    return f"{place}{CONTEXT_PART}{', '.join(names)}" if names else place


_MAX_LEAD_TOKENS = 24  # key cells longer than this name no row: its continuation parts go without them
_MAX_KEY_CELLS = 3
_CONTINUED = "… "


def key_width(rows: Sequence[Sequence[Cell]]) -> int:
    """How many leading cells name a row of a table: the fewest (1 to ``_MAX_KEY_CELLS``) whose values
    tell the most rows apart. A dictionary of fields lists each table's fields under the table's name
    (``CDM_TABLE: PERSON; CDM_FIELD: year_of_birth``): its first cell names a table, not the row."""
    widths = range(1, _MAX_KEY_CELLS + 1)
    distinct = [len({tuple(cell.value for cell in cells[:width]) for cells in rows}) for width in widths]
    return distinct.index(max(distinct)) + 1 if rows else 1


def _lead(cells: Sequence[Cell], key: int, max_tokens: int, encoding: str) -> tuple[str, int]:
    """What a continuation part of the row starts with, and its tokens: its ``key`` first cells (as many
    of them as are short enough), then a mark that the row goes on (``Identifier:
    contractPerformance; … Matured, acronym: MA``); nothing when the first cell is long."""
    for width in range(min(key, len(cells) - 1), 0, -1):
        lead = f"{ROW_JOINER.join(cell.display for cell in cells[:width])}{ROW_JOINER}{_CONTINUED}"
        tokens = count_tokens(lead, encoding)
        if tokens <= min(_MAX_LEAD_TOKENS, max_tokens // 4):
            return lead, tokens
    return "", 0


def _cut_row(cells: Sequence[Cell], key: int, max_tokens: int, encoding: str) -> list[str]:
    """The texts of a row too long for one part, cut as ``row_parts`` describes."""
    lead, lead_tokens = _lead(cells, key, max_tokens, encoding)
    room = max_tokens - lead_tokens  # of a part after the lead
    texts: list[str] = []
    current = ""
    for cell in cells:
        candidate = f"{current}{ROW_JOINER}{cell.display}" if current else cell.display
        if count_tokens(candidate, encoding) <= max_tokens:
            current = candidate
        elif count_tokens(cell.display, encoding) <= room:
            texts.append(current)
            current = f"{lead}{cell.display}"
        else:
            first, *rest = segment_text(candidate, room, encoding)
            *done, current = [first, *(f"{lead}{piece}" for piece in rest)]
            texts.extend(done)
    if current:
        texts.append(current)
    return texts


def row_parts(
    cells: Sequence[Cell], max_tokens: int, encoding: str, *, key: int = 1
) -> list[tuple[str, str]]:
    """``(text, compare_text)`` per part of a table row; one part unless the row is too long.

    Parts are cut between cells; where a cell does not fit, between sentences
    (the cell's first sentences join the part before it). A part after the
    first starts with the row's first cell, when that is short, and ``…``: a
    part must say which row it continues (``Code: LOT_ONE; … lav: …``). A row
    that fits is counted once, whole (most rows).
    """
    whole = ROW_JOINER.join(cell.display for cell in cells)
    fits = bool(whole) and count_tokens(whole, encoding) <= max_tokens
    texts = [whole] if fits else _cut_row(cells, key, max_tokens, encoding)
    labels = sorted({re.escape(c.header) for c in cells if c.header}, key=len, reverse=True)
    label = re.compile(rf"(?:^|(?<={ROW_JOINER}))(?:{'|'.join(labels)}){HEADER_MARK}") if labels else None
    return [(text, (label.sub("", text) if label else text).replace(ROW_JOINER, " ")) for text in texts]


def prose_drafts(paragraph: Paragraph, options: IngestOptions, *, default_bucket: str) -> list[Draft]:
    """Drafts for one paragraph: one per token-bounded segment, cut between sentences."""
    pieces = segment_text(
        paragraph.text, options.max_chunk_tokens, options.encoding, min_tokens=options.min_chunk_tokens
    )
    return [
        Draft(
            locator=f"{paragraph.locator}/part={index}",
            section=paragraph.section,
            default_bucket=default_bucket,
            text=piece,
            compare_text=piece,
            page=paragraph.page,
            context=paragraph.context,
            lines=paragraph.lines,
        )
        for index, piece in enumerate(pieces)
    ]


_MIN_REPEATS = 3  # two equal neighbours (a quantity and a unit count of 1) read better apart
_LISTED_REPEATS = 3  # the longest run whose headers are all named; longer: ``bul … swe``


def collapse_repeats(cells: Sequence[Cell]) -> list[Cell]:
    """A run of at least three adjacent cells holding the same value, each under a header, as one cell
    under their headers: ``SAP, SAR, POA&M: n/a``; a longer run under its first and last header,
    ``Name … swe: Technical units`` (every column's header is in the chunk's ``context``).

    Multilingual code lists fill every language column with the English text until it is
    translated; written out cell by cell, one code's row became 320 tokens of one sentence repeated,
    which buries the code in the engine's length normalisation and spends the budget on copies.
    """
    collapsed: list[Cell] = []
    for (value, headed), group in itertools.groupby(cells, key=lambda cell: (cell.value, bool(cell.header))):
        run = list(group)
        if not headed or len(run) < _MIN_REPEATS:
            collapsed.extend(run)
            continue
        names = [cell.header for cell in run]
        header = ", ".join(names) if len(run) <= _LISTED_REPEATS else f"{names[0]} … {names[-1]}"
        collapsed.append(Cell(header, value))
    return collapsed


def _unlabelled(header: str) -> str:
    """A column header without the colon that writes it as a label (``Stakeholders:``)."""
    return normalise_space(header).removesuffix(":").rstrip()


def row_drafts(
    base_locator: str,
    cells: Sequence[Cell],
    options: IngestOptions,
    *,
    section: str,
    default_bucket: str,
    sheet_name: str | None,
    row_number: int,
    context: str,
    key: int = 1,
) -> list[Draft]:
    """Drafts for one table row; continuation parts keep the row number and start with its ``key``
    first cells (``key_width`` of its table)."""
    # a header written as a label (``Customer Security Stakeholders:``) reads ``…: value``, not ``…:: value``
    clean = [Cell(_unlabelled(c.header), normalise_space(c.value)) for c in cells]
    clean = collapse_repeats([c for c in clean if c.value])
    return [
        Draft(
            locator=f"{base_locator}/part={index}",
            section=section,
            default_bucket=default_bucket,
            text=text,
            compare_text=compare,
            sheet_name=sheet_name,
            row_number=row_number,
            context=context,
        )
        for index, (text, compare) in enumerate(
            row_parts(clean, options.max_chunk_tokens, options.encoding, key=key)
        )
    ]


def resolve_bucket(section: str, default_bucket: str, options: IngestOptions) -> str:
    """The profile's ``[buckets.map]`` by section first, then by the format's default bucket."""
    mapping = options.buckets.map
    return mapping.get(section) or mapping.get(default_bucket) or default_bucket


def finish(
    doc_id: str, source_type: SourceType, drafts: Sequence[Draft], options: IngestOptions
) -> list[Chunk]:
    """Turn drafts (in document order) into chunks with ids, positions, buckets and hashes."""
    seen: set[str] = set()
    for draft in drafts:
        if draft.locator in seen:
            raise ValueError(f"duplicate locator {draft.locator!r} in {doc_id}")  # a reader bug
        seen.add(draft.locator)
    counts = count_many([d.text for d in drafts], options.encoding)
    # A sheet's rows, or a section's paragraphs, share one context: analyse each once.
    contexts = dict.fromkeys(draft.context for draft in drafts)
    context_stems = {context: analyzed_counts(context) for context in contexts}
    chunks: list[Chunk] = []
    for position, (draft, tokens) in enumerate(zip(drafts, counts, strict=True)):
        fields: dict[str, object] = {
            "doc_id": doc_id,
            "source_type": source_type,
            "section": draft.section,
            "sheet_name": draft.sheet_name,
            "bucket": resolve_bucket(draft.section, draft.default_bucket, options),
            "row_number": draft.row_number,
            "page": draft.page,
            "line_start": draft.lines[0] if draft.lines else None,
            "line_end": draft.lines[1] if draft.lines else None,
            "position": position,
            "parent_id": parent_id(doc_id, draft.section),
            "token_count": tokens,
            "encoding": options.encoding,
            "text": draft.text,
            "compare_text": draft.compare_text,
            "context": draft.context,
        }
        # The terms derive from the texts; their version is hashed so that a re-ingest
        # after a tokenizer change rewrites every chunk with fresh terms. A row's terms also hold
        # its cells' (``cells``), hashed too, so the next ingest rewrites rows indexed without them.
        row = draft.row_number is not None
        digest = content_hash({**fields, "terms_version": TERMS_VERSION, **({"cells": True} if row else {})})
        terms = ChunkTerms(
            version=TERMS_VERSION,
            counts=term_counts(draft.text),
            compare=distinct_terms(draft.compare_text),
            words=distinct_words(draft.compare_text),
            stems=analyzed_counts(draft.text),
            context_stems=context_stems[draft.context],
            cells=cell_terms(draft.text, draft.context) if row else None,
        )
        chunks.append(
            Chunk.model_validate(
                {
                    **fields,
                    "chunk_id": chunk_id(doc_id, draft.locator),
                    "content_hash": digest,
                    "terms": terms,
                }
            )
        )
    return chunks
