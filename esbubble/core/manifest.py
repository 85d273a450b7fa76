"""``build_manifest``: one record per run — what was asked, with which resolved config, against what."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import esbubble
from esbubble.config import BubbleConfig
from esbubble.core.metrics import bubble_metrics
from esbubble.models import Bubble, EngineInfo, RunManifest, RunTotals


def resolved_config(bubble: Bubble, config: BubbleConfig) -> BubbleConfig:
    """The profile as the bubble was actually built: with the variant that ran."""
    if config.bubble.variant == bubble.variant:
        return config
    return config.with_overrides(variant=bubble.variant)


def stored_term_stats(bubble: Bubble) -> dict[str, Any] | None:
    """The term statistics the manifest keeps: all of them, or for a redacted query only the document
    count and the terms some candidate matched (which its trace records show anyway). The engine
    counts every analysed query term, so the full list would give a redacted query away word by word.
    """
    stats = bubble.term_stats
    if stats is None or not bubble.query_redacted:
        return stats
    matched = {match["term"] for record in bubble.trace for match in record["step_details"]["terms"]}
    df = stats.get("df", {})
    return {**stats, "df": {term: count for term, count in df.items() if term in matched}}


def build_manifest(
    bubble: Bubble,
    config: BubbleConfig,
    *,
    index: str,
    engine: EngineInfo | None,
    request_body: dict[str, Any] | None,
    index_doc_count: int | None,
    timings_ms: dict[str, float],
    now: datetime,
) -> RunManifest:
    """The run manifest of ``bubble``; the query is left out when the bubble was built redacted."""
    resolved = resolved_config(bubble, config)
    metrics = bubble_metrics(bubble)
    totals = RunTotals(
        candidates=len(bubble.trace),
        selected=len(bubble.selected),
        tokens_used=bubble.tokens_used,
        budget=bubble.budget,
        sections=bubble.sections,
        rejected=bubble.rejected,
        avg_overlap=metrics.avg_overlap,
    )
    return RunManifest(
        run_id=bubble.run_id,
        batch_id=bubble.batch_id,
        timestamp=now,
        query=None if bubble.query_redacted else bubble.query,
        query_hash=bubble.query_hash,
        variant=bubble.variant,
        config=resolved.model_dump(mode="json"),
        config_hash=resolved.config_hash,
        slack_policy=resolved.bubble.slack_policy,
        index=index,
        index_doc_count=index_doc_count,
        engine=engine,
        esbubble_version=esbubble.__version__,
        request_body=request_body,
        totals=totals,
        term_stats=stored_term_stats(bubble),
        bucket_shares=bubble.bucket_shares,
        timings_ms=dict(timings_ms),
    )
