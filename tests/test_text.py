"""Query terms and words(x): one normalisation, and its ASCII fast path agrees with the general one."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.errors import InputError
from esbubble.text import MAX_QUERY_CHARS, check_query_text, query_terms, tokenize, word_set

_GENERAL = re.compile(r"[^\W_]+")


def _general(text: str) -> list[str]:
    return _GENERAL.findall(unicodedata.normalize("NFKC", text).lower())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_fast_path_gives_the_general_tokens(text: str) -> None:
    assert tokenize(text) == _general(text)


@given(st.text())
def test_any_text_gives_the_general_tokens(text: str) -> None:
    assert tokenize(text) == _general(text)


def test_tokens_are_nfkc_lowercase_runs_of_letters_and_digits() -> None:
    assert tokenize("Rate: $68.50/m2 — Ｆｕｌｌ snake_case") == [
        "rate",
        "68",
        "50",
        "m2",
        "full",
        "snake",
        "case",
    ]
    assert tokenize("Étanchéité, 2e") == ["étanchéité", "2e"]


def test_query_terms_are_distinct_in_first_seen_order_without_stop_words() -> None:
    assert query_terms("What is the warranty period of the warranty?") == ["warranty", "period"]
    assert word_set("The membrane and the membrane") == frozenset({"membrane"})


def test_queries_longer_than_the_limit_are_refused_with_their_length() -> None:
    check_query_text("x" * MAX_QUERY_CHARS)
    with pytest.raises(InputError, match="100,000 characters, more than the limit of 4,096"):
        check_query_text("x" * 100_000)
