"""Run retrieval bodies against the chunk index and turn hits into ``Candidate`` objects."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError
from pydantic import BaseModel, ConfigDict

from esbubble.config import BubbleConfig
from esbubble.errors import EngineError, NotFoundError
from esbubble.models import Candidate
from esbubble.relevance import TermStats
from esbubble.store.chunks import chunk_from_source, index_missing, missing_chunk_index
from esbubble.store.connection import Store
from esbubble.store.query import RetrievalFilters, build_retrieval_query, term_stats_of


class Retrieval(BaseModel):
    """The candidates for one query, the exact body that found them, and how long the engine took."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    query: str
    candidates: list[Candidate]
    request_body: dict[str, Any]
    took_ms: float
    term_stats: TermStats | None = None


def candidates_from_hits(hits: list[dict[str, Any]]) -> list[Candidate]:
    """Hits in engine order → candidates with their engine score and 1-based rank."""
    return [
        Candidate(
            chunk=chunk_from_source(hit["_source"]), es_score=float(hit.get("_score") or 0.0), es_rank=rank
        )
        for rank, hit in enumerate(hits, start=1)
    ]


def _failure(store: Store, query: str, reason: object) -> EngineError | NotFoundError:
    if index_missing(reason):
        return missing_chunk_index(store, f"retrieve for query {query!r}")
    return EngineError(
        f"retrieval for query {query!r} failed on {store.display_url}: {reason}",
        hint="run `esbubble init` if the chunk index is missing",
    )


def retrieve(
    store: Store, query: str, config: BubbleConfig, filters: RetrievalFilters | None = None
) -> Retrieval:
    """Search the chunk index for one query."""
    body = build_retrieval_query(query, config, filters)
    started = time.perf_counter()
    try:
        response = store.client.search(index=store.names.chunks, body=body).body
    except ApiError as error:
        raise _failure(store, query, error if index_missing(error) else error.message) from None
    except TransportError as error:
        raise _failure(store, query, error) from None
    took_ms = (time.perf_counter() - started) * 1000.0
    return Retrieval(
        query=query,
        candidates=candidates_from_hits(response["hits"]["hits"]),
        request_body=body,
        took_ms=took_ms,
        term_stats=term_stats_of(response),
    )


def retrieve_many(
    store: Store, queries: Sequence[str], config: BubbleConfig, filters: RetrievalFilters | None = None
) -> list[Retrieval]:
    """Search for many queries in one ``msearch``; a failed sub-search is an error naming its query."""
    if not queries:
        return []
    bodies = [build_retrieval_query(query, config, filters) for query in queries]
    searches: list[dict[str, Any]] = []
    for body in bodies:
        searches += [{"index": store.names.chunks}, body]
    started = time.perf_counter()
    try:
        responses = store.client.msearch(searches=searches).body["responses"]
    except ApiError as error:
        raise _failure(store, queries[0], error if index_missing(error) else error.message) from None
    except TransportError as error:
        raise _failure(store, queries[0], error) from None
    took_ms = (time.perf_counter() - started) * 1000.0
    results: list[Retrieval] = []
    for query, body, response in zip(queries, bodies, responses, strict=True):
        if "error" in response:
            problem = response["error"]
            reason = problem.get("reason", problem) if isinstance(problem, dict) else problem
            raise _failure(store, query, problem if index_missing(problem) else reason)
        results.append(
            Retrieval(
                query=query,
                candidates=candidates_from_hits(response["hits"]["hits"]),
                request_body=body,
                took_ms=float(response.get("took", took_ms)),
                term_stats=term_stats_of(response),
            )
        )
    return results
