"""Citation anchors ``[Source N]``: how the assembler writes them and how an answer is checked.

``validate_citations`` is lexical and needs no model: it lists anchors the
prompt never offered, sources the answer never cited, and sentences that
carry no citation, so a caller can reject or flag an answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from esbubble.delivery.assemble import AssembledPrompt

# "[Source 3]", and the list form "[Source 1, 3]" some models write.
_CITATION = re.compile(r"\[Source\s+(\d+(?:\s*,\s*\d+)*)\]", re.IGNORECASE)
# A sentence: text up to a full stop that is followed by a space (so "12.5" stays whole),
# plus any citations written right after the full stop.
_SENTENCE = re.compile(
    r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+[.!?]*(?:[ \t]*\[Source\s+\d+(?:\s*,\s*\d+)*\])*", re.IGNORECASE
)


def anchor(number: int) -> str:
    """The anchor of source ``number`` as it appears in the prompt."""
    return f"[Source {number}]"


def cited_numbers(text: str) -> list[int]:
    """Every source number cited in ``text``, in order of appearance, duplicates kept."""
    numbers: list[int] = []
    for match in _CITATION.finditer(text):
        numbers.extend(int(part) for part in match.group(1).split(","))
    return numbers


def sentences(text: str) -> list[str]:
    """Sentences of ``text``; a citation right after a full stop belongs to the sentence before."""
    found = (m.group(0).strip() for m in _SENTENCE.finditer(text))
    return [s for s in found if s and _CITATION.sub("", s).strip(" .!?")]


class CitationReport(BaseModel):
    """What an answer cites compared with what the prompt offered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cited: list[int]
    unknown: list[int]
    uncited_sources: list[int]
    unsupported_sentences: list[str]

    @property
    def ok(self) -> bool:
        return not (self.unknown or self.unsupported_sentences)


def validate_citations(answer: str, assembled: AssembledPrompt) -> CitationReport:
    """Check ``answer`` against the sources of ``assembled``."""
    offered = {source.number for source in assembled.metadata.sources}
    cited = sorted(set(cited_numbers(answer)))
    return CitationReport(
        cited=cited,
        unknown=[n for n in cited if n not in offered],
        uncited_sources=sorted(offered - set(cited)),
        unsupported_sentences=[s for s in sentences(answer) if not cited_numbers(s)],
    )
