"""The background trace writer: never blocks, batches runs, and loses no record on close or failure."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from _store_data import QUOTE_JOB
from reliability_proxy import forwarding_proxy

from esbubble.app.runner import run_bubble
from esbubble.config import parse_config
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
        assert records == sorted(result.bubble.trace, key=lambda r: (r["rank"], r["chunk_id"]))


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
    blocked = {**first.bubble.trace[0], "@timestamp": "2001-01-05T00:00:00Z"}
    store.client.indices.create(
        index=store.names.traces_index(datetime(2001, 1, 5, tzinfo=UTC)),
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
    assert [json.loads(line)["_id"] for line in spooled] == [blocked["trace_id"]]


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


@pytest.mark.parametrize("refusals", [1, 2])
def test_a_bulk_refused_as_a_whole_is_retried_run_by_run(store: Store, refusals: int) -> None:
    """One bad record can make Elasticsearch refuse a whole bulk (400): the other runs of the same
    request are still written, only the run that is refused again goes to the spool."""
    index_chunks(store, QUOTE_JOB)
    config = parse_config({})
    plain = TraceWriter.for_store(store)
    runs = [run_bubble(store, query, config, writer=plain) for query in QUERIES[:2]]
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url, fail_status=400) as (url, wire):
        proxied = make_client(url, request_timeout=10)
        writer = BackgroundTraceWriter(proxied, store.names, store.settings.home, linger_s=5.0)
        for result in runs:
            writer.write(result.manifest, result.bubble.trace)
        wire.fail_first = refusals  # the two-run request, then (if 2) the first run's own retry
        summary = writer.close()
        proxied.close()
    sizes = [len(r.bubble.trace) + 1 for r in runs]
    bulks = [line for line in wire.requests if "_bulk" in line]
    assert len(bulks) == 3  # both runs together, then one request per run
    if refusals == 1:
        assert (summary.written, summary.spooled) == (sum(sizes), 0)
    else:
        assert (summary.written, summary.spooled) == (sizes[1], sizes[0])
        assert summary.error is not None and "status 400" in summary.error
        spooled = spool_dir(store.settings.home) / f"{runs[0].bubble.run_id}.jsonl"
        assert len(spooled.read_text().splitlines()) == sizes[0]
    assert summary.lost == 0
