"""The real-document evaluation set: its documents ingest and every evidence phrase is in a chunk."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from esbubble.app.evaluate import VARIANT_ORDER, evaluate
from esbubble.config import parse_config
from esbubble.core.metrics import gold_recall
from esbubble.ingest import IngestOptions, ingest_paths, read_document
from esbubble.models import Chunk
from esbubble.queryset import CATEGORIES, load_queries
from esbubble.store.connection import Store
from esbubble.store.retrieve import retrieve_many

ROOT = Path(__file__).resolve().parent.parent / "data" / "realdocs"
DOCS = ROOT / "docs"
# The second set (questions written blind, data/realdocs2/SOURCES.md): four formats, no Word document.
SECOND = ROOT.parent / "realdocs2"


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    """Every chunk of the set with the default ingest options (what the CLI's default profile uses)."""
    return [
        chunk
        for file in sorted(DOCS.iterdir())
        for chunk in read_document(file, IngestOptions(), doc_id=file.name)
    ]


def test_the_set_has_real_workbooks_a_word_document_and_at_least_three_formats() -> None:
    suffixes = Counter(file.suffix for file in DOCS.iterdir())
    assert suffixes[".xlsx"] >= 1 and suffixes[".docx"] >= 1
    assert len(suffixes) >= 3
    assert sum(file.stat().st_size for file in DOCS.iterdir()) < 5_000_000
    listed = (ROOT / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"`{file.name}`" in listed for file in DOCS.iterdir())


def test_a_workbook_has_several_sheets(chunks: list[Chunk]) -> None:
    sheets: dict[str, set[str]] = {}
    for chunk in chunks:
        if chunk.sheet_name is not None:
            sheets.setdefault(chunk.doc_id, set()).add(chunk.sheet_name)
    assert max(len(names) for names in sheets.values()) >= 3


def test_queries_cover_the_four_categories_with_evidence_only() -> None:
    queries = load_queries(ROOT / "queries.jsonl")
    assert queries.problems == []
    assert len(queries.cases) >= 30
    assert {case.category for case in queries.cases} == set(CATEGORIES)
    assert all(case.evidence and not case.gold for case in queries.cases)


def test_every_evidence_phrase_is_in_a_chunk_of_the_set(chunks: list[Chunk]) -> None:
    """All chunks together hold every query's whole evidence, phrase by phrase."""
    for case in load_queries(ROOT / "queries.jsonl").cases:
        for phrase in case.evidence:
            assert gold_recall(chunks, evidence=[phrase]) == 1.0, (case.id, phrase)


@pytest.mark.integration
def test_eval_runs_on_the_set_with_the_default_profile_and_retrieval_finds_every_phrase(store: Store) -> None:
    ingest_paths(store, [DOCS], IngestOptions())
    cases = load_queries(ROOT / "queries.jsonl").cases
    config = parse_config({}).with_overrides(token_budget=400)
    # The candidates hold all the evidence: what a bubble misses, selection lost.
    for case, retrieval in zip(cases, retrieve_many(store, [c.query for c in cases], config), strict=True):
        found = gold_recall([c.chunk for c in retrieval.candidates], evidence=case.evidence)
        assert found == 1.0, case.id
    evaluation = evaluate(store, cases, config, now=datetime(2026, 1, 1, tzinfo=UTC))
    assert evaluation.queries == len(cases) and evaluation.budget == 400
    assert [row.variant for row in evaluation.table1] == list(VARIANT_ORDER)
    assert all(row.gold_recall is not None and row.tokens_used <= 400 for row in evaluation.table1)
    assert all(set(per) == set(CATEGORIES) for per in evaluation.recall_by_category.values())


def test_the_second_set_is_real_documents_of_four_formats_with_questions_in_every_category() -> None:
    docs = SECOND / "docs"
    assert {file.suffix for file in docs.iterdir()} == {".pdf", ".txt", ".md", ".xlsx"}
    listed = (SECOND / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"`{file.name}`" in listed for file in docs.iterdir())
    queries = load_queries(SECOND / "queries.jsonl")
    assert queries.problems == []
    assert len(queries.cases) >= 30
    assert Counter(case.category for case in queries.cases) == dict.fromkeys(CATEGORIES, 8)
    assert all(case.evidence and not case.gold for case in queries.cases)


def test_every_evidence_phrase_of_the_second_set_is_in_a_chunk() -> None:
    files = sorted((SECOND / "docs").iterdir())
    chunks = [chunk for file in files for chunk in read_document(file, IngestOptions(), doc_id=file.name)]
    for case in load_queries(SECOND / "queries.jsonl").cases:
        for phrase in case.evidence:
            assert gold_recall(chunks, evidence=[phrase]) == 1.0, (case.id, phrase)
