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

A row that refers to a thing by its code names it too: ingest writes the
label another table gives a code into the context of the rows holding it
(``ingest.links``: the *Metropolitan* sheet's ``NUTS_ID: NO081; METRO: Y``
gets ``NO081 = Oslo``), so a question naming Oslo names that row as well.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from esbubble.core.analysis import analyze, analyzed_term, standard_tokens

# How a row's text is written (``ingest.drafts``): ``header: value`` cells joined by ``ROW_JOINER``.
ROW_JOINER = "; "
HEADER_MARK = ": "
# How a chunk's context is written (``ingest.drafts``, ``ingest.xlsx``): its parts (place, a table's
# column headers, a row's links) joined by ``CONTEXT_PART``; a link is ``code = label``, links joined
# by ``ROW_JOINER``.
CONTEXT_PART = " | "
LINK_MARK = " = "

_LETTER = re.compile(r"[^\W\d_]")
# A code: one token of letters and digits (dots, dashes, underscores inside) with at least one of
# each. A number alone ("4", a row order) is none, nor is a word: "SL" is Slovenian in a workbook's
# language list and Sierra Leone in its country list, and "ENGLAND" is a name.
_CODE = re.compile(r"(?=[\w.\-]*[A-Za-z])(?=[\w.\-]*[0-9])[A-Za-z0-9][\w.\-]{2,23}", re.ASCII)


def is_code(value: str) -> bool:
    """True when ``value`` is a code (``BE100``, ``E92000001``), not a word or a number."""
    return _CODE.fullmatch(value) is not None


def cell_values(text: str, context: str = "") -> list[str]:
    """A row's cell values — each cell's text after its header's mark, all of it when it has none —
    then the labels its ``context`` links its codes to."""
    cells = (cell.partition(HEADER_MARK) for cell in text.split(ROW_JOINER))
    values = [value if mark else header for header, mark, value in cells]
    return values + link_labels(context) if LINK_MARK in context else values


def cell_terms(text: str, context: str = "") -> list[list[str]]:
    """The analysed words of each of ``cell_values`` (none for a value without a letter): what ingest
    stores with a row's terms, so a bubble reads its names without analysing its text."""
    return [analyze(value) if _LETTER.search(value) else [] for value in cell_values(text, context)]


def link_labels(context: str) -> list[str]:
    """The labels a row's ``context`` gives the codes it holds (its last part's ``code = label``
    links); none when that part is not links (column headers may hold " = " too)."""
    last = context.rsplit(CONTEXT_PART, 1)[-1]
    notes = (note.partition(LINK_MARK) for note in last.split(ROW_JOINER))
    return [label for code, mark, label in notes if mark and is_code(code)]


def _runs_in(terms: Sequence[str], run: Sequence[str]) -> bool:
    size = len(run)
    return any(terms[start : start + size] == run for start in range(len(terms) - size + 1))


class NamedRows:
    """The question's analysed words, and which cell value of a row they name."""

    def __init__(self, query: str) -> None:
        self._terms = analyze(query)
        self._known = frozenset(self._terms)
        # for this question's rows: token -> its analysed term, cell value -> named or not
        self._seen: dict[str, str | None] = {}
        self._names: dict[str, bool] = {}
        self._starts: dict[str, bool] = {}  # a value's first word -> may it start a name

    def _term(self, token: str) -> str | None:
        seen = self._seen
        if token not in seen:
            seen[token] = analyzed_term(token)
        return seen[token]

    def _may_start(self, word: str) -> bool:
        """False when a term of ``word`` (one whitespace-free word) is not a stop word and not the
        question's."""
        starts = self._starts
        found = starts.get(word)
        if found is None:
            known = self._known
            found = starts[word] = all(
                term is None or term in known for term in map(self._term, standard_tokens(word))
            )
        return found

    def value(self, text: str, context: str = "", cells: Sequence[Sequence[str]] | None = None) -> str | None:
        """The first cell value of the row ``text`` that the question names, else the first label its
        ``context`` links one of its codes to that the question names; None if none. ``cells``: the
        row's ``cell_terms`` as ingest stored them (read from ``text`` and ``context`` when None)."""
        if not self._known:
            return None
        if cells is not None:
            return self._stored(text, context, cells)
        names, named = self._names, self._named
        for value in cell_values(text, context):
            found = names.get(value)
            if found is None:
                found = names[value] = named(value)
            if found:
                return value.strip()
        return None

    def _stored(self, text: str, context: str, cells: Sequence[Sequence[str]]) -> str | None:
        known, terms = self._known, self._terms
        for index, run in enumerate(cells):
            if run and all(term in known for term in run) and _runs_in(terms, run):
                values = cell_values(text, context)
                # stored with this text and context; a record edited by hand may not match them
                return values[index].strip() if index < len(values) else None
        return None

    def _named(self, value: str) -> bool:
        """True when ``value``'s analysed words are a run of the question's."""
        if not _LETTER.search(value):
            return False
        # most values fail on their first word: whitespace always ends a token, so the first word's
        # tokens are the value's first tokens, and a word the question lacks rules the value out
        first = value.split(None, 1)
        if first and not self._may_start(first[0]):
            return False
        known, run = self._known, []
        for term in map(self._term, standard_tokens(value)):
            if term is None:
                continue
            if term not in known:
                return False
            run.append(term)
        return bool(run) and _runs_in(self._terms, run)
