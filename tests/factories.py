"""Small builders for candidates in pure-core tests (no engine, no ingest)."""

from __future__ import annotations

from typing import Any

from esbubble.config import BubbleConfig, parse_config
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


def paper_config(data: dict[str, Any] | None = None) -> BubbleConfig:
    """A profile in the paper's mode (eq. 5 tf, descending-score selection) plus ``data``."""
    data = dict(data or {})
    data["bubble"] = {"relevance": "tf", "selection": "score", **data.get("bubble", {})}
    return parse_config(data)
