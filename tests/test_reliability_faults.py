"""Faults: 429s and timeouts, a cluster that goes away mid-batch, a killed engine, crashed processes.

Faults are real: a real HTTP hop that answers 429 or drops connections, a
real osmem process killed with SIGKILL, real CLI processes interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _store_data import QUOTE_JOB, make_chunk
from click.testing import CliRunner, Result
from reliability_proxy import forwarding_proxy

from esbubble.app.cli import cli
from esbubble.app.rebubble import run_batch
from esbubble.app.runner import RunOptions
from esbubble.config import BubbleConfig, load_profile
from esbubble.errors import BulkError, EngineError, NotFoundError
from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.queryset import QueryCase, load_queries
from esbubble.store.audit import TraceWriter, find_manifests, flush_spool, spool_dir, trace_records
from esbubble.store.chunks import bulk_write, count_chunks, index_chunks, replace_chunks
from esbubble.store.connection import Store, connect
from esbubble.store.engine import launch_osmem, stop_process
from esbubble.store.retrieve import retrieve
from esbubble.store.settings import Settings, load_settings
from esbubble.store.templates import init_indices

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _via(url: str, store: Store) -> Store:
    """The same indices, reached through ``url``."""
    settings = store.settings.model_copy(update={"url": url})
    return connect(url, settings, shown_url=url)


# --- 429 / timeouts ---------------------------------------------------------------------------


def test_429s_are_retried_with_growing_backoff_then_succeed(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        proxied = _via(url, store)
        wire.fail_first = len(wire.failed) + 2  # the next two requests are refused with 429
        started = time.monotonic()
        result = retrieve(proxied, "scaffold hire", BubbleConfig())
        elapsed = time.monotonic() - started
    assert result.candidates
    assert len(wire.failed) == 2
    # equal-jitter backoff: at least 0.125 s, then at least 0.25 s
    assert elapsed >= 0.375


def test_persistent_429_gives_up_after_capped_retries_with_one_clear_line(store: Store) -> None:
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        proxied = _via(url, store)
        wire.fail_first = len(wire.failed) + 1000
        before = len(wire.requests)
        started = time.monotonic()
        with pytest.raises(EngineError) as error:
            retrieve(proxied, "scaffold", BubbleConfig())
        elapsed = time.monotonic() - started
    assert len(wire.requests) - before == 4  # one try + 3 retries
    assert elapsed < 4.0  # capped: 0.25 + 0.5 + 1 s at most
    assert error.value.exit_code == 3
    assert "\n" not in error.value.one_line() and url in error.value.one_line()


def test_timeouts_are_retried_and_the_request_succeeds(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        settings = store.settings.model_copy(update={"url": url, "request_timeout": 0.5})
        proxied = connect(url, settings, shown_url=url)
        before = len(wire.requests)
        wire.stall_s, wire.stall_next = 1.5, 1  # the next request outlives the 0.5 s timeout
        result = retrieve(proxied, "scaffold hire", BubbleConfig())
        assert result.candidates
        assert len(wire.requests) - before >= 2  # the timed-out try, then the retry (more if slow)


def test_a_write_that_times_out_says_it_may_have_landed(store: Store) -> None:
    """A busy engine may apply a write it did not answer in time: "failed" alone would mislead."""
    index_chunks(store, QUOTE_JOB[:1])
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        settings = store.settings.model_copy(update={"url": url, "request_timeout": 0.3})
        proxied = connect(url, settings, shown_url=url)
        wire.stall_s, wire.stall_next = 0.8, 4  # the try and its 3 retries all outlive the timeout
        with pytest.raises(EngineError) as error:
            replace_chunks(proxied, QUOTE_JOB[1:3], [])
    line = error.value.one_line()
    assert "did not answer in time to replace chunks (waited 0.3 s, retried)" in line
    assert "a write may still have been applied" in line and "raise request_timeout" in line
    assert error.value.exit_code == 3
    deadline = time.monotonic() + 10  # the stalled requests reach the engine after the client gave up
    while count_chunks(store) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert count_chunks(store) == 3, "it did land, as the message warned"


def test_a_large_write_waits_longer_than_a_search(store: Store) -> None:
    """A document's replacement waits request_timeout plus time per byte, so a large one the engine
    is slow to write is not cut at a search's timeout (and sent again)."""
    words = " ".join(f"word{n}" for n in range(400))
    chunks = [make_chunk("big", n, f"{words} row {n}") for n in range(300)]
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, wire):
        settings = store.settings.model_copy(update={"url": url, "request_timeout": 0.3})
        proxied = connect(url, settings, shown_url=url)
        wire.stall_s, wire.stall_next = 1.0, 4  # every try outlives 0.3 s
        before = len(wire.requests)
        summary = replace_chunks(proxied, chunks, [])
        bulks = [line for line in wire.requests[before:] if "/_bulk" in line]
    assert summary.created == 300
    assert len(bulks) == 1, "the first try was waited for, not timed out and sent again"


def test_bulk_items_that_still_fail_are_reported_one_by_one(store: Store) -> None:
    index_chunks(store, QUOTE_JOB[:2])
    fresh = make_chunk("new", 0, "a brand new chunk")
    actions = [
        {
            "_op_type": "create",
            "_index": store.names.chunks,
            "_id": c.chunk_id,
            "_source": c.model_dump(mode="json"),
        }
        for c in [*QUOTE_JOB[:2], fresh]
    ]
    with pytest.raises(BulkError) as error:
        bulk_write(store, actions, what="chunks")
    assert sorted(str(e["_id"]) for e in error.value.errors) == sorted(c.chunk_id for c in QUOTE_JOB[:2])
    assert {e["status"] for e in error.value.errors} == {409}
    assert "2 of 3 chunks failed" in error.value.one_line()


# --- unreachable at start ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["bubble", "scope"], ["rebubble", str(SAMPLE / "queries.jsonl")], ["init"]]
)
def test_unreachable_cluster_exits_3_with_url_and_hint_no_traceback(command: list[str]) -> None:
    result = run("--url", "http://127.0.0.1:9", *command)
    assert result.exit_code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("esbubble: error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    line = errors[0]
    assert "cannot reach Elasticsearch at http://127.0.0.1:9" in line
    assert "set ELASTICSEARCH_URL or --url" in line


# --- cluster goes away mid-batch; resume ------------------------------------------------------


@pytest.fixture
def sample_store(store: Store) -> Store:
    config = load_profile(SAMPLE / "profile.toml")
    options = IngestOptions.of(config)
    ingest_paths(
        store, [SAMPLE / n for n in ("quote_job.xlsx", "site_memo.md", "specification.pdf")], options
    )
    return store


@pytest.mark.parametrize("background", [False, True], ids=["synchronous-writer", "background-writer"])
def test_cluster_lost_mid_batch_then_resume_finishes_without_redoing(
    sample_store: Store, background: bool
) -> None:
    store = sample_store
    cases = load_queries(SAMPLE / "queries.jsonl").cases
    config = load_profile(SAMPLE / "profile.toml")
    assert store.settings.url is not None and len(cases) > 12
    with forwarding_proxy(store.settings.url) as (url, wire):
        proxied = _via(url, store)
        done = 0

        def cut_after_three(count: int) -> None:
            nonlocal done
            done += count
            if done == 3:
                wire.down = True

        # The CLI's default is the background writer; a caller's own TraceWriter writes each run at once.
        writer = None if background else TraceWriter.for_store(proxied)
        first = run_batch(
            proxied,
            cases,
            config,
            RunOptions(batch_id="batch-cut", now=NOW),
            on_done=cut_after_three,
            writer=writer,
        )
        # finished runs (written or spooled, whatever the cut reached) + failed = every query
        assert len(first.runs) + len(first.failed) == len(cases)
        assert first.failed and all(url in f.reason for f in first.failed)
        assert first.spooled > 0
        assert [f.case_id for f in first.failed] == [c.id for c in cases][len(first.runs) :]
        wire.down = False
        try:
            stored_before = {m.run_id: m for m in find_manifests(store, "batch-cut")}
        except NotFoundError:  # the background writer had sent nothing before the cut
            stored_before = {}
        if not background:  # 3 written; the rest of the first msearch group was spooled
            assert len(stored_before) == 3
        else:  # how many runs the writer had sent before the cut depends on timing
            assert len(stored_before) <= 3
        resumed = run(
            "--url", url, "--prefix", store.names.prefix,
            "rebubble", str(SAMPLE / "queries.jsonl"), "--profile", str(SAMPLE / "profile.toml"),
            "--resume", "batch-cut", "--json",
        )  # fmt: skip
    assert resumed.exit_code == 0, resumed.stderr
    payload = json.loads(resumed.stdout)
    assert payload["batch_id"] == "batch-cut" and payload["failed"] == []
    assert len(payload["skipped"]) == len(first.runs)  # spooled runs landed by the flush, not redone
    assert len(payload["runs"]) == len(first.failed)
    manifests = find_manifests(store, "batch-cut")
    assert sorted(m.run_id for m in manifests) == sorted(f"batch-cut.{c.id}" for c in cases)
    for run_id, manifest in stored_before.items():  # the finished runs were not redone
        again = next(m for m in manifests if m.run_id == run_id)
        assert again.timestamp == manifest.timestamp and again.timings_ms == manifest.timings_ms
    finished_first = {summary.run_id for summary in first.runs}
    assert {m.run_id for m in manifests if m.timestamp == NOW} == finished_first  # spooled ones landed as run
    records = trace_records(store, [m.run_id for m in manifests])
    assert len({r["trace_id"] for r in records}) == len(records)
    for manifest in manifests:
        assert sum(1 for r in records if r["run_id"] == manifest.run_id) == manifest.totals.candidates
    again = run(
        "--url", store.settings.url, "--prefix", store.names.prefix,
        "rebubble", str(SAMPLE / "queries.jsonl"), "--profile", str(SAMPLE / "profile.toml"),
        "--resume", "batch-cut", "--json",
    )  # fmt: skip
    assert again.exit_code == 0, again.stderr
    finished = json.loads(again.stdout)
    assert finished["runs"] == [] and finished["skipped"] == [c.id for c in cases]


def test_resume_with_another_profile_is_refused(sample_store: Store) -> None:
    cases = load_queries(SAMPLE / "queries.jsonl").cases[:2]
    run_batch(sample_store, cases, BubbleConfig(), RunOptions(batch_id="batch-p", now=NOW))
    assert sample_store.settings.url is not None
    result = run(
        "--url", sample_store.settings.url, "--prefix", sample_store.names.prefix,
        "rebubble", str(SAMPLE / "queries.jsonl"), "--budget", "300", "--resume", "batch-p",
    )  # fmt: skip
    assert result.exit_code == 1
    assert "batch 'batch-p' was run with another profile" in result.stderr
    assert "finish the batch with" not in result.stderr, "the same command would be refused again"


# --- engine killed mid-run: spool, flush, exactly once ----------------------------------------


@pytest.fixture
def own_engine(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    process, url = launch_osmem(None, log=tmp_path / "own.log", detached=False)
    yield process, url
    stop_process(process)


def test_engine_killed_mid_run_every_trace_arrives_after_flush_exactly_once(
    own_engine: tuple[subprocess.Popen[bytes], str], engine_url: str, isolated_home: Path
) -> None:
    process, url = own_engine
    prefix = f"killed{uuid.uuid4().hex[:8]}"  # spooled records name their index: same prefix after restart
    settings = Settings(url=url, prefix=prefix, home=isolated_home)
    victim = connect(url, settings, shown_url=url)
    init_indices(victim)
    index_chunks(victim, QUOTE_JOB)
    queries = ["scaffold hire", "roof sheeting", "gutters", "edge protection", "labour"]
    written: list[str] = []

    def kill_after_two(count: int) -> None:
        written.append("x")
        if len(written) == 2:
            process.send_signal(signal.SIGKILL)
            process.wait(10)

    cases = [QueryCase(id=f"q{n}", query=q) for n, q in enumerate(queries)]
    batch = run_batch(
        victim, cases, BubbleConfig(), RunOptions(batch_id="batch-kill", now=NOW), on_done=kill_after_two
    )
    assert batch.audit_error is not None
    assert batch.spooled > 0 and batch.lost == 0
    spooled_ids = {
        json.loads(line)["_id"]
        for path in spool_dir(isolated_home).glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    }
    assert len(spooled_ids) == batch.spooled
    # The cluster comes back (a new engine); the spool is replayed into it.
    back_settings = Settings(url=engine_url, prefix=prefix, home=isolated_home)
    back = connect(engine_url, back_settings, shown_url=engine_url)
    try:
        init_indices(back)
        spool_copy = {p.name: p.read_bytes() for p in spool_dir(isolated_home).glob("*.jsonl")}
        flushed = run("--url", engine_url, "--prefix", prefix, "traces", "flush", "--json")
        assert flushed.exit_code == 0, flushed.stderr
        first = json.loads(flushed.stdout)
        assert (first["written"], first["remaining"]) == (batch.spooled, 0)
        assert not list(spool_dir(isolated_home).glob("*.jsonl"))
        # A crash between writing and deleting the spool replays it again: still exactly once.
        for name, content in spool_copy.items():
            (spool_dir(isolated_home) / name).write_bytes(content)
        again = flush_spool(back)
        assert again.written == batch.spooled
        stored = _all_ids(back)
        assert sorted(stored) == sorted(spooled_ids)  # every spooled record, each exactly once
        run_ids = {f"batch-kill.{c.id}" for c in cases[2:]}
        manifests = [m for m in find_manifests(back, "batch-kill") if m.run_id in run_ids]
        records = trace_records(back, sorted(run_ids))
        for manifest in manifests:
            assert sum(1 for r in records if r["run_id"] == manifest.run_id) == manifest.totals.candidates
        assert len(manifests) == len(run_ids)
    finally:
        for name in list(back.client.indices.get(index=f"{back.names.prefix}-*").body):
            back.client.indices.delete(index=name)
        back.client.close()
        victim.client.close()


def _all_ids(store: Store) -> list[str]:
    store.client.indices.refresh(index=store.names.pattern)
    hits = store.client.search(
        index=f"{store.names.traces},{store.names.runs}", size=10_000, query={"match_all": {}}, source=False
    ).body["hits"]["hits"]
    return [hit["_id"] for hit in hits]


# --- the embedded engine outlives commands, never their failures -----------------------------


# The CLI as a terminal starts it. A shell without job control (``nohup``, ``cmd &`` in a script, some
# CI runners) starts its background jobs with SIGINT ignored, and Python then installs no Ctrl-C
# handler, so the interrupted command would run to its end: Python's own handler is put back first.
_TERMINAL_CLI = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from esbubble.app.cli import main; main()"
)


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ESBUBBLE_HOME": str(home)}
    env.pop("ELASTICSEARCH_URL", None)
    return subprocess.Popen(
        [sys.executable, "-c", _TERMINAL_CLI, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _daemon_pid(home: Path) -> int | None:
    try:
        return int(json.loads((home / "engine" / "daemon.json").read_text())["pid"])
    except (FileNotFoundError, ValueError):
        return None


@pytest.mark.parametrize(
    ("args", "code"),
    [(["init"], 0), (["trace", "no-such-run"], 1)],
    ids=["normal-exit", "error-exit"],
)
def test_the_engine_a_command_started_keeps_serving_after_it_exits(
    isolated_home: Path, args: list[str], code: int
) -> None:
    process = _cli(isolated_home, *args)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    pid = _daemon_pid(isolated_home)
    assert pid is not None, "the command started the background engine"
    after = _cli(isolated_home, "init", "--json")
    _, err = after.communicate(timeout=120)
    assert after.returncode == 0, err
    assert _daemon_pid(isolated_home) == pid, "the next command reused it"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_an_interrupted_command_leaves_a_working_engine(isolated_home: Path, signum: int) -> None:
    process = _cli(isolated_home, "ingest", str(SAMPLE))
    deadline = time.monotonic() + 60
    while _daemon_pid(isolated_home) is None and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    time.sleep(0.3)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    # click turns Ctrl-C into "Aborted!" (exit 1); SIGTERM exits 128+15; SIGKILL leaves no say.
    assert (
        process.returncode
        in {
            signal.SIGINT: (1,),
            signal.SIGTERM: (143, -15),
            signal.SIGKILL: (-9,),
        }[signum]
    ), stderr
    if signum != signal.SIGKILL:
        assert "Traceback" not in stderr
    # Nothing stale is left behind (the locks die with the process): the next command works.
    after = _cli(isolated_home, "init", "--json")
    _, err = after.communicate(timeout=180)
    assert after.returncode == 0, err


def test_crashed_daemon_is_detected_and_replaced(isolated_home: Path) -> None:
    env_home = load_settings(home=isolated_home)
    start = _cli(isolated_home, "engine", "start", "--json")
    out, err = start.communicate(timeout=60)
    assert start.returncode == 0, err
    first = json.loads(out)
    os.kill(first["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(first["pid"], 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    status = _cli(isolated_home, "engine", "status", "--json")
    assert json.loads(status.communicate(timeout=60)[0])["running"] is False
    again = _cli(isolated_home, "engine", "start", "--json")
    out, err = again.communicate(timeout=60)
    second = json.loads(out)
    try:
        assert again.returncode == 0, err
        assert second["running"] and second["pid"] != first["pid"]
        with_store = _cli(isolated_home, "init", "--json")
        assert with_store.communicate(timeout=60)[0]
        assert with_store.returncode == 0
        assert env_home.home == isolated_home
    finally:
        stop = _cli(isolated_home, "engine", "stop")
        stop.communicate(timeout=60)
