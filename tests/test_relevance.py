"""bm25 relevance from the engine's term statistics: idf, saturation, and terms the index dropped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from _store_data import QUOTE_JOB

from esbubble.config import parse_config
from esbubble.core.bubble import build_bubble
from esbubble.core.relevance import Facet, TermStats, bm25_weights, stats_from_candidates
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store
from esbubble.store.retrieve import retrieve

NOW = datetime(2026, 1, 1, tzinfo=UTC)
FACETS = (Facet("under", ("under",)), Facet("licens", ("licens",)))


def test_rarer_terms_weigh_more_and_an_unseen_term_most() -> None:
    stats = TermStats(doc_count=100, df={"common": 60, "rare": 2})
    assert stats.idf("rare") > stats.idf("common") > 0
    assert stats.idf("unseen") > stats.idf("rare")


def test_a_term_the_index_holds_in_no_chunk_earns_nothing() -> None:
    """The engine counted it and found it in no chunk: its analyzer drops the word (osmem drops
    "under" and "after", which Lucene's english analyzer keeps), so a chunk our analysis finds it in
    must not get the highest idf of all for it."""
    stats = TermStats(doc_count=400, df={"under": 0, "licens": 70})
    weights, matches = bm25_weights(FACETS, stats, {"under": 3, "licens": 2}, {}, context_weight=0.5, k1=1.2)
    assert weights[0] == 0.0
    assert weights[1] > 0
    assert [m["term"] for m in matches] == ["licens"]
    assert not stats.unindexed("licens")
    assert not TermStats(doc_count=400, df={}).unindexed("under")  # not counted: no verdict


def test_without_the_engine_the_candidates_count_the_query_terms_they_hold() -> None:
    """The fallback counts a candidate once per term, in its text or its context, and only the
    query's terms; a term no candidate holds stays uncounted (highest idf), never counted as 0
    (which would drop it as a word the index does not keep)."""
    stems = [
        ({"licens": 3, "grant": 1}, {}),
        ({}, {"licens": 1}),
        ({"licens": 1}, {"licens": 2, "patent": 1}),
    ]
    stats = stats_from_candidates(stems, ["licens", "patent", "absent", "licens"])
    assert stats.doc_count == 3
    assert stats.df == {"licens": 3, "patent": 1}
    assert not stats.unindexed("absent")
    assert stats.idf("absent") > stats.idf("patent") > stats.idf("licens")


@pytest.mark.integration
def test_no_relevance_from_a_term_the_engine_counts_in_no_chunk(store: Store) -> None:
    """Whatever the engine's analyzer keeps, relevance only ever comes from terms it indexed."""
    index_chunks(store, QUOTE_JOB)
    config = parse_config({})
    query = "gutters and downpipes under the scaffold after hire"
    retrieval = retrieve(store, query, config)
    assert retrieval.term_stats is not None
    dropped = {t for t, df in retrieval.term_stats.df.items() if df == 0}
    stats = retrieval.term_stats
    bubble = build_bubble(query, retrieval.candidates, config, run_id="rel", now=NOW, stats=stats)
    matched = [{m["term"] for m in record["step_details"]["terms"]} for record in bubble.trace]
    assert any(terms for terms in matched)  # the indexed terms do count
    assert all(not terms & dropped for terms in matched)
