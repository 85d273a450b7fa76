"""Small builders for candidates in pure-core tests (no engine, no ingest)."""

from __future__ import annotations

from typing import Any

from esbubble.config import BubbleConfig, parse_config
from esbubble.core.analysis import distinct_words
from esbubble.models import Candidate, Chunk
from esbubble.text import word_set


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


def gate_words(text: str, config: BubbleConfig) -> frozenset[str]:
    """``words(x)`` of ``text`` as the redundancy gate reads it under ``config``, worked out here from the
    text: the standard tokenizer's words under bm25, the paper's tokens under tf, less the stop words."""
    stops = frozenset(config.bubble.stop_words)
    if config.bubble.standard_words:
        return frozenset(word for word in distinct_words(text) if word not in stops)
    return word_set(text, stops)
