"""The trace records the core builds as plain dictionaries match their schema, ``TraceRecord``.

``build_bubble`` builds every trace record (and the gate verdicts and term
matches inside it) as the plain structure the audit index stores, with no
validation on the hot path. These properties check that claim against the
pydantic schema: each record validates, serialising the validated record
gives back exactly the same dictionary (same keys, same values, same types:
``1`` and ``1.0`` are equal but not the same JSON), and nothing warns.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from typing import Any

import pytest
from delivery_helpers import make_chunk
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from test_properties import QUERIES, candidate_sets, configs

from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.core.gates import gate_result
from esbubble.models import Candidate, GateResult, TraceRecord, trace_dict

NOW = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def _same_types(built: Any, dumped: Any, where: str = "record") -> None:
    """Equal values of identical types, all the way down."""
    assert type(built) is type(dumped), (where, built, dumped)
    if isinstance(dumped, dict):
        assert set(built) == set(dumped), where
        for key, value in dumped.items():
            _same_types(built[key], value, f"{where}.{key}")
    elif isinstance(dumped, list):
        assert len(built) == len(dumped), where
        for index, (left, right) in enumerate(zip(built, dumped, strict=True)):
            _same_types(left, right, f"{where}[{index}]")
    else:
        assert built == dumped, where


@settings(max_examples=150, deadline=None)
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.booleans(), st.sampled_from([None, "b-1"]))
def test_trace_records_match_their_schema(
    candidates: list[Candidate], config: BubbleConfig, query: str, redact: bool, batch_id: str | None
) -> None:
    bubble = build_bubble(
        query, candidates, config, run_id="schema", now=NOW, batch_id=batch_id, redact_query=redact
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pydantic serialisation warning means a wrongly typed value
        for record in bubble.trace:
            validated = TraceRecord.model_validate(record)
            assert validated.timestamp == NOW
            _same_types(record, validated.model_dump(mode="json", by_alias=True))
            assert trace_dict(record) == record
            assert json.loads(json.dumps(record)) == record  # plain JSON, as written
        dumped = bubble.model_dump(mode="json", by_alias=True)
        _same_types(bubble.trace, dumped["trace"], "trace")


def test_a_gate_verdict_is_a_valid_gate_result() -> None:
    built = gate_result("max_chunks", 3.0, 3.0)
    assert (
        built
        == GateResult(
            gate="max_chunks", passed=False, value=3.0, limit=3.0, rule="value < limit"
        ).model_dump()
    )


def test_a_wrongly_typed_record_fails_the_schema_check() -> None:
    candidates = [Candidate(chunk=make_chunk("d", 0, text="pump rate schedule"), es_score=1.0)]
    bubble = build_bubble("pump rate", candidates, BubbleConfig(), run_id="schema", now=NOW)
    record = dict(bubble.trace[0])
    record["tf"] = int(record["tf"])  # an int tf is equal to its float, but not the same JSON
    with pytest.raises(AssertionError):
        _same_types(record, TraceRecord.model_validate(record).model_dump(mode="json", by_alias=True))
    record["final_reason"] = "no such reason"
    with pytest.raises(ValidationError):
        TraceRecord.model_validate(record)
