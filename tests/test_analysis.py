"""Python's analysed terms equal the engine's ``english`` analyzer's, on real sentences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.core.analysis import (
    _CANDIDATE,
    ENGLISH_STOP_WORDS,
    _split_at_false_joiners,
    analyze,
    analyze_indexed,
    identifier_parts,
    parts_text,
    standard_tokens,
    stem,
)
from esbubble.models import Chunk
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.query import TERM_FIELDS

ROOT = Path(__file__).resolve().parent.parent
# Real prose of several kinds: licences, a specification's text, the sample memo, our own docs.
SOURCES = [
    ROOT / "data" / "realdocs" / "docs" / "mpl-2.0.md",
    ROOT / "data" / "realdocs" / "docs" / "apache-2.0.txt",
    ROOT / "data" / "sample" / "site_memo.md",
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]


def _sentences(limit: int) -> list[str]:
    found: list[str] = []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):
            sentence = " ".join(part.split())
            if len(sentence) > 20 and sentence not in found:
                found.append(sentence)
    return found[:limit]


@pytest.mark.integration
def test_terms_equal_the_engines_english_analyzer_on_real_sentences(store: Store) -> None:
    sentences = _sentences(400)
    assert len(sentences) >= 300
    mismatches = []
    for sentence in sentences:
        engine = [
            t["token"] for t in store.client.indices.analyze(analyzer="english", text=sentence)["tokens"]
        ]
        if engine != analyze(sentence):
            mismatches.append((sentence, engine, analyze(sentence)))
    assert mismatches == []


def test_possessives_stop_words_and_stems() -> None:
    assert analyze("The Contributor's liability and warranties") == ["contributor", "liabil", "warranti"]
    assert analyze("such THEIR they") == []
    assert {"the", "and", "such", "their"} <= ENGLISH_STOP_WORDS


def test_porter_departures_that_lucene_keeps() -> None:
    """-bli → -ble and -logi → -log, as Porter's reference implementation (and Lucene) do."""
    assert [stem(w) for w in ("possibly", "legibly", "technology", "probably")] == [
        "possibl",
        "legibl",
        "technolog",
        "probabl",
    ]


def test_standard_tokenizer_joins_only_between_letters_or_digits() -> None:
    assert standard_tokens("v1.2 3,000 U.S.A e-mail foo:bar a.1 don't __ x_y") == [
        "v1.2",
        "3,000",
        "U.S.A",
        "e",
        "mail",
        "foo:bar",
        "a",
        "1",
        "don't",
        "x_y",
    ]


def test_other_numbers_are_not_words() -> None:
    """Fractions, superscripts and circled numbers (Unicode category No) are dropped, as UAX #29 does."""
    assert analyze("between ½ and 2: ① x² ¼ inch") == ["between", "2", "x", "inch"]


def test_every_other_number_of_the_basic_plane_is_excluded() -> None:
    import unicodedata

    others = [chr(c) for c in range(0x10000) if unicodedata.category(chr(c)) == "No"]
    assert others
    assert [c for c in others if standard_tokens(f"a{c}b") != ["a", "b"]] == []


def test_stemming_from_many_threads_at_once_gives_each_word_its_own_stem() -> None:
    """rebubble --workers stems in threads; one shared Snowball stemmer mixed their words up
    (an IndexError inside the stemmer, or another word's stem)."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    words = [
        f"{stem_}{n}{suffix}"
        for n in range(300)
        for stem_ in ("connect", "warrant", "licens")
        for suffix in ("ing", "ed", "ations", "ability", "ively", "fulness")
    ]
    expected = {word: stem(word) for word in words}
    stem.cache_clear()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, so a shared stemmer shows
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(stem, words, chunksize=1))
    finally:
        sys.setswitchinterval(interval)
    assert dict(zip(words, got, strict=True)) == expected


def test_uax29_joiners_beyond_ascii_punctuation() -> None:
    """MidLetter (·, ‧) joins letters, MidNum (⁄, ，) digits, MidNumLet (‘, ․, ．) either: ρ_b·T_B is one
    word to the engine's standard tokenizer, as it is here."""
    assert standard_tokens("ρ_b·T_B don‘t x․y a．b 3⁄4 1，2 1·2 x,y") == [
        "ρ_b·T_B",
        "don‘t",
        "x․y",
        "a．b",
        "3⁄4",
        "1，2",
        "1",
        "2",
        "x",
        "y",
    ]


def test_the_words_inside_an_identifier_are_its_parts() -> None:
    assert identifier_parts("high_growth_count") == ["high", "growth", "count"]
    assert identifier_parts("AgencyLongName") == ["Agency", "Long", "Name"]
    assert identifier_parts("user.mime_type") == ["user", "mime", "type"]
    assert identifier_parts("INTENT_ABSOLUTE_COLORIMETRIC") == ["INTENT", "ABSOLUTE", "COLORIMETRIC"]
    assert identifier_parts("GitHub") == ["Git", "Hub"]
    assert identifier_parts("active_10plus_count") == ["active", "plus", "count"]
    # a word, a number, a code or an abbreviation is one term, as before
    for word in ("apache", "Apache", "HTTP", "don't", "isn’t", "65.2", "e.g", "Ελληνικά"):
        assert identifier_parts(word) == [], word
    assert identifier_parts("NUTS_ID") == ["NUTS", "ID"]
    assert identifier_parts("BE21") == ["BE"]  # a code's letters (here a stop word once lower-cased)
    assert parts_text("The GitHub's column high_growth_count, and 65.2") == "Git Hub high growth count"
    assert analyze_indexed("high_growth_count: 45") == ["high_growth_count", "45", "high", "growth", "count"]
    assert analyze("high_growth_count: 45") == ["high_growth_count", "45"]  # a query is read as before


@given(st.text(alphabet=st.sampled_from("aZé_.'9QÉx"), min_size=1, max_size=12))
def test_identifier_parts_are_pieces_of_the_token_in_order_never_the_whole(token: str) -> None:
    parts = identifier_parts(token)
    at = 0
    for part in parts:
        found = token.find(part, at)
        assert found >= 0 and len(part) >= 2
        at = found + len(part)
    assert token not in parts
    if token.isalpha() and token.islower():
        assert parts == []


@pytest.mark.integration
def test_the_chunk_index_holds_exactly_the_terms_python_counts_for_identifiers(store: Store) -> None:
    """Rows and prose with identifiers from the real-document sets: the engine holds every term of
    the words inside a chunk's identifiers, and nothing Python does not count. (osmem indexes a few
    words its ``_analyze`` keeps, "from" and "than", as stop words: ``TermStats.unindexed``.)"""
    texts = [
        "Local authority: Cheltenham; high_growth_count: 45; active_10plus_count: 620; rate_pct: 7.26",
        "AgencyLongName: BACH Banque de France; AgencyID: BACH",
        "The user.mime_type extended attribute is used by GitHub's tools and READMEs.",
        "INTENT_SATURATION 2 INTENT_ABSOLUTE_COLORIMETRIC 3",
        "Derive exceptions from Exception rather than BaseException (XMLHttpRequest, don't).",
    ]
    chunks = [
        Chunk(
            chunk_id=f"ids:{n}",
            doc_id="ids",
            source_type="text",
            section="S",
            bucket="S",
            position=n,
            token_count=20,
            content_hash=f"h{n}",
            text=text,
            compare_text=text,
        )
        for n, text in enumerate(texts)
    ]
    index_chunks(store, chunks)
    for chunk in chunks:
        vectors = store.client.termvectors(
            index=store.names.chunks, id=chunk.chunk_id, fields=["text", "text_parts"]
        ).body["term_vectors"]
        engine = {term for field in vectors.values() for term in field["terms"]}
        python = set(analyze_indexed(chunk.text))
        assert engine <= python, chunk.text
        parts = set(analyze(parts_text(chunk.text)))
        assert parts and parts <= engine, chunk.text
        for term in parts:
            query = {"bool": {"should": [{"term": {field: term}} for field in TERM_FIELDS]}}
            hits = store.client.search(index=store.names.chunks, query=query, size=10).body["hits"]["hits"]
            assert chunk.chunk_id in {hit["_id"] for hit in hits}, term


# Letters, digits and ideographs; every kind of joiner; underscores, spaces and other punctuation.
_TOKEN_CHARS = "aZé9٣中_ .,:;'’·-/\u0301"


@given(st.text(alphabet=st.sampled_from(_TOKEN_CHARS), max_size=40))
def test_words_without_a_joiner_are_taken_whole_as_the_joiner_rules_would(text: str) -> None:
    """``standard_tokens`` skips the joiner rules for a run of letters and digits: the same words."""
    judged = [word for match in _CANDIDATE.finditer(text) for word in _split_at_false_joiners(match.group())]
    assert standard_tokens(text) == judged
