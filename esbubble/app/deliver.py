"""Delivery over a Store: bubble → repair → expand → assemble, each stage optional and traced.

The decisions are made by the pure modules (``repair``, ``expand``,
``assemble``); this module only fetches what they need — neighbour windows in
one ``msearch``, the gap micro-queries in another — and records the result.
Repair runs before expansion: it fixes *which* evidence is in the bubble under
the bubble's own budget, then expansion spends what is left on context
around that evidence.

``evaluate_options`` and ``evaluate_delivery`` are the hooks ``esbubble eval``
uses to measure the effect of windows, repair and assembly on gold recall and
tokens.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from esbubble.app.evaluate import CaseLike
from esbubble.app.meaning import Meaning
from esbubble.app.runner import RunOptions, RunResult, run_bubble
from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.budget import BudgetRules
from esbubble.core.manifest import build_manifest
from esbubble.core.metrics import gold_recall
from esbubble.delivery.assemble import AssembledPrompt, assemble, check_room
from esbubble.delivery.expand import Expansion, plan_expansion
from esbubble.delivery.repair import (
    RepairResult,
    facets_of,
    micro_queries,
    micro_query_config,
    plan_repair,
    uncovered,
)
from esbubble.errors import ConfigError
from esbubble.models import Bubble, Candidate, Chunk, RunManifest
from esbubble.store.audit import TraceWriter, WriteResult
from esbubble.store.chunks import NeighbourRequest, neighbours
from esbubble.store.connection import Store
from esbubble.store.query import RetrievalFilters
from esbubble.store.retrieve import retrieve_many


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Delivery(_Model):
    """What the delivery stages made of one bubble."""

    bubble: Bubble
    repair: RepairResult | None
    expansion: Expansion
    prompt: AssembledPrompt | None
    timings_ms: dict[str, float]

    @property
    def chunk_ids(self) -> list[str]:
        """Every delivered chunk, passage by passage."""
        return self.expansion.chunk_ids

    @property
    def chunks(self) -> list[Chunk]:
        """Every delivered chunk, passage by passage."""
        return [c for p in self.expansion.passages for c in p.chunks]

    @property
    def tokens_used(self) -> int:
        return self.expansion.tokens_used


class DeliveryRun(_Model):
    """One recorded run with delivery: the bubble run, the delivery and the final trace write."""

    run: RunResult
    delivery: Delivery
    manifest: RunManifest
    write_result: WriteResult


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)


def neighbour_requests(bubble: Bubble, config: BubbleConfig) -> list[NeighbourRequest]:
    """The windows expansion needs, one per selected chunk (pure).

    Windows are fetched across sections, so the planner can record a refused
    section crossing instead of never seeing the neighbour.
    """
    params = config.expand
    requests = []
    for selected in bubble.selected:
        chunk = selected.chunk
        if params.mode == "window":
            radius = params.radius.get(chunk.source_type, 0)
            if radius == 0:
                continue
            requests.append(
                NeighbourRequest(
                    doc_id=chunk.doc_id, lo=max(0, chunk.position - radius), hi=chunk.position + radius
                )
            )
        elif params.mode == "parent" and chunk.parent_id is not None:
            span = params.parent_span
            requests.append(
                NeighbourRequest(
                    doc_id=chunk.doc_id,
                    lo=max(0, chunk.position - span),
                    hi=chunk.position + span,
                    section=chunk.section,
                )
            )
    return requests


def expand_bubble(store: Store, bubble: Bubble, config: BubbleConfig) -> Expansion:
    """Fetch the neighbour windows (one msearch) and plan the expansion."""
    requests = neighbour_requests(bubble, config) if config.expand.mode != "off" else []
    return plan_expansion(bubble, neighbours(store, requests), config.expand, BudgetRules.of(config))


def repair_bubble(
    store: Store, bubble: Bubble, config: BubbleConfig, filters: RetrievalFilters | None = None
) -> RepairResult:
    """Run one micro-query per uncovered facet (one msearch), then plan the swaps."""
    gaps = uncovered(facets_of(bubble.query, config), [s.chunk for s in bubble.selected])
    pool: list[Candidate] = []
    if gaps and bubble.selected:
        micro = micro_query_config(config)
        for retrieval in retrieve_many(store, micro_queries(gaps), micro, filters):
            pool.extend(retrieval.candidates)
    return plan_repair(bubble, pool, config)


def deliver(
    store: Store, bubble: Bubble, config: BubbleConfig, *, filters: RetrievalFilters | None = None
) -> Delivery:
    """Repair (if enabled), expand (if a mode is set), assemble (if enabled)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    repaired = repair_bubble(store, bubble, config, filters) if config.repair.enabled else None
    current = repaired.bubble if repaired is not None else bubble
    timings["repair"] = _ms(started)
    stage = time.perf_counter()
    expansion = expand_bubble(store, current, config)
    timings["expand"] = _ms(stage)
    stage = time.perf_counter()
    prompt = (
        assemble(bubble.query, expansion.passages, config.assemble, config.bubble.encoding)
        if config.assemble.enabled
        else None
    )
    timings["assemble"] = _ms(stage)
    return Delivery(
        bubble=expansion.bubble, repair=repaired, expansion=expansion, prompt=prompt, timings_ms=timings
    )


def run_delivery(
    store: Store,
    query: str,
    config: BubbleConfig,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen, so one shared default is safe
    *,
    writer: TraceWriter | None = None,
) -> DeliveryRun:
    """One recorded run with delivery; the final trace replaces the bubble's (same derived ids).

    A prompt with no room for context is refused first, before a run or its trace is recorded.
    """
    if config.assemble.enabled:
        check_room(query, config.assemble, config.bubble.encoding)
    audit = writer if writer is not None else TraceWriter.for_store(store)
    run = run_bubble(store, query, config, options, writer=audit)
    delivery = deliver(store, run.bubble, config, filters=options.filters)
    manifest = build_manifest(
        delivery.bubble,
        config,
        index=run.manifest.index,
        engine=run.manifest.engine,
        request_body=run.manifest.request_body,
        index_doc_count=run.manifest.index_doc_count,
        timings_ms={**run.manifest.timings_ms, **delivery.timings_ms},
        now=run.manifest.timestamp,
    )
    return DeliveryRun(
        run=run,
        delivery=delivery,
        manifest=manifest,
        write_result=audit.write(manifest, delivery.bubble.trace),
    )


def evaluate_options(
    config: BubbleConfig,
    *,
    window: bool = False,
    parent: bool = False,
    repair: bool = False,
    assemble: bool = False,
) -> BubbleConfig:
    """The profile with the delivery stages switched on that ``esbubble eval`` options ask for."""
    if window and parent:
        raise ConfigError("--window and --parent are exclusive", hint="choose one expansion mode")
    if window or parent:
        config = config.with_section(
            "expand", {"mode": "window" if window else "parent"}, source="eval options"
        )
    if repair and not config.repair.enabled:
        config = config.with_section("repair", {"enabled": True}, source="eval options")
    if assemble and not config.assemble.enabled:
        config = config.with_section("assemble", {"enabled": True}, source="eval options")
    return config


class DeliveryRow(_Model):
    """One query: the bubble alone versus after delivery."""

    id: str
    bubble_tokens: int
    delivered_tokens: int
    prompt_tokens: int | None
    bubble_recall: float | None
    delivered_recall: float | None
    swaps: int
    neighbours_added: int
    dropped_passages: int
    flags: int


class DeliveryEvaluation(_Model):
    """Per-query rows and their means (recall averaged over queries with gold labels)."""

    rows: list[DeliveryRow]
    mean_bubble_tokens: float
    mean_delivered_tokens: float
    mean_prompt_tokens: float | None
    mean_bubble_recall: float | None
    mean_delivered_recall: float | None
    swaps: int
    neighbours_added: int


def _mean(values: Sequence[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.fmean(present) if present else None


def evaluate_delivery(
    store: Store,
    cases: Sequence[CaseLike],
    config: BubbleConfig,
    *,
    now: datetime,
    filters: RetrievalFilters | None = None,
    on_done: Callable[[int], None] | None = None,
) -> DeliveryEvaluation:
    """Build each query's bubble (one msearch for all), deliver it, and compare tokens and gold recall.

    ``on_done(1)`` is called after each query (for a progress bar).
    """
    retrievals = Meaning().attach(
        retrieve_many(store, [case.query for case in cases], config, filters), config.bubble
    )
    rows = []
    for case, retrieval in zip(cases, retrievals, strict=True):
        bubble = build_bubble(
            case.query,
            retrieval.candidates,
            config,
            run_id=f"eval-delivery-{case.id}",
            now=now,
            stats=retrieval.term_stats,
        )
        delivery = deliver(store, bubble, config, filters=filters)
        prompt = delivery.prompt
        rows.append(
            DeliveryRow(
                id=case.id,
                bubble_tokens=bubble.tokens_used,
                delivered_tokens=delivery.tokens_used,
                prompt_tokens=prompt.metadata.tokens.total if prompt is not None else None,
                bubble_recall=gold_recall([s.chunk for s in bubble.selected], case.gold, case.evidence),
                delivered_recall=gold_recall(delivery.chunks, case.gold, case.evidence),
                swaps=len(delivery.repair.events) if delivery.repair is not None else 0,
                neighbours_added=sum(1 for e in delivery.expansion.events if e.added),
                dropped_passages=len(prompt.metadata.dropped) if prompt is not None else 0,
                flags=len(prompt.metadata.flags) if prompt is not None else 0,
            )
        )
        if on_done is not None:
            on_done(1)
    return DeliveryEvaluation(
        rows=rows,
        mean_bubble_tokens=_mean([r.bubble_tokens for r in rows]) or 0.0,
        mean_delivered_tokens=_mean([r.delivered_tokens for r in rows]) or 0.0,
        mean_prompt_tokens=_mean([r.prompt_tokens for r in rows]),
        mean_bubble_recall=_mean([r.bubble_recall for r in rows]),
        mean_delivered_recall=_mean([r.delivered_recall for r in rows]),
        swaps=sum(r.swaps for r in rows),
        neighbours_added=sum(r.neighbours_added for r in rows),
    )
