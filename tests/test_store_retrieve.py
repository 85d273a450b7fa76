"""Retrieval against a real engine: ranks only where unambiguous, never absolute BM25 scores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from _store_data import QUOTE_JOB, make_chunk

from esbubble.config import parse_config
from esbubble.core.bubble import build_bubble
from esbubble.errors import NotFoundError
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.query import RetrievalFilters
from esbubble.store.retrieve import retrieve, retrieve_many

pytestmark = pytest.mark.integration


def test_bm25_finds_matching_chunks_with_ranks(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = retrieve(store, "gutters downpipes", parse_config({}))
    assert [c.chunk.chunk_id for c in result.candidates] == ["job:0004"]
    assert result.candidates[0].es_rank == 1
    assert result.candidates[0].es_score > 0
    assert result.candidates[0].chunk == QUOTE_JOB[4]
    assert result.request_body["size"] == 200


def test_positive_prior_sections_return_tf_zero_chunks(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({"priors": {"sections": {"Preliminaries": 1.0}}})
    ids = [c.chunk.chunk_id for c in retrieve(store, "gutters", config).candidates]
    assert set(ids) == {"job:0004", "job:0007"}


def test_prior_only_chunks_rank_after_every_lexical_match(store: Store) -> None:
    """A strongly boosted section's tf = 0 chunks must not crowd a penalised section's match out of K."""
    index_chunks(store, QUOTE_JOB)
    config = parse_config(
        {"priors": {"sections": {"Scaffolding": 6.0, "Terms": -2.5}}, "bubble": {"candidate_k": 4}}
    )
    ids = [c.chunk.chunk_id for c in retrieve(store, "warranty payment", config).candidates]
    assert set(ids[:2]) == {"job:0005", "job:0006"}, "the two Terms matches come first"
    assert set(ids[2:]) <= {"job:0000", "job:0001", "job:0002"}, "boosted tf = 0 chunks fill the rest"
    assert len(ids) == 4


def test_negative_prior_sinks_a_section_without_negative_scores(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    plain = retrieve(store, "scaffold", parse_config({}))
    assert {c.chunk.chunk_id for c in plain.candidates} == {"job:0000", "job:0001", "job:0006"}
    penalised = retrieve(store, "scaffold", parse_config({"priors": {"sections": {"Terms": -1000.0}}}))
    assert penalised.candidates[-1].chunk.chunk_id == "job:0006"
    assert all(c.es_score >= 0 for c in penalised.candidates)


def test_filters_restrict_candidates(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = retrieve(store, "scaffold", parse_config({}), RetrievalFilters(sections=("Terms",)))
    assert [c.chunk.chunk_id for c in result.candidates] == ["job:0006"]


def test_retrieval_is_deterministic(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({"priors": {"sections": {"Scaffolding": 1.0, "Roofing": 1.0}}})
    first = retrieve(store, "scaffold roof", config)
    second = retrieve(store, "scaffold roof", config)
    assert first.candidates == second.candidates


def test_retrieve_many_uses_one_msearch_and_keeps_query_order(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({})
    results = retrieve_many(store, ["gutters", "payment invoice"], config)
    assert [r.query for r in results] == ["gutters", "payment invoice"]
    assert [c.chunk.chunk_id for c in results[1].candidates] == ["job:0005"]
    single = retrieve(store, "gutters", config)
    assert results[0].candidates == single.candidates


def test_a_word_inside_an_identifier_retrieves_its_chunk_and_counts_for_it(store: Store) -> None:
    """A workbook's column ``high_growth_count`` holds "growth": the engine finds the row for it, its
    document frequency counts the row, and the bubble scores the facet the row matches."""
    rows = [
        make_chunk(
            "hge", 0, "Local authority: Cheltenham; high_growth_count: 45; active_10plus_count: 620", row=2
        ),
        make_chunk("hge", 1, "Local authority: Tewkesbury; rate_pct: 7.2", row=3),
    ]
    index_chunks(store, [*QUOTE_JOB, *rows])
    config = parse_config({})
    result = retrieve(store, "growth count in Cheltenham", config)
    assert result.candidates[0].chunk.chunk_id == "hge:0000"
    assert result.term_stats is not None and result.term_stats.df["growth"] == 1
    query, now = "growth count in Cheltenham", datetime(2026, 1, 1, tzinfo=UTC)
    bubble = build_bubble(query, result.candidates, config, run_id="r", now=now, stats=result.term_stats)
    record = next(r for r in bubble.trace if r["chunk_id"] == "hge:0000")
    assert {"growth", "count", "cheltenham"} <= set(record["facets"])
    assert record["final_reason"] == "passed_all_gates"


def test_missing_index_is_a_user_error_naming_the_index_and_init_never_the_query(bare_store: Store) -> None:
    # The query may be redacted (--redact-query), so no retrieval error repeats it.
    for attempt in (
        lambda: retrieve_many(bare_store, ["gutters"], parse_config({})),
        lambda: retrieve(bare_store, "gutters", parse_config({})),
    ):
        with pytest.raises(NotFoundError) as error:
            attempt()
        line = error.value.one_line()
        assert error.value.exit_code == 1
        assert f"{bare_store.names.chunks} does not exist" in line and "esbubble init" in line
        assert "gutters" not in line
