"""The one trace-record builder: a decision about one candidate in, its trace record out.

Selection and repair both describe what they decided with a ``Decision``
(the scored candidate, the gate verdicts and the numbers at decision time)
and turn it into the record here, so every record of a run has the same
fields, built the same way (the paper's Appendix A1 fields plus gate details).
A record is the plain dictionary the audit index stores (``models.TraceDict``,
schema ``models.TraceRecord``), built once with no validation on the hot path;
``tests/test_trace_schema.py`` validates what this module builds. A new trace
field is one line in ``trace_record`` and one in each of those two types.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress, filterfalse
from typing import NamedTuple

from pydantic_core import to_jsonable_python

from esbubble.core.gates import GATE_REASONS, GATE_STAGES, GateResults
from esbubble.core.relevance import Facet
from esbubble.core.score import ScoredCandidate
from esbubble.models import FinalReason, ReplacementEvent, TraceDict, Variant


class Decision(NamedTuple):
    """What selection (or repair) decided about one candidate, with the numbers at decision time.

    Like ``ScoredCandidate``, an immutable intermediate on the hot path (a
    named tuple: the cheapest immutable value to build); the record that
    leaves the core is its ``TraceDict``.
    """

    scored: ScoredCandidate
    rank: int
    gates: GateResults
    overlap: float
    budget_remaining: float
    bucket_remaining: float
    selection_order: int | None
    final_reason: FinalReason
    second_pass: GateResults | None = None
    pool_remaining: float | None = None
    gain: float = 0.0
    covered: tuple[float, ...] = ()  # per facet, how much of it the bubble covered (coverage order)
    document_share: float = 1.0  # the share of the query its document matches (coverage order)
    document_engine: float = 1.0  # its document's best engine score over the best of all (coverage order)
    chunk_share: float = 1.0  # the share of the query the chunk itself matches (coverage order)
    overlap_with: str | None = None  # overlap = "chunk": the admitted chunk the overlap was measured against
    fill_value: float | None = None  # coverage order: what ordered a spent candidate (None: its gain did)
    named_weight: float = 1.0  # coverage order: 1 + named_row for a row the query names, else 1
    rank_weight: float = 1.0  # coverage order: what its engine rank weighs its facets by (1 when off)
    proximity_weight: float = 1.0  # coverage order: what the word pairs it holds weigh its facets by
    semantic_weight: float = 1.0  # coverage order: what its similarity to the question weighs its facets by

    @property
    def selected(self) -> bool:
        return self.selection_order is not None


def trace_id(run_id: str, chunk_id: str) -> str:
    """A derived id, so re-writing a run's trace never duplicates records."""
    return hashlib.sha256(f"{run_id}\n{chunk_id}".encode()).hexdigest()[:32]


def query_hash(query: str, key: bytes | None = None) -> str:
    """HMAC-SHA256 of the query under the home's key (``esbubble.app.query_key``) for recorded runs;
    plain SHA-256 where nothing is stored (``key=None``: evaluation)."""
    if key is None:
        return hashlib.sha256(query.encode()).hexdigest()
    return hmac.new(key, query.encode(), hashlib.sha256).hexdigest()


def json_time(moment: datetime) -> str:
    """A timestamp as the trace stores it (pydantic's JSON form: ISO 8601, ``Z`` for UTC)."""
    return str(to_jsonable_python(moment))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The run-level values every trace record of a run repeats; ``timestamp`` as ``json_time`` gives it."""

    run_id: str
    timestamp: str
    query_digest: str
    variant: Variant
    delta: float
    batch_id: str | None = None


# The stage named in the trace for each final reason of selection.
STAGE_OF: dict[FinalReason, str] = {
    "passed_all_gates": "selection",
    **{reason: GATE_STAGES[gate] for gate, reason in GATE_REASONS.items()},
}


def trace_record(
    decision: Decision,
    run: RunContext,
    facets: Sequence[Facet] = (),
    *,
    stage: str | None = None,
    replacement: ReplacementEvent | None = None,
    notes: Sequence[str] = (),
) -> TraceDict:
    """The trace record of one decision; ``stage`` defaults to the one its final reason names.

    Every value comes from a validated chunk or candidate, the config, or typed
    arithmetic, so the record is built as the plain structure that is stored,
    with no validation: at ~35 fields a record, validating cost more than
    scoring and selecting. Gate verdicts are shared between records, never copied.
    """
    names = tuple(facet.name for facet in facets)
    return _record(
        decision,
        run,
        names,
        _coverage(names, decision.covered),
        stage=stage,
        replacement=replacement,
        notes=notes,
    )


def _coverage(names: tuple[str, ...], amounts: tuple[float, ...]) -> dict[str, float]:
    """The facets the bubble covered at decision time, by name, with how much of each."""
    return {name: amount for name, amount in zip(names, amounts, strict=False) if amount}


def _record(
    decision: Decision,
    run: RunContext,
    names: tuple[str, ...],
    covered_at: dict[str, float],
    *,
    stage: str | None = None,
    replacement: ReplacementEvent | None = None,
    notes: Sequence[str] = (),
) -> TraceDict:
    """``trace_record`` with the facets' names and the ``_coverage`` at decision time given (a record
    gets its own copy)."""
    (
        scored, rank, gates, overlap, budget_remaining, bucket_remaining, selection_order, final_reason,
        second, pool_remaining, gain, _, document_share, document_engine, chunk_share, overlap_with,
        fill_value, named_weight, rank_weight, proximity_weight, semantic_weight,
    ) = decision  # fmt: skip
    (
        candidate, bucket, tf, relevance, boost, len_penalty, score_raw, score_final, _, weights, matches,
        named, near,
    ) = scored  # fmt: skip
    chunk = candidate.chunk
    chunk_id = chunk.chunk_id
    selected = selection_order is not None
    if names:
        matched = list(compress(names, weights))
        coverage = covered_at.copy()
        covered = list(coverage)
        new = list(filterfalse(coverage.__contains__, matched)) if coverage else matched[:]
    else:
        matched, coverage, covered, new = [], {}, [], []
    run_id = run.run_id
    return {
        "trace_id": trace_id(run_id, chunk_id),
        "run_id": run_id,
        "batch_id": run.batch_id,
        "@timestamp": run.timestamp,
        "query_hash": run.query_digest,
        "variant": run.variant,
        "rank": rank,
        "chunk_id": chunk_id,
        "doc_id": chunk.doc_id,
        "section": chunk.section,
        "sheet_name": chunk.sheet_name,
        "bucket": bucket,
        "row_number": chunk.row_number,
        "page": chunk.page,
        "token_count": chunk.token_count,
        "tf": tf,
        "relevance": relevance,
        "boost": boost,
        "len_penalty": len_penalty,
        "score_raw": score_raw,
        "score_final": score_final,
        "gain": gain,
        "document_share": document_share,
        "document_engine": document_engine,
        "chunk_share": chunk_share,
        "fill_value": fill_value,
        "named": named,
        "named_weight": named_weight,
        "rank_weight": rank_weight,
        "near": list(near),
        "proximity_weight": proximity_weight,
        "similarity": candidate.similarity,
        "semantic_weight": semantic_weight,
        "facets": matched,
        "facets_new": new,
        "es_score": candidate.es_score,
        "es_rank": candidate.es_rank,
        "overlap": overlap,
        "overlap_with": overlap_with,
        "threshold": run.delta,
        "budget_remaining": budget_remaining,
        "bucket_remaining": bucket_remaining,
        "stage": stage or STAGE_OF[final_reason],
        "step_decision": "pass" if selected else "fail",
        "final_decision": "selected" if selected else "rejected",
        "final_reason": final_reason,
        "selection_order": selection_order,
        "step_details": {
            "gates": list(gates),
            "second_pass": list(second) if second else [],
            "pool_remaining": pool_remaining,
            "expansion": [],
            "replacement": None if replacement is None else replacement.model_dump(mode="json"),
            "notes": list(notes),
            "terms": list(matches),  # shared with the scored candidate, never changed
            "covered": covered,
            "coverage": coverage,
        },
    }


def trace_records(
    decisions: Sequence[Decision], run: RunContext, facets: Sequence[Facet] = ()
) -> list[TraceDict]:
    """One trace record per decision, in the order given."""
    names = tuple(facet.name for facet in facets)
    # the decisions between two admissions share one coverage snapshot: its names once per snapshot
    coverages: dict[tuple[float, ...], dict[str, float]] = {}
    records: list[TraceDict] = []
    for decision in decisions:
        amounts = decision.covered
        covered_at = coverages.get(amounts)
        if covered_at is None:
            covered_at = coverages[amounts] = _coverage(names, amounts)
        records.append(_record(decision, run, names, covered_at))
    return records
