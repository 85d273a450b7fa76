"""The embedded engine keeps what was indexed across separate processes, ephemeral or daemon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from esbubble.settings import load_settings
from esbubble.store.engine import daemon_status, snapshot_path, start_daemon, stop_daemon

pytestmark = pytest.mark.integration

WRITE = """
import json, sys
sys.path.insert(0, {tests!r})
from _store_data import QUOTE_JOB
from esbubble.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import index_chunks
with open_store(load_settings()) as store:
    init_indices(store)
    summary = index_chunks(store, QUOTE_JOB[: int(sys.argv[1])])
    print(json.dumps({{"url": store.display_url, "created": summary.created}}))
"""
READ = """
import json
from esbubble.config import parse_config
from esbubble.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import count_chunks
from esbubble.store.retrieve import retrieve
with open_store(load_settings()) as store:
    changed = init_indices(store).changed
    hits = [c.chunk.chunk_id for c in retrieve(store, "gutters", parse_config({{}})).candidates]
    count = count_chunks(store)
    print(json.dumps({{"url": store.display_url, "count": count, "hits": hits, "changed": changed}}))
"""
TESTS_DIR = str(Path(__file__).parent)


def _python(code: str, home: Path, *args: str) -> dict[str, object]:
    env = {**os.environ, "ESBUBBLE_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code).format(tests=TESTS_DIR), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_ephemeral_engine_persists_across_processes(isolated_home: Path) -> None:
    wrote = _python(WRITE, isolated_home, "5")
    assert wrote["created"] == 5
    assert str(wrote["url"]).startswith("embedded (http://127.0.0.1:")
    assert snapshot_path(isolated_home).is_dir()

    read = _python(READ, isolated_home)
    assert read["count"] == 5
    assert read["hits"] == ["job:0004"]
    assert read["changed"] is False, "templates come back with the snapshot; init changes nothing"
    assert read["url"] != wrote["url"], "each invocation runs its own engine"

    _python(WRITE, isolated_home, "8")
    assert _python(READ, isolated_home)["count"] == 8
    snapshots = [p for p in (isolated_home / "engine" / "snapshots").iterdir() if p.is_dir()]
    assert len(snapshots) == 1, "older snapshots are removed after the swap"


def test_empty_index_survives_a_restart(isolated_home: Path) -> None:
    """An index with no documents is snapshotted without a bulk body, which osmem would refuse to seed."""
    _python(WRITE, isolated_home, "0")
    read = _python(READ, isolated_home)
    assert read["count"] == 0
    assert read["changed"] is False


def test_daemon_serves_invocations_and_snapshots_on_stop(isolated_home: Path) -> None:
    settings = load_settings(home=isolated_home)
    assert not daemon_status(settings).running
    started = start_daemon(settings)
    try:
        assert started.running and started.url is not None
        assert start_daemon(settings).pid == started.pid, "a second start reuses the running daemon"
        wrote = _python(WRITE, isolated_home, "5")
        assert wrote["url"] == f"embedded ({started.url})"
        assert _python(READ, isolated_home)["url"] == f"embedded ({started.url})"
    finally:
        stopped = stop_daemon(settings)
    assert not stopped.running
    assert not (isolated_home / "engine" / "daemon.json").exists()
    read = _python(READ, isolated_home)
    assert read["count"] == 5, "the daemon's data survives its stop"


def test_daemon_writes_survive_a_daemon_crash(isolated_home: Path) -> None:
    """Each invocation that wrote through the daemon snapshots, so a killed daemon loses nothing."""
    settings = load_settings(home=isolated_home)
    started = start_daemon(settings)
    assert started.pid is not None
    try:
        _python(WRITE, isolated_home, "4")
    finally:
        os.kill(started.pid, signal.SIGKILL)
    status = daemon_status(settings)
    assert not status.running and status.stale_removed
    read = _python(READ, isolated_home)
    assert read["count"] == 4
    assert read["url"] != f"embedded ({started.url})", "a fresh ephemeral engine replaced the dead daemon"


def test_stale_daemon_record_is_removed(isolated_home: Path) -> None:
    engine = isolated_home / "engine"
    engine.mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    record = {"pid": int(dead.stdout), "url": "http://127.0.0.1:9", "started_at": "2026-01-01T00:00:00+00:00"}
    (engine / "daemon.json").write_text(json.dumps(record))
    status = daemon_status(load_settings(home=isolated_home))
    assert not status.running
    assert status.stale_removed
    assert not (engine / "daemon.json").exists()


INTERRUPTED = """
import sys, time
sys.path.insert(0, {tests!r})
from _store_data import QUOTE_JOB
from esbubble.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import index_chunks
with open_store(load_settings()) as store:
    init_indices(store)
    index_chunks(store, QUOTE_JOB[:3])
    print("ready", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_invocation_still_snapshots_and_stops(isolated_home: Path, signum: int) -> None:
    env = {**os.environ, "ESBUBBLE_HOME": str(isolated_home)}
    code = textwrap.dedent(INTERRUPTED).format(tests=TESTS_DIR)
    with subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signum)
        process.wait(timeout=60)
    assert process.returncode != 0
    read = _python(READ, isolated_home)
    assert read["count"] == 3, "the writes made before the interrupt were snapshotted"


WRITE_DOC = """
import sys
sys.path.insert(0, {tests!r})
from _store_data import make_chunk
from esbubble.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import index_chunks
with open_store(load_settings()) as store:
    init_indices(store)
    index_chunks(store, [make_chunk(sys.argv[1], i, f"{{sys.argv[1]}} line {{i}}") for i in range(4)])
print("{{}}")
"""


def test_concurrent_invocations_do_not_lose_each_others_writes(isolated_home: Path) -> None:
    env = {**os.environ, "ESBUBBLE_HOME": str(isolated_home)}
    code = textwrap.dedent(WRITE_DOC).format(tests=TESTS_DIR)
    processes = [
        subprocess.Popen([sys.executable, "-c", code, f"doc{n}"], env=env, stderr=subprocess.PIPE, text=True)
        for n in range(3)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    assert _python(READ, isolated_home)["count"] == 12
