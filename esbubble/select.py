"""Greedy selection under the gates, the slack policies, and the trace records.

Candidates are considered once each in selection order (descending score,
ties by chunk_id). Every gate is evaluated for every candidate; the first
failing gate gives the reason. Under ``global_pool`` a second pass lets the
candidates that only a bucket budget stopped spend what the buckets left
unspent; under ``strict`` nothing is re-considered.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from esbubble.config import BubbleParams
from esbubble.gates import (
    GATE_STAGES,
    first_failure,
    global_budget_gate,
    max_chunks_gate,
    overlap,
    reason_of,
    redundancy_gate,
    relevance_gate,
    section_budget_gate,
)
from esbubble.models import FinalReason, GateResult, StepDetails, TraceRecord, Variant
from esbubble.score import ScoredCandidate
from esbubble.variants import VariantSwitches

# Shares are floats; ρ_b·T_B is rounded down to whole tokens after this tolerance,
# so 0.6 · 1000 is 600 even when the float product is 599.9999999.
_SHARE_EPSILON = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What selection decided about one candidate, with the numbers at decision time.

    Like ``ScoredCandidate``, an unvalidated intermediate on the hot path; the
    record that leaves the core is the validated ``TraceRecord``.
    """

    scored: ScoredCandidate
    rank: int
    gates: list[GateResult]
    second_pass: list[GateResult] = field(default_factory=list)
    pool_remaining: float | None = None
    overlap: float
    budget_remaining: float
    bucket_remaining: float
    selection_order: int | None
    final_reason: FinalReason

    @property
    def selected(self) -> bool:
        return self.selection_order is not None

    @property
    def deciding_gates(self) -> list[GateResult]:
        """The gate results the final decision rests on: the second pass's when there was one."""
        return self.second_pass or self.gates

    @property
    def stage(self) -> str:
        failed = first_failure(self.deciding_gates)
        return "selection" if failed is None else GATE_STAGES[failed.gate]


@dataclass(frozen=True, slots=True)
class Selection:
    """All decisions in rank order, plus the bucket caps and the slack pool that applied."""

    decisions: list[Decision]
    bucket_caps: dict[str, int]
    pool: int | None


def resolve_shares(present: Iterable[str], shares: Mapping[str, float]) -> dict[str, float]:
    """ρ_b for every listed or present bucket.

    Listed buckets keep their share; present buckets that are not listed split
    what the listed shares leave equally (with no shares at all, that is 1/n each).
    """
    resolved = dict(shares)
    unlisted = sorted({b for b in present if b not in shares})
    if unlisted:
        rest = max(0.0, 1.0 - sum(shares.values()))
        for bucket in unlisted:
            resolved[bucket] = rest / len(unlisted)
    return resolved


def bucket_caps(shares: Mapping[str, float], budget: int) -> dict[str, int]:
    """ρ_b·T_B in whole tokens (token counts are integers, so rounding down changes no verdict)."""
    return {bucket: math.floor(share * budget + _SHARE_EPSILON) for bucket, share in sorted(shares.items())}


@dataclass
class _BubbleState:
    """The growing bubble: spent tokens, per-bucket spend, the union of words(B)."""

    budget: int
    caps: dict[str, int]
    spent: int = 0
    count: int = 0
    bucket_spent: dict[str, int] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)
    # Gate results are immutable values and most repeat within a run (the same chunk size
    # against the same remaining budget, the same chunk count): one shared object per verdict.
    verdicts: dict[tuple[str, float, float], GateResult] = field(default_factory=dict)

    def verdict(self, key: tuple[str, float, float], make: Callable[[], GateResult]) -> GateResult:
        found = self.verdicts.get(key)
        if found is None:
            found = self.verdicts[key] = make()
        return found

    def budget_remaining(self) -> float:
        return float(self.budget - self.spent)

    def bucket_remaining(self, bucket: str) -> float:
        return float(self.caps.get(bucket, 0) - self.bucket_spent.get(bucket, 0))

    def admit(self, scored: ScoredCandidate) -> int:
        self.spent += scored.tokens
        self.bucket_spent[scored.bucket] = self.bucket_spent.get(scored.bucket, 0) + scored.tokens
        self.words.update(scored.words)
        self.count += 1
        return self.count


def _run_gates(
    scored: ScoredCandidate,
    state: _BubbleState,
    params: BubbleParams,
    switches: VariantSwitches,
    section_limit: float,
) -> tuple[list[GateResult], float]:
    value = overlap(scored.words, state.words)
    score, tokens, remaining, count = scored.score_final, scored.tokens, state.budget_remaining(), state.count
    verdict = state.verdict
    gates = [
        verdict(("relevance", score, 0.0), lambda: relevance_gate(score, params.min_score)),
        verdict(
            ("redundancy", value, 0.0),
            lambda: redundancy_gate(value, params.overlap_threshold, enabled=switches.redundancy),
        ),
        verdict(
            ("section_budget", tokens, section_limit),
            lambda: section_budget_gate(tokens, section_limit, enabled=switches.section_budgets),
        ),
        verdict(("global_budget", tokens, remaining), lambda: global_budget_gate(tokens, remaining)),
        verdict(("max_chunks", count, 0.0), lambda: max_chunks_gate(count, params.max_chunks)),
    ]
    return gates, value


def select(
    scored: Sequence[ScoredCandidate],
    params: BubbleParams,
    switches: VariantSwitches,
    shares: Mapping[str, float],
) -> Selection:
    """Greedy selection over ``scored`` (already in selection order)."""
    caps = bucket_caps(resolve_shares((s.bucket for s in scored), shares), params.token_budget)
    state = _BubbleState(budget=params.token_budget, caps=caps)
    decisions: list[Decision] = []
    for rank, candidate in enumerate(scored, start=1):
        bucket_left = state.bucket_remaining(candidate.bucket)
        budget_left = state.budget_remaining()
        gates, value = _run_gates(candidate, state, params, switches, bucket_left)
        reason = reason_of(gates)
        order = state.admit(candidate) if reason == "passed_all_gates" else None
        decisions.append(
            Decision(
                scored=candidate,
                rank=rank,
                gates=gates,
                overlap=value,
                budget_remaining=budget_left,
                bucket_remaining=bucket_left,
                selection_order=order,
                final_reason=reason,
            )
        )
    pool: int | None = None
    if params.slack_policy == "global_pool" and switches.section_budgets:
        pool = sum(max(0, cap - state.bucket_spent.get(bucket, 0)) for bucket, cap in caps.items())
        decisions = _second_pass(decisions, state, params, switches, pool)
    return Selection(decisions=decisions, bucket_caps=caps, pool=pool)


def _second_pass(
    decisions: list[Decision], state: _BubbleState, params: BubbleParams, switches: VariantSwitches, pool: int
) -> list[Decision]:
    """global_pool slack: re-consider, in order, the candidates only a bucket budget stopped."""
    pool_left = float(pool)
    result: list[Decision] = []
    for decision in decisions:
        if decision.final_reason != "section_budget_exceeded":
            result.append(decision)
            continue
        candidate = decision.scored
        bucket_left = state.bucket_remaining(candidate.bucket)
        budget_left = state.budget_remaining()
        gates, value = _run_gates(candidate, state, params, switches, pool_left)
        reason = reason_of(gates)
        order = None
        if reason == "passed_all_gates":
            order = state.admit(candidate)
        result.append(
            replace(
                decision,
                second_pass=gates,
                pool_remaining=pool_left,
                overlap=value,
                budget_remaining=budget_left,
                bucket_remaining=bucket_left,
                selection_order=order,
                final_reason=reason,
            )
        )
        if order is not None:
            pool_left -= candidate.tokens
    return result


def trace_id(run_id: str, chunk_id: str) -> str:
    """A derived id, so re-writing a run's trace never duplicates records."""
    return hashlib.sha256(f"{run_id}\n{chunk_id}".encode()).hexdigest()[:32]


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def trace_record(
    decision: Decision,
    *,
    run_id: str,
    now: datetime,
    query: str | None,
    query_digest: str,
    variant: Variant,
    delta: float,
    batch_id: str | None = None,
) -> TraceRecord:
    """One candidate's trace record: the paper's Appendix A1 fields plus gate details."""
    scored = decision.scored
    chunk = scored.candidate.chunk
    return TraceRecord(
        trace_id=trace_id(run_id, chunk.chunk_id),
        run_id=run_id,
        batch_id=batch_id,
        timestamp=now,
        query=query,
        query_hash=query_digest,
        variant=variant,
        rank=decision.rank,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        section=chunk.section,
        sheet_name=chunk.sheet_name,
        bucket=scored.bucket,
        row_number=chunk.row_number,
        page=chunk.page,
        token_count=chunk.token_count,
        tf=scored.tf,
        boost=scored.boost,
        len_penalty=scored.len_penalty,
        score_raw=scored.score_raw,
        score_final=scored.score_final,
        es_score=scored.candidate.es_score,
        es_rank=scored.candidate.es_rank,
        overlap=decision.overlap,
        threshold=delta,
        budget_remaining=decision.budget_remaining,
        bucket_remaining=decision.bucket_remaining,
        stage=decision.stage,
        step_decision="pass" if decision.selected else "fail",
        final_decision="selected" if decision.selected else "rejected",
        final_reason=decision.final_reason,
        selection_order=decision.selection_order,
        step_details=StepDetails(
            gates=decision.gates,
            second_pass=decision.second_pass,
            pool_remaining=decision.pool_remaining,
        ),
    )
