"""The CLI through click's runner: happy paths on a real engine, --json shapes, errors and exit codes."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from factories import text_candidate

from esbubble.app.cli import cli
from esbubble.app.cli_render import empty_reason, explain, print_table
from esbubble.app.report import Table
from esbubble.config import BubbleConfig, parse_config
from esbubble.core.bubble import build_bubble
from esbubble.core.gates import GATE_ORDER
from esbubble.models import Variant
from esbubble.store.chunks import delete_chunks, get_chunks
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


SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
PROFILE = str(SAMPLE / "profile.toml")
BUBBLE_KEYS = ["run_id", "query", "variant", "budget", "delta", "tokens_used", "candidates", "sections",
               "avg_overlap", "selected", "rejected"]  # fmt: skip
SELECTED_KEYS = ["rank", "chunk_id", "doc_id", "section", "bucket", "row_number", "page", "token_count",
                 "score", "text"]  # fmt: skip


@pytest.fixture
def with_sample(on_engine: list[str]) -> list[str]:
    """The session engine under a fresh prefix, initialised and holding the sample workbook and memo."""
    assert run(*on_engine, "init").exit_code == 0
    result = run(*on_engine, "ingest", str(SAMPLE / "quote_job.xlsx"), str(SAMPLE / "site_memo.md"),
                 "--profile", PROFILE, "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["documents"] == 2 and summary["added"] == summary["chunks"] > 0 and not summary["failures"]
    return on_engine


@pytest.mark.integration
def test_ingest_again_reports_everything_unchanged_and_rewrite_writes_it_all(with_sample: list[str]) -> None:
    result = run(*with_sample, "ingest", str(SAMPLE / "site_memo.md"), "--profile", PROFILE)
    assert result.exit_code == 0
    assert "1 documents" in result.output and "0 added, 0 updated, 0 deleted" in result.output
    rewritten = run(
        *with_sample, "ingest", str(SAMPLE / "site_memo.md"), "--profile", PROFILE, "--rewrite", "--json"
    )
    assert rewritten.exit_code == 0, rewritten.output
    summary = json.loads(rewritten.stdout)
    assert summary["updated"] == summary["chunks"] > 0 and summary["unchanged"] == summary["added"] == 0


@pytest.mark.integration
def test_ingest_reports_library_warnings_per_file_and_keeps_them_off_stderr(
    on_engine: list[str], tmp_path: Path
) -> None:
    from test_ingest_reader_warnings import damaged_pdf

    folder = tmp_path / "job"
    folder.mkdir()
    pdf = damaged_pdf(folder / "spec.pdf")
    assert run(*on_engine, "init").exit_code == 0
    human = run(*on_engine, "ingest", str(folder))
    assert human.exit_code == 0, human.output
    assert "pypdf" not in human.stderr and "startxref" not in human.stderr  # only the progress bar
    assert "reader warnings (the files were ingested; check their chunks):" in human.stdout
    assert f"  {pdf}: pypdf: incorrect startxref pointer" in human.stdout
    doc_id = run(*on_engine, "ingest", str(pdf), "--doc-id", "spec-again.pdf", "--json")
    assert doc_id.exit_code == 0 and doc_id.stderr == ""
    (document,) = json.loads(doc_id.stdout)["per_document"]
    assert any(w.startswith("pypdf: incorrect startxref pointer") for w in document["warnings"])


@pytest.mark.integration
def test_ingest_cuts_documents_as_the_profiles_ingest_table_says(
    on_engine: list[str], tmp_path: Path
) -> None:
    sentence = "The membrane is laid to falls and turned up at every wall, upstand and penetration. "
    (tmp_path / "spec.md").write_text(f"# Spec\n\n## Waterproofing\n\n{sentence * 40}\n", encoding="utf-8")
    assert run(*on_engine, "init").exit_code == 0
    counts = {}
    for size in (64, 320):
        profile = tmp_path / f"p{size}.toml"
        profile.write_text(f"[ingest]\nmax_chunk_tokens = {size}\n", encoding="utf-8")
        result = run(*on_engine, "ingest", str(tmp_path / "spec.md"), "--profile", str(profile), "--json")
        assert result.exit_code == 0, result.output
        counts[size] = json.loads(result.output)["chunks"]
    assert counts[64] > counts[320] >= 3  # 40 sentences of ~17 tokens: ≥ 3 chunks of 320, ≥ 10 of 64


@pytest.mark.integration
def test_ingest_missing_file_exits_1_naming_it(with_sample: list[str], tmp_path: Path) -> None:
    result = run(*with_sample, "ingest", str(tmp_path / "nope.xlsx"))
    assert result.exit_code == 1
    assert "nope.xlsx" in result.stderr


@pytest.mark.integration
def test_index_flag_reads_and_writes_another_chunk_index(on_engine: list[str]) -> None:
    prefix = on_engine[-1]
    custom = f"{prefix}-custom"
    assert run(*on_engine, "init").exit_code == 0
    ingested = run(*on_engine, "ingest", str(SAMPLE / "site_memo.md"), "--index", custom, "--json")
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.output)["added"] > 0
    there = json.loads(run(*on_engine, "bubble", "groundwater basement", "--index", custom, "--json").stdout)
    assert there["selected"] and {s["doc_id"] for s in there["selected"]} == {"site_memo.md"}
    default = json.loads(run(*on_engine, "bubble", "groundwater basement", "--json").stdout)
    assert default["candidates"] == 0, "the prefix's own chunk index was not written"
    bad = run(*on_engine, "bubble", "groundwater", "--index", f"{prefix}-*")
    assert bad.exit_code == 1
    assert "invalid index name" in bad.stderr and "no wildcards" in bad.stderr


@pytest.mark.integration
def test_a_batch_on_another_index_reports_from_it_and_resumes_only_on_it(
    on_engine: list[str], tmp_path: Path
) -> None:
    prefix = on_engine[-1]
    custom = f"{prefix}-custom"
    assert run(*on_engine, "init").exit_code == 0
    assert run(*on_engine, "ingest", str(SAMPLE / "site_memo.md"), "--index", custom).exit_code == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "gw", "query": "groundwater basement"}\n{"id": "pd", "query": "podium"}\n')
    batch = run(*on_engine, "rebubble", str(queries), "--index", custom, "--json")
    assert batch.exit_code == 0, batch.output
    payload = json.loads(batch.stdout)
    assert all(r["selected"] for r in payload["runs"]), "the batch searched the other index"

    out = tmp_path / "report.html"
    reported = run(*on_engine, "report", payload["batch_id"], "--out", str(out))
    assert reported.exit_code == 0, reported.output
    html = out.read_text(encoding="utf-8")
    assert "no longer in the chunk index" not in html, "each run's chunks come from the index it searched"
    assert html.count("<svg ") == 4 and "no data" not in html

    elsewhere = run(*on_engine, "rebubble", str(queries), "--resume", payload["batch_id"])
    assert elsewhere.exit_code == 1
    assert f"searched the chunk index {custom!r}" in elsewhere.stderr
    assert f"resume with --index {custom}" in elsewhere.stderr
    assert "finish the batch with" not in elsewhere.stderr, "the same command would be refused again"


@pytest.mark.integration
def test_an_invalid_doc_id_is_the_files_failure_and_writes_nothing(
    on_engine: list[str], tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    assert run(*on_engine, "init").exit_code == 0
    result = run(*on_engine, "ingest", str(tmp_path / "a.md"), "--doc-id", "../a.md", "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["documents"] == 0
    (failure,) = summary["failures"]
    assert failure["file"] == str(tmp_path / "a.md") and failure["reason"].startswith(
        "invalid doc id '../a.md'"
    )


def test_doc_id_needs_exactly_one_file() -> None:
    result = run("ingest", "a.md", "b.md", "--doc-id", "x")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "esbubble: error: --doc-id needs exactly one file (drop --doc-id to ingest folders or many files)"
    )


@pytest.mark.integration
def test_bubble_json_keeps_the_contract_keys_and_trace_explains_every_candidate(
    with_sample: list[str],
) -> None:
    result = run(
        *with_sample,
        "bubble",
        "below grade waterproofing products",
        "--profile",
        PROFILE,
        "--budget",
        "400",
        "--json",
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert list(payload) == BUBBLE_KEYS
    assert payload["budget"] == 400 and payload["delta"] == 0.85 and payload["variant"] == "full"
    assert 0 < payload["tokens_used"] <= 400
    assert [list(s) for s in payload["selected"]] == [SELECTED_KEYS] * len(payload["selected"])
    assert [s["rank"] for s in payload["selected"]] == list(range(1, len(payload["selected"]) + 1))
    assert sum(s["token_count"] for s in payload["selected"]) == payload["tokens_used"]
    assert set(payload["rejected"]) == {"too_redundant", "budget_exceeded", "section_budget_exceeded",
                                        "low_relevance", "low_gain", "max_chunks"}  # fmt: skip
    assert sum(payload["rejected"].values()) + len(payload["selected"]) == payload["candidates"]

    traced = run(*with_sample, "trace", payload["run_id"], "--json")
    assert traced.exit_code == 0
    trace = json.loads(traced.output)
    assert list(trace) == ["run_id", "manifest", "candidates"]
    assert len(trace["candidates"]) == payload["candidates"]
    assert [c["rank"] for c in trace["candidates"]] == list(range(1, payload["candidates"] + 1))
    assert all("overlap" in c and "threshold" in c and "final_reason" in c for c in trace["candidates"])
    chosen = {c["chunk_id"] for c in trace["candidates"] if c["final_decision"] == "selected"}
    assert chosen == {s["chunk_id"] for s in payload["selected"]}
    assert trace["manifest"]["totals"]["tokens_used"] == payload["tokens_used"]
    # A redundant chunk names the chunk of the bubble it repeats (read back from the audit index).
    redundant = [c for c in trace["candidates"] if c["final_reason"] == "too_redundant"]
    assert redundant and all(c["overlap_with"] in chosen for c in redundant)
    rank_of = {c["chunk_id"]: c["rank"] for c in trace["candidates"]}

    human = run(*with_sample, "trace", payload["run_id"], "--all")
    assert f"run {payload['run_id']}" in human.output
    first = redundant[0]
    assert f"too_redundant vs #{rank_of[first['overlap_with']]}" in human.output
    shown = run(*with_sample, "trace", payload["run_id"])
    assert "more candidates (use --all)" in shown.output or payload["candidates"] <= 25


@pytest.mark.integration
def test_bubble_human_output_shows_table_allocation_and_run_id(with_sample: list[str]) -> None:
    result = run(*with_sample, "bubble", "scope of work", "--profile", PROFILE)
    assert result.exit_code == 0
    assert "Bubble for 'scope of work'" in result.output
    assert "Token allocation per section" in result.output
    assert "Scope of Works" in result.output
    assert result.output.rstrip().splitlines()[-1].startswith("run id: ")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "0"], "invalid value for 'bubble.token_budget': 0"),
        (["--delta", "1.5"], "invalid value for 'bubble.overlap_threshold': 1.5"),
        (["--variant", "best"], "invalid value for 'bubble.variant': 'best'"),
        (["--profile", "/nonexistent.toml"], "profile not found: /nonexistent.toml"),
    ],
)
def test_bubble_bad_values_exit_1_with_one_line(
    with_sample: list[str], args: list[str], message: str
) -> None:
    result = run(*with_sample, "bubble", "scope", *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_profile_key_exits_1(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text("[bubble]\ntoken_budgt = 5\n")
    result = run("bubble", "scope", "--profile", str(profile))
    assert result.exit_code == 1
    assert "unknown key 'bubble.token_budgt'" in result.stderr


@pytest.mark.integration
def test_trace_of_unknown_run_exits_1(on_engine: list[str]) -> None:
    assert run(*on_engine, "init").exit_code == 0
    result = run(*on_engine, "trace", "no-such-run")
    assert result.exit_code == 1
    assert "run 'no-such-run' not found" in result.stderr


def explained_gates(output: str, heading: str) -> list[tuple[str, str]]:
    """The (gate, verdict) lines ``trace --rank`` prints under ``heading`` (a line that starts with it)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(heading)) + 1
    return [(line.split()[0], line.split()[-1]) for line in lines[start : start + len(GATE_ORDER)]]


def test_an_explanation_of_a_budget_rejection_names_what_took_the_room() -> None:
    """Pure core, no engine: a chunk the global budget stopped lists every chunk admitted before it with
    its tokens and gain; one a section budget stopped lists only those of its bucket; an admitted
    chunk has no such line."""
    candidates = [
        text_candidate("a1", "A", "waterproofing membrane for the basement slab", 40),
        text_candidate("b1", "B", "waterproofing membrane laps at the walls", 30),
        text_candidate("a2", "A", "membrane and waterproofing at the lift pit", 30),
        text_candidate("b2", "B", "waterproofing of the membrane upstands", 35),
    ]

    def explained(
        config: BubbleConfig, variant: Variant
    ) -> tuple[dict[str, tuple[str, list[str]]], str, str]:
        """Per chunk its final reason and ``room`` line, and how a2 and b1 are listed, in a bubble."""
        bubble = build_bubble("waterproofing membrane", candidates, config, run_id="r", now=datetime.now(UTC),
                              variant=variant)  # fmt: skip
        # both orders (score, gain) decide a2, b1, b2, a1
        assert [r["chunk_id"] for r in bubble.trace] == ["a2", "b1", "b2", "a1"]
        ranks = {r["chunk_id"]: r["rank"] for r in bubble.trace}
        gains = {r["chunk_id"]: r["gain"] for r in bubble.trace}
        rooms = {
            r["chunk_id"]: (
                r["final_reason"],
                [line for line in explain(r, ranks, bubble.trace) if line.startswith("  room")],
            )
            for r in bubble.trace
        }
        return rooms, f"#1 (30 tokens, gain {gains['a2']:.2f})", f"#2 (30 tokens, gain {gains['b1']:.2f})"

    # 70 tokens and no section budget (flat_topk): a2 and b1 leave 10
    flat, a2, b1 = explained(parse_config({"bubble": {"token_budget": 70}}), "flat_topk")
    assert flat["a2"] == flat["b1"] == ("passed_all_gates", [])
    room = f"  room       taken by the 2 chunks admitted before it, 60 tokens: {a2}, {b1}"
    assert flat["b2"] == flat["a1"] == ("budget_exceeded", [room])
    # the defaults (each bucket may take the whole budget): stopped in the global_pool second pass
    pooled, a2, b1 = explained(parse_config({"bubble": {"token_budget": 70}}), "full")
    room = f"  room       taken by the 2 chunks admitted before it, 60 tokens: {a2}, {b1}"
    assert pooled["b2"] == pooled["a1"] == ("budget_exceeded", [room])
    # 100 tokens in caps of 60 (A) and 40 (B), no second pass: each is stopped by its own bucket
    caps = parse_config({"bubble": {"token_budget": 100, "slack_policy": "strict"},
                         "buckets": {"shares": {"A": 0.6, "B": 0.4}}})  # fmt: skip
    full, a2, b1 = explained(caps, "full")
    assert full["a2"] == full["b1"] == ("passed_all_gates", [])
    of = "  room       taken by the 1 chunk of bucket {} admitted before it, 30 tokens: {}"
    assert full["b2"] == ("section_budget_exceeded", [of.format("B", b1)])
    assert full["a1"] == ("section_budget_exceeded", [of.format("A", a2)])


def test_an_explanation_marks_switched_off_gates_and_the_first_failure() -> None:
    """Pure core, no engine: ``flat_topk`` runs no redundancy or section budget gate, and a chunk
    larger than the budget fails the global budget."""
    candidates = [
        text_candidate("small", "A", "waterproofing membrane for the basement", 20),
        text_candidate("huge", "B", "waterproofing membrane for the basement walls", 500),
    ]
    config = BubbleConfig().with_overrides(token_budget=100)
    bubble = build_bubble("waterproofing membrane", candidates, config, run_id="r", now=datetime.now(UTC),
                          variant="flat_topk")  # fmt: skip
    ranks = {r["chunk_id"]: r["rank"] for r in bubble.trace}
    huge = next(r for r in bubble.trace if r["chunk_id"] == "huge")
    lines = explain(huge, ranks)
    assert lines[0] == f"#{huge['rank']} of 2  chunk huge"
    assert "  decision   rejected: budget_exceeded (stage budget_gate)" in lines
    gates = lines[lines.index("  gates      in order; the first that failed gave the reason") + 1 :]
    limit = {g["gate"]: f"{g['limit']:.4g}" for g in huge["step_details"]["gates"]}
    # the gain gate reads what ordered it without its proximity weight ("waterproofing membrane" together)
    ordered_by = huge["gain"] if huge["fill_value"] is None else huge["fill_value"]
    assert [line.split() for line in gates] == [
        ["relevance", f"{huge['relevance']:.4g}", ">", limit["relevance"], "pass"],
        [
            "gain",
            f"{ordered_by / huge['proximity_weight']:.4g}",
            ">=",
            limit["gain"],
            "pass",
        ],
        ["redundancy", f"{huge['overlap']:.4g}", "<", f"{huge['threshold']:.4g}", "off"],
        ["section_budget", "500", "<=", "100", "off"],
        ["global_budget", "500", "<=", str(100 - bubble.tokens_used), "FAIL"],
        ["max_chunks", "1", "<", limit["max_chunks"], "pass"],
    ]
    # what delivery adds to a record: a repair swap (by rank where the run holds both chunks), expansion
    swapped = copy.deepcopy(huge)
    swapped["step_details"]["replacement"] = {"victim_chunk_id": "huge", "newcomer_chunk_id": "small",
        "victim_utility": -0.048387, "newcomer_utility": 0.442857, "margin": 0.05, "loop": 1}  # fmt: skip
    swapped["step_details"]["expansion"] = [{"anchor_chunk_id": "huge", "mode": "window", "added": False,
        "tokens": 98, "reason": "budget_exceeded", "chunk_id": "next"}]  # fmt: skip
    delivered = explain(swapped, ranks)
    assert delivered[-2:] == [
        f"  repair     loop 1: #{ranks['huge']} huge (utility -0.04839) left for #{ranks['small']} small "
        "(utility 0.4429, margin 0.05)",
        "  expansion  window next: refused, 98 tokens (budget_exceeded)",
    ]


@pytest.mark.integration
def test_trace_explains_one_candidate_by_rank_or_chunk_id(with_sample: list[str]) -> None:
    bubble = run(*with_sample, "bubble", "below grade waterproofing products", "--profile", PROFILE,
                 "--budget", "400", "--json")  # fmt: skip
    run_id = json.loads(bubble.output)["run_id"]
    records = json.loads(run(*with_sample, "trace", run_id, "--json").output)["candidates"]
    rank_of = {r["chunk_id"]: r["rank"] for r in records}
    # one candidate of each kind: admitted, redundant, and stopped in both passes by a budget
    picked = [
        next(r for r in records if r["final_decision"] == "selected"),
        next(r for r in records if r["final_reason"] == "too_redundant"),
        next(r for r in records if r["step_details"]["second_pass"]),
    ]
    for record in picked:
        explained = run(*with_sample, "trace", run_id, "--rank", str(record["rank"]))
        assert explained.exit_code == 0, explained.output
        assert explained.output == run(*with_sample, "trace", run_id, "--chunk", record["chunk_id"]).output
        text = explained.output
        assert f"#{record['rank']} of {len(records)}  chunk {record['chunk_id']}" in text
        assert f"{record['final_decision']}: {record['final_reason']}" in text
        verdicts = [(g["gate"], "pass" if g["passed"] else "FAIL") for g in record["step_details"]["gates"]]
        assert explained_gates(text, "gates") == verdicts
        if record["final_reason"] == "too_redundant":
            assert f"vs #{rank_of[record['overlap_with']]}" in text
        for match in record["step_details"]["terms"]:
            assert f"{match['term']} ({match['facet']}): idf" in text
        near = ", ".join(record["near"]) or "no pair of the question"
        assert f"near       {near}; proximity weight {record['proximity_weight']:.2f}" in text
        second = record["step_details"]["second_pass"]
        if second:
            assert [(g["gate"], "pass" if g["passed"] else "FAIL") for g in second] == explained_gates(
                text, "second pass"
            )
    one = json.loads(run(*with_sample, "trace", run_id, "--rank", "2", "--json").output)
    assert [c["rank"] for c in one["candidates"]] == [2] and one["candidates"][0] == records[1]

    missing = run(*with_sample, "trace", run_id, "--rank", str(len(records) + 1))
    assert missing.exit_code == 1
    assert missing.stderr.strip().splitlines() == [
        f"esbubble: error: run '{run_id}' has no candidate at rank {len(records) + 1} ({len(records)} "
        f"candidates) (see every rank and chunk id with: esbubble trace {run_id} --all)"
    ]
    both = run(*with_sample, "trace", run_id, "--rank", "1", "--chunk", records[0]["chunk_id"])
    assert both.exit_code == 2 and "--rank, --chunk and --text each choose what to explain" in both.stderr


@pytest.mark.integration
def test_trace_text_explains_every_candidate_whose_text_holds_a_phrase(
    with_sample: list[str], bare_store: Store
) -> None:
    bubble = run(*with_sample, "bubble", "below grade waterproofing products", "--profile", PROFILE,
                 "--budget", "400", "--json")  # fmt: skip
    run_id = json.loads(bubble.output)["run_id"]
    records = json.loads(run(*with_sample, "trace", run_id, "--json").output)["candidates"]
    chunks = {c.chunk_id: c for c in get_chunks(bare_store, [r["chunk_id"] for r in records])}
    assert len(chunks) == len(records)

    def flat(text: str) -> str:
        return " ".join(text.split()).casefold()

    # a passage the user expected and the bubble dropped, asked in other case and spacing
    dropped = next(
        r
        for r in records
        if r["final_decision"] == "rejected" and len(chunks[r["chunk_id"]].text.split()) >= 4
    )
    words = chunks[dropped["chunk_id"]].text.split()[:4]
    holding = [r for r in records if flat(" ".join(words)) in flat(chunks[r["chunk_id"]].text)]
    asked = "  ".join(words).upper()
    found = json.loads(run(*with_sample, "trace", run_id, "--text", asked, "--json").output)["candidates"]
    assert found == holding and dropped in found
    explained = run(*with_sample, "trace", run_id, "--text", asked)
    assert explained.exit_code == 0 and explained.stderr == ""
    for record in holding:
        assert f"#{record['rank']} of {len(records)}  chunk {record['chunk_id']}" in explained.output
        assert f"{record['final_decision']}: {record['final_reason']}" in explained.output

    absent = run(*with_sample, "trace", run_id, "--text", "zzzqqq nowhere")
    assert absent.exit_code == 1
    assert absent.stderr.strip().startswith(
        f"esbubble: error: no candidate of run '{run_id}' holds 'zzzqqq nowhere' ({len(records)} of its "
        f"{len(records)} candidates searched): the engine did not retrieve it for this query ("
    )
    assert run(*with_sample, "trace", run_id, "--rank", "1", "--text", "x").exit_code == 2
    blank = run(*with_sample, "trace", run_id, "--text", "  ")
    assert blank.exit_code == 2 and "--text needs a phrase with at least one word" in blank.stderr

    # the candidates holding it re-ingested away since the run: their text cannot be searched, the user
    # is told, and the error does not blame retrieval
    delete_chunks(bare_store, [r["chunk_id"] for r in holding])
    later = run(*with_sample, "trace", run_id, "--text", asked)
    gone, left = len(holding), len(records) - len(holding)
    assert later.exit_code == 1
    assert f"note: {gone} of the run's {len(records)} candidates are no longer in" in later.stderr
    assert f"({left} of its {len(records)} candidates searched): none of those still in" in later.stderr


@pytest.mark.integration
def test_eval_json_has_every_table_for_every_variant(with_sample: list[str], tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    lines = (SAMPLE / "queries.jsonl").read_text().splitlines()[:3]
    queries.write_text("\n".join(lines) + "\n")
    result = run(*with_sample, "eval", str(queries), "--profile", PROFILE, "--budget", "500", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    variants = ["engine_topk", "flat_topk", "structure", "diversity", "full"]
    assert [row["variant"] for row in payload["table1"]] == variants
    assert [row["variant"] for row in payload["table1b"]] == variants
    assert set(payload["table2"]) == set(payload["table7"]) == set(variants)
    assert [row["delta"] for row in payload["delta_sweep"]] == [0.3, 0.4, 0.5, 0.6, 0.7]
    assert payload["queries"] == 3 and payload["budget"] == 500
    human = run(*with_sample, "eval", str(queries), "--profile", PROFILE)
    for title in ("Table 1 ", "Table 1b", "Table 2", "Table 7", "Gold recall per category", "δ sweep"):
        assert title in human.output


@pytest.mark.integration
def test_eval_sweep_runs_every_variant_at_each_budget_on_one_retrieval(
    with_sample: list[str], tmp_path: Path
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join((SAMPLE / "queries.jsonl").read_text().splitlines()[:2]) + "\n")
    args = ("eval", str(queries), "--profile", PROFILE, "--budget", "400")
    result = run(*with_sample, *args, "--sweep", "800,200,400", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    rows = payload["budget_sweep"]
    assert [(row["token_budget"], row["variant"]) for row in rows][:2] == [
        (200, "engine_topk"),
        (200, "flat_topk"),
    ]
    assert sorted({row["token_budget"] for row in rows}) == [200, 400, 800] and len(rows) == 15
    assert all(row["tokens_used"] <= row["token_budget"] for row in rows)
    assert [row for row in rows if row["token_budget"] == 400] == payload["table1"]
    human = run(*with_sample, *args, "--sweep", "200,800")
    assert "Budget sweep" in human.output
    not_numbers = run(*with_sample, *args, "--sweep", "200,lots")
    assert not_numbers.exit_code == 2
    assert "'200,lots': give token budgets separated by commas" in not_numbers.stderr
    refused = run(*with_sample, *args, "--sweep", "200,0")
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "invalid value for 'bubble.token_budget': 0" in refused.stderr


@pytest.mark.integration
def test_eval_delivery_options_compare_bubble_and_delivery(with_sample: list[str], tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    lines = (SAMPLE / "queries.jsonl").read_text().splitlines()[:2]
    queries.write_text("\n".join(lines) + "\n")
    args = ("eval", str(queries), "--profile", PROFILE, "--repair", "--window", "--assemble")
    result = run(*with_sample, *args, "--json")
    assert result.exit_code == 0, result.output
    delivery = json.loads(result.output)["delivery"]
    assert [row["id"] for row in delivery["rows"]] == [json.loads(line)["id"] for line in lines]
    for row in delivery["rows"]:
        assert row["prompt_tokens"] is not None and row["prompt_tokens"] >= row["delivered_tokens"]
    human = run(*with_sample, *args)
    assert "Delivery — bubble vs expand/repair/assemble" in human.output
    both = run(*with_sample, "eval", str(queries), "--window", "--parent")
    assert both.exit_code == 1
    assert "--window and --parent are exclusive" in both.stderr


BAD_SET = '{"id": "a", "query": "scope"}\n{"id": "b"}\nnot json\n{"id": "c", "query": "membrane"}\n'


def assert_bad_entries_reported_and_skipped(result: Result, name: str) -> None:
    """The one policy for bad query-set lines: each reported with its line, the rest ran, exit 1."""
    assert result.exit_code == 1, result.output
    errors = result.stderr.strip().splitlines()
    assert f"esbubble: error: {name}:line 2: missing 'query' (entry skipped)" in errors
    assert any(line.startswith(f"esbubble: error: {name}:line 3: not valid JSON") for line in errors)
    assert errors[-1] == "esbubble: error: 2 bad query-set entries skipped (listed above); the other 2 ran"
    assert "Traceback" not in result.output


@pytest.mark.integration
def test_eval_with_bad_query_set_lines_reports_each_runs_the_rest_and_exits_1(
    with_sample: list[str], tmp_path: Path
) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(BAD_SET)
    result = run(*with_sample, "eval", str(queries), "--json")
    assert_bad_entries_reported_and_skipped(result, str(queries))
    payload = json.loads(result.stdout)
    assert payload["queries"] == 2
    assert [p.split(": ")[0] for p in payload["problems"]] == [f"{queries}:line 2", f"{queries}:line 3"]
    assert_bad_entries_reported_and_skipped(run(*with_sample, "eval", str(queries)), str(queries))
    missing = run(*with_sample, "eval", str(tmp_path / "none.jsonl"))
    assert missing.exit_code == 1
    assert "query set not found" in missing.stderr
    nothing_usable = tmp_path / "bad.jsonl"
    nothing_usable.write_text('{"id": "b"}\n')
    none_ran = run(*with_sample, "eval", str(nothing_usable))
    assert none_ran.exit_code == 1
    assert "has no usable queries" in none_ran.stderr.strip().splitlines()[-1]


@pytest.mark.integration
def test_traces_flush_and_prune(with_sample: list[str]) -> None:
    flushed = run(*with_sample, "traces", "flush", "--json")
    assert flushed.exit_code == 0
    assert json.loads(flushed.output) == {"written": 0, "remaining": 0, "files": 0}
    assert run(*with_sample, "bubble", "scope of work").exit_code == 0
    pruned = run(*with_sample, "traces", "prune", "--older-than", "30d", "--json")
    assert pruned.exit_code == 0
    assert json.loads(pruned.output)["deleted"] == 0
    bad = run(*with_sample, "traces", "prune", "--older-than", "soon")
    assert bad.exit_code == 1
    assert "invalid age 'soon'" in bad.stderr


@pytest.mark.integration
def test_demo_runs_end_to_end_on_the_embedded_engine(tmp_path: Path) -> None:
    other_clone = tmp_path / "site_memo.md"  # the same doc id from another path, as another clone has
    other_clone.write_bytes((SAMPLE / "site_memo.md").read_bytes())
    assert run("ingest", str(other_clone)).exit_code == 0
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert "; 0 failed" in result.output, "the demo takes its sample's doc ids over"
    assert "engine: embedded" in result.output
    assert "Bubble for 'scope of work'" in result.output
    assert "candidates: " in result.output
    assert "see every decision: esbubble trace " in result.output


@pytest.fixture
def small_corpus(store: Store, on_engine: list[str], tmp_path: Path) -> tuple[list[str], Path]:
    """The three hand-made chunks of test_rebubble.py under this test's prefix, and a query set."""
    from test_rebubble import CHUNKS

    from esbubble.store.chunks import index_chunks

    index_chunks(store, CHUNKS)
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "query": "membrane"}\n{"id": "q2", "query": "scope works"}\n')
    return on_engine, queries


def write_profile(path: Path, products_prior: float) -> str:
    path.write_text(
        '[bubble]\ntoken_budget = 100\nmax_chunks = 1\nrelevance = "tf"\nselection = "score"\n'
        '[buckets.shares]\n"Scope of Works" = 0.5\n"Products" = 0.5\n'
        f'[priors.sections]\n"Products" = {products_prior}\n'
    )
    return str(path)


@pytest.mark.integration
def test_rebubble_compare_shows_the_chunk_a_profile_change_moved_and_report_renders_it(
    small_corpus: tuple[list[str], Path], tmp_path: Path
) -> None:
    flags, queries = small_corpus
    base = write_profile(tmp_path / "base.toml", 0.0)
    boosted = write_profile(tmp_path / "boosted.toml", 5.0)
    first = run(*flags, "rebubble", str(queries), "--profile", base, "--json")
    assert first.exit_code == 0, first.output
    baseline = json.loads(first.stdout)
    assert [r["selected"] for r in baseline["runs"]] == [["s1"], ["s1"]]
    assert baseline["comparison"] is None

    second = run(*flags, "rebubble", str(queries), "--profile", boosted, "--compare", baseline["batch_id"],
                 "--workers", "2", "--json")  # fmt: skip
    assert second.exit_code == 0, second.output
    payload = json.loads(second.stdout)
    assert payload["batch_id"] != baseline["batch_id"]
    changes = payload["comparison"]["changes"]
    assert [(c["entered"], c["left"], c["token_delta"]) for c in changes] == [(["p1"], ["s1"], 0)] * 2
    assert changes[0]["sections_entered"] == ["Products"] and changes[0]["sections_left"] == [
        "Scope of Works"
    ]

    assert set(payload["comparison"]["chunks"]) == {"p1", "s1"}
    assert payload["comparison"]["chunks"]["p1"]["snippet"] == "membrane product data sheet primer"

    human = run(*flags, "rebubble", str(queries), "--profile", boosted, "--compare", baseline["batch_id"])
    assert "2 of 2 queries changed" in human.output
    lines = human.output.splitlines()
    assert lines.count('  + Products · job.xlsx row 4 · "membrane product data sheet primer"  [p1]') == 2
    assert (
        lines.count('  − Scope of Works · job.xlsx row 2 · "membrane membrane scope works basement"  [s1]')
        == 2
    )
    assert any(
        line.startswith("membrane  (") and "tokens +0  +Products  −Scope of Works" in line for line in lines
    )

    out = tmp_path / "report.html"
    reported = run(*flags, "report", payload["batch_id"], "--out", str(out), "--queries", str(queries))
    assert reported.exit_code == 0, reported.output
    assert reported.output.strip() == f"wrote {out} (2 runs of batch {payload['batch_id']})"
    html = out.read_text(encoding="utf-8")
    assert html.count("<svg ") == 4 and "no data" not in html
    assert "Gold recall per category" in html and "engine_topk" in html


@pytest.mark.integration
def test_rebubble_with_bad_query_set_lines_reports_each_runs_the_rest_and_exits_1(
    small_corpus: tuple[list[str], Path], tmp_path: Path
) -> None:
    flags, _ = small_corpus
    queries = tmp_path / "q.jsonl"
    queries.write_text(BAD_SET)
    result = run(*flags, "rebubble", str(queries), "--json")
    assert_bad_entries_reported_and_skipped(result, str(queries))
    payload = json.loads(result.stdout)
    assert [run["run_id"].rsplit(".", 1)[1] for run in payload["runs"]] == ["a", "c"]
    assert len(payload["problems"]) == 2


@pytest.mark.integration
def test_rebubble_against_an_unknown_baseline_fails_before_writing_anything(
    small_corpus: tuple[list[str], Path], store: Store
) -> None:
    flags, queries = small_corpus
    result = run(*flags, "rebubble", str(queries), "--compare", "batch-missing")
    assert result.exit_code == 1
    assert "no run or batch with id 'batch-missing'" in result.stderr
    assert not store.client.indices.exists_alias(name=store.names.runs) or (
        store.client.count(index=store.names.runs).body["count"] == 0
    )


@pytest.mark.integration
def test_rebubble_rejects_zero_workers_and_report_of_unknown_batch(
    small_corpus: tuple[list[str], Path],
) -> None:
    flags, queries = small_corpus
    workers = run(*flags, "rebubble", str(queries), "--workers", "0")
    assert workers.exit_code == 1
    assert "invalid --workers 0" in workers.stderr
    missing = run(*flags, "report", "batch-missing")
    assert missing.exit_code == 1
    assert "no run or batch with id 'batch-missing'" in missing.stderr


@pytest.mark.integration
def test_assemble_prints_only_the_prompt_on_stdout_and_its_trace_is_recorded(
    small_corpus: tuple[list[str], Path],
) -> None:
    flags, _ = small_corpus
    result = run(*flags, "assemble", "membrane", "--budget", "100")
    assert result.exit_code == 0, result.output
    assert "[Source 1]" in result.stdout and "Question: membrane" in result.stdout
    assert "run id:" not in result.stdout
    run_id = result.stderr.split("run id: ")[1].split()[0]
    payload = json.loads(run(*flags, "assemble", "membrane", "--budget", "100", "--json").output)
    assert list(payload) == ["run_id", "query", "messages", "text", "metadata"]
    assert payload["text"] == result.stdout.rstrip("\n")
    assert payload["metadata"]["tokens"]["total"] <= payload["metadata"]["tokens"]["max_tokens"]
    traced = json.loads(run(*flags, "trace", run_id, "--json").output)
    assert traced["run_id"] == run_id and traced["candidates"]


def test_an_empty_bubble_says_why_with_the_rejections_most_common_first() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    config = parse_config({"bubble": {"token_budget": 10}})
    nothing = build_bubble("membrane", [], config, run_id="r0", now=now)
    assert empty_reason(nothing) == "no chunk matched the query"
    big = [text_candidate(f"c{i}", "Scope", f"membrane scope item {i}", 50) for i in range(3)]
    too_big = build_bubble("membrane", big, config, run_id="r1", now=now)
    reasons = {r["final_reason"] for r in too_big.trace}
    assert len(too_big.trace) == 3 and not too_big.selected
    assert empty_reason(too_big) == f"all 3 candidates rejected: {reasons.pop()} 3" and not reasons
    one = build_bubble("membrane", big[:1], config, run_id="r2", now=now)
    assert (empty_reason(one) or "").startswith("the only candidate was rejected: ")
    fits = build_bubble(
        "membrane", big[:1], parse_config({"bubble": {"token_budget": 100}}), run_id="r3", now=now
    )
    assert empty_reason(fits) is None


@pytest.mark.integration
def test_bubble_and_assemble_say_why_the_bubble_is_empty_and_exit_0(
    small_corpus: tuple[list[str], Path],
) -> None:
    flags, _ = small_corpus
    for command in ("bubble", "assemble"):
        nothing = run(*flags, command, "zyxwvut qwerty", "--budget", "100")
        assert nothing.exit_code == 0, nothing.output
        assert (
            "esbubble: warning: the bubble is empty: no chunk matched the query (budget 100)"
            in nothing.stderr
        )
        tiny = run(*flags, command, "membrane", "--budget", "5")
        assert tiny.exit_code == 0, tiny.output
        assert "esbubble: warning: the bubble is empty: all 2 candidates rejected: " in tiny.stderr
    assert "Question: zyxwvut qwerty" in nothing.stdout


def test_a_moved_chunk_is_described_by_place_and_text_or_by_id_alone() -> None:
    from esbubble.app.cli_render import describe_chunk
    from esbubble.app.rebubble import ChunkNote

    def note(**fields: object) -> ChunkNote:
        base: dict[str, object] = {"chunk_id": "c1", "doc_id": "spec.pdf", "section": "Warranty"}
        base |= dict.fromkeys(("sheet_name", "row_number", "page", "snippet"))
        return ChunkNote.model_validate(base | fields)

    assert describe_chunk(note(page=3, snippet="The  warranty\nperiod is ten years"), "c1") == (
        'Warranty · spec.pdf p. 3 · "The warranty period is ten years"  [c1]'
    )
    moved = note(doc_id="job.xlsx", sheet_name="Quote", row_number=12, snippet="x" * 80)
    assert describe_chunk(moved, "c1") == (f'Warranty · job.xlsx sheet Quote row 12 · "{"x" * 59}…"  [c1]')
    assert (
        describe_chunk(note(row_number=2), "c1")
        == "Warranty · spec.pdf row 2 · (no longer in the chunk index)  [c1]"
    )
    assert describe_chunk(None, "c1") == "c1"


@pytest.mark.integration
@pytest.mark.parametrize(
    "command",
    [
        ["ingest", str(SAMPLE / "site_memo.md")],
        ["bubble", "groundwater"],
        ["assemble", "groundwater"],
        ["eval", str(SAMPLE / "queries.jsonl")],
        ["rebubble", str(SAMPLE / "queries.jsonl")],
    ],
    ids=lambda command: command[0],
)
def test_first_use_without_init_initialises_exactly_like_init(
    on_engine: list[str], command: list[str]
) -> None:
    first = run(*on_engine, *command)
    assert first.exit_code == 0, first.output
    assert "initialised the esbubble indices" in first.stderr and "(first use)" in first.stderr
    assert not any(bar in first.stderr for bar in ("ingesting", "evaluating", "re-bubbling")), "piped"
    after = json.loads(run(*on_engine, "init", "--json").output)
    assert {step["status"] for step in after["steps"]} == {"unchanged"}, after
    again = run(*on_engine, *command)
    assert again.exit_code == 0 and "initialised" not in again.stderr


@pytest.mark.integration
def test_a_missing_chunk_index_elsewhere_is_exit_1_with_the_fix(on_engine: list[str]) -> None:
    for command in (["bubble", "groundwater"], ["eval", str(SAMPLE / "queries.jsonl")]):
        result = run(*on_engine, *command, "--index", "nowhere")
        assert result.exit_code == 1, result.output
        assert "the chunk index nowhere does not exist" in result.stderr
        assert "esbubble ingest PATH --index nowhere" in result.stderr


def _two_readmes(tmp_path: Path) -> tuple[Path, Path]:
    for folder, fruit in (("colA", "apples"), ("colB", "bananas")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "readme.md").write_text(
            f"# {folder}\n\nNotes about {fruit}.\n", encoding="utf-8"
        )
    return tmp_path / "colA" / "readme.md", tmp_path / "colB" / "readme.md"


def _doc_ids(flags: list[str], query: str) -> set[str]:
    payload = json.loads(run(*flags, "bubble", query, "--json").stdout)
    return {chosen["doc_id"] for chosen in payload["selected"]}


@pytest.mark.integration
def test_a_doc_id_of_another_file_is_refused_unless_replace(on_engine: list[str], tmp_path: Path) -> None:
    first, second = _two_readmes(tmp_path)
    assert run(*on_engine, "ingest", str(first)).exit_code == 0
    refused = run(*on_engine, "ingest", str(second))
    assert refused.exit_code == 1
    assert str(first.resolve()) in refused.stderr and str(second.resolve()) in refused.stderr
    assert "--doc-id" in refused.stderr and "--root" in refused.stderr and "--replace" in refused.stderr
    assert _doc_ids(on_engine, "apples") == {"readme.md"}, "the first file is still there"
    replaced = run(*on_engine, "ingest", str(second), "--replace", "--json")
    assert replaced.exit_code == 0
    assert json.loads(replaced.output)["deleted"] == 1
    assert _doc_ids(on_engine, "apples") == set() and _doc_ids(on_engine, "bananas") == {"readme.md"}
    by_id = run(*on_engine, "ingest", str(first), "--doc-id", "colA-readme.md")
    assert by_id.exit_code == 0, by_id.output
    same_id = run(*on_engine, "ingest", str(first), "--doc-id", "readme.md")
    assert same_id.exit_code == 1 and "already belongs to" in same_id.stderr


@pytest.mark.integration
def test_root_keeps_same_named_files_apart(on_engine: list[str], tmp_path: Path) -> None:
    first, second = _two_readmes(tmp_path)
    clash = run(*on_engine, "ingest", str(first), str(second))
    assert clash.exit_code == 1
    assert "give both a common --root" in clash.stderr and "separately" not in clash.stderr
    rooted = run(*on_engine, "ingest", "--root", str(tmp_path), str(first), str(second), "--json")
    assert rooted.exit_code == 0, rooted.output
    assert _doc_ids(on_engine, "apples bananas") >= {"colA/readme.md", "colB/readme.md"}
    both = run(*on_engine, "ingest", str(first), "--root", str(tmp_path), "--doc-id", "x")
    assert both.exit_code == 1 and "--doc-id and --root" in both.stderr


@pytest.mark.integration
def test_max_chunks_flag_caps_the_bubble(small_corpus: tuple[list[str], Path]) -> None:
    flags, _ = small_corpus
    capped = run(*flags, "bubble", "membrane", "--max-chunks", "1", "--json")
    assert capped.exit_code == 0, capped.output
    assert len(json.loads(capped.stdout)["selected"]) == 1
    wrong = run(*flags, "bubble", "membrane", "--max-chunks", "0")
    assert wrong.exit_code == 1 and "max_chunks" in wrong.stderr


def test_a_printed_table_aligns_words_left_and_numbers_right(capsys: pytest.CaptureFixture[str]) -> None:
    table = Table(
        title="losses",
        columns=["query", "reason", "tokens"],
        rows=[["q1", "budget_exceeded", "7"], ["q22", "low_gain", "118"]],
    )
    print_table(table)
    lines = capsys.readouterr().out.splitlines()
    cells = {line.split("│")[2].strip(): line.split("│")[1:-1] for line in lines if line.startswith("│")}
    assert cells["low_gain"][1].startswith(" low_gain ")  # a column of words: padded on the right
    assert cells["budget_exceeded"][2].endswith(" 7 ") and cells["budget_exceeded"][2].startswith("   ")
    assert cells["low_gain"][0].startswith(" q22")  # the first column is always left-aligned
