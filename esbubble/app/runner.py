"""One run, end to end: retrieve → build the bubble → build the manifest → write the audit trail.

The only orchestration with I/O around the pure core; everything it calls is
a stage someone can run on its own.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from esbubble.app.meaning import Meaning
from esbubble.app.query_key import query_key
from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.manifest import build_manifest
from esbubble.models import Bubble, RunManifest, Variant
from esbubble.store.audit import TraceWriter, WriteResult
from esbubble.store.chunks import count_chunks
from esbubble.store.connection import Store
from esbubble.store.query import RetrievalFilters, redact_query_body
from esbubble.store.retrieve import Retrieval, retrieve


class RunResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bubble: Bubble
    manifest: RunManifest
    write_result: WriteResult


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How runs are made and recorded, beyond their query and profile (the same for every run of a batch).

    ``variant`` names the ablation that ran (None: the profile's); ``batch_id``
    groups the runs of one ``rebubble`` batch; ``filters`` narrow retrieval;
    ``redact_query`` keeps the query text out of every stored record; ``now``
    is the runs' timestamp (None: the time each run is made).
    """

    variant: Variant | None = None
    batch_id: str | None = None
    filters: RetrievalFilters | None = None
    redact_query: bool = False
    now: datetime | None = None


def record_run(
    store: Store,
    retrieval: Retrieval,
    config: BubbleConfig,
    options: RunOptions,
    *,
    run_id: str,
    index_doc_count: int | None,
    timings_ms: dict[str, float],
    key: bytes | None = None,
) -> tuple[Bubble, RunManifest]:
    """The bubble for one retrieval and the manifest that records it (the bubble's time is added).

    The query hash is keyed with ``key`` (default: the home's, see ``esbubble.app.query_key``).
    """
    now = options.now or datetime.now(UTC)
    stage = time.perf_counter()
    bubble = build_bubble(
        retrieval.query,
        retrieval.candidates,
        config,
        run_id=run_id,
        now=now,
        batch_id=options.batch_id,
        variant=options.variant,
        redact_query=options.redact_query,
        stats=retrieval.term_stats,
        query_key=key if key is not None else query_key(store.settings.home),
    )
    timings = {**timings_ms, "bubble": _ms(stage)}
    body = redact_query_body(retrieval.request_body) if options.redact_query else retrieval.request_body
    manifest = build_manifest(
        bubble,
        config,
        index=store.names.chunks,
        engine=store.engine,
        request_body=body,
        index_doc_count=index_doc_count,
        timings_ms=timings,
        now=now,
    )
    return bubble, manifest


def run_bubble(
    store: Store,
    query: str,
    config: BubbleConfig,
    options: RunOptions = RunOptions(),
    *,
    writer: TraceWriter | None = None,
    meaning: Meaning | None = None,
) -> RunResult:
    """Build one bubble for ``query`` and record it; auditing problems warn, they never fail the run.
    ``meaning`` holds the embedding models loaded so far (a new one when None: ``app.meaning``)."""
    started = time.perf_counter()
    (retrieval,) = (meaning or Meaning()).attach(
        [retrieve(store, query, config, options.filters)], config.bubble
    )
    timings = {"retrieve": _ms(started), "engine": round(retrieval.took_ms, 3)}
    stage = time.perf_counter()
    doc_count = count_chunks(store)
    timings["count"] = _ms(stage)
    bubble, manifest = record_run(
        store,
        retrieval,
        config,
        options,
        run_id=str(uuid.uuid4()),
        index_doc_count=doc_count,
        timings_ms=timings,
    )
    manifest = manifest.model_copy(update={"timings_ms": {**manifest.timings_ms, "total": _ms(started)}})
    audit = writer if writer is not None else TraceWriter.for_store(store)
    return RunResult(bubble=bubble, manifest=manifest, write_result=audit.write(manifest, bubble.trace))
