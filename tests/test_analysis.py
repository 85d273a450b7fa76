"""Python's analysed terms equal the engine's ``english`` analyzer's, on real sentences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from esbubble.core.analysis import ENGLISH_STOP_WORDS, analyze, standard_tokens, stem
from esbubble.store.connection import Store

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
