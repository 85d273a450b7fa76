"""The gates: boundaries, disabled gates, and the first failing gate giving the reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from esbubble.config import parse_config
from esbubble.core.bubble import build_bubble
from esbubble.core.gates import (
    Redundancy,
    first_failure,
    gain_gate,
    global_budget_gate,
    max_chunks_gate,
    overlap,
    reason_of,
    redundancy_gate,
    relevance_gate,
    rule_holds,
    section_budget_gate,
)
from esbubble.models import Candidate, Chunk


def test_overlap_is_the_share_of_the_chunks_words_already_in_the_bubble() -> None:
    assert overlap(frozenset({"a", "b", "c", "d"}), {"a", "b", "x"}) == 0.5
    assert overlap(frozenset({"a"}), set()) == 0.0
    assert overlap(frozenset(), {"a"}) == 0.0


def test_the_chunk_overlap_names_the_first_admitted_chunk_sharing_the_most_words() -> None:
    rule = Redundancy("chunk", ["membrane"])
    words = frozenset({"membrane", "sheet", "torch", "lap", "primer"})
    assert rule.measure(words) == (0.0, None)
    rule.admit(frozenset({"sheet", "lap", "membrane"}), "a")  # "membrane" is asked: not redundancy
    rule.admit(frozenset({"torch", "primer"}), "b")
    assert rule.measure(words) == (0.4, "a")  # 2 of 5 with each: the first admitted
    rule.admit(frozenset({"sheet", "torch", "lap"}), "c")  # only the newcomer is compared again
    assert rule.measure(words) == (0.6, "c")
    assert rule.measure(frozenset({"paint"})) == (0.0, None)
    union = Redundancy("bubble")
    union.admit(frozenset({"sheet", "lap"}), "a")
    assert union.measure(words) == (0.4, None)  # eq. 12 measures against the union, not one chunk


def test_relevance_needs_a_score_strictly_above_min_score() -> None:
    assert relevance_gate(1.01, 1.0)["passed"]
    assert not relevance_gate(1.0, 1.0)["passed"]
    assert relevance_gate(0.5, 1.0) == {
        "gate": "relevance", "passed": False, "value": 0.5, "limit": 1.0,
        "rule": "value > limit", "enabled": True,
    }  # fmt: skip


def test_redundancy_rejects_at_delta_and_above() -> None:
    assert redundancy_gate(0.54, 0.55)["passed"]
    assert not redundancy_gate(0.55, 0.55)["passed"]
    assert not redundancy_gate(1.0, 1.0)["passed"]


def test_budget_gates_admit_an_exact_fit() -> None:
    assert section_budget_gate(100, 100.0)["passed"]
    assert not section_budget_gate(101, 100.0)["passed"]
    assert global_budget_gate(0, 0.0)["passed"]
    assert not global_budget_gate(1, 0.0)["passed"]


def test_the_gain_gate_admits_at_its_floor() -> None:
    assert gain_gate(0.01, 0.01)["passed"]
    assert not gain_gate(0.0099, 0.01)["passed"]
    assert gain_gate(0.0, 0.01, enabled=False)["passed"]
    gates = [relevance_gate(2.0, 0.0), gain_gate(0.0, 0.01), redundancy_gate(0.9, 0.5)]
    assert reason_of(gates) == "low_gain"  # second in the table: before the redundancy gate


def test_max_chunks_admits_while_the_bubble_is_below_it() -> None:
    assert max_chunks_gate(9, 10)["passed"]
    assert not max_chunks_gate(10, 10)["passed"]


def test_a_disabled_gate_is_logged_and_passes() -> None:
    gate = redundancy_gate(0.99, 0.5, enabled=False)
    assert (gate["enabled"], gate["passed"], gate["value"], gate["limit"]) == (False, True, 0.99, 0.5)
    assert section_budget_gate(500, 10.0, enabled=False)["passed"]


def test_the_first_failing_gate_in_order_gives_the_reason() -> None:
    gates = [
        relevance_gate(2.0, 0.0),
        redundancy_gate(0.9, 0.5),
        section_budget_gate(50, 10.0),
        global_budget_gate(50, 10.0),
        max_chunks_gate(0, 5),
    ]
    assert reason_of(gates) == "too_redundant"
    assert first_failure(gates) == gates[1]
    assert reason_of(gates[2:]) == "section_budget_exceeded"
    assert reason_of(gates[3:]) == "budget_exceeded"
    assert reason_of([relevance_gate(2.0, 0.0), max_chunks_gate(5, 5)]) == "max_chunks"
    assert reason_of([relevance_gate(2.0, 0.0)]) == "passed_all_gates"


def test_an_unknown_rule_is_a_bug_not_a_verdict() -> None:
    with pytest.raises(ValueError, match="unknown gate rule"):
        rule_holds("value == limit", 1.0, 1.0)


def _row(chunk_id: str, period: str, values: str) -> Candidate:
    """A table row of a numeric series: its text names the columns, its compared words are the cells."""
    chunk = Chunk(
        chunk_id=chunk_id, doc_id="hle.xlsx", source_type="xlsx", section="analysis_data",
        bucket="analysis_data", position=0, token_count=20, content_hash=chunk_id,
        text=f"Time period: {period}; Value, Male: {values}", compare_text=f"{period} {values}",
    )  # fmt: skip
    return Candidate(chunk=chunk)


@pytest.mark.parametrize(("relevance", "second_admitted"), [("bm25", True), ("tf", False)])
def test_a_decimal_number_is_one_word_to_the_redundancy_gate_under_bm25(
    relevance: str, second_admitted: bool
) -> None:
    """Under bm25 the gate reads words as the engine's standard tokenizer cuts them, so "65.2" is one
    word and two rows of a series share only the cells they really share (2 of 6 here); with the
    paper's tokens (tf) "65.2" is "65" and "2", and the same rows share 4 of 7 words (0.57 ≥ δ)."""
    config = parse_config({"bubble": {"relevance": relevance, "overlap": "chunk", "overlap_threshold": 0.55}})
    # Equal scores, so "a" is decided first and "b", the series' maximum, is measured against it.
    rows = [_row("a", "2012 - 14", "64.9 65.6 63.2 63.9"), _row("b", "2017 - 19", "65.2 65.6 63.2 63.7")]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    bubble = build_bubble("male time period value", rows, config, run_id="r", now=now)
    overlaps = {record["chunk_id"]: record["overlap"] for record in bubble.trace}
    reasons = {record["chunk_id"]: record["final_reason"] for record in bubble.trace}
    assert [record["chunk_id"] for record in bubble.trace] == ["a", "b"]
    assert overlaps["a"] == 0.0 and reasons["a"] == "passed_all_gates"
    assert overlaps["b"] == pytest.approx(2 / 6 if relevance == "bm25" else 4 / 7)
    assert reasons["b"] == ("passed_all_gates" if second_admitted else "too_redundant")
