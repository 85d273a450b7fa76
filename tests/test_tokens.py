"""Offline token counts equal tiktoken's published counts."""

from __future__ import annotations

import pytest

from esbubble.core.tokens import SPECS, count_many, count_tokens, get_encoding, parse_ranks
from esbubble.errors import TokenizerError


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        ("hello world", "o200k_base", 2),
        ("hello world", "cl100k_base", 2),
        ("tiktoken is great!", "cl100k_base", 6),
        ("tiktoken is great!", "o200k_base", 6),
        ("", "o200k_base", 0),
    ],
)
def test_known_counts(text: str, encoding: str, expected: int) -> None:
    assert count_tokens(text, encoding) == expected


def test_round_trip_and_known_ids() -> None:
    enc = get_encoding("cl100k_base")
    # tiktoken's README example: "hello world" -> [15339, 1917] in cl100k_base.
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    assert enc.decode(enc.encode_ordinary("Waterproofing — 10 years")) == "Waterproofing — 10 years"


def test_count_many_matches_single() -> None:
    texts = ["Scope of Works: excavation", "Terms & Conditions", "ÄÖÜ 漢字"]
    assert count_many(texts) == [count_tokens(t) for t in texts]


def test_special_token_lookalikes_count_as_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_mismatching_vocabulary_is_an_error() -> None:
    with pytest.raises(TokenizerError, match="SHA-256"):
        parse_ranks(b"aGVsbG8= 0\n", SPECS["o200k_base"])


def test_unknown_encoding_is_an_error() -> None:
    with pytest.raises(TokenizerError, match="unknown encoding"):
        get_encoding("r2d2_base")
