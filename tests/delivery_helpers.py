"""Builders for the delivery tests: chunks, bubbles and trace records without an engine."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime

from esbubble.core.trace import query_hash
from esbubble.models import (
    Bubble,
    Chunk,
    SelectedChunk,
    SourceType,
    StepDetails,
    TraceDict,
    TraceRecord,
    trace_dict,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def make_chunk(
    doc_id: str,
    position: int,
    *,
    text: str | None = None,
    section: str = "Body",
    tokens: int = 10,
    source_type: SourceType = "text",
    parent_id: str | None = None,
    bucket: str = "Text",
    page: int | None = None,
    row_number: int | None = None,
    sheet_name: str | None = None,
) -> Chunk:
    body = text if text is not None else f"{doc_id} paragraph {position} word{position}x{doc_id}"
    return Chunk(
        chunk_id=f"{doc_id}#{position}",
        doc_id=doc_id,
        source_type=source_type,
        section=section,
        sheet_name=sheet_name,
        bucket=bucket,
        row_number=row_number,
        page=page,
        position=position,
        parent_id=parent_id,
        token_count=tokens,
        content_hash=hashlib.sha256(body.encode()).hexdigest(),
        text=body,
        compare_text=body,
    )


def make_record(chunk: Chunk, *, rank: int, selected: bool, order: int | None = None) -> TraceDict:
    record = TraceRecord(
        trace_id=f"run:{chunk.chunk_id}",
        run_id="run",
        timestamp=NOW,
        query="q",
        query_hash="h",
        variant="full",
        rank=rank,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        section=chunk.section,
        sheet_name=chunk.sheet_name,
        bucket=chunk.bucket,
        row_number=chunk.row_number,
        page=chunk.page,
        token_count=chunk.token_count,
        tf=1.0,
        boost=0.0,
        len_penalty=1.0,
        score_raw=1.0,
        score_final=1.0,
        es_score=1.0,
        es_rank=rank,
        overlap=0.0,
        threshold=0.55,
        budget_remaining=0.0,
        bucket_remaining=0.0,
        stage="select" if selected else "budget_gate",
        step_decision="pass" if selected else "fail",
        final_decision="selected" if selected else "rejected",
        final_reason="passed_all_gates" if selected else "budget_exceeded",
        selection_order=order,
        step_details=StepDetails(),
    )
    return trace_dict(record)


def make_bubble(
    selected: Sequence[Chunk], rejected: Sequence[Chunk] = (), *, budget: int = 100, query: str = "q"
) -> Bubble:
    """A bubble whose selected chunks rank and enter in the given order, with descending scores."""
    picked = [
        SelectedChunk(
            rank=i,
            selection_order=i,
            chunk=c,
            tf=1.0,
            relevance=1.0,
            boost=0.0,
            len_penalty=1.0,
            score=float(100 - i),
            es_score=1.0,
            overlap=0.0,
        )
        for i, c in enumerate(selected, start=1)
    ]
    trace = [make_record(c, rank=i, selected=True, order=i) for i, c in enumerate(selected, start=1)]
    trace += [make_record(c, rank=len(selected) + i, selected=False) for i, c in enumerate(rejected, start=1)]
    return Bubble(
        run_id="run",
        query=query,
        variant="full",
        budget=budget,
        delta=0.55,
        selected=picked,
        trace=trace,
        query_hash=query_hash(query),
    )
