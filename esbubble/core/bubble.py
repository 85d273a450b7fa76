"""``build_bubble``: the pure core as a visible sequence of stages — score, select, trace.

No I/O: candidates in, a ``Bubble`` (selected chunks + one trace record per
candidate) out. Same query, config and candidates ⇒ same bubble, whatever
order the candidates arrive in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from esbubble.config import BubbleConfig
from esbubble.core.relevance import TermStats
from esbubble.core.score import ScoredCandidate, engine_order_key, score_candidates
from esbubble.core.select import select
from esbubble.core.trace import Decision, RunContext, json_time, query_hash, trace_records
from esbubble.core.variants import VARIANTS
from esbubble.errors import InputError
from esbubble.models import Bubble, Candidate, SelectedChunk, Variant
from esbubble.text import check_query_text


def _check_unique(candidates: Sequence[Candidate]) -> None:
    counts = Counter(c.chunk.chunk_id for c in candidates)
    duplicates = sorted(chunk_id for chunk_id, n in counts.items() if n > 1)
    if duplicates:
        raise InputError(
            f"candidates contain duplicate chunk ids: {', '.join(duplicates[:5])}",
            hint="pass each chunk once; one trace record is written per candidate",
        )


def _selected_chunk(decision: Decision) -> SelectedChunk:
    assert decision.selection_order is not None
    return selected_chunk(
        decision.scored, rank=decision.rank, order=decision.selection_order, overlap=decision.overlap
    )


def selected_chunk(scored: ScoredCandidate, *, rank: int, order: int, overlap: float) -> SelectedChunk:
    """A chunk that entered the bubble, with the numbers it entered on (selection and repair)."""
    return SelectedChunk(
        rank=rank,
        selection_order=order,
        chunk=scored.candidate.chunk,
        tf=scored.tf,
        relevance=scored.relevance,
        boost=scored.boost,
        len_penalty=scored.len_penalty,
        score=scored.score_final,
        es_score=scored.candidate.es_score,
        overlap=overlap,
    )


def build_bubble(
    query: str,
    candidates: Sequence[Candidate],
    config: BubbleConfig,
    *,
    run_id: str,
    now: datetime,
    batch_id: str | None = None,
    variant: Variant | None = None,
    redact_query: bool = False,
    stats: TermStats | None = None,
    query_key: bytes | None = None,
) -> Bubble:
    """Build one bubble from ``candidates`` under ``config``; ``variant=None`` uses the profile's.

    ``stats`` are the chunk index's term statistics for ``relevance = "bm25"``
    (``esbubble.store.retrieve`` fetches them with the candidates); without
    them the candidate set's own document frequencies are used.
    """
    check_query_text(query)
    _check_unique(candidates)
    digest = query_hash(query, query_key)
    chosen: Variant = variant or config.bubble.variant
    switches = VARIANTS[chosen]
    params = config.bubble
    scoring = score_candidates(
        query, candidates, config, use_priors=switches.priors, stats=stats, engine_order=switches.engine_order
    )
    scored = scoring.scored
    if switches.engine_order:
        scored.sort(key=engine_order_key)
    selection = select(
        scored, params, switches, config.buckets.shares, scoring.facets, proximity=scoring.proximity
    )
    run = RunContext(
        run_id=run_id,
        timestamp=json_time(now),
        query_digest=digest,
        variant=chosen,
        delta=params.delta,
        batch_id=batch_id,
    )
    trace = trace_records(selection.decisions, run, scoring.facets)
    chosen_decisions = sorted(
        (d for d in selection.decisions if d.selection_order is not None),
        key=lambda d: d.selection_order or 0,
    )
    return Bubble(
        run_id=run_id,
        query=query,
        variant=chosen,
        budget=params.token_budget,
        delta=params.delta,
        selected=[_selected_chunk(d) for d in chosen_decisions],
        trace=trace,
        batch_id=batch_id,
        query_redacted=redact_query,
        query_hash=digest,
        theta=scoring.theta,
        bucket_caps=selection.bucket_caps,
        bucket_shares=selection.bucket_shares,
        term_stats=scoring.stats.to_json() if scoring.stats is not None else None,
        pool=selection.pool,
    )
