"""Terms as the chunk index's ``english`` analyzer makes them, so Python and the engine agree.

The chunk index analyses ``text`` and ``context`` with Elasticsearch's
built-in ``english`` analyzer: the standard tokenizer, the English possessive
filter, lower-casing, the English stop words and the Porter stemmer. Scoring
counts terms the same way, so a query for "liable" matches "liability" here
exactly when it does in the engine, and the engine's document frequencies
(which ``esbubble.store.retrieve`` fetches per analysed term) apply to the
terms Python counts. ``tests/test_analysis.py`` compares the two on real
sentences through the engine's ``_analyze`` API.

Stemming is Snowball's ``porter`` algorithm (the published Porter stemmer)
with the two departures of Porter's own reference implementation that
Lucene's ``PorterStemmer`` keeps: ``-bli`` becomes ``-ble`` (the paper has
only ``-abli``) and ``-logi`` becomes ``-log`` ("technology" → "technolog").

A chunk also holds the words inside its identifiers (``identifier_parts``:
``high_growth_count`` holds high, growth and count), which ingest writes to
the fields ``text_parts`` and ``context_parts`` (``parts_text``), analysed by
the same ``english`` analyzer; ``analyze_indexed`` is every term the index
holds for a text, ``analyze`` how a query is read.

The tokenizer follows the word-boundary rules of Unicode's UAX #29 that
matter for text: letters and digits form words, ``_`` joins, MidLetter
(``:``, ``·``, …) joins two letters, MidNum (``,``, ``;``, ``⁄``, …) two
digits, MidNumLet and the apostrophe (``.``, ``'``, ``’``, ``‘``, …) either,
and every ideograph is a word of its own.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import snowballstemmer

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (Elasticsearch's ``_english_``).
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
        "this", "to", "was", "will", "with",
    )
)  # fmt: skip

# Ideographs and kana are single-character words in the standard tokenizer, and so are the
# pictographic symbols it emits as emoji tokens (© and ® are the ones documents hold).
_IDEOGRAPHIC = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\u00a9\u00ae\u2194-\u2199"
)
# Unicode's "other numbers" (category No: superscript and subscript digits, vulgar fractions such
# as ½, circled numbers) are not word characters to the standard tokenizer (UAX #29 counts only
# decimal digits as Numeric), though Python's ``\w`` matches them. These are every No character
# of the Basic Multilingual Plane.
_OTHER_NUMBERS = (
    "\u00b2\u00b3\u00b9\u00bc-\u00be\u09f4-\u09f9\u0b72-\u0b77\u0bf0-\u0bf2\u0c78-\u0c7e"
    "\u0d58-\u0d5e\u0d70-\u0d78\u0f2a-\u0f33\u1369-\u137c\u17f0-\u17f9\u19da\u2070-\u209f"
    "\u2150-\u215f\u2189\u2460-\u249b\u24ea-\u24ff\u2776-\u2793\u2cfd\u3192-\u3195"
    "\u3220-\u3229\u3248-\u324f\u3251-\u325f\u3280-\u3289\u32b1-\u32bf\ua830-\ua835"
)
_WORD_CHAR = rf"[^\W{_IDEOGRAPHIC}{_OTHER_NUMBERS}]"
# A run of word characters with single joiners inside; which joiners really join is decided below.
# UAX #29's word-joining punctuation: MidLetter joins letters, MidNum digits, MidNumLet and the
# apostrophe (Single_Quote) either.
_MID_LETTER = ":\u00b7\u0387\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM = ",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
_MID_NUM_LET = ".'\u2018\u2019\u2024\ufe52\uff07\uff0e"
_CANDIDATE = re.compile(
    rf"{_WORD_CHAR}+(?:[{_MID_LETTER}{_MID_NUM}{_MID_NUM_LET}]{_WORD_CHAR}+)*|[{_IDEOGRAPHIC}]"
)
_HAS_ALNUM = re.compile(rf"[^\W_]|[{_IDEOGRAPHIC}]")
_JOINER = re.compile(f"[{_MID_LETTER}{_MID_NUM}{_MID_NUM_LET}]")
_LETTER_JOINERS = frozenset(_MID_LETTER + _MID_NUM_LET)
_DIGIT_JOINERS = frozenset(_MID_NUM + _MID_NUM_LET)
_POSSESSIVES = ("'s", "’s", "'S", "’S")


def _split_at_false_joiners(run: str) -> list[str]:
    """Cut a candidate run where its joiner does not sit between two letters or two digits."""
    if not _JOINER.search(run):
        return [run] if _HAS_ALNUM.search(run) else []
    words: list[str] = []
    start = 0
    for match in _JOINER.finditer(run):
        at = match.start()
        before, after, joiner = run[at - 1], run[at + 1], run[at]
        letters = before.isalpha() and after.isalpha() and joiner in _LETTER_JOINERS
        digits = before.isdigit() and after.isdigit() and joiner in _DIGIT_JOINERS
        if not (letters or digits):
            words.append(run[start:at])
            start = at + 1
    words.append(run[start:])
    return [word for word in words if _HAS_ALNUM.search(word)]


def standard_tokens(text: str) -> list[str]:
    """The standard tokenizer's words of ``text``, in order, case kept."""
    words: list[str] = []
    for match in _CANDIDATE.finditer(text):
        run = match.group()
        if run.isalnum():  # most words: no joiner to judge, and not only underscores
            words.append(run)
        else:
            words += _split_at_false_joiners(run)
    return words


def distinct_words(text: str) -> list[str]:
    """The distinct words of ``text`` as the standard tokenizer cuts them, lower-cased, sorted.

    The redundancy gate's words under ``bm25``: unlike the paper's tokens, a decimal number ("65.2"),
    a grouped one ("1,234") or a version ("v2.0") stays one word, so two table rows of a numeric
    series do not look alike just because their values share digits on either side of the point.
    """
    return sorted({token.lower() for token in standard_tokens(text)})


class _PerThread(threading.local):
    """A Snowball stemmer keeps its word in the instance while it stems: one per thread, or two
    threads stemming at once (``rebubble --workers``) corrupt each other's word."""

    def __init__(self) -> None:
        self.porter: Any = snowballstemmer.stemmer("porter")


_STEMMERS = _PerThread()


def _consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in "aeiou":
        return False
    if char == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem_``."""
    pattern = "".join("c" if _consonant(stem_, i) else "v" for i in range(len(stem_)))
    return len(re.findall("v+c+", pattern))


def _cvc(stem_: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (Porter's *o)."""
    n = len(stem_)
    return (
        n >= 3
        and _consonant(stem_, n - 1)
        and not _consonant(stem_, n - 2)
        and _consonant(stem_, n - 3)
        and stem_[-1] not in "wxy"
    )


def _reference_departures(stemmed: str) -> str:
    """Apply ``-bli → -ble`` and ``-logi → -log`` (then steps 4 and 5) where Snowball's porter did not."""
    if stemmed.endswith("logi") and _measure(stemmed[:-4]) > 0:
        return stemmed[:-1]
    if stemmed.endswith("bli") and not stemmed.endswith("abli") and _measure(stemmed[:-3]) > 0:
        word = stemmed[:-3] + "ble"
        if word.endswith("ible") and _measure(word[:-4]) > 1:
            return word[:-4]
        base = word[:-1]
        m = _measure(base)
        return base if m > 1 or (m == 1 and not _cvc(base)) else word
    return stemmed


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of one lower-case word (words of one or two characters are left alone, as Lucene does)."""
    if len(word) <= 2:
        return word
    return _reference_departures(str(_STEMMERS.porter.stemWord(word)))


def _without_possessive(token: str) -> str:
    """The token less a trailing 's (the English possessive filter)."""
    return token[:-2] if token.endswith(_POSSESSIVES) else token


@lru_cache(maxsize=65536)
def analyzed_term(token: str) -> str | None:
    """The ``english`` analyzer's term of one standard token; None for a stop word (or nothing left)."""
    word = _without_possessive(token).lower()
    return stem(word) if word and word not in ENGLISH_STOP_WORDS else None


def analyze(text: str) -> list[str]:
    """The ``english`` analyzer's terms of ``text``, in order, duplicates kept: how a query is read."""
    return _terms_of(standard_tokens(text))


def _terms_of(tokens: Iterable[str]) -> list[str]:
    """The analysed terms of standard tokens, in order, stop words left out."""
    return [term for term in map(analyzed_term, tokens) if term is not None]


_APOSTROPHES = frozenset("'\u2019")


def _part_char(char: str) -> bool:
    return char in _APOSTROPHES or unicodedata.category(char) == "Ll"


def _upper(char: str) -> bool:
    return unicodedata.category(char) == "Lu"


def identifier_parts(token: str) -> list[str]:
    """The words inside an identifier: every match of ``\\p{Lu}?[\\p{Ll}'’]{2,}|\\p{Lu}{2,}`` in
    ``token``, left to right, except one spanning the whole token (the word itself).

    ``high_growth_count`` gives high, growth, count; ``AgencyLongName`` Agency, Long, Name;
    ``user.mime_type`` user, mime, type; a plain word (``apache``, ``Apache``, ``HTTP``, ``don't``)
    nothing. Letters only: a number (``65.2``) or a code (``BE21``) adds no number of its own.
    """
    if token.isascii() and token.isalpha() and (token[1:].islower() or token.isupper()):
        return []  # the common case: one match spanning the token, or none
    parts: list[str] = []
    at, end = 0, len(token)
    while at < end:
        run = at + 1 if _upper(token[at]) else at
        stop = run
        while stop < end and _part_char(token[stop]):
            stop += 1
        if stop - run < 2:  # not a (capitalised) lower-case word: two or more capitals?
            stop = at
            while stop < end and _upper(token[stop]):
                stop += 1
            if stop - at < 2:
                at += 1
                continue
        if not (at == 0 and stop == end):
            parts.append(token[at:stop])
        at = stop
    return parts


@lru_cache(maxsize=65536)
def _token_parts(token: str) -> tuple[str, ...]:
    """``identifier_parts`` of a standard token, its possessive dropped (tokens recur: read once)."""
    return tuple(identifier_parts(_without_possessive(token)))


def _parts_of(tokens: Iterable[str]) -> str:
    return " ".join(part for token in tokens for part in _token_parts(token))


def parts_text(text: str) -> str:
    """The words inside the identifiers of ``text`` (``identifier_parts`` of each standard token, its
    possessive dropped), space-separated: what a chunk's ``text_parts`` and ``context_parts`` hold,
    so the engine's ``english`` analyzer finds "growth" in a column named ``high_growth_count``."""
    return _parts_of(standard_tokens(text))


def analyze_indexed(text: str) -> list[str]:
    """The terms the chunk index holds for ``text``: its ``english`` terms (``analyze``), then those of
    the words inside its identifiers (``parts_text``), duplicates kept."""
    tokens = standard_tokens(text)
    terms = _terms_of(tokens)
    parts = _parts_of(tokens)
    return terms + analyze(parts) if parts else terms


def analyzed_counts(text: str) -> dict[str, int]:
    """How often each term the chunk index holds for ``text`` occurs in it (``analyze_indexed``), keys
    sorted."""
    return dict(sorted(Counter(analyze_indexed(text)).items()))
