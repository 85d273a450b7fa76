"""Audit writes, partial failures, prune and read-back against a real engine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _store_data import QUOTE_JOB
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from reliability_proxy import forwarding_proxy

from esbubble.app.cli import cli
from esbubble.app.runner import run_bubble
from esbubble.config import parse_config
from esbubble.errors import ConfigError, NotFoundError
from esbubble.store.audit import (
    TraceWriter,
    flush_spool,
    parse_age,
    prune_traces,
    read_run,
    spool_dir,
    spool_file,
)
from esbubble.store.chunks import index_chunks
from esbubble.store.client import make_client
from esbubble.store.connection import Store, connect

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
    blocked = {**records[0], "@timestamp": "2001-01-05T00:00:00Z"}
    blocked_index = store.names.traces_index(datetime(2001, 1, 5, tzinfo=UTC))
    store.client.indices.create(
        index=blocked_index, mappings={"properties": {"chunk_id": {"type": "integer"}}}
    )
    writer = TraceWriter.for_store(store)
    written = writer.write(result.manifest, [blocked, *records[1:]])
    assert (written.written, written.spooled) == (len(records), 1)
    assert written.error is not None and written.error.startswith("1 of ")
    assert written.spool_file is not None
    line = json.loads(written.spool_file.read_text().strip())
    assert (line["_index"], line["_id"]) == (blocked_index, blocked["trace_id"])

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
    stamp = "2020-03-10T00:00:00Z"
    old_records = [{**r, "@timestamp": stamp, "trace_id": f"old-{r['trace_id']}"} for r in records]
    old_manifest = manifest.model_copy(update={"timestamp": old, "run_id": "old-run"})
    assert writer.write(old_manifest, old_records).written == count + 1
    assert store.client.count(index=store.names.traces).body["count"] == 2 * count

    # 90 s on, so the run's month is still open at the 1-minute cutoff (a day on crossed into the next
    # month on a month's last day, and dropped the run's month whole: the next test covers that)
    now = manifest.timestamp + timedelta(seconds=90)
    assert prune_traces(store, timedelta(days=30), now=now) == count
    assert not store.client.indices.exists(index=store.names.traces_index(old))
    assert store.client.count(index=store.names.traces).body["count"] == count
    assert read_run(store, run_id)[0].run_id == run_id
    assert prune_traces(store, timedelta(minutes=1), now=now) == count
    assert _traces_left(store) == 0


def _traces_left(store: Store) -> int:
    """Trace records behind the alias; none when pruning dropped every month's index."""
    found = store.client.count(index=store.names.traces, ignore_unavailable=True, allow_no_indices=True)
    return int(found.body["count"])


def test_after_a_prune_drops_every_month_runs_are_not_found_and_new_ones_are_recorded(store: Store) -> None:
    run_id, count = _run(store)
    manifest, _ = read_run(store, run_id)
    next_month = manifest.timestamp + timedelta(days=40)
    assert prune_traces(store, timedelta(days=1), now=next_month) == count
    assert not store.client.indices.exists(index=store.names.traces_index(manifest.timestamp))
    assert _traces_left(store) == 0
    with pytest.raises(NotFoundError, match=f"run {run_id!r} not found"):
        read_run(store, run_id)
    again, again_count = _run(store)
    assert read_run(store, again)[0].run_id == again and _traces_left(store) == again_count


def test_parse_age() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("12h") == timedelta(hours=12)
    with pytest.raises(ConfigError, match="invalid age '30x'"):
        parse_age("30x")


# --- ids that become file names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "run_id", ["x/../../../../escape/pwned", "sheet/row", "..", ".hidden", "q" * 600, "naïve id", "a\\b"]
)
def test_spool_file_is_one_bounded_name_directly_in_the_spool(tmp_path: Path, run_id: str) -> None:
    path = spool_file(tmp_path, run_id)
    assert path.parent == spool_dir(tmp_path)
    assert len(path.name.encode()) <= 255 and "/" not in path.name and not path.name.startswith(".")
    assert spool_file(tmp_path, run_id) == path  # stable: one file per run


def test_plain_run_ids_keep_their_name(tmp_path: Path) -> None:
    assert spool_file(tmp_path, "batch-1.q_7").name == "batch-1.q_7.jsonl"


@given(st.text(min_size=1, max_size=300))
def test_any_run_id_stays_inside_the_spool(run_id: str) -> None:
    home = Path("/home/esbubble")
    path = spool_file(home, run_id)
    assert path.parent == spool_dir(home) and len(path.name.encode()) <= 255


def test_traversal_run_id_spools_inside_home_and_flush_reads_it(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    home = store.settings.home
    result = run_bubble(store, "scaffold roof", parse_config({}))
    evil = result.manifest.model_copy(update={"run_id": "x/../../../../escape/pwned"})
    dead = make_client("http://127.0.0.1:9", request_timeout=1, max_retries=0)
    spooled = TraceWriter(dead, store.names, home).write(evil, result.bubble.trace)
    dead.close()
    assert spooled.spooled == len(result.bubble.trace) + 1 and spooled.spool_file is not None
    assert spooled.spool_file.parent == spool_dir(home)
    assert [p for p in home.parent.rglob("pwned*")] == []
    flushed = flush_spool(store)
    assert (flushed.written, flushed.remaining) == (spooled.spooled, 0)


def test_flush_reads_spool_files_in_subfolders(store: Store) -> None:
    """Older versions spooled an id like ``sheet/row`` into a subfolder: flush must not skip it."""
    index_chunks(store, QUOTE_JOB)
    result = run_bubble(store, "scaffold roof", parse_config({}))
    nested = spool_dir(store.settings.home) / "sheet" / "row.jsonl"
    nested.parent.mkdir(parents=True)
    actions = TraceWriter.for_store(store).actions(result.manifest, result.bubble.trace)
    nested.write_text("".join(json.dumps(a) + "\n" for a in actions))
    flushed = flush_spool(store)
    assert (flushed.written, flushed.remaining, flushed.files) == (len(actions), 0, 1)
    assert not nested.exists()


# --- prune ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["99999999999d", "36601d", "9" * 5000 + "d"])
def test_absurd_ages_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid age"):
        parse_age(text)


def test_prune_cli_rejects_an_absurd_age_without_traceback() -> None:
    result = CliRunner().invoke(
        cli, ["traces", "prune", "--older-than", "99999999999d"], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("esbubble: error: invalid age '99999999999d'")


def test_prune_deletes_by_query_with_conflicts_proceed(store: Store) -> None:
    """A record re-written while delete_by_query runs (a spool replay) must not abort the prune (409)."""
    _run(store)
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        proxied = connect(url, store.settings.model_copy(update={"url": url}), shown_url=url)
        prune_traces(proxied, timedelta(days=30))
        proxied.client.close()
    deletes = [line for line in wire.requests if "_delete_by_query" in line]
    assert deletes and all("conflicts=proceed" in line for line in deletes)
