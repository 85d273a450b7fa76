"""Bad input through the CLI on a real engine: each gets one clear line and an exit code, or a sane result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _store_data import QUOTE_JOB
from click.testing import CliRunner, Result

from esbubble.app.cli import cli
from esbubble.app.runner import run_bubble
from esbubble.config import BubbleConfig
from esbubble.store.audit import read_run
from esbubble.store.chunks import index_chunks
from esbubble.store.connection import Store

pytestmark = pytest.mark.integration


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def flags(store: Store) -> list[str]:
    index_chunks(store, QUOTE_JOB)
    assert store.settings.url is not None
    return ["--url", store.settings.url, "--prefix", store.names.prefix]


def _one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("esbubble: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_empty_query_is_a_user_error(flags: list[str], query: str) -> None:
    line = _one_error_line(run(*flags, "bubble", query), 1)
    assert "the query is empty" in line


@pytest.mark.parametrize("command", ["bubble", "assemble"])
def test_a_query_over_the_length_limit_is_one_line_exit_1(flags: list[str], command: str) -> None:
    line = _one_error_line(run(*flags, command, "scaffold " * 12_000), 1)
    assert "the query has 108,000 characters, more than the limit of 4,096" in line


def test_a_query_set_line_over_the_length_limit_is_reported_and_the_rest_run(
    flags: list[str], tmp_path: Path
) -> None:
    queries = tmp_path / "q.jsonl"
    long_line = json.dumps({"id": "long", "query": "x" * 5000})
    queries.write_text('{"id": "a", "query": "scaffold hire"}\n' + long_line + "\n")
    result = run(*flags, "rebubble", str(queries), "--json")
    assert result.exit_code == 1
    assert f"{queries}:line 2: invalid 'query'" in result.stderr
    assert "the query has 5,000 characters, more than the limit of 4,096" in result.stderr
    assert [r["run_id"].rsplit(".", 1)[-1] for r in json.loads(result.stdout)["runs"]] == ["a"]


@pytest.mark.parametrize(
    "query",
    [
        "the of and a to",  # only stop words
        "?!... ,;:",  # only punctuation
        "scaffold \x00\x07\x1b[31m hire\u202e\u200b",  # control and bidi characters
        "scaffold 脚手架 строительные леса σκαλωσιά",  # mixed scripts
        "scaffold " * 455,  # just under the 4,096-character limit
    ],
    ids=["stop-words", "punctuation", "control-chars", "mixed-scripts", "at-the-limit"],
)
def test_odd_queries_give_a_valid_bubble_and_a_complete_trace(
    store: Store, flags: list[str], query: str
) -> None:
    result = run(*flags, "bubble", query, "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    manifest, records = read_run(store, payload["run_id"])
    assert len(records) == manifest.totals.candidates
    assert manifest.totals.tokens_used <= manifest.totals.budget
    assert "Traceback" not in result.output


def test_budget_smaller_than_every_chunk_gives_an_empty_bubble_with_reason_and_warning(
    store: Store, flags: list[str]
) -> None:
    smallest = min(c.token_count for c in QUOTE_JOB)
    result = run(*flags, "bubble", "scaffold roof gutters", "--budget", str(smallest - 1), "--json")
    assert result.exit_code == 0
    assert "esbubble: warning: the bubble is empty" in result.stderr
    assert "budget_exceeded" in result.stderr
    payload = json.loads(result.stdout)
    _, records = read_run(store, payload["run_id"])
    assert records and {r["final_decision"] for r in records} == {"rejected"}
    relevant = [r for r in records if r["final_reason"] != "low_relevance"]
    assert relevant and {r["final_reason"] for r in relevant} <= {
        "budget_exceeded",
        "section_budget_exceeded",
    }


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--delta", "0"], "overlap_threshold"),
        (["--delta", "1.5"], "overlap_threshold"),
        (["--budget", "0"], "token_budget"),
        (["--budget", "-3"], "token_budget"),
        (["--variant", "best"], "variant"),
    ],
)
def test_out_of_range_flags_name_the_field_and_range(flags: list[str], args: list[str], needle: str) -> None:
    line = _one_error_line(run(*flags, "bubble", "scaffold", *args), 1)
    assert needle in line


@pytest.mark.parametrize(
    ("profile", "needle"),
    [
        ("[bubble]\ncandidate_k = 0\n", "candidate_k"),
        ("[bubble]\nmax_chunks = -1\n", "max_chunks"),
        ("[buckets.shares]\nPricing = 1.5\n", "shares"),
        ("[bubble]\noverlap_threshold = 2.0\n", "overlap_threshold"),
        ("[bubble]\ntoken_budjet = 100\n", "token_budjet"),
        ("[bubbles]\ntoken_budget = 100\n", "bubbles"),
        ("this is { not toml", "TOML"),
        ("\x00\xff binary", "TOML"),
    ],
    ids=["K", "max-chunks", "share", "delta", "unknown-key", "unknown-table", "not-toml", "binary"],
)
def test_bad_profiles_are_one_line_user_errors(
    flags: list[str], tmp_path: Path, profile: str, needle: str
) -> None:
    path = tmp_path / "profile.toml"
    path.write_bytes(profile.encode("utf-8", errors="surrogateescape"))
    line = _one_error_line(run(*flags, "bubble", "scaffold", "--profile", str(path)), 1)
    assert needle in line


def test_missing_profile_file(flags: list[str], tmp_path: Path) -> None:
    line = _one_error_line(run(*flags, "bubble", "scaffold", "--profile", str(tmp_path / "nope.toml")), 1)
    assert "nope.toml" in line


def test_nonexistent_index_is_one_line_with_the_fix_exit_1(flags: list[str]) -> None:
    result = run(*flags, "bubble", "scaffold", "--index", "never-ingested")
    line = _one_error_line(result, 1)
    assert "never-ingested does not exist" in line and "esbubble ingest PATH --index never-ingested" in line


def test_query_set_with_malformed_lines_reports_them_and_runs_the_rest(
    store: Store, flags: list[str], tmp_path: Path
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "a", "query": "scaffold hire"}\n'
        "{not json\n"
        '{"id": "b", "query": "roof sheeting"}\n'
        '{"id": "c"}\n'
        '{"id": "d", "query": "gutters", "extra": 1}\n'
        '{"id": "e", "query": "edge protection"}\n',
        encoding="utf-8",
    )
    result = run(*flags, "rebubble", str(queries), "--json")
    assert result.exit_code == 1
    assert f"{queries}:line 2: not valid JSON" in result.stderr
    assert f"{queries}:line 4: missing 'query'" in result.stderr
    assert f"{queries}:line 5: unknown key 'extra'" in result.stderr
    payload = json.loads(result.stdout)
    assert [run_["run_id"].rsplit(".", 1)[1] for run_ in payload["runs"]] == ["a", "b", "e"]
    assert len(payload["problems"]) == 3


def test_query_set_with_only_bad_lines_is_a_user_error(flags: list[str], tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text("{oops\n", encoding="utf-8")
    result = run(*flags, "rebubble", str(queries))
    assert result.exit_code == 1
    assert "line 1: not valid JSON" in result.stderr and "no usable queries" in result.stderr


def test_empty_query_in_the_library_is_an_esbubble_error_or_a_valid_bubble(store: Store) -> None:
    """The library does not crash on an empty query: either a one-line error or an empty, traced bubble."""
    index_chunks(store, QUOTE_JOB)
    from esbubble.errors import EsbubbleError

    try:
        result = run_bubble(store, "", BubbleConfig())
    except EsbubbleError as error:
        assert "\n" not in error.one_line()
    else:
        assert result.bubble.tokens_used <= result.bubble.budget


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.docx", b"", "file is empty"),
        ("corrupt.pdf", b"%PDF-1.4 garbage that is not a pdf", ".pdf"),
        ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "encrypted"),
        ("binary.md", b"\xff\xfe\x00\x00" * 100, ".md"),
    ],
)
def test_bad_files_fail_one_line_each_and_the_good_one_is_ingested(
    flags: list[str], tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / name).write_bytes(content)
    (folder / "memo.md").write_text("# Memo\n\nScaffold arrives on Monday.\n", encoding="utf-8")
    result = run(*flags, "ingest", str(folder), "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert "Traceback" not in result.output
    text = json.dumps(payload)
    assert name in text and "memo.md" in text
    assert reason.lower() in text.lower()


def test_huge_file_is_ingested_into_bounded_chunks(store: Store, flags: list[str], tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    paragraph = "Scaffold tube and fitting, twelve weeks hire, item {n}. " * 20
    huge.write_text("\n\n".join(paragraph.format(n=n) for n in range(3000)), encoding="utf-8")  # ~3 MB
    result = run(*flags, "ingest", str(huge), "--json")
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.output
    stored = store.client.search(
        index=store.names.chunks, query={"term": {"doc_id": "huge.txt"}}, size=0, track_total_hits=True
    ).body["hits"]["total"]["value"]
    assert stored >= 100  # split into many chunks, not one giant one
    biggest = store.client.search(
        index=store.names.chunks,
        query={"term": {"doc_id": "huge.txt"}},
        size=1,
        sort=[{"token_count": "desc"}],
    ).body["hits"]["hits"][0]["_source"]["token_count"]
    assert biggest < 2000


def test_unusable_home_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("ESBUBBLE_HOME", str(blocker / "home"))
    line = _one_error_line(run("init"), 1)
    assert "set ESBUBBLE_HOME to a writable directory" in line


def test_ingest_of_a_missing_path_says_not_found(flags: list[str], tmp_path: Path) -> None:
    result = run(*flags, "ingest", str(tmp_path / "gone"))
    assert result.exit_code == 1
    assert f"{tmp_path / 'gone'}: file not found" in result.stderr


def test_undecodable_query_bytes_are_a_user_error(flags: list[str]) -> None:
    """Undecodable bytes on a command line arrive as lone surrogates (surrogateescape)."""
    line = _one_error_line(run(*flags, "bubble", "scaffold \udcff"), 1)
    assert "the query is not valid text" in line


def test_a_query_matching_nothing_stores_its_manifest_without_spooling(
    store: Store, flags: list[str], isolated_home: Path
) -> None:
    result = run(*flags, "bubble", "zyxwvut qwerty", "--json")
    assert result.exit_code == 0, result.stderr
    assert "esbubble: warning: the bubble is empty: no chunk matched the query" in result.stderr
    manifest, records = read_run(store, json.loads(result.stdout)["run_id"])
    assert records == [] and manifest.totals.candidates == 0
    assert not list((isolated_home / "spool").glob("*.jsonl"))


def test_query_set_lines_with_blank_or_undecodable_queries_are_reported(
    flags: list[str], tmp_path: Path
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "a", "query": "scaffold"}\n{"id": "b", "query": "\\ud800"}\n{"id": "c", "query": "   "}\n',
        encoding="utf-8",
    )
    result = run(*flags, "rebubble", str(queries), "--json")
    assert result.exit_code == 1
    assert f"{queries}:line 2: invalid 'query'" in result.stderr
    assert f"{queries}:line 3: invalid 'query'" in result.stderr
    assert [r["run_id"].rsplit(".", 1)[1] for r in json.loads(result.stdout)["runs"]] == ["a"]
