"""Delivery over a real engine: neighbour windows, gap micro-queries, the recorded run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from delivery_helpers import make_bubble, make_chunk

from esbubble.app.deliver import (
    evaluate_delivery,
    evaluate_options,
    expand_bubble,
    neighbour_requests,
    repair_bubble,
    run_delivery,
)
from esbubble.config import BubbleConfig, parse_config
from esbubble.core.bubble import build_bubble
from esbubble.errors import ConfigError
from esbubble.models import Candidate
from esbubble.store.audit import read_run
from esbubble.store.chunks import NeighbourRequest, index_chunks
from esbubble.store.connection import Store
from esbubble.store.query import RetrievalFilters

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ROWS = [
    make_chunk(
        "quote", p, text=f"Item {p} | steel beam | {100 + p} EUR", source_type="xlsx", section="Pricing"
    )
    for p in range(6)
]
MEMO = [
    make_chunk("memo", 0, text="Site memo: access via north gate", section="Access"),
    make_chunk("memo", 1, text="Delivery to site within two weeks of order", section="Logistics"),
    make_chunk("memo", 2, text="Crane booked for Tuesday", section="Logistics"),
]
PROFILE = {
    # the paper's scores: the repair swap below is built on them
    "bubble": {
        "token_budget": 60,
        "max_chunks": 3,
        "length_norm": 10.0,
        "overlap_threshold": 0.9,
        "relevance": "tf",
        "selection": "score",
    },
    "expand": {"mode": "window", "radius": {"xlsx": 1, "text": 1}},
    "repair": {"enabled": True},
    "assemble": {"enabled": True, "max_tokens": 2000, "reserved_tokens": 200},
}


def test_neighbour_requests_follow_radius_and_mode() -> None:
    bubble = make_bubble([ROWS[0], MEMO[1]])
    window = parse_config({"expand": {"mode": "window", "radius": {"xlsx": 2, "text": 0}}})
    assert neighbour_requests(bubble, window) == [NeighbourRequest(doc_id="quote", lo=0, hi=2)]
    parented = make_bubble([make_chunk("spec", 70, parent_id="spec/s3", section="Coatings")])
    parent = parse_config({"expand": {"mode": "parent", "parent_span": 5}})
    assert neighbour_requests(parented, parent) == [
        NeighbourRequest(doc_id="spec", lo=65, hi=75, section="Coatings")
    ]
    assert neighbour_requests(bubble, parent) == []  # no parent ids: nothing to fetch


def test_evaluate_options_switch_stages_on() -> None:
    config = evaluate_options(BubbleConfig(), window=True, repair=True, assemble=True)
    assert (config.expand.mode, config.repair.enabled, config.assemble.enabled) == ("window", True, True)
    assert evaluate_options(BubbleConfig(), parent=True).expand.mode == "parent"
    assert evaluate_options(BubbleConfig()) == BubbleConfig()
    with pytest.raises(ConfigError, match="exclusive"):
        evaluate_options(BubbleConfig(), window=True, parent=True)


@pytest.mark.integration
def test_window_expansion_fetches_neighbours_from_the_engine(store: Store) -> None:
    index_chunks(store, [*ROWS, *MEMO])
    config = parse_config(PROFILE)
    expansion = expand_bubble(store, make_bubble([ROWS[3], MEMO[1]], budget=60), config)
    assert [p.chunk_ids for p in expansion.passages] == [
        ["quote#2", "quote#3", "quote#4"],
        ["memo#1", "memo#2"],
    ]
    assert ("section_boundary", "memo#0") in [(e.reason, e.chunk_id) for e in expansion.events]
    assert expansion.tokens_used <= 60


@pytest.mark.integration
def test_repair_finds_the_missing_facet_with_a_micro_query(store: Store) -> None:
    index_chunks(store, [*ROWS, *MEMO])
    config = parse_config(PROFILE)
    query = "steel beam eur delivery"
    candidates = [Candidate(chunk=c, es_score=1.0, es_rank=i) for i, c in enumerate(ROWS[:4], start=1)]
    bubble = build_bubble(query, candidates, config, run_id="r", now=NOW)
    assert len(bubble.selected) == 3
    result = repair_bubble(store, bubble, config)
    assert result.gaps_before == ["delivery"] and result.gaps_after == []
    assert [e.newcomer_chunk_id for e in result.events] == ["memo#1"]
    assert result.bubble.tokens_used <= bubble.tokens_used
    # Filters reach the micro-queries: restricted to the quote, nothing can close the gap.
    restricted = repair_bubble(store, bubble, config, RetrievalFilters(doc_ids=("quote",)))
    assert restricted.events == []


@pytest.mark.integration
def test_recorded_delivery_run_writes_the_final_trace(store: Store) -> None:
    index_chunks(store, [*ROWS, *MEMO])
    config = parse_config(PROFILE)
    outcome = run_delivery(store, "steel beam eur delivery", config)
    delivery = outcome.delivery
    assert delivery.prompt is not None
    assert delivery.prompt.metadata.tokens.total <= 2000 - 200
    assert outcome.write_result.written == len(delivery.bubble.trace) + 1
    manifest, records = read_run(store, outcome.manifest.run_id)
    assert {"repair", "expand", "assemble"} <= set(manifest.timings_ms)
    stored = {r["chunk_id"]: r for r in records}
    assert stored == {r["chunk_id"]: r for r in delivery.bubble.trace}
    assert delivery.repair is not None and len(delivery.repair.events) == 1
    assert [r["final_reason"] for r in records].count("replaced") == 1
    assert any(r["step_details"]["expansion"] for r in records)
    selected = {s.chunk.chunk_id for s in delivery.bubble.selected}
    assert all(stored[cid]["final_decision"] == "selected" for cid in selected if cid in stored)
    anchors = [a for p in delivery.expansion.passages for a in p.anchor_ids]
    assert sorted(anchors) == sorted(selected)


class _Case:
    def __init__(self, id: str, query: str, gold: list[str]) -> None:
        self.id, self.query, self.category, self.gold = id, query, None, gold
        self.evidence: list[str] = []


@pytest.mark.integration
def test_evaluate_delivery_reports_tokens_and_recall(store: Store) -> None:
    index_chunks(store, [*ROWS, *MEMO])
    config = parse_config(PROFILE)
    cases = [_Case("q1", "crane", ["memo#2", "memo#1"]), _Case("q2", "north gate access", [])]
    evaluation = evaluate_delivery(store, cases, config, now=NOW)
    q1, q2 = evaluation.rows
    assert q1.bubble_recall is not None and q1.delivered_recall is not None
    assert q1.delivered_recall >= q1.bubble_recall
    assert q1.delivered_tokens >= q1.bubble_tokens
    assert q2.bubble_recall is None
    assert evaluation.mean_delivered_recall == q1.delivered_recall
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= 1800 for r in evaluation.rows)
