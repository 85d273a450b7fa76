"""Rows the question names: a table row one of whose cell values the question says.

A reference table names each thing in a cell of its own — ``Term: Processor
Reset``, ``geo_name: ENGLAND``, ``Label: Oslo`` — and a question about that
thing says its name: "the difference between a Power-on Reset and a Processor
Reset", "how many were there in England". Word matching alone cannot tell
the row *about* England from the rows that merely contain the word
(``Greater West of England``, ``England excluding London``): all match the
same facet. A cell value whose analysed words are a contiguous run of the
question's analysed words is named by the question; a row holding one is
about what the question asks, and in the gain order its facet weights count
``1 + named_row`` (``core.select``). Prose has no cells, so only rows are
read. A value without a letter (a year, a count) names nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from esbubble.core.analysis import analyze, analyzed_term, standard_tokens

# How a row's text is written (``ingest.drafts``): ``header: value`` cells joined by ``ROW_JOINER``.
ROW_JOINER = "; "
HEADER_MARK = ": "

_LETTER = re.compile(r"[^\W\d_]")


def row_values(text: str) -> Iterator[str]:
    """The cell values of a row's ``text``: each cell's text after its header (all of it when it has
    none)."""
    for cell in text.split(ROW_JOINER):
        header, mark, value = cell.partition(HEADER_MARK)
        yield value if mark else header


def _runs_in(terms: Sequence[str], run: Sequence[str]) -> bool:
    size = len(run)
    return any(terms[start : start + size] == run for start in range(len(terms) - size + 1))


class NamedRows:
    """The question's analysed words, and which cell value of a row they name."""

    def __init__(self, query: str) -> None:
        self._terms = analyze(query)
        self._known = frozenset(self._terms)
        self._words = len(standard_tokens(query))
        # for this question's rows: token -> its analysed term, cell value -> named or not
        self._seen: dict[str, str | None] = {}
        self._names: dict[str, bool] = {}

    def _term(self, token: str) -> str | None:
        seen = self._seen
        if token not in seen:
            seen[token] = analyzed_term(token)
        return seen[token]

    def value(self, text: str) -> str | None:
        """The first cell value of the row ``text`` that the question names, None if none."""
        if not self._known:
            return None
        names, named = self._names, self._named
        for value in row_values(text):
            found = names.get(value)
            if found is None:
                found = names[value] = named(value)
            if found:
                return value.strip()
        return None

    def _named(self, value: str) -> bool:
        """True when ``value``'s analysed words are a run of the question's."""
        if not _LETTER.search(value):
            return False
        tokens = standard_tokens(value)
        # analysis only drops words, so a value of more words than the question cannot be a run of it
        if len(tokens) > self._words:
            return False
        known, run = self._known, []
        for term in map(self._term, tokens):
            if term is None:
                continue
            if term not in known:
                return False
            run.append(term)
        return bool(run) and _runs_in(self._terms, run)
