"""Records the hot path builds without validation (``_Record.trusted``) equal their validated twins.

``build_bubble`` builds every gate result and trace record from values that
already have the field types. These properties check that claim: each record
round-trips through validation to an identical record (same values, same
types, same JSON), and serialising it raises no pydantic warning.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from test_properties import QUERIES, candidate_sets, configs

from esbubble.config import BubbleConfig
from esbubble.core.bubble import build_bubble
from esbubble.models import Candidate, GateResult, StepDetails, TraceRecord

NOW = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def _same_types(built: BaseModel, validated: BaseModel) -> None:
    """Field by field, the same values of the same types (1 and 1.0 are equal but not the same record)."""
    assert set(built.__dict__) == set(type(built).model_fields)
    for name, value in validated.__dict__.items():
        mine = built.__dict__[name]
        assert type(mine) is type(value), (type(built).__name__, name, mine, value)
        if isinstance(value, BaseModel):
            _same_types(mine, value)
        elif isinstance(value, list):
            assert len(mine) == len(value)
            for left, right in zip(mine, value, strict=True):
                if isinstance(right, BaseModel):
                    _same_types(left, right)
                else:
                    assert type(left) is type(right)


@settings(max_examples=150, deadline=None)
@given(candidate_sets(), configs(), st.sampled_from(QUERIES), st.booleans(), st.sampled_from([None, "b-1"]))
def test_trace_records_equal_their_validated_twins(
    candidates: list[Candidate], config: BubbleConfig, query: str, redact: bool, batch_id: str | None
) -> None:
    bubble = build_bubble(
        query, candidates, config, run_id="trusted", now=NOW, batch_id=batch_id, redact_query=redact
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pydantic serialisation warning means a wrongly typed value
        for record in bubble.trace:
            document = record.model_dump(mode="json", by_alias=True)
            twin = TraceRecord.model_validate(document)
            assert twin == record
            _same_types(record, twin)
            assert twin.model_dump(mode="json", by_alias=True) == document
            assert record.model_copy(update={"final_reason": "replaced"}).final_reason == "replaced"


def test_trusted_gate_result_behaves_like_a_validated_one() -> None:
    values = {"gate": "max_chunks", "passed": False, "value": 3.0, "limit": 3.0, "rule": "value < limit"}
    built = GateResult.trusted({**values, "enabled": True})
    validated = GateResult.model_validate(values)
    assert built == validated
    assert hash(built) == hash(validated)
    assert built.model_dump() == validated.model_dump()
    assert built.model_fields_set == set(GateResult.model_fields)
    with pytest.raises(ValidationError):
        built.passed = True  # type: ignore[misc]  # still frozen
    details = StepDetails.trusted(
        {"gates": [built], "second_pass": [], "pool_remaining": None, "expansion": [], "replacement": None,
         "notes": [], "terms": [], "covered": [], "coverage": {}}
    )  # fmt: skip
    assert details == StepDetails(gates=[validated])
