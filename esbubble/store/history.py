"""The embedded engine's audit history on disk: every trace record and run manifest, kept outside the engine.

The engine holds the run manifests and the trace records of the last
``trace_window_runs`` runs; compaction (``esbubble.store.engine.compact``) first
archives every audit record the journal holds to
``<home>/history/<index>/<segment>-<hash>.ndjson.gz`` — one directory per monthly
audit index (``esbubble-traces-2026.11``), compressed NDJSON lines
``{"_index", "_id", "_source"}`` like the spool's — then drops the old
traces from the engine. A segment's file (``<segment>-<content hash>``) is
written whole and renamed into place, so re-archiving a segment after a
crash rewrites the same file.

``read_run`` and ``restore_runs`` read records back when they are no longer
in the engine; ``push`` ships the history to a real cluster with the same
ids (``create``: a second push changes nothing); ``prune`` drops records
older than a cutoff here too.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from elasticsearch.helpers import streaming_bulk
from pydantic import BaseModel, ConfigDict

from esbubble.errors import EngineError, NotFoundError
from esbubble.models import RunManifest, TraceDict, trace_dict
from esbubble.store.connection import Store
from esbubble.store.errors import engine_errors
from esbubble.store.journal import PRIVATE_FILE, Entry, journal_dir, private_dir, read_segment, segments

_AUDIT_INDEX = re.compile(r"^(?P<prefix>.+)-(?P<kind>traces|runs)-(?P<year>\d{4})\.(?P<month>\d{2})$")
_PRUNED = "pruned.json"
PUSH_CHUNK = 2000


class PushResult(BaseModel):
    """What ``traces push`` did: records sent, newly created on the cluster, already there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sent: int
    created: int
    existing: int
    failed: int


def history_dir(home: Path) -> Path:
    return home / "history"


def _pruned_before(home: Path) -> datetime | None:
    try:
        text = json.loads((history_dir(home) / _PRUNED).read_text(encoding="utf-8"))["before"]
        return datetime.fromisoformat(str(text))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def _bulk_actions(entry: Entry) -> Iterator[dict[str, Any]]:
    """The index/create actions of a journaled ``_bulk`` request, as ``{_index, _id, _source}``."""
    path = entry.target.split("?", 1)[0]
    if entry.body is None or not path.endswith("/_bulk"):
        return
    default_index = path.strip("/").split("/")[0] if path.strip("/") != "_bulk" else None
    lines = iter(entry.body.splitlines())
    for line in lines:
        if not line.strip():
            continue
        action = json.loads(line)
        op, meta = next(iter(action.items()))
        if op == "delete":
            continue
        source = json.loads(next(lines))
        if op in {"index", "create"}:
            yield {"_index": meta.get("_index", default_index), "_id": meta.get("_id"), "_source": source}


def _stamp(action: dict[str, Any]) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(action["_source"]["@timestamp"]))
    except (KeyError, ValueError):
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _kept(action: dict[str, Any], pruned_before: datetime | None) -> bool:
    stamp = _stamp(action)
    return pruned_before is None or stamp is None or stamp >= pruned_before


def _audit_actions(entries: Iterable[Entry], pruned_before: datetime | None) -> Iterator[dict[str, Any]]:
    for entry in entries:
        for action in _bulk_actions(entry):
            index = action["_index"]
            if isinstance(index, str) and _AUDIT_INDEX.match(index) and _kept(action, pruned_before):
                yield action


def _write_gz(path: Path, actions: Sequence[dict[str, Any]]) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for action in actions:
            out.write(json.dumps(action, sort_keys=True).encode("utf-8") + b"\n")
        out.flush()
    os.replace(temporary, path)


def archive_segment(home: Path, segment: Path) -> int:
    """Copy a journal segment's audit records to the history; returns how many.

    The file is named by the segment's number and content, so archiving the same segment again
    rewrites the same file, and a journal started afresh never overwrites an older archive.
    """
    digest = hashlib.sha256(segment.read_bytes()).hexdigest()[:16]
    entries = read_segment(segment).entries
    return archive(home, f"{segment.stem}-{digest}", _audit_actions(entries, _pruned_before(home)))


def archive(home: Path, name: str, actions: Iterable[dict[str, Any]]) -> int:
    """Write audit actions to ``history/<index>/<name>.ndjson.gz`` (replacing that file); returns how many."""
    per_index: dict[str, list[dict[str, Any]]] = {}
    for action in actions:
        per_index.setdefault(action["_index"], []).append(action)
    for index, grouped in per_index.items():
        directory = history_dir(home) / index
        private_dir(directory)
        _write_gz(directory / f"{name}.ndjson.gz", grouped)
    return sum(len(grouped) for grouped in per_index.values())


def _index_dirs(home: Path, prefix: str | None, kind: str) -> list[Path]:
    root = history_dir(home)
    if not root.is_dir():
        return []
    found = []
    for directory in sorted(root.iterdir()):
        match = _AUDIT_INDEX.match(directory.name)
        if match and match["kind"] == kind and (prefix is None or match["prefix"] == prefix):
            found.append(directory)
    return found


def _read_dir(directory: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(directory.glob("*.ndjson.gz")):
        with gzip.open(path, "rb") as lines:
            for line in lines:
                yield json.loads(line)


def _month_key(stamp: datetime) -> str:
    return f"{stamp:%Y.%m}"


def records_of(
    home: Path, prefix: str, run_ids: Sequence[str], months: Iterable[datetime]
) -> list[dict[str, Any]]:
    """The archived trace-record actions of these runs, read from the months given (and the next ones)."""
    wanted = set(run_ids)
    keys = {_month_key(m) for m in months} | {_month_key(m + timedelta(days=32)) for m in months}
    found: dict[str, dict[str, Any]] = {}
    for directory in _index_dirs(home, prefix, "traces"):
        if directory.name.rsplit("-", 1)[1] not in keys:
            continue
        for action in _read_dir(directory):
            if action["_source"].get("run_id") in wanted:
                found[action["_id"]] = action  # a record archived twice is read once
    return list(found.values())


def _manifest_from_disk(home: Path, prefix: str, run_id: str) -> RunManifest | None:
    for directory in reversed(_index_dirs(home, prefix, "runs")):
        for action in _read_dir(directory):
            if action["_id"] == run_id:
                return RunManifest.model_validate(action["_source"])
    return None


def read_run(store: Store, run_id: str) -> tuple[RunManifest, list[TraceDict]]:
    """``audit.read_run``, with the trace records (and the manifest) read from the history when the
    engine no longer holds them."""
    from esbubble.store.audit import read_run as read_from_engine

    try:
        manifest, records = read_from_engine(store, run_id)
    except NotFoundError:
        if not store.settings.embedded:
            raise
        found = _manifest_from_disk(store.settings.home, store.names.prefix, run_id)
        if found is None:
            raise
        manifest, records = found, []
    if records or not store.settings.embedded:
        return manifest, records
    actions = records_of(store.settings.home, store.names.prefix, [run_id], [manifest.timestamp])
    records = [trace_dict(action["_source"]) for action in actions]
    return manifest, sorted(records, key=lambda r: (r["rank"], r["chunk_id"]))


def _runs_with_traces(store: Store, run_ids: Sequence[str]) -> set[str]:
    response = store.client.search(
        index=store.names.traces,
        size=0,
        query={"terms": {"run_id": list(run_ids)}},
        aggs={"runs": {"terms": {"field": "run_id", "size": len(run_ids)}}},
        ignore_unavailable=True,
        allow_no_indices=True,
    )
    aggregations = response.body.get("aggregations") or {}
    return {str(bucket["key"]) for bucket in aggregations.get("runs", {}).get("buckets", [])}


def restore_runs(store: Store, manifests: Sequence[RunManifest]) -> int:
    """Put the archived trace records of runs outside the engine's window back into it (not journaled:
    the history keeps them), so ``report`` and ``rebubble --compare`` see every run; returns how many."""
    from esbubble.store.engine import daemon_status

    settings = store.settings
    if not settings.embedded or not manifests:
        return 0
    status = daemon_status(settings)
    with engine_errors(
        lambda failure: EngineError(f"cannot read trace records from {store.display_url}: {failure.detail}")
    ):
        present = _runs_with_traces(store, [m.run_id for m in manifests])
    old = [m for m in manifests if m.run_id not in present]
    if not old or status.url is None:
        return 0
    actions = records_of(
        settings.home, store.names.prefix, [m.run_id for m in old], [m.timestamp for m in old]
    )
    if not actions:
        return 0
    from esbubble.store.client import make_client

    client = make_client(status.url, request_timeout=max(settings.request_timeout, 120.0))
    try:
        with engine_errors(
            lambda failure: EngineError(f"cannot restore archived trace records: {failure.detail}")
        ):
            written = sum(
                ok for ok, _ in streaming_bulk(client, actions, chunk_size=PUSH_CHUNK, raise_on_error=False)
            )
            client.indices.refresh(index=store.names.traces, ignore_unavailable=True, allow_no_indices=True)
    finally:
        client.close()
    return written


def all_actions(home: Path) -> Iterator[dict[str, Any]]:
    """Every audit record kept locally: the history, then what the journal holds and is not archived yet."""
    for kind in ("runs", "traces"):
        for directory in _index_dirs(home, None, kind):
            yield from _read_dir(directory)
    pruned = _pruned_before(home)
    for segment in segments(journal_dir(home / "engine")):
        yield from _audit_actions(read_segment(segment).entries, pruned)


def push(home: Path, target: Store, *, on_sent: Callable[[int], None] | None = None) -> PushResult:
    """Send every local audit record to ``target`` with its own id; records already there are left alone."""
    from esbubble.store.templates import init_indices

    init_indices(target)
    sent = created = existing = failed = 0
    actions = ({**action, "_op_type": "create"} for action in all_actions(home))
    with engine_errors(
        lambda failure: EngineError(
            f"cannot push the audit history to {target.display_url}: {failure.detail}"
        )
    ):
        for ok, item in streaming_bulk(
            target.client, actions, chunk_size=PUSH_CHUNK, raise_on_error=False, max_retries=3
        ):
            sent += 1
            status = int(next(iter(item.values())).get("status", 0))
            if ok:
                created += 1
            elif status == 409:
                existing += 1
            else:
                failed += 1
            if on_sent is not None:
                on_sent(1)
        target.client.indices.refresh(
            index=f"{target.names.traces},{target.names.runs}", ignore_unavailable=True, allow_no_indices=True
        )
    return PushResult(sent=sent, created=created, existing=existing, failed=failed)


def prune(home: Path, cutoff: datetime) -> int:
    """Drop archived records older than ``cutoff`` (whole months at once); returns trace records dropped."""
    root = history_dir(home)
    if not root.is_dir():
        return 0
    fd = os.open(root / _PRUNED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps({"before": cutoff.astimezone(UTC).isoformat()}))
    dropped = 0
    for directory in [*_index_dirs(home, None, "traces"), *_index_dirs(home, None, "runs")]:
        match = _AUDIT_INDEX.match(directory.name)
        assert match is not None
        year, month = int(match["year"]), int(match["month"])
        month_end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        counts_traces = match["kind"] == "traces"
        if month_end <= cutoff:
            if counts_traces:
                dropped += sum(1 for _ in _read_dir(directory))
            shutil.rmtree(directory)
            continue
        for path in sorted(directory.glob("*.ndjson.gz")):
            with gzip.open(path, "rb") as lines:
                actions = [json.loads(line) for line in lines]
            kept = [a for a in actions if _kept(a, cutoff)]
            if len(kept) != len(actions):
                dropped += (len(actions) - len(kept)) if counts_traces else 0
                _write_gz(path, kept)
    return dropped
