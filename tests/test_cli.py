"""The CLI through click's runner: happy paths on a real engine, --json shapes, errors and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from esbubble.cli import cli
from esbubble.store.connection import Store


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def on_engine(bare_store: Store) -> list[str]:
    """Global flags pointing the CLI at the session engine under this test's fresh prefix."""
    assert bare_store.settings.url is not None
    return ["--url", bare_store.settings.url, "--prefix", bare_store.names.prefix]


@pytest.mark.integration
def test_init_creates_then_reports_unchanged(on_engine: list[str], bare_store: Store) -> None:
    first = run(*on_engine, "init")
    assert first.exit_code == 0, first.output
    assert f"created   index              {bare_store.names.chunks_index}" in first.output
    second = run(*on_engine, "init", "--json")
    assert second.exit_code == 0
    payload = json.loads(second.output)
    assert set(payload) == {"url", "steps"}
    assert {step["status"] for step in payload["steps"]} == {"unchanged"}
    assert payload["url"] == bare_store.settings.url


def test_unreachable_cluster_exits_3_with_url_but_never_credentials() -> None:
    result = run("--url", "http://admin:s3cret@127.0.0.1:9", "--api-key", "k3y", "init")
    assert result.exit_code == 3
    assert result.stderr.startswith("esbubble: error: cannot reach Elasticsearch at http://127.0.0.1:9")
    assert "s3cret" not in result.output and "k3y" not in result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_setting_value_exits_1_naming_it() -> None:
    result = run("--prefix", "Bad Prefix", "init")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "esbubble: error: invalid index prefix 'Bad Prefix' "
        "(use 1-48 lowercase letters, digits, '-' or '_', starting with a letter or digit)"
    )


def test_bad_url_and_missing_config_file_are_user_errors() -> None:
    bad_url = run("--url", "ftp://example", "init")
    assert bad_url.exit_code == 1
    assert "invalid value for 'url'" in bad_url.stderr
    missing = run("--config", "/nonexistent/esbubble.toml", "init")
    assert missing.exit_code == 1
    assert "config file not found: /nonexistent/esbubble.toml" in missing.stderr


def test_unknown_flag_is_a_usage_error_exit_2() -> None:
    result = run("init", "--bogus")
    assert result.exit_code == 2
    assert "No such option: --bogus" in result.stderr or "No such option '--bogus'" in result.stderr


def test_insecure_warns_on_stderr() -> None:
    result = run("--insecure", "--url", "https://127.0.0.1:9", "init")
    assert result.stderr.startswith("esbubble: warning: TLS certificate verification is disabled")
    assert result.exit_code == 3


def test_engine_commands_refuse_a_cluster_url() -> None:
    result = run("--url", "http://127.0.0.1:9200", "engine", "status")
    assert result.exit_code == 2
    assert "`engine` manages the embedded engine" in result.stderr


@pytest.fixture
def daemon() -> Iterator[None]:
    yield
    run("engine", "stop")


@pytest.mark.integration
def test_engine_start_status_stop_on_the_embedded_engine(daemon: None) -> None:
    stopped = json.loads(run("engine", "status", "--json").output)
    assert stopped["running"] is False
    started = run("engine", "start", "--json")
    assert started.exit_code == 0, started.output
    status = json.loads(run("engine", "status", "--json").output)
    assert status["running"] is True and status["url"].startswith("http://127.0.0.1:")
    assert run("init").exit_code == 0
    assert run("engine", "status").output.startswith(f"running  pid {status['pid']}")
    final = json.loads(run("engine", "stop", "--json").output)
    assert final["running"] is False
    assert final["snapshot"]
