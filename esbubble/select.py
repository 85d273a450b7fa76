"""Greedy selection under the gates, the slack policies, and the trace records.

Candidates are considered once each in selection order (descending score,
ties by chunk_id). Every gate is evaluated for every candidate; the first
failing gate gives the reason. Under ``global_pool`` a second pass lets the
candidates that only a bucket budget stopped spend what the buckets left
unspent; under ``strict`` nothing is re-considered.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from esbubble.config import BubbleParams
from esbubble.gates import GATE_STAGES, gate_result, overlap, reason_of
from esbubble.models import GATE_REASONS, FinalReason, GateName, GateResult, StepDetails, TraceRecord, Variant
from esbubble.score import ScoredCandidate
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

    @property
    def selected(self) -> bool:
        return self.selection_order is not None


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
            "relevance": True,
            "redundancy": switches.redundancy,
            "section_budget": switches.section_budgets,
            "global_budget": True,
            "max_chunks": True,
        }
        self.verdicts: dict[tuple[GateName, float, float], GateResult] = {}

    def _shared(self, gate: GateName, value: float, limit: float) -> GateResult:
        key = (gate, value, limit)
        found = self.verdicts.get(key)
        if found is None:
            found = self.verdicts[key] = gate_result(gate, value, limit, enabled=self.enabled[gate])
        return found

    def run(
        self, scored: ScoredCandidate, state: _BubbleState, section_limit: float
    ) -> tuple[list[GateResult], float, FinalReason]:
        """Every gate's result for ``scored`` now, the overlap, and the final reason (first failure wins)."""
        params = self.params
        value = overlap(scored.words, state.words)
        tokens = float(scored.tokens)
        gates = [
            self._shared("relevance", scored.score_final, params.min_score),
            self._shared("redundancy", value, params.overlap_threshold),
            self._shared("section_budget", tokens, section_limit),
            self._shared("global_budget", tokens, state.budget_remaining()),
            self._shared("max_chunks", float(state.count), float(params.max_chunks)),
        ]
        return gates, value, reason_of(gates)


def select(
    scored: Sequence[ScoredCandidate],
    params: BubbleParams,
    switches: VariantSwitches,
    shares: Mapping[str, float],
) -> Selection:
    """Greedy selection over ``scored`` (already in selection order)."""
    caps = bucket_caps(resolve_shares((s.bucket for s in scored), shares), params.token_budget)
    state = _BubbleState(budget=params.token_budget, caps=caps)
    gates = _Gates(params, switches)
    decisions: list[Decision] = []
    for rank, candidate in enumerate(scored, start=1):
        bucket_left = state.bucket_remaining(candidate.bucket)
        budget_left = state.budget_remaining()
        results, value, reason = gates.run(candidate, state, bucket_left)
        order = state.admit(candidate) if reason == "passed_all_gates" else None
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
            )
        )
    pool: int | None = None
    if params.slack_policy == "global_pool" and switches.section_budgets:
        pool = sum(max(0, cap - state.bucket_spent.get(bucket, 0)) for bucket, cap in caps.items())
        decisions = _second_pass(decisions, state, gates, pool)
    return Selection(decisions=decisions, bucket_caps=caps, pool=pool)


def _second_pass(decisions: list[Decision], state: _BubbleState, gates: _Gates, pool: int) -> list[Decision]:
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
        results, value, reason = gates.run(candidate, state, pool_left)
        order = None
        if reason == "passed_all_gates":
            order = state.admit(candidate)
        result.append(
            decision._replace(
                second_pass=results,
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


def trace_records(decisions: Sequence[Decision], run: RunContext) -> list[TraceRecord]:
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
        details = StepDetails.trusted(
            {
                "gates": decision.gates,
                "second_pass": list(decision.second_pass),
                "pool_remaining": decision.pool_remaining,
                "expansion": [],
                "replacement": None,
                "notes": [],
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
            "boost": scored.boost,
            "len_penalty": scored.len_penalty,
            "score_raw": scored.score_raw,
            "score_final": scored.score_final,
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
