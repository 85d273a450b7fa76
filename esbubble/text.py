"""Text normalisation shared by scoring, the redundancy gate and repair.

``T(q)``: NFKC, lower-case, split on non-alphanumerics, stop words removed.
The same normalisation gives ``words(x)`` for the overlap of eq. 12.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from esbubble.errors import InputError

_TOKEN = re.compile(r"[^\W_]+")

# A small English list: articles, prepositions, pronouns and auxiliaries that
# carry no evidence. Profiles may replace it (``bubble.stop_words``).
DEFAULT_STOP_WORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was",
    "were", "will", "with", "what", "which", "who", "how", "when", "where", "do",
    "does", "there", "their", "these", "those", "all", "any", "me", "my", "our",
    "we", "you", "your", "i", "into", "about", "than", "then", "so", "if", "not", "no",
)  # fmt: skip


# For ASCII text NFKC changes nothing and a token is a run of [a-z0-9]: mapping every other
# ASCII character to a space and splitting gives the same tokens about three times faster.
_ASCII_SEPARATORS = str.maketrans({chr(i): " " for i in range(128) if not chr(i).isalnum()})


def tokenize(text: str) -> list[str]:
    """Every normalised token of ``text``, in order, duplicates kept."""
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


# Bump when ``tokenize`` or ``esbubble.core.analysis.analyze`` changes what it returns, or the stored
# terms change shape: chunks whose stored terms carry another version are scored from their text
# until they are re-ingested. Version 2 added the analysed ``stems`` and ``context_stems``; version 3
# follows UAX #29 for other numbers (½) and the joiners beyond ASCII (·, ‘); version 4 added
# ``words``, the compare text's words as the standard tokenizer cuts them; version 5 counts the words
# inside identifiers (``high_growth_count``: high, growth, count) as the index analyzer does.
TERMS_VERSION = 5


def term_counts(text: str) -> dict[str, int]:
    """How often each normalised token occurs in ``text`` (stop words included), keys sorted."""
    return dict(sorted(Counter(tokenize(text)).items()))


def distinct_terms(text: str) -> list[str]:
    """The distinct normalised tokens of ``text`` (stop words included), sorted."""
    return sorted(set(tokenize(text)))


def query_terms(query: str, stop_words: Iterable[str] = DEFAULT_STOP_WORDS) -> list[str]:
    """``T(q)``: the distinct non-stop-word terms of the query, in first-seen order."""
    stops = frozenset(stop_words)
    seen: dict[str, None] = {}
    for token in tokenize(query):
        if token not in stops:
            seen.setdefault(token, None)
    return list(seen)


def word_set(text: str, stop_words: Iterable[str] = DEFAULT_STOP_WORDS) -> frozenset[str]:
    """``words(x)``: the set of distinct non-stop-word tokens of ``text``."""
    stops = frozenset(stop_words)
    return frozenset(t for t in tokenize(text) if t not in stops)


# A question, not a document: longer queries cost the engine and the gates time and memory that
# grow with their length (100,000 characters took over a minute and gigabytes).
MAX_QUERY_CHARS = 4096


def query_length_problem(query: str) -> str | None:
    """Why ``query`` is too long to run, or None."""
    if len(query) <= MAX_QUERY_CHARS:
        return None
    return f"the query has {len(query):,} characters, more than the limit of {MAX_QUERY_CHARS:,}"


def check_query_text(query: str) -> str:
    """Reject a query that is too long (``MAX_QUERY_CHARS``) or not encodable text (lone surrogates,
    e.g. undecodable bytes on a command line), before it reaches the engine, hashing or the JSON
    encoder; raises ``InputError``."""
    too_long = query_length_problem(query)
    if too_long:
        raise InputError(too_long, hint="shorten the question; put documents in the index, not the query")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(
            f"the query is not valid text (undecodable character at position {error.start})",
            hint="pass the query as UTF-8 text",
        ) from None
    return query


def preview(text: str, width: int = 60) -> str:
    """The first ``width`` characters of ``text`` on one line (whitespace runs become one space)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
