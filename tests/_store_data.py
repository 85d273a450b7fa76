"""Chunks for store tests, built directly as ``Chunk`` objects (no readers involved)."""

from __future__ import annotations

import hashlib

from esbubble.core.tokens import count_tokens
from esbubble.models import Chunk


def make_chunk(
    doc_id: str,
    position: int,
    text: str,
    *,
    section: str = "Body",
    bucket: str = "Text",
    row: int | None = None,
) -> Chunk:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Chunk(
        chunk_id=f"{doc_id}:{position:04d}",
        doc_id=doc_id,
        source_type="xlsx" if row is not None else "text",
        section=section,
        sheet_name=section if row is not None else None,
        bucket=bucket,
        row_number=row,
        position=position,
        token_count=count_tokens(text, "o200k_base"),
        content_hash=digest,
        text=text,
        compare_text=text,
    )


QUOTE_JOB: list[Chunk] = [
    make_chunk(
        "job",
        0,
        "Scaffold hire for twelve weeks, tube and fitting",
        section="Scaffolding",
        bucket="Scaffolding",
        row=2,
    ),
    make_chunk(
        "job", 1, "Scaffold erection and dismantle labour", section="Scaffolding", bucket="Scaffolding", row=3
    ),
    make_chunk(
        "job", 2, "Edge protection and toe boards", section="Scaffolding", bucket="Scaffolding", row=4
    ),
    make_chunk(
        "job",
        3,
        "Roof sheeting, profiled steel, 240 square metres",
        section="Roofing",
        bucket="Roofing",
        row=2,
    ),
    make_chunk("job", 4, "Gutters and downpipes replaced", section="Roofing", bucket="Roofing", row=3),
    make_chunk("job", 5, "Payment within thirty days of invoice", section="Terms", bucket="Terms", row=2),
    make_chunk("job", 6, "Scaffold is excluded from the warranty", section="Terms", bucket="Terms", row=3),
    make_chunk(
        "job", 7, "Project manager weekly site visits", section="Preliminaries", bucket="Preliminaries", row=2
    ),
]
