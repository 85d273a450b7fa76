"""The paper's tables over a query set: every variant, token-matched, a δ sweep and a budget sweep.

Retrieval happens once per query (``retrieve_many``); every variant, the
token-matched re-runs, each δ of the sweep and each budget of the budget sweep
reuse those candidates, so the comparison isolates selection from retrieval.
``evaluate_cases`` is the pure part (candidates in, tables out); ``evaluate``
adds the retrieval.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from esbubble.app.report import Table
from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.metrics import BubbleMetrics, GoldItems, aggregate, bubble_metrics
from esbubble.core.relevance import TermStats
from esbubble.core.variants import token_matched_config
from esbubble.errors import InputError
from esbubble.models import REJECTION_REASONS, Bubble, Candidate, FinalReason, Variant

if TYPE_CHECKING:
    from esbubble.app.meaning import Meaning
    from esbubble.store.connection import Store
    from esbubble.store.query import RetrievalFilters

DELTA_SWEEP: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
# The peer baseline first (the engine's order cut at the budget), then the paper's variants.
VARIANT_ORDER: tuple[Variant, ...] = ("engine_topk", "flat_topk", "structure", "diversity", "full")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseLike(Protocol):
    """What evaluation needs from a query-set entry (``esbubble.queryset.QueryCase`` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def query(self) -> str: ...
    @property
    def category(self) -> str | None: ...
    @property
    def gold(self) -> Sequence[str]: ...
    @property
    def evidence(self) -> Sequence[str]: ...


class EvalCase(_Model):
    """One query of the set with the candidates retrieved for it."""

    id: str
    query: str
    category: str | None = None
    gold: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    candidates: list[Candidate]
    term_stats: dict[str, Any] | None = Field(
        default=None, description="the chunk index's term statistics for bm25 (TermStats.to_json)"
    )

    def bubble(self, config: BubbleConfig, variant: Variant, *, run_id: str, now: datetime) -> Bubble:
        """The bubble ``variant`` builds from this query's candidates under ``config``."""
        stats = TermStats.from_json(self.term_stats) if self.term_stats is not None else None
        return build_bubble(
            self.query, self.candidates, config, run_id=run_id, now=now, variant=variant, stats=stats
        )


class VariantRow(_Model):
    """One row of Table 1 / 1b: means per query."""

    variant: Variant
    token_budget: float
    tokens_used: float
    unique_sections: float
    avg_overlap: float
    selected: float
    gold_recall: float | None


class DeltaRow(_Model):
    """One point of the δ sweep (full variant), means per query."""

    delta: float
    passed_redundancy: float
    tokens_used: float
    unique_sections: float
    avg_overlap: float


class QueryRow(_Model):
    """Per query and variant: what the bubble used, for drilling into a mean."""

    id: str
    category: str | None
    variant: Variant
    tokens_used: int
    unique_sections: int
    gold_recall: float | None


class BaselineLoss(_Model):
    """A gold item the engine's own order (``engine_topk``) holds at the fixed budget and ``full`` does
    not: the chunk the baseline holds it in, and why ``full`` left that chunk out."""

    id: str = Field(description="the query's id")
    category: str | None
    item: str = Field(description="the gold chunk id, or the evidence phrase as compared (case-folded)")
    chunk_id: str = Field(description="the best-ranked chunk of the baseline's bubble that holds the item")
    es_rank: int
    tokens: int
    reason: FinalReason = Field(description="full's final_reason for that chunk (its trace record's)")


class HeadToHead(_Model):
    """``full`` against the engine's own order cut at the budget (``engine_topk``), at the fixed budget:
    whether the bubble beats doing nothing, query by query and item by item, and where it does not."""

    queries: dict[str, int] = Field(
        description="queries with gold, by which bubble has the higher gold recall: 'full', 'same',"
        " 'engine_topk'"
    )
    items: dict[str, int] = Field(
        description="gold items by which bubbles hold them: 'full' only, 'both', 'engine_topk' only (items"
        " neither holds are left out: the retrieval and engine-rank tables count them)"
    )
    losses: list[BaselineLoss] = Field(description="every 'engine_topk'-only item, in query order")


HEAD_TO_HEAD_KEYS: tuple[str, ...] = ("full", "same", "engine_topk")
HEAD_TO_HEAD_ITEM_KEYS: tuple[str, ...] = ("full", "both", "engine_topk")


def baseline_losses(
    case: EvalCase, items: GoldItems, baseline: Bubble, full: Bubble, held: Sequence[bool]
) -> list[BaselineLoss]:
    """The gold items of ``case`` that ``baseline`` holds and ``full`` does not (``held``: per item,
    whether ``full``'s bubble holds it), each with the best-ranked chunk of ``baseline`` holding it and
    ``full``'s final reason for that chunk."""
    records = {record["chunk_id"]: record for record in full.trace}
    theirs = sorted(
        (chosen.chunk for chosen in baseline.selected), key=lambda chunk: records[chunk.chunk_id]["es_rank"]
    )
    losses = []
    for index, label in enumerate(items.labels):
        if held[index]:
            continue
        holder = next((chunk for chunk in theirs if items.held_by([chunk])[index]), None)
        if holder is None:
            continue
        record = records[holder.chunk_id]
        losses.append(
            BaselineLoss(
                id=case.id, category=case.category, item=label, chunk_id=holder.chunk_id,
                es_rank=record["es_rank"], tokens=holder.token_count, reason=record["final_reason"],
            )
        )  # fmt: skip
    return losses


class Evaluation(_Model):
    """The paper's tables over one query set."""

    queries: int
    budget: int
    delta: float
    table1: list[VariantRow] = Field(description="fixed budget")
    table1b: list[VariantRow] = Field(description="token-matched: each query's budget = what full used")
    table2: dict[str, dict[str, float]] = Field(description="variant -> section -> mean tokens per query")
    table7: dict[str, dict[str, float]] = Field(
        description="variant -> rejection reason -> share of rejections"
    )
    recall_by_category: dict[str, dict[str, float]] = Field(
        description="variant -> category -> mean gold recall (queries with gold only)"
    )
    candidates: float = Field(default=0.0, description="mean number of candidates retrieved per query")
    candidate_recall: float | None = Field(
        default=None,
        description=(
            "mean gold recall of all the retrieved candidates (queries with gold only): what retrieval put"
            " within reach, the ceiling of every variant"
        ),
    )
    candidate_recall_by_category: dict[str, float] = Field(
        default_factory=dict, description="category -> candidate_recall (queries with gold only)"
    )
    gold_by_rank: dict[str, int] = Field(
        default_factory=dict,
        description=(
            "engine-rank band -> gold items whose best-ranked holder among the candidates falls in it,"
            " over all queries (items no candidate holds are left out)"
        ),
    )
    recall_by_rank: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description=(
            "variant -> engine-rank band -> share of those gold items its bubble holds at the fixed"
            " budget: whether a variant keeps what the engine ranks first"
        ),
    )
    delta_sweep: list[DeltaRow]
    per_query: list[QueryRow]
    head_to_head: HeadToHead | None = Field(
        default=None, description="full against engine_topk at the fixed budget (None: no query has gold)"
    )
    budget_sweep: list[VariantRow] = Field(
        default_factory=list,
        description=(
            "Table 1's row of every variant at each budget asked for (``esbubble eval --sweep``), on the"
            " same candidates: where, between a tight and a loose budget, a variant gains or loses"
            " against the baseline"
        ),
    )


# The bands of the engine's rank a gold item's best holder is counted under: (label, last rank; None: no
# end). The first is what a tight budget's top-K holds, the last what only a re-ranking reaches.
RANK_BANDS: tuple[tuple[str, int | None], ...] = (("1–3", 3), ("4–10", 10), ("11–30", 30), ("31+", None))


def rank_band(rank: int) -> str:
    """The label of the band (``RANK_BANDS``) the engine's ``rank`` falls in."""
    return next(label for label, last in RANK_BANDS if last is None or rank <= last)


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _category(case: EvalCase) -> str:
    """The category a query's recall is grouped under in the per-category tables."""
    return case.category or "uncategorised"


def _row(variant: Variant, budgets: Sequence[int], metrics: Sequence[BubbleMetrics]) -> VariantRow:
    agg = aggregate(metrics)
    return VariantRow(
        variant=variant,
        token_budget=_mean([float(b) for b in budgets]),
        tokens_used=agg.tokens_used,
        unique_sections=agg.unique_sections,
        avg_overlap=agg.avg_overlap,
        selected=agg.selected,
        gold_recall=agg.gold_recall,
    )


def _passed_redundancy(bubble: Bubble) -> int:
    """Candidates whose first-pass redundancy gate held (the quantity Figure 3 plots)."""
    return sum(
        1
        for record in bubble.trace
        if any(g["gate"] == "redundancy" and g["passed"] for g in record["step_details"]["gates"])
    )


def sweep_configs(config: BubbleConfig, sweep: Sequence[int]) -> dict[int, BubbleConfig]:
    """The profile at each budget of a sweep, in budget order, each validated like a profile (a budget
    it refuses is a ``ConfigError`` before anything runs)."""
    return {b: config.with_overrides(token_budget=b) for b in sorted(set(sweep))}


def evaluate_cases(
    cases: Sequence[EvalCase],
    config: BubbleConfig,
    *,
    now: datetime,
    sweep: Sequence[int] = (),
    on_done: Callable[[int], None] | None = None,
) -> Evaluation:
    """All tables from already-retrieved candidates; pure and deterministic.

    ``sweep``: budgets at which every variant also runs (``budget_sweep``; the configured budget's
    bubbles are Table 1's). ``on_done(1)`` is called after each query's variants (for a progress bar).
    """
    if not cases:
        raise InputError("the query set is empty", hint="add at least one {id, query} line")
    budget = config.bubble.token_budget
    sweep_at = sweep_configs(config, sweep)
    swept = {b: cfg for b, cfg in sweep_at.items() if b != budget}

    def bubble(case: EvalCase, cfg: BubbleConfig, variant: Variant, tag: str) -> Bubble:
        return case.bubble(cfg, variant, run_id=f"eval-{tag}-{variant}-{case.id}", now=now)

    fixed: dict[Variant, list[BubbleMetrics]] = {v: [] for v in VARIANT_ORDER}
    matched: dict[Variant, list[BubbleMetrics]] = {v: [] for v in VARIANT_ORDER}
    matched_budgets: list[int] = []
    per_query: list[QueryRow] = []
    at_budget: dict[tuple[int, Variant], list[BubbleMetrics]] = {
        (b, v): [] for b in swept for v in VARIANT_ORDER
    }
    gold_by_rank: dict[str, int] = dict.fromkeys((label for label, _ in RANK_BANDS), 0)
    held_by_rank: dict[Variant, dict[str, int]] = {v: dict.fromkeys(gold_by_rank, 0) for v in VARIANT_ORDER}
    reach: dict[str, list[float]] = {}  # per category, each query's gold recall of all its candidates
    versus = dict.fromkeys(HEAD_TO_HEAD_KEYS, 0)  # queries with gold, by which bubble recalls more
    versus_items = dict.fromkeys(HEAD_TO_HEAD_ITEM_KEYS, 0)
    losses: list[BaselineLoss] = []
    for case in cases:
        items = GoldItems.of(case.gold, case.evidence)
        ranks = items.engine_ranks(case.candidates)
        if len(items):  # an item some candidate holds has a rank
            reach.setdefault(_category(case), []).append(sum(r is not None for r in ranks) / len(items))
        bands = [None if r is None else rank_band(r) for r in ranks]
        for band in bands:
            if band is not None:
                gold_by_rank[band] += 1
        at_fixed: dict[Variant, tuple[Bubble, tuple[bool, ...]]] = {}
        for variant in VARIANT_ORDER:
            fixed_bubble = bubble(case, config, variant, "fixed")
            m = bubble_metrics(fixed_bubble, case.gold, case.evidence)
            fixed[variant].append(m)
            holds = items.held_by(chosen.chunk for chosen in fixed_bubble.selected)
            at_fixed[variant] = fixed_bubble, holds
            for band, held in zip(bands, holds, strict=True):
                if band is not None and held:
                    held_by_rank[variant][band] += 1
            per_query.append(
                QueryRow(
                    id=case.id,
                    category=case.category,
                    variant=variant,
                    tokens_used=m.tokens_used,
                    unique_sections=m.unique_sections,
                    gold_recall=m.gold_recall,
                )
            )
        if len(items):
            (baseline, by_baseline), (full, by_full) = at_fixed["engine_topk"], at_fixed["full"]
            ahead = sum(by_full) - sum(by_baseline)
            versus["full" if ahead > 0 else "engine_topk" if ahead < 0 else "same"] += 1
            for mine, theirs in zip(by_full, by_baseline, strict=True):
                if mine or theirs:
                    versus_items["both" if mine and theirs else "full" if mine else "engine_topk"] += 1
            losses += baseline_losses(case, items, baseline, full, by_full)
        matched_cfg = token_matched_config(config, fixed["full"][-1].tokens_used)
        matched_budgets.append(matched_cfg.bubble.token_budget)
        for variant in VARIANT_ORDER:
            matched_bubble = bubble(case, matched_cfg, variant, "matched")
            matched[variant].append(bubble_metrics(matched_bubble, case.gold, case.evidence))
        for swept_budget, swept_cfg in swept.items():
            for variant in VARIANT_ORDER:
                swept_bubble = bubble(case, swept_cfg, variant, f"budget{swept_budget}")
                at_budget[swept_budget, variant].append(
                    bubble_metrics(swept_bubble, case.gold, case.evidence)
                )
        if on_done is not None:
            on_done(1)

    table2: dict[str, dict[str, float]] = {}
    table7: dict[str, dict[str, float]] = {}
    recall: dict[str, dict[str, float]] = {}
    for variant in VARIANT_ORDER:
        sections: dict[str, int] = {}
        for m in fixed[variant]:
            for section, tokens in m.tokens_per_section.items():
                sections[section] = sections.get(section, 0) + tokens
        table2[variant] = {s: t / len(cases) for s, t in sorted(sections.items())}
        shares = aggregate(fixed[variant]).rejected_share
        table7[variant] = {reason: shares.get(reason, 0.0) for reason in REJECTION_REASONS}
        by_category: dict[str, list[float]] = {}
        for case, m in zip(cases, fixed[variant], strict=True):
            if m.gold_recall is not None:
                by_category.setdefault(_category(case), []).append(m.gold_recall)
        recall[variant] = {c: _mean(v) for c, v in sorted(by_category.items())}

    delta_rows = []
    for delta in DELTA_SWEEP:
        cfg = config.with_overrides(overlap_threshold=delta)
        bubbles = [bubble(case, cfg, "full", f"delta{delta:g}") for case in cases]
        metrics = [bubble_metrics(b) for b in bubbles]
        delta_rows.append(
            DeltaRow(
                delta=delta,
                passed_redundancy=_mean([float(_passed_redundancy(b)) for b in bubbles]),
                tokens_used=_mean([float(m.tokens_used) for m in metrics]),
                unique_sections=_mean([float(m.unique_sections) for m in metrics]),
                avg_overlap=_mean([m.avg_overlap for m in metrics]),
            )
        )

    present = {band: n for band, n in gold_by_rank.items() if n}  # the bands some gold item falls in
    by_rank = {v: {band: kept[band] / n for band, n in present.items()} for v, kept in held_by_rank.items()}
    budget_sweep = [
        _row(v, [b] * len(cases), fixed[v] if b == budget else at_budget[b, v])
        for b in sweep_at
        for v in VARIANT_ORDER
    ]
    return Evaluation(
        queries=len(cases),
        budget=budget,
        delta=config.bubble.delta,
        table1=[_row(v, [budget] * len(cases), fixed[v]) for v in VARIANT_ORDER],
        table1b=[_row(v, matched_budgets, matched[v]) for v in VARIANT_ORDER],
        table2=table2,
        table7=table7,
        recall_by_category=recall,
        candidates=_mean([float(len(case.candidates)) for case in cases]),
        candidate_recall=_mean([r for per in reach.values() for r in per]) if reach else None,
        candidate_recall_by_category={c: _mean(v) for c, v in sorted(reach.items())},
        gold_by_rank=present,
        recall_by_rank=by_rank,
        delta_sweep=delta_rows,
        per_query=per_query,
        head_to_head=HeadToHead(queries=versus, items=versus_items, losses=losses) if reach else None,
        budget_sweep=budget_sweep,
    )


def retrieve_cases(
    store: Store,
    cases: Sequence[CaseLike],
    config: BubbleConfig,
    filters: RetrievalFilters | None = None,
    meaning: Meaning | None = None,
) -> list[EvalCase]:
    """Each query with its candidates (with their similarities, ``app.meaning``) and term statistics,
    retrieved in one msearch: what every table is computed from, and all a replay of selection needs
    (``scripts/replay_selection.py``)."""
    from esbubble.app.meaning import Meaning
    from esbubble.store.retrieve import retrieve_many

    found = retrieve_many(store, [case.query for case in cases], config, filters)
    retrievals = (meaning or Meaning()).attach(found, config.bubble)
    return [
        EvalCase(
            id=case.id,
            query=case.query,
            category=case.category,
            gold=list(case.gold),
            evidence=list(case.evidence),
            candidates=list(retrieval.candidates),
            term_stats=retrieval.term_stats.to_json() if retrieval.term_stats is not None else None,
        )
        for case, retrieval in zip(cases, retrievals, strict=True)
    ]


def evaluate(
    store: Store,
    cases: Sequence[CaseLike],
    config: BubbleConfig,
    *,
    now: datetime,
    filters: RetrievalFilters | None = None,
    sweep: Sequence[int] = (),
    on_done: Callable[[int], None] | None = None,
) -> Evaluation:
    """Retrieve once per query (one msearch, ``retrieve_cases``), then compute every table from those
    candidates (the budget sweep's too: retrieval does not depend on the budget).

    ``on_done(1)`` is called after each query is evaluated (for a progress bar).
    """
    return evaluate_cases(
        retrieve_cases(store, cases, config, filters), config, now=now, sweep=sweep, on_done=on_done
    )


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def head_to_head_tables(versus: HeadToHead) -> list[Table]:
    """``full`` against ``engine_topk`` at the fixed budget: the counts, then every gold item only the
    baseline holds, with the chunk it is in and ``full``'s reason for leaving that chunk out."""
    counts = Table(
        title="full against engine_topk (the engine's order cut at the budget), fixed budget",
        columns=["count", "full ahead", "tied", "engine_topk ahead"],
        rows=[
            ["queries, by gold recall", *(str(versus.queries[k]) for k in HEAD_TO_HEAD_KEYS)],
            ["gold items, by who holds them", *(str(versus.items[k]) for k in HEAD_TO_HEAD_ITEM_KEYS)],
        ],
    )
    if not versus.losses:
        return [counts]
    losses = Table(
        title="Gold only engine_topk holds — the chunk it is in, and why full left that chunk out",
        columns=["query", "gold item", "chunk", "engine rank", "tokens", "full's reason"],
        rows=[
            [loss.id, _clip(loss.item), loss.chunk_id, str(loss.es_rank), str(loss.tokens), loss.reason]
            for loss in versus.losses
        ],
    )
    return [counts, losses]


def evaluation_tables(evaluation: Evaluation) -> list[Table]:
    """The evaluation as printable tables (CLI and HTML report share them)."""
    variants = [row.variant for row in evaluation.table1]
    header = ["variant", "budget", "tokens used", "unique sections", "avg overlap", "selected", "gold recall"]

    def variant_rows(rows: Sequence[VariantRow]) -> list[list[str]]:
        return [
            [
                r.variant,
                _num(r.token_budget, 0),
                _num(r.tokens_used),
                _num(r.unique_sections, 2),
                _num(r.avg_overlap, 2),
                _num(r.selected, 2),
                _num(r.gold_recall, 2),
            ]
            for r in rows
        ]

    sections = sorted({s for per in evaluation.table2.values() for s in per})
    swept = sorted({row.token_budget for row in evaluation.budget_sweep})
    at = {(row.variant, row.token_budget): row for row in evaluation.budget_sweep}
    categories = sorted({c for per in evaluation.recall_by_category.values() for c in per})
    n = evaluation.queries
    recall = evaluation.recall_by_category
    return [
        Table(title=f"Table 1 — fixed budget ({n} queries, means)", columns=header,
              rows=variant_rows(evaluation.table1)),
        Table(title="Table 1b — token-matched (budget = tokens full used)", columns=header,
              rows=variant_rows(evaluation.table1b)),
        Table(
            # One row per section: a corpus has more sections than there are variants.
            title="Table 2 — tokens per section (mean per query)",
            columns=["section", *variants],
            rows=[[s, *(_num(evaluation.table2[v].get(s, 0.0)) for v in variants)] for s in sections],
        ),
        Table(
            title="Table 7 — rejection reasons (share of rejected candidates)",
            columns=["variant", *REJECTION_REASONS],
            rows=[[v, *(f"{evaluation.table7[v][r]:.0%}" for r in REJECTION_REASONS)] for v in variants],
        ),
        Table(
            title="Gold recall per category",
            columns=["variant", *categories],
            rows=[[v, *(_num(recall[v].get(c), 2) for c in categories)] for v in variants],
        ),
        Table(
            # What no selection can beat: the evidence the candidates hold at all.
            title="Retrieval — gold recall of all the candidates (every variant's ceiling)",
            columns=["candidates per query", "gold recall", *categories],
            rows=[
                [_num(evaluation.candidates, 1), _num(evaluation.candidate_recall, 2),
                 *(_num(evaluation.candidate_recall_by_category.get(c), 2) for c in categories)]
            ],
        ),
        *([Table(
            # Whether a variant keeps what the engine ranks first, and what it finds further down.
            title="Gold by engine rank — share held, by the engine's rank of its best candidate",
            columns=["variant", *(f"{band} ({n})" for band, n in evaluation.gold_by_rank.items())],
            rows=[[v, *(_num(evaluation.recall_by_rank[v][band], 2) for band in evaluation.gold_by_rank)]
                  for v in variants],
        )] if evaluation.gold_by_rank else []),
        *(head_to_head_tables(evaluation.head_to_head) if evaluation.head_to_head else []),
        *([Table(
            # Whether the bubble beats the engine's own order between a tight and a loose budget.
            title="Budget sweep — gold recall (tokens used) per budget, same candidates",
            columns=["variant", *(_num(b, 0) for b in swept)],
            rows=[
                [v, *(f"{_num(at[v, b].gold_recall, 2)} ({_num(at[v, b].tokens_used, 0)})" for b in swept)]
                for v in variants
            ],
        )] if swept else []),
        Table(
            title="Figure 3 — δ sweep (full variant, means per query)",
            columns=["δ", "passing redundancy gate", "tokens used", "unique sections", "avg overlap"],
            rows=[
                [f"{d.delta:g}", _num(d.passed_redundancy), _num(d.tokens_used), _num(d.unique_sections, 2),
                 _num(d.avg_overlap, 2)]
                for d in evaluation.delta_sweep
            ],
        ),
    ]  # fmt: skip
