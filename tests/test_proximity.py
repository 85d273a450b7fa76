"""Term proximity (``core.proximity``): the question's successive word pairs a chunk holds close."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import text_candidate as make_candidate
from hypothesis import given
from hypothesis import strategies as st

from esbubble.config import BubbleConfig
from esbubble.core.analysis import analyze, analyzed_counts
from esbubble.core.bubble import build_bubble
from esbubble.core.proximity import Proximity, pair_name, query_pairs
from esbubble.core.relevance import analysed_query_terms
from esbubble.core.score import scorer_for

NOW = datetime(2026, 11, 29, tzinfo=UTC)
WORDS = ("backup", "strategy", "recovery", "targets", "check", "alpha", "beta", "gamma")


def _near(text: str, query: str, window: int) -> tuple[str, ...]:
    proximity = Proximity(query_pairs(analysed_query_terms(query, ())), window)
    return proximity.near(text, analyzed_counts(text))


def test_a_pair_is_two_successive_analysed_words_of_the_question_once() -> None:
    question = "What should the backup strategy pin down about recovery targets?"
    terms = analysed_query_terms(question, ("what", "should"))
    assert query_pairs(terms)[:2] == (("backup", "strategi"), ("strategi", "pin"))
    assert ("recoveri", "target") in query_pairs(terms)
    assert query_pairs(["a", "b", "a", "b"]) == (("a", "b"), ("b", "a"))
    assert query_pairs(["a", "a"]) == () and query_pairs(["a"]) == ()


def test_words_near_each_other_in_either_order_make_the_pair_near() -> None:
    query = "backup strategy"
    assert _near("Define a backup strategy for every system.", query, 1) == ("backup strategi",)
    assert _near("The strategy for the backup is documented.", query, 1) == ("backup strategi",)
    # stop words are not counted: the two words stand 11 analysed words apart here
    far = "Backup tapes are stored offsite. Each team reviews its long term cloud strategy."
    assert _near(far, query, 10) == ()
    assert _near(far, query, 11) == ("backup strategi",)


def test_a_chunk_without_both_words_of_a_pair_holds_no_pair() -> None:
    assert _near("Backup everything twice.", "backup strategy", 4) == ()
    assert Proximity((), 4).weight(0, 1.0) == 1.0


@given(
    st.lists(st.sampled_from(WORDS), max_size=30),
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.integers(1, 8),
)
def test_near_pairs_are_the_pairs_whose_words_stand_within_the_window(
    text_words: list[str], query_words: list[str], window: int
) -> None:
    """Checked against a brute force over every two positions of the analysed text."""
    text, query = " ".join(text_words), " ".join(query_words)
    pairs = query_pairs(analysed_query_terms(query, ()))
    terms = analyze(text)
    expected = tuple(
        pair_name(pair)
        for pair in pairs
        if any(
            {terms[i], terms[j]} == set(pair) and abs(i - j) <= window
            for i in range(len(terms))
            for j in range(len(terms))
        )
    )
    assert _near(text, query, window) == expected
    proximity = Proximity(pairs, window)
    weight = proximity.weight(len(expected), 2.0)
    assert 1.0 <= weight <= 3.0
    assert weight == (1.0 + 2.0 * len(expected) / len(pairs) if pairs else 1.0)


def test_the_chunk_holding_the_questions_words_together_wins_the_budget() -> None:
    """Two chunks match the same facets equally; the one that also says "recovery targets" together
    enters when there is room for one (without proximity the tie goes by chunk id), and the records
    name the pairs each holds and their weights."""
    together = make_candidate("together", "Backup", "Every backup owner reviews the recovery targets.", 20)
    apart = make_candidate(
        "apart", "Backup", "Recovery of each backup is tested; owners set the targets.", 20
    )
    query = "backup recovery targets"
    config = BubbleConfig().with_overrides(token_budget=25, engine_rank=0.0)
    strength = config.bubble.proximity

    def bubble(config: BubbleConfig) -> dict[str, dict[str, object]]:
        built = build_bubble(query, [apart, together], config, run_id="r", now=NOW)
        return {r["chunk_id"]: dict(r) for r in built.trace}

    on, off = bubble(config), bubble(config.with_overrides(proximity=0.0))
    assert on["together"]["selection_order"] == 1 and on["apart"]["selection_order"] is None
    assert off["apart"]["selection_order"] == 1 and off["together"]["selection_order"] is None
    assert len(query_pairs(analysed_query_terms(query, config.bubble.stop_words))) == 2
    assert on["together"]["near"] == ["backup recoveri", "recoveri target"]
    assert on["apart"]["near"] == ["backup recoveri"]  # "targets" stands 6 words from "recovery"
    assert on["together"]["proximity_weight"] == pytest.approx(1 + strength)
    assert on["apart"]["proximity_weight"] == pytest.approx(1 + strength / 2)
    assert {r["proximity_weight"] for r in off.values()} == {1.0}
    # each decided first, on the empty bubble, with the same facet weights: the weight scales the gain
    assert on["together"]["gain"] == pytest.approx(off["apart"]["gain"] * (1 + strength))


def test_proximity_is_off_in_the_papers_mode() -> None:
    candidate = make_candidate("c", "Backup", "backup strategy", 5)
    config = BubbleConfig().with_overrides(selection="score", relevance="tf")
    built = build_bubble("backup strategy", [candidate], config, run_id="r", now=NOW)
    assert built.trace[0]["near"] == [] and built.trace[0]["proximity_weight"] == 1.0


def test_the_engines_order_and_repairs_swaps_read_no_pairs() -> None:
    """``engine_topk`` orders by the engine's rank and a repair swap by its utility: neither weighs the
    pairs, so neither reads them (a record listing pairs would claim a weight its decision never had)."""
    candidate = make_candidate("c", "Backup", "Every backup owner reviews the recovery targets.", 20)
    query = "backup recovery targets"
    config = BubbleConfig()
    built = build_bubble(query, [candidate], config, run_id="r", now=NOW, variant="engine_topk")
    assert built.trace[0]["near"] == [] and built.trace[0]["proximity_weight"] == 1.0
    full = build_bubble(query, [candidate], config, run_id="r", now=NOW)
    assert full.trace[0]["near"] == ["backup recoveri", "recoveri target"]
    newcomer = scorer_for(query, config, use_priors=True, theta=1.0, stats=None, first=candidate)
    assert newcomer.proximity is None and newcomer.score(candidate).near == ()
