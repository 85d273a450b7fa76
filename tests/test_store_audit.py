"""Audit writes, partial failures, prune and read-back against a real engine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from _store_data import QUOTE_JOB

from esbubble.config import parse_config
from esbubble.errors import ConfigError, NotFoundError
from esbubble.runner import run_bubble
from esbubble.store.audit import (
    TraceWriter,
    flush_spool,
    parse_age,
    prune_traces,
    read_run,
    spool_dir,
)
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store

pytestmark = pytest.mark.integration


def _run(store: Store, query: str = "scaffold roof") -> tuple[str, int]:
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, query, parse_config({"bubble": {"token_budget": 30}}))
    return result.bubble.run_id, len(result.bubble.trace)


def test_unknown_run_is_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="run 'nope' not found"):
        read_run(store, "nope")
    _run(store)
    with pytest.raises(NotFoundError, match="traces flush"):
        read_run(store, "nope")


def test_refused_records_are_spooled_and_the_rest_written(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, "scaffold roof", parse_config({}))
    records = list(result.bubble.trace)
    # Block the month of one record: its index maps chunk_id as a number, so the record is refused.
    blocked = records[0].model_copy(update={"timestamp": datetime(2001, 1, 5, tzinfo=UTC)})
    blocked_index = store.names.traces_index(blocked.timestamp)
    store.client.indices.create(
        index=blocked_index, mappings={"properties": {"chunk_id": {"type": "integer"}}}
    )
    writer = TraceWriter.for_store(store)
    written = writer.write(result.manifest, [blocked, *records[1:]])
    assert (written.written, written.spooled) == (len(records), 1)
    assert written.error is not None and written.error.startswith("1 of ")
    assert written.spool_file is not None
    line = json.loads(written.spool_file.read_text().strip())
    assert (line["_index"], line["_id"]) == (blocked_index, blocked.trace_id)

    still_blocked = flush_spool(store)
    assert (still_blocked.written, still_blocked.remaining) == (0, 1), "failed lines stay in the spool"
    assert written.spool_file.exists()
    store.client.indices.delete(index=blocked_index)
    flushed = flush_spool(store)
    assert (flushed.written, flushed.remaining) == (1, 0)
    assert list(spool_dir(store.settings.home).iterdir()) == []


def test_spool_keeps_lines_it_cannot_read(store: Store) -> None:
    directory = spool_dir(store.settings.home)
    directory.mkdir(parents=True)
    (directory / "broken.jsonl").write_text("not json\n")
    assert flush_spool(store).remaining == 1
    assert (directory / "broken.jsonl").read_text() == "not json\n"


def test_prune_drops_old_months_and_old_records(store: Store) -> None:
    run_id, count = _run(store)
    manifest, records = read_run(store, run_id)
    old = datetime(2020, 3, 10, tzinfo=UTC)
    writer = TraceWriter.for_store(store)
    old_records = [r.model_copy(update={"timestamp": old, "trace_id": f"old-{r.trace_id}"}) for r in records]
    old_manifest = manifest.model_copy(update={"timestamp": old, "run_id": "old-run"})
    assert writer.write(old_manifest, old_records).written == count + 1
    assert store.client.count(index=store.names.traces).body["count"] == 2 * count

    now = manifest.timestamp + timedelta(days=1)
    assert prune_traces(store, timedelta(days=30), now=now) == count
    assert not store.client.indices.exists(index=store.names.traces_index(old))
    assert store.client.count(index=store.names.traces).body["count"] == count
    assert read_run(store, run_id)[0].run_id == run_id
    assert prune_traces(store, timedelta(minutes=1), now=now) == count
    assert store.client.count(index=store.names.traces).body["count"] == 0


def test_parse_age() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("12h") == timedelta(hours=12)
    with pytest.raises(ConfigError, match="invalid age '30x'"):
        parse_age("30x")
