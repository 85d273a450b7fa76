"""The background trace writer: never blocks, batches runs, and loses no record on close or failure."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from _store_data import QUOTE_JOB

from esbubble.config import parse_config
from esbubble.runner import run_bubble
from esbubble.store.audit import BackgroundTraceWriter, TraceWriter, read_run, spool_dir
from esbubble.store.chunks import index_chunks
from esbubble.store.client import make_client
from esbubble.store.connection import Store
from esbubble.store.names import IndexNames

pytestmark = pytest.mark.integration

QUERIES = ("scaffold roof", "membrane warranty", "price of works", "site access")


def test_queued_runs_are_all_written_by_close(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({})
    with BackgroundTraceWriter.for_store(store) as writer:
        results = [run_bubble(store, query, config, writer=writer) for query in QUERIES]
        for result in results:
            assert result.write_result.queued == len(result.bubble.trace) + 1
            assert result.write_result.written == 0
    summary = writer.close()  # closing twice is harmless and reports the same totals
    expected = sum(len(r.bubble.trace) + 1 for r in results)
    assert (summary.written, summary.spooled, summary.lost) == (expected, 0, 0)
    for result in results:
        manifest, records = read_run(store, result.bubble.run_id)
        assert manifest == result.manifest
        assert records == sorted(result.bubble.trace, key=lambda r: (r.rank, r.chunk_id))


def test_flush_makes_queued_runs_readable_without_closing(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    writer = BackgroundTraceWriter.for_store(store)
    result = run_bubble(store, "scaffold roof", parse_config({}), writer=writer)
    writer.flush()
    assert len(read_run(store, result.bubble.run_id)[1]) == len(result.bubble.trace)
    assert writer.close().written == len(result.bubble.trace) + 1


def test_refused_records_of_a_batch_are_spooled_under_their_run(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    config = parse_config({})
    plain = TraceWriter.for_store(store)
    first = run_bubble(store, "scaffold roof", config, writer=plain)
    second = run_bubble(store, "membrane warranty", config, writer=plain)
    blocked = first.bubble.trace[0].model_copy(update={"timestamp": datetime(2001, 1, 5, tzinfo=UTC)})
    store.client.indices.create(
        index=store.names.traces_index(blocked.timestamp),
        mappings={"properties": {"chunk_id": {"type": "integer"}}},
    )
    writer = BackgroundTraceWriter.for_store(store)
    writer.write(first.manifest, [blocked, *first.bubble.trace[1:]])
    writer.write(second.manifest, second.bubble.trace)
    summary = writer.close()
    assert summary.error is not None and "refused" in summary.error
    total = len(first.bubble.trace) + len(second.bubble.trace) + 2
    assert (summary.written, summary.spooled, summary.lost) == (total - 1, 1, 0)
    spooled = (spool_dir(store.settings.home) / f"{first.bubble.run_id}.jsonl").read_text().splitlines()
    assert [json.loads(line)["_id"] for line in spooled] == [blocked.trace_id]


def test_an_unreachable_cluster_spools_everything(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, "scaffold roof", parse_config({}), writer=TraceWriter.for_store(store))
    dead = make_client("http://127.0.0.1:9", request_timeout=1, max_retries=0)
    writer = BackgroundTraceWriter(dead, IndexNames.for_prefix("gone"), store.settings.home)
    writer.write(result.manifest, result.bubble.trace)
    summary = writer.close()
    assert summary.error is not None
    assert (summary.written, summary.spooled, summary.lost) == (0, len(result.bubble.trace) + 1, 0)
    dead.close()
