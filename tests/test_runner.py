"""One run end to end on a real engine: chunks → retrieval → bubble → traces read back."""

from __future__ import annotations

import socket
import warnings

import pytest
from _store_data import QUOTE_JOB

from esbubble.app.runner import RunOptions, run_bubble
from esbubble.config import parse_config
from esbubble.models import TraceRecord
from esbubble.store.audit import TraceWriter, flush_spool, read_run, spool_dir
from esbubble.store.chunks import index_chunks
from esbubble.store.client import make_client
from esbubble.store.connection import Store
from esbubble.store.retrieve import retrieve

pytestmark = pytest.mark.integration

A1_FIELDS = (
    "chunk_id",
    "sheet_name",
    "section",
    "bucket",
    "row_number",
    "token_count",
    "tf",
    "boost",
    "len_penalty",
    "score_raw",
    "score_final",
    "stage",
    "step_decision",
    "final_decision",
    "final_reason",
    "step_details",
    "run_id",
    "timestamp",
    "query_hash",  # the query text itself is in the run manifest (stored once per run)
    "variant",
    "rank",
    "overlap",
    "es_score",
)
PROFILE = {
    "bubble": {"token_budget": 40, "candidate_k": 20},
    "priors": {"sections": {"Scaffolding": 1.0, "Terms": -2.5}},
    "buckets": {"shares": {"Scaffolding": 0.6, "Roofing": 0.4}},
}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_run_writes_traces_readable_with_every_a1_field(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, "scaffold hire roof", parse_config(PROFILE))
    bubble = result.bubble
    assert result.write_result.written == len(bubble.trace) + 1
    assert result.write_result.spooled == 0
    assert bubble.selected, "the profile leaves room for at least one chunk"

    manifest, records = read_run(store, bubble.run_id)
    assert manifest == result.manifest
    assert records == sorted(bubble.trace, key=lambda r: (r["rank"], r["chunk_id"]))
    for record in records:
        dumped = TraceRecord.model_validate(record).model_dump()
        missing = [f for f in A1_FIELDS if f not in dumped]
        assert not missing
    assert {r["chunk_id"] for r in records} == {c.chunk.chunk_id for c in []} | {
        r["chunk_id"] for r in bubble.trace
    }
    assert manifest.engine == store.engine
    assert manifest.index_doc_count == len(QUOTE_JOB)
    assert manifest.request_body is not None
    assert manifest.request_body["size"] == 20
    assert set(manifest.timings_ms) >= {"retrieve", "bubble", "total"}


def test_a_run_scores_with_the_engines_term_statistics(store: Store) -> None:
    """``esbubble bubble`` scores bm25 with the chunk index's document frequencies that retrieval
    fetched (as ``esbubble eval`` does), not with the few candidates it got back."""
    index_chunks(store, QUOTE_JOB)
    config = parse_config({**PROFILE, "bubble": {"token_budget": 40, "candidate_k": 3}})
    retrieval = retrieve(store, "scaffold hire roof", config)
    assert retrieval.term_stats is not None and len(retrieval.candidates) == 3
    result = run_bubble(store, "scaffold hire roof", config)
    assert result.manifest.term_stats == retrieval.term_stats.to_json()
    assert result.manifest.term_stats["doc_count"] == len(QUOTE_JOB)


def test_same_query_same_bubble_and_trace_apart_from_ids(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config(PROFILE)
    first = run_bubble(store, "scaffold hire roof", config).bubble
    second = run_bubble(store, "scaffold hire roof", config).bubble
    assert first.run_id != second.run_id
    assert [s.chunk.chunk_id for s in first.selected] == [s.chunk.chunk_id for s in second.selected]
    volatile = {"trace_id", "run_id", "@timestamp"}
    assert [{k: v for k, v in r.items() if k not in volatile} for r in first.trace] == [
        {k: v for k, v in r.items() if k not in volatile} for r in second.trace
    ]


def test_redacted_run_records_no_query_text(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, "gutters downpipes", parse_config(PROFILE), RunOptions(redact_query=True))
    manifest, records = read_run(store, result.bubble.run_id)
    assert manifest.query is None
    assert records and all("gutters" not in str(r) for r in records)
    assert "gutters" not in str(manifest.model_dump())


def test_unreachable_audit_spools_then_flush_writes_exactly_once(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    dead = make_client(f"http://127.0.0.1:{_closed_port()}", request_timeout=2, max_retries=0)
    writer = TraceWriter(dead, store.names, store.settings.home)
    result = run_bubble(store, "scaffold hire roof", parse_config(PROFILE), writer=writer)
    expected = len(result.bubble.trace) + 1
    assert result.write_result.written == 0
    assert result.write_result.spooled == expected
    assert result.write_result.spool_file is not None
    assert result.write_result.spool_file.parent == spool_dir(store.settings.home)

    flushed = flush_spool(store)
    assert (flushed.written, flushed.remaining, flushed.files) == (expected, 0, 1)
    assert list(spool_dir(store.settings.home).glob("*.jsonl")) == []
    manifest, records = read_run(store, result.bubble.run_id)
    assert len(records) == len(result.bubble.trace)
    assert manifest.run_id == result.bubble.run_id

    # Replaying the same records again cannot duplicate them: ids are derived.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = TraceWriter.for_store(store).write(result.manifest, result.bubble.trace)
    assert again.written == expected
    assert store.client.count(index=store.names.traces).body["count"] == len(result.bubble.trace)
    dead.close()
