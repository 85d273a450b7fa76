"""The embedded engine: started once, reused, its writes journaled and replayed, its history on disk."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from esbubble.store.engine import daemon_status, engine_dir, snapshot_path, start_daemon, stop_daemon
from esbubble.store.journal import journal_dir, segments
from esbubble.store.settings import load_settings

pytestmark = pytest.mark.integration

WRITE = """
import json, sys
sys.path.insert(0, {tests!r})
from _store_data import QUOTE_JOB
from esbubble.store.settings import load_settings
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
from esbubble.store.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import count_chunks
from esbubble.store.retrieve import retrieve
with open_store(load_settings()) as store:
    changed = init_indices(store).changed
    hits = [c.chunk.chunk_id for c in retrieve(store, "gutters", parse_config({{}})).candidates]
    count = count_chunks(store)
    found = store.client.search(
        index=store.names.chunks, size=1000, version=True, query={{"match_all": {{}}}}
    ).body["hits"]["hits"]
    versions = sorted({{hit["_version"] for hit in found}})
    ids = sorted(hit["_id"] for hit in found)
    print(json.dumps({{"url": store.display_url, "count": count, "hits": hits, "changed": changed,
                      "ids": ids, "versions": versions}}))
"""
# Writes one chunk per request and says so only once the write returned (= acknowledged).
WRITE_LOOP = """
import sys
sys.path.insert(0, {tests!r})
from _store_data import make_chunk
from esbubble.store.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import index_chunks
with open_store(load_settings()) as store:
    init_indices(store)
    print("ready", flush=True)
    for i in range(100000):
        index_chunks(store, [make_chunk(sys.argv[1], i, f"line {{i}} of the loop")])
        print(f"{{sys.argv[1]}}:{{i:04d}}", flush=True)
"""
TESTS_DIR = str(Path(__file__).parent)


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "ESBUBBLE_HOME": str(home)}


def _run(home: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` with ``home`` as ESBUBBLE_HOME."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _python(code: str, home: Path, *args: str) -> dict[str, object]:
    done = _run(home, textwrap.dedent(code).format(tests=TESTS_DIR), *args)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _running_pid(home: Path) -> int:
    status = daemon_status(load_settings(home=home))
    assert status.running and status.pid is not None
    return status.pid


def _kill_engine(home: Path) -> None:
    """SIGKILL the running engine and wait until it is gone, so the next start cannot still see it."""
    pid = _running_pid(home)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if not daemon_status(load_settings(home=home)).running:
            return
        time.sleep(0.05)
    raise AssertionError(f"engine {pid} still seen running 15 s after SIGKILL")


def test_first_command_starts_the_engine_and_later_ones_reuse_it(isolated_home: Path) -> None:
    wrote = _python(WRITE, isolated_home, "5")
    assert wrote["created"] == 5
    read = _python(READ, isolated_home)
    assert read["url"] == wrote["url"], "the second command used the engine the first one started"
    assert read["count"] == 5 and read["hits"] == ["job:0004"]
    assert not snapshot_path(isolated_home).exists(), "no command exports the store"
    assert segments(journal_dir(engine_dir(isolated_home))), "the writes went to the journal"

    stopped = stop_daemon(load_settings(home=isolated_home))
    assert not stopped.running and snapshot_path(isolated_home).is_dir()
    again = _python(READ, isolated_home)
    assert again["count"] == 5 and again["changed"] is False, "data and templates come back"
    assert again["url"] != read["url"]
    assert again["versions"] == [1]


def test_empty_index_survives_a_restart(isolated_home: Path) -> None:
    """An index with no documents is snapshotted without a bulk body, which osmem would refuse to seed."""
    _python(WRITE, isolated_home, "0")
    stop_daemon(load_settings(home=isolated_home))
    read = _python(READ, isolated_home)
    assert read["count"] == 0
    assert read["changed"] is False


def test_writes_survive_a_killed_engine_and_are_applied_once(isolated_home: Path) -> None:
    _python(WRITE, isolated_home, "4")
    _kill_engine(isolated_home)
    read = _python(READ, isolated_home)
    assert read["count"] == 4
    assert read["versions"] == [1], "each journaled write was replayed exactly once"

    stop_daemon(load_settings(home=isolated_home))  # compaction: snapshot covers the journal
    again = _python(READ, isolated_home)
    assert again["count"] == 4 and again["versions"] == [1], "the snapshot's segments are not replayed"


def _acknowledged(home: Path, tag: str, kill_after_s: float, *, kill_engine: bool) -> set[str]:
    """Run the write loop; ``kill_after_s`` after its first write, SIGKILL the engine (or the command).

    Returns the ids whose write was acknowledged."""
    code = textwrap.dedent(WRITE_LOOP).format(tests=TESTS_DIR)
    with subprocess.Popen(
        [sys.executable, "-c", code, tag],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        first = process.stdout.readline().strip()  # the tokenizer loads before the first write returns
        time.sleep(kill_after_s)
        if kill_engine:
            _kill_engine(home)
        else:
            process.kill()
        output, _ = process.communicate(timeout=60)
    return {line.strip() for line in [first, *output.splitlines()] if line.startswith(f"{tag}:")}


@pytest.mark.parametrize("kill_engine", [True, False], ids=["engine", "command"])
def test_sigkill_at_any_point_loses_nothing_acknowledged(isolated_home: Path, kill_engine: bool) -> None:
    acked: set[str] = set()
    for n, delay in enumerate((0.0, 0.05, 0.2, 0.5)):
        acked |= _acknowledged(isolated_home, f"loop{n}", delay, kill_engine=kill_engine)
        read = _python(READ, isolated_home)
        stored = set(read["ids"])  # type: ignore[call-overload]
        assert acked <= stored, f"acknowledged writes lost: {sorted(acked - stored)[:5]}"
        assert set(read["versions"]) <= {1}, "a write was applied twice"  # type: ignore[call-overload]
    assert acked, "the loop wrote something before each kill"


def test_torn_journal_line_is_skipped_reported_and_cut(isolated_home: Path) -> None:
    _python(WRITE, isolated_home, "3")
    _kill_engine(isolated_home)
    last = segments(journal_dir(engine_dir(isolated_home)))[-1]
    with last.open("ab") as out:
        out.write(b'0badc0de {"id": "torn", "m": "PUT", "p": "/esbubble-chunks-v1/_doc/x", "b": "{\\"te')
    status = start_daemon(load_settings(home=isolated_home))
    assert status.running
    assert any("torn" in problem for problem in status.damaged), status.damaged
    assert list(last.parent.glob("*.torn")), "the torn bytes are kept aside"
    assert last.read_bytes().endswith(b"\n")
    read = _python(READ, isolated_home)
    assert read["count"] == 3, "everything before the torn line is there"
    _python(WRITE, isolated_home, "6")
    _kill_engine(isolated_home)
    assert _python(READ, isolated_home)["count"] == 6, "appends after the cut replay cleanly"


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


def test_stale_staging_is_removed_and_files_are_private(isolated_home: Path) -> None:
    home = isolated_home / "fresh"
    _python(WRITE, home, "2")
    staging = engine_dir(home) / "snapshots" / ".staging-killed"
    staging.parent.mkdir(mode=0o700)
    staging.mkdir(mode=0o700)
    (staging / "half.ndjson").write_text("{}")
    stop_daemon(load_settings(home=home))
    assert not staging.exists(), "a killed export's staging directory is cleaned up"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700, "the home is created private"
    for path in [home, *home.rglob("*")]:
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is readable by others ({oct(mode)})"


def test_engine_stops_after_the_idle_time(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[engine]\nidle_minutes = 0.05\n")
    _python(WRITE, isolated_home, "2")
    deadline = time.monotonic() + 30
    while daemon_status(load_settings(home=isolated_home)).running and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not daemon_status(load_settings(home=isolated_home)).running
    assert snapshot_path(isolated_home).is_dir(), "the idle stop compacted first"
    assert _python(READ, isolated_home)["count"] == 2


WRITE_DOC = """
import sys
sys.path.insert(0, {tests!r})
from _store_data import make_chunk
from esbubble.store.settings import load_settings
from esbubble.store.connection import open_store
from esbubble.store.templates import init_indices
from esbubble.store.chunks import index_chunks
with open_store(load_settings()) as store:
    init_indices(store)
    index_chunks(store, [make_chunk(sys.argv[1], i, f"{{sys.argv[1]}} line {{i}}") for i in range(4)])
print("{{}}")
"""


def test_concurrent_invocations_do_not_lose_each_others_writes(isolated_home: Path) -> None:
    code = textwrap.dedent(WRITE_DOC).format(tests=TESTS_DIR)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, f"doc{n}"],
            env=_env(isolated_home),
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 0, stderr
    assert _python(READ, isolated_home)["count"] == 12
    stop_daemon(load_settings(home=isolated_home))
    assert _python(READ, isolated_home)["count"] == 12


def test_watchdog_compacts_a_large_journal_while_the_engine_runs(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[engine]\ncompact_journal_mb = 0.001\n")
    wrote = _python(WRITE, isolated_home, "5")
    deadline = time.monotonic() + 30
    while not snapshot_path(isolated_home).is_dir() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert snapshot_path(isolated_home).is_dir(), "the watchdog compacted in the background"
    status = daemon_status(load_settings(home=isolated_home))
    assert status.running and f"embedded ({status.url})" == wrote["url"], "without stopping the engine"
    _kill_engine(isolated_home)
    read = _python(READ, isolated_home)
    assert read["count"] == 5 and read["versions"] == [1]


def test_an_engine_whose_home_was_deleted_is_stopped(isolated_home: Path) -> None:
    home = isolated_home / "doomed"
    _python(WRITE, home, "1")
    pid = _running_pid(home)
    (engine_dir(home) / "daemon.json").unlink()  # as `rm -rf` of the home does
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists(), "the watchdog stopped the unreachable engine"


START_CLI = "from esbubble.app.cli import main; main()"


def _interrupt_a_start(home: Path, signum: int) -> tuple[int, int, str]:
    """Run `engine start` and freeze it once its engine exists but is not yet recorded; send ``signum``.

    Returns the pid of the engine that start launched, the command's exit code and its stderr.
    """
    starting, recorded = engine_dir(home) / "starting.json", engine_dir(home) / "daemon.json"
    for _ in range(5):
        command = subprocess.Popen(
            [sys.executable, "-c", START_CLI, "engine", "start"],
            env=_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not starting.exists() and command.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        command.send_signal(signal.SIGSTOP)
        caught = starting.exists() and not recorded.exists()
        pid = int(json.loads(starting.read_text())["pid"]) if caught else 0
        command.send_signal(signum if caught else signal.SIGKILL)
        command.send_signal(signal.SIGCONT)
        _, stderr = command.communicate(timeout=60)
        if caught:
            return pid, command.returncode, stderr
        stop_daemon(load_settings(home=home))  # the start finished first: try again
    raise AssertionError("five starts all finished before they could be interrupted")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"


def test_an_engine_left_by_a_killed_start_is_stopped_by_the_next_start(isolated_home: Path) -> None:
    _python(WRITE, isolated_home, "3")
    stop_daemon(load_settings(home=isolated_home))
    leftover, code, _ = _interrupt_a_start(isolated_home, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert _alive(leftover), "SIGKILL gave the start no chance to stop its engine"
    assert not daemon_status(load_settings(home=isolated_home)).running, "it was never recorded"

    again = _run(isolated_home, START_CLI, "engine", "start", "--json")
    assert again.returncode == 0, again.stderr
    assert f"stopped engine process {leftover}, left running by an interrupted start" in again.stderr
    assert not _alive(leftover), "no second engine serves the home"
    assert json.loads(again.stdout)["pid"] != leftover
    assert not (engine_dir(isolated_home) / "starting.json").exists()
    assert _python(READ, isolated_home)["count"] == 3, "nothing was lost"


def test_a_terminated_start_stops_its_engine_itself(isolated_home: Path) -> None:
    _python(WRITE, isolated_home, "2")
    stop_daemon(load_settings(home=isolated_home))
    leftover, code, stderr = _interrupt_a_start(isolated_home, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM
    assert not _alive(leftover), "SIGTERM unwound the start, which stopped the engine it launched"
    assert not (engine_dir(isolated_home) / "starting.json").exists()
    assert "Traceback" not in stderr
    assert _python(READ, isolated_home)["count"] == 2


def test_engine_stop_also_stops_an_engine_left_by_a_killed_start(isolated_home: Path) -> None:
    _python(WRITE, isolated_home, "1")
    stop_daemon(load_settings(home=isolated_home))
    leftover, _, _ = _interrupt_a_start(isolated_home, signal.SIGKILL)
    stopped = stop_daemon(load_settings(home=isolated_home))
    assert stopped.interrupted_stopped == leftover and not stopped.running
    assert not _alive(leftover)
