"""Incremental re-ingest against the real engine (embedded osmem by default)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ingest_files import SAMPLE, make_workbook

from esbubble.errors import BulkError
from esbubble.ingest import IngestOptions, IngestProgress, ingest_paths, read_document
from esbubble.ingest.ids import content_hash
from esbubble.ingest.incremental import StoreWriter, plan_changes
from esbubble.models import Chunk
from esbubble.store.chunks import count_chunks, doc_chunk_hashes, get_chunks
from esbubble.store.connection import Store
from esbubble.text import TERMS_VERSION

OPTIONS = IngestOptions(min_chunk_tokens=0)  # MEMO's one-line paragraphs stay chunks of their own
T1 = datetime(2025, 3, 1, tzinfo=UTC)
T2 = datetime(2025, 3, 2, tzinfo=UTC)

MEMO = (
    "# Memo\n\nFirst paragraph stays.\n\nSecond paragraph will change.\n\n"
    "## Later\n\nThird paragraph goes away.\n"
)


def _stored(store: Store, doc_id: str) -> dict[str, Chunk]:
    return {c.chunk_id: c for c in get_chunks(store, sorted(doc_chunk_hashes(store, doc_id)))}


def test_plan_changes_sorts_chunks_into_four_kinds(tmp_path: Path) -> None:
    (tmp_path / "m.md").write_text(MEMO, encoding="utf-8")
    old = read_document(tmp_path / "m.md", OPTIONS, doc_id="m.md")
    (tmp_path / "m.md").write_text(
        MEMO.replace("will change", "has changed") + "\nA new one.\n", encoding="utf-8"
    )
    new = read_document(tmp_path / "m.md", OPTIONS, doc_id="m.md")
    plan = plan_changes(new, {c.chunk_id: c.content_hash for c in old} | {"gone": "x"})
    assert [c.text for c in plan.added] == ["A new one."]
    assert [c.text for c in plan.changed] == ["Second paragraph has changed."]
    assert len(plan.unchanged) == 2 and plan.vanished == ["gone"]


@pytest.mark.integration
def test_unchanged_changed_removed_added(store: Store, tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(MEMO, encoding="utf-8")
    first = ingest_paths(store, [tmp_path], OPTIONS, now=T1)
    assert first.ok and [d.doc_id for d in first.documents] == ["memo.md"]
    assert (first.added, first.updated, first.deleted, first.unchanged) == (3, 0, 0, 0)

    again = ingest_paths(store, [tmp_path], OPTIONS, now=T2)
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
    assert {c.ingested_at for c in _stored(store, "memo.md").values()} == {T1}  # untouched

    memo.write_text(
        "# Memo\n\nFirst paragraph stays.\n\nSecond paragraph has changed.\n\n"
        "## Added\n\nA brand new paragraph.\n",
        encoding="utf-8",
    )
    third = ingest_paths(store, [tmp_path], OPTIONS, now=T2)
    assert (third.added, third.updated, third.deleted, third.unchanged) == (1, 1, 1, 1)
    stored = _stored(store, "memo.md")
    assert sorted(c.text for c in stored.values()) == [
        "A brand new paragraph.",
        "First paragraph stays.",
        "Second paragraph has changed.",
    ]
    stays = next(c for c in stored.values() if c.text == "First paragraph stays.")
    assert stays.ingested_at == T1
    assert {c.chunk_id for c in stored.values()} == {
        c.chunk_id for c in read_document(memo, OPTIONS, doc_id="memo.md")
    }


@pytest.mark.integration
def test_doc_ids_are_stable_and_relative_to_the_root(store: Store, tmp_path: Path) -> None:
    (tmp_path / "jobs" / "a").mkdir(parents=True)
    make_workbook(tmp_path / "jobs" / "a" / "w.xlsx")
    summary = ingest_paths(store, [tmp_path / "jobs"], OPTIONS, now=T1)
    assert [d.doc_id for d in summary.documents] == ["a/w.xlsx"]
    rooted = ingest_paths(store, [tmp_path / "jobs" / "a" / "w.xlsx"], IngestOptions(root=tmp_path / "jobs"))
    assert [d.doc_id for d in rooted.documents] == ["a/w.xlsx"] and rooted.documents[0].unchanged == 6
    assert count_chunks(store) == 6  # 4 Scope rows + 2 Pricing rows


@pytest.mark.integration
def test_bad_files_fail_one_line_each_and_good_ones_are_ingested(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nIndexed anyway.\n", encoding="utf-8")
    (folder / "corrupt.xlsx").write_bytes(b"PK\x03\x04 not a workbook")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pptx").write_bytes(b"ignored in a directory walk")
    (folder / "~$lock.xlsx").write_bytes(b"office lock file")
    explicit = tmp_path / "slides.pptx"
    explicit.write_bytes(b"named explicitly")
    seen: list[IngestProgress] = []
    summary = ingest_paths(store, [folder, explicit, tmp_path / "missing.csv"], OPTIONS, progress=seen.append)
    assert not summary.ok
    reasons = {Path(f.file).name: f.reason for f in summary.failures}
    assert set(reasons) == {"corrupt.xlsx", "empty.pdf", "slides.pptx", "missing.csv"}
    assert reasons["empty.pdf"] == "file is empty"
    assert reasons["missing.csv"] == "file not found"
    assert reasons["slides.pptx"].startswith("unsupported file type '.pptx'")
    assert all("\n" not in r for r in reasons.values())
    assert sorted(Path(s).name for s in summary.skipped) == ["notes.pptx", "~$lock.xlsx"]
    assert [d.doc_id for d in summary.documents] == ["good.md"]
    assert {c.doc_id for c in _stored(store, "good.md").values()} == {"good.md"}
    assert count_chunks(store) == 1  # nothing of the failed files
    assert [(p.done, p.total, p.status) for p in seen][-1] == (len(seen), len(seen), "failed")
    assert sum(p.status == "failed" for p in seen) == 4


class _FailHalfway(StoreWriter):
    """Writes the first half of the replacement for real, then fails like a rejected bulk item."""

    def replace(self, store: Store, chunks: Sequence[Chunk], delete_ids: Sequence[str]) -> None:
        half = len(chunks) // 2
        super().replace(store, chunks[:half], delete_ids)
        raise BulkError(
            "1 of 2 chunks failed to index", [{"_id": chunks[half].chunk_id, "error": "injected"}]
        )


@pytest.mark.integration
def test_failure_half_way_keeps_the_previous_version(store: Store, tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(MEMO, encoding="utf-8")
    ingest_paths(store, [memo], OPTIONS, now=T1)
    before = _stored(store, "memo.md")

    memo.write_text(
        "# Memo\n\nFirst paragraph rewritten.\n\nSecond paragraph rewritten.\n\n"
        "## New\n\nNew one.\n\nAnd two.\n",
        encoding="utf-8",
    )
    summary = ingest_paths(store, [memo], OPTIONS, now=T2, writer=_FailHalfway())
    assert [f.reason for f in summary.failures] == [
        "indexing failed, previous version kept: 1 of 2 chunks failed to index"
    ]
    assert summary.documents == []
    assert _stored(store, "memo.md") == before


@pytest.mark.integration
def test_sample_corpus_ingests_and_gold_ids_exist(store: Store) -> None:
    summary = ingest_paths(store, [SAMPLE], IngestOptions(), now=T1)
    assert summary.ok, summary.failures
    assert sorted(d.doc_id for d in summary.documents) == [
        "quote_job.xlsx",
        "site_memo.md",
        "specification.pdf",
    ]
    from esbubble.queryset import load_queries

    queries = load_queries(SAMPLE / "queries.jsonl")
    gold = sorted({g for case in queries.cases for g in case.gold})
    assert len(get_chunks(store, gold)) == len(gold)
    assert count_chunks(store) == summary.added


@pytest.mark.integration
def test_chunks_keep_their_source_path_and_older_chunks_gain_it(store: Store, tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(MEMO, encoding="utf-8")
    chunks = read_document(memo, OPTIONS, doc_id="memo.md")
    StoreWriter().index(store, chunks)  # as an older esbubble stored them: no source_path
    assert {c.source_path for c in _stored(store, "memo.md").values()} == {None}
    summary = ingest_paths(store, [memo], OPTIONS, now=T1)
    assert summary.ok and summary.documents[0].updated == len(chunks), "rewritten once, to add the path"
    assert {c.source_path for c in _stored(store, "memo.md").values()} == {str(memo.resolve())}
    again = ingest_paths(store, [memo], OPTIONS, now=T2)
    assert again.documents[0].unchanged == len(chunks)


# The fields a chunk's content_hash covers (``ingest.drafts.finish``), all of them the chunk's own.
_HASHED = (
    "doc_id", "source_type", "section", "sheet_name", "bucket", "row_number", "page", "line_start",
    "line_end", "position", "parent_id", "token_count", "encoding", "text", "compare_text", "context",
)  # fmt: skip


def _as_before_cells(chunk: Chunk, source: Path) -> Chunk:
    """``chunk`` as esbubble stored a row before rows stored their cells' analysed words: no
    ``terms.cells``, and a content_hash of its fields and the terms' version alone."""
    assert chunk.terms is not None
    fields = {name: getattr(chunk, name) for name in _HASHED}
    digest = content_hash({**fields, "terms_version": TERMS_VERSION})
    terms = chunk.terms.model_copy(update={"cells": None})
    source_path = str(source.resolve())
    return chunk.model_copy(update={"terms": terms, "content_hash": digest, "source_path": source_path})


@pytest.mark.integration
def test_rows_indexed_without_their_cells_are_rewritten_once_with_them(store: Store, tmp_path: Path) -> None:
    table = tmp_path / "regions.csv"
    table.write_text("Code,Name\nNO081,Oslo\nNO082,Viken\n", encoding="utf-8")
    chunks = read_document(table, OPTIONS, doc_id="regions.csv")
    assert chunks and all(c.row_number is not None for c in chunks)
    StoreWriter().index(store, [_as_before_cells(c, table) for c in chunks])
    assert {c.terms.cells if c.terms else "?" for c in _stored(store, "regions.csv").values()} == {None}
    summary = ingest_paths(store, [table], OPTIONS, now=T1)
    assert summary.ok and summary.documents[0].updated == len(chunks)
    assert [c.terms.cells if c.terms else None for c in _stored(store, "regions.csv").values()] == [
        c.terms.cells if c.terms else "?" for c in sorted(chunks, key=lambda c: c.chunk_id)
    ]
    again = ingest_paths(store, [table], OPTIONS, now=T2)
    assert again.documents[0].unchanged == len(chunks)


@pytest.mark.integration
def test_another_file_with_the_same_doc_id_fails_and_changes_nothing(store: Store, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "memo.md").write_text(MEMO, encoding="utf-8")
    (tmp_path / "b" / "memo.md").write_text("# Other\n\nSomething else entirely.\n", encoding="utf-8")
    ingest_paths(store, [tmp_path / "a" / "memo.md"], OPTIONS, now=T1)
    before = _stored(store, "memo.md")
    summary = ingest_paths(store, [tmp_path / "b" / "memo.md"], OPTIONS, now=T2)
    assert not summary.documents and len(summary.failures) == 1
    assert "already belongs to" in summary.failures[0].reason
    assert _stored(store, "memo.md") == before
    replaced = ingest_paths(store, [tmp_path / "b" / "memo.md"], OPTIONS, now=T2, replace=True)
    assert replaced.ok and replaced.documents[0].deleted == len(before)
    assert {c.source_path for c in _stored(store, "memo.md").values()} == {
        str((tmp_path / "b" / "memo.md").resolve())
    }


def test_plan_changes_rewrites_stale_chunks_with_the_same_hash(tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text(MEMO, encoding="utf-8")
    chunks = read_document(memo, OPTIONS, doc_id="memo.md")
    stored = {c.chunk_id: c.content_hash for c in chunks}
    plan = plan_changes(chunks, stored, stale=[chunks[0].chunk_id])
    assert [c.chunk_id for c in plan.changed] == [chunks[0].chunk_id]
    assert len(plan.unchanged) == len(chunks) - 1 and not plan.added and not plan.vanished
