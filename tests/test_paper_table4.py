"""The paper's Table 4, rebuilt from the real formulas (no number is written into the result).

Paper mode: ``relevance = "tf"`` (eq. 5) and ``selection = "score"`` (descending score).

δ = 0.55, min_score = 1.0, every token count equals θ (the median) so lp = 0.5.
The texts and the profile are chosen so that tf, boost and overlap come out
as in the paper: X000918 tf 1 / boost 6.5, X000921 tf 0 / boost 6.0 / overlap
0.78, X001005 tf 2 / boost 0.5 / overlap 0.19, X000112 tf 3 / boost −2.5.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from esbubble.config import BubbleConfig, load_profile
from esbubble.core.bubble import build_bubble
from esbubble.core.metrics import bubble_metrics
from esbubble.models import Bubble, Candidate, Chunk, TraceDict

PROFILE = """
[bubble]
token_budget = 800
overlap_threshold = 0.55
min_score = 1.0
length_norm = "median"
slack_policy = "strict"
relevance = "tf"
selection = "score"

[priors.sections]
"Scope of Works" = 6.0
"Below Grade" = 0.5          # looked up by bucket: section "Below Grade Works" maps to it
"Terms & Conditions" = -2.5

[priors.keywords]
"bitumen membrane" = 0.5     # a multi-word keyword

[buckets.map]
"Below Grade Works" = "Below Grade"
"""

QUERY = "basement waterproofing warranty"

TEXTS = {
    "X000918": (
        "Scope of Works",
        "Contractor to supply bitumen membrane for basement slab including laps, primers "
        "and protection board.",
    ),
    "X000921": (
        "Scope of Works",
        "Contractor to supply membrane sheets for slab including laps, primers and fixings.",
    ),
    "X001005": (
        "Below Grade Works",
        "Below grade waterproofing membrane to slab edges and retaining walls carries a ten year "
        "warranty, with drainage cavity protection and pumps.",
    ),
    "X000112": (
        "Terms & Conditions",
        "Warranty claims for waterproofing of the basement slab membrane are void unless notified "
        "in writing within days.",
    ),
}


def _candidate(chunk_id: str, section: str, text: str) -> Candidate:
    chunk = Chunk(
        chunk_id=chunk_id,
        doc_id="quote_job",
        source_type="markdown",
        section=section,
        bucket=section,
        position=int(chunk_id[1:]),
        token_count=20,
        content_hash=chunk_id,
        text=text,
        compare_text=text,
    )
    return Candidate(chunk=chunk, es_score=1.0)


@pytest.fixture
def config(tmp_path: Path) -> BubbleConfig:
    path = tmp_path / "table4.toml"
    path.write_text(PROFILE, encoding="utf-8")
    return load_profile(path)


@pytest.fixture
def bubble(config: BubbleConfig) -> Bubble:
    candidates = [_candidate(cid, section, text) for cid, (section, text) in TEXTS.items()]
    return build_bubble(QUERY, candidates, config, run_id="table4", now=datetime(2026, 1, 1, tzinfo=UTC))


def _record(bubble: Bubble, chunk_id: str) -> TraceDict:
    return next(r for r in bubble.trace if r["chunk_id"] == chunk_id)


@pytest.mark.parametrize(
    "row",
    [
        ("X000918", 1, 6.5, 0.00, "selected", "passed_all_gates"),
        ("X001005", 2, 0.5, 0.19, "selected", "passed_all_gates"),
        ("X000921", 0, 6.0, 0.78, "rejected", "too_redundant"),
        ("X000112", 3, -2.5, 0.42, "rejected", "low_relevance"),
    ],
)
def test_table4_row(bubble: Bubble, row: tuple[str, float, float, float, str, str]) -> None:
    chunk_id, tf, boost, overlap, decision, reason = row
    record = _record(bubble, chunk_id)
    assert record["tf"] == tf
    assert record["boost"] == pytest.approx(boost)
    assert record["len_penalty"] == pytest.approx(0.5)
    assert record["score_final"] == pytest.approx((tf + boost) * 0.5)
    assert round(record["overlap"], 2) == overlap
    assert record["final_decision"] == decision
    assert record["final_reason"] == reason


def test_table4_stages_and_order(bubble: Bubble) -> None:
    assert [s.chunk.chunk_id for s in bubble.selected] == ["X000918", "X001005"]
    assert [r["chunk_id"] for r in bubble.trace] == ["X000918", "X000921", "X001005", "X000112"]
    assert _record(bubble, "X000921")["stage"] == "overlap_gate"
    assert _record(bubble, "X000112")["stage"] == "relevance_gate"
    assert _record(bubble, "X000918")["stage"] == "selection"
    assert bubble.theta == 20.0


def test_table4_redundancy_gate_numbers(bubble: Bubble) -> None:
    gate = next(g for g in _record(bubble, "X000921")["step_details"]["gates"] if g["gate"] == "redundancy")
    assert (gate["passed"], gate["limit"], round(gate["value"], 2)) == (False, 0.55, 0.78)


def test_table4_metrics(bubble: Bubble) -> None:
    metrics = bubble_metrics(bubble, gold=["X000918", "X001005", "X000112"])
    assert metrics.tokens_used == 40
    assert metrics.unique_sections == 2
    assert metrics.avg_overlap == pytest.approx((0.0 + 3 / 16) / 2)
    assert metrics.rejected["too_redundant"] == 1
    assert metrics.rejected["low_relevance"] == 1
    assert metrics.gold_recall == pytest.approx(2 / 3)
