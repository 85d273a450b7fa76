"""The embedded engine: osmem-server in the background, its data kept as a snapshot plus a journal.

osmem is in-memory, so persistence is ours, under ``<home>/engine/``:

- ``snapshot`` — a symlink swapped atomically to the newest ``snapshots/<id>``
  directory: every index in osmem's seed layout, the templates beside it
  (``<id>.templates.json``) and ``meta.json`` naming the last journal segment
  it covers;
- ``journal/`` — every write request since, appended and fsync'd before it is
  sent (``esbubble.store.journal``).

Start = seed osmem from the snapshot, re-install the templates, replay the
journal segments after the snapshot's. Compaction (``compact``: archive the
audit records to ``<home>/history``, drop trace records older than the
window from the engine, write a new snapshot, delete the covered segments)
runs at ``engine stop`` and in the background when the journal passes a size
— never on a command's path.

Lifecycle: the first command that needs the engine starts it
(``engine_session``); later commands reuse it. A small watchdog process
(``esbubble.store.watchdog``) stops it after ``engine_idle_minutes`` without
a command. Commands hold a shared lock on ``engine/in-use.lock`` while they
work; compaction and stop take it exclusively, so they never run under a
command.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import scan
from pydantic import BaseModel, ConfigDict, Field

from esbubble.errors import ConfigError, EngineError
from esbubble.store.client import make_client
from esbubble.store.errors import Failure, engine_errors, tolerating
from esbubble.store.journal import (
    PRIVATE_DIR,
    PRIVATE_FILE,
    Entry,
    Journal,
    journal_dir,
    private_dir,
    read_journal,
    repair_tail,
    segment_number,
    segments,
)
from esbubble.store.settings import Settings

# Start-up timeout: a base, plus time per MB of snapshot and journal to load. Measured on a
# loaded 2-core machine (docs/benchmarks.md): about 3 s per MB; the timeout allows 5.
STARTUP_BASE_S = 30.0
STARTUP_S_PER_MB = 5.0
LOG_TAIL_LINES = 8
_KEPT_SETTINGS = ("analysis", "number_of_shards", "number_of_replicas")


class DaemonStatus(BaseModel):
    """What ``engine status`` reports."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    running: bool
    pid: int | None = None
    url: str | None = None
    started_at: datetime | None = None
    snapshot: str | None = None
    journal_bytes: int = 0
    stale_removed: bool = False
    replayed: int = Field(default=0, description="journal entries replayed by this start")
    damaged: list[str] = Field(default_factory=list, description="journal lines skipped by this start")
    interrupted_stopped: int | None = Field(
        default=None, description="pid of an engine an interrupted start left running, stopped now"
    )


def warn_of(status: DaemonStatus) -> None:
    """Tell the user on stderr what a start or stop found: skipped journal lines, a stopped leftover
    engine."""
    warnings = [f"journal: {problem}" for problem in status.damaged]
    if status.interrupted_stopped is not None:
        warnings.append(
            f"stopped engine process {status.interrupted_stopped}, left running by an interrupted start"
        )
    for warning in warnings:
        print(f"esbubble: warning: {warning}", file=sys.stderr)


def engine_dir(home: Path) -> Path:
    return home / "engine"


def snapshot_path(home: Path) -> Path:
    """The current snapshot (a symlink to the newest snapshot directory)."""
    return engine_dir(home) / "snapshot"


def _write_private(path: Path, text: str) -> None:
    """Write ``path`` (mode 0600) whole or not at all: a reader, or a start killed mid-write, never
    leaves or sees it empty (an empty starting record hid the engine a killed start had spawned)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _binary() -> str:
    from osmem_server import resolve_binary

    try:
        return str(resolve_binary())
    except RuntimeError as error:
        raise EngineError(f"cannot start the embedded engine: {error}") from None


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of the engine's log, or a note that it is empty."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return f"{log} does not exist"
    if not text:
        return f"{log} is empty"
    return " | ".join(text.splitlines()[-lines:])


def _wait_for_url(process: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
    """osmem prints one JSON line with ``url`` when it is ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict) and "url" in message:
                        return str(message["url"])
        if process.poll() is not None:
            raise EngineError(
                f"the embedded engine exited during startup (code {process.returncode}); "
                f"log: {log_tail(log)}",
                hint=f"if the snapshot is damaged, move {log.parent / 'snapshot'} aside and retry",
            )
        time.sleep(0.02)
    process.kill()
    raise EngineError(
        f"the embedded engine did not start within {timeout:g} s; log: {log_tail(log)}",
        hint="retry (a busy machine loads slower), or `esbubble traces prune` to shrink the history",
    )


def launch_osmem(
    seed: Path | None,
    *,
    log: Path,
    detached: bool,
    timeout: float = STARTUP_BASE_S,
    on_spawn: Callable[[int], None] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start osmem on a free loopback port; return the process and its URL once it answers.

    It gets its own session so a terminal's Ctrl-C reaches only us; when not
    ``detached``, ``--parent-pid`` ends it if we die. ``on_spawn(pid)`` runs as
    soon as the process exists, before it answers.
    """
    # esbubble's mappings use no Japanese analysis; without its dictionary osmem loads text faster.
    args = [_binary(), "--addr", "127.0.0.1:0", "--no-stdin-watch", "--no-ja"]
    if not detached:
        args += ["--parent-pid", str(os.getpid())]
    if seed is not None:
        args += ["--seed", str(seed)]
    private_dir(log.parent)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as out:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        if on_spawn is not None:
            on_spawn(process.pid)
        url = _wait_for_url(process, log, timeout)
    except BaseException:
        stop_process(process)
        raise
    return process, url


def stop_process(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _lock_fd(home: Path, name: str) -> int:
    directory = engine_dir(home)
    try:
        private_dir(directory)
        return os.open(directory / name, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
    except OSError as error:
        raise ConfigError(
            f"cannot use {directory} for the embedded engine: {error.strerror}",
            hint="set ESBUBBLE_HOME to a writable directory",
        ) from None


@contextlib.contextmanager
def _file_lock(home: Path, name: str, mode: int) -> Iterator[bool]:
    """``flock`` on ``engine/<name>``; yields False instead of waiting when ``mode`` has LOCK_NB."""
    fd = _lock_fd(home, name)
    try:
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def _engine_lock(home: Path, *, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
    """Exclusive: one start, stop or compaction at a time."""
    return _file_lock(home, "engine.lock", fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))


def _in_use(home: Path, *, exclusive: bool, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
    """Shared while a command works on the engine; exclusive for compaction and stop."""
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    return _file_lock(home, "in-use.lock", mode | (0 if wait else fcntl.LOCK_NB))


def last_used_file(home: Path) -> Path:
    return engine_dir(home) / "last-used"


def touch_last_used(home: Path) -> None:
    path = last_used_file(home)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE)
    os.close(fd)
    os.utime(path)


# --- snapshot ---------------------------------------------------------------------------------


def _seed_dir(home: Path) -> Path | None:
    seed = snapshot_path(home)
    return seed if seed.is_dir() else None


def snapshot_covers(home: Path) -> int:
    """The last journal segment the current snapshot includes (0: none, or no snapshot)."""
    seed = _seed_dir(home)
    if seed is None:
        return 0
    try:
        return int(json.loads((seed / "meta.json").read_text(encoding="utf-8"))["journal_through"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return 0


def _filtered_settings(settings: dict[str, Any]) -> dict[str, Any]:
    index = settings.get("index", settings)
    return {"index": {key: index[key] for key in _KEPT_SETTINGS if key in index}}


def _managed(entries: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [e for e in entries if (e[key].get("_meta") or {}).get("managed_by") == "esbubble"]


def _export_documents(client: Elasticsearch, index: str, path: Path) -> None:
    """Write an index's documents as a bulk body; an empty index gets no file (osmem rejects empty bodies)."""
    out = None
    try:
        for hit in scan(client, index=index, query={"query": {"match_all": {}}}, size=1000):
            if out is None:
                out = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE), "w", encoding="utf-8")
            out.write(json.dumps({"index": {"_index": index, "_id": hit["_id"]}}) + "\n")
            out.write(json.dumps(hit["_source"], sort_keys=True) + "\n")
    finally:
        if out is not None:
            out.close()


def remove_stale_staging(home: Path) -> int:
    """Delete ``.staging-*`` directories a killed export left behind; call under the engine lock."""
    snapshots = engine_dir(home) / "snapshots"
    stale = list(snapshots.glob(".staging-*")) if snapshots.is_dir() else []
    for directory in stale:
        shutil.rmtree(directory, ignore_errors=True)
    for link in engine_dir(home).glob(".snapshot-*"):
        link.unlink(missing_ok=True)
    return len(stale)


def export_snapshot(client: Elasticsearch, home: Path, *, journal_through: int = 0) -> Path:
    """Write every index and esbubble template to a new snapshot and swap it in atomically.

    ``journal_through`` is the last journal segment whose writes the engine
    holds; start-up replays only later ones. Call under the engine lock.
    """
    remove_stale_staging(home)
    snapshots = private_dir(engine_dir(home) / "snapshots")
    target = snapshots / uuid.uuid4().hex
    staging = snapshots / f".staging-{target.name}"
    staging.mkdir(mode=PRIVATE_DIR)
    try:
        indices = client.indices.get(index="*", expand_wildcards="open").body
        for name in sorted(indices):
            if name.startswith("."):
                continue
            meta = indices[name]
            body = {
                "settings": _filtered_settings(meta.get("settings", {})),
                "mappings": meta.get("mappings", {}),
                "aliases": meta.get("aliases", {}),
            }
            _write_private(staging / f"{name}.index.json", json.dumps(body, sort_keys=True))
            _export_documents(client, name, staging / f"{name}.ndjson")
        components = client.cluster.get_component_template().body["component_templates"]
        templates = client.indices.get_index_template().body["index_templates"]
        saved = {
            "component_templates": _managed(components, "component_template"),
            "index_templates": _managed(templates, "index_template"),
        }
        _write_private(snapshots / f"{target.name}.templates.json", json.dumps(saved, sort_keys=True))
        _write_private(staging / "meta.json", json.dumps({"journal_through": journal_through}))
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    link = snapshot_path(home)
    temporary_link = engine_dir(home) / f".snapshot-{target.name}"
    temporary_link.symlink_to(Path("snapshots") / target.name)
    previous = link.resolve() if link.is_symlink() else None
    os.replace(temporary_link, link)
    if previous is not None and previous != target.resolve():
        shutil.rmtree(previous, ignore_errors=True)
        previous.with_name(f"{previous.name}.templates.json").unlink(missing_ok=True)
    return target


def restore_templates(client: Elasticsearch, home: Path) -> None:
    """Re-install the templates saved with the current snapshot (osmem's seed has none of ours)."""
    link = snapshot_path(home)
    if not link.is_dir():
        return
    saved_file = link.resolve().with_name(f"{link.resolve().name}.templates.json")
    if not saved_file.is_file():
        return
    saved = json.loads(saved_file.read_text(encoding="utf-8"))
    for entry in saved["component_templates"]:
        body = entry["component_template"]
        client.cluster.put_component_template(
            name=entry["name"], template=body["template"], meta=body["_meta"]
        )
    for entry in saved["index_templates"]:
        body = entry["index_template"]
        client.indices.put_index_template(
            name=entry["name"],
            index_patterns=body["index_patterns"],
            composed_of=body.get("composed_of", []),
            template=body.get("template"),
            priority=body.get("priority"),
            meta=body.get("_meta"),
        )


def _refused(failure: Failure) -> bool:
    return failure.answered


def replay(client: Elasticsearch, entries: tuple[Entry, ...], on_entry: Callable[[], None]) -> int:
    """Send the journaled requests again, in order; what the engine refuses now it refused then."""
    for entry in entries:
        headers = {"content-type": entry.content_type} if entry.content_type else None
        body = entry.body.encode("utf-8", "surrogatepass") if entry.body is not None else None
        with tolerating(_refused):
            client.perform_request(entry.method, entry.target, headers=headers, body=body)
        on_entry()
    return len(entries)


def _drop_old_traces(client: Elasticsearch, window_runs: int) -> None:
    """Keep only the trace records of the last ``window_runs`` runs in the engine (the history keeps all).

    Loading trace records is what makes osmem slow to start (docs/benchmarks.md), so
    the engine's share is bounded by a number of runs, not by days.
    """
    keep: list[str] = []
    if window_runs:
        recent = client.search(
            index="*-runs-*",
            size=window_runs,
            sort=[{"@timestamp": "desc"}],
            source_includes=["run_id"],
            ignore_unavailable=True,
            allow_no_indices=True,
        )
        keep = [str(hit["_source"]["run_id"]) for hit in recent.body["hits"]["hits"]]
    query = {"bool": {"must_not": [{"terms": {"run_id": keep}}]}} if keep else {"match_all": {}}
    client.delete_by_query(
        index="*-traces-*",
        query=query,
        refresh=True,
        ignore_unavailable=True,
        allow_no_indices=True,
        conflicts="proceed",
    )


def compact(client: Elasticsearch, settings: Settings) -> Path:
    """Archive the journal's audit records, drop old traces, snapshot, delete the covered segments.

    ``client`` must not journal. Call with the engine lock and the in-use lock
    held exclusively, so no command writes meanwhile.
    """
    from esbubble.store.history import archive_segment

    home = settings.home
    journal = Journal(journal_dir(engine_dir(home)))
    with journal.locked():
        through = journal.rotate()
    covered = [p for p in segments(journal.directory) if segment_number(p) <= through]
    for path in covered:
        archive_segment(home, path)
    _drop_old_traces(client, settings.trace_window_runs)
    target = export_snapshot(client, home, journal_through=through)
    for path in covered:
        path.unlink(missing_ok=True)
    return target


def journal_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in segments(journal_dir(engine_dir(home))))


def _data_bytes(home: Path) -> int:
    seed = _seed_dir(home)
    snapshot = sum(p.stat().st_size for p in seed.iterdir()) if seed is not None else 0
    return snapshot + journal_bytes(home)


def startup_timeout(home: Path) -> float:
    """Scales with what the engine has to load: the snapshot and the journal."""
    return STARTUP_BASE_S + STARTUP_S_PER_MB * _data_bytes(home) / 1e6


# --- daemon -----------------------------------------------------------------------------------


def _daemon_file(home: Path) -> Path:
    return engine_dir(home) / "daemon.json"


def _pid_alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # our own child: reap it, or a zombie looks alive
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed process nobody has reaped yet (e.g. in a container whose init does not reap) is dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def is_engine_process(pid: int) -> bool | None:
    """Is ``pid`` an osmem-server process? ``None`` where ``/proc`` cannot tell."""
    try:
        return b"osmem" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return None if not Path("/proc/self").exists() else False
    except OSError:
        return None


def _signal_and_wait(pid: int, signum: int, wait_s: float = 10.0) -> bool:
    """Send ``signum`` to ``pid`` and wait up to ``wait_s`` for it to end; whether it did."""
    os.kill(pid, signum)
    deadline = time.monotonic() + wait_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _pid_alive(pid)


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), to tell it from a later process given the same
    pid; None where ``/proc`` cannot tell."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _starting_file(home: Path) -> Path:
    """The engine a start has launched but not yet recorded in ``daemon.json``."""
    return engine_dir(home) / "starting.json"


def _record_starting(home: Path, pid: int) -> None:
    _write_private(_starting_file(home), json.dumps({"pid": pid, "ticks": _start_ticks(pid)}))


def _stop_interrupted_start(home: Path) -> int | None:
    """Stop the engine a killed start left running unrecorded, so no second one runs beside it.

    Call under the engine lock: a starting record seen then was left by a start
    that died, since starts hold that lock. The engine it names never got a
    command's writes (its URL was never recorded), so stopping it loses nothing.
    Returns its pid, or None when there was none (or it cannot be told from another process).
    """
    file = _starting_file(home)
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
        pid, ticks = int(record["pid"]), record["ticks"]
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        file.unlink(missing_ok=True)
        return None
    stopped = None
    if ticks is not None and _pid_alive(pid) and is_engine_process(pid) and _start_ticks(pid) == ticks:
        _signal_and_wait(pid, signal.SIGKILL)
        stopped = pid
    file.unlink(missing_ok=True)
    return stopped


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=2.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def daemon_status(settings: Settings) -> DaemonStatus:
    """Is a daemon recorded, alive and answering? A stale record is removed. Reads no data."""
    home = settings.home
    file = _daemon_file(home)
    snapshot = str(snapshot_path(home).resolve()) if _seed_dir(home) else None
    stopped = DaemonStatus(running=False, snapshot=snapshot, journal_bytes=journal_bytes(home))
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
        pid, url = int(record["pid"]), str(record["url"])
        started_at = datetime.fromisoformat(record["started_at"])
    except (FileNotFoundError, NotADirectoryError):
        return stopped
    except (ValueError, KeyError, TypeError):
        file.unlink(missing_ok=True)
        return stopped.model_copy(update={"stale_removed": True})
    # A live osmem is running even when a busy machine keeps it from answering in time: removing
    # its record would start a second engine beside it.
    if _pid_alive(pid) and (is_engine_process(pid) or _answers(url)):
        return stopped.model_copy(update={"running": True, "pid": pid, "url": url, "started_at": started_at})
    file.unlink(missing_ok=True)
    return stopped.model_copy(update={"stale_removed": True})


class _StartupProgress:
    """A spinner with what start-up is doing, on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self._status: Any = None
        if sys.stderr.isatty():
            from rich.console import Console

            self._status = Console(stderr=True).status("starting the embedded engine")

    def __enter__(self) -> _StartupProgress:
        if self._status is not None:
            self._status.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc_info)

    def show(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)


def _spawn_watchdog(settings: Settings, pid: int) -> None:
    """The idle stop and background compaction (``esbubble.store.watchdog``), detached from us."""
    log = engine_dir(settings.home) / "watchdog.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as out:
        subprocess.Popen(
            [sys.executable, "-m", "esbubble.store.watchdog", str(settings.home), str(pid)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "ESBUBBLE_HOME": str(settings.home)},
        )


def _load(url: str, settings: Settings, entries: tuple[Entry, ...], progress: _StartupProgress) -> int:
    """Re-install the snapshot's templates and replay the journal into a fresh engine; the count replayed."""
    home = settings.home
    client = make_client(url, request_timeout=max(settings.request_timeout, 120.0))
    loading_failed = engine_errors(
        lambda failure: EngineError(
            f"the embedded engine failed while loading its data: {failure.detail}; "
            f"log: {log_tail(engine_dir(home) / 'daemon.log')}",
            hint="retry; if it fails again, report it with the log",
        )
    )
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if done % 20 == 0 or done == len(entries):
            progress.show(f"replaying the journal: {done}/{len(entries)} writes")

    try:
        with loading_failed:
            restore_templates(client, home)
            return replay(client, entries, step)
    finally:
        client.close()


@contextlib.contextmanager
def _starting_record(home: Path) -> Iterator[None]:
    """``engine/starting.json`` (written by ``launch_osmem``'s ``on_spawn``) is gone however the start
    ends; only a killed start leaves it, for the next one to find."""
    try:
        yield
    finally:
        _starting_file(home).unlink(missing_ok=True)


def start_daemon(settings: Settings, *, watchdog: bool = True) -> DaemonStatus:
    """Start osmem from the snapshot, replay the journal, record it (or report the running one)."""
    status = daemon_status(settings)
    if status.running:
        return status
    home = settings.home
    with _engine_lock(home), _StartupProgress() as progress:
        status = daemon_status(settings)  # another command may have started it while we waited
        if status.running:
            return status
        interrupted = _stop_interrupted_start(home)
        remove_stale_staging(home)
        directory = journal_dir(engine_dir(home))
        cut = repair_tail(directory)
        found = read_journal(directory, after_segment=snapshot_covers(home))
        damaged = list(found.damaged) + ([f"torn last line cut ({cut} bytes kept aside)"] if cut else [])
        seed = _seed_dir(home)
        progress.show("starting the embedded engine" + (f" (loading {seed.resolve().name})" if seed else ""))
        with _starting_record(home):
            process, url = launch_osmem(
                seed,
                log=engine_dir(home) / "daemon.log",
                detached=True,
                timeout=startup_timeout(home),
                on_spawn=lambda pid: _record_starting(home, pid),
            )
            try:
                replayed = _load(url, settings, found.entries, progress)
            except BaseException:
                stop_process(process)
                raise
            record = {"pid": process.pid, "url": url, "started_at": datetime.now(UTC).isoformat()}
            temporary = _daemon_file(home).with_suffix(".tmp")
            _write_private(temporary, json.dumps(record))
            os.replace(temporary, _daemon_file(home))
        touch_last_used(home)
        if watchdog:
            _spawn_watchdog(settings, process.pid)
    return daemon_status(settings).model_copy(
        update={"replayed": replayed, "damaged": damaged, "interrupted_stopped": interrupted}
    )


def _stop_locked(settings: Settings, status: DaemonStatus) -> None:
    """Compact, then stop the daemon. Call with the engine lock and the in-use lock held exclusively."""
    assert status.pid is not None and status.url is not None
    client = make_client(status.url, request_timeout=max(settings.request_timeout, 120.0))
    try:
        compact(client, settings)
    finally:
        client.close()
    if not _signal_and_wait(status.pid, signal.SIGTERM):
        os.kill(status.pid, signal.SIGKILL)
    _daemon_file(settings.home).unlink(missing_ok=True)


def stop_daemon(settings: Settings) -> DaemonStatus:
    """Compact the data, then stop the daemon; waits for commands using it. Stopping none is no error."""
    with _engine_lock(settings.home), _in_use(settings.home, exclusive=True):
        status = daemon_status(settings)
        if status.running:
            _stop_locked(settings, status)
        interrupted = _stop_interrupted_start(settings.home)
    return daemon_status(settings).model_copy(update={"interrupted_stopped": interrupted})


def stop_if_idle(settings: Settings, idle_s: float) -> bool:
    """Stop the daemon when no command has used it for ``idle_s`` and none is using it now."""
    with _engine_lock(settings.home, wait=False) as locked:
        if not locked:
            return False
        with _in_use(settings.home, exclusive=True, wait=False) as free:
            if not free:
                return False
            try:
                idle = time.time() - last_used_file(settings.home).stat().st_mtime
            except FileNotFoundError:
                idle = idle_s
            status = daemon_status(settings)
            if idle < idle_s or not status.running:
                return False
            _stop_locked(settings, status)
            return True


def compact_if_large(settings: Settings, max_bytes: int) -> bool:
    """Compact a running daemon whose journal passed ``max_bytes``, when no command is using it."""
    if journal_bytes(settings.home) < max_bytes:
        return False
    with _engine_lock(settings.home, wait=False) as locked:
        if not locked:
            return False
        with _in_use(settings.home, exclusive=True, wait=False) as free:
            status = daemon_status(settings)
            if not free or not status.running or status.url is None:
                return False
            client = make_client(status.url, request_timeout=max(settings.request_timeout, 120.0))
            try:
                compact(client, settings)
            finally:
                client.close()
            return True


@contextlib.contextmanager
def engine_session(settings: Settings) -> Iterator[str]:
    """The running daemon's URL for one command, starting it first if needed.

    The shared in-use lock held meanwhile keeps the idle stop and compaction away.
    """
    home = settings.home
    for _ in range(3):
        status = daemon_status(settings)
        if not status.running:
            status = start_daemon(settings)
            warn_of(status)
        with _in_use(home, exclusive=False):
            status = daemon_status(settings)  # it may have been stopped while we waited for the lock
            if status.running and status.url is not None:
                touch_last_used(home)
                try:
                    yield status.url
                finally:
                    touch_last_used(home)
                return
    raise EngineError(
        "the embedded engine keeps stopping while starting",
        hint=f"see {engine_dir(home) / 'daemon.log'}, then `esbubble engine stop` and retry",
    )
