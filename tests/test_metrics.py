"""Per-bubble metrics and their mean over a query set."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from factories import paper_config, text_candidate
from hypothesis import given
from hypothesis import strategies as st

from esbubble.core.bubble import build_bubble
from esbubble.core.metrics import (
    MAX_CEILING_ITEMS,
    BubbleMetrics,
    GoldItems,
    aggregate,
    bubble_metrics,
    gold_recall,
    normalise_evidence,
)
from esbubble.models import Bubble, Candidate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _candidate(chunk_id: str, section: str, text: str, tokens: int) -> Candidate:
    return text_candidate(chunk_id, section, text, tokens)


@pytest.fixture
def bubble() -> Bubble:
    config = paper_config({"bubble": {"token_budget": 100, "length_norm": 10.0, "overlap_threshold": 0.6}})
    candidates = [
        _candidate("a", "Scope", "slab slab slab membrane joint", 10),  # words {slab, membrane, joint}
        _candidate("b", "Scope", "slab slab membrane seal", 10),  # overlap 2/3 ≥ 0.6 → too_redundant
        _candidate("c", "Rates", "slab drain pump pit", 20),  # overlap 1/4 with {a}
        _candidate("d", "Notes", "unrelated words", 5),  # tf 0 → low_relevance
    ]
    return build_bubble("slab", candidates, config, run_id="m", now=NOW)


def test_bubble_metrics(bubble: Bubble) -> None:
    metrics = bubble_metrics(bubble, gold=["a", "b"])
    assert metrics.tokens_used == 30
    assert (metrics.selected, metrics.candidates, metrics.unique_sections) == (2, 4, 2)
    assert metrics.tokens_per_section == {"Scope": 10, "Rates": 20}
    assert metrics.avg_overlap == pytest.approx((0 + 1 / 4) / 2)
    assert metrics.rejected["too_redundant"] == 1
    assert metrics.rejected["low_relevance"] == 1
    assert metrics.rejected_share["too_redundant"] == 0.5
    assert metrics.gold_recall == 0.5


def test_gold_recall_is_none_without_gold(bubble: Bubble) -> None:
    assert bubble_metrics(bubble).gold_recall is None
    assert bubble_metrics(bubble, gold=[]).gold_recall is None


def test_aggregate_means_over_queries(bubble: Bubble) -> None:
    first = bubble_metrics(bubble, gold=["a"])
    second = BubbleMetrics(
        tokens_used=10,
        selected=1,
        candidates=1,
        unique_sections=1,
        avg_overlap=0.0,
        tokens_per_section={"Scope": 10},
        rejected={},
        rejected_share={},
    )
    table = aggregate([first, second])
    assert table.queries == 2
    assert table.tokens_used == 20.0
    assert table.unique_sections == 1.5
    assert table.avg_overlap == pytest.approx(1 / 16)
    assert (table.gold_recall, table.gold_queries) == (1.0, 1)
    assert table.rejected["too_redundant"] == 1
    assert table.rejected_share["low_relevance"] == 0.5


def test_aggregate_of_nothing_is_zero() -> None:
    table = aggregate([])
    assert (table.queries, table.tokens_used, table.gold_recall) == (0, 0.0, None)


CHUNKS = [
    text_candidate("r1", "Terms", '7. Disclaimer of Warranty.\nProvided on an  "AS IS" BASIS', 9).chunk,
    text_candidate("r2", "Rates", "Area: Stroud; Sector: Transport; Emissions: 374.7", 12).chunk,
]


def test_evidence_recall_is_the_share_of_phrases_in_some_chunk_case_and_space_insensitive() -> None:
    evidence = ['on an "as is" basis', "sector: transport;", "Area: Swindon"]
    assert gold_recall(CHUNKS, evidence=evidence) == pytest.approx(2 / 3)
    assert gold_recall(CHUNKS[1:], evidence=evidence) == pytest.approx(1 / 3)
    assert gold_recall([], evidence=evidence) == 0.0


def test_a_phrase_spanning_two_chunks_is_not_found() -> None:
    assert gold_recall(CHUNKS, evidence=["BASIS Area: Stroud"]) == 0.0


def test_gold_ids_and_evidence_count_as_one_pool_and_duplicates_once() -> None:
    assert gold_recall(CHUNKS, gold=["r1", "zz"], evidence=["Stroud", "stroud", "Swindon"]) == pytest.approx(
        2 / 4
    )
    assert gold_recall(CHUNKS, gold=[], evidence=[]) is None


def test_a_gold_items_engine_rank_is_the_best_rank_of_a_candidate_holding_it() -> None:
    # r2 (CHUNKS[1]) holds "stroud" and is ranked 1st; r1 holds it too, is the id "r1" and holds "as is
    # basis", ranked 7th; nothing holds "zz". Items are the ids, then the phrases, each sorted.
    r1 = text_candidate("r1", "Terms", "Area: Stroud, on an AS IS basis", 9).model_copy(update={"es_rank": 7})
    r2 = Candidate(chunk=CHUNKS[1], es_score=5.0, es_rank=1)
    items = GoldItems.of(gold=["zz", "r1"], evidence=["Stroud", "STROUD ", "as is basis"])
    assert (items.ids, items.phrases) == (("r1", "zz"), ("as is basis", "stroud"))
    assert items.engine_ranks([r1, r2]) == (7, None, 7, 1)
    assert items.held_by([r2.chunk]) == (False, False, False, True)
    assert gold_recall([r2.chunk], ["zz", "r1"], ["Stroud", "STROUD ", "as is basis"]) == 1 / 4


def test_bubble_metrics_use_evidence_of_the_selected_chunks(bubble: Bubble) -> None:
    # selected: a ("slab slab slab membrane joint") and c ("slab drain pump pit")
    assert bubble_metrics(
        bubble, evidence=["membrane  JOINT", "drain pump", "unrelated words"]
    ).gold_recall == (pytest.approx(2 / 3))


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4), st.text(max_size=40))
def test_every_phrase_cut_from_a_chunk_is_found(pieces: list[str], prefix: str) -> None:
    text = prefix + " ".join(pieces)
    chunk = text_candidate("h", "S", text, 1).chunk
    phrases = [p for p in pieces if p.strip()]
    if phrases:
        assert gold_recall([chunk], evidence=phrases) == 1.0
    assert normalise_evidence(normalise_evidence(text)) == normalise_evidence(text)


def test_the_budget_ceiling_is_the_most_items_whole_chunks_within_the_budget_hold() -> None:
    items = GoldItems.of(evidence=["alpha", "beta", "gamma"])
    wide = text_candidate("w", "S", "alpha beta gamma", 90)  # all three, but larger than 80
    cheap = [text_candidate("a", "S", "alpha beta", 40), text_candidate("g", "S", "gamma", 40)]
    assert items.budget_ceiling([wide, *cheap], 100) == 3  # the wide chunk alone
    assert items.budget_ceiling([wide, *cheap], 80) == 3  # the two cheap ones
    assert items.budget_ceiling([wide, *cheap], 79) == 2
    assert items.budget_ceiling([wide, *cheap], 39) == 0
    assert items.budget_ceiling([], 100) == 0
    too_many = GoldItems.of(evidence=[f"p{n}" for n in range(MAX_CEILING_ITEMS + 1)])
    with pytest.raises(ValueError, match="exact up to 20"):
        too_many.budget_ceiling([wide], 100)


@given(
    st.lists(st.tuples(st.sets(st.sampled_from("abcd")), st.integers(1, 30)), max_size=7),
    st.integers(0, 60),
)
def test_no_set_of_chunks_within_the_budget_holds_more_than_the_ceiling(
    chunks: list[tuple[set[str], int]], budget: int
) -> None:
    items = GoldItems.of(evidence=[f"item{letter}" for letter in "abcd"])
    candidates = [
        text_candidate(f"c{n}", "S", " ".join(f"item{letter}" for letter in sorted(held)) or "none", tokens)
        for n, (held, tokens) in enumerate(chunks)
    ]
    best = max(
        sum(items.held_by([c.chunk for c in chosen]))
        for size in range(len(candidates) + 1)
        for chosen in itertools.combinations(candidates, size)
        if sum(c.chunk.token_count for c in chosen) <= budget
    )
    assert items.budget_ceiling(candidates, budget) == best
