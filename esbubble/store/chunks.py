"""Chunk reads and writes: bulk indexing (idempotent by chunk id), deletes, lookups and neighbours."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch.helpers import streaming_bulk
from pydantic import BaseModel, ConfigDict, Field, model_validator

from esbubble.core.analysis import parts_text
from esbubble.errors import BulkError, EngineError, IngestError, NotFoundError
from esbubble.models import Chunk
from esbubble.store.connection import Store
from esbubble.store.errors import Failure, engine_errors
from esbubble.store.paging import search_pages

BULK_CHUNK_SIZE = 500
BULK_MAX_BYTES = 100 * 1024 * 1024  # the helpers' default
# One document's replacement goes in one _bulk request (see ``replace_chunks``); Elasticsearch
# refuses requests above ``http.max_content_length`` (100 MB by default), so stay below it.
MAX_ATOMIC_BYTES = 90 * 1024 * 1024
# A document's replacement may take the engine longer than ``request_timeout``, which suits a
# search: osmem wrote a 55 MB replacement (13,866 workbook rows) at 1.4 MB/s on an idle 2-core
# machine, 39 s. Its request gets ``request_timeout`` plus this per byte (2 s per MB, about three
# times that rate), so a large document is not cut at a search's timeout and then sent again.
WRITE_S_PER_BYTE = 2.0 / 1e6
BULK_MAX_RETRIES = 5  # for 429s, with exponential backoff from INITIAL_BACKOFF_S
INITIAL_BACKOFF_S = 0.5
MAX_WINDOW = 10_000


class BulkSummary(BaseModel):
    """What a bulk write did: every item is counted in exactly one field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    created: int = 0
    updated: int = 0

    @property
    def indexed(self) -> int:
        return self.created + self.updated


class NeighbourRequest(BaseModel):
    """Chunks of ``doc_id`` with ``lo <= position <= hi`` (and in ``section``, when given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_id: str
    lo: int = Field(ge=0)
    hi: int = Field(ge=0)
    section: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> NeighbourRequest:
        if self.hi < self.lo:
            raise ValueError(f"hi ({self.hi}) must be >= lo ({self.lo})")
        return self


# The fields a chunk's document holds besides the ``Chunk`` fields, each with the field it is derived
# from at every write (the words inside that field's identifiers): searched, never read back.
_PARTS_OF = {"text_parts": "text", "context_parts": "context"}
DERIVED_FIELDS = tuple(_PARTS_OF)


def chunk_source(chunk: Chunk) -> dict[str, Any]:
    """The document stored for a chunk: every ``Chunk`` field, JSON-typed, and the words inside the
    identifiers of its text and context (``DERIVED_FIELDS``)."""
    source = chunk.model_dump(mode="json")
    return source | {field: parts_text(source[origin]) for field, origin in _PARTS_OF.items()}


_CHUNK_FIELDS = frozenset(Chunk.model_fields)


def chunk_from_source(source: dict[str, Any]) -> Chunk:
    """A stored chunk document as a ``Chunk``, ignoring fields this version does not know.

    Searches ask for the whole ``_source`` rather than a field list (a list makes
    osmem re-encode every hit, about a quarter of a 200-hit search), so a field
    written by a newer esbubble must not break an older one reading the index.
    """
    return Chunk.model_validate({key: value for key, value in source.items() if key in _CHUNK_FIELDS})


def index_missing(reason: object) -> bool:
    """Whether an engine error (failure, error body or reason text) says the index does not exist."""
    if isinstance(reason, Failure):
        return reason.index_missing
    return "index_not_found" in str(reason)


def missing_chunk_index(store: Store, action: str) -> NotFoundError:
    """A missing chunk index is the user's to fix (exit 1), not an unreachable cluster (exit 3)."""
    name = store.names.chunks
    if store.names.chunks_override is not None:
        hint = f"ingest documents into it first (`esbubble ingest PATH --index {name}`) or check --index"
    else:
        hint = "run `esbubble init` or `esbubble ingest PATH`, or check --prefix / ESBUBBLE_PREFIX"
    return NotFoundError(
        f"cannot {action}: the chunk index {name} does not exist on {store.display_url}", hint=hint
    )


def _engine_error(
    store: Store, action: str, request_timeout: float | None = None, *, write: bool = False
) -> Callable[[Failure], EngineError | NotFoundError]:
    """The mapping of a failed chunk request: a missing chunk index is the user's to fix (exit 1).
    ``request_timeout`` is what the request waited, when not the store's."""
    waited = store.settings.request_timeout if request_timeout is None else request_timeout
    landed = "; a write may still have been applied" if write else ""

    def to_error(failure: Failure) -> EngineError | NotFoundError:
        if failure.index_missing:
            return missing_chunk_index(store, action)
        if failure.timed_out:
            # The engine may still apply a write it did not answer in time: say so, or a user who
            # sees "failed" believes nothing was written.
            return EngineError(
                f"{store.display_url} did not answer in time to {action} (waited {waited:.1f} s, retried)"
                + landed,
                hint=("re-run: ingest skips what was written; " if write else "")
                + "on a busy engine raise request_timeout in the config file's [elasticsearch] table",
            )
        return EngineError(f"{store.display_url} failed to {action}: {failure.reason}")

    return to_error


def _bulk_items(
    store: Store,
    actions: Iterable[dict[str, Any]],
    *,
    what: str,
    raise_on_exception: bool,
    chunk_size: int = BULK_CHUNK_SIZE,
    max_chunk_bytes: int = BULK_MAX_BYTES,
    request_timeout: float | None = None,
) -> Iterator[tuple[bool, str, dict[str, Any]]]:
    """``(ok, op, result)`` per bulk item, with one retry policy (429 backoff) for every bulk write;
    each request waits ``request_timeout`` for its answer (None: the store's)."""
    client = store.client
    if request_timeout is not None:
        client = client.options(request_timeout=request_timeout)
    with engine_errors(_engine_error(store, what, request_timeout, write=True)):
        for ok, item in streaming_bulk(
            client,
            actions,
            chunk_size=chunk_size,
            max_chunk_bytes=max_chunk_bytes,
            max_retries=BULK_MAX_RETRIES,
            initial_backoff=INITIAL_BACKOFF_S,
            raise_on_error=False,
            raise_on_exception=raise_on_exception,
        ):
            op, result = next(iter(item.items()))
            yield ok, op, result


def _tally(items: Iterable[tuple[bool, str, dict[str, Any]]]) -> tuple[int, int, list[dict[str, object]]]:
    """Created and updated counts of bulk items, and every failed item with its id, status and error."""
    created = updated = 0
    failed: list[dict[str, object]] = []
    for ok, op, result in items:
        if not ok:
            failed.append(
                {
                    "op": op,
                    "_id": result.get("_id"),
                    "status": result.get("status"),
                    "error": result.get("error"),
                }
            )
        elif result.get("result") == "created":
            created += 1
        else:
            updated += 1
    return created, updated, failed


def bulk_write(store: Store, actions: Iterable[dict[str, Any]], *, what: str) -> BulkSummary:
    """Run bulk actions with retries on 429; raise ``BulkError`` listing every failed item."""
    items = _bulk_items(store, actions, what=f"write {what}", raise_on_exception=False)
    created, updated, failed = _tally(items)
    if failed:
        first = failed[0]
        raise BulkError(
            f"{len(failed)} of {len(failed) + created + updated} {what} failed to index; "
            f"first: {first['_id']}: {first['error']}",
            failed,
            hint="fix the cause and re-run; indexing is idempotent by id",
        )
    return BulkSummary(created=created, updated=updated)


def _refresh(store: Store, index: str) -> None:
    with engine_errors(_engine_error(store, f"refresh {index}")):
        store.client.indices.refresh(index=index)


def index_chunks(store: Store, chunks: Iterable[Chunk]) -> BulkSummary:
    """Bulk-index chunks with ``_id`` = chunk_id (re-indexing is idempotent), then refresh."""
    alias = store.names.chunks
    actions = (
        {"_op_type": "index", "_index": alias, "_id": chunk.chunk_id, "_source": chunk_source(chunk)}
        for chunk in chunks
    )
    summary = bulk_write(store, actions, what="chunks")
    _refresh(store, alias)
    return summary


def replacement_actions(
    chunks: Sequence[Chunk], delete_ids: Sequence[str], index: str
) -> list[dict[str, Any]]:
    """The bulk actions that make ``index`` hold ``chunks`` and no longer ``delete_ids`` (pure)."""
    writes = [
        {"_op_type": "index", "_index": index, "_id": chunk.chunk_id, "_source": chunk_source(chunk)}
        for chunk in chunks
    ]
    return writes + [{"_op_type": "delete", "_index": index, "_id": chunk_id} for chunk_id in delete_ids]


def _request_bytes(actions: Sequence[dict[str, Any]]) -> int:
    """About what the actions weigh as an NDJSON ``_bulk`` body (action line + source line each)."""
    size = 0
    for action in actions:
        meta = {action["_op_type"]: {"_index": action["_index"], "_id": action["_id"]}}
        size += len(json.dumps(meta)) + 1
        if "_source" in action:
            size += len(json.dumps(action["_source"], ensure_ascii=False).encode("utf-8")) + 1
    return size


def write_timeout(request_timeout: float, size: int) -> float:
    """How long a write of ``size`` bytes waits for its answer: ``request_timeout`` plus
    ``WRITE_S_PER_BYTE`` per byte."""
    return request_timeout + size * WRITE_S_PER_BYTE


def replace_chunks(store: Store, chunks: Sequence[Chunk], delete_ids: Sequence[str]) -> BulkSummary:
    """Index ``chunks`` and delete ``delete_ids`` in ONE ``_bulk`` request, then refresh.

    This is what makes a document's re-ingest all-or-nothing when the command is
    interrupted: a request that never fully arrived is not applied, one that did is
    applied whole (osmem applies a request under one lock; Elasticsearch finishes a
    request it received even if the client is gone). Items refused with 429 are
    retried in a follow-up request, the one case where a kill can land between two
    requests of one document. A replacement above ``MAX_ATOMIC_BYTES`` is refused
    (``IngestError``) rather than split. Deleting an id that is gone is not an error. The
    request waits ``write_timeout`` for its answer.
    """
    actions = replacement_actions(chunks, delete_ids, store.names.chunks)
    if not actions:
        return BulkSummary()
    size = _request_bytes(actions)
    if size > MAX_ATOMIC_BYTES:
        raise IngestError(
            f"the document's chunks make a {size / 2**20:,.0f} MiB write, above the "
            f"{MAX_ATOMIC_BYTES // 2**20} MiB one request can carry, so it cannot be replaced all at once",
            hint="split the file into smaller documents",
        )
    items = _bulk_items(
        store,
        actions,
        what="replace chunks",
        raise_on_exception=False,
        chunk_size=len(actions),
        max_chunk_bytes=2 * MAX_ATOMIC_BYTES,  # never split: the size was checked above
        request_timeout=write_timeout(store.settings.request_timeout, size),
    )
    # Deleting an id that is already gone is what was wanted.
    created, updated, failed = _tally(
        (ok, op, result)
        for ok, op, result in items
        if not (op == "delete" and (ok or result.get("status") == 404))
    )
    if failed:
        first = failed[0]
        raise BulkError(
            f"{len(failed)} of {len(actions)} chunk writes and deletes failed; "
            f"first: {first['_id']}: {first['error']}",
            failed,
            hint="fix the cause and re-run; indexing is idempotent by id",
        )
    _refresh(store, store.names.chunks)
    return BulkSummary(created=created, updated=updated)


def delete_chunks(store: Store, ids: Iterable[str]) -> int:
    """Delete chunks by id; returns how many existed. Missing ids are not an error."""
    deleted = 0
    failed: list[dict[str, object]] = []
    actions = ({"_op_type": "delete", "_index": store.names.chunks, "_id": chunk_id} for chunk_id in ids)
    for ok, _, result in _bulk_items(store, actions, what="delete chunks", raise_on_exception=True):
        if result.get("result") == "deleted":
            deleted += 1
        elif not ok and result.get("status") != 404:
            failed.append({"op": "delete", "_id": result.get("_id"), "error": result.get("error")})
    if failed:
        raise BulkError(f"{len(failed)} chunk deletes failed; first: {failed[0]['_id']}", failed)
    _refresh(store, store.names.chunks)
    return deleted


@dataclass(frozen=True)
class StoredChunk:
    """What a re-ingest needs to know of a stored chunk: its content hash and the file it came from."""

    content_hash: str
    source_path: str | None
    embedding_model: str | None = None  # the model its stored vector was made under (None: no vector)


def stored_chunks(store: Store, doc_id: str) -> dict[str, StoredChunk]:
    """chunk_id → ``StoredChunk`` of every chunk of one document, for incremental re-ingest."""
    query = {"bool": {"filter": [{"term": {"doc_id": doc_id}}]}}
    source = {"includes": ["chunk_id", "content_hash", "source_path", "embedding.model"]}
    with engine_errors(_engine_error(store, "search chunks")):
        return {
            hit["_source"]["chunk_id"]: StoredChunk(
                content_hash=hit["_source"]["content_hash"],
                source_path=hit["_source"].get("source_path"),
                embedding_model=(hit["_source"].get("embedding") or {}).get("model"),
            )
            for hit in search_pages(store, store.names.chunks, query, [{"chunk_id": "asc"}], source=source)
        }


def doc_chunk_hashes(store: Store, doc_id: str) -> dict[str, str]:
    """chunk_id → content_hash of every chunk of one document."""
    return {chunk_id: stored.content_hash for chunk_id, stored in stored_chunks(store, doc_id).items()}


CHUNKS_PER_GET = 1000  # chunk ids per mget request


def get_chunks(store: Store, ids: Sequence[str]) -> list[Chunk]:
    """The chunks with these ids, in the order asked; ids that do not exist are left out. One mget per
    ``CHUNKS_PER_GET`` ids."""
    found: list[Chunk] = []
    for start in range(0, len(ids), CHUNKS_PER_GET):
        with engine_errors(_engine_error(store, "get chunks")):
            response = store.client.mget(
                index=store.names.chunks, ids=list(ids[start : start + CHUNKS_PER_GET])
            )
        found += (chunk_from_source(doc["_source"]) for doc in response.body["docs"] if doc.get("found"))
    return found


def neighbour_query(request: NeighbourRequest) -> dict[str, Any]:
    """The search body for one neighbour window (pure)."""
    filters: list[dict[str, Any]] = [
        {"term": {"doc_id": request.doc_id}},
        {"range": {"position": {"gte": request.lo, "lte": request.hi}}},
    ]
    if request.section is not None:
        filters.append({"term": {"section": request.section}})
    return {
        "query": {"bool": {"filter": filters}},
        "sort": [{"position": "asc"}, {"chunk_id": "asc"}],
        "size": min(request.hi - request.lo + 1, MAX_WINDOW),
    }


def neighbours(store: Store, requests: Sequence[NeighbourRequest]) -> list[Chunk]:
    """The chunks inside every window, fetched in one ``msearch``; de-duplicated, in document order."""
    if not requests:
        return []
    searches: list[dict[str, Any]] = []
    for request in requests:
        searches += [{"index": store.names.chunks}, neighbour_query(request)]
    with engine_errors(_engine_error(store, "fetch neighbours")):
        responses = store.client.msearch(searches=searches).body["responses"]
    found: dict[str, Chunk] = {}
    for request, response in zip(requests, responses, strict=True):
        if "error" in response:
            if index_missing(response["error"]):
                raise missing_chunk_index(store, "fetch neighbours")
            window = f"{request.doc_id} [{request.lo}..{request.hi}]"
            raise EngineError(f"neighbour search for {window} failed: {response['error']}")
        for hit in response["hits"]["hits"]:
            found.setdefault(hit["_id"], chunk_from_source(hit["_source"]))
    return sorted(found.values(), key=lambda c: (c.doc_id, c.position, c.chunk_id))


def count_chunks(store: Store) -> int:
    """How many chunks the chunk index holds."""
    with engine_errors(_engine_error(store, "count chunks")):
        return int(store.client.count(index=store.names.chunks).body["count"])
