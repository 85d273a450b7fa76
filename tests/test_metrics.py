"""Per-bubble metrics and their mean over a query set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import text_candidate

from esbubble.bubble import build_bubble
from esbubble.config import parse_config
from esbubble.metrics import BubbleMetrics, aggregate, bubble_metrics
from esbubble.models import Bubble, Candidate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _candidate(chunk_id: str, section: str, text: str, tokens: int) -> Candidate:
    return text_candidate(chunk_id, section, text, tokens)


@pytest.fixture
def bubble() -> Bubble:
    config = parse_config({"bubble": {"token_budget": 100, "length_norm": 10.0, "overlap_threshold": 0.6}})
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
