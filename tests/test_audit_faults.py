"""Faults around the audit trail, through the CLI: no record lost without exit 4, batches that resume
after the engine is killed, clean one-line errors from odd servers, and nothing leaked by redaction."""

from __future__ import annotations

import json
import os
import shlex
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _store_data import QUOTE_JOB
from click.testing import CliRunner, Result
from reliability_proxy import forwarding_proxy

import esbubble.app.rebubble as rebubble_module
from esbubble.app.cli import cli
from esbubble.store.audit import find_manifests
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store, open_store
from esbubble.store.retrieve import Retrieval
from esbubble.store.settings import load_settings

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _on(store: Store) -> list[str]:
    assert store.settings.url is not None
    return ["--url", store.settings.url, "--prefix", store.names.prefix]


def _block_this_months_traces(store: Store) -> None:
    """This month's trace index maps chunk_id as a number: the cluster refuses every trace record."""
    index = store.names.traces_index(datetime.now(UTC))
    store.client.indices.create(index=index, mappings={"properties": {"chunk_id": {"type": "integer"}}})


def _errors(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("esbubble: error:")]


# --- records that can be neither written nor spooled: exit 4, after the result -------------------


def test_bubble_whose_records_cannot_be_written_or_spooled_prints_the_bubble_then_exits_4(
    store: Store, isolated_home: Path
) -> None:
    index_chunks(store, QUOTE_JOB)
    _block_this_months_traces(store)
    (isolated_home / "spool").write_text("a file where the spool folder should be")
    result = run(*_on(store), "bubble", "scaffold roof", "--json")
    assert result.exit_code == 4
    assert json.loads(result.stdout)["run_id"]  # the result came first
    [line] = _errors(result)
    assert "audit records could be neither written nor spooled" in line
    assert "lost" not in result.stderr.replace(line, "")  # no second, softer warning


def test_rebubble_whose_records_cannot_be_spooled_exits_4_after_its_result(
    store: Store, isolated_home: Path
) -> None:
    index_chunks(store, QUOTE_JOB)
    _block_this_months_traces(store)
    (isolated_home / "spool").write_text("not a folder")
    queries = isolated_home / "q.jsonl"
    queries.write_text('{"id": "a", "query": "scaffold roof"}\n{"id": "b", "query": "gutters"}\n')
    result = run(*_on(store), "rebubble", str(queries), "--json")
    assert result.exit_code == 4
    payload = json.loads(result.stdout)
    assert payload["lost"] > 0 and len(payload["runs"]) == 2
    assert len(_errors(result)) == 1


def test_spooled_records_are_reported_once_without_python_source_lines(
    store: Store, isolated_home: Path
) -> None:
    index_chunks(store, QUOTE_JOB)
    _block_this_months_traces(store)
    result = run(*_on(store), "bubble", "scaffold roof")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if "spooled" in line]
    assert len(warnings) == 1 and warnings[0].startswith("esbubble: warning:")
    assert "warnings.warn" not in result.stderr and ".py:" not in result.stderr


# --- the embedded engine killed mid-batch -----------------------------------------------------------


@pytest.fixture
def daemon(isolated_home: Path) -> Iterator[int]:
    """A real osmem daemon started through the CLI in the test's home; its pid."""
    started = run("engine", "start", "--json")
    assert started.exit_code == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    try:
        yield pid
    finally:
        run("engine", "stop")
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_engine_killed_mid_rebubble_keeps_finished_runs_lists_failures_and_resumes(
    daemon: int, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("init").exit_code == 0
    assert run("ingest", str(SAMPLE), "--profile", str(SAMPLE / "profile.toml")).exit_code == 0
    queries = str(SAMPLE / "queries.jsonl")
    real = rebubble_module.retrieve_many
    calls = 0

    def kill_after_two_groups(store: Store, queries: Sequence[str], *args: object) -> list[Retrieval]:
        nonlocal calls
        calls += 1
        if calls == 3:
            os.kill(daemon, signal.SIGKILL)  # SIGKILL of the engine process itself, mid-batch
            # Reap it if it is our child. Checking first and then waiting raced: the engine's own
            # liveness check (``_pid_alive``, on another thread) may reap it in between.
            with suppress(ChildProcessError):
                os.waitpid(daemon, 0)
        return real(store, queries, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(rebubble_module, "RETRIEVE_GROUP", 2)
    monkeypatch.setattr(rebubble_module, "retrieve_many", kill_after_two_groups)
    result = run("rebubble", queries, "--profile", str(SAMPLE / "profile.toml"), "--json")
    monkeypatch.setattr(rebubble_module, "retrieve_many", real)

    assert result.exit_code == 3, result.stderr
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("esbubble: batch batch-")
    batch_id = lines[0].split()[-1]
    payload = json.loads(result.stdout)
    assert payload["batch_id"] == batch_id
    total = sum(1 for line in Path(queries).read_text().splitlines() if line.strip())
    assert len(payload["runs"]) == 4 and len(payload["failed"]) == total - 4
    [failed_line] = [line for line in lines if "queries failed (" in line]  # one line for one problem
    assert failed_line.startswith(f"esbubble: error: {total - 4} queries failed (")
    for failure in payload["failed"]:
        assert repr(failure["case_id"]) in failed_line
    # every finished run's records went to the spool once the engine was gone (none lost)
    assert payload["lost"] == 0
    assert len([line for line in lines if "spooled" in line]) <= 1
    resume = [line for line in lines if "finish the batch with" in line]
    assert len(resume) == 1
    command = resume[0].split("`")[1]
    assert command == shlex.join(
        ["esbubble", "rebubble", queries, "--profile", str(SAMPLE / "profile.toml"), "--resume", batch_id]
    )

    # The engine comes back (from its last snapshot); the printed command finishes the batch.
    assert run("engine", "start").exit_code == 0
    resumed = run(*shlex.split(command)[1:], "--json")
    assert resumed.exit_code == 0, resumed.stderr
    with open_store(load_settings()) as store:
        manifests = find_manifests(store, batch_id)
    assert len({m.run_id for m in manifests}) == total


# --- servers that answer oddly ------------------------------------------------------------------------


_INFO = json.dumps(
    {"name": "fake", "cluster_name": "fake", "version": {"number": "9.1.0", "build_flavor": "default"}}
).encode()


@contextmanager
def fake_elasticsearch(
    status: int, content_type: str, body: bytes, *, root_status: int = 200
) -> Iterator[str]:
    """A tiny HTTP server on loopback: ``GET /`` answers like Elasticsearch (``root_status``), every
    other request with ``status`` / ``content_type`` / ``body``."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            root = self.path.split("?")[0] == "/"
            code, kind, payload = (
                (root_status, "application/json", _INFO) if root else (status, content_type, body)
            )
            if root and root_status != 200:
                payload = body
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "command", [["init"], ["bubble", "scope of work"], ["traces", "prune", "--older-than", "30d"]]
)
def test_a_200_that_is_not_json_is_one_line_exit_3(command: list[str]) -> None:
    with fake_elasticsearch(200, "text/html", b"<html>a login page</html>") as url:
        result = run("--url", url, *command)
    assert result.exit_code == 3
    assert len(_errors(result)) == 1 and "Traceback" not in result.output


_FORBIDDEN = json.dumps(
    {"error": {"type": "security_exception", "reason": "action [indices:data/read/search] is unauthorized"},
     "status": 403}
).encode()  # fmt: skip


def test_a_403_on_retrieval_names_privileges_not_a_missing_engine_or_init() -> None:
    with fake_elasticsearch(403, "application/json", _FORBIDDEN) as url:
        result = run("--url", url, "bubble", "scope of work")
    assert result.exit_code == 3
    [line] = _errors(result)
    assert "403" in line and "may read" in line
    assert "is it running" not in line and "esbubble init" not in line


def test_a_403_on_connect_does_not_ask_whether_the_cluster_is_running() -> None:
    with fake_elasticsearch(403, "application/json", _FORBIDDEN, root_status=403) as url:
        result = run("--url", url, "init")
    assert result.exit_code == 3
    [line] = _errors(result)
    assert "status 403" in line and "privileges" in line and "is it running" not in line


def test_ca_certs_with_an_http_url_is_a_config_error(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    result = run("--url", "http://127.0.0.1:9", "--ca-certs", str(bundle), "init")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "esbubble: error: settings: a CA bundle (--ca-certs) or a pinned fingerprint needs an https:// URL"
    )


# --- --redact-query hides the query everywhere ------------------------------------------------------------


SECRET_QUERY = "merger with acme corp confidential"


def test_redacted_query_never_reaches_stderr_when_retrieval_fails(store: Store) -> None:
    index_chunks(store, QUOTE_JOB)
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url, fail_status=500) as (url, wire):
        wire.fail_matching = "/_search"  # retrieval fails, everything else works
        result = run("--url", url, "--prefix", store.names.prefix, "bubble", SECRET_QUERY, "--redact-query")
    assert result.exit_code == 3, result.output
    assert SECRET_QUERY not in result.output and "acme" not in result.output


def test_redacted_rebubble_json_lists_failures_without_their_query(store: Store, tmp_path: Path) -> None:
    index_chunks(store, QUOTE_JOB)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "secret-1", "query": SECRET_QUERY}) + "\n")
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url, fail_status=403) as (url, wire):
        wire.fail_matching = "/_msearch"  # retrieval is refused, everything else works
        result = run(
            "--url", url, "--prefix", store.names.prefix, "rebubble", str(queries), "--redact-query", "--json"
        )
    assert result.exit_code == 3
    payload = json.loads(result.stdout)
    assert [f["case_id"] for f in payload["failed"]] == ["secret-1"]
    assert payload["failed"][0]["query"] is None
    assert "acme" not in result.output
    assert "--redact-query --resume" in result.stderr  # the resume command keeps the redaction
