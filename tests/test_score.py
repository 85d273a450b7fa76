"""Scoring, eq. 5–8: tf, prior, length penalty, θ and the selection order."""

from __future__ import annotations

import pytest
from factories import paper_config, text_candidate

from esbubble.config import PriorsConfig
from esbubble.core.score import (
    contains_phrase,
    length_penalty,
    resolve_theta,
    score_candidates,
    structural_prior,
    term_frequency,
)
from esbubble.models import Candidate, Chunk
from esbubble.text import query_terms, term_counts, tokenize


def _candidate(chunk_id: str, text: str, *, section: str = "S", tokens: int = 10) -> Candidate:
    return text_candidate(chunk_id, section, text, tokens)


def test_tf_counts_every_occurrence_of_each_distinct_query_term() -> None:
    terms = query_terms("the warranty warranty of the membrane")
    assert terms == ["warranty", "membrane"]
    counts = term_counts("Membrane warranty: the membrane is under warranty, warranty void.")
    assert term_frequency(terms, counts) == 5


def test_tf_ignores_stop_words_and_case() -> None:
    terms = query_terms("What is THE Slab?")
    assert term_frequency(terms, term_counts("the slab, the SLAB and the rest")) == 2


def test_multi_word_keyword_needs_the_token_sequence() -> None:
    assert contains_phrase(tokenize("Supply bitumen membrane now"), ["bitumen", "membrane"])
    assert not contains_phrase(tokenize("membrane of bitumen"), ["bitumen", "membrane"])
    assert not contains_phrase(tokenize("bitumen"), ["bitumen", "membrane"])
    assert not contains_phrase(tokenize("anything"), [])


def test_prior_is_section_then_bucket_then_zero_plus_keyword_boosts() -> None:
    priors = PriorsConfig(
        sections={"Scope of Works": 6.0, "Below Grade": 0.5}, keywords={"tanking": 1.0, "sump pump": 0.25}
    )
    text = "tanking to sump pump pit, tanking again"
    counts = term_counts(text)
    assert structural_prior("Scope of Works", "Below Grade", counts, text, priors) == 6.0 + 1.0 + 0.25
    assert structural_prior("Below Grade Works", "Below Grade", counts, text, priors) == 0.5 + 1.25
    assert structural_prior("Other", "Other", term_counts("nothing here"), "nothing here", priors) == 0.0
    # Both words of "sump pump" occur, but not in sequence: no boost.
    apart = "pump to the sump"
    assert structural_prior("Other", "Other", term_counts(apart), apart, priors) == 0.0


def test_length_penalty_halves_at_theta() -> None:
    assert length_penalty(50, 50.0) == 0.5
    assert length_penalty(0, 50.0) == 1.0
    assert length_penalty(150, 50.0) == 0.25


@pytest.mark.parametrize(
    ("counts", "norm", "theta"),
    [([10, 30, 20], "median", 20.0), ([10, 20, 30, 40], "median", 25.0), ([0, 0, 5], "median", 1.0),
     ([], "median", 1.0), ([10, 30], 7.5, 7.5)],
)  # fmt: skip
def test_theta_is_the_median_or_the_fixed_number(counts: list[int], norm: str | float, theta: float) -> None:
    candidates = [_candidate(f"c{i}", "x", tokens=n) for i, n in enumerate(counts)]
    assert resolve_theta(candidates, norm) == theta  # type: ignore[arg-type]


def test_score_is_tf_plus_prior_times_penalty_in_descending_order() -> None:
    config = paper_config({"priors": {"sections": {"A": 2.0, "B": -1.0}}, "bubble": {"length_norm": 10.0}})
    candidates = [
        _candidate("b1", "slab slab slab", section="B", tokens=10),  # (3 - 1) * 0.5 = 1.0
        _candidate("a1", "slab", section="A", tokens=30),  # (1 + 2) * 0.25 = 0.75
        _candidate("a0", "slab slab", section="A", tokens=10),  # (2 + 2) * 0.5 = 2.0
    ]
    scored = score_candidates("slab", candidates, config).scored
    assert [s.chunk_id for s in scored] == ["a0", "b1", "a1"]
    assert [s.score_final for s in scored] == [2.0, 1.0, 0.75]
    assert [s.score_raw for s in scored] == [4.0, 2.0, 3.0]


def test_equal_scores_are_ordered_by_chunk_id() -> None:
    config = paper_config({})
    candidates = [_candidate(cid, "same text") for cid in ("c", "a", "b")]
    assert [s.chunk_id for s in score_candidates("text", candidates, config).scored] == ["a", "b", "c"]


def test_without_priors_the_boost_is_zero() -> None:
    config = paper_config({"priors": {"sections": {"S": 5.0}, "keywords": {"slab": 1.0}}})
    scored = score_candidates("slab", [_candidate("x", "slab")], config, use_priors=False).scored
    assert (scored[0].boost, scored[0].score_raw) == (0.0, 1.0)


def test_words_come_from_compare_text_not_display_text() -> None:
    chunk = Chunk(
        chunk_id="row2", doc_id="d", source_type="xlsx", section="Rates", bucket="Rates", position=2,
        token_count=8, content_hash="h", text="Item: membrane | Rate: 42", compare_text="membrane 42",
    )  # fmt: skip
    scored = score_candidates("rate", [Candidate(chunk=chunk)], paper_config({})).scored
    assert scored[0].words == frozenset({"membrane", "42"})
    assert scored[0].tf == 1.0


def test_section_map_decides_the_bucket() -> None:
    config = paper_config({"buckets": {"map": {"Below Grade Works": "Below Grade"}}})
    scored = score_candidates("x", [_candidate("a", "x", section="Below Grade Works")], config).scored
    assert scored[0].bucket == "Below Grade"
