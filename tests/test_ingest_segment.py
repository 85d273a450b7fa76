"""Token-length splitting: every piece fits and no text is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.core.tokens import count_tokens
from esbubble.ingest.segment import normalise_space, segment_text, split_sentences

words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
)
sentences = st.lists(words, min_size=1, max_size=12).map(lambda ws: " ".join(ws) + ".")


def test_split_sentences_keeps_punctuation() -> None:
    assert split_sentences("One.  Two!\nThree? Four") == ["One.", "Two!", "Three?", "Four"]


def test_no_sentence_ends_at_an_abbreviation_or_before_a_lower_case_word() -> None:
    text = "NIST SP 800-53 Rev. 5 FedRAMP High. Use a salt, e.g. the nonce. See (Fig. 3) below. Done."
    assert split_sentences(text) == [
        "NIST SP 800-53 Rev. 5 FedRAMP High.",
        "Use a salt, e.g. the nonce.",
        "See (Fig. 3) below.",
        "Done.",
    ]


def test_over_long_word_is_cut_between_characters() -> None:
    pieces = segment_text("x" * 500 + " end.", 8)
    assert all(count_tokens(p) <= 8 for p in pieces)
    assert "".join(pieces).replace(" ", "") == "x" * 500 + "end."


@settings(max_examples=60, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=20), st.integers(min_value=4, max_value=60))
def test_every_piece_fits_and_nothing_is_lost(parts: list[str], max_tokens: int) -> None:
    text = " ".join(parts)
    pieces = segment_text(text, max_tokens)
    assert all(0 < count_tokens(p) <= max_tokens for p in pieces)
    # Pieces are cut at spaces, or inside a word only when it alone is too long: no character is lost.
    assert "".join(pieces).replace(" ", "") == normalise_space(text).replace(" ", "")


@settings(max_examples=30, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=10))
def test_text_that_fits_is_one_piece(parts: list[str]) -> None:
    text = normalise_space(" ".join(parts))
    assert segment_text(text, count_tokens(text) + 1) == ([text] if text else [])


def test_a_fragment_before_a_sentence_too_long_for_a_piece_leads_it() -> None:
    """A table's caption before its rows, which a PDF gives as one long "sentence": the caption goes
    with the rows' first piece, not alone (``Table 5.`` was a chunk of its own); a sentence of a
    quarter of the limit or more stays a piece of its own."""
    rows = " ".join(f"sbi_call_{n} 0.1 {n} 0x0{n} N/A" for n in range(40))
    pieces = segment_text(f"Table 5. Legacy Function List {rows}", 60)
    assert pieces[0].startswith("Table 5. Legacy Function List sbi_call_0")
    assert all(count_tokens(piece, "o200k_base") <= 60 for piece in pieces)
    intro = "The legacy calls are listed below, each with the extension that replaces it now."
    pieces = segment_text(f"{intro} Function Name SBI Version {rows}", 60)
    assert pieces[0] == intro
