"""The paper's per-bubble metrics (§5) and their mean over a query set."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from pydantic import BaseModel, ConfigDict

from esbubble.models import REJECTION_REASONS, Bubble, Candidate, Chunk


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


def normalise_evidence(text: str) -> str:
    """How evidence phrases and chunk texts are compared: case-folded, whitespace collapsed."""
    return " ".join(text.split()).casefold()


MAX_CEILING_ITEMS = 20


@dataclass(frozen=True, slots=True)
class GoldItems:
    """A query's gold items: chunk ids (``gold``: held by the chunk with that id) and evidence phrases
    (``evidence``: held by a chunk whose ``text`` contains them, compared by ``normalise_evidence``).
    Evidence survives re-chunking; chunk ids pin one ingest. Duplicates count once; items are the ids
    then the phrases, each sorted."""

    ids: tuple[str, ...]
    phrases: tuple[str, ...]

    @classmethod
    def of(cls, gold: Collection[str] = (), evidence: Collection[str] = ()) -> GoldItems:
        return cls(tuple(sorted(set(gold))), tuple(sorted({normalise_evidence(p) for p in evidence})))

    def __len__(self) -> int:
        return len(self.ids) + len(self.phrases)

    @property
    def labels(self) -> tuple[str, ...]:
        """Per item, what names it: the chunk id, or the phrase as compared (``normalise_evidence``)."""
        return (*self.ids, *self.phrases)

    def held_by(self, chunks: Iterable[Chunk]) -> tuple[bool, ...]:
        """Per item, whether one of ``chunks`` holds it."""
        chosen = list(chunks)
        ids = {c.chunk_id for c in chosen}
        texts = [normalise_evidence(c.text) for c in chosen]
        return (
            *(i in ids for i in self.ids),
            *(any(p in t for t in texts) for p in self.phrases),
        )

    def engine_ranks(self, candidates: Iterable[Candidate]) -> tuple[int | None, ...]:
        """Per item, the engine's rank of the best-ranked candidate that holds it (None: no candidate
        does, so no selection can)."""
        best: list[int | None] = [None] * len(self)
        for candidate in sorted(candidates, key=attrgetter("es_rank")):
            for index, held in enumerate(self.held_by([candidate.chunk])):
                if held and best[index] is None:
                    best[index] = candidate.es_rank
        return tuple(best)

    def budget_ceiling(self, candidates: Iterable[Candidate], budget: int) -> int:
        """The most items one set of whole candidate chunks within ``budget`` tokens holds: what the
        best possible selection from these candidates could reach at that budget, gates aside.

        Exact: the fewest tokens that hold each combination of items, one candidate at a time (a
        0/1 knapsack over the items each chunk holds). The combinations are at most ``2 ** len``,
        so the items are limited to ``MAX_CEILING_ITEMS`` (a question has a few).
        """
        if len(self) > MAX_CEILING_ITEMS:
            raise ValueError(f"{len(self)} gold items: the budget ceiling is exact up to {MAX_CEILING_ITEMS}")
        cheapest: dict[int, int] = {0: 0}  # the items held (one bit each) -> the fewest tokens holding them
        for candidate in candidates:
            held = sum(1 << index for index, hit in enumerate(self.held_by([candidate.chunk])) if hit)
            tokens = candidate.chunk.token_count
            if not held or tokens > budget:
                continue
            for items, spent in list(cheapest.items()):
                union, cost = items | held, spent + tokens
                if cost <= budget and cost < cheapest.get(union, budget + 1):
                    cheapest[union] = cost
        return max(items.bit_count() for items in cheapest)


def gold_recall(
    chunks: Iterable[Chunk], gold: Collection[str] = (), evidence: Collection[str] = ()
) -> float | None:
    """Share of the gold items (``GoldItems``) that ``chunks`` hold; ``None`` without gold items."""
    items = GoldItems.of(gold, evidence)
    if not len(items):
        return None
    return sum(items.held_by(chunks)) / len(items)


def bubble_metrics(
    bubble: Bubble, gold: Collection[str] = (), evidence: Collection[str] = ()
) -> BubbleMetrics:
    """Metrics of one bubble; ``gold_recall`` is ``gold_recall`` of the selected chunks
    (``None`` without gold ids or evidence).

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
        gold_recall=gold_recall([chosen.chunk for chosen in bubble.selected], gold, evidence),
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
