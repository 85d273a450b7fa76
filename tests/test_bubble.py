"""build_bubble end to end on the pure core: records, redaction, ids, table rows, bad input."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import pytest

from esbubble.config import parse_config
from esbubble.core.bubble import build_bubble
from esbubble.errors import InputError
from esbubble.models import Candidate, Chunk, TraceRecord

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = parse_config({"bubble": {"token_budget": 500, "length_norm": 10.0}})


def _row(row: int, values: str) -> Candidate:
    """A spreadsheet row: the display text repeats the headers, compare_text holds only the cells."""
    cells = values.split("|")
    text = " | ".join(f"{h}: {v}" for h, v in zip(("Item", "Material", "Rate"), cells, strict=True))
    chunk = Chunk(
        chunk_id=f"rates-r{row}",
        doc_id="quote",
        source_type="xlsx",
        section="Rates",
        sheet_name="Rates",
        bucket="Rates",
        row_number=row,
        position=row,
        token_count=10,
        content_hash=f"h{row}",
        text=text,
        compare_text=" ".join(cells),
    )
    return Candidate(chunk=chunk, es_score=float(row), es_rank=row)


ROWS = [_row(2, "membrane|bitumen|42"), _row(3, "drain|pvc|17"), _row(4, "pump|steel|950")]


def test_rows_of_one_sheet_are_not_redundant_through_their_headers() -> None:
    bubble = build_bubble("rate material", ROWS, CONFIG, run_id="r1", now=NOW)
    assert [s.chunk.row_number for s in bubble.selected] == [2, 3, 4]
    assert all(r["overlap"] == 0.0 for r in bubble.trace)
    assert all(r["tf"] == 2 for r in bubble.trace)  # tf counts the display text, headers included


def test_trace_records_carry_the_a1_fields_and_run_context() -> None:
    bubble = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW, batch_id="b7")
    first = bubble.trace[0]
    assert first["chunk_id"] == "rates-r4"
    assert (first["sheet_name"], first["row_number"], first["bucket"], first["doc_id"]) == (
        "Rates", 4, "Rates", "quote"
    )  # fmt: skip
    assert (first["run_id"], first["batch_id"], first["@timestamp"]) == ("r1", "b7", "2026-01-01T00:00:00Z")
    assert "query" not in first  # the query is stored once per run, in the manifest
    # δ unset: the default of the overlap measure (``chunk`` under bm25)
    assert (first["es_score"], first["es_rank"], first["threshold"]) == (4.0, 4, 0.85)
    assert (first["rank"], first["selection_order"], first["stage"], first["step_decision"]) == (
        1,
        1,
        "selection",
        "pass",
    )
    assert first["budget_remaining"] == 500
    assert TraceRecord.model_validate(first).timestamp == NOW
    assert bubble.batch_id == "b7"


def test_redacted_query_is_kept_out_of_the_trace_but_hashed() -> None:
    plain = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW)
    redacted = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW, redact_query=True)
    assert redacted.query_redacted
    assert [r["query_hash"] for r in redacted.trace] == [r["query_hash"] for r in plain.trace]
    assert redacted.selected == plain.selected


def test_the_query_hash_is_keyed() -> None:
    """Without the key, a reader of the audit indices cannot confirm a guessed query."""
    unkeyed = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW)
    one = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW, query_key=b"k" * 32)
    other = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW, query_key=b"j" * 32)
    assert unkeyed.query_hash == hashlib.sha256(b"pump rate").hexdigest()
    assert one.query_hash == hmac.new(b"k" * 32, b"pump rate", hashlib.sha256).hexdigest()
    assert len({unkeyed.query_hash, one.query_hash, other.query_hash}) == 3
    assert {r["query_hash"] for r in one.trace} == {one.query_hash}


def test_same_inputs_give_the_same_bubble_apart_from_run_id() -> None:
    one = build_bubble("pump rate", ROWS, CONFIG, run_id="r1", now=NOW)
    two = build_bubble("pump rate", ROWS, CONFIG, run_id="r2", now=NOW)
    ignore = {"trace_id", "run_id"}
    assert [{k: v for k, v in r.items() if k not in ignore} for r in one.trace] == [
        {k: v for k, v in r.items() if k not in ignore} for r in two.trace
    ]
    assert one.trace[0]["trace_id"] != two.trace[0]["trace_id"]


def test_no_candidates_gives_an_empty_bubble() -> None:
    bubble = build_bubble("anything", [], CONFIG, run_id="r", now=NOW)
    assert (bubble.selected, bubble.trace, bubble.tokens_used) == ([], [], 0)


def test_duplicate_candidates_are_refused_with_the_ids() -> None:
    with pytest.raises(InputError, match="duplicate chunk ids: rates-r2"):
        build_bubble("x", [ROWS[0], ROWS[1], ROWS[0]], CONFIG, run_id="r", now=NOW)
