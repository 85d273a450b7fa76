"""No fragments: short paragraphs join their neighbour in the same section.

A line such as "The following code:", a lone heading-like line or a
two-word list item says little alone, and as a chunk of its own it wins on
length and crowds a bubble. Before paragraphs are cut into chunks, one
under ``min_chunk_tokens`` joins the next paragraph of the same section
(repeatedly, until the joined text is long enough); one with no next
paragraph there joins the previous one. A lead-in ending with a colon
("The following code:") joins the next paragraph whatever its length. A short
``Label: value`` line (a command option's "Default: sphere", a field's "Type:
String") states a fact of the paragraph before it, and joins that one. The
default of 12 tokens was read off real documents: below it are labels,
lead-ins, page furniture and YAML comments; from about 14 tokens on, most
paragraphs are whole sentences that state a fact on their own. Table rows are records and never
join; a paragraph next to a table joins only across prose. A section whose
only text is a fragment keeps it: there is nothing to join it to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from esbubble.core.tokens import count_tokens
from esbubble.ingest.drafts import Draft, Paragraph, prose_drafts
from esbubble.ingest.options import IngestOptions

# A short ``Label: value`` line (``Default: sphere``, ``Type: String``) states a fact of what it follows.
_LABEL_VALUE = re.compile(r"[^\W\d_][\w ()/-]{0,30}: \S(?!.*:\s*$)", re.DOTALL)
# A reader's output in document order: paragraphs, and table rows already drafted.
Block = Paragraph | tuple[Draft, ...]


def _same_place(first: Paragraph, second: Paragraph) -> bool:
    return first.scope == second.scope and first.section == second.section


def join(first: Paragraph, second: Paragraph) -> Paragraph:
    """``first`` then ``second`` as one paragraph; the locator keeps both numbers."""
    lines = None
    if first.lines is not None and second.lines is not None:
        lines = (first.lines[0], second.lines[1])
    return replace(
        first,
        numbers=first.numbers + second.numbers,
        text=f"{first.text}\n{second.text}",
        lines=lines or first.lines or second.lines,
    )


def join_fragments(blocks: Sequence[Block], min_tokens: int, encoding: str) -> list[Block]:
    """``blocks`` with every paragraph under ``min_tokens`` joined to a neighbour (see the module doc)."""
    if min_tokens <= 0:
        return list(blocks)

    def short(paragraph: Paragraph) -> bool:
        return count_tokens(paragraph.text, encoding) < min_tokens

    def leads_in(paragraph: Paragraph) -> bool:
        return paragraph.text.rstrip().endswith(":") or short(paragraph)

    def closes(paragraph: Paragraph) -> bool:
        return short(paragraph) and _LABEL_VALUE.match(paragraph.text) is not None

    forward: list[Block] = []
    for block in blocks:
        previous = forward[-1] if forward else None
        if (
            isinstance(previous, Paragraph)
            and isinstance(block, Paragraph)
            and _same_place(previous, block)
            and (leads_in(previous) or closes(block))
        ):
            forward[-1] = join(previous, block)
        else:
            forward.append(block)
    joined: list[Block] = []
    for block in forward:
        previous = joined[-1] if joined else None
        if (
            isinstance(previous, Paragraph)
            and isinstance(block, Paragraph)
            and _same_place(previous, block)
            and short(block)
        ):
            joined[-1] = join(previous, block)
        else:
            joined.append(block)
    return joined


def block_drafts(blocks: Sequence[Block], options: IngestOptions, *, default_bucket: str) -> list[Draft]:
    """Drafts of a reader's blocks: fragments joined, long paragraphs cut, rows as they are."""
    drafts: list[Draft] = []
    for block in join_fragments(blocks, options.min_chunk_tokens, options.encoding):
        if isinstance(block, Paragraph):
            drafts.extend(prose_drafts(block, options, default_bucket=default_bucket))
        else:
            drafts.extend(block)
    return drafts
