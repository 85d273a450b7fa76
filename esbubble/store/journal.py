"""The embedded engine's write-ahead journal: every write request, one checksummed line, fsync'd first.

osmem keeps nothing on disk, so the embedded engine's data is the last
compacted snapshot plus this journal. ``JournalingTransport`` sits under the
Elasticsearch client: every request that changes data (bulk bodies, deletes,
index, mapping, alias and template changes — see ``is_write``) is appended
to ``<home>/engine/journal/<segment>.log`` and flushed to disk *before* it is
sent, under a lock held until the engine answers, so the journal's order is
the engine's order. A request the engine refuses outright (4xx) is voided by
a second line, so replay skips it. The cost of a write is the size of that
write, not of the store.

A line is ``<crc32 hex> <json>``. A torn last line (the process died
mid-append) fails its checksum or lacks its newline: ``read_journal`` skips
and reports it, and ``repair_tail`` cuts it off so later appends start clean.

Segments: the writer appends to the highest-numbered segment. Compaction
(``esbubble.store.engine.compact``) starts a new segment, writes a snapshot
that records the last segment it covers, then deletes the covered segments;
start-up replays only the segments after the snapshot's, so nothing is
applied twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import uuid
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elastic_transport import TransportApiResponse

from esbubble.store.client import BackoffTransport

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
_SUFFIX = ".log"
# Endpoints whose POST changes data; every PUT and DELETE does, except scroll/PIT bookkeeping.
_WRITE_ENDPOINTS = frozenset(
    {
        "_bulk",
        "_doc",
        "_create",
        "_update",
        "_delete_by_query",
        "_update_by_query",
        "_aliases",
        "_alias",
        "_mapping",
        "_settings",
        "_index_template",
        "_component_template",
    }
)
_READ_ONLY_PREFIXES = ("/_search/scroll", "/_pit", "/_pit/")


def is_write(method: str, target: str) -> bool:
    """Does this request change what the engine stores?"""
    path = target.split("?", 1)[0]
    if method in {"GET", "HEAD"} or path.startswith(_READ_ONLY_PREFIXES):
        return False
    if method in {"PUT", "DELETE"}:
        return True
    parts = [part for part in path.split("/") if part]
    return any(part in _WRITE_ENDPOINTS for part in parts)


@dataclass(frozen=True)
class Entry:
    """One journaled write request."""

    entry_id: str
    method: str
    target: str
    content_type: str | None
    body: str | None


@dataclass(frozen=True)
class JournalRead:
    """What ``read_journal`` found: the entries to replay, in order, and the lines it had to skip."""

    entries: tuple[Entry, ...]
    damaged: tuple[str, ...]  # "segment:line: why", one per skipped line


def private_dir(path: Path) -> Path:
    """``path`` and its missing parents, created 0700 (the home holds the user's data)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=PRIVATE_DIR)
    return path


def journal_dir(engine_dir: Path) -> Path:
    return engine_dir / "journal"


def segments(directory: Path) -> list[Path]:
    """The journal's segment files, oldest first."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == _SUFFIX and p.stem.isdigit())


def segment_number(path: Path) -> int:
    return int(path.stem)


def _segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:08d}{_SUFFIX}"


def _encode(record: Mapping[str, Any]) -> bytes:
    payload = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"%08x " % zlib.crc32(payload) + payload + b"\n"


def _decode(line: bytes) -> dict[str, Any] | None:
    """The record on a complete line, or ``None`` if its checksum or JSON is bad."""
    checksum, _, payload = line.partition(b" ")
    try:
        if int(checksum, 16) != zlib.crc32(payload):
            return None
        record = json.loads(payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


class Journal:
    """Appends write requests to the current segment; safe across threads and processes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._thread_lock = threading.Lock()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive use of the journal (this process's threads and every other process)."""
        with self._thread_lock:
            private_dir(self.directory)
            fd = os.open(self.directory / "journal.lock", os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _current(self) -> Path:
        existing = segments(self.directory)
        return existing[-1] if existing else _segment_path(self.directory, 1)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one line and fsync it. Call inside ``locked()``."""
        fd = os.open(self._current(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
        try:
            os.write(fd, _encode(record))
            os.fsync(fd)
        finally:
            os.close(fd)

    def rotate(self) -> int:
        """Start a new segment; return the number of the last one before it. Call inside ``locked()``."""
        existing = segments(self.directory)
        last = segment_number(existing[-1]) if existing else 0
        fd = os.open(_segment_path(self.directory, last + 1), os.O_WRONLY | os.O_CREAT, PRIVATE_FILE)
        os.fsync(fd)
        os.close(fd)
        return last


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes without newline, complete?) for each line of ``path``."""
    data = path.read_bytes()
    start = number = 0
    while start < len(data):
        number += 1
        end = data.find(b"\n", start)
        if end < 0:
            yield number, data[start:], False
            return
        yield number, data[start:end], True
        start = end + 1


def read_journal(directory: Path, *, after_segment: int = 0) -> JournalRead:
    """Every entry of the segments numbered above ``after_segment``, voided entries left out."""
    reads = [read_segment(p) for p in segments(directory) if segment_number(p) > after_segment]
    return JournalRead(tuple(e for r in reads for e in r.entries), tuple(d for r in reads for d in r.damaged))


def read_segment(path: Path) -> JournalRead:
    """One segment's entries, voided ones left out (a void line always follows its entry's segment)."""
    entries: list[Entry] = []
    voided: set[str] = set()
    damaged: list[str] = []
    if path.exists():
        for number, line, complete in _lines(path):
            record = _decode(line) if complete else None
            if record is None:
                why = "torn (no end of line)" if not complete else "checksum or JSON mismatch"
                damaged.append(f"{path.name}:{number}: {why}")
                continue
            if "void" in record:
                voided.add(str(record["void"]))
                continue
            entries.append(
                Entry(
                    entry_id=str(record["id"]),
                    method=str(record["m"]),
                    target=str(record["p"]),
                    content_type=record.get("ct"),
                    body=record.get("b"),
                )
            )
    return JournalRead(tuple(e for e in entries if e.entry_id not in voided), tuple(damaged))


def repair_tail(directory: Path) -> int:
    """Cut a torn or corrupt last line off the newest segment (kept aside as ``*.torn``); bytes cut."""
    existing = segments(directory)
    if not existing:
        return 0
    path = existing[-1]
    data = path.read_bytes()
    if not data:
        return 0
    body = data[:-1] if data.endswith(b"\n") else data
    start = body.rfind(b"\n") + 1
    if data.endswith(b"\n") and _decode(body[start:]) is not None:
        return 0
    torn = data[start:]
    aside = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.torn")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        os.write(fd, torn)
    finally:
        os.close(fd)
    with path.open("r+b") as handle:
        handle.truncate(start)
        handle.flush()
        os.fsync(handle.fileno())
    return len(torn)


def _header(headers: Any, name: str) -> str | None:
    if headers is None or not hasattr(headers, "get"):
        return None
    value = headers.get(name)
    return str(value) if value is not None else None


class JournalingTransport(BackoffTransport):
    """A transport that journals every write request before sending it (see the module docstring)."""

    def __init__(self, *args: Any, journal: Journal, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal = journal

    def perform_request(self, method: str, target: str, **kwargs: Any) -> TransportApiResponse:
        if not is_write(method, target):
            return super().perform_request(method, target, **kwargs)
        body = kwargs.get("body")
        content_type = _header(kwargs.get("headers"), "content-type")
        raw: bytes | None = None
        if body is not None:
            raw = self.serializers.dumps(body, mimetype=content_type or "application/json")
            kwargs["body"] = raw
        entry_id = uuid.uuid4().hex
        with self.journal.locked():
            self.journal.append(
                {
                    "id": entry_id,
                    "m": method,
                    "p": target,
                    "ct": content_type,
                    "b": raw.decode("utf-8", "surrogatepass") if raw is not None else None,
                }
            )
            response = super().perform_request(method, target, **kwargs)
            if 400 <= response.meta.status < 500:
                self.journal.append({"void": entry_id})
        return response
