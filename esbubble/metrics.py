"""The paper's per-bubble metrics (§5) and their mean over a query set."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict

from esbubble.models import REJECTION_REASONS, Bubble


class BubbleMetrics(BaseModel):
    """What one bubble cost and how diverse and complete it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens_used: int
    selected: int
    candidates: int
    unique_sections: int
    avg_overlap: float
    tokens_per_section: dict[str, int]
    rejected: dict[str, int]
    rejected_share: dict[str, float]
    gold_recall: float | None = None


class AggregateMetrics(BaseModel):
    """Means over a set of queries (one row of the paper's tables)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queries: int
    tokens_used: float
    selected: float
    unique_sections: float
    avg_overlap: float
    rejected: dict[str, int]
    rejected_share: dict[str, float]
    gold_recall: float | None = None
    gold_queries: int = 0


def _shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {reason: (n / total if total else 0.0) for reason, n in counts.items()}


def gold_recall(gold: Collection[str] | None, chunk_ids: Collection[str]) -> float | None:
    """``|gold ∩ chunk_ids| / |gold|``; ``None`` without gold labels (including an empty gold set)."""
    if not gold:
        return None
    wanted = set(gold)
    return len(wanted & set(chunk_ids)) / len(wanted)


def bubble_metrics(bubble: Bubble, gold: Collection[str] | None = None) -> BubbleMetrics:
    """Metrics of one bubble; ``gold_recall = |gold ∩ selected| / |gold|`` when gold ids are given
    (``None`` without gold labels, including an empty gold set).

    ``avg_overlap`` is the mean, over selected chunks, of each one's overlap
    with the chunks selected before it (what the redundancy gate measured).
    """
    per_section: dict[str, int] = {}
    for chosen in bubble.selected:
        section = chosen.chunk.section
        per_section[section] = per_section.get(section, 0) + chosen.chunk.token_count
    overlaps = [chosen.overlap for chosen in bubble.selected]
    rejected = bubble.rejected
    return BubbleMetrics(
        tokens_used=bubble.tokens_used,
        selected=len(bubble.selected),
        candidates=len(bubble.trace),
        unique_sections=len(per_section),
        avg_overlap=statistics.fmean(overlaps) if overlaps else 0.0,
        tokens_per_section=per_section,
        rejected=rejected,
        rejected_share=_shares(rejected),
        gold_recall=gold_recall(gold, [chosen.chunk.chunk_id for chosen in bubble.selected]),
    )


def aggregate(metrics: Sequence[BubbleMetrics]) -> AggregateMetrics:
    """Mean over queries; gold recall averages only the queries that had gold labels."""
    rejected: dict[str, int] = dict.fromkeys(REJECTION_REASONS, 0)
    for m in metrics:
        for reason, n in m.rejected.items():
            rejected[reason] = rejected.get(reason, 0) + n
    recalls = [m.gold_recall for m in metrics if m.gold_recall is not None]

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) if values else 0.0

    return AggregateMetrics(
        queries=len(metrics),
        tokens_used=mean([float(m.tokens_used) for m in metrics]),
        selected=mean([float(m.selected) for m in metrics]),
        unique_sections=mean([float(m.unique_sections) for m in metrics]),
        avg_overlap=mean([m.avg_overlap for m in metrics]),
        rejected=rejected,
        rejected_share=_shares(rejected),
        gold_recall=mean(recalls) if recalls else None,
        gold_queries=len(recalls),
    )
