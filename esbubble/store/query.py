"""The retrieval request body: native BM25 plus ``function_score`` structural priors. Pure, no I/O.

Why this shape (docs/algorithm.md, Candidates; docs/operations.md, Retrieval):

- ``should`` holds the BM25 ``multi_match`` over ``text`` and ``context`` (the
  chunk's title, heading path or sheet and column headers, weighted
  ``CONTEXT_BOOST``, ``most_fields`` so a match in both counts more), and over the words
  inside the identifiers of each (``text_parts``, ``context_parts``, weighted ``PARTS_BOOST``
  less), and a ``constant_score`` over
  the sections with a positive prior, with ``minimum_should_match: 1`` — so a
  chunk of a prioritised section with tf = 0 is still a candidate. Its constant
  score is tiny (``PRIOR_ONLY_SCORE``), so such chunks rank after every lexical
  match and fill the remaining places of the ``candidate_k`` list.
- Priors become ``filter`` + ``weight`` functions multiplied into the score.
  Elasticsearch rejects negative scores, so a prior ``p`` becomes the weight
  ``(1 + 2p) / (1 + p)`` when positive and its reciprocal when negative
  (``score.prior_weight``, always within ½ and 2): penalised sections sink
  without going below zero, and no prior outweighs twice the relevance. The signed prior of the paper is
  applied in Python by the core; the engine only has to recall the right set.
- The body is the same for every variant, so ablations compare on one
  candidate set; sorting by ``_score`` then ``chunk_id`` makes it deterministic.
- Under ``relevance = "bm25"`` a ``global`` aggregation counts, over the whole
  chunk index, the chunks that hold each analysed query term in any of those
  four fields: the document frequencies the core's idf needs, in the same
  request, so scoring costs no extra round trip.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict

from esbubble.config import BubbleConfig
from esbubble.core.relevance import TermStats, facet_terms
from esbubble.core.score import prior_weight, query_facets_of
from esbubble.errors import InputError
from esbubble.text import check_query_text

# The score of a prioritised-section chunk that matches no query term, before its prior weight.
# Far below any BM25 match, so such chunks fill the candidate list after the lexical matches
# instead of crowding them out: with a boost of 1, every chunk of a +6 section (weight 7)
# outranked a real match in a penalised one, and the candidate list held only boosted sections.
PRIOR_ONLY_SCORE = 0.001

# How much a query term in a chunk's context (title, heading path, sheet, column headers) counts in
# retrieval against one in its text: enough to recall a paragraph under a matching heading.
CONTEXT_BOOST = 0.5

# How much a query word found only inside an identifier (``high_growth_count``: high, growth, count;
# fields ``text_parts`` and ``context_parts``) counts against the same word standing alone. Less than
# a word of the text: at full weight the engine's own order, cut at 400 tokens, answered 156.8 of
# the seven sets' 235 questions instead of 175.0 (docs/evaluation.md, sixteenth round) — a table's
# column names repeat in every row, so their parts match everywhere.
PARTS_BOOST = 0.3

# The fields a query is matched against, with their weights.
CHUNK_FIELDS = (
    "text",
    f"text_parts^{PARTS_BOOST}",
    f"context^{CONTEXT_BOOST}",
    f"context_parts^{round(PARTS_BOOST * CONTEXT_BOOST, 6)}",
)
# The fields a term's document frequency counts it in: all of them, unweighted (the chunks the core
# finds it in).
TERM_FIELDS = tuple(field.partition("^")[0] for field in CHUNK_FIELDS)

# The name of the aggregation that carries the term statistics, and of its per-term buckets.
TERM_STATS_AGG = "esbubble_term_stats"


class RetrievalFilters(BaseModel):
    """Optional restrictions: a candidate must match every non-empty list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_ids: tuple[str, ...] = ()
    buckets: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()


def _filter_clauses(filters: RetrievalFilters | None) -> list[dict[str, Any]]:
    if filters is None:
        return []
    clauses: list[dict[str, Any]] = []
    for field, values in (
        ("doc_id", filters.doc_ids),
        ("bucket", filters.buckets),
        ("section", filters.sections),
    ):
        if values:
            clauses.append({"terms": {field: sorted(set(values))}})
    return clauses


def build_retrieval_query(
    query: str, config: BubbleConfig, filters: RetrievalFilters | None = None
) -> dict[str, Any]:
    """The exact search body for ``query``: ``candidate_k`` hits with the chunk fields the core needs."""
    if not check_query_text(query).strip():
        raise InputError("the query is empty", hint="give a question or keywords to search for")
    sections = config.priors.sections
    keywords = config.priors.keywords
    should: list[dict[str, Any]] = [
        {
            "multi_match": {
                "query": query,
                "fields": list(CHUNK_FIELDS),
                "type": "most_fields",
            }
        }
    ]
    boosted = sorted(s for s, p in sections.items() if p > 0)
    if boosted:
        should.append(
            {"constant_score": {"filter": {"terms": {"section": boosted}}, "boost": PRIOR_ONLY_SCORE}}
        )
    bool_query: dict[str, Any] = {"should": should, "minimum_should_match": 1}
    clauses = _filter_clauses(filters)
    if clauses:
        bool_query["filter"] = clauses
    functions: list[dict[str, Any]] = [
        {"filter": {"term": {"section": s}}, "weight": prior_weight(p)}
        for s, p in sorted(sections.items())
        if p != 0
    ]
    functions += [
        {"filter": {"match_phrase": {"text": k}}, "weight": prior_weight(g)}
        for k, g in sorted(keywords.items())
        if g != 0
    ]
    body: dict[str, Any] = {
        "query": {
            "function_score": {
                "query": {"bool": bool_query},
                "functions": functions,
                "score_mode": "multiply",
                "boost_mode": "multiply",
            }
        },
        "size": config.bubble.candidate_k,
        # The whole stored document, not a field list: the chunk mapping is strict, so it holds only
        # chunk fields, and a list makes osmem re-encode every hit (41 → 31 ms for 200 hits, measured;
        # docs/benchmarks.md). ``chunk_from_source`` ignores fields a newer esbubble may have added.
        "_source": True,
        "sort": [{"_score": {"order": "desc"}}, {"chunk_id": {"order": "asc"}}],
        "track_scores": True,
    }
    terms = stats_terms(query, config)
    if terms:
        body["aggregations"] = {
            TERM_STATS_AGG: {"global": {}, "aggregations": {"df": {"filters": {"filters": terms}}}}
        }
    return body


def stats_terms(query: str, config: BubbleConfig) -> dict[str, dict[str, Any]]:
    """One filter per analysed query term (and facet-group term): chunks holding it in their text or
    context, standing alone or inside an identifier."""
    if config.bubble.relevance != "bm25":
        return {}
    names = sorted(set(facet_terms(query_facets_of(query, config))))
    return {term: {"bool": {"should": [{"term": {field: term}} for field in TERM_FIELDS]}} for term in names}


def term_stats_of(response: dict[str, Any]) -> TermStats | None:
    """The term statistics a response to ``build_retrieval_query`` carries, if it asked for them."""
    aggregation = (response.get("aggregations") or {}).get(TERM_STATS_AGG)
    if not isinstance(aggregation, dict):
        return None
    buckets = aggregation.get("df", {}).get("buckets", {})
    return TermStats(
        doc_count=int(aggregation.get("doc_count", 0)),
        df={term: int(bucket.get("doc_count", 0)) for term, bucket in buckets.items()},
    )


REDACTED = "<redacted>"


def redact_query_body(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a body built by ``build_retrieval_query`` with the query text replaced by ``<redacted>``."""
    redacted = copy.deepcopy(body)
    redacted["query"]["function_score"]["query"]["bool"]["should"][0]["multi_match"]["query"] = REDACTED
    aggregation = redacted.get("aggregations", {}).get(TERM_STATS_AGG)
    if aggregation is not None:  # the analysed terms would give the query away
        count = len(aggregation["aggregations"]["df"]["filters"]["filters"])
        aggregation["aggregations"]["df"]["filters"]["filters"] = {
            f"{REDACTED}{n}": {} for n in range(1, count + 1)
        }
    return redacted
