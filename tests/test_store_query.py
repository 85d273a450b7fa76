"""The retrieval body is built without I/O; its exact shape is the contract with the engine."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.config import parse_config
from esbubble.core.score import prior_weight
from esbubble.errors import InputError
from esbubble.ingest import IngestOptions, read_document
from esbubble.models import Chunk
from esbubble.store.chunks import chunk_source
from esbubble.store.query import RetrievalFilters, build_retrieval_query
from esbubble.store.retrieve import candidates_from_hits


def test_exact_body_with_priors_and_filters() -> None:
    config = parse_config(
        {
            "bubble": {"candidate_k": 50},
            "priors": {
                "sections": {"Scaffolding": 1.5, "Terms": -2.5, "Roofing": 0.0, "Access": 0.5},
                "keywords": {"edge protection": 1.0, "excluded": -1.0},
            },
        }
    )
    filters = RetrievalFilters(doc_ids=("b", "a", "a"), buckets=("Scaffolding",))
    body = build_retrieval_query("scaffold hire", config, filters)
    assert body == {
        "query": {
            "function_score": {
                "query": {
                    "bool": {
                        "should": [
                            {
                                "multi_match": {
                                    "query": "scaffold hire",
                                    "fields": ["text", "text_parts^0.3", "context^0.5", "context_parts^0.15"],
                                    "type": "most_fields",
                                }
                            },
                            {
                                "constant_score": {
                                    "filter": {"terms": {"section": ["Access", "Scaffolding"]}},
                                    "boost": 0.001,
                                }
                            },
                        ],
                        "minimum_should_match": 1,
                        "filter": [{"terms": {"doc_id": ["a", "b"]}}, {"terms": {"bucket": ["Scaffolding"]}}],
                    }
                },
                "functions": [
                    # w(p) = (1 + 2p) / (1 + p) for a boost, its reciprocal for a penalty
                    {"filter": {"term": {"section": "Access"}}, "weight": 2.0 / 1.5},
                    {"filter": {"term": {"section": "Scaffolding"}}, "weight": 4.0 / 2.5},
                    {"filter": {"term": {"section": "Terms"}}, "weight": 1 / (6.0 / 3.5)},
                    {"filter": {"match_phrase": {"text": "edge protection"}}, "weight": 3.0 / 2.0},
                    {"filter": {"match_phrase": {"text": "excluded"}}, "weight": 1 / (3.0 / 2.0)},
                ],
                "score_mode": "multiply",
                "boost_mode": "multiply",
            }
        },
        "size": 50,
        "_source": True,
        "sort": [{"_score": {"order": "desc"}}, {"chunk_id": {"order": "asc"}}],
        "track_scores": True,
        # bm25: one request also counts, over the whole index, the chunks holding each analysed term
        "aggregations": {
            "esbubble_term_stats": {
                "global": {},
                "aggregations": {
                    "df": {
                        "filters": {
                            "filters": {
                                term: {
                                    "bool": {
                                        "should": [
                                            {"term": {f: term}}
                                            for f in ("text", "text_parts", "context", "context_parts")
                                        ]
                                    }
                                }
                                for term in ("hire", "scaffold")
                            }
                        }
                    }
                },
            }
        },
    }


def test_paper_mode_asks_for_no_term_statistics() -> None:
    body = build_retrieval_query("scaffold hire", parse_config({"bubble": {"relevance": "tf"}}))
    assert "aggregations" not in body


def test_without_priors_or_filters_only_bm25_remains() -> None:
    body = build_retrieval_query("gutters", parse_config({}))
    function_score = body["query"]["function_score"]
    assert function_score["query"] == {
        "bool": {
            "should": [
                {
                    "multi_match": {
                        "query": "gutters",
                        "fields": ["text", "text_parts^0.3", "context^0.5", "context_parts^0.15"],
                        "type": "most_fields",
                    }
                }
            ],
            "minimum_should_match": 1,
        }
    }
    assert function_score["functions"] == []
    assert body["size"] == 200


def test_empty_query_is_an_input_error() -> None:
    with pytest.raises(InputError, match="query is empty"):
        build_retrieval_query("   ", parse_config({}))


# Priors below 1e-6 in magnitude round to a weight of exactly 1.0 in floating point.
@given(
    st.one_of(
        st.just(0.0), st.floats(min_value=1e-6, max_value=1e6), st.floats(min_value=-1e6, max_value=-1e-6)
    )
)
def test_prior_weight_is_positive_and_keeps_the_sign_of_the_prior(prior: float) -> None:
    weight = prior_weight(prior)
    assert weight > 0
    assert (weight > 1) == (prior > 0)
    assert (weight < 1) == (prior < 0)


@given(st.floats(min_value=0, max_value=1e6))
def test_prior_weight_never_more_than_doubles_or_halves_and_is_symmetric(prior: float) -> None:
    """A prior reorders chunks of comparable relevance; it cannot overrule twice the relevance."""
    assert 1.0 <= prior_weight(prior) < 2.0
    assert prior_weight(-prior) == pytest.approx(1.0 / prior_weight(prior))
    assert prior_weight(6.0) == pytest.approx(13 / 7)


@given(st.floats(min_value=0, max_value=1e3), st.floats(min_value=0, max_value=1e3))
def test_prior_weight_is_monotonic(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert prior_weight(low) <= prior_weight(high)
    assert prior_weight(-high) <= prior_weight(-low)


def _ingested(text: str) -> Chunk:
    """The one chunk ingest makes of a short text file (with its stored terms)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memo.txt"
        path.write_text(text, encoding="utf-8")
        [chunk] = read_document(path, IngestOptions(), doc_id="memo.txt")
    return chunk


def test_hits_keep_stored_terms_and_ignore_fields_a_newer_version_added() -> None:
    chunk = _ingested("Sump pump to the sump pit.")
    source = {**chunk_source(chunk), "added_by_a_newer_esbubble": {"x": 1}}
    [candidate] = candidates_from_hits([{"_id": chunk.chunk_id, "_score": 2.5, "_source": source}])
    assert candidate.chunk == chunk
    assert candidate.chunk.terms is not None and candidate.chunk.terms.counts["sump"] == 2
    assert (candidate.es_score, candidate.es_rank) == (2.5, 1)
