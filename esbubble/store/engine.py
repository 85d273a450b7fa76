"""The embedded engine: osmem-server started from its wheel, with data kept across invocations.

osmem is in-memory, so persistence is ours: ``<home>/engine/snapshot`` (a
symlink swapped atomically to the newest ``snapshots/<id>`` directory) holds
every index in osmem's seed layout, plus ``templates.json`` with the
templates, which are re-installed after start.

Two ways to run it:

- **ephemeral** (``embedded_engine``): one osmem per invocation, seeded from the
  snapshot, dying with us (``--parent-pid``). An exclusive ``fcntl`` lock on
  ``engine/engine.lock`` serialises concurrent invocations so none loses the
  other's writes; on exit, if anything changed, a new snapshot is written.
- **daemon** (``start_daemon`` / ``stop_daemon`` / ``daemon_status``): one detached
  osmem recorded in ``engine/daemon.json``; ``open_store`` connects to it while
  it is alive and answers. ``stop_daemon`` snapshots, then stops it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import scan
from pydantic import BaseModel, ConfigDict

from esbubble.errors import ConfigError, EngineError
from esbubble.settings import Settings
from esbubble.store.client import make_client

STARTUP_TIMEOUT_S = 30.0
_KEPT_SETTINGS = ("analysis", "number_of_shards", "number_of_replicas")


class DaemonStatus(BaseModel):
    """What ``engine status`` reports."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    running: bool
    pid: int | None = None
    url: str | None = None
    started_at: datetime | None = None
    snapshot: str | None = None
    stale_removed: bool = False


def engine_dir(home: Path) -> Path:
    return home / "engine"


def snapshot_path(home: Path) -> Path:
    """The current snapshot (a symlink to the newest snapshot directory)."""
    return engine_dir(home) / "snapshot"


def _binary() -> str:
    from osmem_server import resolve_binary

    try:
        return str(resolve_binary())
    except RuntimeError as error:
        raise EngineError(f"cannot start the embedded engine: {error}") from None


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
                f"the embedded engine exited during startup (code {process.returncode})",
                hint=f"see {log}",
            )
        time.sleep(0.02)
    process.kill()
    raise EngineError(f"the embedded engine did not start within {timeout:g} s", hint=f"see {log}")


def launch_osmem(seed: Path | None, *, log: Path, detached: bool) -> tuple[subprocess.Popen[bytes], str]:
    """Start osmem on a free loopback port; return the process and its URL once it answers.

    It gets its own session so a terminal's Ctrl-C reaches only us and we can
    snapshot before stopping it; ``--parent-pid`` still ends it if we die.
    """
    args = [_binary(), "--addr", "127.0.0.1:0", "--no-stdin-watch"]
    if not detached:
        args += ["--parent-pid", str(os.getpid())]
    if seed is not None:
        args += ["--seed", str(seed)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        url = _wait_for_url(process, log, STARTUP_TIMEOUT_S)
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


@contextlib.contextmanager
def _engine_lock(home: Path) -> Iterator[None]:
    """Exclusive lock on ``engine/engine.lock``: one ephemeral engine (or daemon start/stop) at a time."""
    directory = engine_dir(home)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock_file = (directory / "engine.lock").open("a")
    except OSError as error:
        raise ConfigError(
            f"cannot use {directory} for the embedded engine: {error.strerror}",
            hint="set ESBUBBLE_HOME to a writable directory",
        ) from None
    with lock_file as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --- snapshot ---------------------------------------------------------------------------------


def _seed_dir(home: Path) -> Path | None:
    seed = snapshot_path(home)
    return seed if seed.is_dir() else None


def _filtered_settings(settings: dict[str, Any]) -> dict[str, Any]:
    index = settings.get("index", settings)
    return {"index": {key: index[key] for key in _KEPT_SETTINGS if key in index}}


def _managed(entries: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [e for e in entries if (e[key].get("_meta") or {}).get("managed_by") == "esbubble"]


def _export_documents(client: Elasticsearch, index: str, path: Path) -> None:
    """Write an index's documents as a bulk body; an empty index gets no file (osmem rejects empty bodies)."""
    out = None
    try:
        for hit in scan(client, index=index, query={"query": {"match_all": {}}}, size=500):
            if out is None:
                out = path.open("w", encoding="utf-8")
            out.write(json.dumps({"index": {"_index": index, "_id": hit["_id"]}}) + "\n")
            out.write(json.dumps(hit["_source"], sort_keys=True) + "\n")
    finally:
        if out is not None:
            out.close()


def export_snapshot(client: Elasticsearch, home: Path) -> Path:
    """Write every index and esbubble template to a new snapshot and swap it in atomically."""
    snapshots = engine_dir(home) / "snapshots"
    target = snapshots / uuid.uuid4().hex
    staging = snapshots / f".staging-{target.name}"
    staging.mkdir(parents=True)
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
            (staging / f"{name}.index.json").write_text(json.dumps(body, sort_keys=True), encoding="utf-8")
            _export_documents(client, name, staging / f"{name}.ndjson")
        components = client.cluster.get_component_template().body["component_templates"]
        templates = client.indices.get_index_template().body["index_templates"]
        saved = {
            "component_templates": _managed(components, "component_template"),
            "index_templates": _managed(templates, "index_template"),
        }
        (engine_dir(home) / "snapshots" / f"{target.name}.templates.json").write_text(
            json.dumps(saved, sort_keys=True), encoding="utf-8"
        )
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


def _fingerprint(client: Elasticsearch) -> str:
    """Changes whenever a document, an index or a template is written (osmem counts every write)."""
    stats = client.indices.stats(index="*", metric="indexing,docs").body.get("indices", {})
    counts = {
        name: (
            s["primaries"]["docs"]["count"],
            s["primaries"]["indexing"]["index_total"],
            s["primaries"]["indexing"]["delete_total"],
        )
        for name, s in stats.items()
    }
    components = client.cluster.get_component_template().body["component_templates"]
    templates = client.indices.get_index_template().body["index_templates"]
    return json.dumps([counts, components, templates], sort_keys=True)


# --- ephemeral --------------------------------------------------------------------------------


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while the engine runs, so cleanup and the snapshot still happen."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def ephemeral_engine(settings: Settings) -> Iterator[str]:
    """One osmem for this invocation, seeded from the snapshot; snapshots on exit if anything changed."""
    home = settings.home
    with _sigterm_as_exit(), _engine_lock(home):
        log = engine_dir(home) / "ephemeral.log"
        process, url = launch_osmem(_seed_dir(home), log=log, detached=False)
        try:
            client = make_client(url, request_timeout=settings.request_timeout)
            try:
                restore_templates(client, home)
                before = _fingerprint(client)
                try:
                    yield url
                finally:
                    # Writes that reached the engine persist even if the caller failed or was interrupted,
                    # as they would on a real cluster.
                    if _fingerprint(client) != before:
                        export_snapshot(client, home)
            finally:
                client.close()
        finally:
            stop_process(process)


# --- daemon -----------------------------------------------------------------------------------


@contextlib.contextmanager
def daemon_session(settings: Settings, url: str) -> Iterator[str]:
    """One invocation on the running daemon; snapshots on exit if it wrote anything.

    The daemon also snapshots on ``engine stop``, but a daemon that crashes or
    whose machine reboots would otherwise lose every write since it started.
    """
    client = make_client(url, request_timeout=settings.request_timeout)
    try:
        before = _fingerprint(client)
        try:
            yield url
        finally:
            if _fingerprint(client) != before:
                with _engine_lock(settings.home):
                    export_snapshot(client, settings.home)
    finally:
        client.close()


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
    return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=2.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def daemon_status(settings: Settings) -> DaemonStatus:
    """Is a daemon recorded, alive and answering? A stale record is removed."""
    file = _daemon_file(settings.home)
    snapshot = str(snapshot_path(settings.home).resolve()) if _seed_dir(settings.home) else None
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
        pid, url = int(record["pid"]), str(record["url"])
        started_at = datetime.fromisoformat(record["started_at"])
    except (FileNotFoundError, NotADirectoryError):
        return DaemonStatus(running=False, snapshot=snapshot)
    except (ValueError, KeyError, TypeError):
        file.unlink(missing_ok=True)
        return DaemonStatus(running=False, snapshot=snapshot, stale_removed=True)
    if _pid_alive(pid) and _answers(url):
        return DaemonStatus(running=True, pid=pid, url=url, started_at=started_at, snapshot=snapshot)
    file.unlink(missing_ok=True)
    return DaemonStatus(running=False, snapshot=snapshot, stale_removed=True)


def start_daemon(settings: Settings) -> DaemonStatus:
    """Start a detached osmem seeded from the snapshot (or report the one already running)."""
    status = daemon_status(settings)
    if status.running:
        return status
    home = settings.home
    with _engine_lock(home):
        process, url = launch_osmem(_seed_dir(home), log=engine_dir(home) / "daemon.log", detached=True)
        client = make_client(url, request_timeout=settings.request_timeout)
        try:
            restore_templates(client, home)
        except BaseException:
            stop_process(process)
            raise
        finally:
            client.close()
        record = {"pid": process.pid, "url": url, "started_at": datetime.now(UTC).isoformat()}
        temporary = _daemon_file(home).with_suffix(".tmp")
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, _daemon_file(home))
    return daemon_status(settings)


def stop_daemon(settings: Settings) -> DaemonStatus:
    """Snapshot the daemon's data, then stop it. Stopping no daemon is not an error."""
    status = daemon_status(settings)
    if not status.running or status.pid is None or status.url is None:
        return status
    with _engine_lock(settings.home):
        client = make_client(status.url, request_timeout=settings.request_timeout)
        try:
            export_snapshot(client, settings.home)
        finally:
            client.close()
        os.kill(status.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        while _pid_alive(status.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(status.pid):
            os.kill(status.pid, signal.SIGKILL)
        _daemon_file(settings.home).unlink(missing_ok=True)
    return daemon_status(settings)
