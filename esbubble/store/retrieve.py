"""Run retrieval bodies against the chunk index and turn hits into ``Candidate`` objects."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from esbubble.config import BubbleConfig
from esbubble.core.relevance import TermStats
from esbubble.errors import EngineError, NotFoundError
from esbubble.models import Candidate
from esbubble.store.chunks import chunk_from_source, index_missing, missing_chunk_index
from esbubble.store.connection import Store
from esbubble.store.errors import Failure, engine_errors
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


def _failure(store: Store, reason: object, status: int | None) -> EngineError | NotFoundError:
    """One retrieval failure (``status`` None: no answer). The message never repeats the query text
    (it may be redacted); a missing chunk index is the user's to fix (exit 1), anything else exit 3."""
    chunks = store.names.chunks
    if index_missing(reason):
        return missing_chunk_index(store, "retrieve candidates")
    if status is None:
        return EngineError(
            f"retrieval from {chunks} failed: {store.display_url} did not answer ({reason})",
            hint="check that the cluster is reachable, then run the command again",
        )
    return EngineError(
        f"retrieval from {chunks} failed on {store.display_url}: status {status}, {reason}",
        hint=f"check that the user may read {chunks}" if status in (401, 403) else None,
    )


def _request_failure(store: Store) -> Callable[[Failure], EngineError | NotFoundError]:
    def to_error(failure: Failure) -> EngineError | NotFoundError:
        if failure.index_missing:
            return missing_chunk_index(store, "retrieve candidates")
        return _failure(store, failure.reason, failure.status)

    return to_error


def retrieve(
    store: Store, query: str, config: BubbleConfig, filters: RetrievalFilters | None = None
) -> Retrieval:
    """Search the chunk index for one query."""
    body = build_retrieval_query(query, config, filters)
    started = time.perf_counter()
    with engine_errors(_request_failure(store)):
        response = store.client.search(index=store.names.chunks, body=body).body
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
    with engine_errors(_request_failure(store)):
        responses = store.client.msearch(searches=searches).body["responses"]
    took_ms = (time.perf_counter() - started) * 1000.0
    results: list[Retrieval] = []
    for number, (query, body, response) in enumerate(zip(queries, bodies, responses, strict=True)):
        if "error" in response:
            problem = response["error"]
            if index_missing(problem):
                raise _failure(store, problem, int(response.get("status") or 404))
            detail = (
                f"{problem.get('type')}: {problem.get('reason')}" if isinstance(problem, dict) else problem
            )
            where = f"query {number + 1} of {len(queries)}: {detail}"
            raise _failure(store, where, int(response.get("status") or 500))
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
