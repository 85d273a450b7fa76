"""Greedy selection under the gates, the slack policies, and the trace records.

Every candidate is decided once. Under ``selection = "score"`` (the paper)
candidates are considered in descending score, ties by chunk_id. Under
``selection = "coverage"`` the next candidate is the one with the best
marginal gain now: the weight of the query facets it matches, a facet the
bubble already covers ``n`` earning ``covered_weight ** n`` of its weight (a
chunk covers a facet in proportion to how strongly it matches it), with its
prior, times its length penalty. Gains only fall as the
bubble grows, so a lazy greedy (a heap of stale upper bounds, re-evaluated on
top) finds the same order as recomputing every gain at every step. Every
gate is evaluated for every candidate; the first failing gate gives the
reason. Under ``global_pool`` a second pass lets the candidates that only a
bucket budget stopped spend what the buckets left unspent; under ``strict``
nothing is re-considered.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple

from esbubble.config import BubbleParams
from esbubble.gates import GATE_STAGES, gate_result, overlap, reason_of
from esbubble.models import (
    GATE_REASONS,
    FinalReason,
    GateName,
    GateResult,
    StepDetails,
    TermMatch,
    TraceRecord,
    Variant,
)
from esbubble.relevance import Facet
from esbubble.score import ScoredCandidate, combine
from esbubble.variants import VariantSwitches

# Shares are floats; ρ_b·T_B is rounded down to whole tokens after this tolerance,
# so 0.6 · 1000 is 600 even when the float product is 599.9999999.
_SHARE_EPSILON = 1e-9


class Decision(NamedTuple):
    """What selection decided about one candidate, with the numbers at decision time.

    Like ``ScoredCandidate``, an immutable intermediate on the hot path (a
    named tuple: the cheapest immutable value to build); the record that
    leaves the core is the ``TraceRecord``.
    """

    scored: ScoredCandidate
    rank: int
    gates: list[GateResult]
    overlap: float
    budget_remaining: float
    bucket_remaining: float
    selection_order: int | None
    final_reason: FinalReason
    second_pass: Sequence[GateResult] = ()
    pool_remaining: float | None = None
    gain: float = 0.0
    covered: tuple[float, ...] = ()  # per facet, how much of it the bubble covered (coverage order)

    @property
    def selected(self) -> bool:
        return self.selection_order is not None


@dataclass(frozen=True, slots=True)
class Selection:
    """All decisions in rank order, plus the bucket caps and the slack pool that applied."""

    decisions: list[Decision]
    bucket_caps: dict[str, int]
    bucket_shares: dict[str, float]
    pool: int | None


def resolve_shares(
    present: Iterable[str],
    shares: Mapping[str, float],
    mass: Mapping[str, float] | None = None,
    floor: float = 1.0,
    *,
    mode: Literal["pool", "demand", "equal"] = "equal",
) -> dict[str, float]:
    """ρ_b for every listed or present bucket.

    Listed buckets keep their share. Present buckets that are not listed get
    what the listed shares leave (``rest``):

    - ``pool``: each of them all of ``rest``, so they draw on one pool and only
      the global budget and the listed caps bound them (a share no profile
      asked for would only reject relevant chunks: Context Bubble sends what
      a section does not spend to a global slack pool);
    - ``equal``: ``rest`` split equally (the paper's homogeneous ρ);
    - ``demand``: ``floor`` of ``rest`` split equally, the rest in proportion to
      each bucket's relevance ``mass`` (``relevance_demand``; equally when no
      bucket has any).
    """
    resolved = dict(shares)
    unlisted = sorted({b for b in present if b not in shares})
    if not unlisted:
        return resolved
    rest = max(0.0, 1.0 - sum(shares.values()))
    if mode == "pool":
        return resolved | dict.fromkeys(unlisted, rest)
    if mode == "equal":
        floor = 1.0
    masses = {b: max(0.0, (mass or {}).get(b, 0.0)) for b in unlisted}
    total = sum(masses.values())
    for bucket in unlisted:
        proportional = masses[bucket] / total if total > 0 else 1.0 / len(unlisted)
        resolved[bucket] = rest * (floor / len(unlisted) + (1.0 - floor) * proportional)
    return resolved


def relevance_demand(
    scored: Sequence[ScoredCandidate], params: BubbleParams, order: Order, facet_count: int
) -> dict[str, float]:
    """Per bucket, the tokens its candidates would take if the budget were filled in the selection
    order with every relevant candidate (relevance above ``min_score``) that fits, no bucket capped:
    where the evidence is, in the unit the budget is spent in."""
    relevant = [c for c in scored if c.relevance > params.min_score]
    coverage = _Coverage(
        relevant, facet_count, params.covered_weight, multiplicative=params.relevance == "bm25"
    )
    demand: dict[str, float] = {}
    left = params.token_budget
    for candidate, _ in order(relevant, coverage):
        if candidate.tokens <= left:
            demand[candidate.bucket] = demand.get(candidate.bucket, 0.0) + candidate.tokens
            left -= candidate.tokens
            coverage.admit(candidate)
    return demand


def bucket_caps(shares: Mapping[str, float], budget: int) -> dict[str, int]:
    """ρ_b·T_B in whole tokens (token counts are integers, so rounding down changes no verdict)."""
    return {bucket: math.floor(share * budget + _SHARE_EPSILON) for bucket, share in sorted(shares.items())}


@dataclass
class _BubbleState:
    """The growing bubble: spent tokens, per-bucket spend, the union of words(B) and each chunk's words."""

    budget: int
    caps: dict[str, int]
    spent: int = 0
    count: int = 0
    bucket_spent: dict[str, int] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)
    chosen: list[frozenset[str]] = field(default_factory=list)

    def budget_remaining(self) -> float:
        return float(self.budget - self.spent)

    def bucket_remaining(self, bucket: str) -> float:
        return float(self.caps.get(bucket, 0) - self.bucket_spent.get(bucket, 0))

    def bucket_limit(self, scored: ScoredCandidate) -> float:
        return self.bucket_remaining(scored.bucket)

    def admit(self, scored: ScoredCandidate) -> int:
        self.spent += scored.tokens
        self.bucket_spent[scored.bucket] = self.bucket_spent.get(scored.bucket, 0) + scored.tokens
        self.words.update(scored.words)
        self.chosen.append(scored.words)
        self.count += 1
        return self.count


class _Gates:
    """The five gates of one run, in gate order.

    Gate results are immutable values and most repeat within a run (the same
    overlap, the same chunk size against the same remaining budget, the same
    chunk count), so each distinct verdict is built once and shared. Verdicts
    on the candidate's own values (its score, its overlap) repeat less often.
    """

    def __init__(self, params: BubbleParams, switches: VariantSwitches) -> None:
        self.params = params
        self.enabled: dict[GateName, bool] = {
            "relevance": switches.relevance_gate,
            "redundancy": switches.redundancy,
            "section_budget": switches.section_budgets,
            "global_budget": True,
            "max_chunks": switches.max_chunks,
        }
        self.verdicts: dict[tuple[GateName, float, float], GateResult] = {}

    def _shared(self, gate: GateName, value: float, limit: float) -> GateResult:
        key = (gate, value, limit)
        found = self.verdicts.get(key)
        if found is None:
            found = self.verdicts[key] = gate_result(gate, value, limit, enabled=self.enabled[gate])
        return found

    def relevance_value(self, scored: ScoredCandidate) -> float:
        """What the relevance gate measures: the score, or under bm25 without ``fill_with_priors`` the
        relevance alone — a chunk that matches no query facet cannot enter on its prior."""
        params = self.params
        if params.relevance == "bm25" and not params.fill_with_priors:
            return scored.relevance
        return scored.score_final

    def run(
        self, scored: ScoredCandidate, state: _BubbleState, section_limit: float
    ) -> tuple[list[GateResult], float, FinalReason]:
        """Every gate's result for ``scored`` now, the overlap, and the final reason (first failure wins)."""
        params = self.params
        if scored.novel is not None:  # overlap = "chunk": shared query words are not overlap
            shared = max((len(scored.novel.intersection(words)) for words in state.chosen), default=0)
            value = shared / len(scored.words) if scored.words else 0.0
        else:
            value = overlap(scored.words, state.words)
        tokens = float(scored.tokens)
        gates = [
            self._shared("relevance", self.relevance_value(scored), params.min_score),
            self._shared("redundancy", value, params.overlap_threshold),
            self._shared("section_budget", tokens, section_limit),
            self._shared("global_budget", tokens, state.budget_remaining()),
            self._shared("max_chunks", float(state.count), float(params.max_chunks)),
        ]
        return gates, value, reason_of(gates)


class _Coverage:
    """How much of each query facet the bubble covers, and each candidate's marginal gain given that.

    A chunk covers a facet in proportion to how strongly it matches it: its weight for the facet
    over the best weight any candidate has for it (a passing mention of "Source Code Form" covers
    little of it, the clause that defines it all of it). A facet covered ``n`` (a sum of such
    shares) earns ``covered_weight ** n`` of its weight: diminishing returns, so the fifth row of
    one table no longer outbids the first chunk on a facet nothing covers yet, and a definition is
    not shut out by the boilerplate that merely names its term.
    """

    def __init__(
        self,
        scored: Sequence[ScoredCandidate],
        facet_count: int,
        covered_weight: float,
        *,
        multiplicative: bool,
    ) -> None:
        self.covered = [0.0] * facet_count
        self.best = [0.0] * facet_count
        for candidate in scored:
            self.best = [max(b, w) for b, w in zip(self.best, candidate.facet_weights, strict=True)]
        self.covered_weight = covered_weight
        self.multiplicative = multiplicative

    def gain(self, scored: ScoredCandidate) -> float:
        """(the facet weights, a facet covered n at ``covered_weight ** n``, with the prior) · lp."""
        total = 0.0
        share = self.covered_weight
        for weight, covered in zip(scored.facet_weights, self.covered, strict=True):
            if weight:
                total += weight * share**covered if covered else weight
        return combine(total, scored.boost, multiplicative=self.multiplicative) * scored.len_penalty

    def snapshot(self) -> tuple[float, ...]:
        return tuple(self.covered)

    def admit(self, scored: ScoredCandidate) -> None:
        for index, weight in enumerate(scored.facet_weights):
            if weight:
                self.covered[index] += min(1.0, weight / self.best[index])


def _score_order(
    scored: Sequence[ScoredCandidate], coverage: _Coverage
) -> Iterator[tuple[ScoredCandidate, float]]:
    """The paper's order: as given (descending score), the gain being the score itself."""
    for candidate in scored:
        yield candidate, candidate.score_final


def _gain_order(
    scored: Sequence[ScoredCandidate], coverage: _Coverage
) -> Iterator[tuple[ScoredCandidate, float]]:
    """Best marginal gain first, re-evaluated lazily; ties by chunk_id. The caller admits between yields."""
    heap = [(-coverage.gain(c), c.chunk_id, i) for i, c in enumerate(scored)]
    heapq.heapify(heap)
    while heap:
        _, chunk_id, index = heapq.heappop(heap)
        candidate = scored[index]
        fresh = coverage.gain(candidate)
        if heap and (-fresh, chunk_id) > heap[0][:2]:
            heapq.heappush(heap, (-fresh, chunk_id, index))
            continue
        yield candidate, fresh


Order = Callable[[Sequence[ScoredCandidate], _Coverage], Iterator[tuple[ScoredCandidate, float]]]


def select(
    scored: Sequence[ScoredCandidate],
    params: BubbleParams,
    switches: VariantSwitches,
    shares: Mapping[str, float],
    facets: Sequence[Facet] = (),
) -> Selection:
    """Greedy selection over ``scored`` (given in score order, or engine order for ``engine_topk``)."""
    bm25 = params.relevance == "bm25"
    by_gain = params.selection == "coverage" and not switches.engine_order
    order: Order = _gain_order if by_gain else _score_order
    present = {s.bucket for s in scored}
    # The demand pass is a whole extra greedy run: only worth it when some bucket's share depends on it.
    mode = params.unlisted_mode
    needs_demand = mode == "demand" and not present.issubset(shares)
    mass = relevance_demand(scored, params, order, len(facets)) if needs_demand else None
    resolved = resolve_shares(present, shares, mass, params.share_floor, mode=mode)
    caps = bucket_caps(resolved, params.token_budget)
    state = _BubbleState(budget=params.token_budget, caps=caps)
    gates = _Gates(params, switches)
    coverage = _Coverage(scored, len(facets), params.covered_weight, multiplicative=bm25)
    decisions = _decide(
        order(scored, coverage), state=state, gates=gates, coverage=coverage, section_limit=state.bucket_limit
    )
    pool: int | None = None
    if params.slack_policy == "global_pool" and switches.section_budgets:
        pool = sum(max(0, cap - state.bucket_spent.get(bucket, 0)) for bucket, cap in caps.items())
        decisions = _second_pass(
            decisions, state=state, gates=gates, coverage=coverage, order=order, pool=pool
        )
    return Selection(decisions=decisions, bucket_caps=caps, bucket_shares=resolved, pool=pool)


def _decide(
    ordered: Iterator[tuple[ScoredCandidate, float]],
    *,
    state: _BubbleState,
    gates: _Gates,
    coverage: _Coverage,
    section_limit: Callable[[ScoredCandidate], float],
) -> list[Decision]:
    """Decide each candidate as ``ordered`` yields it, admitting those that pass every gate."""
    decisions: list[Decision] = []
    for rank, (candidate, gain) in enumerate(ordered, start=1):
        bucket_left = state.bucket_remaining(candidate.bucket)
        budget_left = state.budget_remaining()
        covered = coverage.snapshot()
        results, value, reason = gates.run(candidate, state, section_limit(candidate))
        order = None
        if reason == "passed_all_gates":
            order = state.admit(candidate)
            coverage.admit(candidate)
        decisions.append(
            Decision(
                scored=candidate,
                rank=rank,
                gates=results,
                overlap=value,
                budget_remaining=budget_left,
                bucket_remaining=bucket_left,
                selection_order=order,
                final_reason=reason,
                gain=gain,
                covered=covered,
            )
        )
    return decisions


def _fixed(limit: float) -> Callable[[ScoredCandidate], float]:
    return lambda _: limit


def _second_pass(
    decisions: list[Decision],
    *,
    state: _BubbleState,
    gates: _Gates,
    coverage: _Coverage,
    order: Order,
    pool: int,
) -> list[Decision]:
    """global_pool slack: re-consider, in the selection order, the candidates only a bucket budget stopped.

    Each keeps its first-pass rank; the second pass's gates, the pool left and
    the gain at that time are added to its decision.
    """
    first_pass = {d.scored.chunk_id: d for d in decisions if d.final_reason == "section_budget_exceeded"}
    if not first_pass:
        return decisions
    pool_left = float(pool)
    redecided: dict[str, Decision] = {}
    for candidate, gain in order([d.scored for d in first_pass.values()], coverage):
        limit = pool_left
        [decision] = _decide(
            iter([(candidate, gain)]),
            state=state,
            gates=gates,
            coverage=coverage,
            section_limit=_fixed(limit),
        )
        if decision.selected:
            pool_left -= candidate.tokens
        redecided[candidate.chunk_id] = first_pass[candidate.chunk_id]._replace(
            second_pass=decision.gates,
            pool_remaining=limit,
            overlap=decision.overlap,
            budget_remaining=decision.budget_remaining,
            bucket_remaining=decision.bucket_remaining,
            selection_order=decision.selection_order,
            final_reason=decision.final_reason,
            gain=decision.gain,
            covered=decision.covered,
        )
    return [redecided.get(d.scored.chunk_id, d) for d in decisions]


def trace_id(run_id: str, chunk_id: str) -> str:
    """A derived id, so re-writing a run's trace never duplicates records."""
    return hashlib.sha256(f"{run_id}\n{chunk_id}".encode()).hexdigest()[:32]


def query_hash(query: str, key: bytes | None = None) -> str:
    """HMAC-SHA256 of the query under the home's key (``esbubble.query_key``) for recorded runs;
    plain SHA-256 where nothing is stored (``key=None``: evaluation)."""
    if key is None:
        return hashlib.sha256(query.encode()).hexdigest()
    return hmac.new(key, query.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The run-level values every trace record of a run repeats."""

    run_id: str
    now: datetime
    query_digest: str
    variant: Variant
    delta: float
    batch_id: str | None = None


# The stage named in the trace for each final reason of selection.
_STAGE_OF: dict[FinalReason, str] = {
    "passed_all_gates": "selection",
    **{reason: GATE_STAGES[gate] for gate, reason in GATE_REASONS.items()},
}


def trace_records(
    decisions: Sequence[Decision], run: RunContext, facets: Sequence[Facet] = ()
) -> list[TraceRecord]:
    """One trace record per decision: the paper's Appendix A1 fields plus gate details.

    Every value comes from a validated chunk or candidate, the config, or typed
    arithmetic, so records are built without validation (``_Record.trusted``):
    at ~35 fields a record, validating cost more than scoring and selecting.
    """
    records: list[TraceRecord] = []
    for decision in decisions:
        scored = decision.scored
        candidate = scored.candidate
        chunk = candidate.chunk
        selected = decision.selected
        matched = [facet.name for facet, weight in zip(facets, scored.facet_weights, strict=True) if weight]
        coverage = {
            facet.name: amount for facet, amount in zip(facets, decision.covered, strict=False) if amount
        }
        covered = list(coverage)
        details = StepDetails.trusted(
            {
                "gates": decision.gates,
                "second_pass": list(decision.second_pass),
                "pool_remaining": decision.pool_remaining,
                "expansion": [],
                "replacement": None,
                "notes": [],
                "terms": [
                    TermMatch.trusted(
                        {
                            "facet": m.facet,
                            "term": m.term,
                            "idf": m.idf,
                            "tf": m.tf,
                            "context_tf": m.context_tf,
                            "weight": m.weight,
                        }
                    )
                    for m in scored.matches
                ],
                "covered": covered,
                "coverage": coverage,
            }
        )
        record = {
            "trace_id": trace_id(run.run_id, chunk.chunk_id),
            "run_id": run.run_id,
            "batch_id": run.batch_id,
            "timestamp": run.now,
            "query_hash": run.query_digest,
            "variant": run.variant,
            "rank": decision.rank,
            "chunk_id": chunk.chunk_id,
            "doc_id": chunk.doc_id,
            "section": chunk.section,
            "sheet_name": chunk.sheet_name,
            "bucket": scored.bucket,
            "row_number": chunk.row_number,
            "page": chunk.page,
            "token_count": chunk.token_count,
            "tf": scored.tf,
            "relevance": scored.relevance,
            "boost": scored.boost,
            "len_penalty": scored.len_penalty,
            "score_raw": scored.score_raw,
            "score_final": scored.score_final,
            "gain": decision.gain,
            "facets": matched,
            "facets_new": [name for name in matched if name not in covered],
            "es_score": candidate.es_score,
            "es_rank": candidate.es_rank,
            "overlap": decision.overlap,
            "threshold": run.delta,
            "budget_remaining": decision.budget_remaining,
            "bucket_remaining": decision.bucket_remaining,
            "stage": _STAGE_OF[decision.final_reason],
            "step_decision": "pass" if selected else "fail",
            "final_decision": "selected" if selected else "rejected",
            "final_reason": decision.final_reason,
            "selection_order": decision.selection_order,
            "step_details": details,
        }
        records.append(TraceRecord.trusted(record))
    return records
