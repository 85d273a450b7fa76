"""Small builders for candidates in pure-core tests (no engine, no ingest)."""

from __future__ import annotations

from esbubble.models import Candidate, Chunk


def text_candidate(chunk_id: str, section: str, text: str, tokens: int) -> Candidate:
    """A prose chunk whose bucket is its section and whose compared words are its text."""
    chunk = Chunk(
        chunk_id=chunk_id,
        doc_id="d",
        source_type="text",
        section=section,
        bucket=section,
        position=0,
        token_count=tokens,
        content_hash=chunk_id,
        text=text,
        compare_text=text,
    )
    return Candidate(chunk=chunk)
