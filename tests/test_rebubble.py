"""Batch re-bubbling: comparing runs query by query, and running a batch under one batch id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.app.rebubble import (
    MAX_CASE_ID_BYTES,
    ChunkNote,
    RunSummary,
    batch_run_id,
    compare_runs,
    describe_chunks,
    finished_case_ids,
    load_summaries,
    new_batch_id,
    report_data,
    run_batch,
)
from esbubble.app.runner import RunOptions
from esbubble.config import parse_config
from esbubble.errors import NotFoundError
from esbubble.models import Chunk
from esbubble.queryset import QueryCase
from esbubble.store.audit import find_manifests, trace_records
from esbubble.store.chunks import delete_chunks, index_chunks
from esbubble.store.connection import Store
from esbubble.store.templates import ensure_chunk_index


def summary(run_id: str, query_hash: str, selected: list[str], *, tokens: int, sections: list[str],
            variant: str = "full") -> RunSummary:  # fmt: skip
    return RunSummary(
        run_id=run_id, batch_id=None, query=f"query {query_hash}", query_hash=query_hash, variant=variant,
        config_hash="cfg", index="chunks", tokens_used=tokens, sections=sections, selected=selected,
    )  # fmt: skip


def test_compare_lists_entered_and_left_chunks_with_token_and_section_deltas() -> None:
    old = [summary("a1", "h1", ["c1", "c2", "c3"], tokens=300, sections=["Scope", "Products"])]
    new = [summary("b1", "h1", ["c1", "c4", "c2"], tokens=250, sections=["Scope", "Below Grade"])]
    comparison = compare_runs("a", old, new)
    (change,) = comparison.changes
    assert change.entered == ["c4"]
    assert change.left == ["c3"]
    assert (change.tokens_before, change.tokens_after, change.token_delta) == (300, 250, -50)
    assert change.sections_entered == ["Below Grade"]
    assert change.sections_left == ["Products"]
    assert change.changed and comparison.changed == 1


def test_identical_runs_show_no_change() -> None:
    old = [summary("a1", "h1", ["c1"], tokens=10, sections=["S"])]
    new = [summary("b1", "h1", ["c1"], tokens=10, sections=["S"])]
    comparison = compare_runs("a", old, new)
    assert comparison.changed == 0
    assert comparison.changes[0].entered == comparison.changes[0].left == []


def test_runs_pair_by_query_preferring_the_same_variant_and_report_unmatched() -> None:
    old = [
        summary("a1", "h1", ["x"], tokens=5, sections=["S"], variant="flat_topk"),
        summary("a2", "h1", ["y"], tokens=5, sections=["S"], variant="full"),
        summary("a3", "h3", ["z"], tokens=5, sections=["S"]),
    ]
    new = [
        summary("b1", "h1", ["y"], tokens=5, sections=["S"]),
        summary("b2", "h2", ["q"], tokens=1, sections=[]),
    ]
    comparison = compare_runs("a", old, new)
    assert [(c.old_run_id, c.new_run_id) for c in comparison.changes] == [("a2", "b1")]
    assert comparison.only_in_new == ["b2"]
    assert comparison.only_in_baseline == ["a1", "a3"]


# --- on a real engine --------------------------------------------------------------------------------

SCOPE = "Scope of Works"
PRODUCTS = "Products"


def chunk(chunk_id: str, section: str, text: str, position: int) -> Chunk:
    return Chunk(
        chunk_id=chunk_id, doc_id="job.xlsx", source_type="xlsx", section=section, sheet_name=section,
        bucket=section, row_number=position + 2, position=position, token_count=20, content_hash=chunk_id,
        text=text, compare_text=text,
    )  # fmt: skip


CHUNKS = [
    chunk("s1", SCOPE, "membrane membrane scope works basement", 0),
    chunk("s2", SCOPE, "scope works podium deck drainage", 1),
    chunk("p1", PRODUCTS, "membrane product data sheet primer", 2),
]
CASES = [
    QueryCase(id="q1", query="membrane", category="narrow_fact", gold=["p1"]),
    QueryCase(id="q2", query="scope works", category="multi_facet"),
]
BASE = parse_config(
    {
        # the paper's scores: the comparison and report mechanics below are built on them
        "bubble": {
            "token_budget": 100,
            "max_chunks": 1,
            "variant": "full",
            "relevance": "tf",
            "selection": "score",
        },
        "buckets": {"shares": {SCOPE: 0.5, PRODUCTS: 0.5}},
    }
)
# The only change: a Products prior large enough to outrank the Scope chunk's higher tf.
BOOSTED = parse_config({**BASE.model_dump(mode="json"), "priors": {"sections": {PRODUCTS: 5.0}}})
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


@pytest.fixture
def indexed(store: Store) -> Store:
    index_chunks(store, CHUNKS)
    return store


@pytest.mark.integration
def test_a_batch_is_stored_under_one_batch_id_and_workers_do_not_change_it(indexed: Store) -> None:
    one = run_batch(indexed, CASES, BASE, RunOptions(batch_id="batch-a", now=NOW), workers=1)
    three = run_batch(indexed, CASES, BASE, RunOptions(batch_id="batch-b", now=NOW), workers=3)
    assert [r.selected for r in one.runs] == [r.selected for r in three.runs] == [["s1"], ["s1"]]
    assert [r.run_id for r in one.runs] == ["batch-a.q1", "batch-a.q2"]
    assert one.written == 2 + 2 + 2  # q1 finds s1 and p1, q2 finds s1 and s2, plus one manifest per run
    manifests = find_manifests(indexed, "batch-a")
    assert [m.run_id for m in manifests] == ["batch-a.q1", "batch-a.q2"]
    assert {m.batch_id for m in manifests} == {"batch-a"}
    records = trace_records(indexed, [m.run_id for m in manifests])
    assert {r["batch_id"] for r in records} == {"batch-a"}
    assert load_summaries(indexed, "batch-a") == one.runs


@pytest.mark.integration
def test_a_profile_change_that_moves_a_chunk_shows_up_in_the_comparison(indexed: Store) -> None:
    before = run_batch(indexed, CASES, BASE, RunOptions(batch_id="batch-before", now=NOW))
    after = run_batch(indexed, CASES, BOOSTED, RunOptions(batch_id="batch-after", now=NOW))
    comparison = compare_runs("batch-before", load_summaries(indexed, "batch-before"), after.runs)
    q1, q2 = comparison.changes
    assert (q1.old_run_id, q1.new_run_id) == ("batch-before.q1", "batch-after.q1")
    assert (q1.entered, q1.left) == (["p1"], ["s1"])
    assert (q1.sections_entered, q1.sections_left) == ([PRODUCTS], [SCOPE])
    assert q1.token_delta == 0
    assert (q2.entered, q2.left) == (["p1"], ["s1"])
    assert before.runs[0].selected == ["s1"]


@pytest.mark.integration
def test_every_chunk_that_moved_is_described_by_section_row_and_text_even_once_deleted(
    indexed: Store,
) -> None:
    run_batch(indexed, CASES[:1], BASE, RunOptions(batch_id="batch-before", now=NOW))
    after = run_batch(indexed, CASES[:1], BOOSTED, RunOptions(batch_id="batch-after", now=NOW))
    delete_chunks(indexed, ["s1"])  # re-ingested away since the baseline chose it
    indexed.client.indices.refresh(index=indexed.names.chunks)
    comparison = compare_runs("batch-before", load_summaries(indexed, "batch-before"), after.runs)
    described = describe_chunks(indexed, comparison)
    assert described.changes == comparison.changes
    assert described.chunks == {
        "p1": ChunkNote(
            chunk_id="p1", doc_id="job.xlsx", section=PRODUCTS, sheet_name=PRODUCTS, row_number=4, page=None,
            snippet="membrane product data sheet primer",
        ),
        "s1": ChunkNote(
            chunk_id="s1", doc_id="job.xlsx", section=SCOPE, sheet_name=SCOPE, row_number=2, page=None,
            snippet=None,
        ),
    }  # fmt: skip


@pytest.mark.integration
def test_a_chunk_that_left_is_described_from_the_index_its_baseline_searched(indexed: Store) -> None:
    run_batch(indexed, CASES[:1], BASE, RunOptions(batch_id="batch-before", now=NOW))
    other = indexed.at_chunk_index(f"{indexed.names.prefix}-other")
    ensure_chunk_index(other)
    index_chunks(other, [CHUNKS[2]])  # only the Products chunk: the baseline's Scope chunk is not here
    after = run_batch(other, CASES[:1], BASE, RunOptions(batch_id="batch-after", now=NOW))
    comparison = compare_runs("batch-before", load_summaries(indexed, "batch-before"), after.runs)
    (change,) = comparison.changes
    assert (change.entered, change.left) == (["p1"], ["s1"])
    assert (change.index_before, change.index_after) == (indexed.names.chunks, other.names.chunks)
    described = describe_chunks(other, comparison)
    assert described.chunks["s1"].snippet == "membrane membrane scope works basement"
    assert described.chunks["p1"].snippet == "membrane product data sheet primer"


@pytest.mark.integration
def test_unknown_batch_is_a_not_found_error(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no run or batch with id 'nope'"):
        load_summaries(store, "nope")


@pytest.mark.integration
def test_report_data_rebuilds_variants_and_delta_sweep_from_the_stored_batch(indexed: Store) -> None:
    run_batch(indexed, CASES, BOOSTED, RunOptions(batch_id="batch-r", now=NOW))
    data = report_data(indexed, "batch-r", now=NOW)
    assert data.runs == 2
    variants = ["engine_topk", "flat_topk", "structure", "diversity", "full"]
    assert [p.variant for p in data.variants] == variants
    assert [p.delta for p in data.delta_sweep] == [0.3, 0.4, 0.5, 0.6, 0.7]
    full = next(p for p in data.variants if p.variant == "full")
    assert (full.tokens_used, full.unique_sections) == (20, 1)  # each query keeps p1 alone
    funnel = {stage.stage: stage.remaining for stage in data.funnel}
    # q1 finds s1 and p1; q2 finds s1, s2 and (through the Products prior clause) p1: 2.5 per run.
    assert funnel["candidates"] == 2.5 and funnel["selected"] == 1.0
    assert funnel["max chunks"] == 1.0
    assert [(a.section, a.tokens) for a in data.allocation] == [(PRODUCTS, 20.0)]


@pytest.mark.integration
def test_report_data_with_the_query_set_fills_gold_recall_overall_and_per_category(indexed: Store) -> None:
    run_batch(indexed, CASES, BOOSTED, RunOptions(batch_id="batch-g", now=NOW))
    without = report_data(indexed, "batch-g", now=NOW)
    table1 = next(t for t in without.tables if t.title.startswith("Table 1 "))
    assert {row[-1] for row in table1.rows} == {"–"}
    assert any("--queries" in row[0] for t in without.tables if t.title == "Notes" for row in t.rows)

    # q2 matches by query text (its run id names another batch's case id), q1 by run id.
    queries = [CASES[0], QueryCase(id="other", query="scope works", category="multi_facet", evidence=["zz"])]
    data = report_data(indexed, "batch-g", now=NOW, queries=queries)
    table1 = next(t for t in data.tables if t.title.startswith("Table 1 "))
    full = next(row for row in table1.rows if row[0] == "full")
    assert full[-1] == "0.50"  # q1's gold p1 is selected, q2's evidence "zz" is in no chunk
    per_category = next(t for t in data.tables if t.title == "Gold recall per category")
    assert per_category.columns == ["variant", "multi_facet", "narrow_fact"]
    variants = ["engine_topk", "flat_topk", "structure", "diversity", "full"]
    assert [row[0] for row in per_category.rows] == variants
    assert next(row for row in per_category.rows if row[0] == "full")[1:] == ["0.00", "1.00"]


@pytest.mark.integration
def test_the_cron_script_runs_a_batch_with_the_connection_from_the_environment(
    indexed: Store, tmp_path: Path
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "query": "membrane"}\n')
    assert indexed.settings.url is not None
    env = {
        **os.environ,
        "ELASTICSEARCH_URL": indexed.settings.url,
        "ESBUBBLE_PREFIX": indexed.names.prefix,
        "ESBUBBLE_HOME": str(indexed.settings.home),
    }
    script = Path(__file__).resolve().parent.parent / "scripts" / "rebubble.py"
    done = subprocess.run(
        [sys.executable, str(script), str(queries), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    batch_id = json.loads(done.stdout)["batch_id"]
    assert [s.run_id for s in load_summaries(indexed, batch_id)] == [f"{batch_id}.q1"]
    missing = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "none.jsonl")], env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert missing.returncode == 1
    assert "query set not found" in missing.stderr


# --- run ids from long query-set ids ---------------------------------------------------------------


def test_short_query_set_ids_keep_their_run_id() -> None:
    assert batch_run_id("batch-x", "q_7") == "batch-x.q_7"


@given(st.text(min_size=1, max_size=2000))
def test_run_ids_stay_far_below_the_512_byte_id_limit_and_are_stable(case_id: str) -> None:
    batch_id = new_batch_id(NOW)
    run_id = batch_run_id(batch_id, case_id)
    assert len(run_id.encode("utf-8")) <= len(batch_id) + 1 + MAX_CASE_ID_BYTES
    assert run_id == batch_run_id(batch_id, case_id)
    assert run_id.startswith(f"{batch_id}.")


def test_long_ids_that_share_a_beginning_get_different_run_ids() -> None:
    first, second = "q_" + "x" * 490, "q_" + "x" * 489 + "y"
    assert batch_run_id("b", first) != batch_run_id("b", second)


@pytest.mark.integration
def test_a_batch_with_a_long_query_set_id_is_stored_and_resumable(indexed: Store) -> None:
    long_id = "q_" + "x" * 490
    cases = [QueryCase(id=long_id, query="membrane"), QueryCase(id="q_short", query="scope works")]
    result = run_batch(indexed, cases, BASE, RunOptions(batch_id="batch-long", now=NOW))
    assert (result.spooled, result.lost) == (0, 0)
    assert all(len(run.run_id.encode()) <= 512 for run in result.runs)
    assert finished_case_ids(indexed, "batch-long", BASE, [c.id for c in cases]) == {long_id, "q_short"}
