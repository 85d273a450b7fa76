"""The audit trail: trace records and run manifests written to Elasticsearch, or spooled locally.

A run never fails because auditing failed. ``TraceWriter.write`` bulk-writes
one document per trace record (``_id`` = trace_id) to the monthly
``<prefix>-traces-YYYY.MM`` index and the manifest (``_id`` = run_id) to
``<prefix>-runs-YYYY.MM``; whatever the cluster refuses or cannot receive is
appended to ``<home>/spool/<run_id>.jsonl`` (see ``spool_file``), and the
``WriteResult`` says so: the caller reports it once (the CLI prints one line,
and exits 4 when records could be neither written nor spooled). ``flush_spool``
replays the spool later; ids make replays idempotent, so nothing is duplicated.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import streaming_bulk
from pydantic import BaseModel, ConfigDict, Field

from esbubble.errors import ConfigError, EngineError, NotFoundError
from esbubble.models import RunManifest, TraceDict, trace_dict
from esbubble.store.connection import Store
from esbubble.store.errors import Failure, always, engine_errors, tolerating
from esbubble.store.names import IndexNames
from esbubble.store.paging import search_pages

log = logging.getLogger(__name__)

BULK_MAX_RETRIES = 5
# Audit records per bulk request (trace writes and spool replays). The client's default
# (500) cut every background batch into requests of 500; osmem re-indexes piled-up runs
# of 100–999 documents, so fewer, larger requests halve its cost per record
# (docs/benchmarks.md). At ~1.5 KB a record, a request stays well under
# Elasticsearch's recommended 5–15 MB.
TRACE_BULK_ACTIONS = 5000
_MONTHLY = re.compile(r"-(\d{4})\.(\d{2})$")
_DURATION = re.compile(r"(\d{1,12})\s*([dhm])")


class WriteResult(BaseModel):
    """Where a run's audit records went: the cluster, the spool, or (only if the disk fails too) nowhere."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    written: int
    spooled: int = 0
    lost: int = 0
    queued: int = Field(default=0, description="handed to a background writer, not yet written")
    spool_file: Path | None = None
    error: str | None = None


class FlushResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    written: int
    remaining: int
    files: int


def spool_dir(home: Path) -> Path:
    return home / "spool"


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def spool_file(home: Path, run_id: str) -> Path:
    """The spool file of one run: always one file directly in the spool folder.

    Run ids come partly from user input (query-set ids), so one that is not a
    short plain file name (``/``, ``..``, over 100 characters, …) is replaced
    by the SHA-256 of the run id: never a path outside the folder, never a
    name too long for the file system, and still one stable file per run.
    """
    safe = _SAFE_NAME.fullmatch(run_id) and ".." not in run_id
    name = run_id if safe else hashlib.sha256(run_id.encode("utf-8")).hexdigest()
    return spool_dir(home) / f"{name}.jsonl"


@dataclass(frozen=True, slots=True)
class _BulkOutcome:
    """One bulk write: how many landed, the actions that did not (in action order), and why."""

    written: int
    failed: list[dict[str, Any]]
    error: str | None = None
    whole_request: bool = False  # the cluster refused the request itself, not single items
    unreachable: bool = False  # no answer at all (connection, timeout, TLS)


def _bulk(client: Elasticsearch, actions: Sequence[dict[str, Any]]) -> _BulkOutcome:
    """Index ``actions``; transport failures propagate, refusals come back in the outcome.

    Failed items are matched by ``_id`` (ids are unique per call) because
    retried items come back out of order.
    """
    written = 0
    failed_ids: set[str] = set()
    reason: str | None = None
    whole = False
    for ok, item in streaming_bulk(
        client,
        iter(actions),
        chunk_size=TRACE_BULK_ACTIONS,
        max_retries=BULK_MAX_RETRIES,
        initial_backoff=0.5,
        raise_on_error=False,
        raise_on_exception=False,
    ):
        if ok:
            written += 1
            continue
        info = next(iter(item.values()))
        failed_ids.add(str(info.get("_id")))
        whole = whole or "exception" in info
        if reason is None:
            error = info.get("error")
            detail = error.get("reason") or error.get("type") if isinstance(error, dict) else error
            reason = f"status {info.get('status')}: {detail}"
    failed = [action for action in actions if action["_id"] in failed_ids]
    return _BulkOutcome(written, failed, reason, whole)


def _refresh(client: Elasticsearch, names: IndexNames) -> None:
    """Make written audit records searchable. A run with no candidates writes only its manifest, so
    the traces alias may not exist yet: that is not a failure."""
    client.indices.refresh(
        index=f"{names.traces},{names.runs}", ignore_unavailable=True, allow_no_indices=True
    )


def _write_actions(
    client: Elasticsearch, names: IndexNames, actions: Sequence[dict[str, Any]]
) -> _BulkOutcome:
    """Bulk-write and refresh; an unreachable cluster is an outcome where every action failed."""
    with tolerating(always) as problem:
        outcome = _bulk(client, actions)
        if outcome.written:
            _refresh(client, names)
    if problem.failure is not None:
        failure = problem.failure
        return _BulkOutcome(0, list(actions), failure.reason, unreachable=not failure.answered)
    return outcome


def _write_lines(path: Path, actions: Iterable[dict[str, Any]]) -> None:
    """Replace ``path`` atomically with one JSON line per action."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        for action in actions:
            out.write(json.dumps(action, sort_keys=True) + "\n")
    os.replace(temporary, path)


class TraceWriter:
    """Writes a run's trace records and manifest; spools what the cluster does not take."""

    def __init__(self, client: Elasticsearch, names: IndexNames, home: Path) -> None:
        self._client = client
        self._names = names
        self._home = home

    @classmethod
    def for_store(cls, store: Store) -> TraceWriter:
        return cls(store.client, store.names, store.settings.home)

    def actions(self, manifest: RunManifest, records: Sequence[TraceDict]) -> list[dict[str, Any]]:
        """The bulk actions for one run: every trace record (already the plain structure stored), then
        the manifest."""
        indices: dict[str, str] = {}
        for stamp in {record["@timestamp"] for record in records}:
            indices[stamp] = self._names.traces_index(datetime.fromisoformat(stamp))
        actions: list[dict[str, Any]] = [
            {"_index": indices[record["@timestamp"]], "_id": record["trace_id"], "_source": record}
            for record in records
        ]
        actions.append(
            {
                "_index": self._names.runs_index(manifest.timestamp),
                "_id": manifest.run_id,
                "_source": manifest.model_dump(mode="json", by_alias=True),
            }
        )
        return actions

    def write(self, manifest: RunManifest, records: Sequence[TraceDict]) -> WriteResult:
        """Write to the cluster; never raises for audit failures (spools instead, see ``WriteResult``)."""
        actions = self.actions(manifest, records)
        outcome = _write_actions(self._client, self._names, actions)
        if not outcome.failed:
            return WriteResult(written=outcome.written)
        error = _why(outcome, len(actions))
        return self._spool(manifest.run_id, outcome.written, outcome.failed, error)

    def _spool(self, run_id: str, written: int, failed: list[dict[str, Any]], error: str) -> WriteResult:
        path = spool_file(self._home, run_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            existing = _read_spool(path)[0] if path.exists() else []
            _write_lines(path, [*existing, *failed])
        except OSError as disk:
            message = (
                f"audit records of run {run_id} could not be written ({error}) "
                f"nor spooled to {path} ({disk.strerror}); {len(failed)} records lost"
            )
            log.debug(message)
            return WriteResult(written=written, lost=len(failed), error=error)
        message = (
            f"audit records of run {run_id} not written ({error}); {len(failed)} spooled to {path} "
            "— replay them with `esbubble traces flush`"
        )
        log.debug(message)
        return WriteResult(written=written, spooled=len(failed), spool_file=path, error=error)


_Run = tuple[RunManifest, Sequence[TraceDict]]


class _Flush:
    """Queued by ``flush()``: write the batch being collected now, without waiting out the linger."""


_FLUSH = _Flush()


class BackgroundTraceWriter(TraceWriter):
    """A ``TraceWriter`` that never blocks the bubble: ``write`` queues the run and returns at once.

    One thread serialises the queued runs and bulk-writes several at a time,
    one refresh per request: it waits up to ``linger_s`` for at least
    ``min_actions`` records (fewer, larger requests cost the engine less per
    record), never sends more than ``max_actions`` at once, and writes what
    it has as soon as ``flush()`` or ``close()`` asks. What the cluster
    refuses is spooled per run, as ``TraceWriter.write`` does.
    ``close()`` (or leaving the ``with`` block) waits until every queued
    record is written or spooled, and an ``atexit`` hook closes a writer its
    owner forgot, so a normal exit never loses a record. ``flush()`` waits
    without closing, for a caller that reads its traces back.
    """

    def __init__(
        self,
        client: Elasticsearch,
        names: IndexNames,
        home: Path,
        *,
        min_actions: int = 1000,
        max_actions: int = TRACE_BULK_ACTIONS,
        linger_s: float = 0.5,
    ) -> None:
        super().__init__(client, names, home)
        self._min_actions = min_actions
        self._max_actions = max_actions
        self._linger_s = linger_s
        self._queue: queue.Queue[_Run | _Flush | None] = queue.Queue()
        self._lock = threading.Lock()
        self._written = self._spooled = self._lost = 0
        self._error: str | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._drain, name="esbubble-trace-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    @classmethod
    def for_store(cls, store: Store) -> BackgroundTraceWriter:
        return cls(store.client, store.names, store.settings.home)

    def __enter__(self) -> BackgroundTraceWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(self, manifest: RunManifest, records: Sequence[TraceDict]) -> WriteResult:
        """Queue one run's records and manifest; they are written in the background."""
        if self._closed:
            return super().write(manifest, records)
        self._queue.put((manifest, list(records)))
        return WriteResult(written=0, queued=len(records) + 1)

    def flush(self) -> None:
        """Wait until everything queued so far is written (or spooled)."""
        if self._thread.is_alive():
            self._queue.put(_FLUSH)
            self._queue.join()

    def close(self) -> WriteResult:
        """Write what is queued, stop the thread, and say where every record went."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        self._thread.join()
        atexit.unregister(self.close)
        # Should the thread have died on a bug, nothing queued is dropped: it goes to the spool.
        leftover = [item for item in _drain_now(self._queue) if isinstance(item, tuple)]
        for manifest, records in leftover:
            self._tally(self._spool(manifest.run_id, 0, self.actions(manifest, records), "writer stopped"))
        return WriteResult(
            written=self._written,
            spooled=self._spooled,
            lost=self._lost,
            spool_file=spool_dir(self._home) if self._spooled else None,
            error=self._error,
        )

    def _tally(self, result: WriteResult) -> None:
        self._error = self._error or result.error
        self._written += result.written
        self._spooled += result.spooled
        self._lost += result.lost

    def _collect(self) -> list[_Run | _Flush | None]:
        """The next batch: wait for one item, then up to ``linger_s`` for ``min_actions`` records.

        The batch ends early at a flush or close marker, and never grows past
        ``max_actions`` (a run is never split).
        """
        batch: list[_Run | _Flush | None] = [self._queue.get()]
        size = _actions_of(batch[0])
        deadline = time.monotonic() + self._linger_s
        while isinstance(batch[-1], tuple) and size < self._max_actions:
            try:
                if size >= self._min_actions:
                    item = self._queue.get_nowait()
                else:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            batch.append(item)
            size += _actions_of(item)
        return batch

    def _drain(self) -> None:
        while True:
            batch = self._collect()
            runs = [item for item in batch if isinstance(item, tuple)]
            try:
                if runs:
                    self._write_runs(runs)
            except BaseException as problem:
                # A bug, not a cluster failure: keep the records on disk, then let it surface.
                for manifest, records in runs:
                    self._tally(
                        self._spool(manifest.run_id, 0, self.actions(manifest, records), repr(problem))
                    )
                raise
            finally:
                for _ in batch:
                    self._queue.task_done()
            if batch[-1] is None:
                return

    def _write_runs(self, runs: Sequence[_Run]) -> None:
        """One bulk request for several runs; should the cluster refuse the request as a whole (one
        bad record can make it answer 400), each run is retried on its own, so one run's problem
        never sends the other runs' records to the spool."""
        per_run = [(manifest.run_id, self.actions(manifest, records)) for manifest, records in runs]
        actions = [action for _, run_actions in per_run for action in run_actions]
        outcome = _write_actions(self._client, self._names, actions)
        if outcome.whole_request and len(runs) > 1:
            for run in runs:
                self._write_runs([run])
            return
        self._written += outcome.written
        failed_ids = {action["_id"] for action in outcome.failed}
        for run_id, run_actions in per_run:
            refused = [action for action in run_actions if action["_id"] in failed_ids]
            if refused:
                self._tally(self._spool(run_id, 0, refused, _why(outcome, len(run_actions))))


def _why(outcome: _BulkOutcome, total: int) -> str:
    """Why a run's records were not written: the transport error, or how many the cluster refused."""
    if outcome.unreachable:
        return outcome.error or "the cluster did not answer"
    refused = f"{len(outcome.failed)} of {total} audit records refused"
    return f"{refused} ({outcome.error})" if outcome.error else refused


def _actions_of(item: _Run | _Flush | None) -> int:
    return len(item[1]) + 1 if isinstance(item, tuple) else 0


def _drain_now(items: queue.Queue[_Run | _Flush | None]) -> list[_Run | _Flush | None]:
    drained: list[_Run | _Flush | None] = []
    while True:
        try:
            drained.append(items.get_nowait())
        except queue.Empty:
            return drained


def _current_form(action: dict[str, Any]) -> dict[str, Any]:
    """Trace records spooled by versions that stored the query in every record: the query is in the
    run manifest now, and the strict trace mapping no longer has the field."""
    source = action["_source"]
    if isinstance(source, dict) and "trace_id" in source and "query" in source:
        return {**action, "_source": {k: v for k, v in source.items() if k != "query"}}
    return action


def _read_spool(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Parsed actions and the raw lines that are not valid actions (kept, never dropped)."""
    actions: list[dict[str, Any]] = []
    invalid: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError:
            invalid.append(line)
            continue
        if isinstance(action, dict) and {"_index", "_id", "_source"} <= set(action):
            actions.append(_current_form(action))
        else:
            invalid.append(line)
    return actions, invalid


def flush_spool(store: Store) -> FlushResult:
    """Replay every spool file; remove what was written, keep what failed (and lines that are not records)."""
    directory = spool_dir(store.settings.home)
    written = remaining = files = 0
    # rglob: spool files written by older versions could sit in subfolders (ids with ``/``).
    for path in sorted(directory.rglob("*.jsonl")) if directory.is_dir() else []:
        files += 1
        actions, invalid = _read_spool(path)
        with engine_errors(
            lambda failure: EngineError(
                f"cannot flush the audit spool to {store.display_url}: {failure.reason}"
            )
        ):
            outcome = _bulk(store.client, actions)
        done, failed = outcome.written, outcome.failed
        written += done
        remaining += len(failed) + len(invalid)
        if failed or invalid:
            temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            with temporary.open("w", encoding="utf-8") as out:
                out.writelines(json.dumps(a, sort_keys=True) + "\n" for a in failed)
                out.writelines(line + "\n" for line in invalid)
            os.replace(temporary, path)
        else:
            path.unlink()
    if written:
        _refresh(store.client, store.names)
    return FlushResult(written=written, remaining=remaining, files=files)


def _sources(
    store: Store, index: str, query: dict[str, Any], sort: list[dict[str, Any]], *, missing_ok: bool = False
) -> list[dict[str, Any]]:
    return [hit["_source"] for hit in search_pages(store, index, query, sort, missing_ok=missing_ok)]


def read_run(store: Store, run_id: str) -> tuple[RunManifest, list[TraceDict]]:
    """A run's manifest and trace records (in rank order), read back from the audit indices."""
    names = store.names
    query = {"bool": {"filter": [{"term": {"run_id": run_id}}]}}
    missing = NotFoundError(
        f"run {run_id!r} not found in {names.runs}",
        hint="check the run id; if its audit write was spooled, run `esbubble traces flush` first",
    )
    with engine_errors(
        lambda failure: EngineError(f"cannot read run {run_id!r} from {store.display_url}: {failure.reason}")
    ):
        if not store.client.indices.exists_alias(name=names.runs):
            raise missing
        runs = _sources(store, names.runs, query, [{"run_id": "asc"}])
        if not runs:
            raise missing
        records = (
            _sources(store, names.traces, query, [{"rank": "asc"}, {"chunk_id": "asc"}])
            if store.client.indices.exists_alias(name=names.traces)
            else []
        )
    return RunManifest.model_validate(runs[0]), [trace_dict(source) for source in records]


def _search_failed(store: Store, index: str) -> Callable[[Failure], EngineError]:
    return lambda failure: EngineError(f"searching {index} on {store.display_url} failed: {failure.reason}")


def find_manifests(store: Store, run_or_batch_id: str) -> list[RunManifest]:
    """The manifests of one run, or of every run of a batch, ordered by run id."""
    query = {
        "bool": {
            "should": [{"term": {"run_id": run_or_batch_id}}, {"term": {"batch_id": run_or_batch_id}}],
            "minimum_should_match": 1,
        }
    }
    runs = store.names.runs
    with engine_errors(_search_failed(store, runs)):
        docs = _sources(store, runs, query, [{"run_id": "asc"}], missing_ok=True)
    manifests = [RunManifest.model_validate(doc) for doc in docs]
    if not manifests:
        raise NotFoundError(
            f"no run or batch with id {run_or_batch_id!r} in {runs}",
            hint="use the run id `bubble` printed or the batch id `rebubble` printed",
        )
    return manifests


def trace_records(store: Store, run_ids: Sequence[str], *, selected_only: bool = False) -> list[TraceDict]:
    """Trace records of these runs, ordered by run id then rank (validated as ``TraceRecord``)."""
    if not run_ids:
        return []
    filters: list[dict[str, Any]] = [{"terms": {"run_id": list(run_ids)}}]
    if selected_only:
        filters.append({"term": {"final_decision": "selected"}})
    traces = store.names.traces
    with engine_errors(_search_failed(store, traces)):
        docs = _sources(store, traces, {"bool": {"filter": filters}}, [{"trace_id": "asc"}], missing_ok=True)
    records = [trace_dict(doc) for doc in docs]
    return sorted(records, key=lambda r: (r["run_id"], r["rank"]))


MAX_AGE = timedelta(days=100 * 366)


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h`` or ``90m`` → a ``timedelta`` of at most ``MAX_AGE`` (about 100 years)."""
    match = _DURATION.fullmatch(text.strip())
    problem = ConfigError(
        f"invalid age {text!r}", hint="use a positive number with d, h or m, at most 36600d, e.g. 30d"
    )
    if not match or int(match.group(1)) == 0:
        raise problem
    amount, unit = int(match.group(1)), match.group(2)
    minutes = amount * {"d": 24 * 60, "h": 60, "m": 1}[unit]
    if minutes > MAX_AGE.total_seconds() // 60:
        raise problem
    return timedelta(minutes=minutes)


def _month_end(index: str) -> datetime | None:
    match = _MONTHLY.search(index)
    if not match:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def prune_traces(store: Store, older_than: timedelta, *, now: datetime | None = None) -> int:
    """Delete trace records and run manifests older than ``older_than``; returns trace records deleted.

    Monthly indices entirely before the cutoff are dropped whole; the month the
    cutoff falls in is pruned with ``delete_by_query``.
    """
    cutoff = (now or datetime.now(UTC)) - older_than
    deleted_traces = 0
    with engine_errors(
        lambda failure: EngineError(f"cannot prune audit indices on {store.display_url}: {failure.reason}")
    ):
        for alias in (store.names.traces, store.names.runs):
            if not store.client.indices.exists_alias(name=alias):
                continue
            for index in sorted(store.client.indices.get_alias(name=alias).body):
                end = _month_end(index)
                if end is not None and end <= cutoff:
                    count = int(store.client.count(index=index).body["count"])
                    store.client.indices.delete(index=index)
                else:
                    query = {"range": {"@timestamp": {"lt": cutoff.isoformat()}}}
                    response = store.client.delete_by_query(
                        index=index, query=query, refresh=True, conflicts="proceed"
                    )
                    count = int(response.body["deleted"])
                if alias == store.names.traces:
                    deleted_traces += count
    return deleted_traces
